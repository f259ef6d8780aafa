/* halo runtime: the public C API. Loads a bundle and runs its entry points.
 *
 * Ownership: halo_model_open() returns a model owning the mapped bundle, the
 * parsed manifest and the backend's device resources (weights, pipelines);
 * halo_model_close() frees them. A session owns one sequence's state and
 * activation buffers; free every session before closing its model.
 * Errors: functions that can fail take (err, errlen) and write a message.
 * Threads: sessions of one model may run on different threads at the same
 * time (the model's weights and pipelines are read-only once open; Vulkan
 * queue submissions are serialized inside the backend), while one session
 * is used by one thread at a time. halo serve runs a session per worker. */
#ifndef HALO_RUNTIME_HALO_H
#define HALO_RUNTIME_HALO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct halo_model halo_model;
typedef struct halo_session halo_session;

/* The backend registry (runtime/backend_registry.c): the i-th backend's
 * name for i in [0, count), else NULL: "ref" (the CPU reference), "vulkan",
 * "cuda" (NVIDIA, PTX through libcuda.so.1), "hip" (AMD, code objects
 * through libamdhip64.so). Static strings. */
const char *halo_backend_name(int i);
/* Whether name is a registered backend; else writes "unknown backend 'x'
 * (known: ref, vulkan, cuda, hip)" into err. Says nothing of whether its
 * driver or device is present here: halo_model_open finds that out. */
bool halo_backend_check(const char *name, char *err, size_t errlen);
/* Whether the backend runs here: its driver loads and has device `device`
 * (-1: the default; as halo_open_options.device), found without a bundle
 * and closed again. ref always does. Else writes why into err: an unknown
 * name, or for cuda and hip "<name> backend unavailable here: ..." (no
 * library, a stub library, no device). */
bool halo_backend_probe(const char *name, int device, char *err, size_t errlen);
/* A device as a backend names it. */
typedef struct {
	char name[256]; /* Vulkan's VK_MAX_PHYSICAL_DEVICE_NAME_SIZE */
} halo_device_name;
/* The devices backend `name` finds here, in the order --device numbers
 * them: the first max names into out (caller owned, max >= 0). Returns how
 * many there are (possibly more than max; 0 when the driver has none), or
 * -1 with why in err: an unknown name, or a driver that is not here ("<name>
 * backend unavailable here: ..."). ref has one, the CPU. */
int halo_backend_devices(const char *name, halo_device_name *out, int max, char *err, size_t errlen);

/* runtime/tuning_db.h */
typedef struct halo_tuning_db halo_tuning_db;

typedef struct {
	/* A registry name (halo_backend_name); NULL: "vulkan". Borrowed
	 * during halo_model_open only. */
	const char *backend;
	int device;      /* Vulkan physical device index; CUDA/HIP device ordinal (-1: 0) */
	bool validation; /* enable VK_LAYER_KHRONOS_validation; messages fail the run */
	/* Vulkan: the tuning database each kernel choice picks from (its record
	 * for this device and the choice's key), borrowed during
	 * halo_model_open only. NULL: every choice runs the heuristic's pick. */
	const halo_tuning_db *tuning;
	/* For halo tune (runtime/tuning.h) and the op suite's sweeps: every
	 * candidate kernel the device runs is loaded and
	 * halo_model_set_picks may change the picks; on Vulkan profiled steps
	 * also time each dispatch on its own. On cuda and hip the candidates
	 * are those the bundle has code for (every one only when compiled with
	 * cg_compile_options.gpu_all_variants). */
	bool tune;
} halo_open_options;

halo_model *halo_model_open(const char *bundle_path, const halo_open_options *opts, char *err, size_t errlen);
void halo_model_close(halo_model *m);
int64_t halo_model_vocab(const halo_model *m);
int64_t halo_model_n_ctx(const halo_model *m);
/* A section of the model's bundle (e.g. "tokenizer", "tokenizer_meta"):
 * its bytes inside the model's mapping, valid until halo_model_close, and
 * their count in *size; NULL (*size 0) when the bundle has none. */
