/* The op cases of the backend op suite (tests/ops/backend_ops.c): each one
 * small graph in the IR (docs/ir.md) around one op, written once and run on
 * every backend. */
#ifndef HALO_TESTS_OPS_OP_CASES_H
#define HALO_TESTS_OPS_OP_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/dtype.h"

/* One case. The runner writes the model file around the strings: every
 * string holds one YAML item a line, without indentation.
 * - params: must define `vocab` (the output row: logits is [T, vocab]) and
 *   `H` (the activation's width); the runner adds `n_ctx` (the case's, else OPS_N_CTX).
 * - weights, state (NULL: none): declarations; the runner adds
 *   `tok_embd: [vocab, H]`, and `hf` names each entry by its key.
 * - body: ops after `x` = embed(tok_embd, tokens), [T, H] of random values;
 *   the last one defines `logits` ([T, vocab] f32: a reshape of the op's
 *   result; or [T, 1] i32 ids, which the entries then return), the graph's
 *   output.
 * Entries: `prefill` (T up to OPS_T_PREFILL_MAX: the tiled kernels) and
 * `decode` (T up to OPS_T_DECODE: the decode and verify kernels). The runner
 * feeds t_prefill tokens through prefill, then decode steps of T = 1..5.
 *
 * Tolerance: max |got - want| / max(|want|, floor) <= tol against the ref
 * backend, for the reason `why` gives; tol 0 demands the reference's bits. */
typedef struct {
	const char *name;
	const char *params;
	const char *weights;
	const char *state;
	const char *body;
	int t_prefill;    /* 0: OPS_T_PREFILL */
	int n_ctx;        /* the context the caches hold; 0: OPS_N_CTX */
	halo_dtype quant; /* halo compile --quant (q8_0, q4_k, f8e4m3_b128); 0: none */
	halo_dtype matrix; /* halo compile --dtype of the matrices: HALO_F32 (0) or HALO_F16 */
	/* The kernel keys (their first words, space-separated) whose variants
	 * the Vulkan run sweeps; NULL: every choice's. A case built around one
	 * op names that op's kernels: the matmuls feeding it are the matmul
	 * cases' (the same tiles), and every swept variant costs a run. */
	const char *sweep;
	double tol, floor;
	const char *why;
	/* The prefill step's rows against a tolerance of their own (0: tol),
	 * for the reason prefill_why: where prefill runs kernels whose
	 * arithmetic differs from decode's (the matrix units' f16 inputs). */
	double prefill_tol;
	const char *prefill_why;
	/* A decode step of T = m rows differs from m single steps (the op's
	 * kernels do not promise it); NULL: they must match bitwise. */
	const char *batch_variant;
} op_case;

enum {
	OPS_N_CTX = 80,
	OPS_T_PREFILL = 19,      /* odd, past one 16-row tile */
	OPS_T_PREFILL_MAX = 64,  /* the models' prompt step */
	OPS_T_DECODE = 5,        /* decode and verify steps: T = 1..5 */
	OPS_DECODE_TOKENS = 15,  /* 1 + 2 + 3 + 4 + 5 */
};

extern const op_case op_cases[];
extern const int op_case_count;

#endif
