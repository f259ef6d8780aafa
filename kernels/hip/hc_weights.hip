// DeepSeek V4's mHC weights (hc_weights): pre = sigmoid(.) + EPS and, with
// FULL, post = 2 sigmoid(.) and comb, the row softmax + EPS then Sinkhorn
// (columns, then ITERS - 1 times rows and columns), NS streams, in f32. The
// twin of kernels/vulkan/hc_weights.comp, which gives the order: one lane
// per token, every sum over an index ascending. The loops over the lane's
// matrix c[] are unrolled so it stays in registers. Grid: x = ceil(T / LS_X).
// @struct

#if FULL
#define MW ((2u + NS) * NS)
#else
#define MW NS
#endif

const float *__restrict__ mix = (const float *)args.b[B_MIX];
const float *__restrict__ base = (const float *)args.b[B_BASE];
const float *__restrict__ scale = (const float *)args.b[B_SCALE];
float *__restrict__ pre = (float *)args.b[B_PRE];
#if FULL
float *__restrict__ post = (float *)args.b[B_POST];
float *__restrict__ comb = (float *)args.b[B_COMB];

// Row-wise softmax of z = mix * scale[2] + base over the token's NS x NS
// block at m (max-subtracted, each row's sum inverted once), + EPS.
void comb_softmax(uint m, float (&c)[NS * NS])
{
#pragma unroll
	for (uint j = 0u; j < NS; j++) {
		float mx = -3.0e38f;
#pragma unroll
		for (uint k = 0u; k < NS; k++) {
			c[j * NS + k] = mix[m + j * NS + k] * scale[2] + base[2u * NS + j * NS + k];
			mx = max(mx, c[j * NS + k]);
		}
		float sum = 0.0f;
#pragma unroll
		for (uint k = 0u; k < NS; k++) {
			c[j * NS + k] = exp(c[j * NS + k] - mx);
			sum += c[j * NS + k];
		}
		float inv = 1.0f / sum;
#pragma unroll
		for (uint k = 0u; k < NS; k++)
			c[j * NS + k] = c[j * NS + k] * inv + EPS;
	}
}

// Sinkhorn half-steps: every row (or column) divided by its sum + EPS.
static void rows(float (&c)[NS * NS])
{
#pragma unroll
	for (uint j = 0u; j < NS; j++) {
		float sum = 0.0f;
#pragma unroll
		for (uint k = 0u; k < NS; k++)
			sum += c[j * NS + k];
		float den = sum + EPS;
#pragma unroll
		for (uint k = 0u; k < NS; k++)
			c[j * NS + k] /= den;
	}
}

static void columns(float (&c)[NS * NS])
{
#pragma unroll
	for (uint k = 0u; k < NS; k++) {
		float sum = 0.0f;
#pragma unroll
		for (uint j = 0u; j < NS; j++)
			sum += c[j * NS + k];
		float den = sum + EPS;
#pragma unroll
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
		post[t * NS + j] = 2.0f * sigmoid_f(mix[m + NS + j] * scale[1] + base[NS + j]);
	float c[NS * NS];
	comb_softmax(m + 2u * NS, c);
	columns(c);
	for (uint i = 1u; i < ITERS; i++) {
		rows(c);
		columns(c);
	}
#pragma unroll
	for (uint i = 0u; i < NS * NS; i++)
		comb[t * NS * NS + i] = c[i];
#endif
}
