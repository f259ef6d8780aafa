/* pass_verify: the structural invariants every pass relies on and must keep.
 * The pipeline re-runs it after each pass in debug builds, so a pass that
 * breaks the IR is named at once rather than by a crash three passes later. */
#include "ir/ops.h"
#include "passes/graph_query.h"
#include "passes/passes.h"

#include <stdlib.h>

static bool check_read(const ir_func *f, const bool *is_input, int node, int v, ir_loc loc,
		       ir_error *err)
{
	const char *who = f->nodes[node].name ? f->nodes[node].name : "?";
	if (v < 0 || v >= f->n_values) {
		ir_error_set(err, loc, "verify: node '%s' of '%s' reads value id %d, expected 0..%d",
			     who, f->name, v, f->n_values - 1);
		return false;
	}
	int p = f->values[v].producer;
	if (p < 0 && !is_input[v]) {
		ir_error_set(err, loc, "verify: node '%s' of '%s' reads '%s', which no node defines",
			     who, f->name, f->values[v].name);
		return false;
	}
	if (p >= node) {
		ir_error_set(err, loc,
			     "verify: node '%s' of '%s' reads '%s' before its definition (node %d)",
			     who, f->name, f->values[v].name, p);
		return false;
	}
	return true;
}

static bool check_outputs(const ir_func *f, int node, ir_error *err)
{
	const ir_node *n = &f->nodes[node];
	for (int k = 0; k < n->n_out; k++) {
		int v = n->out[k];
		if (v < 0 || v >= f->n_values || f->values[v].producer != node ||
		    f->values[v].producer_out != k) {
			ir_error_set(err, n->loc,
				     "verify: result %d of node '%s' of '%s' is not recorded as produced by it",
				     k, n->name, f->name);
			return false;
		}
	}
	return true;
}

static bool check_arity(const ir_func *f, const ir_node *n, ir_error *err)
{
	const ir_op_info *info = ir_op_get(n->op);
	if (!info) {
		ir_error_set(err, n->loc, "verify: node '%s' of '%s' has op number %d, not in ops.def",
			     n->name, f->name, (int)n->op);
		return false;
	}
	bool in_ok = n->n_in >= info->min_in && (info->max_in < 0 || n->n_in <= info->max_in);
	bool out_ok = ir_op_result_count_ok(n->op, n->n_out);
	if (!in_ok || !out_ok) {
		ir_error_set(err, n->loc, "verify: %s node '%s' of '%s' has %d operands and %d results",
			     ir_op_name(n->op), n->name, f->name, n->n_in, n->n_out);
		return false;
	}
	return true;
}

static bool check_ref(const ir_module *m, const ir_func *f, const ir_node *n, ir_error *err)
{
	bool ok = true;
	if (n->op == IR_OP_WEIGHT)
		ok = ir_node_weight(m, f, n) != NULL;
	else if (n->op == IR_OP_STATE_READ || n->op == IR_OP_STATE_WRITE)
		ok = ir_node_state(m, f, n) != NULL;
	else if (n->op == IR_OP_CALL)
		ok = !m->expanded && n->ref >= 0 && n->ref < m->n_funcs && m->funcs[n->ref].is_block;
	if (!ok)
		ir_error_set(err, n->loc, "verify: %s node '%s' of '%s' has %s ref %d",
			     ir_op_name(n->op), n->name, f->name,
			     n->op == IR_OP_CALL && m->expanded ? "a call left after expansion,"
								: "an invalid",
			     n->ref);
	return ok;
}

static bool check_edges(const ir_func *f, int node, ir_error *err)
{
	const ir_node *n = &f->nodes[node];
	for (int k = 0; k < n->n_after; k++) {
		int t = n->after[k];
		if (t < 0 || t >= f->n_nodes || t == node) {
			ir_error_set(err, n->loc, "verify: node '%s' of '%s' has after edge to node %d",
				     n->name, f->name, t);
			return false;
		}
	}
	return true;
}

static bool check_node(const ir_module *m, const ir_func *f, const bool *is_input, int i,
		       ir_error *err)
{
	const ir_node *n = &f->nodes[i];
	if (n->dead) {
		ir_error_set(err, n->loc, "verify: dead node '%s' of '%s' was not compacted", n->name,
			     f->name);
		return false;
	}
	if (!check_arity(f, n, err) || !check_ref(m, f, n, err) || !check_outputs(f, i, err) ||
	    !check_edges(f, i, err))
		return false;
	for (int k = 0; k < node_n_reads(n); k++)
		if (!check_read(f, is_input, i, node_read(n, k), n->loc, err))
			return false;
	return true;
}

static bool check_ids(const ir_func *f, const int *ids, int n, const char *what, ir_error *err)
{
	for (int i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= f->n_values) {
			ir_error_set(err, f->loc, "verify: %s %d of '%s' is value id %d, out of range",
				     what, i, f->name, ids[i]);
			return false;
		}
	}
	return true;
}

static bool check_values(const ir_func *f, const bool *is_input, ir_error *err)
{
	for (int v = 0; v < f->n_values; v++) {
		int p = f->values[v].producer;
		if (p >= f->n_nodes || (p >= 0 && is_input[v])) {
			ir_error_set(err, f->loc, "verify: value '%s' of '%s' has producer %d",
				     f->values[v].name, f->name, p);
			return false;
		}
	}
	return true;
}

static bool check_func(const ir_module *m, const ir_func *f, ir_error *err)
{
	if (!check_ids(f, f->inputs, f->n_inputs, "input", err) ||
	    !check_ids(f, f->outputs, f->n_outputs, "output", err))
		return false;
	bool *is_input = calloc((size_t)f->n_values + 1, sizeof(bool));
	if (!is_input)
		abort();
	for (int i = 0; i < f->n_inputs; i++)
		is_input[f->inputs[i]] = true;
	bool ok = check_values(f, is_input, err);
	for (int i = 0; ok && i < f->n_nodes; i++)
		ok = check_node(m, f, is_input, i, err);
	free(is_input);
	return ok;
}

static bool check_entries(const ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_entries; i++) {
		const ir_entry *e = &m->entries[i];
		if (e->func < 0 || e->func >= m->n_funcs || m->funcs[e->func].is_block ||
		    e->t_min < 1 || e->t_min > e->t_max) {
			ir_error_set(err, e->loc,
				     "verify: entry '%s' needs a graph function and 1 <= t_min <= t_max",
				     e->name);
			return false;
		}
	}
	return true;
}

bool pass_verify(ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_funcs; i++)
		if (func_is_live(m, &m->funcs[i]) && !check_func(m, &m->funcs[i], err))
			return false;
	return check_entries(m, err);
}
