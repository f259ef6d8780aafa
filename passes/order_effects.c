/* pass_order_effects: the listed order of effects on one state is their
 * meaning (docs/ir.md, "State effects and their order"); this pass makes it
 * explicit as after edges, so scheduling can never move a state_write sink,
 * which has no consumer to hold it in place:
 *   WAR  a write runs after every earlier read of the state since the
 *        previous write, and after every dispatch that reads such a read's
 *        result: state_read aliases the state buffer, so its readers see
 *        whatever the buffer holds when they run;
 *   RAW  a read runs after the latest earlier write;
 *   WAW  writes run in program order.
 * Earlier effects are reached through these edges transitively, so each
 * effect gets only the edges to its nearest conflicting neighbours. */
#include "passes/passes.h"
#include "passes/state_effects.h"

#include <stdlib.h>

/* Makes node n wait for node t (once). */
static void add_edge(ir_module *m, ir_func *f, int n, int t)
{
	ir_node *node = &f->nodes[n];
	for (int k = 0; k < node->n_after; k++)
		if (node->after[k] == t)
			return;
	node->after = ir_arena_grow(&m->arena, node->after, (size_t)node->n_after * sizeof(int),
				    (size_t)(node->n_after + 1) * sizeof(int));
	node->after[node->n_after++] = t;
}

/* Whether value v, or a reshape of it, leaves the function as an output. */
static bool reaches_output(const ir_func *f, const func_uses *u, int v)
{
	if (u->is_output[v])
		return true;
	for (int k = u->start[v]; k < u->start[v + 1]; k++) {
		const ir_node *c = &f->nodes[u->user[k]];
		if (c->op == IR_OP_RESHAPE && reaches_output(f, u, c->out[0]))
			return true;
	}
	return false;
}

/* Orders the reads since the last write before write e. */
static bool order_reads_before(ir_module *m, ir_func *f, const func_uses *u, int e, int r,
			       int *scratch, ir_error *err)
{
	if (reaches_output(f, u, f->nodes[r].out[0])) {
		ir_error_set(err, f->nodes[r].loc,
			     "'%s' reads a state that '%s' overwrites later in the step, and is a graph "
			     "output: a state read aliases the state buffer, so the caller would see the "
			     "new contents; copy it (e.g. through an op) before the write",
			     f->nodes[r].name, f->nodes[e].name);
		return false;
	}
	add_edge(m, f, e, r);
	int n_readers = state_read_readers(f, u, r, scratch);
	for (int c = 0; c < n_readers; c++)
		if (scratch[c] != e)
			add_edge(m, f, e, scratch[c]);
	return true;
}

static bool order_group(ir_module *m, ir_func *f, const func_uses *u, const int *eff, int n_eff,
			int *scratch, ir_error *err)
{
	int last_write = -1, first_read = 0; /* reads since last_write: eff[first_read..] */
	for (int k = 0; k < n_eff; k++) {
		/* a write waits where it is performed: an in-place write's producer */
		int e = state_effect_writer(f, eff[k]);
		if (last_write >= 0)
			add_edge(m, f, e, last_write);
		if (f->nodes[e].op == IR_OP_STATE_READ)
			continue;
		for (int j = first_read; j < k; j++)
			if (f->nodes[eff[j]].op == IR_OP_STATE_READ &&
			    !order_reads_before(m, f, u, e, eff[j], scratch, err))
				return false;
		last_write = eff[k];
		first_read = k + 1;
	}
	return true;
}

bool pass_order_effects(ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_funcs; i++) {
		ir_func *f = &m->funcs[i];
		if (!func_is_live(m, f))
			continue;
		func_uses u;
		state_effects se;
		func_uses_build(f, &u);
		state_effects_build(f, &se);
		int *scratch = calloc((size_t)f->n_nodes + 1, sizeof(int));
		if (!scratch)
			abort();
		bool ok = true;
		for (int g = 0; ok && g < se.n_groups; g++)
			ok = order_group(m, f, &u, &se.node[se.start[g]], se.start[g + 1] - se.start[g],
					 scratch, err);
		free(scratch);
		state_effects_free(&se);
		func_uses_free(&u);
		if (!ok)
			return false;
	}
	return true;
}
