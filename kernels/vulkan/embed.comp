// embed: y[t] = table[ids[t]]; an id outside [0, V) reads row 0 (the CPU
// reference reports it as an error instead). ZERO_POS0: the row at absolute
// position 0 is zero (vLLM's DeepSeek V4 MTP embedding). The table is f32,
// f16 (a lane an element) or quantized (WQUANT: a lane 8 elements, one
// wq_load8, the values the reference's dequantization gives).
// Grid: x = ceil(H / (LS_X * PER_LANE)), y = T.

layout(set = 0, binding = B_IDS) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

#ifdef WQUANT
#define PER_LANE 8u
#else
#define PER_LANE 1u
#endif

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
			y[o + i] = 0.0;
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
