/* The dependence graph of a function (see dep_graph.h). */
#include "passes/dep_graph.h"

#include <stdlib.h>

#include "passes/graph_query.h"

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

/* Calls visit(p, i) for every edge p -> i. */
static void for_each_edge(const ir_func *f, void (*visit)(dep_graph *, int, int), dep_graph *g)
{
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		for (int k = 0; k < node_n_reads(n); k++) {
			int p = f->values[node_read(n, k)].producer;
			if (p >= 0)
				visit(g, p, i);
		}
		for (int k = 0; k < n->n_after; k++)
			visit(g, n->after[k], i);
	}
}

static void count_edge(dep_graph *g, int p, int i)
{
	g->start[p + 1]++;
	g->indeg[i]++;
}

static void fill_edge(dep_graph *g, int p, int i)
{
	/* start[p] is advanced while filling and shifted back afterwards. */
	g->succ[g->start[p]++] = i;
}

void dep_graph_build(const ir_func *f, dep_graph *g)
{
	int n = f->n_nodes;
	g->n = n;
	g->start = xcalloc((size_t)n + 1, sizeof(int));
	g->indeg = xcalloc((size_t)n, sizeof(int));
	for_each_edge(f, count_edge, g);
	for (int i = 0; i < n; i++)
		g->start[i + 1] += g->start[i];
	g->succ = xcalloc((size_t)g->start[n], sizeof(int));
	for_each_edge(f, fill_edge, g);
	for (int i = n; i > 0; i--)
		g->start[i] = g->start[i - 1];
	g->start[0] = 0;
}

void dep_graph_free(dep_graph *g)
{
	free(g->start);
	free(g->succ);
	free(g->indeg);
	*g = (dep_graph){0};
}

int dep_graph_topo(const dep_graph *g, int *order)
{
	int *indeg = xcalloc((size_t)g->n, sizeof(int));
	int tail = 0;
	for (int i = 0; i < g->n; i++) {
		indeg[i] = g->indeg[i];
		if (!indeg[i])
			order[tail++] = i;
	}
	for (int head = 0; head < tail; head++) {
		int p = order[head];
		for (int k = g->start[p]; k < g->start[p + 1]; k++)
			if (--indeg[g->succ[k]] == 0)
				order[tail++] = g->succ[k];
	}
	free(indeg);
	return tail;
}
