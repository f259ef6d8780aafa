// DeepSeek V4's mHC stream mixes over the residual x [T,NS,H] (NS streams):
//   hc_collapse (EXPAND 0): y[t] = sum_j pre[t,j] x[t,j] -> [T,H];
//   hc_expand   (EXPAND 1): out[t,k] = post[t,k] y[t] + sum_j comb[t,j,k] x[t,j]
//                           -> [T,NS,H], from y [T,H], post [T,NS], comb [T,NS,NS];
// and Qwen3.8 Flash's sublayer exit
//   hc_inject   (INJECT 1): out[t,k] = x[t,k] + post[t,k] y[t] -> [T,NS,H]
//                           (post is the op's g), the product rounded before
//                           the sum (precise: no fma), as the reference and
//                           the repeat, mul and add it replaces.
// Both are bound by x's bytes, so lane h owns one element (a vec4 of four
// with VEC4, H % 4 == 0) of every stream of token t and reads each input
// once: collapse sums its NS streams as it loads them, expand keeps them in
// registers for its NS outputs. Every sum runs in the reference's order
// (expand from post * y, then j ascending) in f32, the reference in f64;
// the per-token weights are the same address in every lane. A row's result
// depends on nothing but its own token. Grid: x = ceil(H / (4 or 1) / LS_X),
// y = T.

#if VEC4
#define VT vec4
#define HV (H / 4u)
#else
#define VT float
#define HV H
#endif

layout(set = 0, binding = B_X) readonly buffer X { VT x[]; };
#if INJECT
layout(set = 0, binding = B_Y) readonly buffer Y { VT y[]; };
layout(set = 0, binding = B_POST) readonly buffer Post { float post[]; };
layout(set = 0, binding = B_OUT) writeonly buffer Out { VT o[]; };
#elif EXPAND
layout(set = 0, binding = B_Y) readonly buffer Y { VT y[]; };
layout(set = 0, binding = B_POST) readonly buffer Post { float post[]; };
layout(set = 0, binding = B_COMB) readonly buffer Comb { float comb[]; };
layout(set = 0, binding = B_OUT) writeonly buffer Out { VT o[]; };
#else
layout(set = 0, binding = B_PRE) readonly buffer Pre { float pre[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { VT y[]; };
#endif

void main()
{
	uint t = gl_WorkGroupID.y, h = gl_GlobalInvocationID.x;
	if (h >= HV)
		return;
	uint x0 = t * NS * HV + h; // stream j at x0 + j * HV
#if INJECT
	VT yv = y[t * HV + h];
	for (uint k = 0u; k < NS; k++) {
		precise VT gy = post[t * NS + k] * yv;
		precise VT r = x[x0 + k * HV] + gy;
		o[x0 + k * HV] = r;
	}
#elif EXPAND
	VT xs[NS];
	for (uint j = 0u; j < NS; j++)
		xs[j] = x[x0 + j * HV];
	VT yv = y[t * HV + h];
	for (uint k = 0u; k < NS; k++) {
		VT acc = post[t * NS + k] * yv;
		for (uint j = 0u; j < NS; j++)
			acc += comb[(t * NS + j) * NS + k] * xs[j];
		o[x0 + k * HV] = acc;
	}
#else
	VT acc = pre[t * NS] * x[x0];
	for (uint j = 1u; j < NS; j++)
		acc += pre[t * NS + j] * x[x0 + j * HV];
	y[t * HV + h] = acc;
#endif
}
