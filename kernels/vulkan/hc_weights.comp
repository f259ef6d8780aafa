// DeepSeek V4's mHC weights (hc_weights, docs/ops.md), NS streams, in f32:
//   pre[t,j]  = sigmoid(mix[t,j] scale[0] + base[j]) + EPS
// and with FULL (mix [T,(2+NS)NS], scale [3]; else mix [T,NS], scale [1]):
//   post[t,j] = 2 sigmoid(mix[t,NS+j] scale[1] + base[NS+j])
//   comb[t]   = the NS x NS matrix C[j,k] = softmax_k(mix[t,2NS+j NS+k] scale[2]
//               + base[2NS+j NS+k]) + EPS, then its columns divided by their
//               sums + EPS, then ITERS - 1 times its rows, then its columns.
// A token's work is a few hundred flops: one lane per token does it all in
// the reference's order (ref_hc.c), C in registers, every sum over an index
// ascending in f32 (the reference sums in f64 and rounds once). No lane
// talks to another, so a row depends only on its token.
// Grid: x = ceil(T / LS_X).

#if FULL
#define MW ((2u + NS) * NS)
#else
#define MW NS
#endif

layout(set = 0, binding = B_MIX) readonly buffer Mix { float mix[]; };
layout(set = 0, binding = B_BASE) readonly buffer Base { float base[]; };
layout(set = 0, binding = B_SCALE) readonly buffer Scale { float scale[]; };
layout(set = 0, binding = B_PRE) writeonly buffer Pre { float pre[]; };
#if FULL
layout(set = 0, binding = B_POST) writeonly buffer Post { float post[]; };
layout(set = 0, binding = B_COMB) writeonly buffer Comb { float comb[]; };

// Row-wise softmax of z = mix * scale[2] + base over the token's NS x NS
// block at m (max-subtracted; each row's sum inverted once, as ref_softmax),
// + EPS.
void comb_softmax(uint m, out float c[NS * NS])
{
	for (uint j = 0u; j < NS; j++) {
		float mx = -3.0e38;
		for (uint k = 0u; k < NS; k++) {
			c[j * NS + k] = mix[m + j * NS + k] * scale[2] + base[2u * NS + j * NS + k];
			mx = max(mx, c[j * NS + k]);
		}
		float sum = 0.0;
		for (uint k = 0u; k < NS; k++) {
			c[j * NS + k] = exp(c[j * NS + k] - mx);
			sum += c[j * NS + k];
		}
		float inv = 1.0 / sum;
		for (uint k = 0u; k < NS; k++)
			c[j * NS + k] = c[j * NS + k] * inv + EPS;
	}
}

// Sinkhorn half-steps: every row (or column) divided by its sum + EPS.
void rows(inout float c[NS * NS])
{
	for (uint j = 0u; j < NS; j++) {
		float sum = 0.0;
		for (uint k = 0u; k < NS; k++)
			sum += c[j * NS + k];
		float den = sum + EPS;
		for (uint k = 0u; k < NS; k++)
			c[j * NS + k] /= den;
	}
}

void columns(inout float c[NS * NS])
{
	for (uint k = 0u; k < NS; k++) {
		float sum = 0.0;
		for (uint j = 0u; j < NS; j++)
			sum += c[j * NS + k];
		float den = sum + EPS;
		for (uint j = 0u; j < NS; j++)
			c[j * NS + k] /= den;
	}
}
#endif

void main()
{
	uint t = gl_GlobalInvocationID.x, m = t * MW;
	if (t >= STEP_T)
		return;
	for (uint j = 0u; j < NS; j++)
		pre[t * NS + j] = sigmoid_f(mix[m + j] * scale[0] + base[j]) + EPS;
#if FULL
	for (uint j = 0u; j < NS; j++)
		post[t * NS + j] = 2.0 * sigmoid_f(mix[m + NS + j] * scale[1] + base[NS + j]);
	float c[NS * NS];
	comb_softmax(m + 2u * NS, c);
	columns(c);
	for (uint i = 1u; i < ITERS; i++) {
		rows(c);
		columns(c);
	}
	for (uint i = 0u; i < NS * NS; i++)
		comb[t * NS * NS + i] = c[i];
#endif
}
