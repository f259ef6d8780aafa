/* topk, moe_route, moe_route_hash, argmax. */
#include "runtime/drivers/ref/ref_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

/* Selection by repeated scans: k is small (experts per token, sampling
 * candidates), and a strict '>' scan gives the lower index on ties for free.
 * taken[] marks chosen columns. */
static void topk_row(const float *x, int32_t *ids, float *vals, int64_t N, int64_t k, bool *taken)
{
	for (int64_t n = 0; n < N; n++)
		taken[n] = false;
	for (int64_t j = 0; j < k; j++) {
		int64_t best = -1;
		for (int64_t n = 0; n < N; n++)
			if (!taken[n] && (best < 0 || x[n] > x[best]))
				best = n;
		taken[best] = true;
		ids[j] = (int32_t)best;
		vals[j] = x[best];
	}
}

void ref_topk(const float *x, int32_t *ids, float *vals, int64_t T, int64_t N, int64_t k)
{
	bool *taken = malloc((size_t)N * sizeof *taken);
	if (!taken)
		abort(); /* no error channel here; N is a compile-time dim */
	for (int64_t t = 0; t < T; t++)
		topk_row(x + t * N, ids + t * k, vals + t * k, N, k, taken);
	free(taken);
}

/* The router's scores of one row of E logits, in f32. */
static void scores(ref_scoring scoring, const float *logits, float *s, int64_t E)
{
	if (scoring == REF_SCORE_SOFTMAX) {
		ref_softmax(logits, s, 1, E);
		return;
	}
	for (int64_t e = 0; e < E; e++)
		s[e] = scoring == REF_SCORE_SIGMOID ? ref_sigmoid_f(logits[e]) : sqrtf(ref_softplus_f(logits[e]));
}

/* w[j] = s[ids[j]], renormalised when asked (softmax scores to sum 1; the
 * others over their sum + 1e-20, as transformers' DeepSeek routers), then
 * times the scaling. */
static void route_weights(const ref_route_params *p, const float *s, const int32_t *ids, float *w, int64_t k)
{
	double sum = 0.0;
	for (int64_t j = 0; j < k; j++) {
		w[j] = s[ids[j]];
		sum += w[j];
	}
	if (p->scoring != REF_SCORE_SOFTMAX)
		sum += 1e-20;
	for (int64_t j = 0; j < k; j++)
		w[j] = (p->norm_topk ? (float)(w[j] / sum) : w[j]) * p->scaling;
}

void ref_moe_route(const ref_route_params *p, const float *logits, const float *bias, int32_t *ids, float *w,
		   int64_t T, int64_t E)
{
	float *s = malloc((size_t)E * sizeof *s), *sel = malloc((size_t)E * sizeof *sel);
	bool *taken = malloc((size_t)E * sizeof *taken);
	if (!s || !sel || !taken)
		abort();
	for (int64_t t = 0; t < T; t++) {
		scores(p->scoring, logits + t * E, s, E);
		for (int64_t e = 0; e < E; e++)
			sel[e] = bias ? s[e] + bias[e] : s[e];
		topk_row(sel, ids + t * p->k, w + t * p->k, E, p->k, taken);
		route_weights(p, s, ids + t * p->k, w + t * p->k, p->k);
	}
	free(s);
	free(sel);
	free(taken);
}

/* ids[t] = table[tokens[t]] (floats holding integers), checked. */
static bool hash_ids(const float *table, const int32_t *tokens, int32_t *ids, int64_t T, int64_t E, int64_t V,
		     int64_t k, ref_error *err)
{
	for (int64_t t = 0; t < T; t++) {
		if (tokens[t] < 0 || tokens[t] >= V)
			return ref_fail(err, "moe_route_hash", "token %" PRId64 " is %" PRId32 ", outside the table's %" PRId64
					" rows", t, tokens[t], V);
		for (int64_t j = 0; j < k; j++) {
			float id = table[tokens[t] * k + j];
			if (!(id >= 0.0f && id < (float)E) || id != floorf(id))
				return ref_fail(err, "moe_route_hash", "table row %" PRId32 " slot %" PRId64 " holds %g, "
						"not an expert id in [0, %" PRId64 ")", tokens[t], j, (double)id, E);
			ids[t * k + j] = (int32_t)id;
		}
	}
	return true;
}

bool ref_moe_route_hash(const ref_route_params *p, const float *logits, const float *table, const int32_t *tokens,
			int32_t *ids, float *w, int64_t T, int64_t E, int64_t V, ref_error *err)
{
	if (!hash_ids(table, tokens, ids, T, E, V, p->k, err))
		return false;
	float *s = malloc((size_t)E * sizeof *s);
	if (!s)
		return ref_fail(err, "moe_route_hash", "out of memory");
	for (int64_t t = 0; t < T; t++) {
		scores(p->scoring, logits + t * E, s, E);
		route_weights(p, s, ids + t * p->k, w + t * p->k, p->k);
	}
	free(s);
	return true;
}

void ref_argmax(const float *x, int32_t *ids, int64_t T, int64_t N)
{
	for (int64_t t = 0; t < T; t++) {
		int64_t best = 0;
		for (int64_t n = 1; n < N; n++)
			if (x[t * N + n] > x[t * N + best])
				best = n;
		ids[t] = (int32_t)best;
	}
}
