/* pass_fuse_elementwise: chains of elementwise ops fold into the epilogue of
 * the dispatch that produces their input: unary ops (sigmoid, softplus,
 * neg, scale, ...) and binary ops whose other operand does not depend on T
 * (a per-channel bias or scale such as dt_bias). Nodes are visited in order,
 * so a chain a -> f(a) -> g(f(a)) lands on a's producer one link at a time.
 * Per-token binary ops are left to fuse_gates and fuse_residual. */
#include "ir/ops.h"
#include "passes/fuse_common.h"
#include "passes/passes.h"

/* The operand of e that carries the per-token tile, or -1. */
static int running_operand(const ir_func *f, const ir_node *n)
{
	const ir_value *out = &f->values[n->out[0]];
	for (int k = 0; k < n->n_in; k++) {
		const ir_value *v = &f->values[n->in[k]];
		if (v->dtype != out->dtype || !ir_shape_eq(&v->shape, &out->shape))
			continue;
		bool others_static = true;
		for (int j = 0; j < n->n_in; j++)
			if (j != k && !fuse_shape_is_static(&f->values[n->in[j]].shape))
				others_static = false;
		if (others_static)
			return k;
	}
	return -1;
}

static bool fuse_node(ir_module *m, ir_func *f, const func_uses *u, int e)
{
	const ir_node *n = &f->nodes[e];
	if (n->dead || !ir_op_is_elementwise(n->op) || n->n_out != 1)
		return false;
	int running = running_operand(f, n);
	if (running < 0)
		return false;
	int p = fuse_epilogue_host(f, u, n->in[running], n);
	if (p < 0)
		return false;
	fuse_epilogue(m, f, p, e, running);
	return true;
}

bool pass_fuse_elementwise(ir_module *m, ir_error *err)
{
	fuse_each_node(m, fuse_node);
	return true;
}
