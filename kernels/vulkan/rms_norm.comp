// rms_norm over groups of G elements of rows of D (R rows per token):
// y = x * (mean(x^2) + EPS)^-1/2 * (w + OFFSET), then the epilogue; with
// UNWEIGHTED (defined only then) there is no w: y = x * (mean(x^2) + EPS)^-1/2.
// With INJECT (hc_inject_norm, R = 1) the normalised elements are hc_inject's
// streams, made here: element i of stream s (group s, D / G = NS of them) is
// x + post[t,s] * iy[t,i], the product rounded before the sum (precise: no
// fma) as hc_streams.comp rounds it, so sum and y are the two ops' bits.
// One workgroup per (row, group); the sum of squares uses the fixed tree.
// Grid: x = R * (D / G), y = T.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
#ifndef UNWEIGHTED
layout(set = 0, binding = B_NW) readonly buffer NW { float nw[]; };
#endif
#ifdef INJECT
layout(set = 0, binding = B_IY) readonly buffer IY { float iy[]; };
layout(set = 0, binding = B_POST) readonly buffer Post { float post[]; };
layout(set = 0, binding = B_SUM) writeonly buffer Sum { float sum[]; };
#endif
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };

// Element i of the group at base: x's, or with INJECT the stream's.
float elem(uint base, uint i)
{
#ifdef INJECT
	uint t = gl_WorkGroupID.y, s = gl_WorkGroupID.x;
	precise float gy = post[t * (D / G) + s] * iy[t * G + i];
	precise float v = x[base + i] + gy;
	return v;
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
	float s = 0.0;
	for (uint i = l; i < G; i += LS_X) {
		float v = elem(base, i);
		s += v * v;
	}
	float inv = 1.0 / sqrt(tree_sum(l, s) / float(G) + EPS);
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
