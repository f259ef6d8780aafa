/* The bundle manifest: what to run, in which order, on which bytes.
 * Written by codegen/emit_manifest.c as JSON (docs/manifest.md), read here.
 * Everything in a manifest is untrusted input: manifest_parse() checks every
 * index, range and size against the bundle before anything runs.
 *
 * Ownership: manifest_parse() returns a halo_manifest that owns all its
 * arrays and strings; manifest_free() releases it. */
#ifndef HALO_RUNTIME_MANIFEST_H
#define HALO_RUNTIME_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/gpu_target.h"

#define HALO_MAX_RANK 4
#define HALO_MAX_OPERANDS 16
#define HALO_MAX_FUSED 8
/* A dispatch's attributes (rope has up to 9) and a fused op's (a norm's or
 * an elementwise op's few). */
#define HALO_MAX_ATTRS 12
#define HALO_MAX_FUSED_ATTRS 8

/* coef_T * T + c: dims and sizes that depend on the step's token count. */
typedef struct {
	int64_t coef_T, c;
} halo_affine;

/* ceil((a*T + b) / d): workgroup counts. */
typedef struct {
	int64_t a, b, d;
} halo_grid_dim;

typedef enum { HALO_SPACE_WEIGHT, HALO_SPACE_STATE, HALO_SPACE_ACT, HALO_SPACE_COUNT } halo_space;

typedef struct {
	halo_space space;
	uint64_t offset; /* bytes into the space */
	halo_dtype dtype;
	int rank;
	halo_affine dim[HALO_MAX_RANK];
	/* 0, or (a state operand whose dim 0 is T) the rows of the state
	 * tensor at offset that the operand's T rows lie in, from row pos:
	 * the operand starts pos * (its row bytes) past offset. A rope's or
	 * matmul's result stored straight into a KV cache (docs/manifest.md). */
	int64_t pos_rows;
} halo_tensor_ref;

typedef struct {
	char name[32];
	bool is_float;
	int64_t i;
	double f;
	char s[24]; /* the longest choice: rope's "interleaved_tail" */
	bool is_str;
} halo_attr;

/* The attribute named `name` among a[0..n), or NULL. */
const halo_attr *halo_attr_find(const halo_attr *a, int n, const char *name);

typedef struct {
	int op;          /* kernels/ops.def id */
	bool prologue;   /* else epilogue */
	int n_attr;
	halo_attr attr[HALO_MAX_FUSED_ATTRS];
	int n_operand;   /* indices into the dispatch's operands */
	int operand[2];
	int side;        /* binary epilogue: which side the running value takes */
} halo_fused_op;

typedef struct {
	char *node;      /* node name, for profiles and errors */
	int op;
	int n_attr;
	halo_attr attr[HALO_MAX_ATTRS];
	int n_in, n_extra, n_out; /* operands = inputs, fused extras, outputs (kernel ABI order) */
	halo_tensor_ref operand[HALO_MAX_OPERANDS];
	int n_fused;
	halo_fused_op fused[HALO_MAX_FUSED];
	/* Index into choices: the kernel candidates this dispatch may run (the
	 * backend picks one per choice); -1 in a bundle without Vulkan kernels. */
	int choice;
	bool barrier;    /* wait for all earlier dispatches before this one */
} halo_dispatch;

typedef struct {
	char *name;
	halo_tensor_ref t;
} halo_io;

typedef struct {
	char *name;
	int64_t t_min, t_max;
	bool logits_all;
	/* "position": "caller" runs at a position the caller gives and leaves
	 * the session's alone (a draft head); "session" runs at the session's
	 * position and advances it. */
	bool caller_position;
	/* `recurrent: slots`: a step also fills every state's per-token slots
	 * (halo_manifest.slots), which halo_session_keep picks from. */
	bool state_slots;
	uint64_t act_bytes;   /* activation arena for t_max */
	halo_io input, output; /* token ids in; logits out, f32 rows of width */
	/* The output is each row's greedy token instead (an i32 per row: the
	 * entry's `output: tokens`), known from its dtype. */
	bool tokens_out;
	/* Logits per row: vocab, or fewer for a draft head's entry (its
	 * draft_vocab: token ids 0 .. width - 1); 1 with tokens_out. */
	int64_t width;
	int n_dispatch;
	halo_dispatch *dispatch;
} halo_entry;

/* One compiled kernel variant. Its key says what it computes (op, dims,
 * dtypes, fused ops, t_max), its tile how; the signature is the key, then
 * " tile=" and the tile when the tile is not empty. */
typedef struct {
	char *name;      /* the template, e.g. "matvec" */
	char *signature;
	char *key;
	char *tile;      /* "" for a kernel without tile parameters */
	uint32_t needs;  /* HALO_NEED_* bits (kernels/device_features.h) the device must have */
	/* Bytes into each target's section (kernels/gpu_target.h): the kernel's
	 * SPIR-V module, code object or PTX; size 0 where the bundle has no
	 * code of it for that target (a template without a twin there). */
	struct {
		uint64_t offset, size;
	} code[HALO_TARGET_COUNT];
	uint32_t push_size;
	uint32_t n_bindings;
	uint32_t local[3];
	halo_grid_dim groups[3]; /* workgroup counts: each variant has its own grid */
} halo_kernel;

