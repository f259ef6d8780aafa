// compress_kv (docs/ops.md): c, z [N, W] (W = (1 + OVERLAP) * D, per-token
// caches of DeepSeek V4's compressor projections and raw gates), bias
// [RATIO, W] -> y [T, D]. Row t at p = pos + t is zero unless p closes a
// window of RATIO tokens; then, for the window starting at b = p + 1 - RATIO,
// channel d is the softmax over its slots of z + bias weighting c. The slots,
// in the contract's order: with OVERLAP and b > 0 the previous window's rows
// b - RATIO + r at channel d, then the window's rows b + r at channel
// OVERLAP * D + d; bias row r for the r-th row of either.
// A lane per channel (grid x = ceil(D / LS_X), y = T): one pass takes the
// slots' max gate, a second their exponentials' sum and the exponentials'
// weighted sum of c, f32 in one lane in slot order, so a row depends only on
// its position and the cached rows, never on T. Position q is cache row
// q mod N_ROWS: the caches may be rings of the last N_ROWS positions (the
// reference refuses a step whose windows do not fit), and no read leaves
// them.

layout(set = 0, binding = B_C) readonly buffer Cb { float cr[]; };
layout(set = 0, binding = B_Z) readonly buffer Zb { float zr[]; };
layout(set = 0, binding = B_BIAS) readonly buffer Bb { float bias[]; };
layout(set = 0, binding = B_Y) writeonly buffer Yb { float y[]; };

#define W ((1u + OVERLAP) * D)
// Stands in for -infinity: below every gate.
#define NEG_BIG -3.0e38

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
void slots_sum(uint row0, uint col, float mx, inout float sum, inout float acc)
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
		y[t * D + d] = 0.0;
		return;
	}
	uint b = p + 1u - RATIO;
	bool prev = OVERLAP != 0u && b > 0u;
	uint col = OVERLAP * D + d;
	float mx = prev ? slots_max(b - RATIO, d, NEG_BIG) : NEG_BIG;
	mx = slots_max(b, col, mx);
	float sum = 0.0, acc = 0.0;
	if (prev)
		slots_sum(b - RATIO, d, mx, sum, acc);
	slots_sum(b, col, mx, sum, acc);
	y[t * D + d] = acc / sum;
}
