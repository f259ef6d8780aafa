// gated_rms_norm over rows of D (R rows per token):
// y = w * (x * (mean(x^2) + EPS)^-1/2) * silu(z), then the epilogue; the sum
// of squares by the fixed tree (prelude.hip). The twin of
// kernels/vulkan/gated_rms_norm.comp.
// Grid: x = R, y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
const float *__restrict__ z = (const float *)args.b[B_Z];
const float *__restrict__ nw = (const float *)args.b[B_NW];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint base = (gl_WorkGroupID.y * R + gl_WorkGroupID.x) * D;
	float s = 0.0f;
	for (uint i = l; i < D; i += LS_X)
		s += x[base + i] * x[base + i];
	float inv = 1.0f / sqrt(tree_sum(l, s) / float(D) + EPS);
	for (uint i = l; i < D; i += LS_X)
		y[base + i] = epilogue(nw[i] * (x[base + i] * inv) * silu_f(z[base + i]), base + i);
}
