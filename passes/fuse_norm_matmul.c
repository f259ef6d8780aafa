/* pass_fuse_norm_matmul: an rms_norm whose result feeds only matmuls (as
 * their activation operand) is recomputed in each matmul's prologue instead
 * of being written out and read back, when its readers' weights are small.
 * The norm is recorded in every consumer; a norm with any other reader stays
 * a dispatch of its own, since its result has to exist in memory anyway.
 *
 * Why only small ones: a prologue makes every lane of a decode matvec load
 * the norm weight beside x for each weight chunk it streams, which on the
 * H200 cost 25-40% of the matvec's time (bench/results-h200-tune.txt: the
 * lm_head 286 us bare in matvec_bench against 398 us with the prologue in
 * the model, the 4096 x 12288 gate 30 us against 42 us), while a norm of its
 * own costs one small dispatch (about 4 us) and is computed once for all
 * its readers. The two meet near FUSE_NORM_MAX_WEIGHTS weight elements over
 * all readers (35% of streaming 25 M f16 elements at 4.4 TB/s is 4 us). */
#include "passes/fuse_common.h"
#include "passes/passes.h"

#include <stdlib.h>

#define FUSE_NORM_MAX_WEIGHTS ((int64_t)24 << 20)

/* The weight elements the readers of v stream per step. */
static int64_t reader_weights(const ir_func *f, const func_uses *u, int v)
{
	int64_t total = 0;
	for (int k = u->start[v]; k < u->start[v + 1]; k++)
		total += ir_shape_numel(&f->values[f->nodes[u->user[k]].in[1]].shape, 1);
	return total;
}

static bool only_matmul_readers(const ir_func *f, const func_uses *u, int v)
{
	if (u->is_output[v] || func_uses_count(u, v) == 0)
		return false;
	for (int k = u->start[v]; k < u->start[v + 1]; k++) {
		const ir_node *c = &f->nodes[u->user[k]];
		if (c->op != IR_OP_MATMUL || c->in[0] != v || c->in[1] == v || c->n_fused)
			return false;
	}
	return true;
}

static void add_prologue(ir_module *m, ir_func *f, int c, const ir_node *norm)
{
	ir_node *mm = &f->nodes[c];
	ir_fused *fz = ir_arena_alloc(&m->arena, sizeof(ir_fused));
	*fz = (ir_fused){.op = norm->op,
			 .pos = IR_FUSE_PROLOGUE,
			 .n_attr = norm->n_attr,
			 .attr = norm->attr,
			 .n_extra = 1,
			 .extra = ir_arena_alloc(&m->arena, sizeof(int)),
			 .operand = 0,
			 .name = f->values[norm->out[0]].name};
	fz->extra[0] = norm->in[1];
	mm->fused = fz;
	mm->n_fused = 1;
	mm->in[0] = norm->in[0];
}

static void fuse_func(ir_module *m, ir_func *f)
{
	func_uses u;
	func_uses_build(f, &u);
	bool any = false;
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		if (n->op != IR_OP_RMS_NORM || n->dead || n->n_in != 2 ||
		    !only_matmul_readers(f, &u, n->out[0]) || reader_weights(f, &u, n->out[0]) > FUSE_NORM_MAX_WEIGHTS)
			continue;
		int v = n->out[0];
		int n_users = func_uses_count(&u, v);
		const int *users = &u.user[u.start[v]];
		fuse_move_edges(m, f, i, users, n_users);
		for (int k = 0; k < n_users; k++)
			add_prologue(m, f, users[k], &f->nodes[i]);
		f->nodes[i].dead = true;
		any = true;
	}
	func_uses_free(&u);
	if (any)
		ir_func_compact(m, f);
}

bool pass_fuse_norm_matmul(ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_funcs; i++)
		if (func_is_live(m, &m->funcs[i]))
			fuse_func(m, &m->funcs[i]);
	return true;
}
