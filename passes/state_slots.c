/* Per-token state slots for the entries with `recurrent: slots` (docs/ir.md).
 *
 * A speculative round verifies K drafts in one step of T = K + 1 tokens and
 * may accept only the first n of them. Positional caches roll back with the
 * position; a recurrent state (conv window, SSM state, n-gram history) holds
 * only the state after the step's last token, which is wrong when n < T.
 * Here every write of a recurrent state in a slots entry's graph gets a twin:
 * the op that computed the state also gives its state after each token (the
 * optional result of an IR_OPF_STEPS op), and a second state_write sink keeps
 * those T states in the state's slots, a module state of kind "slots" shaped
 * [t_max, ...state]. Accepting n tokens then makes slot n - 1 the state: one
 * copy (halo_session_keep), never a replay. The slot writes are sinks like
 * every other state write, so order_effects and check_effects see them.
 *
 * An entry with slots that shares its graph with one without (decode and
 * verify both run `forward`) gets its own copy of the graph, so the plain
 * decode step writes no slots. Runs after expand_blocks: the states are per
 * layer and each graph is one flat function. */
#include <string.h>

#include "ir/ops.h"
#include "passes/entry_graphs.h"
#include "passes/passes.h"

static bool kind_recurrent(const char *kind)
{
	return strcmp(kind, "conv") == 0 || strcmp(kind, "ssm") == 0 || strcmp(kind, "ngram") == 0;
}

/* The slots of recurrent state s: a module state "<s>.slots" of rows rows. */
static int slots_state(ir_module *m, int s, int64_t rows)
{
	const char *name = ir_arena_printf(&m->arena, "%s.slots", m->states[s].name);
	int id = ir_module_state(m, name);
	if (id >= 0)
		return id;
	ir_state t = m->states[s];
	t.name = name;
	t.kind = "slots";
	t.slots_of = s;
	t.shape.rank = m->states[s].shape.rank + 1;
	t.shape.dim[0] = ir_dim_const(rows);
	for (int i = 0; i < m->states[s].shape.rank; i++)
		t.shape.dim[i + 1] = m->states[s].shape.dim[i];
	return ir_module_add_state(m, &t);
}

/* The node producing w's value, when it can give its state after each token
 * (an IR_OPF_STEPS op whose state result w writes); else -1 with err set. */
static int steps_producer(const ir_module *m, const ir_func *f, const ir_node *w, const char *entry,
			  ir_error *err)
{
	const ir_value *v = &f->values[w->in[0]];
	const ir_node *p = v->producer >= 0 ? &f->nodes[v->producer] : NULL;
	const ir_op_info *info = p ? ir_op_get(p->op) : NULL;
	if (info && (info->flags & IR_OPF_STEPS) && p->n_out == info->n_out && v->producer_out == info->n_out - 1)
		return v->producer;
	ir_error_set(err, w->loc,
		     "entry '%s' keeps per-token state slots, but '%s' writes recurrent state '%s' from %s%s%s, "
		     "which cannot give its state after each token: write it straight from the state result of "
		     "conv1d_causal, conv1d_dilated, gated_delta_rule or ngram_embed",
		     entry, w->name, m->states[w->ref].name, p ? ir_op_name(p->op) : "a graph input", p ? " " : "",
		     p ? p->name : "");
	return -1;
}

/* Gives producer p its steps result, shaped by the op's own rule
 * (ir_op_infer), and adds the sink that writes it into the slots of the
 * state that node w writes. */
static bool add_slot_write(ir_module *m, ir_func *f, int w, int p, int slots, ir_error *err)
{
	const char *vname = ir_arena_printf(&m->arena, "%s.steps", f->values[f->nodes[w].in[0]].name);
	int n_out = f->nodes[p].n_out;
	int v = ir_func_add_value(m, f, vname, p, n_out);
	int *out = ir_arena_alloc(&m->arena, (size_t)(n_out + 1) * sizeof(int));
	memcpy(out, f->nodes[p].out, (size_t)n_out * sizeof(int));
	out[n_out] = v;
	f->nodes[p].out = out;
	f->nodes[p].n_out = n_out + 1;
	ir_shape shapes[n_out + 1];
	halo_dtype dtypes[n_out + 1];
	if (!ir_op_infer(m, f, &f->nodes[p], shapes, dtypes, err))
		return false;
	f->values[v].shape = shapes[n_out];
	f->values[v].dtype = dtypes[n_out];
	f->values[v].shape_known = true;

	const char *name = ir_arena_printf(&m->arena, "%s.slots", f->nodes[w].name);
	int n = ir_func_add_node(m, f, IR_OP_STATE_WRITE, name, f->nodes[w].loc);
	ir_node *sink = &f->nodes[n];
	sink->ref = slots;
	sink->ref_local = false;
	sink->layer = f->nodes[w].layer;
	sink->in = ir_arena_alloc(&m->arena, sizeof(int));
	sink->in[0] = v;
	sink->n_in = 1;
	ir_node_add_attr(m, f, n, &(ir_attr){.name = "at", .kind = IR_ATTR_STR, .s = "start"});
	return true;
}

/* Adds the slot writes to graph f, for an entry named entry. */
static bool slot_graph(ir_module *m, int fi, int64_t rows, const char *entry, ir_error *err)
{
	ir_func *f = &m->funcs[fi];
	int n_nodes = f->n_nodes; /* the sinks added below need no twins */
	for (int i = 0; i < n_nodes; i++) {
		const ir_node *w = &f->nodes[i];
		if (w->op != IR_OP_STATE_WRITE || w->ref_local || ir_node_attr(w, "at") ||
		    !kind_recurrent(m->states[w->ref].kind))
			continue;
		int p = steps_producer(m, f, w, entry, err);
		if (p < 0)
			return false;
		if (!add_slot_write(m, f, i, p, slots_state(m, w->ref, rows), err))
			return false;
	}
	return true;
}

static bool keeps_slots(const ir_module *m, const ir_entry *e)
{
	(void)m;
	return e->state_slots;
}

bool pass_state_slots(ir_module *m, ir_error *err)
{
	/* one slot per token of the longest slots entry; every slots graph shares them */
	int64_t rows = 0;
	for (int i = 0; i < m->n_entries; i++)
		if (m->entries[i].state_slots && m->entries[i].t_max > rows)
			rows = m->entries[i].t_max;
	int n_funcs = m->n_funcs; /* the graphs the entries ran before any copy */
	for (int src = 0; rows > 0 && src < n_funcs; src++) {
		int first, fi = entry_graph_for(m, src, keeps_slots, "slots", &first);
		if (fi >= 0 && !slot_graph(m, fi, rows, m->entries[first].name, err))
			return false;
	}
	return true;
}
