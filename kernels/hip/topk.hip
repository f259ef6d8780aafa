// topk (x [T,N] -> ids [T,KSEL] i32, vals [T,KSEL]) and, with ROUTE,
// moe_route (logits [T,N] -> ids, w: the softmax of the row, with NORM the
// selected weights divided by their sum in selection order). The twin of
// kernels/vulkan/topk.comp, which gives the scheme: larger value first,
// equal values by lower index; selection j scans for the best element
// ranked after selection j-1; lanes combine with subgroup shuffles
// (SG_SHUFFLE) or a fixed tree; DeepSeek V4's SCORE_SIGMOID,
// SCORE_SQRTSOFTPLUS, BIAS (B_BIAS) and SCALING as there, and HASH
// (moe_route_hash: the token's row of the table at B_W names the experts,
// tokens at B_TOK). The loops over cand[] and chosen[] are unrolled so both
// stay in registers (README.md). Grid: x = T.

#define NONE 0xffffffffu
// Stands in for -infinity: exp(NEG_BIG - m) is exactly 0 for any finite m.
#define NEG_BIG -3.0e38f
#ifndef HASH
HALO_SHARED float bv[LS_X];
HALO_SHARED uint bi[LS_X];
#endif
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
#ifdef BIAS
const float *__restrict__ bias = (const float *)args.b[B_BIAS];
#endif
#ifdef HASH
const int *__restrict__ tokens = (const int *)args.b[B_TOK];
#endif
int *__restrict__ ids = (int *)args.b[B_IDS];
float *__restrict__ vals = (float *)args.b[B_VALS];

#if defined(SCORE_SIGMOID)
#define SCORE(v) sigmoid_f(v)
#elif defined(SCORE_SQRTSOFTPLUS)
#define SCORE(v) sqrt(softplus_f(v))
#endif
#ifdef SCALING
#define SCALED(w) ((w) * SCALING)
#else
#define SCALED(w) (w)
#endif

#if ROUTE && !defined(SCORE)
float row_max;
float row_sum;

void softmax_stats(uint l, uint row)
{
	float m = NEG_BIG;
	for (uint n = l; n < N; n += LS_X)
		m = max(m, x[row + n]);
	row_max = tree_max(l, m);
	float s = 0.0f;
	for (uint n = l; n < N; n += LS_X)
		s += exp(x[row + n] - row_max);
	row_sum = tree_sum(l, s);
}
#endif

#if ROUTE && (defined(BIAS) || defined(HASH))
#ifdef SCORE
float score(uint row, uint n) { return SCORE(x[row + n]); }
#else
float score(uint row, uint n) { return exp(x[row + n] - row_max) / row_sum; }
#endif
#endif
#ifdef HASH
// The weights of row t's experts: the token's table row, clamped as in
// topk.comp (a token outside [0, V) reads row 0, an entry outside [0, N)
// or NaN expert 0; the reference reports both as errors), each entry
// truncated to an integer, its score.
void hash_experts(uint t, uint row, float (&chosen)[KSEL])
{
	int tok = tokens[t];
	uint r = (tok < 0 || tok >= int(V)) ? 0u : uint(tok);
#pragma unroll
	for (uint j = 0u; j < KSEL; j++) {
		float f = load_w(r * KSEL + j);
		uint e = (f >= 0.0f && f < float(N)) ? uint(f) : 0u;
		ids[t * KSEL + j] = int(e);
		chosen[j] = score(row, e);
	}
}
#elif ROUTE && defined(BIAS)
float value(uint row, uint n) { return score(row, n) + bias[n]; }
#elif ROUTE && defined(SCORE)
float value(uint row, uint n) { return SCORE(x[row + n]); }
#elif ROUTE
float value(uint row, uint n) { return exp(x[row + n] - row_max) / row_sum; }
#else
float value(uint row, uint n) { return x[row + n]; }
#endif

#ifndef HASH
// (v, i) ranks before (w, j); NONE ranks last.
static bool before(float v, uint i, float w, uint j)
{
	return j == NONE || (i != NONE && (v > w || (v == w && i < j)));
}

// Elements per lane.
#define M ((N + LS_X - 1u) / LS_X)

// Leaves the best of all lanes' (best, idx) in every lane's best and idx.
static void combine(uint l, float &best, uint &idx)
{
#if SG_SHUFFLE
	for (uint o = gl_SubgroupSize / 2u; o > 0u; o >>= 1) {
		float ov = subgroupShuffleXor(best, o);
		uint oi = subgroupShuffleXor(idx, o);
		if (before(ov, oi, best, idx)) {
			best = ov;
			idx = oi;
		}
	}
	if (gl_SubgroupInvocationID == 0u) {
		bv[gl_SubgroupID] = best;
		bi[gl_SubgroupID] = idx;
	}
	barrier();
	for (uint s = 0u; s < gl_NumSubgroups; s++)
		if (before(bv[s], bi[s], best, idx)) {
			best = bv[s];
			idx = bi[s];
		}
#else
	bv[l] = best;
	bi[l] = idx;
	for (uint s = LS_X / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l < s && before(bv[l + s], bi[l + s], bv[l], bi[l])) {
			bv[l] = bv[l + s];
			bi[l] = bi[l + s];
		}
	}
	barrier();
	best = bv[0];
	idx = bi[0];
#endif
	barrier(); // every lane has read the winner before bv is reused
}
#endif

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.x, row = t * N;
#if ROUTE && !defined(SCORE)
	softmax_stats(l, row);
#endif
#ifdef HASH
	float chosen[KSEL];
	if (l != 0u)
		return;
	hash_experts(t, row, chosen);
#else
	float cand[M];
#pragma unroll
	for (uint m = 0u; m < M; m++)
		cand[m] = l + m * LS_X < N ? value(row, l + m * LS_X) : 0.0f;
	float pv = 0.0f, chosen[KSEL];
	uint pi = NONE;
#ifdef BIAS
	uint chosen_id[KSEL];
#endif
#pragma unroll
	for (uint j = 0u; j < KSEL; j++) {
		float best = 0.0f;
		uint idx = NONE;
#pragma unroll
		for (uint m = 0u; m < M; m++) {
			uint n = l + m * LS_X;
			float v = cand[m];
			if (n < N && (pi == NONE || before(pv, pi, v, n)) && (idx == NONE || v > best)) {
				best = v;
				idx = n;
			}
		}
		combine(l, best, idx);
		pv = best;
		pi = idx;
		chosen[j] = pv;
#ifdef BIAS
		chosen_id[j] = pi;
#endif
		if (l == 0u)
			ids[t * KSEL + j] = int(pi);
	}
	if (l != 0u)
		return;
#ifdef BIAS
#pragma unroll
	for (uint j = 0u; j < KSEL; j++)
		chosen[j] = score(row, chosen_id[j]);
#endif
#endif
#if ROUTE && NORM
	float sum = 0.0f;
#pragma unroll
	for (uint j = 0u; j < KSEL; j++)
		sum += chosen[j];
#ifdef SCORE
	sum += 1e-20f;
#endif
#pragma unroll
	for (uint j = 0u; j < KSEL; j++)
		vals[t * KSEL + j] = SCALED(chosen[j] / sum);
#else
#pragma unroll
	for (uint j = 0u; j < KSEL; j++)
		vals[t * KSEL + j] = SCALED(chosen[j]);
#endif
}
