/* pass_split_moe: every moe_experts node becomes moe_gate_up, which writes
 * the selected experts' activations act [T, k, F] to a new value, then
 * moe_down, which sums their down projections. In one dispatch a token's
 * experts run inside one workgroup, so decode (T = 1) would keep one
 * workgroup busy on the whole GPU; split, the two dispatches spread k*F and
 * H rows over workgroups. The graph keeps the one op (the model's meaning);
 * the split is the compiler's. Runs after fusion (neither half takes a
 * prologue or epilogue; readers of the output fuse it as before). */
#include "passes/passes.h"

#include <stdlib.h>

#include "ir/ops.h"

/* Appends the moe_gate_up half of node nid, its activation value shaped by
 * the op's own shape rule, and turns nid into moe_down; returns the new
 * node's id, or -1 with err set. */
static int split_node(ir_module *m, ir_func *f, int nid, ir_error *err)
{
	ir_node *n = &f->nodes[nid];
	const char *name = n->name;
	int x = n->in[0], ids = n->in[1], w = n->in[2], gate = n->in[3], up = n->in[4], down = n->in[5];
	int layer = n->layer;
	int gu = ir_func_add_node(m, f, IR_OP_MOE_GATE_UP, ir_arena_printf(&m->arena, "%s.gate_up", name), n->loc);
	ir_node *g = &f->nodes[gu];
	g->layer = layer;
	g->n_in = 4;
	g->in = ir_arena_alloc(&m->arena, 4 * sizeof(int));
	g->in[0] = x, g->in[1] = ids, g->in[2] = gate, g->in[3] = up;
	ir_shape shape;
	halo_dtype dtype;
	g->n_out = 1;
	if (!ir_op_infer(m, f, g, &shape, &dtype, err))
		return -1;
	int act = ir_func_add_value(m, f, ir_arena_printf(&m->arena, "%s.act", name), gu, 0);
	f->values[act].shape = shape;
	f->values[act].dtype = dtype;
	f->values[act].shape_known = true;
	g = &f->nodes[gu];
	g->out = ir_arena_alloc(&m->arena, sizeof(int));
	g->out[0] = act;
	n = &f->nodes[nid]; /* the appends may have moved the node array */
	n->op = IR_OP_MOE_DOWN;
	n->in = ir_arena_alloc(&m->arena, 4 * sizeof(int));
	n->n_in = 4;
	n->in[0] = act, n->in[1] = ids, n->in[2] = w, n->in[3] = down;
	return gu;
}

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

bool pass_split_moe(ir_module *m, ir_error *err)
{
	for (int fi = 0; fi < m->n_funcs; fi++) {
		ir_func *f = &m->funcs[fi];
		int n_old = f->n_nodes, n_split = 0;
		int *first_of = malloc((size_t)(n_old + 1) * sizeof(int));
		if (!first_of)
			abort();
		bool ok = true;
		for (int i = 0; ok && i < n_old; i++) {
			bool split = !f->is_block && !f->nodes[i].dead && f->nodes[i].op == IR_OP_MOE_EXPERTS;
			first_of[i] = split ? split_node(m, f, i, err) : -1;
			ok = !split || first_of[i] >= 0;
			n_split += split;
		}
		if (ok && n_split)
			reorder(m, f, first_of, n_old);
		free(first_of);
		if (!ok)
			return false;
	}
	return true;
}
