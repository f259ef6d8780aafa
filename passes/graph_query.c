/* Graph queries shared by the passes (see graph_query.h). */
#include "passes/graph_query.h"

#include <stdlib.h>

int node_n_reads(const ir_node *n)
{
	int k = n->n_in;
	for (int i = 0; i < n->n_fused; i++)
		k += n->fused[i].n_extra;
	return k;
}

int node_read(const ir_node *n, int k)
{
	if (k < n->n_in)
		return n->in[k];
	k -= n->n_in;
	for (int i = 0; i < n->n_fused; i++) {
		if (k < n->fused[i].n_extra)
			return n->fused[i].extra[k];
		k -= n->fused[i].n_extra;
	}
	return -1;
}

bool node_is_view(const ir_node *n)
{
	return n->op == IR_OP_WEIGHT || n->op == IR_OP_STATE_READ || n->op == IR_OP_RESHAPE ||
	       (n->op == IR_OP_STATE_WRITE && n->in_place);
}

bool func_is_live(const ir_module *m, const ir_func *f)
{
	return !m->expanded || !f->is_block;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

void func_uses_build(const ir_func *f, func_uses *u)
{
	u->n_values = f->n_values;
	u->start = xcalloc((size_t)f->n_values + 1, sizeof(int));
	u->is_output = xcalloc((size_t)f->n_values, sizeof(bool));
	for (int i = 0; i < f->n_outputs; i++)
		u->is_output[f->outputs[i]] = true;
	for (int i = 0; i < f->n_nodes; i++) {
		if (f->nodes[i].dead)
			continue;
		for (int k = 0; k < node_n_reads(&f->nodes[i]); k++)
			u->start[node_read(&f->nodes[i], k) + 1]++;
	}
	for (int v = 0; v < f->n_values; v++)
		u->start[v + 1] += u->start[v];
	u->user = xcalloc((size_t)u->start[f->n_values], sizeof(int));
	int *fill = xcalloc((size_t)f->n_values, sizeof(int));
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		if (n->dead)
			continue;
		for (int k = 0; k < node_n_reads(n); k++) {
			int v = node_read(n, k);
			u->user[u->start[v] + fill[v]++] = i;
		}
	}
	free(fill);
}

void func_uses_free(func_uses *u)
{
	free(u->start);
	free(u->user);
	free(u->is_output);
	*u = (func_uses){0};
}

int func_uses_count(const func_uses *u, int v)
{
	return u->start[v + 1] - u->start[v];
}
