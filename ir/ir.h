/* halo graph IR: the in-memory form of a model file (docs/ir.md).
 *
 * Ownership: every object reachable from an ir_module (strings, arrays, nodes,
 * values, functions) lives in the module's arena and is freed by
 * ir_module_free(). Nothing in this header returns memory the caller must free
 * on its own, except ir_module_free's argument and the strings documented as
 * malloc'd (ir_error.msg is a fixed buffer).
 *
 * Identity: nodes, values, weights, states, functions are addressed by dense
 * integer indices, never by pointer. Every ordering decision in the compiler
 * is made from these indices and names, so the output never depends on
 * allocation addresses or hash order.
 */
#ifndef HALO_IR_H
#define HALO_IR_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/arena.h"
#include "kernels/dtype.h"

#define IR_MAX_RANK 4

/* A dimension is affine in the step's token count T: coef_T * T + c.
 * Every shape in the model is a function of T (tokens in this step) and of
 * compile-time params; positions (pos) are runtime values, never dims. */
typedef struct {
	int64_t coef_T;
	int64_t c;
} ir_dim;

typedef struct {
	int rank;
	ir_dim dim[IR_MAX_RANK];
} ir_shape;

typedef struct {
	const char *file; /* arena-owned copy of the path given to the reader */
	int line, col;    /* 1-based; 0 when synthesised by a pass */
} ir_loc;

/* Error report: the first error wins; messages are "file:line:col: what". */
typedef struct {
	bool set;
	char msg[1024];
} ir_error;

