// softmax over rows of D (R rows per token), max-subtracted, with the fixed
// tree reductions (prelude.hip), then the epilogue. The twin of
// kernels/vulkan/softmax.comp.
// Grid: x = R, y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint base = (gl_WorkGroupID.y * R + gl_WorkGroupID.x) * D;
	float m = -3.0e38f;
	for (uint i = l; i < D; i += LS_X)
		m = max(m, x[base + i]);
	m = tree_max(l, m);
	float s = 0.0f;
	for (uint i = l; i < D; i += LS_X)
		s += exp(x[base + i] - m);
	float inv = 1.0f / tree_sum(l, s);
	for (uint i = l; i < D; i += LS_X)
		y[base + i] = epilogue(exp(x[base + i] - m) * inv, base + i);
}
