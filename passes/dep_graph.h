/* The dependence graph of a function: an edge p -> i when node i reads a
 * result of p (operand or fused extra) or lists p in its after edges. Used
 * by the scheduler and by the effect checker. */
#ifndef HALO_PASSES_DEP_GRAPH_H
#define HALO_PASSES_DEP_GRAPH_H

#include "ir/ir.h"

typedef struct {
	int n;
	int *start; /* n + 1 offsets into succ */
	int *succ;  /* successors of each node; one entry per edge (duplicates kept) */
	int *indeg; /* number of edges into each node */
} dep_graph;

/* malloc'd; release with dep_graph_free(). */
void dep_graph_build(const ir_func *f, dep_graph *g);
void dep_graph_free(dep_graph *g);

/* Writes a topological order (Kahn, ready nodes taken first-in first-out) into
 * order (room for g->n) and returns how many nodes it placed: fewer than
 * g->n means the rest lie on or behind a cycle. */
int dep_graph_topo(const dep_graph *g, int *order);

#endif
