/* pass_schedule: one stable topological order per graph function, over data
 * and after edges. Among ready nodes the smallest key (layer, depth, name)
 * goes first, where depth is the longest path from a source: independent
 * ops of one level (q/k/v projections) end up adjacent, so they share a
 * barrier. All three come from the graph itself (names are unique after
 * expansion: layers.<i>.<block>.<op name>), so two files that list the same
 * independent ops in different orders get the same schedule. Node id is the
 * last tie-break and only matters for nodes with equal names, which are
 * interchangeable. The function's nodes are then permuted into that order,
 * so every later pass (and the dumps) sees the schedule as node order. */
#include "passes/dep_graph.h"
#include "passes/graph_query.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
	const ir_func *f;
	const int *depth; /* longest path from a source, in edges */
	int n;
	int *item;
} ready_heap;

static int key_cmp(const ready_heap *h, int a, int b)
{
	const ir_node *na = &h->f->nodes[a], *nb = &h->f->nodes[b];
	if (na->layer != nb->layer)
		return na->layer < nb->layer ? -1 : 1;
	if (h->depth[a] != h->depth[b])
		return h->depth[a] < h->depth[b] ? -1 : 1;
	int c = strcmp(na->name ? na->name : "", nb->name ? nb->name : "");
	if (c)
		return c;
	return a < b ? -1 : a > b;
}

static void heap_push(ready_heap *h, int id)
{
	int i = h->n++;
	h->item[i] = id;
	while (i > 0) {
		int parent = (i - 1) / 2;
		if (key_cmp(h, h->item[parent], h->item[i]) <= 0)
			break;
		int t = h->item[parent];
		h->item[parent] = h->item[i];
		h->item[i] = t;
		i = parent;
	}
}

static int heap_pop(ready_heap *h)
{
	int top = h->item[0];
	h->item[0] = h->item[--h->n];
	for (int i = 0;;) {
		int l = 2 * i + 1, r = l + 1, min = i;
		if (l < h->n && key_cmp(h, h->item[l], h->item[min]) < 0)
			min = l;
		if (r < h->n && key_cmp(h, h->item[r], h->item[min]) < 0)
			min = r;
		if (min == i)
			break;
		int t = h->item[min];
		h->item[min] = h->item[i];
		h->item[i] = t;
		i = min;
	}
	return top;
}

/* Names a node on a cycle: start anywhere unplaced, keep stepping to an
 * unplaced predecessor; after n steps the walk is inside the cycle. */
static void report_cycle(const ir_func *f, const int *indeg, ir_error *err)
{
	int cur = 0;
	while (cur < f->n_nodes && !indeg[cur])
		cur++;
	for (int step = 0; step < f->n_nodes; step++) {
		const ir_node *n = &f->nodes[cur];
		int next = -1;
		for (int k = 0; k < n->n_after && next < 0; k++)
			if (indeg[n->after[k]])
				next = n->after[k];
		for (int k = 0; k < n->n_in && next < 0; k++) {
			int p = f->values[n->in[k]].producer;
			if (p >= 0 && indeg[p])
				next = p;
		}
		for (int k = 0; k < n->n_fused && next < 0; k++)
			for (int j = 0; j < n->fused[k].n_extra && next < 0; j++) {
				int p = f->values[n->fused[k].extra[j]].producer;
				if (p >= 0 && indeg[p])
					next = p;
			}
		if (next < 0)
			break;
		cur = next;
	}
	const ir_node *n = &f->nodes[cur];
	ir_error_set(err, n->loc,
		     "schedule: '%s' has a cycle of data and after edges through %s '%s' (an effect "
		     "order that contradicts the data flow, e.g. a state read used after the write "
		     "it must precede)",
		     f->name, ir_op_name(n->op), n->name);
}

static void permute(ir_module *m, ir_func *f, const int *order)
{
	int n = f->n_nodes;
	int *new_id = calloc((size_t)n + 1, sizeof(int));
	ir_node *nodes = ir_arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof(ir_node));
	if (!new_id)
		abort();
	for (int k = 0; k < n; k++)
		new_id[order[k]] = k;
	for (int k = 0; k < n; k++) {
		nodes[k] = f->nodes[order[k]];
		int na = nodes[k].n_after;
		int *after = na ? ir_arena_alloc(&m->arena, (size_t)na * sizeof(int)) : NULL;
		for (int j = 0; j < na; j++)
			after[j] = new_id[nodes[k].after[j]];
		nodes[k].after = after;
	}
	for (int v = 0; v < f->n_values; v++)
		if (f->values[v].producer >= 0)
			f->values[v].producer = new_id[f->values[v].producer];
	f->nodes = nodes;
	f->cap_nodes = n ? n : 1;
	free(new_id);
}

/* Longest path from a source to each node; false on a cycle. */
static bool compute_depth(const dep_graph *g, int *depth, int *order)
{
	if (dep_graph_topo(g, order) != g->n)
		return false;
	for (int q = 0; q < g->n; q++) {
		int p = order[q];
		for (int k = g->start[p]; k < g->start[p + 1]; k++)
			if (depth[g->succ[k]] < depth[p] + 1)
				depth[g->succ[k]] = depth[p] + 1;
	}
	return true;
}

static void kahn(dep_graph *g, ready_heap *h, int *order)
{
	int placed = 0;
	for (int i = 0; i < g->n; i++)
		if (!g->indeg[i])
			heap_push(h, i);
	while (h->n) {
		int p = heap_pop(h);
		order[placed++] = p;
		for (int k = g->start[p]; k < g->start[p + 1]; k++)
			if (--g->indeg[g->succ[k]] == 0)
				heap_push(h, g->succ[k]);
	}
}

static bool schedule_func(ir_module *m, ir_func *f, ir_error *err)
{
	dep_graph g;
	dep_graph_build(f, &g);
	int *order = calloc((size_t)g.n + 1, sizeof(int));
	int *depth = calloc((size_t)g.n + 1, sizeof(int));
	ready_heap h = {f, depth, 0, calloc((size_t)g.n + 1, sizeof(int))};
	if (!order || !depth || !h.item)
		abort();
	bool ok = compute_depth(&g, depth, order);
	if (ok) {
		kahn(&g, &h, order);
		permute(m, f, order);
	} else {
		/* Kahn stops at the cycle: what is left has in-edges remaining. */
		kahn(&g, &h, order);
		report_cycle(f, g.indeg, err);
	}
	free(h.item);
	free(depth);
	free(order);
	dep_graph_free(&g);
	return ok;
}

bool pass_schedule(ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_funcs; i++)
		if (func_is_live(m, &m->funcs[i]) && !schedule_func(m, &m->funcs[i], err))
			return false;
	return true;
}
