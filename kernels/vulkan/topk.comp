// topk (x [T,N] -> ids [T,KSEL] i32, vals [T,KSEL]) and, with ROUTE,
// moe_route (logits [T,N] -> ids, w): the values ranked are then the softmax
// of the row (max-subtracted, f32), and with NORM the KSEL selected weights
// are divided by their sum (taken in selection order).
// DeepSeek V4's routers, each defined only when used (so the softmax router's
// code is what it was): SCORE_SIGMOID or SCORE_SQRTSOFTPLUS score each logit
// alone (and NORM adds 1e-20 to the sum); BIAS (binding B_BIAS, [N]) is added
// to the scores for the ranking only, the weights being the scores;
// SCALING multiplies the weights last.
// HASH (moe_route_hash: logits [T,N], table [V,KSEL] at B_W, tokens [T] at
// B_TOK): nothing is ranked; the token's table row names the experts (floats
// holding integers, f32 or f16), their weights are their scores as above.
// Order: larger value first, equal values by lower index. Selection j scans
// for the best element ranked after selection j-1, so nothing is marked:
// lane l keeps the first best of its elements n = l, l + LS_X, ... (their
// values computed once, into registers), then the lanes' bests are
// combined: with SG_SHUFFLE a butterfly of shuffles in each subgroup and the
// subgroups' winners through shared memory (two barriers a selection), else
// a fixed tree in shared memory. The order is total, so every way of
// combining picks the same element: a row's result depends neither on T nor
// on the subgroup size. Grid: x = T.

#if SG_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
#ifdef BIAS
layout(set = 0, binding = B_BIAS) readonly buffer Bias { float bias[]; };
#endif
#ifdef HASH
layout(set = 0, binding = B_TOK) readonly buffer Tokens { int tokens[]; };
#endif
layout(set = 0, binding = B_IDS) writeonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_VALS) writeonly buffer Vals { float vals[]; };

#define NONE 0xffffffffu
// Stands in for -infinity: exp(NEG_BIG - m) is exactly 0 for any finite m.
#define NEG_BIG -3.0e38
#ifndef HASH
shared float bv[LS_X];
shared uint bi[LS_X];
#endif

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
	float s = 0.0;
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
// The weights of row t's experts: the token's table row (a token outside
// [0, V) reads row 0, an entry outside [0, N) or NaN expert 0, as embed
// clamps its ids; the reference reports both as errors), each entry
// truncated to an integer, its score.
void hash_experts(uint t, uint row, out float chosen[KSEL])
{
	int tok = tokens[t];
	uint r = (tok < 0 || tok >= int(V)) ? 0u : uint(tok);
	for (uint j = 0u; j < KSEL; j++) {
		float f = load_w(r * KSEL + j);
		uint e = (f >= 0.0 && f < float(N)) ? uint(f) : 0u;
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
bool before(float v, uint i, float w, uint j)
{
	return j == NONE || (i != NONE && (v > w || (v == w && i < j)));
}

// Elements per lane.
#define M ((N + LS_X - 1u) / LS_X)

// Leaves the best of all lanes' (best, idx) in every lane's best and idx.
void combine(uint l, inout float best, inout uint idx)
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
	for (uint m = 0u; m < M; m++)
		cand[m] = l + m * LS_X < N ? value(row, l + m * LS_X) : 0.0;
	float pv = 0.0, chosen[KSEL];
	uint pi = NONE;
#ifdef BIAS
	uint chosen_id[KSEL];
#endif
	for (uint j = 0u; j < KSEL; j++) {
		float best = 0.0;
		uint idx = NONE;
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
	for (uint j = 0u; j < KSEL; j++)
		chosen[j] = score(row, chosen_id[j]);
#endif
#endif
#if ROUTE && NORM
	float sum = 0.0;
	for (uint j = 0u; j < KSEL; j++)
		sum += chosen[j];
#ifdef SCORE
	sum += 1e-20;
#endif
	for (uint j = 0u; j < KSEL; j++)
		vals[t * KSEL + j] = SCALED(chosen[j] / sum);
#else
	for (uint j = 0u; j < KSEL; j++)
		vals[t * KSEL + j] = SCALED(chosen[j]);
#endif
}
