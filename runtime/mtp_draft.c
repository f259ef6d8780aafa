#include "runtime/mtp_draft.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(HALO_SPEC_K_MAX - 1 <= HALO_CHAIN_MAX, "a round's chained drafts exceed one chain");

struct halo_mtp_drafter {
	halo_model *m;
	halo_session *s;
	halo_sampling sampling;
	halo_rng rng;       /* the drafter's own stream: drafting never shifts the verifier's */
	int64_t vocab;
	int64_t width;       /* the head's logits a row: token ids 0 .. width - 1 (--draft-vocab) */
	int64_t extend_max;  /* tokens per draft_extend call */
	int64_t catchup_max; /* tokens per draft_catchup call; 0: the bundle has none */
	bool chain;          /* greedy, with draft_greedy: chained drafts in one halo_session_chain_at */
	int64_t done;       /* head positions [0, done) hold target-conditioned entries */
	float *q;           /* [HALO_SPEC_K_MAX, vocab] draft distributions (sampling only) */
	int32_t *scratch;   /* [vocab] */
};

/* A stream of its own, apart from the sampler's and the verifier's. */
static void drafter_rng_seed(halo_rng *r, uint64_t user_seed)
{
	halo_rng_seed(r, user_seed ^ 0x6d74702d64726166ull); /* "mtp-draf" */
}

bool halo_mtp_check_model(const halo_model *m, char *err, size_t errlen)
{
	static const char *const names[] = {HALO_MTP_EXTEND_ENTRY, HALO_MTP_STEP_ENTRY};
	int64_t width = 0;
	for (int i = 0; i < 2; i++) {
		halo_entry_info e;
		if (!halo_model_entry(m, names[i], &e)) {
			snprintf(err, errlen, "the bundle has no '%s' entry point: it was compiled without a draft "
				 "head (the config declares no MTP layer, or halo compile --no-mtp)", names[i]);
			return false;
		}
		if (!e.caller_position) {
			snprintf(err, errlen, "entry '%s' runs at the session's position; a draft head's entries "
				 "must run at a caller-given one (position: caller)", names[i]);
			return false;
		}
		if (i == 1 && e.t_min > 1) {
			snprintf(err, errlen, "entry '%s' takes at least %lld tokens; chained drafts feed one",
				 names[i], (long long)e.t_min);
			return false;
		}
		if (e.tokens_out) {
			snprintf(err, errlen, "entry '%s' returns tokens; a draft head's entries return logits", names[i]);
			return false;
		}
		if (i == 1 && e.width != width) {
			snprintf(err, errlen, "entries '%s' and '%s' return rows of %lld and %lld logits; a draft head's "
				 "vocabulary is one", names[0], names[1], (long long)width, (long long)e.width);
			return false;
		}
		width = e.width;
	}
	return true;
}

