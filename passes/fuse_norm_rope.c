/* pass_fuse_norm_rope: a per-head rms_norm whose one reader is a rope
 * becomes the rope's prologue (Qwen3's q_norm and k_norm before the rotary
 * embedding, in every attention layer of the Qwen families).
 *
 * In decode both are dispatches of a few microseconds over a few KB, paid
 * per layer for q and for k (on the H200, 4.3 and 5.2 us a call for the
 * norms of the Qwen3-8B shape: bench/results-h200-qwen3_8b.txt). The rope
 * kernel with the prologue normalises a head in one workgroup, with the
 * rms_norm kernel's reduction, and rotates it: one dispatch, and the
 * normalised head is never written out. The norm must be over whole rows
 * of the rope's head dim (group 0 or D) with a weight of D values; its
 * result must be read by the rope alone. */
#include "passes/fuse_common.h"
#include "passes/passes.h"

static bool fuse_node(ir_module *m, ir_func *f, const func_uses *u, int e)
{
	const ir_node *rope = &f->nodes[e];
	if (rope->dead || rope->op != IR_OP_ROPE || rope->n_fused || rope->n_in != 1)
		return false;
	int v = rope->in[0], p = f->values[v].producer;
	if (p < 0 || u->is_output[v] || func_uses_count(u, v) != 1)
		return false;
	const ir_node *norm = &f->nodes[p];
	const ir_shape *x = &f->values[v].shape, *w = norm->n_in == 2 ? &f->values[norm->in[1]].shape : NULL;
	if (norm->op != IR_OP_RMS_NORM || norm->n_fused || !w || w->rank != 1 || x->rank < 1 ||
	    !ir_dim_eq(w->dim[0], x->dim[x->rank - 1]))
		return false;
	int64_t group = ir_node_attr_int(norm, "group", 0);
	if (group != 0 && group != w->dim[0].c)
		return false;
	ir_fused *fz = ir_arena_alloc(&m->arena, sizeof(ir_fused));
	int *extra = ir_arena_alloc(&m->arena, sizeof(int));
	extra[0] = norm->in[1];
	*fz = (ir_fused){.op = IR_OP_RMS_NORM, .pos = IR_FUSE_PROLOGUE, .n_attr = norm->n_attr, .attr = norm->attr,
			 .n_extra = 1, .extra = extra, .name = f->values[v].name};
	fuse_move_edges(m, f, p, &e, 1);
	ir_node *r = &f->nodes[e];
	int *in = ir_arena_alloc(&m->arena, sizeof(int)); /* operand lists may be shared */
	in[0] = f->nodes[p].in[0];
	r->in = in;
	r->fused = fz;
	r->n_fused = 1;
	f->nodes[p].dead = true;
	return true;
}

bool pass_fuse_norm_rope(ir_module *m, ir_error *err)
{
	(void)err;
	fuse_each_node(m, fuse_node);
	return true;
}
