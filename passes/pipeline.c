/* The pass order (see pipeline.h). */
#include "passes/pipeline.h"

#include <stdio.h>
#include <string.h>

#include "passes/passes.h"

#define MODULE_PASS(fn)                                                                   \
	static bool run_##fn(ir_module *m, halo_plan *plan, ir_error *err)                \
	{                                                                                 \
		return pass_##fn(m, err);                                                 \
	}

MODULE_PASS(verify)
MODULE_PASS(infer_shapes)
MODULE_PASS(expand_blocks)
MODULE_PASS(state_slots)
MODULE_PASS(entry_tokens)
MODULE_PASS(dce)
MODULE_PASS(fuse_norm_matmul)
MODULE_PASS(fuse_norm_rope)
MODULE_PASS(fuse_gates)
MODULE_PASS(fuse_residual)
MODULE_PASS(fuse_elementwise)
MODULE_PASS(fuse_inject_norm)
MODULE_PASS(merge_matmuls)
MODULE_PASS(fuse_state_store)
MODULE_PASS(split_moe)
MODULE_PASS(split_attention)
MODULE_PASS(fuse_attention_rope)
MODULE_PASS(order_effects)
MODULE_PASS(check_effects)
MODULE_PASS(schedule)

static const pipeline_pass passes[] = {
	{"verify", "check the IR read from the model file", run_verify, false},
	{"infer_shapes", "shapes and dtypes; blocks from their first call site", run_infer_shapes, false},
	{"expand_blocks", "inline every layer; per-layer weights and states", run_expand_blocks, false},
	{"state_slots", "per-token slots of the recurrent states for recurrent: slots entries", run_state_slots, false},
	{"entry_tokens", "an argmax of the logits for output: tokens entries", run_entry_tokens, false},
	{"dce", "drop unused nodes (state_write sinks stay)", run_dce, false},
	{"fuse_norm_matmul", "rms_norm into matmul prologues; its weight folded into theirs", run_fuse_norm_matmul,
	 false},
	{"fuse_norm_rope", "a per-head rms_norm read by a rope into its prologue", run_fuse_norm_rope, false},
	{"fuse_gates", "swiglu and sigmoid-gate multiply into epilogues", run_fuse_gates, false},
	{"fuse_residual", "residual adds into epilogues", run_fuse_residual, false},
	{"fuse_elementwise", "elementwise chains into their producer's epilogue", run_fuse_elementwise, false},
	{"fuse_inject_norm", "hc_inject and the per-stream rms_norm reading it into hc_inject_norm",
	 run_fuse_inject_norm, false},
	{"merge_matmuls", "sibling matmuls of one input into one over their weights' rows", run_merge_matmuls,
	 false},
	{"fuse_state_store", "KV-cache writes of a rope's or matmul's rows stored by that producer",
	 run_fuse_state_store, false},
	{"split_moe", "moe_experts into moe_gate_up and moe_down dispatches", run_split_moe, false},
	{"split_attention",
	 "attention, masked_attention, qsa_select into their _blocks forms; sink_attention, index_topk into per-block"
	 " halves and merge",
	 run_split_attention, false},
	{"fuse_attention_rope", "decode steps' q/k norm and rope into attention_rope (and its cache write)",
	 run_fuse_attention_rope, false},
	{"order_effects", "after edges from the program order of state effects", run_order_effects, false},
	{"check_effects", "every conflicting state effect pair is ordered by edges", run_check_effects, false},
	{"schedule", "stable topological order, ties by (layer, depth, name)", run_schedule, false},
	{"plan_memory", "dispatch list and buffer offsets per entry", pass_plan_memory, true},
	{"place_barriers", "barriers before dispatches with RAW/WAR/WAW hazards", pass_place_barriers, true},
	{"check_barriers", "re-derive hazards from the dispatch list; none unguarded", pass_check_barriers, true},
};

int pipeline_n_passes(void)
{
	return (int)(sizeof passes / sizeof passes[0]);
}

const pipeline_pass *pipeline_pass_at(int i)
{
	return &passes[i];
}

int pipeline_find(const char *name)
{
	for (int i = 0; i < pipeline_n_passes(); i++)
		if (strcmp(passes[i].name, name) == 0)
			return i;
	return -1;
}

/* Keeps the failing pass's message and says which pass it was. */
static void name_pass(ir_error *err, const char *what, const char *pass)
{
	char note[96];
	snprintf(note, sizeof note, " [%s %s]", what, pass);
	size_t len = strlen(err->msg);
	if (len + strlen(note) < sizeof err->msg)
		memcpy(err->msg + len, note, strlen(note) + 1);
}

bool pipeline_run_range(ir_module *m, halo_plan *plan, int first, int last, ir_error *err)
{
	for (int i = first; i <= last; i++) {
		const pipeline_pass *p = &passes[i];
		if (p->needs_plan && !plan) {
			ir_error_set(err, (ir_loc){m->path, 0, 0}, "pass '%s' needs a plan", p->name);
			return false;
		}
		if (!p->run(m, plan, err)) {
			name_pass(err, "in pass", p->name);
			return false;
		}
#ifndef NDEBUG
		if (!p->needs_plan && !pass_verify(m, err)) {
			name_pass(err, "verifier after pass", p->name);
			return false;
		}
#endif
	}
	return true;
}

bool pipeline_run(ir_module *m, halo_plan *plan, ir_error *err)
{
	return pipeline_run_range(m, plan, 0, pipeline_n_passes() - 1, err);
}
