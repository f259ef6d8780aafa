/* Shared fusion mechanics (see fuse_common.h). */
#include "passes/fuse_common.h"

#include <string.h>

#include "ir/ops.h"
#include "kernels/op_table.h"

int fuse_epilogue_host(const ir_func *f, const func_uses *u, int v, const ir_node *e)
{
	int p = f->values[v].producer;
	if (p < 0 || u->is_output[v] || func_uses_count(u, v) != 1)
		return -1;
	const ir_node *n = &f->nodes[p];
	if (n->dead || n->n_out != 1 || !ir_op_takes_epilogue(n->op))
		return -1;
	int epi = 1 + e->n_fused; /* e and the epilogue it carries */
	for (int k = 0; k < n->n_fused; k++)
		epi += n->fused[k].pos == IR_FUSE_EPILOGUE;
	return epi <= HALO_MAX_EPILOGUE ? p : -1;
}

bool fuse_shape_is_static(const ir_shape *s)
{
	for (int i = 0; i < s->rank; i++)
		if (s->dim[i].coef_T != 0)
			return false;
	return true;
}

static int *append_ids(ir_module *m, const int *a, int na, const int *b, int nb, int skip)
{
	int *out = ir_arena_alloc(&m->arena, (size_t)(na + nb + 1) * sizeof(int));
	int n = 0;
	for (int i = 0; i < na; i++)
		out[n++] = a[i];
	for (int i = 0; i < nb; i++)
		if (b[i] != skip)
			out[n++] = b[i];
	return out;
}

/* The after list of node i with every edge to `from` replaced by edges to
 * each node of to (none to i itself). */
static void redirect_edges(ir_module *m, ir_node *n, int i, int from, const int *to, int n_to)
{
	int *after = ir_arena_alloc(&m->arena, (size_t)(n->n_after + n_to) * sizeof(int));
	int cnt = 0;
	for (int k = 0; k < n->n_after; k++)
		if (n->after[k] != from)
			after[cnt++] = n->after[k];
	for (int t = 0; t < n_to; t++)
		if (to[t] != i)
			after[cnt++] = to[t];
	n->after = after;
	n->n_after = cnt;
}

void fuse_move_edges(ir_module *m, ir_func *f, int from, const int *to, int n_to)
{
	const ir_node *src = &f->nodes[from];
	for (int t = 0; t < n_to && src->n_after; t++) {
		ir_node *dst = &f->nodes[to[t]];
		int skip = to[t];
		int kept = 0;
		for (int k = 0; k < src->n_after; k++)
			kept += src->after[k] != skip;
		dst->after = append_ids(m, dst->after, dst->n_after, src->after, src->n_after, skip);
		dst->n_after += kept;
	}
	for (int i = 0; i < f->n_nodes; i++) {
		ir_node *n = &f->nodes[i];
		for (int k = 0; k < n->n_after; k++) {
			if (n->after[k] == from) {
				redirect_edges(m, n, i, from, to, n_to);
				break;
			}
		}
	}
}

void fuse_epilogue(ir_module *m, ir_func *f, int p, int e, int running)
{
	fuse_move_edges(m, f, p, &e, 1);
	const ir_node *en = &f->nodes[e];
	ir_node host = f->nodes[p];
	int n_new = 1 + en->n_fused;
	ir_fused *fz = ir_arena_alloc(&m->arena, (size_t)(host.n_fused + n_new) * sizeof(ir_fused));
	if (host.n_fused)
		memcpy(fz, host.fused, (size_t)host.n_fused * sizeof(ir_fused));
	ir_fused *main = &fz[host.n_fused];
	*main = (ir_fused){.op = en->op,
			   .pos = IR_FUSE_EPILOGUE,
			   .n_attr = en->n_attr,
			   .attr = en->attr,
			   .operand = running,
			   .name = f->values[en->out[0]].name};
	main->extra = ir_arena_alloc(&m->arena, (size_t)en->n_in * sizeof(int));
	for (int k = 0; k < en->n_in; k++)
		if (k != running)
			main->extra[main->n_extra++] = en->in[k];
	if (en->n_fused)
		memcpy(main + 1, en->fused, (size_t)en->n_fused * sizeof(ir_fused));
	host.fused = fz;
	host.n_fused += n_new;
	host.out[0] = en->out[0];
	host.n_after = en->n_after;
	host.after = en->after;
	/* The combined node takes e's slot, where every extra is already
	 * defined, so node order stays a topological order of the data. */
	f->nodes[e] = host;
	f->nodes[p].dead = true;
	f->values[host.out[0]].producer = e;
	f->values[host.out[0]].producer_out = 0;
}

void fuse_each_node(ir_module *m, fuse_node_fn fuse_node)
{
	for (int i = 0; i < m->n_funcs; i++) {
		ir_func *f = &m->funcs[i];
		if (!func_is_live(m, f))
			continue;
		func_uses u;
		func_uses_build(f, &u);
		bool any = false;
		for (int e = 0; e < f->n_nodes; e++)
			any |= fuse_node(m, f, &u, e);
		func_uses_free(&u);
		if (any)
			ir_func_compact(m, f);
	}
}
