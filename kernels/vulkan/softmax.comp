// softmax over rows of D (R rows per token), max-subtracted; fixed-order
// tree reductions. Then the epilogue.
// Grid: x = R, y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint base = (gl_WorkGroupID.y * R + gl_WorkGroupID.x) * D;
	float m = -3.0e38;
	for (uint i = l; i < D; i += LS_X)
		m = max(m, x[base + i]);
	m = tree_max(l, m);
	float s = 0.0;
	for (uint i = l; i < D; i += LS_X)
		s += exp(x[base + i] - m);
	float inv = 1.0 / tree_sum(l, s);
	for (uint i = l; i < D; i += LS_X)
		y[base + i] = epilogue(exp(x[base + i] - m) * inv, base + i);
}
