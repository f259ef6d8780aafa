/* The compiler passes, one file each, in the order passes/pipeline.c runs
 * them. Every pass takes the module, changes it in place, and returns false
 * with err set (naming the file:line:col of the offending op and what was
 * expected) when the input breaks a rule; on failure the module may be
 * half-rewritten and must be freed, not used further. None allocates memory
 * the caller must free: new IR objects live in the module's arena. */
#ifndef HALO_PASSES_PASSES_H
#define HALO_PASSES_PASSES_H

#include <stdbool.h>

#include "ir/ir.h"
#include "passes/plan.h"

/* Structural invariants: ids in range, SSA (each value produced once, read
 * only after its definition in node order), refs and edges valid, no call
 * left after expansion. Changes nothing. */
bool pass_verify(ir_module *m, ir_error *err);

/* Shapes and dtypes of every value of the live graph functions; a block's
 * body is inferred from its first call site's inputs and every other call
 * site must pass the same shapes and dtypes. */
bool pass_infer_shapes(ir_module *m, ir_error *err);

/* Inlines every call: per-layer weights and states become module entries
 * named layers.<i>.<block>.<name>, nodes and values get the same prefix and
 * layer = i. Sets m->expanded. */
bool pass_expand_blocks(ir_module *m, ir_error *err);

/* For each entry with `recurrent: slots`: every recurrent state write of its
 * graph (a copy, when a plain entry shares it) also keeps the state after
 * each token in the state's per-token slots (a new module state of kind
 * "slots"); the producing op gains its steps result. Fails, naming the
 * write, when the state does not come straight from a recurrent op. */
bool pass_state_slots(ir_module *m, ir_error *err);

/* Entries with `output: tokens`: their graph (a copy when an entry that
 * returns logits shares it) ends in an argmax of the logits, whose [T] i32
 * token ids are the graph's output. */
bool pass_entry_tokens(ir_module *m, ir_error *err);

/* Removes nodes whose results nobody uses; state_write sinks and what they
 * need stay. */
bool pass_dce(ir_module *m, ir_error *err);

/* Fusion: each folds ops into a neighbour's ir_fused list, marks the absorbed
 * node dead and compacts. */
bool pass_fuse_norm_matmul(ir_module *m, ir_error *err); /* rms_norm -> matmul prologue */
/* moe_experts -> moe_gate_up + moe_down (split_moe.c) */
bool pass_split_moe(ir_module *m, ir_error *err);
/* attention -> attention_partial + attention_combine, sink_attention ->
 * sink_attention_partial + attention_combine, index_topk -> index_score +
 * index_select, over blocks of keys where a row's keys pass one block
 * (split_attention.c) */
bool pass_split_attention(ir_module *m, ir_error *err);

/* Decode and verification steps' attention_blocks with their q/k rms_norm +
 * rope ropes (and the key rope's cache write) folded in: attention_rope
 * (fuse_attention_rope.c). */
bool pass_fuse_attention_rope(ir_module *m, ir_error *err);
bool pass_fuse_gates(ir_module *m, ir_error *err);       /* swiglu, x * sigmoid gate */
bool pass_fuse_norm_rope(ir_module *m, ir_error *err);   /* per-head rms_norm -> rope prologue */
bool pass_fuse_residual(ir_module *m, ir_error *err);    /* residual adds */
bool pass_fuse_elementwise(ir_module *m, ir_error *err); /* unary / bias-like chains */
/* hc_inject and the rms_norm of each stream that reads it into
 * hc_inject_norm (fuse_inject_norm.c). */
bool pass_fuse_inject_norm(ir_module *m, ir_error *err);
/* Sibling matmuls of one input into one over their weights' rows
 * (merge_matmuls.c); adds the merged matrices to m->weights. */
bool pass_merge_matmuls(ir_module *m, ir_error *err);
/* A state_write at: pos whose value a rope or matmul makes for it alone
 * becomes in place: the producer stores into the state's rows
 * (fuse_state_store.c). */
bool pass_fuse_state_store(ir_module *m, ir_error *err);

/* Turns the program order of effects on each state into after edges
 * (read before a later write, write before a later read, writes in order). */
bool pass_order_effects(ir_module *m, ir_error *err);

/* Checks that every pair of effects on one state that could conflict is
 * ordered by a path of data or after edges, including the readers of a
 * state_read's result (which alias the state buffer). Changes nothing. */
bool pass_check_effects(ir_module *m, ir_error *err);

/* Reorders the nodes of each graph function into a topological order over
 * data and after edges, ties broken by (layer, depth, name): the result depends on
 * the graph, never on how independent ops were listed. */
bool pass_schedule(ir_module *m, ir_error *err);

/* Fills plan with one plan_entry per module entry: dispatch list, buffers,
 * activation offsets (see plan.h). The module must be scheduled. */
bool pass_plan_memory(ir_module *m, halo_plan *plan, ir_error *err);

/* Sets plan_dispatch.barrier where a dispatch has a RAW, WAR or WAW hazard
 * with a dispatch since the previous barrier. */
bool pass_place_barriers(ir_module *m, halo_plan *plan, ir_error *err);

/* Independently re-derives every hazard between pairs of dispatches and
 * fails when one has no barrier between its two dispatches. Changes nothing. */
bool pass_check_barriers(ir_module *m, halo_plan *plan, ir_error *err);

#endif
