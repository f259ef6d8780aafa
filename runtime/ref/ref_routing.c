/* topk, moe_route, argmax. */
#include "runtime/ref/ref_ops.h"

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

void ref_moe_route(const float *logits, int32_t *ids, float *w, int64_t T, int64_t E, int64_t k,
		   bool norm_topk)
{
	float *p = malloc((size_t)E * sizeof *p);
	bool *taken = malloc((size_t)E * sizeof *taken);
	if (!p || !taken)
		abort();
	for (int64_t t = 0; t < T; t++) {
		ref_softmax(logits + t * E, p, 1, E);
		topk_row(p, ids + t * k, w + t * k, E, k, taken);
		if (!norm_topk)
			continue;
		double sum = 0.0;
		for (int64_t j = 0; j < k; j++)
			sum += w[t * k + j];
		for (int64_t j = 0; j < k; j++)
			w[t * k + j] = (float)(w[t * k + j] / sum);
	}
	free(p);
	free(taken);
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
