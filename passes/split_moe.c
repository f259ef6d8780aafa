/* pass_split_moe: every moe_experts node becomes moe_gate_up, which writes
 * the selected experts' activations act [T, k, F] to a new value, then
 * moe_down, which sums their down projections. In one dispatch a token's
 * experts run inside one workgroup, so decode (T = 1) would keep one
 * workgroup busy on the whole GPU; split, the two dispatches spread k*F and
 * H rows over workgroups. The graph keeps the one op (the model's meaning);
 * the split is the compiler's. Runs after fusion (neither half takes a
 * prologue or epilogue; readers of the output fuse it as before). The
 * node's attributes (limit, DeepSeek V4's clamp of the activations) go to
 * moe_gate_up, which applies them; moe_down has none. */
#include "passes/passes.h"

#include "passes/split_node.h"

/* Appends the moe_gate_up half of a moe_experts node, its activation value
 * shaped by the op's own shape rule, and turns the node into moe_down. */
static int split_moe(ir_module *m, ir_func *f, int nid, void *ctx, ir_error *err)
{
	(void)ctx;
	ir_node *n = &f->nodes[nid];
	if (n->op != IR_OP_MOE_EXPERTS)
		return SPLIT_KEEP;
	const char *name = n->name;
	int x = n->in[0], ids = n->in[1], w = n->in[2], gate = n->in[3], up = n->in[4], down = n->in[5];
	int layer = n->layer;
	int gu = ir_func_add_node(m, f, IR_OP_MOE_GATE_UP, ir_arena_printf(&m->arena, "%s.gate_up", name), n->loc);
	ir_node *g = &f->nodes[gu];
	g->layer = layer;
	g->n_in = 4;
	g->in = ir_arena_alloc(&m->arena, 4 * sizeof(int));
	g->in[0] = x, g->in[1] = ids, g->in[2] = gate, g->in[3] = up;
	g->attr = n->attr;
	g->n_attr = n->n_attr;
	int act = split_add_output(m, f, gu, ir_arena_printf(&m->arena, "%s.act", name), err);
	if (act < 0)
		return -1;
	n = &f->nodes[nid]; /* the appends may have moved the node array */
	n->op = IR_OP_MOE_DOWN;
	n->attr = NULL;
	n->n_attr = 0;
	n->in = ir_arena_alloc(&m->arena, 4 * sizeof(int));
	n->n_in = 4;
	n->in[0] = act, n->in[1] = ids, n->in[2] = w, n->in[3] = down;
	return gu;
}

bool pass_split_moe(ir_module *m, ir_error *err)
{
	return split_nodes(m, split_moe, NULL, err);
}
