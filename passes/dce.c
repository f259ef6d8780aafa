/* pass_dce: drops nodes whose results nobody needs. A state_write is a sink:
 * it has no result, yet its effect is the point, so it is always kept, and
 * so is everything it reads, transitively. Runs after expansion, when node
 * order is a topological order of the data edges (pass_verify checks it),
 * so one sweep from the last node back decides every node. */
#include "ir/ops.h"
#include "passes/graph_query.h"
#include "passes/passes.h"

#include <stdlib.h>

static void dce_func(ir_module *m, ir_func *f)
{
	bool *needed = calloc((size_t)f->n_values + 1, sizeof(bool));
	if (!needed)
		abort();
	for (int i = 0; i < f->n_outputs; i++)
		needed[f->outputs[i]] = true;
	bool any_dead = false;
	for (int i = f->n_nodes - 1; i >= 0; i--) {
		ir_node *n = &f->nodes[i];
		bool live = ir_op_is_sink(n->op);
		for (int k = 0; k < n->n_out && !live; k++)
			live = needed[n->out[k]];
		if (!live) {
			n->dead = true;
			any_dead = true;
			continue;
		}
		for (int k = 0; k < node_n_reads(n); k++)
			needed[node_read(n, k)] = true;
	}
	free(needed);
	if (any_dead)
		ir_func_compact(m, f);
}

bool pass_dce(ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_funcs; i++)
		if (func_is_live(m, &m->funcs[i]))
			dce_func(m, &m->funcs[i]);
	return true;
}
