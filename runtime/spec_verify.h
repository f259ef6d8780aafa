/* Speculative decoding: deciding which drafts the target accepts. Pure
 * functions over logits rows; nothing here touches a session.
 *
 * The target's rows come from one `decode` over [t, d_0, ..., d_{n-1}]
 * (t = the last accepted token, d = the drafts): row i is the target's
 * prediction for the token after that batch's i-th token, so row i judges
 * d_i and row n gives the bonus token when every draft is accepted. Each
 * verdict emits the accepted drafts plus one target token, so every round
 * makes progress. */
#ifndef HALO_RUNTIME_SPEC_VERIFY_H
#define HALO_RUNTIME_SPEC_VERIFY_H

#include <stdint.h>

#include "runtime/sample.h"

/* One draft token and the distribution q the drafter drew it from. Token and
 * q travel in one record so that cutting a proposal short (a clamp of K)
 * cannot leave a distribution paired with the wrong token. q is borrowed
 * ([vocab], owned by the drafter, valid until its next proposal); NULL means
 * the drafter picked the token deterministically: q is a point mass on it. */
typedef struct {
	int32_t token;
	const float *q;
} halo_draft;

typedef struct {
	int accepted; /* drafts accepted, a prefix of 0..n */
	int32_t next; /* the target's token after them: its correction at the first rejection, else the bonus */
} halo_verdict;

/* Greedy acceptance: the longest prefix of drafts equal to the argmax of
 * their rows (ties to the lowest index, as halo_argmax), then the argmax of
 * the first row that disagrees (or of row n). logits: [n + 1, vocab]. */
halo_verdict halo_verify_greedy(const float *logits, int64_t vocab, const halo_draft *drafts, int n);

/* Caller-owned work buffers of vocab entries each for halo_verify_sampled. */
typedef struct {
	float *p;         /* the target's sampling distribution of the current row */
	float *residual;  /* max(0, p - q) after a rejection */
	int32_t *scratch; /* for halo_sampling_probs */
} halo_verify_work;

/* Stochastic acceptance (s->temperature > 0), which makes every emitted token
 * distributed exactly as the target's sampler (p = halo_sampling_probs of its
 * row) whatever q is: draft x is accepted with probability min(1, p(x)/q(x));
 * the first rejection draws from max(0, p - q) renormalised; a full acceptance
 * draws the bonus from row n's p. A draft outside p's support is never
 * accepted. rng is the verifier's own stream (halo_verifier_rng_seed). */
halo_verdict halo_verify_sampled(const halo_sampling *s, const float *logits, int64_t vocab,
				 const halo_draft *drafts, int n, halo_rng *rng, const halo_verify_work *w);

/* Seeds the verifier's stream from the user's seed. It differs from the
 * sampler's stream for the same seed, so speculating never replays the
 * sampler's random numbers, and a run repeats exactly for a given seed. */
void halo_verifier_rng_seed(halo_rng *r, uint64_t user_seed);

#endif
