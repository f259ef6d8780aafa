#include "runtime/spec_verify.h"

#include <stdbool.h>
#include <stddef.h>

halo_verdict halo_verify_greedy(const float *logits, int64_t vocab, const halo_draft *drafts, int n)
{
	halo_verdict v = {0, 0};
	for (;; v.accepted++) {
		v.next = halo_argmax(logits + (size_t)v.accepted * (size_t)vocab, vocab);
		if (v.accepted == n || drafts[v.accepted].token != v.next)
			return v;
	}
}

/* u * q(x) < p(x) is u < p(x)/q(x) without dividing: q(x) = 0 (a drafter
 * that proposed what it gave no mass) accepts wherever p(x) > 0, the limit
 * of the ratio, and p(x) = 0 always rejects. */
static bool accept_draft(const halo_draft *d, const float *p, halo_rng *rng)
{
	double qx = d->q ? d->q[d->token] : 1.0;
	return halo_rng_uniform(rng) * qx < (double)p[d->token];
}

/* Draws from max(0, p - q). When that has no mass (p equals q up to
 * rounding, so a rejection was a rounding artefact) p itself is the answer. */
static int32_t draw_residual(const halo_draft *d, const float *p, int64_t vocab, halo_rng *rng, float *residual)
{
	double mass = 0;
	for (int64_t i = 0; i < vocab; i++) {
		float qi = d->q ? d->q[i] : (i == d->token ? 1.0f : 0.0f);
		residual[i] = p[i] > qi ? p[i] - qi : 0.0f;
		mass += residual[i];
	}
	return halo_sample_from(mass > 0 ? residual : p, vocab, rng);
}

halo_verdict halo_verify_sampled(const halo_sampling *s, const float *logits, int64_t vocab,
				 const halo_draft *drafts, int n, halo_rng *rng, const halo_verify_work *w)
{
	halo_verdict v = {0, 0};
	for (;; v.accepted++) {
		halo_sampling_probs(s, logits + (size_t)v.accepted * (size_t)vocab, vocab, w->p, w->scratch);
		if (v.accepted == n) {
			v.next = halo_sample_from(w->p, vocab, rng);
			return v;
		}
		const halo_draft *d = &drafts[v.accepted];
		if (!accept_draft(d, w->p, rng)) {
			v.next = draw_residual(d, w->p, vocab, rng, w->residual);
			return v;
		}
	}
}

void halo_verifier_rng_seed(halo_rng *r, uint64_t user_seed)
{
	/* A fixed constant moves the seed to another splitmix64 start point. */
	halo_rng_seed(r, user_seed ^ 0x517cc1b727220a95ull);
}
