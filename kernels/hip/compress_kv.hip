// compress_kv (docs/ops.md): c, z [N, W] (W = (1 + OVERLAP) * D), bias
// [RATIO, W] -> y [T, D]. The twin of kernels/vulkan/compress_kv.comp,
// which gives the scheme: a lane per channel; a row that closes a window
// pools its slots (with OVERLAP and a window past the first the previous
// window's rows at channel d, then the window's at OVERLAP * D + d) by a
// softmax of z + bias weighting c: the max, then the exponentials' sum and
// weighted sum in slot order, f32; other rows are 0. Position q is cache row
// q mod N_ROWS (the caches may be rings).
// Grid: x = ceil(D / LS_X), y = T.

// @struct

const float *__restrict__ cr = (const float *)args.b[B_C];
const float *__restrict__ zr = (const float *)args.b[B_Z];
const float *__restrict__ bias = (const float *)args.b[B_BIAS];
float *__restrict__ y = (float *)args.b[B_Y];

#define W ((1u + OVERLAP) * D)
// Stands in for -infinity: below every gate.
#define NEG_BIG -3.0e38f

// Slot r's gate: z + bias of position q's cache row at column `col`.
float gate(uint q, uint r, uint col)
{
	return zr[q % N_ROWS * W + col] + bias[r * W + col];
}

// The window's slots at (position row0 + r, col) for r < RATIO: their max gate.
float slots_max(uint row0, uint col, float mx)
{
	for (uint r = 0u; r < RATIO; r++)
		mx = max(mx, gate(row0 + r, r, col));
	return mx;
}

// The same slots' e^(gate - mx) into sum and, times c, into acc.
void slots_sum(uint row0, uint col, float mx, float &sum, float &acc)
{
	for (uint r = 0u; r < RATIO; r++) {
		float e = exp(gate(row0 + r, r, col) - mx);
		sum += e;
		acc += e * cr[(row0 + r) % N_ROWS * W + col];
	}
}

void main()
{
	uint d = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
	if (d >= D)
		return;
	uint p = step_pos + t;
	if ((p + 1u) % RATIO != 0u) {
		y[t * D + d] = 0.0f;
		return;
	}
	uint b = p + 1u - RATIO;
	bool prev = OVERLAP != 0u && b > 0u;
	uint col = OVERLAP * D + d;
	float mx = prev ? slots_max(b - RATIO, d, NEG_BIG) : NEG_BIG;
	mx = slots_max(b, col, mx);
	float sum = 0.0f, acc = 0.0f;
	if (prev)
		slots_sum(b - RATIO, d, mx, sum, acc);
	slots_sum(b, col, mx, sum, acc);
	y[t * D + d] = acc / sum;
}
