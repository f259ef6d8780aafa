/* The MTP drafter: a halo_drafter (runtime/spec.h) that runs a bundle's
 * draft head, the `draft_extend` and `draft` entry points of the model's
 * draft: section of its model file (and `draft_catchup`, when the bundle
 * has it, for extensions longer than draft_extend takes: the prompt), on the
 * target's own session.
 *
 * The head trails the target by one position: head position p pairs the
 * target's hidden state at p with token p+1 and predicts token p+2. Each
 * proposal first extends the head over the positions the target consumed
 * since the last one (target hidden states, accepted tokens: the rows the
 * target exported by position), whose last row gives the first draft, then
 * chains `draft` steps on the head's own output for the others (greedy, with
 * `draft_greedy` in the bundle: one chain whose drafts pass from step to
 * step on the device, the same tokens as argmaxes of `draft`'s logits). All of the
 * head's state is positional (its KV cache, its output rows), so a rejected
 * draft needs no restore: the next extension rewrites those positions
 * before anything reads them. */
#ifndef HALO_RUNTIME_MTP_DRAFT_H
#define HALO_RUNTIME_MTP_DRAFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/halo.h"
#include "runtime/spec.h"

typedef struct halo_mtp_drafter halo_mtp_drafter;

/* Names of the entry points the drafter needs (halo_spec_check_model). */
#define HALO_MTP_EXTEND_ENTRY "draft_extend"
#define HALO_MTP_STEP_ENTRY "draft"
/* Optional: the extension entry for more tokens than draft_extend takes. */
#define HALO_MTP_CATCHUP_ENTRY "draft_catchup"
/* Optional: the step returning its token (output: tokens), which greedy
 * drafting chains on the device (halo_session_chain_at). */
#define HALO_MTP_GREEDY_ENTRY "draft_greedy"

/* Refuses, naming what is missing, a bundle without both entries, or whose
 * entries do not run at a caller-given position, or whose chained step
 * cannot take one token. */
bool halo_mtp_check_model(const halo_model *m, char *err, size_t errlen);

/* A drafter for session s of model m (both borrowed: free the drafter
 * first). sampling is the target's: with temperature > 0 drafts are drawn
 * from the head's sampling distribution with a stream derived from seed,
 * else they are its argmax. Refuses what halo_mtp_check_model refuses.
 * The session must be fresh or reset; the drafter catches up on
 * whatever the session consumed (the prompt) at its first proposal. A
 * drafter follows one sequence: after halo_session_reset, make a new one
 * (the old one would skip the positions it had already covered). */
halo_mtp_drafter *halo_mtp_drafter_create(halo_model *m, halo_session *s, const halo_sampling *sampling,
					  uint64_t seed, char *err, size_t errlen);
void halo_mtp_drafter_free(halo_mtp_drafter *d); /* NULL ok */

/* The drafter interface over d (d stays owned by the caller). */
halo_drafter halo_mtp_drafter_iface(halo_mtp_drafter *d);

#endif
