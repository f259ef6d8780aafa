/* pass_fuse_residual: add(x, branch) where both operands are per-token
 * activations of the result's shape (the residual stream plus a block's
 * output, or two branches being summed) becomes an epilogue of the
 * producer of one operand, the other read as an extra. The second operand
 * is tried first: in the model files it is the branch just computed, while
 * the first is the stream that has long been in memory. */
#include "passes/fuse_common.h"
#include "passes/passes.h"

static bool is_activation_of(const ir_func *f, int v, int like)
{
	const ir_value *a = &f->values[v], *b = &f->values[like];
	return a->dtype == b->dtype && ir_shape_eq(&a->shape, &b->shape) &&
	       !fuse_shape_is_static(&a->shape);
}

static bool fuse_node(ir_module *m, ir_func *f, const func_uses *u, int e)
{
	const ir_node *n = &f->nodes[e];
	if (n->dead || n->op != IR_OP_ADD || n->n_in != 2 || !is_activation_of(f, n->in[0], n->out[0]) ||
	    !is_activation_of(f, n->in[1], n->out[0]))
		return false;
	for (int running = 1; running >= 0; running--) {
		int p = fuse_epilogue_host(f, u, n->in[running], n);
		if (p >= 0) {
			fuse_epilogue(m, f, p, e, running);
			return true;
		}
	}
	return false;
}

bool pass_fuse_residual(ir_module *m, ir_error *err)
{
	fuse_each_node(m, fuse_node);
	return true;
}
