// l2_norm over rows of D (R rows per token): y = x * (sum(x^2) + EPS)^-1/2,
// then the epilogue. One workgroup per row; the sum of squares uses the
// fixed tree, so a row's result never depends on T.
// Grid: x = R, y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint base = (gl_WorkGroupID.y * R + gl_WorkGroupID.x) * D;
	float s = 0.0;
	for (uint i = l; i < D; i += LS_X)
		s += x[base + i] * x[base + i];
	float inv = 1.0 / sqrt(tree_sum(l, s) + EPS);
	for (uint i = l; i < D; i += LS_X)
		y[base + i] = epilogue(x[base + i] * inv, base + i);
}