void ir_error_set(ir_error *err, ir_loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ir_error_setv(ir_error *err, ir_loc loc, const char *fmt, va_list ap);

/* ---- attributes ---------------------------------------------------------- */

typedef enum {
	IR_ATTR_INT,
	IR_ATTR_FLOAT,
	IR_ATTR_STR,
	IR_ATTR_INTS,
	IR_ATTR_SHAPE, /* a shape whose dims may use T (reshape's `shape`) */
} ir_attr_kind;

typedef struct {
	const char *name;
	ir_attr_kind kind;
	int64_t i;
	double f;
	const char *s;
	const int64_t *ints;
	int n_ints;
	ir_shape shape; /* IR_ATTR_SHAPE */
} ir_attr;

/* ---- ops ------------------------------------------------------------------ */

/* The closed op set. docs/ops.md documents each one; ir/ops.c holds the
 * attribute schema and shape rule; runtime/drivers/ref/ holds its semantics. */
typedef enum {
#define IR_OP(id, name, cls, expr) IR_OP_##id,
#include "kernels/ops.def"
#undef IR_OP
	IR_OP_COUNT
} ir_op;

/* A fused sub-operation attached to a node by passes/fuse_*.c.
 * PROLOGUE runs on the node's first input before the main op (rms_norm into
 * a matmul); EPILOGUE runs on the node's output after it, in list order. */
typedef enum { IR_FUSE_PROLOGUE, IR_FUSE_EPILOGUE } ir_fuse_pos;

typedef struct {
	ir_op op;
	ir_fuse_pos pos;
	int n_attr;
	ir_attr *attr;
	int n_extra;   /* extra operands (norm weight, residual, gate) */
	int *extra;    /* value ids */
	int operand;   /* for binary epilogues: which side the running value takes (0 or 1) */
	const char *name; /* name of the value this sub-op produced before fusion */
} ir_fused;

typedef struct {
	ir_op op;
	const char *name; /* the node's name (its first output's name for value ops) */
	int n_in;
	int *in;          /* value ids */
	int n_out;
	int *out;         /* value ids; state_write has none */
	int n_attr;
	ir_attr *attr;
	int ref;          /* weight id (IR_OP_WEIGHT), state id (STATE_READ/WRITE),
			     function id (IR_OP_CALL); -1 otherwise */
	int n_after;
	int *after;       /* explicit ordering edges: node ids that must run first */
	int n_fused;
	ir_fused *fused;
	int layer;        /* layer index after expansion, -1 before / outside layers */
	ir_loc loc;
	bool dead;        /* set by dce; compacted away by ir_func_compact() */
	/* For WEIGHT / STATE_READ / STATE_WRITE: true when ref indexes the
	 * enclosing block function's own table (f->weights / f->states), false
	 * when it indexes the module table (m->weights / m->states). */
	bool ref_local;
	/* STATE_WRITE `at: pos` only, set by passes/fuse_state_store.c: the
	 * written value (in[0], through reshapes) is produced straight into the
	 * state's rows pos.. by its producer, which is then the write's effect
	 * (state_effect_writer); this node is no dispatch. */
	bool in_place;
} ir_node;

typedef struct {
	const char *name;
	ir_shape shape;
	halo_dtype dtype;
	bool shape_known; /* set by infer_shapes (inputs: by the reader) */
	int producer;     /* node id, -1 for function inputs */
	int producer_out; /* index into the producer's outputs */
} ir_value;

/* ---- declarations ---------------------------------------------------------- */

typedef struct {
	const char *name;    /* "tok_embd", or "layers.3.wq" after expansion */
	ir_shape shape;      /* constant dims only */
	halo_dtype dtype;    /* dtype in the bundle */
	const char *hf_name; /* checkpoint tensor, "{i}" already substituted after expansion */
	const char *hf_fallback; /* used when hf_name is absent (tied embeddings), or NULL */
	const char *transform;   /* "none", "offset1" ((1+w) fold), "transpose", ... */
	/* `rows: {groups, take}` (docs/ir.md): the checkpoint tensor's dim 0 is
	 * rows_groups equal groups, and the weight's rows are, for each range
	 * k < n_takes in order, rows [takes[2k], takes[2k] + takes[2k+1]) of
	 * every group in group order. n_takes 0: the tensor's rows as they are. */
	int n_takes;
	int64_t rows_groups;
	const int64_t *takes;
	int layer;           /* -1 for module-level weights */
	ir_loc loc;
	/* Set by fuse_norm_matmul on an [N, K] matrix whose one reader is a
	 * matmul with the fused rms_norm prologue: the bundle stores column k
	 * times (module weight fold_norm's element k + fold_offset), and the
	 * prologue only normalises (docs/passes.md). */
	bool folded;
	int fold_norm;
	int fold_offset;
	/* Set by merge_matmuls on the matrix it makes for sibling matmuls:
	 * the rows of module weights parts[0..n_parts) (each as stored: read,
	 * transformed, folded), one after another, or with interleave the
	 * rows of two parts alternating (row 2n is parts[0]'s row n, row
	 * 2n + 1 parts[1]'s). Such a weight names no checkpoint tensor. */
	int n_parts;
	const int *parts;
	bool interleave;
} ir_weight;

typedef struct {
	const char *name;    /* "k_cache", or "layers.3.k_cache" after expansion */
	ir_shape shape;      /* constant dims only (n_ctx is a compile-time param) */
	halo_dtype dtype;
	/* Rollback policy. Positional kinds ("kv", "indexer", "hidden": row p
	 * belongs to position p) roll back by position: rows past the position
	 * are rewritten before anything reads them. Recurrent kinds ("conv",
	 * "ssm", "ngram": the state after the last token) need a checkpoint. */
	const char *kind;
	/* Kind "slots" (made by passes/state_slots.c, never declared): the
	 * per-token slots [t_max, ...] of recurrent state slots_of. Kind
	 * "sync" (made by passes/split_attention.c, never declared): one
	 * node's workgroup counters, zero between its dispatches, so neither
	 * rolled back nor checkpointed. */
	int slots_of;
	int layer;
	ir_loc loc;
} ir_state;

/* The most blocks one chain of blocks calling blocks may hold: a block of
 * the layer list, the block it calls, ... (docs/ir.md). */
#define IR_MAX_CALL_DEPTH 8

/* A function: the graph body of a block or of a top-level graph. */
typedef struct {
	const char *name;
	bool is_block;      /* blocks are instantiated per layer by expand_blocks */
	int n_values, cap_values;
	ir_value *values;
	int n_nodes, cap_nodes;
	ir_node *nodes;
	int n_inputs;
	int *inputs;        /* value ids */
	/* Blocks: the last n_reads inputs are the block's `reads`, values of the
	 * calling graph taken by name at every call rather than passed along the
	 * layer chain (docs/ir.md). */
	int n_reads;
	int n_outputs;
	int *outputs;       /* value ids */
	const char **output_names;
	/* Block-local declarations, instantiated per layer on expansion. */
	int n_weights;
	ir_weight *weights;
	int n_states;
	ir_state *states;
	ir_loc loc;
} ir_func;

typedef struct {
	const char *name;   /* prefill, decode, draft, ... */
	int func;           /* graph function id */
	int64_t t_min, t_max; /* allowed token counts per call */
	const char *logits; /* "all" or "last" */
	/* "session": runs at the session's position and advances it (the
	 * target's prefill/decode); "caller": runs at a position the caller
	 * gives and leaves the session's alone (a draft head, which trails the
	 * target and rewrites its own positional caches). */
	const char *position;
	/* `recurrent: slots`: every write of a recurrent state (conv, ssm,
	 * ngram) also keeps the state after each token of the step, in that
	 * state's per-token slots (passes/state_slots.c), so a speculative
	 * round that accepts n of its tokens makes slot n-1 the state instead of
	 * replaying them. Default `last`: only the state after the last token. */
	bool state_slots;
	/* `output: tokens`: the entry returns each row's greedy token (the
	 * argmax of its logits, first index of the maximum) instead of the
	 * logits (passes/entry_tokens.c); a greedy draft chain feeds each
	 * step's token to the next on the device (halo_session_chain_at). */
	bool tokens_out;
	ir_loc loc;
} ir_entry;

typedef struct {
	const char *name;
	bool is_float;
	const char *s; /* a `type: str` param's value (string attributes only); NULL otherwise */
	int64_t i;
	double f;
	ir_loc loc;
} ir_param;

typedef struct {
	const char *name;         /* block name, e.g. "gdn" */
	int func;
} ir_layer_slot;

typedef struct {
	ir_arena arena;
	const char *path;       /* model file */
	const char *model;      /* model name from the file */
	int n_hf_types;
	const char **hf_types;  /* config.json model_type values this file serves */
	/* hf_prefixes: a checkpoint name starting with from[i] that the
	 * checkpoint lacks is also looked up with that prefix replaced by to[i]
	 * (the vision-language wrapper's model.language_model.), in order. */
	int n_hf_prefixes;
	const char **hf_prefix_from, **hf_prefix_to;
	int n_params;
	ir_param *params;
	int n_weights, cap_weights;
	ir_weight *weights;     /* module-level; per-layer weights join on expansion */
	int n_states, cap_states;
	ir_state *states;
	int n_funcs;
	ir_func *funcs;
	int n_layers;
	int *layer_block;       /* per layer: function id of its block */
	int *layer_then;        /* per layer: function id of the block run after it (layers.then); NULL without */
	/* Set by layers.overrides, else NULL: per layer, the position in its
	 * override's config list (-1 for a layer no override placed), and the
	 * attribute that expand_blocks sets to that position in the ops of the
	 * layer's block (the override's index_attr; NULL for none). */
	int *layer_entry;
	const char **layer_entry_attr;
	int n_entries;
	ir_entry *entries;
	bool expanded;          /* set by expand_blocks */
	/* Set by halo compile --quant: fuse_norm_matmul folds no norm weight
	 * into a matrix (a block's scale would then carry the norm's
	 * per-channel spread). */
	bool no_fold_norms;
	/* Set by halo compile --act-quant q8 (0: none): entries of at most
	 * int8_max_rows tokens a step take int8 activations in their matvecs,
	 * which round x once per workgroup as they stage it and apply a norm's
	 * weight there, not per weight chunk, so fuse_norm_matmul fuses an
	 * unfolded norm whatever its readers' size in those entries' graphs. */
	int64_t int8_max_rows;
	/* Set by halo compile: merge_matmuls leaves sibling matmuls apart
	 * (--no-merge), or keeps out those whose weight has fewer than
	 * merge_min_rows rows (--quant keeps such small gates in --dtype, and a
	 * merged matrix has one dtype). */
	bool no_merge_matmuls;
	int64_t merge_min_rows;
	/* Set by halo compile --no-store-fusion: every state_write stays a
	 * copy dispatch (passes/fuse_state_store.c). */
	bool no_fuse_state_store;
	/* Set by halo compile --no-rope-fusion: the q/k norm-and-rope stays a
	 * dispatch before the attention (passes/fuse_attention_rope.c). */
	bool no_fuse_attention_rope;
} ir_module;

/* ---- lifetime ------------------------------------------------------------- */

/* A new empty module owning a copy of path (its arena holds everything);
 * free it with ir_module_free(). */
ir_module *ir_module_new(const char *path);
void ir_module_free(ir_module *m); /* frees m and everything it owns; NULL ok */

/* ---- lookup ----------------------------------------------------------------- */

const char *ir_op_name(ir_op op);
bool ir_op_from_name(const char *name, ir_op *out);
const ir_param *ir_module_param(const ir_module *m, const char *name);
int ir_module_weight(const ir_module *m, const char *name); /* -1 if absent */
int ir_module_state(const ir_module *m, const char *name);
int ir_module_func(const ir_module *m, const char *name);
const ir_attr *ir_node_attr(const ir_node *n, const char *name); /* NULL if absent */
int64_t ir_node_attr_int(const ir_node *n, const char *name, int64_t dflt);
double ir_node_attr_float(const ir_node *n, const char *name, double dflt);
const char *ir_node_attr_str(const ir_node *n, const char *name, const char *dflt);
/* The weight / state a WEIGHT, STATE_READ or STATE_WRITE node of f refers to
 * (block-local or module table, per node->ref_local); NULL for other ops. */
const ir_weight *ir_node_weight(const ir_module *m, const ir_func *f, const ir_node *n);
const ir_state *ir_node_state(const ir_module *m, const ir_func *f, const ir_node *n);
/* The id of the node of f named name, or -1. */
int ir_func_node(const ir_func *f, const char *name);
/* The id of the value of f named name, or -1. */
int ir_func_value(const ir_func *f, const char *name);

/* ---- building (used by the reader and by passes) --------------------------- */

/* Appends a value/node to f; storage grows inside the module arena.
 * Returned ids stay valid; pointers into f->values / f->nodes do not survive
 * a later append. */
int ir_func_add_value(ir_module *m, ir_func *f, const char *name, int producer, int producer_out);
int ir_func_add_node(ir_module *m, ir_func *f, ir_op op, const char *name, ir_loc loc);
/* Appends a copy of s (its strings must live in the module arena or be
 * static) to m->states and returns its id; pointers into m->states do not
 * survive the call. */
int ir_module_add_state(ir_module *m, const ir_state *s);
/* The same for a weight (m->weights). */
int ir_module_add_weight(ir_module *m, const ir_weight *w);
/* Appends an attribute (copied, name and strings stay as given: they must
 * live in the module arena or be static) to node id nid of f. */
void ir_node_add_attr(ir_module *m, ir_func *f, int nid, const ir_attr *a);
/* Removes nodes marked dead and values nobody produces or uses, renumbering
 * ids in a stable way (relative order kept). */
void ir_func_compact(ir_module *m, ir_func *f);
/* Appends a copy of graph function src named name to m->funcs and returns
 * its id. Everything a pass may change in place (nodes, values, their id
 * arrays, attributes, fused ops) is copied; names and strings are shared.
 * Pointers into m->funcs do not survive the call. */
int ir_func_clone(ir_module *m, int src, const char *name);

/* ---- shapes ------------------------------------------------------------------- */

static inline ir_dim ir_dim_const(int64_t c) { return (ir_dim){0, c}; }
bool ir_dim_is_const(ir_dim d);
bool ir_dim_eq(ir_dim a, ir_dim b);
bool ir_shape_eq(const ir_shape *a, const ir_shape *b);
/* Both return -1 when the result does not fit in int64. */
int64_t ir_dim_eval(ir_dim d, int64_t T);
int64_t ir_shape_numel(const ir_shape *s, int64_t T);
/* "[T, 4*T+1, 64]": writes into buf, returns buf. */
const char *ir_shape_str(const ir_shape *s, char *buf, size_t len);

#endif
