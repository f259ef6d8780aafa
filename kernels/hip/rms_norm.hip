// rms_norm over groups of G elements of rows of D (R rows per token):
// y = x * (mean(x^2) + EPS)^-1/2 * (w + OFFSET), then the epilogue; with
// UNWEIGHTED (defined only then) there is no w: y = x * (mean(x^2) + EPS)^-1/2.
// The twin of kernels/vulkan/rms_norm.comp.
// Grid: x = R * (D / G), y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
#ifndef UNWEIGHTED
const float *__restrict__ nw = (const float *)args.b[B_NW];
#endif
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint groups = D / G;
	uint row = gl_WorkGroupID.y * R + gl_WorkGroupID.x / groups;
	uint g0 = (gl_WorkGroupID.x % groups) * G;
	uint base = row * D + g0;
	float s = 0.0f;
	for (uint i = l; i < G; i += LS_X)
		s += x[base + i] * x[base + i];
	float inv = 1.0f / sqrt(tree_sum(l, s) / float(G) + EPS);
	for (uint i = l; i < G; i += LS_X)
#ifdef UNWEIGHTED
		y[base + i] = epilogue(x[base + i] * inv, base + i);
#else
		y[base + i] = epilogue(x[base + i] * inv * (nw[g0 + i] + OFFSET), base + i);
#endif
}
