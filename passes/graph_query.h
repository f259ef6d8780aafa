/* Read-only questions passes ask about a function's graph: what a node reads
 * (operands and fused extras), which nodes are dispatches, who consumes a
 * value. Nothing here changes the IR. */
#ifndef HALO_PASSES_GRAPH_QUERY_H
#define HALO_PASSES_GRAPH_QUERY_H

#include <stdbool.h>

#include "ir/ir.h"

/* Every value a node reads, in a fixed order: its operands, then each fused
 * sub-op's extra operands in fused-list order. */
int node_n_reads(const ir_node *n);
int node_read(const ir_node *n, int k); /* 0 <= k < node_n_reads(n) */

/* Views do no work and own no memory: a weight names a checkpoint tensor,
 * state_read names the state buffer, reshape reinterprets its input, an
 * in-place state_write marks rows its value's producer already stored.
 * Every other node is one dispatch. */
bool node_is_view(const ir_node *n);

/* The graph functions a module still runs: every function before
 * expand_blocks, only non-block functions after it. */
bool func_is_live(const ir_module *m, const ir_func *f);

/* Consumers of each value of a function, one entry per read (a node reading
 * a value twice is listed twice), in ascending node order; dead nodes are skipped. Built in malloc'd
 * memory owned by the struct; release with func_uses_free(). Stale once the
 * function's nodes change. */
typedef struct {
	int n_values;
	int *start;     /* n_values + 1 offsets into user */
	int *user;      /* node ids */
	bool *is_output; /* per value: listed in the function's outputs */
} func_uses;

void func_uses_build(const ir_func *f, func_uses *u);
void func_uses_free(func_uses *u);
int func_uses_count(const func_uses *u, int v);

#endif
