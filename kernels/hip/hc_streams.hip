// DeepSeek V4's mHC stream mixes over the residual x [T,NS,H]: hc_collapse
// (EXPAND 0: y[t] = sum_j pre[t,j] x[t,j]) and hc_expand (EXPAND 1: out[t,k]
// = post[t,k] y[t] + sum_j comb[t,j,k] x[t,j]), and Qwen3.8 Flash's
// hc_inject (INJECT 1: out[t,k] = x[t,k] + post[t,k] y[t], the product
// rounded before the sum: contraction off). The twin of
// kernels/vulkan/hc_streams.comp, which gives the scheme: lane h owns one
// element (a vec4 with VEC4) of every stream of token t and reads each
// input once, sums in the reference's order in f32. The loops over xs[] are
// unrolled so it stays in registers. Grid: x = ceil(H / (4 or 1) / LS_X),
// y = T.
// @struct

#if VEC4
#define VT vec4
#define HV (H / 4u)
#else
#define VT float
#define HV H
#endif

const VT *__restrict__ x = (const VT *)args.b[B_X];
#if INJECT
const VT *__restrict__ y = (const VT *)args.b[B_Y];
const float *__restrict__ post = (const float *)args.b[B_POST];
VT *__restrict__ o = (VT *)args.b[B_OUT];
#elif EXPAND
const VT *__restrict__ y = (const VT *)args.b[B_Y];
const float *__restrict__ post = (const float *)args.b[B_POST];
const float *__restrict__ comb = (const float *)args.b[B_COMB];
VT *__restrict__ o = (VT *)args.b[B_OUT];
#else
const float *__restrict__ pre = (const float *)args.b[B_PRE];
VT *__restrict__ y = (VT *)args.b[B_Y];
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
#pragma clang fp contract(off)
		VT gy = post[t * NS + k] * yv;
		o[x0 + k * HV] = x[x0 + k * HV] + gy;
	}
#elif EXPAND
	VT xs[NS];
#pragma unroll
	for (uint j = 0u; j < NS; j++)
		xs[j] = x[x0 + j * HV];
	VT yv = y[t * HV + h];
#pragma unroll
	for (uint k = 0u; k < NS; k++) {
		VT acc = post[t * NS + k] * yv;
#pragma unroll
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