const void *halo_model_section(const halo_model *m, const char *name, size_t *size);
/* Validation messages seen so far (Vulkan with validation on), else 0. */
int halo_model_validation_messages(const halo_model *m);

/* An entry point's token range, whether it returns every row's logits, and
 * whether it runs at a position the caller gives (halo_session_step_at: a
 * draft head) instead of the session's (halo_session_step, halo_session_prefill).
 * width: the logits of a row, the vocabulary or, for a draft head's entry
 * compiled with halo compile --draft-vocab, token ids 0 .. width - 1 only
 * (1 with tokens_out). False when the bundle has no entry of that name. */
typedef struct {
	int64_t t_min, t_max, width;
	bool logits_all;
	bool caller_position;
	bool state_slots; /* keeps per-token recurrent state slots: halo_session_keep after it */
	bool tokens_out;  /* returns each row's greedy token, not logits (halo_session_tokens) */
} halo_entry_info;
bool halo_model_entry(const halo_model *m, const char *name, halo_entry_info *out);

halo_session *halo_session_create(halo_model *m, char *err, size_t errlen);
void halo_session_free(halo_session *s);
/* Position of the next token (tokens consumed so far). */
int64_t halo_session_pos(const halo_session *s);
/* Clears all state (KV, recurrent) and sets the position to 0. */
bool halo_session_reset(halo_session *s, char *err, size_t errlen);

/* Runs entry point `entry` over tokens[0..n) at the session's position and
 * advances it by n. n must be within the entry's token range. logits (caller
 * owned) receives [n, width] f32 when the entry returns all rows, else [1, width]
 * (halo_entry_info.width: the vocabulary but for a narrowed draft head);
 * NULL copies nothing (halo_session_logits reads them in place).
 * Refuses an entry that runs at the caller's position (halo_session_step_at). */
bool halo_session_step(halo_session *s, const char *entry, const int32_t *tokens, int64_t n, float *logits,
		       char *err, size_t errlen);
/* The logits of the session's last step (halo_session_step, _step_at, or
 * the last chunk of halo_session_prefill), in place: [*rows, width] f32,
 * owned by the session (the backend's host-visible output) and valid until
 * its next step, reset or free; NULL (*rows 0) before a step or after a
 * failed one. A caller that only scans them (a greedy argmax, verifying
 * drafts) saves the copy of up to t_max rows a step. rows may be NULL. */
const float *halo_session_logits(const halo_session *s, int64_t *rows);
/* The same for a step of an entry that returns tokens (`output: tokens`):
 * its [*rows] greedy tokens (the first index of each row's largest logit),
 * in place; NULL (*rows 0) after a step that returned logits. Such an
 * entry refuses a logits buffer in halo_session_step(_at), and
 * halo_session_logits gives NULL after it. */
const int32_t *halo_session_tokens(const halo_session *s, int64_t *rows);

/* Runs a caller-position entry (a draft head, which trails the session) over
 * tokens[0..n) at positions [pos, pos + n), 0 <= pos and pos + n <= n_ctx,
 * and leaves the session's position as it is. The entry works on the
 * session's state like any other: it writes its own positional caches at
 * rows [pos, pos + n) and whatever recurrent state it has. n and logits as
 * for halo_session_step. Refuses an entry that runs at the session's
 * position (halo_session_step, halo_session_prefill). */
bool halo_session_step_at(halo_session *s, const char *entry, int64_t pos, const int32_t *tokens, int64_t n,
			  float *logits, char *err, size_t errlen);

/* The most steps one halo_session_chain_at runs. */
#define HALO_CHAIN_MAX 16
/* A greedy chain: k (1..HALO_CHAIN_MAX) single-token steps of a
 * caller-position entry that returns tokens, at positions pos .. pos+k-1,
 * step 0 fed `first` and step i the token step i-1 returned; out[i] gets
 * step i's token. The GPU backends keep the tokens on the device (Vulkan:
 * one submission; cuda, hip: device copies on the stream, one wait); ref,
 * and any session while profiling, run the steps one at a time, with the
 * same results. Leaves
 * the session's position, and no output for halo_session_logits/_tokens.
 * A greedy drafter's chained drafts (runtime/mtp_draft.h). */
