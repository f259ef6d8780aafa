// l2_norm over rows of D (R rows per token): y = x * (sum(x^2) + EPS)^-1/2,
// then the epilogue; the sum of squares by the fixed tree (prelude.hip).
// The twin of kernels/vulkan/l2_norm.comp.
// Grid: x = R, y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint base = (gl_WorkGroupID.y * R + gl_WorkGroupID.x) * D;
	float s = 0.0f;
	for (uint i = l; i < D; i += LS_X)
		s += x[base + i] * x[base + i];
	float inv = 1.0f / sqrt(tree_sum(l, s) + EPS);
	for (uint i = l; i < D; i += LS_X)
		y[base + i] = epilogue(x[base + i] * inv, base + i);
}
