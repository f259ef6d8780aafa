/* pass_fuse_inject_norm: Qwen3.8 Flash's sublayer exit, hc_inject (the
 * residual streams x + g ⊗ y), is read by the next sublayer's entry, whose
 * first op normalises each stream (hc_read's rms_norm, group H). The norm
 * takes the inject in: hc_inject_norm makes the streams (which the next exit
 * still reads) and their norm in one dispatch, each workgroup computing its
 * stream's elements as hc_inject does (the product rounded before the sum)
 * and normalising them as rms_norm does, so both results are the two ops'
 * bit for bit (docs/ops.md). The norm's dispatch and the barrier before it
 * go once per sublayer: a published Qwen3.8 Flash decode step's barriers
 * 1074 -> 978 (one costs about 5 us on an H100,
 * bench/results-h100-qwen3_8b.txt).
 *
 * Conditions: a weighted rms_norm with no epilogue reads the inject's result
 * through reshapes, as [T, n*H] rows (one row a token) in groups of H, one
 * group a stream; the inject's result and the reshapes' but the last are
 * read by nothing else, and every other reader of the last comes after the
 * norm in node order: the fused node, in the norm's place, makes that value
 * (the streams as the norm read them) and the norm's. Every graph: the
 * kernel is rms_norm's with the inject's loads in front, for any step size. */
#include "passes/fuse_common.h"
#include "passes/passes.h"

#include <string.h>

enum { MAX_RESHAPES = 8 };

/* The hc_inject node whose result norm node r reads through reshapes, each
 * value before the norm's operand read by the next alone, or -1; the
 * reshapes in chain[0..*n_chain). */
static int inject_of(const ir_func *f, const func_uses *u, int r, int *chain, int *n_chain)
{
	int v = f->nodes[r].in[0];
	*n_chain = 0;
	for (;;) {
		int p = f->values[v].producer;
		if (p < 0 || f->nodes[p].dead)
			return -1;
		if (f->nodes[p].op == IR_OP_HC_INJECT)
			return p;
		if (f->nodes[p].op != IR_OP_RESHAPE || *n_chain == MAX_RESHAPES)
			return -1;
		chain[(*n_chain)++] = p;
		v = f->nodes[p].in[0];
		if (u->is_output[v] || func_uses_count(u, v) != 1)
			return -1;
	}
}

/* Whether every reader of v but node r comes after r. */
static bool read_after(const func_uses *u, int v, int r)
{
	for (int k = u->start[v]; k < u->start[v + 1]; k++)
		if (u->user[k] < r)
			return false;
	return true;
}

static bool fuse_node(ir_module *m, ir_func *f, const func_uses *u, int r)
{
	const ir_node *n = &f->nodes[r];
	if (n->dead || n->op != IR_OP_RMS_NORM || n->n_in != 2 || n->n_fused)
		return false;
	int chain[MAX_RESHAPES], n_chain, i = inject_of(f, u, r, chain, &n_chain);
	if (i < 0)
		return false;
	const ir_node *inj = &f->nodes[i];
	int x_in = n->in[0], w = n->in[1], y = n->out[0];
	const ir_shape *st = &f->values[inj->out[0]].shape, *x = &f->values[x_in].shape;
	int64_t group = ir_node_attr_int(n, "group", 0);
	if (st->rank != 3 || x->rank != 2 || x->dim[0].coef_T != 1 || x->dim[0].c != 0 || group != st->dim[2].c ||
	    x->dim[1].c != st->dim[1].c * st->dim[2].c || !read_after(u, x_in, r))
		return false;
	int *in = ir_arena_alloc(&m->arena, 4 * sizeof(int)), *out = ir_arena_alloc(&m->arena, 2 * sizeof(int));
	memcpy(in, inj->in, 3 * sizeof(int));
	in[3] = w;
	out[0] = x_in;
	out[1] = y;
	/* the norm's eps and offset; its group is the streams' width */
	ir_attr *attr = ir_arena_alloc(&m->arena, (size_t)(n->n_attr + 1) * sizeof(ir_attr));
	int n_attr = 0;
	for (int k = 0; k < n->n_attr; k++)
		if (strcmp(n->attr[k].name, "group") != 0)
			attr[n_attr++] = n->attr[k];
	ir_node *fz = &f->nodes[r];
	fz->op = IR_OP_HC_INJECT_NORM;
	fz->in = in;
	fz->n_in = 4;
	fz->out = out;
	fz->n_out = 2;
	fz->attr = attr;
	fz->n_attr = n_attr;
	f->values[x_in].producer = r;
	f->values[x_in].producer_out = 0;
	f->values[y].producer_out = 1;
	fuse_move_edges(m, f, i, &r, 1);
	f->nodes[i].dead = true;
	for (int k = 0; k < n_chain; k++) {
		fuse_move_edges(m, f, chain[k], &r, 1);
		f->nodes[chain[k]].dead = true;
	}
	return true;
}

bool pass_fuse_inject_norm(ir_module *m, ir_error *err)
{
	(void)err;
	fuse_each_node(m, fuse_node);
	return true;
}
