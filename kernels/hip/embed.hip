// embed: y[t] = table[ids[t]]; an id outside [0, V) reads row 0 (the CPU
// reference reports it as an error instead). The twin of
// kernels/vulkan/embed.comp; the table is prelude.hip's load_w (f32 or f16).
// Grid: x = ceil(H / LS_X), y = T.
// @struct

const int *__restrict__ ids = (const int *)args.b[B_IDS];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint t = gl_WorkGroupID.y;
	uint h = gl_GlobalInvocationID.x;
	if (h >= H)
		return;
	int id = ids[t];
	uint row = (id < 0 || id >= int(V)) ? 0u : uint(id);
#ifdef ZERO_POS0
	if (step_pos + t == 0u) {
		y[h] = 0.0;
		return;
	}
#endif
	y[t * H + h] = load_w(row * H + h);
}
