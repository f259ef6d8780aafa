/* pass_fuse_gates: the two gating patterns of gated FFNs and shared experts.
 *   swiglu(gate, up)      -> epilogue of the producer of up (or of gate),
 *                            the other operand read as an extra;
 *   mul(x, sigmoid(..))   -> epilogue of the producer of x, the gate read as
 *                            an extra; where x has other readers (Qwen3.8
 *                            Flash's hyper-connection read gates the normed
 *                            streams that its matmuls also read), epilogue
 *                            of the gate's own chain, x read as the extra.
 * Either way the product is formed while the producer's tile is still in
 * registers instead of after a round trip through memory (and one dispatch
 * and its barrier fewer). */
#include "ir/ops.h"
#include "passes/fuse_common.h"
#include "passes/passes.h"

/* A gate is a value whose last operation is a sigmoid. */
static bool is_gate(const ir_func *f, int v)
{
	int p = f->values[v].producer;
	if (p < 0)
		return false;
	const ir_node *n = &f->nodes[p];
	if (n->n_fused && n->fused[n->n_fused - 1].pos == IR_FUSE_EPILOGUE)
		return n->fused[n->n_fused - 1].op == IR_OP_SIGMOID;
	return n->op == IR_OP_SIGMOID;
}

static bool same_shape(const ir_func *f, int a, int b)
{
	return f->values[a].dtype == f->values[b].dtype &&
	       ir_shape_eq(&f->values[a].shape, &f->values[b].shape);
}

/* Tries operand `running` of node e as the producer's result. */
static bool try_fuse(ir_module *m, ir_func *f, const func_uses *u, int e, int running)
{
	const ir_node *n = &f->nodes[e];
	int v = n->in[running];
	int p = fuse_epilogue_host(f, u, v, n);
	if (p < 0 || !same_shape(f, v, n->out[0]))
		return false;
	fuse_epilogue(m, f, p, e, running);
	return true;
}

static bool fuse_node(ir_module *m, ir_func *f, const func_uses *u, int e)
{
	const ir_node *n = &f->nodes[e];
	if (n->dead || n->n_in != 2)
		return false;
	if (n->op == IR_OP_SWIGLU)
		return try_fuse(m, f, u, e, 1) || try_fuse(m, f, u, e, 0);
	if (n->op != IR_OP_MUL)
		return false;
	for (int g = 1; g >= 0; g--)
		if (is_gate(f, n->in[g]) && (try_fuse(m, f, u, e, 1 - g) || try_fuse(m, f, u, e, g)))
			return true;
	return false;
}

bool pass_fuse_gates(ir_module *m, ir_error *err)
{
	fuse_each_node(m, fuse_node);
	return true;
}
