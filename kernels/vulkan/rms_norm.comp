// rms_norm over groups of G elements of rows of D (R rows per token):
// y = x * (mean(x^2) + EPS)^-1/2 * (w + OFFSET), then the epilogue; with
// UNWEIGHTED (defined only then) there is no w: y = x * (mean(x^2) + EPS)^-1/2.
// One workgroup per (row, group); the sum of squares uses the fixed tree.
// Grid: x = R * (D / G), y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
#ifndef UNWEIGHTED
layout(set = 0, binding = B_NW) readonly buffer NW { float nw[]; };
#endif
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint groups = D / G;
	uint row = gl_WorkGroupID.y * R + gl_WorkGroupID.x / groups;
	uint g0 = (gl_WorkGroupID.x % groups) * G;
	uint base = row * D + g0;
	float s = 0.0;
	for (uint i = l; i < G; i += LS_X)
		s += x[base + i] * x[base + i];
	float inv = 1.0 / sqrt(tree_sum(l, s) / float(G) + EPS);
	for (uint i = l; i < G; i += LS_X)
#ifdef UNWEIGHTED
		y[base + i] = epilogue(x[base + i] * inv, base + i);
#else
		y[base + i] = epilogue(x[base + i] * inv * (nw[g0 + i] + OFFSET), base + i);
#endif
}
