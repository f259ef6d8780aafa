/* Speculative decoding over a halo_session: a drafter proposes K tokens, the
 * target checks them all in one `verify` step, and the session keeps the
 * accepted prefix from the step's per-token state slots.
 *
 * One round, with t the last emitted token (not yet fed to the target):
 *   1. the drafter proposes d_0..d_{k-1} (k clamped so that the round can
 *      neither pass n_predict nor n_ctx);
 *   2. run `verify` (an entry with `recurrent: slots`) over [t, d_0..d_{k-1}]:
 *      k + 1 rows, and every recurrent state is kept after each of them;
 *   3. runtime/spec_verify decides a accepted drafts and the next token;
 *   4. halo_session_keep(a + 1): the recurrent states become their slot a
 *      (one device copy, none when a = k) and the position goes back to
 *      after d_{a-1}; positional caches roll back with it. Nothing replays.
 * A round of k = 0 is a plain `decode` step. With batch-invariant kernels
 * (`verify` and `decode` take the same token range, so they run the same
 * kernels, and a step over m tokens equals m single steps bitwise) greedy
 * speculation emits exactly the tokens of plain greedy decoding, whatever
 * the drafter proposes and whatever k each round uses.
 *
 * Adaptive k: the per-draft acceptance rate p (a moving average over the
 * drafts each round judged, starting at 0.5) picks the round's k, the most
 * drafts whose chance of all being accepted, p^k, stays at or above 0.35,
 * up to the options' k; below p = 0.3 rounds are plain decode steps with a
 * one-draft probe every HALO_SPEC_PROBE_EVERY rounds. p depends only on the verdicts,
 * so the choice of k, and with it the sampler's random stream, repeats
 * exactly for a given seed. */
#ifndef HALO_RUNTIME_SPEC_H
#define HALO_RUNTIME_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "runtime/halo.h"
#include "runtime/sample.h"
#include "runtime/spec_verify.h"

/* The most drafts one round may verify (the stats arrays are this long). */
#define HALO_SPEC_K_MAX 16

/* A source of drafts. self is the implementation's state, owned by whoever
 * built the drafter; the round loop only calls through the pointers. */
typedef struct {
	void *self;
	/* Proposes up to k (>= 1) tokens continuing ctx[0..n): every token
	 * accepted so far, prompt included, the last being the token the round
	 * starts from. Writes out[0..m) and returns m in 0..k, or -1 with a
	 * message in err. Each record's q stays valid until the next call. */
	int (*propose)(void *self, const int32_t *ctx, int64_t n, int k, halo_draft *out, char *err, size_t errlen);
	/* The first `accepted` drafts of the last proposal were kept: a drafter
	 * with state of its own (an MTP head's caches) rolls back to there.
	 * NULL for a drafter without state. */
	bool (*accepted)(void *self, int accepted, char *err, size_t errlen);
} halo_drafter;

/* Plain rounds between one-draft probes while acceptance is too low to draft. */
#define HALO_SPEC_PROBE_EVERY 32

typedef struct {
	int k;                  /* drafts per round (the most, when adaptive), 1..HALO_SPEC_K_MAX */
	bool adaptive;          /* pick each round's k from the acceptance so far (above) */
	halo_sampling sampling; /* temperature <= 0: greedy acceptance */
	uint64_t seed;          /* the user's seed: the first token uses the sampler's stream
				   (as plain decoding does), rounds the verifier's (halo_verifier_rng_seed) */
	/* Optional (NULL: every token, n_predict of them): sees the tokens as
	 * they are emitted, the first one alone, then each round's accepted
	 * drafts and the target's token, before the session keeps them, so
	 * that a caller streams per round and stops mid-way (an eos, a stop
	 * string, a cancel). Returning false ends the generation after the
	 * first *keep of tokens[0..n) (*keep starts at n; the callback may
	 * lower it to 1..n): the session then holds every kept token but the
	 * last, as after any round. user is passed through. */
	bool (*on_tokens)(void *user, const int32_t *tokens, int n, int *keep);
	void *user;
} halo_spec_options;

typedef struct {
	int64_t rounds, emitted, drafted, accepted;
	int64_t rejected_rounds; /* rounds that kept fewer tokens than they verified */
	int64_t plain_rounds;    /* rounds of k = 0: a plain decode step */
	int64_t drafted_at[HALO_SPEC_K_MAX], accepted_at[HALO_SPEC_K_MAX]; /* per draft position */
	double draft_s;  /* in the drafter */
	double verify_s; /* the verify (or plain decode) step and the acceptance decision */
	double accept_s; /* halo_session_keep: the slot copies after a rejection */
} halo_spec_stats;

/* Refuses, before anything runs, a model that cannot speculate with k
 * drafts: its `verify` entry must keep per-token state slots, return every
 * row's logits, take k + 1 tokens and the same token range as `decode`
 * (same range, same kernels: what makes speculation exact); when the
 * drafter runs an entry of its own (draft_entry, e.g. "draft" for the MTP
 * head; NULL for none) the bundle must have it. The message says what is
 * missing. */
bool halo_spec_check_model(const halo_model *m, const char *draft_entry, int k, char *err, size_t errlen);

/* Generates n_predict tokens (fewer when o->on_tokens ends it) into out (caller owned) after session s of
 * model m consumed prompt[0..n_prompt) (e.g. by halo_session_prefill),
 * last_logits being the prompt's final row. The session's bundle must have
 * passed halo_spec_check_model with o->k. On return the session has
 * consumed every emitted token but the last, as plain decoding leaves it.
 * st (zeroed here) receives the statistics. On failure returns false with a
 * message; out holds the st->emitted tokens emitted before it. */
bool halo_spec_generate(halo_model *m, halo_session *s, const halo_drafter *d, const halo_spec_options *o,
			const int32_t *prompt, int64_t n_prompt, const float *last_logits, int64_t n_predict,
			int32_t *out, halo_spec_stats *st, char *err, size_t errlen);

/* Prints the statistics (acceptance overall and per draft position, tokens
 * per round after the first token, plain and rejecting rounds, time split
 * draft / verify / accept) as lines starting "spec:". */
void halo_spec_stats_print(const halo_spec_stats *st, int k, FILE *out);

#endif
