#include "runtime/sample.h"

#include <math.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void halo_rng_seed(halo_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t halo_rng_next(halo_rng *r)
{
	uint64_t *s = r->s;
	uint64_t out = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double halo_rng_uniform(halo_rng *r)
{
	return (double)(halo_rng_next(r) >> 11) * 0x1.0p-53;
}

int32_t halo_argmax(const float *logits, int64_t n)
{
	/* Eight running maxima (lane i % 8) instead of one: a single
	 * compare-and-select chain is bound by its latency, and every greedy
	 * row scans the whole vocabulary (248320 logits for Qwen3.8 Flash, K + 1
	 * rows a verify step). Each lane keeps the first index of its largest
	 * value (strict >, so NaN never wins); the lanes merge by value, then by
	 * index: the first index of the maximum. */
	enum { LANES = 8 };
	float bv[LANES];
	int64_t bi[LANES];
	for (int j = 0; j < LANES; j++) {
		bv[j] = -INFINITY;
		bi[j] = -1;
	}
	int64_t i = 0;
	for (; i + LANES <= n; i += LANES)
		for (int j = 0; j < LANES; j++)
			if (logits[i + j] > bv[j]) {
				bv[j] = logits[i + j];
				bi[j] = i + j;
			}
	for (int j = 0; i < n; i++, j++)
		if (logits[i] > bv[j]) {
			bv[j] = logits[i];
			bi[j] = i;
		}
	float best = -INFINITY;
	int64_t at = 0;
	for (int j = 0; j < LANES; j++)
		if (bi[j] >= 0 && (bv[j] > best || (bv[j] == best && bi[j] < at))) {
			best = bv[j];
			at = bi[j];
		}
	return (int32_t)at;
}

/* qsort has no stable order for equal keys, so ties are broken by index:
 * the candidate set never depends on the C library. */
static int by_logit_desc(const void *a, const void *b, void *ctx)
{
	const float *logits = ctx;
	int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
	if (logits[i] != logits[j])
		return logits[i] > logits[j] ? -1 : 1;
	return (i > j) - (i < j);
}

void halo_sampling_probs(const halo_sampling *s, const float *logits, int64_t n, float *probs, int32_t *order)
{
	for (int64_t i = 0; i < n; i++)
		order[i] = (int32_t)i;
	qsort_r(order, (size_t)n, sizeof(*order), by_logit_desc, (void *)logits);
	int64_t keep = (s->top_k > 0 && s->top_k < n) ? s->top_k : n;

	double max = logits[order[0]], sum = 0;
	for (int64_t i = 0; i < n; i++)
		probs[i] = 0;
	for (int64_t i = 0; i < keep; i++) {
		double p = exp(((double)logits[order[i]] - max) / s->temperature);
		probs[order[i]] = (float)p;
		sum += p;
	}
	if (s->top_p < 1.0f) {
		/* Smallest prefix of the sorted candidates whose mass reaches top_p. */
		double acc = 0;
		int64_t cut = keep;
		for (int64_t i = 0; i < keep; i++) {
			acc += probs[order[i]] / sum;
			if (acc >= s->top_p) {
				cut = i + 1;
				break;
			}
		}
		for (int64_t i = cut; i < keep; i++) {
			sum -= probs[order[i]];
			probs[order[i]] = 0;
		}
	}
	for (int64_t i = 0; i < n; i++)
		probs[i] = (float)(probs[i] / sum);
}

int32_t halo_sample_from(const float *probs, int64_t n, halo_rng *rng)
{
	double total = 0;
	for (int64_t i = 0; i < n; i++)
		total += probs[i];
	double u = halo_rng_uniform(rng) * total, acc = 0;
	int64_t last = 0;
	for (int64_t i = 0; i < n; i++) {
		if (probs[i] <= 0)
			continue;
		acc += probs[i];
		last = i;
		if (u < acc)
			return (int32_t)i;
	}
	return (int32_t)last; /* u landed in the rounding gap at the top */
}

int32_t halo_sample(const halo_sampling *s, const float *logits, int64_t n, halo_rng *rng, float *probs,
		    int32_t *scratch)
{
	if (s->temperature <= 0)
		return halo_argmax(logits, n);
	halo_sampling_probs(s, logits, n, probs, scratch);
	return halo_sample_from(probs, n, rng);
}
