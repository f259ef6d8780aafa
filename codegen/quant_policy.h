/* Which weights halo compile --quant stores block-quantized, and in which
 * format (docs/quantization.md). A weight's class comes from how the
 * scheduled graph reads it; the stored dtype from the class, the requested
 * format and the weight's K (its last, contiguous dim). */
#ifndef HALO_CODEGEN_QUANT_POLICY_H
#define HALO_CODEGEN_QUANT_POLICY_H

#include <stdbool.h>
#include <stddef.h>

#include "ir/ir.h"
#include "runtime/manifest.h"

typedef enum {
	CG_WCLASS_OTHER,  /* norms, conv taps, anything not a linear layer's weight or a gathered table */
	CG_WCLASS_LINEAR, /* the weight operand of a matmul (w[N, K]) */
	CG_WCLASS_EXPERT, /* an MoE expert stack ([E, N, K]: moe_experts, moe_gate_up, moe_down) */
	CG_WCLASS_HEAD,   /* the output projection: a matmul whose result is the graph's output or vocab wide */
	CG_WCLASS_ROUTER, /* a matmul feeding moe_route / topk: the MoE router */
	CG_WCLASS_GATE,   /* a matmul of fewer than CG_QUANT_MIN_ROWS outputs (a per-token scalar gate) */
	CG_WCLASS_TABLE,  /* a table whose rows are gathered (embed, ngram_embed) */
	CG_WCLASS_COUNT
} cg_weight_class;

#define CG_QUANT_MIN_ROWS 32

/* The class of every module weight (indexed by weight id) from its reads in
 * the entries' graph functions (module after the pass pipeline). A weight
 * read any way that is not a linear layer's, or read as a view whose last
 * dim differs from its own, is OTHER. Returns false only when out of memory. */
bool cg_weight_classes(const ir_module *m, cg_weight_class *cls);

const char *cg_weight_class_name(cg_weight_class c);

/* Whether class c's weights may be stored in block format t (the format's
 * kernels read them there): mxfp4 only for experts, the others for the
 * classes --quant puts in them. */
bool cg_quant_class_allows(cg_weight_class c, halo_dtype t);

/* The stored dtype of a weight of class c and shape s (rank >= 2) under
 * --dtype matrix_dtype and --quant quant (HALO_F32 or HALO_F16 for none).
 * *fallback is set when the format was lowered to q8_0 because K is not a
 * multiple of its block (f8e4m3_b128's 128). Returns false with a message
 * naming the weight, its shape and the block when K is not a multiple of 32
 * (q8_0's, q4_k's and mxfp4's block), but for a gathered table, which then
 * keeps matrix_dtype (a gather reads any row length). */
bool cg_quant_dtype(cg_weight_class c, const char *name, const ir_shape *s, halo_dtype matrix_dtype,
		    halo_dtype quant, halo_dtype *out, bool *fallback, char *err, size_t errlen);

/* Int8 activations (halo compile --act-quant q8; docs/quantization.md):
 * gives xq = 8 to each matmul dispatch of e that the decode kernel runs (at
 * most KV_MATVEC_MAX_T rows a step), reads one input (no groups) and has
 * q8_0 or q4_k weights; prompt steps keep f32 x. Adds the count to
 * *marked. False with a message naming the dispatch when its attributes
 * are full. */
bool cg_mark_int8_activations(halo_entry *e, int *marked, char *err, size_t errlen);

#endif