halo_mtp_drafter *halo_mtp_drafter_create(halo_model *m, halo_session *s, const halo_sampling *sampling,
					  uint64_t seed, char *err, size_t errlen)
{
	halo_entry_info extend_entry;
	if (!halo_mtp_check_model(m, err, errlen) || !halo_model_entry(m, HALO_MTP_EXTEND_ENTRY, &extend_entry))
		return NULL;
	halo_mtp_drafter *d = calloc(1, sizeof(*d));
	size_t v = (size_t)halo_model_vocab(m);
	if (d) {
		d->q = malloc((size_t)HALO_SPEC_K_MAX * v * sizeof(float));
		d->scratch = malloc(v * sizeof(int32_t));
	}
	if (!d || !d->q || !d->scratch) {
		halo_mtp_drafter_free(d);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	d->m = m;
	d->s = s;
	d->sampling = *sampling;
	d->vocab = (int64_t)v;
	d->width = extend_entry.width;
	d->extend_max = extend_entry.t_max;
	halo_entry_info catchup;
	if (halo_model_entry(m, HALO_MTP_CATCHUP_ENTRY, &catchup) && catchup.caller_position)
		d->catchup_max = catchup.t_max;
	halo_entry_info greedy;
	d->chain = sampling->temperature <= 0 && halo_model_entry(m, HALO_MTP_GREEDY_ENTRY, &greedy) &&
		   greedy.caller_position && greedy.tokens_out && greedy.t_min == 1;
	drafter_rng_seed(&d->rng, seed);
	return d;
}

void halo_mtp_drafter_free(halo_mtp_drafter *d)
{
	if (!d)
		return;
	free(d->q);
	free(d->scratch);
	free(d);
}

/* Head positions [done, until): pairs (target hidden p, ctx[p + 1]), in
 * chunks; the session's logits end as the row of position until - 1. */
static bool extend(halo_mtp_drafter *d, const int32_t *ctx, int64_t until, char *err, size_t errlen)
{
	if (until <= d->done) {
		snprintf(err, errlen, "MTP drafter: nothing new to extend over (head at %lld, target at %lld): "
			 "the session was reset or rolled back behind the drafter", (long long)d->done,
			 (long long)until);
		return false;
	}
	while (d->done < until) {
		int64_t left = until - d->done;
		bool long_run = left > d->extend_max && d->catchup_max > d->extend_max;
		int64_t most = long_run ? d->catchup_max : d->extend_max, n = left < most ? left : most;
		if (!halo_session_step_at(d->s, long_run ? HALO_MTP_CATCHUP_ENTRY : HALO_MTP_EXTEND_ENTRY, d->done,
					  ctx + d->done + 1, n, NULL, err, errlen))
			return false;
		d->done += n;
	}
	return true;
}

/* The draft from the current head row (the last step's logits, read in
 * place): its argmax, or a draw from its sampling distribution, which then
 * travels with the token as q. A narrowed head (width < vocab) drafts from
 * ids 0 .. width - 1: q is 0 past them, which the verifier's residual
 * distribution max(0, p - q) takes as it comes (exact for any q). */
static halo_draft pick(halo_mtp_drafter *d, int i)
{
	const float *logits = halo_session_logits(d->s, NULL);
	if (d->sampling.temperature <= 0)
		return (halo_draft){halo_argmax(logits, d->width), NULL};
	float *q = d->q + (size_t)i * (size_t)d->vocab;
	halo_sampling_probs(&d->sampling, logits, d->width, q, d->scratch);
	memset(q + d->width, 0, (size_t)(d->vocab - d->width) * sizeof(float));
	return (halo_draft){halo_sample_from(q, d->width, &d->rng), q};
}

/* ctx[0..n): the target consumed ctx[0..n-1) (its position is n - 1) and
 * the round starts from ctx[n - 1]. */
static int mtp_propose(void *self, const int32_t *ctx, int64_t n, int k, halo_draft *out, char *err, size_t errlen)
{
	halo_mtp_drafter *d = self;
	int64_t pos = halo_session_pos(d->s);
	if (pos != n - 1) {
		snprintf(err, errlen, "MTP drafter: the target is at position %lld but the context holds %lld "
			 "tokens; it must have consumed all but the last", (long long)pos, (long long)n);
		return -1;
	}
	if (k > HALO_SPEC_K_MAX)
		k = HALO_SPEC_K_MAX;
	if (!extend(d, ctx, pos, err, errlen))
		return -1;
	out[0] = pick(d, 0);
	if (d->chain && k > 1) {
		/* step j at head position pos + j, fed draft j, gives draft j + 1 */
		int32_t toks[HALO_SPEC_K_MAX];
		if (!halo_session_chain_at(d->s, HALO_MTP_GREEDY_ENTRY, pos, out[0].token, k - 1, toks, err, errlen))
			return -1;
		for (int i = 1; i < k; i++)
			out[i] = (halo_draft){toks[i - 1], NULL};
		return k;
	}
	for (int i = 1; i < k; i++) {
		/* chained draft i sits at head position pos + i - 1 */
		if (!halo_session_step_at(d->s, HALO_MTP_STEP_ENTRY, pos + i - 1, &out[i - 1].token, 1, NULL, err,
					  errlen))
			return -1;
		out[i] = pick(d, i);
	}
	return k;
}

halo_drafter halo_mtp_drafter_iface(halo_mtp_drafter *d)
{
	/* No `accepted` hook: the head's state is positional and the next
	 * proposal's extension rewrites every position a rejection left stale. */
	return (halo_drafter){d, mtp_propose, NULL};
}