/* The most candidates one choice may list (the compiler writes at most 8). */
#define HALO_MAX_CANDIDATES 16

/* A kernel choice: the candidates (indices into kernels) that compute one
 * key, in preference order, the compiler's heuristic first. Every candidate
 * has the choice's key, binding count and push size, and at least one needs
 * no device feature, so some candidate runs on every device. Dispatches of
 * one key share the choice, so they always run the same kernel: the decode
 * entry's T = 1 steps and its verification steps (T = K + 1) included. */
typedef struct {
	char *key;
	int n;
	int kernel[HALO_MAX_CANDIDATES];
} halo_choice;

typedef struct {
	char *name;
	halo_dtype dtype;
	int rank;
	int64_t shape[HALO_MAX_RANK];
	uint64_t offset, size; /* bytes into the weights section / state arena */
	char *kind;            /* states only: kv, conv, ssm, ..., slots */
	char *slots_of;        /* kind "slots": the recurrent state whose per-token slots these are */
} halo_buffer_decl;

/* The per-token slots of one recurrent state: slot i (the state after token
 * i of the last `recurrent: slots` step) is size bytes at slots + i * size
 * of the state arena; the state itself is at state. */
typedef struct {
	uint64_t state, slots, size;
	int64_t n; /* slots */
} halo_state_slots;

/* Bytes [offset, offset + size) of the state arena that a checkpoint copies,
 * stored at `packed` in the checkpoint. */
typedef struct {
	uint64_t offset, size, packed;
} halo_state_range;

typedef struct {
	char *model;
	/* "targets" lists a GPU target: every dispatch names a choice, and each
	 * listed target has a kernel in every choice. */
	bool has_kernels;
	bool has_target[HALO_TARGET_COUNT];
	int64_t vocab;
	int64_t n_ctx;
	int n_weights;
	halo_buffer_decl *weights;
	int n_states;
	halo_buffer_decl *states;
	uint64_t state_bytes;
	/* Derived by manifest_parse() from `states`: the recurrent states
	 * (every kind but the positional kv, indexer and hidden) as ranges in
	 * offset order, one per run of recurrent states with no positional one
	 * between them, and the bytes the ranges pack into. */
	int n_recurrent;
	halo_state_range *recurrent;
	uint64_t recurrent_bytes;
	/* Derived from the states of kind "slots", in state order. */
	int n_slots;
	halo_state_slots *slots;
	int n_kernels;
	halo_kernel *kernels;
	int n_choices;
	halo_choice *choices;
	int n_entries;
	halo_entry *entries;
} halo_manifest;

/* The manifest format this reader reads (docs/manifest.md). */
#define HALO_MANIFEST_FORMAT 5

/* Parses the manifest JSON (json, len bytes) and checks it against the sizes
 * of the bundle's weights section and of each target's kernel section
 * (code_size[t], 0 when the bundle has none). On failure returns NULL and
 * writes a message naming the manifest field into err. */
halo_manifest *manifest_parse(const char *json, size_t len, uint64_t weights_size,
			      const uint64_t code_size[HALO_TARGET_COUNT], char *err, size_t errlen);
void manifest_free(halo_manifest *m);
/* Frees m's kernels and choices (their strings too) and empties both lists;
 * for a manifest built in memory whose other parts are borrowed (codegen). */
void manifest_free_kernels(halo_manifest *m);

const halo_entry *manifest_entry(const halo_manifest *m, const char *name);
/* The bytes of one row of e's output: width f32 logits, or (tokens_out)
 * one i32 token. */
uint64_t halo_entry_row_bytes(const halo_entry *e);
/* Where the last row of e's output for a step of T tokens starts, in bytes
 * from the output's offset (the output holds whole rows: manifest_parse
 * checks it). */
uint64_t halo_entry_last_row(const halo_entry *e, int64_t T);
int64_t halo_affine_eval(halo_affine a, int64_t T);
uint64_t halo_tensor_bytes(const halo_tensor_ref *t, int64_t T);
/* The bytes from t's offset that t may touch for any position: its bytes,
 * or with pos_rows the whole pos_rows rows. */
uint64_t halo_tensor_span(const halo_tensor_ref *t, int64_t T);
uint32_t halo_grid_eval(halo_grid_dim g, int64_t T);

/* Whether a state kind is positional (kv, indexer, hidden: row p belongs to
 * position p and rolls back with the position) rather than recurrent. */
bool halo_state_kind_positional(const char *kind);
/* Whether a state kind is recurrent (the state after the last token, which a
 * checkpoint copies): neither positional nor the per-token "slots" nor the
 * workgroup counters "sync" (zero between dispatches). */
bool halo_state_kind_recurrent(const char *kind);

#endif
