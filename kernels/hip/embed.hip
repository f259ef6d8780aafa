// embed: y[t] = table[ids[t]]; an id outside [0, V) reads row 0 (the CPU
// reference reports it as an error instead). The twin of
// kernels/vulkan/embed.comp; the table is prelude.hip's load_w (f32 or
// f16, a lane an element) or quantized (WQUANT: a lane 8 elements, one
// wq_load8).
// Grid: x = ceil(H / (LS_X * PER_LANE)), y = T.
#ifdef WQUANT
#define PER_LANE 8u
#else
#define PER_LANE 1u
#endif
// @struct

const int *__restrict__ ids = (const int *)args.b[B_IDS];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint t = gl_WorkGroupID.y;
	uint h = gl_GlobalInvocationID.x * PER_LANE;
	if (h >= H)
		return;
	int id = ids[t];
	uint row = (id < 0 || id >= int(V)) ? 0u : uint(id);
	uint o = t * H + h;
#ifdef ZERO_POS0
	if (step_pos + t == 0u) {
		for (uint i = 0u; i < PER_LANE; i++)
			y[o + i] = 0.0f;
		return;
	}
#endif
#ifdef WQUANT
	vec4 a, b;
	wq_load8(row, h, a, b);
	for (uint i = 0u; i < 4u; i++) {
		y[o + i] = a[i];
		y[o + 4u + i] = b[i];
	}
#else
	y[o] = load_w(row * H + h);
#endif
}
