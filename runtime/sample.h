/* Token sampling over one row of logits. Deterministic: the same seed and
 * the same logits give the same token on every machine (the RNG is a
 * self-contained splitmix64/xoshiro256**, not the C library's rand()). */
#ifndef HALO_RUNTIME_SAMPLE_H
#define HALO_RUNTIME_SAMPLE_H

#include <stdint.h>

typedef struct {
	uint64_t s[4];
} halo_rng;

void halo_rng_seed(halo_rng *r, uint64_t seed);
uint64_t halo_rng_next(halo_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double halo_rng_uniform(halo_rng *r);

typedef struct {
	float temperature; /* <= 0: greedy */
	int top_k;         /* <= 0: off */
	float top_p;       /* >= 1: off */
} halo_sampling;

/* Index of the largest logit; ties go to the lowest index; NaNs are never
 * the largest (n == 0, or nothing above -infinity: 0). */
int32_t halo_argmax(const float *logits, int64_t n);

/* Writes into probs[n] the distribution the sampler draws from: softmax of
 * logits/temperature restricted to the top-k / top-p set (zero elsewhere).
 * Requires temperature > 0. scratch must hold n int32. */
void halo_sampling_probs(const halo_sampling *s, const float *logits, int64_t n, float *probs, int32_t *scratch);

/* Draws an index from probs[n] (need not be normalised). */
int32_t halo_sample_from(const float *probs, int64_t n, halo_rng *rng);

/* Greedy when temperature <= 0, else a draw from halo_sampling_probs(). probs
 * and scratch are caller-owned work buffers of n entries. */
int32_t halo_sample(const halo_sampling *s, const float *logits, int64_t n, halo_rng *rng, float *probs,
		    int32_t *scratch);

#endif
