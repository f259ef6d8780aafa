// gated_rms_norm over rows of D (R rows per token):
// y = w * (x * (mean(x^2) + EPS)^-1/2) * silu(z), then the epilogue.
// One workgroup per row; the sum of squares uses the fixed tree.
// Grid: x = R, y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_Z) readonly buffer Z { float z[]; };
layout(set = 0, binding = B_NW) readonly buffer NW { float nw[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint base = (gl_WorkGroupID.y * R + gl_WorkGroupID.x) * D;
	float s = 0.0;
	for (uint i = l; i < D; i += LS_X)
		s += x[base + i] * x[base + i];
	float inv = 1.0 / sqrt(tree_sum(l, s) / float(D) + EPS);
	for (uint i = l; i < D; i += LS_X)
		y[base + i] = epilogue(nw[i] * (x[base + i] * inv) * silu_f(z[base + i]), base + i);
}
