/* Entries with `output: tokens` (docs/ir.md): each row's greedy token
 * instead of its logits.
 *
 * The graph's output (logits [T, vocab]) goes through an argmax (the first
 * index of the row's maximum, ir/ops) whose [T] i32 result becomes the
 * graph's output. An entry that returns tokens and shares its graph with
 * one that returns logits (a head's `draft` and `draft_greedy` both run
 * mtp_step) gets its own copy of the graph, as state_slots does, so the
 * logits entry is unchanged. Why: a greedy drafter needs only the token,
 * and a token that stays on the device can feed the next draft step
 * without a round trip through the host (halo_session_chain_at), where
 * logits would be a vocabulary of floats copied out each step. */
#include <string.h>

#include "ir/ops.h"
#include "passes/entry_graphs.h"
#include "passes/passes.h"

static bool returns_tokens(const ir_module *m, const ir_entry *e)
{
	(void)m;
	return e->tokens_out;
}

/* Appends argmax(output) to graph fi and makes it the graph's output. */
static bool add_argmax(ir_module *m, int fi, const ir_entry *e, ir_error *err)
{
	ir_func *f = &m->funcs[fi];
	if (f->n_outputs != 1) {
		ir_error_set(err, e->loc, "entry '%s' has output: tokens, but graph '%s' returns %d values, not logits",
			     e->name, f->name, f->n_outputs);
		return false;
	}
	int logits = f->outputs[0];
	const ir_value *lv = &f->values[logits];
	if (lv->shape.rank != 2 || lv->dtype != HALO_F32) {
		ir_error_set(err, e->loc, "entry '%s' has output: tokens, but graph '%s' returns '%s', not f32 logits "
			     "[T, vocab]", e->name, f->name, lv->name);
		return false;
	}
	const char *name = ir_arena_printf(&m->arena, "%s.token", lv->name);
	int n = ir_func_add_node(m, f, IR_OP_ARGMAX, name, e->loc);
	int v = ir_func_add_value(m, f, name, n, 0);
	ir_node *am = &f->nodes[n];
	am->in = ir_arena_alloc(&m->arena, sizeof(int));
	am->in[0] = logits;
	am->n_in = 1;
	am->out = ir_arena_alloc(&m->arena, sizeof(int));
	am->out[0] = v;
	am->n_out = 1;
	am->layer = -1;
	ir_shape shape;
	halo_dtype dtype;
	if (!ir_op_infer(m, f, am, &shape, &dtype, err))
		return false;
	f->values[v].shape = shape;
	f->values[v].dtype = dtype;
	f->values[v].shape_known = true;
	f->outputs[0] = v;
	f->output_names[0] = "tokens";
	return true;
}

bool pass_entry_tokens(ir_module *m, ir_error *err)
{
	int n_funcs = m->n_funcs; /* the graphs the entries ran before any copy */
	for (int src = 0; src < n_funcs; src++) {
		int first, fi = entry_graph_for(m, src, returns_tokens, "tokens", &first);
		if (fi >= 0 && !add_argmax(m, fi, &m->entries[first], err))
			return false;
	}
	return true;
}
