/* pass_fuse_attention_rope: in the graphs of decode and verification steps
 * (at most FOLD_MAX_T tokens), an attention_blocks whose queries and whose
 * step's keys come from ropes with a per-head rms_norm prologue (Qwen3's
 * q_norm and k_norm, then the rotary embedding) takes both ropes in:
 * attention_rope normalises and rotates each query head where it loads it,
 * computes the step's keys from the projection's rows in every workgroup
 * that scores them, and one workgroup per key stores it in the cache
 * (docs/ops.md). The ropes' dispatch and the barrier behind it go: a
 * decode step's barriers cost about 5 us each on an H100, 219 of them a
 * token on the Qwen3-8B shape (bench/results-h100-qwen3_8b.txt).
 *
 * The cache write moves from the key rope to the attention, which also
 * reads the cache: the state's effects in the graph become a read, then
 * the write (a new in-place state_write marker after the attention node,
 * whose result it stores), and the read's one reader performs the write.
 * That is sound because the kernel reads the cache only below pos and
 * writes rows pos.. (check_effects accepts a read's reader performing the
 * write; order_effects orders nothing against itself).
 *
 * Conditions:
 *   - the query rope's and the key rope's only prologue is an rms_norm over
 *     whole heads with a weight, the two norms' and the two ropes'
 *     attributes are the same, and neither carries an epilogue;
 *   - the query rope's result is read by the attention alone, the key
 *     rope's by its cache's in-place write alone (no reshape between);
 *   - the attention's keys are a state_read of that cache read by the
 *     attention alone, and the graph has no other effect on the cache;
 *   - every entry that runs the graph takes at most FOLD_MAX_T tokens a
 *     step (the kernel stages a workgroup's new keys in shared memory);
 *     graphs shared with prompt entries are copied for the small ones
 *     (passes/entry_graphs.h), so prompts keep their rope dispatches and
 *     attention_rows tiles. */
#include "passes/entry_graphs.h"
#include "passes/fuse_common.h"
#include "passes/passes.h"
#include "passes/state_effects.h"

#include <string.h>

#define FOLD_MAX_T 8

/* The rope node producing value v with the rms_norm prologue alone, or -1. */
static int normed_rope(const ir_func *f, int v)
{
	int p = f->values[v].producer;
	if (p < 0)
		return -1;
	const ir_node *r = &f->nodes[p];
	if (r->dead || r->op != IR_OP_ROPE || r->n_fused != 1 || r->fused[0].op != IR_OP_RMS_NORM ||
	    r->fused[0].pos != IR_FUSE_PROLOGUE || r->fused[0].n_extra != 1)
		return -1;
	return p;
}

static bool attr_same(const ir_attr *a, const ir_attr *b)
{
	if (strcmp(a->name, b->name) || a->kind != b->kind)
		return false;
	switch (a->kind) {
	case IR_ATTR_INT:
		return a->i == b->i;
	case IR_ATTR_FLOAT:
		return a->f == b->f;
	case IR_ATTR_STR:
		return strcmp(a->s, b->s) == 0;
	default:
		return false;
	}
}

static bool attrs_same(const ir_attr *a, int na, const ir_attr *b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (!attr_same(&a[i], &b[i]))
			return false;
	return true;
}

/* Whether the ropes q and k normalise and rotate alike. */
static bool ropes_alike(const ir_node *q, const ir_node *k)
{
	const ir_fused *nq = &q->fused[0], *nk = &k->fused[0];
	return attrs_same(q->attr, q->n_attr, k->attr, k->n_attr) &&
	       attrs_same(nq->attr, nq->n_attr, nk->attr, nk->n_attr);
}

/* The in-place state_write of value v, its only reader, or -1. */
static int cache_write(const ir_func *f, const func_uses *u, int v)
{
	if (u->is_output[v] || func_uses_count(u, v) != 1)
		return -1;
	int w = u->user[u->start[v]];
	const ir_node *n = &f->nodes[w];
	return n->op == IR_OP_STATE_WRITE && n->in_place && !n->ref_local && n->in[0] == v ? w : -1;
}

/* The number of live effect nodes on module state s in f; *write: the
 * first write among them, or -1. */
static int effects_on(const ir_func *f, int s, int *write)
{
	int n = 0;
	*write = -1;
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *e = &f->nodes[i];
		if (e->dead || e->ref_local || e->ref != s || (e->op != IR_OP_STATE_READ && e->op != IR_OP_STATE_WRITE))
			continue;
		n++;
		if (e->op == IR_OP_STATE_WRITE && *write < 0)
			*write = i;
	}
	return n;
}

/* Whether the norm of rope r is over its whole heads. */
static bool whole_heads(const ir_func *f, const ir_node *r)
{
	int64_t group = 0;
	for (int i = 0; i < r->fused[0].n_attr; i++)
		if (strcmp(r->fused[0].attr[i].name, "group") == 0)
			group = r->fused[0].attr[i].i;
	const ir_shape *x = &f->values[r->in[0]].shape;
	return group == 0 || group == x->dim[x->rank - 1].c;
}

typedef struct {
	int rq, rk, w, r; /* the query rope, the key rope, the cache write, its read */
} fold_parts;

