// embed: y[t] = table[ids[t]]; an id outside [0, V) reads row 0 (the CPU
// reference reports it as an error instead). ZERO_POS0: the row at absolute
// position 0 is zero (vLLM's DeepSeek V4 MTP embedding).
// Grid: x = ceil(H / LS_X), y = T.

layout(set = 0, binding = B_IDS) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

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
