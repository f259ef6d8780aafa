/* ir_func_compact: drops dead nodes and orphan values, renumbering ids
 * stably so that every later ordering decision stays a function of the IR. */
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

/* Appends the live nodes that dead node d (transitively) had to wait for,
 * so dropping d never drops an ordering edge between two live nodes. */
static void inherit_after(const ir_func *f, int d, const int *node_map, bool *seen,
			  int *list, int *n)
{
	if (seen[d])
		return;
	seen[d] = true;
	const ir_node *dn = &f->nodes[d];
	for (int i = 0; i < dn->n_after; i++) {
		int t = dn->after[i];
		if (t < 0 || t >= f->n_nodes)
			continue;
		if (node_map[t] >= 0) {
			if (!seen[t]) {
				seen[t] = true;
				list[(*n)++] = t;
			}
		} else {
			inherit_after(f, t, node_map, seen, list, n);
		}
	}
}

static void remap_after(ir_module *m, ir_func *f, ir_node *n, const int *node_map)
{
	if (!n->n_after)
		return;
	bool *seen = xcalloc((size_t)f->n_nodes, sizeof(bool));
	int *list = xcalloc((size_t)f->n_nodes, sizeof(int));
	int cnt = 0;
	for (int i = 0; i < n->n_after; i++) {
		int t = n->after[i];
		if (t < 0 || t >= f->n_nodes)
			continue;
		if (node_map[t] >= 0) {
			if (!seen[t]) {
				seen[t] = true;
				list[cnt++] = t;
			}
		} else {
			inherit_after(f, t, node_map, seen, list, &cnt);
		}
	}
	int *after = cnt > n->n_after ? ir_arena_alloc(&m->arena, (size_t)cnt * sizeof(int)) : n->after;
	for (int i = 0; i < cnt; i++)
		after[i] = node_map[list[i]];
	n->after = after;
	n->n_after = cnt;
	free(seen);
	free(list);
}

static void mark_used_values(const ir_func *f, const int *node_map, bool *keep)
{
	for (int i = 0; i < f->n_inputs; i++)
		keep[f->inputs[i]] = true;
	for (int i = 0; i < f->n_outputs; i++)
		keep[f->outputs[i]] = true;
	for (int i = 0; i < f->n_nodes; i++) {
		if (node_map[i] < 0)
			continue;
		const ir_node *n = &f->nodes[i];
		for (int j = 0; j < n->n_in; j++)
			keep[n->in[j]] = true;
		for (int j = 0; j < n->n_out; j++)
			keep[n->out[j]] = true;
		for (int k = 0; k < n->n_fused; k++)
			for (int j = 0; j < n->fused[k].n_extra; j++)
				keep[n->fused[k].extra[j]] = true;
	}
}

static void remap_ids(int *ids, int n, const int *map)
{
	for (int i = 0; i < n; i++)
		ids[i] = map[ids[i]];
}

void ir_func_compact(ir_module *m, ir_func *f)
{
	int *node_map = xcalloc((size_t)f->n_nodes, sizeof(int));
	int n_live = 0;
	for (int i = 0; i < f->n_nodes; i++)
		node_map[i] = f->nodes[i].dead ? -1 : n_live++;

	bool *keep = xcalloc((size_t)f->n_values, sizeof(bool));
	mark_used_values(f, node_map, keep);
	int *val_map = xcalloc((size_t)f->n_values, sizeof(int));
	int n_vals = 0;
	for (int i = 0; i < f->n_values; i++)
		val_map[i] = keep[i] ? n_vals++ : -1;

	for (int i = 0; i < f->n_nodes; i++) {
		ir_node *n = &f->nodes[i];
		if (node_map[i] < 0)
			continue;
		remap_after(m, f, n, node_map);
		remap_ids(n->in, n->n_in, val_map);
		remap_ids(n->out, n->n_out, val_map);
		for (int k = 0; k < n->n_fused; k++)
			remap_ids(n->fused[k].extra, n->fused[k].n_extra, val_map);
	}
	for (int i = 0; i < f->n_nodes; i++)
		if (node_map[i] >= 0 && node_map[i] != i)
			f->nodes[node_map[i]] = f->nodes[i];
	f->n_nodes = n_live;

	for (int i = 0; i < f->n_values; i++) {
		if (val_map[i] < 0)
			continue;
		ir_value v = f->values[i];
		if (v.producer >= 0)
			v.producer = node_map[v.producer];
		if (v.producer < 0)
			v.producer_out = 0;
		f->values[val_map[i]] = v;
	}
	f->n_values = n_vals;
	remap_ids(f->inputs, f->n_inputs, val_map);
	remap_ids(f->outputs, f->n_outputs, val_map);
	free(node_map);
	free(keep);
	free(val_map);
}
