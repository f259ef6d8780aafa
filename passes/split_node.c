#include "passes/split_node.h"

#include <stdlib.h>

#include "ir/ops.h"

/* Puts node first_of[i] (>= 0) right before node i, keeping everything
 * else in order: node order is program order, and every read must come
 * after its definition. Renumbers producers and after: edges. */
static void reorder(ir_module *m, ir_func *f, const int *first_of, int n_old)
{
	int n = f->n_nodes, k = 0;
	int *order = malloc((size_t)n * sizeof(int)), *map = malloc((size_t)n * sizeof(int));
	if (!order || !map)
		abort();
	for (int i = 0; i < n_old; i++) {
		if (first_of[i] >= 0)
			order[k++] = first_of[i];
		order[k++] = i;
	}
	ir_node *nodes = ir_arena_alloc(&m->arena, (size_t)n * sizeof(ir_node));
	for (int j = 0; j < n; j++) {
		nodes[j] = f->nodes[order[j]];
		map[order[j]] = j;
	}
	for (int j = 0; j < n; j++) {
		/* fresh arrays: an after list may be shared between nodes */
		int *after = nodes[j].n_after ? ir_arena_alloc(&m->arena, (size_t)nodes[j].n_after * sizeof(int)) : NULL;
		for (int e = 0; e < nodes[j].n_after; e++)
			after[e] = map[nodes[j].after[e]];
		nodes[j].after = after;
	}
	for (int v = 0; v < f->n_values; v++)
		if (f->values[v].producer >= 0)
			f->values[v].producer = map[f->values[v].producer];
	f->nodes = nodes;
	f->cap_nodes = n;
	free(order);
	free(map);
}

bool split_nodes(ir_module *m, split_fn split, void *ctx, ir_error *err)
{
	for (int fi = 0; fi < m->n_funcs; fi++) {
		ir_func *f = &m->funcs[fi];
		if (f->is_block)
			continue;
		int n_old = f->n_nodes, n_split = 0;
		int *first_of = malloc((size_t)(n_old + 1) * sizeof(int));
		if (!first_of)
			abort();
		bool ok = true;
		for (int i = 0; ok && i < n_old; i++) {
			first_of[i] = f->nodes[i].dead ? SPLIT_KEEP : split(m, f, i, ctx, err);
			ok = first_of[i] != -1;
			n_split += first_of[i] >= 0;
			if (first_of[i] < 0)
				first_of[i] = -1;
		}
		if (ok && n_split)
			reorder(m, f, first_of, n_old);
		free(first_of);
		if (!ok)
			return false;
	}
	return true;
}

int split_add_output(ir_module *m, ir_func *f, int nid, const char *name, ir_error *err)
{
	ir_shape shape;
	halo_dtype dtype;
	f->nodes[nid].n_out = 1;
	if (!ir_op_infer(m, f, &f->nodes[nid], &shape, &dtype, err))
		return -1;
	int v = ir_func_add_value(m, f, name, nid, 0);
	f->values[v].shape = shape;
	f->values[v].dtype = dtype;
	f->values[v].shape_known = true;
	ir_node *n = &f->nodes[nid];
	n->out = ir_arena_alloc(&m->arena, sizeof(int));
	n->out[0] = v;
	return v;
}
