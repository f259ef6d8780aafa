/* Text generation over a session: the loop `halo run --prompt`, `halo chat`
 * and `halo serve` share. It feeds prompt tokens from the session's current
 * position (so a chat turn prefills only the new turn), samples, stops at an
 * eos id, a stop string, max_tokens or when the caller cancels, and streams
 * the decoded text as it is accepted, never splitting a UTF-8 character and
 * holding back text that may still turn into a stop string. With spec_mtp
 * the tokens come from MTP speculative decoding (runtime/spec.h) and are
 * exactly those of plain decoding under greedy sampling.
 *
 * Ownership: everything passed in is borrowed for the call. The session
 * keeps every token consumed; the last sampled token is fed only by the next
 * call (chat turns) so that a stopped reply leaves the session consistent. */
#ifndef HALO_RUNTIME_GENERATE_H
#define HALO_RUNTIME_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/halo.h"
#include "runtime/sample.h"
#include "runtime/spec.h"
#include "runtime/tokenizer.h"

typedef enum {
	HALO_FINISH_STOP,      /* an eos id or a stop string */
	HALO_FINISH_LENGTH,    /* max_tokens or the context's end */
	HALO_FINISH_CANCELLED, /* the text callback returned false */
} halo_finish_reason;

/* "stop", "length", "cancelled" */
const char *halo_finish_reason_name(halo_finish_reason r);

typedef struct {
	halo_sampling sampling;
	uint64_t seed;
	int64_t max_tokens;             /* > 0 */
	const int32_t *eos_ids;         /* generation stops after emitting one (its text is not streamed) */
	size_t n_eos;
	const char *const *stop;        /* stop strings: the text ends before the first match */
	size_t n_stop;
	bool skip_special;              /* leave special added tokens out of the text */
	bool spec_mtp;                  /* speculate with the bundle's MTP head */
	/* With spec_mtp: the tokens the session holds ([0, its position)),
	 * which the MTP head catches up on before its first draft; NULL when
	 * the session starts at 0. Ignored without spec_mtp. */
	const int32_t *context;
	int64_t n_context;
	/* Nullable: receives the ids emitted (eos included), room for
	 * max_tokens; halo_gen_result.completion_tokens says how many. The
	 * session holds all of them but the last. */
	int32_t *ids_out;
	int draft_n;                    /* drafts per round (the most, when adaptive) */
	bool draft_fixed;               /* every round drafts draft_n */
} halo_gen_options;

/* Called once per accepted token (the eos excepted) with the text that
 * became final with it: complete UTF-8 characters, possibly none (len 0:
 * held back until the character or a stop string's beginning resolves).
 * Return false to cancel the generation; the call per token lets a caller
 * cancel while text is held back. */
typedef bool (*halo_gen_text_fn)(void *user, const char *text, size_t len);

typedef struct {
	int64_t prompt_tokens, completion_tokens;
	halo_finish_reason finish;
	double prefill_s, decode_s;
	halo_spec_stats spec; /* filled with spec_mtp */
} halo_gen_result;

/* Runs prompt[0..n_prompt) (n_prompt >= 1) through session s from its
 * current position, then generates. Refuses, before running anything, a
 * prompt that does not fit the context with at least one token to spare.
 * On failure returns false with a message; res holds what ran. */
bool halo_generate(halo_model *m, halo_session *s, const halo_tokenizer *tok, const int32_t *prompt,
		   int64_t n_prompt, const halo_gen_options *o, halo_gen_text_fn fn, void *user,
		   halo_gen_result *res, char *err, size_t errlen);

#endif
