/* The checkers catch what they exist to catch:
 *  - removing any one barrier the placer set (including the step barrier
 *    on dispatch 0) makes check_barriers fail;
 *  - removing any one after edge added by order_effects whose two ends are
 *    not also ordered by another path makes check_effects fail, and so does
 *    skipping order_effects altogether. */
#include <stdlib.h>
#include <string.h>

#include "passes/graph_query.h"
#include "passes/passes.h"
#include "tests/passes/test_util.h"

#define MODEL "tests/models/hybrid_tiny.yaml"
#define CONFIG "tests/models/hybrid_tiny.config.json"

static void barrier_mutations(void)
{
	halo_plan *plan;
	ir_module *m = test_run_to(MODEL, CONFIG, "place_barriers", &plan);
	if (!m)
		return;
	ir_error err = {0};
	CHECK(pass_check_barriers(m, plan, &err), "the placed barriers fail the check: %s", err.msg);
	int tried = 0;
	for (int e = 0; e < plan->n_entries; e++) {
		plan_entry *pe = &plan->entries[e];
		for (int d = 0; d < pe->n_dispatch; d++) {
			if (!pe->dispatch[d].barrier)
				continue;
			pe->dispatch[d].barrier = false;
			err = (ir_error){0};
			bool ok = pass_check_barriers(m, plan, &err);
			CHECK(!ok, "entry %s: removing the barrier before dispatch %d went unnoticed",
			      pe->name, d);
			CHECK(ok || strstr(err.msg, "hazard") || d == 0, "unexpected message: %s", err.msg);
			pe->dispatch[d].barrier = true;
			tried++;
		}
	}
	CHECK(tried > 10, "only %d barriers to remove", tried);
	plan_free(plan);
	ir_module_free(m);
}

/* Whether node `to` is reachable from node `from` over data and after
 * edges (a plain depth-first search, kept apart from the checker's). */
static bool path(const ir_func *f, int from, int to, bool *seen)
{
	if (from == to)
		return true;
	if (seen[to])
		return false;
	seen[to] = true;
	const ir_node *n = &f->nodes[to];
	for (int k = 0; k < n->n_after; k++)
		if (path(f, from, n->after[k], seen))
			return true;
	for (int k = 0; k < node_n_reads(n); k++) {
		int p = f->values[node_read(n, k)].producer;
		if (p >= 0 && path(f, from, p, seen))
			return true;
	}
	return false;
}

static bool still_ordered(const ir_func *f, int from, int to)
{
	bool *seen = calloc((size_t)f->n_nodes, sizeof(bool));
	bool r = path(f, from, to, seen);
	free(seen);
	return r;
}

static void edge_mutations(void)
{
	ir_module *before = test_run_to(MODEL, CONFIG, "fuse_elementwise", NULL);
	ir_module *m = test_run_to(MODEL, CONFIG, "order_effects", NULL);
	if (!before || !m)
		goto out;
	ir_error err = {0};
	CHECK(!pass_check_effects(before, &err), "check_effects passes without order_effects");
	CHECK(strstr(err.msg, "no data or after edge"), "unexpected message: %s", err.msg);
	err = (ir_error){0};
	CHECK(pass_check_effects(m, &err), "check_effects fails after order_effects: %s", err.msg);
	ir_func *f = &m->funcs[m->entries[0].func];
	const ir_func *bf = &before->funcs[before->entries[0].func];
	int load_bearing = 0;
	for (int i = 0; i < f->n_nodes; i++) {
		ir_node *n = &f->nodes[i];
		int n_before = bf->nodes[i].n_after; /* order_effects only appends */
		for (int k = n_before; k < n->n_after; k++) {
			int t = n->after[k];
			n->after[k] = n->after[--n->n_after];
			bool implied = still_ordered(f, t, i);
			err = (ir_error){0};
			bool ok = pass_check_effects(m, &err);
			CHECK(implied || !ok, "removing edge %s -> %s went unnoticed", f->nodes[t].name,
			      n->name);
			load_bearing += !implied;
			n->after[n->n_after++] = n->after[k];
			n->after[k] = t;
		}
	}
	/* hybrid_tiny: the kv-cache writes before the attention reads. */
	CHECK(load_bearing >= 2, "only %d load-bearing effect edges", load_bearing);
out:
	ir_module_free(before);
	ir_module_free(m);
}

int main(void)
{
	barrier_mutations();
	edge_mutations();
	return test_finish("mutation_test");
}