/* The parts attention_blocks node a folds, or false. */
static bool find_parts(const ir_func *f, const func_uses *u, int a, fold_parts *fp)
{
	const ir_node *att = &f->nodes[a];
	if (att->dead || att->op != IR_OP_ATTENTION_BLOCKS)
		return false;
	int qr = att->in[0], kc = att->in[1];
	fp->rq = normed_rope(f, qr);
	fp->r = f->values[kc].producer;
	if (fp->rq < 0 || u->is_output[qr] || func_uses_count(u, qr) != 1 || fp->r < 0)
		return false;
	const ir_node *rd = &f->nodes[fp->r];
	/* the cache's other effect: its write, listed before the read, in place
	 * from a rope */
	if (rd->op != IR_OP_STATE_READ || rd->ref_local || u->is_output[kc] || func_uses_count(u, kc) != 1 ||
	    effects_on(f, rd->ref, &fp->w) != 2 || fp->w < 0 || fp->w > fp->r)
		return false;
	int kr = f->nodes[fp->w].in[0];
	fp->rk = normed_rope(f, kr);
	return fp->rk >= 0 && cache_write(f, u, kr) == fp->w && ropes_alike(&f->nodes[fp->rq], &f->nodes[fp->rk]) &&
	       whole_heads(f, &f->nodes[fp->rq]) && whole_heads(f, &f->nodes[fp->rk]);
}

/* attention_rope's attributes: the attention's, the ropes', the norms'
 * eps and offset (as norm_offset). */
static void fold_attrs(ir_module *m, ir_func *f, int a, const ir_node *rope)
{
	const ir_fused *norm = &rope->fused[0];
	for (int i = 0; i < rope->n_attr; i++)
		ir_node_add_attr(m, f, a, &rope->attr[i]);
	for (int i = 0; i < norm->n_attr; i++) {
		ir_attr at = norm->attr[i];
		if (strcmp(at.name, "group") == 0)
			continue;
		if (strcmp(at.name, "offset") == 0)
			at.name = "norm_offset";
		ir_node_add_attr(m, f, a, &at);
	}
}

static bool fold_node(ir_module *m, ir_func *f, const func_uses *u, int a)
{
	fold_parts fp;
	if (!find_parts(f, u, a, &fp))
		return false;
	/* the write's marker moves past the attention, which now makes its value */
	ir_node w = f->nodes[fp.w];
	int w2 = ir_func_add_node(m, f, IR_OP_STATE_WRITE, w.name, w.loc);
	w.n_after = 0; /* fuse_move_edges gives the copy the marker's edges */
	w.after = NULL;
	f->nodes[w2] = w;
	fuse_move_edges(m, f, fp.w, &w2, 1);
	const ir_node *rq = &f->nodes[fp.rq], *rk = &f->nodes[fp.rk];
	int kr = rk->out[0];
	int *in = ir_arena_alloc(&m->arena, 7 * sizeof(int)), *out = ir_arena_alloc(&m->arena, 3 * sizeof(int));
	const ir_node *att = &f->nodes[a];
	in[0] = rq->in[0];
	memcpy(in + 1, att->in + 1, 3 * sizeof(int));
	in[4] = rk->in[0];
	in[5] = rq->fused[0].extra[0];
	in[6] = rk->fused[0].extra[0];
	memcpy(out, att->out, 2 * sizeof(int));
	out[2] = kr;
	fold_attrs(m, f, a, rq);
	ir_node *n = &f->nodes[a];
	n->op = IR_OP_ATTENTION_ROPE;
	n->in = in;
	n->n_in = 7;
	n->out = out;
	n->n_out = 3;
	f->values[kr].producer = a;
	f->values[kr].producer_out = 2;
	int edges[2] = {fp.rq, fp.rk};
	for (int i = 0; i < 2; i++) {
		fuse_move_edges(m, f, edges[i], &a, 1);
		f->nodes[edges[i]].dead = true;
	}
	f->nodes[fp.w].dead = true;
	return true;
}

/* Entries whose steps the kernel's staged keys hold. */
static bool small_steps(const ir_module *m, const ir_entry *e)
{
	(void)m;
	return e->t_max <= FOLD_MAX_T;
}

/* Whether graph f has an attention to fold. */
static bool any_fold(const ir_func *f)
{
	func_uses u;
	func_uses_build(f, &u);
	bool any = false;
	fold_parts fp;
	for (int a = 0; a < f->n_nodes && !any; a++)
		any = find_parts(f, &u, a, &fp);
	func_uses_free(&u);
	return any;
}

bool pass_fuse_attention_rope(ir_module *m, ir_error *err)
{
	(void)err;
	for (int src = 0, n = m->n_funcs; !m->no_fuse_attention_rope && src < n; src++) {
		int first;
		if (!func_is_live(m, &m->funcs[src]) || !any_fold(&m->funcs[src]))
			continue;
		int fi = entry_graph_for(m, src, small_steps, "rope", &first);
		if (fi < 0)
			continue;
		ir_func *f = &m->funcs[fi];
		func_uses u;
		func_uses_build(f, &u);
		bool any = false;
		for (int a = 0, nn = f->n_nodes; a < nn; a++)
			any |= fold_node(m, f, &u, a);
		func_uses_free(&u);
		if (any)
			ir_func_compact(m, f);
	}
	return true;
}