bool halo_session_chain_at(halo_session *s, const char *entry, int64_t pos, int32_t first, int64_t k, int32_t *out,
			   char *err, size_t errlen);

/* Keeps the first n (1 <= n <= T) tokens of the last step, which must be a
 * halo_session_step of an entry with `recurrent: slots` (a verify step of T
 * tokens) with nothing run since: the position goes back by T - n, and every
 * recurrent state becomes the state after the step's n-th token, copied on
 * the device from that state's per-token slot (no replay). Positional caches
 * roll back with the position. n == T changes only the bookkeeping. */
bool halo_session_keep(halo_session *s, int64_t n, char *err, size_t errlen);

/* Feeds a prompt of any length through `prefill` in chunks of its largest
 * token count; logits_all (nullable, caller owned, [n, vocab]) receives every
 * position's logits; last (nullable, [vocab]) the final position's. Without
 * logits_all it takes `prefill_last` where the bundle has one (larger steps,
 * the last row's logits only). */
bool halo_session_prefill(halo_session *s, const int32_t *tokens, int64_t n, float *logits_all, float *last,
			  char *err, size_t errlen);
/* The same through entry `entry` (one returning logits) in chunks of its
 * largest token count: a prompt through `decode` or `verify` gives the
 * logits the generation steps compute (halo run --prompt-entry), which
 * differ from prefill's where their kernels do (int8 activations,
 * docs/quantization.md). logits_all needs an entry that returns all rows,
 * or one of one token. */
bool halo_session_prefill_entry(halo_session *s, const char *entry, const int32_t *tokens, int64_t n,
				float *logits_all, float *last, char *err, size_t errlen);

/* Profiling: while on, every step times each dispatch (GPU timestamps on
 * Vulkan, driver events between launches on cuda and hip, wall clock on
 * ref; on Vulkan a profiled step runs a separately recorded command buffer,
 * so turning it on does not change unprofiled steps). */
bool halo_session_set_profiling(halo_session *s, bool on, char *err, size_t errlen);
/* Prints the `top` kernels (GPU backends: by kernel signature, with whether
 * the tuning database or the heuristic picked it; ref: by op) by total time over
 * the profiled steps, with their share and call counts. */
void halo_session_profile_report(const halo_session *s, FILE *out, int top);
/* Forgets what profiling has accumulated (the steps and their times). */
void halo_session_profile_clear(halo_session *s);

/* A snapshot of one session's recurrent state (conv, SSM, n-gram history:
 * the state after the last token) and its position, held by the backend
 * (device memory on Vulkan: saving and restoring never go through the host).
 * The recurrent state is copied whole, never partially: a partial restore of
 * recurrent state is how speculative decoding diverges. Positional caches
 * (KV, indexer, hidden rows: row p belongs to position p) are not copied:
 * they roll back with the position, because rows past it are rewritten
 * before anything reads them. So rows below the saved position must not
 * change between save and restore: a halo_session_step_at below it in
 * between is not undone.
 * A checkpoint belongs to the session it was created for; free it before
 * the session. */
typedef struct halo_checkpoint halo_checkpoint;

halo_checkpoint *halo_checkpoint_create(halo_session *s, char *err, size_t errlen);
void halo_checkpoint_free(halo_checkpoint *c); /* NULL ok */
/* Copies the session's recurrent state and position into c. */
bool halo_session_save(halo_session *s, halo_checkpoint *c, char *err, size_t errlen);
/* Puts the session back to what c holds. Fails if c was never saved. */
bool halo_session_restore(halo_session *s, const halo_checkpoint *c, char *err, size_t errlen);

#endif
