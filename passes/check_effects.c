/* pass_check_effects: a checker, separate from order_effects, that proves
 * no conflicting pair of effects on a state is left to the scheduler. For
 * effects a before b (node order) on one state, at least one a write, b
 * must be reachable from a over data and after edges; and when a is a read
 * and b a write, b must also be reachable from every dispatch that reads
 * a's result, which aliases the state buffer. An in-place write
 * (fuse_state_store) is performed by its value's producer, so that node is
 * what must be reached. Node order is the program
 * order before scheduling and a topological order after it, so the same
 * check holds at both points. */
#include "passes/dep_graph.h"
#include "passes/graph_query.h"
#include "passes/passes.h"
#include "passes/state_effects.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct {
	int words;
	uint64_t *bits; /* row i: the nodes reachable from node i */
} reach_set;

static bool reaches(const reach_set *r, int a, int b)
{
	return (r->bits[(size_t)a * (size_t)r->words + (size_t)(b / 64)] >> (b % 64)) & 1u;
}

/* Rows are filled in reverse topological order, so each successor's row is
 * complete when it is merged into its predecessor's. */
static bool build_reach(const ir_func *f, reach_set *r, ir_error *err)
{
	dep_graph g;
	dep_graph_build(f, &g);
	int *order = calloc((size_t)g.n + 1, sizeof(int));
	r->words = (g.n + 63) / 64;
	r->bits = calloc((size_t)g.n * (size_t)r->words + 1, sizeof(uint64_t));
	if (!order || !r->bits)
		abort();
	bool ok = dep_graph_topo(&g, order) == g.n;
	if (!ok)
		ir_error_set(err, f->loc, "check_effects: '%s' has a cycle of data and after edges",
			     f->name);
	for (int q = g.n - 1; ok && q >= 0; q--) {
		int i = order[q];
		uint64_t *row = &r->bits[(size_t)i * (size_t)r->words];
		for (int k = g.start[i]; k < g.start[i + 1]; k++) {
			int s = g.succ[k];
			const uint64_t *srow = &r->bits[(size_t)s * (size_t)r->words];
			for (int w = 0; w < r->words; w++)
				row[w] |= srow[w];
			row[s / 64] |= (uint64_t)1 << (s % 64);
		}
	}
	free(order);
	dep_graph_free(&g);
	return ok;
}

static const char *state_name(const ir_module *m, const ir_func *f, int node)
{
	const ir_state *s = ir_node_state(m, f, &f->nodes[node]);
	return s ? s->name : "?";
}

static bool check_pair(const ir_module *m, const ir_func *f, const reach_set *r, int a, int b,
		       ir_error *err)
{
	const ir_node *na = &f->nodes[a], *nb = &f->nodes[b];
	if (na->op == IR_OP_STATE_READ && nb->op == IR_OP_STATE_READ)
		return true;
	/* b takes effect where it is performed (an in-place write: its
	 * producer); a's marker is reached only after its producer ran */
	if (reaches(r, a, state_effect_writer(f, b)))
		return true;
	ir_error_set(err, nb->loc,
		     "check_effects: state '%s': %s '%s' must run after %s '%s' (listed before it), "
		     "but no data or after edge orders them",
		     state_name(m, f, b), ir_op_name(nb->op), nb->name, ir_op_name(na->op), na->name);
	return false;
}

static bool check_readers(const ir_module *m, const ir_func *f, const func_uses *u,
			  const reach_set *r, int rd, int w, int *scratch, ir_error *err)
{
	int n = state_read_readers(f, u, rd, scratch), wr = state_effect_writer(f, w);
	for (int k = 0; k < n; k++) {
		int c = scratch[k];
		if (c == w || c == wr || reaches(r, c, wr))
			continue;
		ir_error_set(err, f->nodes[w].loc,
			     "check_effects: state '%s': write '%s' is not ordered after '%s', which "
			     "reads the old contents through '%s'",
			     state_name(m, f, w), f->nodes[w].name, f->nodes[c].name, f->nodes[rd].name);
		return false;
	}
	return true;
}

static bool check_group(const ir_module *m, const ir_func *f, const func_uses *u,
			const reach_set *r, const int *eff, int n, int *scratch, ir_error *err)
{
	for (int i = 0; i < n; i++) {
		for (int j = i + 1; j < n; j++) {
			if (!check_pair(m, f, r, eff[i], eff[j], err))
				return false;
			if (f->nodes[eff[i]].op == IR_OP_STATE_READ &&
			    f->nodes[eff[j]].op == IR_OP_STATE_WRITE &&
			    !check_readers(m, f, u, r, eff[i], eff[j], scratch, err))
				return false;
		}
	}
	return true;
}

static bool check_func(const ir_module *m, const ir_func *f, ir_error *err)
{
	reach_set r = {0};
	if (!build_reach(f, &r, err)) {
		free(r.bits);
		return false;
	}
	func_uses u;
	state_effects se;
	func_uses_build(f, &u);
	state_effects_build(f, &se);
	int *scratch = calloc((size_t)f->n_nodes + 1, sizeof(int));
	if (!scratch)
		abort();
	bool ok = true;
	for (int g = 0; ok && g < se.n_groups; g++)
		ok = check_group(m, f, &u, &r, &se.node[se.start[g]], se.start[g + 1] - se.start[g],
				 scratch, err);
	free(scratch);
	state_effects_free(&se);
	func_uses_free(&u);
	free(r.bits);
	return ok;
}

bool pass_check_effects(ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_funcs; i++)
		if (func_is_live(m, &m->funcs[i]) && !check_func(m, &m->funcs[i], err))
			return false;
	return true;
}
