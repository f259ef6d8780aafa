// rms_norm over groups of G elements of rows of D (R rows per token):
// y = x * (mean(x^2) + EPS)^-1/2 * (w + OFFSET), then the epilogue; with
// UNWEIGHTED (defined only then) there is no w: y = x * (mean(x^2) + EPS)^-1/2.
// With INJECT (hc_inject_norm, R = 1) the normalised elements are hc_inject's
// streams, made here: x + post[t,s] * iy[t,i], the product rounded before
// the sum (no contraction) as hc_streams.hip rounds it.
// The twin of kernels/vulkan/rms_norm.comp.
// Grid: x = R * (D / G), y = T.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
#ifndef UNWEIGHTED
const float *__restrict__ nw = (const float *)args.b[B_NW];
#endif
#ifdef INJECT
const float *__restrict__ iy = (const float *)args.b[B_IY];
const float *__restrict__ post = (const float *)args.b[B_POST];
float *__restrict__ sum = (float *)args.b[B_SUM];
#endif
float *__restrict__ y = (float *)args.b[B_Y];

// Element i of the group at base: x's, or with INJECT the stream's.
float elem(uint base, uint i)
{
#ifdef INJECT
#pragma clang fp contract(off)
	uint t = gl_WorkGroupID.y, s = gl_WorkGroupID.x;
	float gy = post[t * (D / G) + s] * iy[t * G + i];
	return x[base + i] + gy;
#else
	return x[base + i];
#endif
}

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint groups = D / G;
	uint row = gl_WorkGroupID.y * R + gl_WorkGroupID.x / groups;
	uint g0 = (gl_WorkGroupID.x % groups) * G;
	uint base = row * D + g0;
	float s = 0.0f;
	for (uint i = l; i < G; i += LS_X) {
		float v = elem(base, i);
		s += v * v;
	}
	float inv = 1.0f / sqrt(tree_sum(l, s) / float(G) + EPS);
	for (uint i = l; i < G; i += LS_X) {
		float v = elem(base, i);
#ifdef INJECT
		sum[base + i] = v;
#endif
#ifdef UNWEIGHTED
		y[base + i] = epilogue(v * inv, base + i);
#else
		y[base + i] = epilogue(v * inv * (nw[g0 + i] + OFFSET), base + i);
#endif
	}
}
