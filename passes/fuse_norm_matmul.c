/* pass_fuse_norm_matmul: an rms_norm whose result feeds only matmuls (as
 * their activation operand) is recomputed in each matmul's prologue instead
 * of being written out and read back. The norm is recorded in every
 * consumer; a norm with any other reader stays a dispatch of its own, since
 * its result has to exist in memory anyway.
 *
 * Folded: rms_norm(x) * g feeding W is (x / rms(x)) times W with column k
 * scaled by g[k] (+ the norm's offset), so where every reader's weight is a
 * per-layer matrix that every read normalises with g, the norm weight is
 * folded into the stored weights (ir_weight.folded; the converter
 * multiplies) and the
 * prologue only normalises: the kernels sum x^2 beside the dot product and
 * scale once, reading nothing more than a bare matmul. Such a norm is fused
 * whatever the weights' size. Not under --quant (m->no_fold_norms): a
 * block's scale would carry the norm's per-channel spread.
 *
 * Unweighted (rms_norm with no weight operand: DeepSeek V4's mHC input,
 * one RMS over all streams) is the folded case with nothing to fold: the
 * prologue only normalises, whatever the readers' size, and no weight
 * changes.
 *
 * Unfolded, only for small readers: the prologue makes every lane of a
 * decode matvec load the norm weight beside x for each weight chunk it
 * streams, which on the H200 cost 25-40% of the matvec's time
 * (bench/results-h200-tune.txt: the lm_head 286 us bare in matvec_bench
 * against 398 us with the prologue in the model, the 4096 x 12288 gate 30 us
 * against 42 us), while a norm of its own costs one small dispatch (about
 * 4 us) and is computed once for all its readers. The two meet near
 * FUSE_NORM_MAX_WEIGHTS weight elements over all readers (35% of streaming
 * 25 M f16 elements at 4.4 TB/s is 4 us). With int8 activations
 * (m->int8_max_rows) the decode and verification matvecs stage x once per
 * workgroup, rounding it to int8 codes, and multiply the norm weight in
 * there, once per element of x and not per weight chunk: the prologue is
 * then nearly free at any size, and every large reader of such a bundle is
 * one (--act-quant q8 takes q8_0 and q4_k, which hold every linear weight
 * and the head). So the graphs of the entries of at most int8_max_rows
 * tokens a step (a copy of a graph they share with the prompt entries,
 * passes/entry_graphs.h) fuse the norm whatever its readers' size; the
 * prompt's keep the norm a dispatch (its unfolded prologue in the prompt's
 * matmuls cost pp512 8.5%, where the matvecs gained 7% of decode: H100,
 * bench/results-quant.txt). */
#include "passes/entry_graphs.h"
#include "passes/fuse_common.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

#define FUSE_NORM_MAX_WEIGHTS ((int64_t)24 << 20)

/* The weight elements the readers of v stream per step. */
static int64_t reader_weights(const ir_func *f, const func_uses *u, int v)
{
	int64_t total = 0;
	for (int k = u->start[v]; k < u->start[v + 1]; k++)
		total += ir_shape_numel(&f->values[f->nodes[u->user[k]].in[1]].shape, 1);
	return total;
}

/* A grouped matmul (attribute groups) reads x as groups of K: neither its
 * kernels' prologue nor a fold into its [N, K] weight normalises a whole
 * row of x, so it is no fusing reader. */
static bool only_matmul_readers(const ir_func *f, const func_uses *u, int v)
{
	if (u->is_output[v] || func_uses_count(u, v) == 0)
		return false;
	for (int k = u->start[v]; k < u->start[v + 1]; k++) {
		const ir_node *c = &f->nodes[u->user[k]];
		if (c->op != IR_OP_MATMUL || c->in[0] != v || c->in[1] == v || c->n_fused ||
		    ir_node_attr_int(c, "groups", 1) > 1)
			return false;
	}
	return true;
}

/* The module weight that value v of f is, or -1 (a computed value, or a
 * block-local table). */
static int module_weight(const ir_func *f, int v)
{
	int p = f->values[v].producer;
	if (p < 0 || f->nodes[p].op != IR_OP_WEIGHT || f->nodes[p].ref_local)
		return -1;
	return f->nodes[p].ref;
}

/* What a module weight may be folded with: FOLD_UNREAD, FOLD_NONE, or
 * the module id of the one norm weight (with one offset) that every read
 * of it, in every live function, normalises its input with. */
enum { FOLD_UNREAD = -1, FOLD_NONE = -2 };

typedef struct {
	int *norm;   /* per module weight */
	int *offset;
} fold_plan;

static bool plain_transform(const ir_weight *w)
{
	return !w->transform || strcmp(w->transform, "none") == 0 || strcmp(w->transform, "offset1") == 0;
}

/* The module norm weight that matmul mm's input is normalised by, if its
 * rms_norm (over whole rows, of a module vector of K) can become mm's
 * prologue: FOLD_NONE otherwise. */
static int norm_of_input(const ir_module *m, const ir_func *f, const func_uses *u, const ir_node *mm)
{
	int p = f->values[mm->in[0]].producer;
	const ir_node *norm = p >= 0 ? &f->nodes[p] : NULL;
	if (!norm || norm->op != IR_OP_RMS_NORM || norm->n_in != 2 || !only_matmul_readers(f, u, norm->out[0]))
		return FOLD_NONE;
	int g = module_weight(f, norm->in[1]);
	if (g < 0 || m->weights[g].shape.rank != 1)
		return FOLD_NONE;
	int64_t group = ir_node_attr_int(norm, "group", 0);
	return group == 0 || group == m->weights[g].shape.dim[0].c ? g : FOLD_NONE;
}

/* One read of module weight w (value v of f) by node user (-1: a function
 * output). */
static void note_read(const ir_module *m, const ir_func *f, const func_uses *u, int w, int v, int user,
		      fold_plan *fp)
{
	const ir_node *mm = user >= 0 ? &f->nodes[user] : NULL;
	const ir_weight *d = &m->weights[w];
	int g = FOLD_NONE, off = 0;
	if (mm && mm->op == IR_OP_MATMUL && mm->n_fused == 0 && mm->in[1] == v && mm->in[0] != v &&
	    d->layer >= 0 && !d->hf_fallback && plain_transform(d) && d->shape.rank == 2) {
		g = norm_of_input(m, f, u, mm);
		if (g >= 0 && m->weights[g].shape.dim[0].c != d->shape.dim[1].c)
			g = FOLD_NONE;
		if (g >= 0)
			off = (int)ir_node_attr_int(&f->nodes[f->values[mm->in[0]].producer], "offset", 0);
	}
	if (fp->norm[w] == FOLD_UNREAD) {
		fp->norm[w] = g;
		fp->offset[w] = off;
	} else if (fp->norm[w] != g || fp->offset[w] != off) {
		fp->norm[w] = FOLD_NONE;
	}
}

/* Calls fn on every node of every live function, with the function's uses. */
typedef void (*node_visit_fn)(const ir_module *m, const ir_func *f, const func_uses *u, int n, void *ctx);

static void visit_live_nodes(const ir_module *m, node_visit_fn fn, void *ctx)
{
	for (int i = 0; i < m->n_funcs; i++) {
		const ir_func *f = &m->funcs[i];
		if (!func_is_live(m, f))
			continue;
		func_uses u;
		func_uses_build(f, &u);
		for (int n = 0; n < f->n_nodes; n++)
			if (!f->nodes[n].dead)
				fn(m, f, &u, n, ctx);
		func_uses_free(&u);
	}
}

/* Every read of a module WEIGHT node's value, noted in the plan. */
static void note_weight_reads(const ir_module *m, const ir_func *f, const func_uses *u, int n, void *ctx)
{
	const ir_node *wn = &f->nodes[n];
	if (wn->op != IR_OP_WEIGHT || wn->ref_local || wn->ref < 0 || wn->ref >= m->n_weights)
		return;
	int v = wn->out[0];
	for (int k = u->start[v]; k < u->start[v + 1]; k++)
		note_read(m, f, u, wn->ref, v, u->user[k], ctx);
	if (u->is_output[v])
		note_read(m, f, u, wn->ref, v, -1, ctx);
}

/* Which module weights may be folded, from every read in every live
 * function (entries of several sizes, prefill_last, draft heads read the
 * same weights). false when out of memory. */
static bool plan_folds(const ir_module *m, fold_plan *fp)
{
	fp->norm = malloc(((size_t)m->n_weights + 1) * sizeof(int));
	fp->offset = calloc((size_t)m->n_weights + 1, sizeof(int));
	if (!fp->norm || !fp->offset)
		return false;
	for (int i = 0; i < m->n_weights; i++)
		fp->norm[i] = m->no_fold_norms || m->weights[i].folded ? FOLD_NONE : FOLD_UNREAD;
	visit_live_nodes(m, note_weight_reads, fp);
	return true;
}

/* Whether norm can be folded into every reader's weights: each is an
 * [N, K] per-layer matrix that every read normalises with this norm weight
 * and offset, taken from the checkpoint as stored (no fallback name: a
 * tied lm_head shares the embedding's bytes, which a fold would double).
 * Module-level matrices (the head) are what a draft head shares with the
 * target: folding them only when no draft is compiled would make the
 * target's bits depend on --mtp. */
static bool foldable(const ir_func *f, const func_uses *u, const ir_node *norm, const fold_plan *fp)
{
	int g = module_weight(f, norm->in[1]), off = (int)ir_node_attr_int(norm, "offset", 0);
	int v = norm->out[0];
	for (int k = u->start[v]; k < u->start[v + 1]; k++) {
		int w = module_weight(f, f->nodes[u->user[k]].in[1]);
		if (g < 0 || w < 0 || fp->norm[w] != g || fp->offset[w] != off)
			return false;
	}
	return true;
}

typedef struct {
	fold_plan *fp;
	bool changed;
} settle_ctx;

/* A norm node that cannot fold: none of its readers' weights may. */
static void unfold_readers(const ir_module *m, const ir_func *f, const func_uses *u, int n, void *ctx)
{
	settle_ctx *sc = ctx;
	const ir_node *norm = &f->nodes[n];
	(void)m;
	if (norm->op != IR_OP_RMS_NORM || norm->n_in != 2 || !only_matmul_readers(f, u, norm->out[0]) ||
	    foldable(f, u, norm, sc->fp))
		return;
	int v = norm->out[0];
	for (int k = u->start[v]; k < u->start[v + 1]; k++) {
		int w = module_weight(f, f->nodes[u->user[k]].in[1]);
		if (w >= 0 && sc->fp->norm[w] >= 0) {
			sc->fp->norm[w] = FOLD_NONE;
			sc->changed = true;
		}
	}
}

/* A norm is folded only when all its readers' weights are, so a weight
 * whose norm has a reader that cannot fold is not folded either: its other
 * reads (another entry's graph) would then find it folded under a norm that
 * still applies its weight. Repeats until nothing changes. */
static void settle_folds(const ir_module *m, fold_plan *fp)
{
	settle_ctx sc = {fp, true};
	while (sc.changed) {
		sc.changed = false;
		visit_live_nodes(m, unfold_readers, &sc);
	}
}

/* The prologue's attributes: the norm's, less its offset once folded (the
 * weights carry it). */
static void prologue_attrs(ir_module *m, const ir_node *norm, bool fold, ir_fused *fz)
{
	fz->n_attr = 0;
	fz->attr = ir_arena_alloc(&m->arena, (size_t)(norm->n_attr + 1) * sizeof(ir_attr));
	for (int i = 0; i < norm->n_attr; i++)
		if (!fold || strcmp(norm->attr[i].name, "offset") != 0)
			fz->attr[fz->n_attr++] = norm->attr[i];
}

/* Makes norm matmul c's prologue; bare (folded, or unweighted), it takes
 * no norm weight operand, and a folded one's weight records the fold. */
static void add_prologue(ir_module *m, ir_func *f, int c, const ir_node *norm, bool bare)
{
	ir_node *mm = &f->nodes[c];
	ir_fused *fz = ir_arena_alloc(&m->arena, sizeof(ir_fused));
	*fz = (ir_fused){.op = norm->op, .pos = IR_FUSE_PROLOGUE, .operand = 0, .name = f->values[norm->out[0]].name};
	prologue_attrs(m, norm, bare, fz);
	if (bare && norm->n_in == 2) {
		ir_weight *w = &m->weights[module_weight(f, mm->in[1])];
		w->folded = true;
		w->fold_norm = module_weight(f, norm->in[1]);
		w->fold_offset = (int)ir_node_attr_int(norm, "offset", 0);
	} else if (!bare) {
		fz->n_extra = 1;
		fz->extra = ir_arena_alloc(&m->arena, sizeof(int));
		fz->extra[0] = norm->in[1];
	}
	mm->fused = fz;
	mm->n_fused = 1;
	mm->in[0] = norm->in[0];
}

/* An rms_norm with no weight operand over whole rows of its input: it
 * becomes a prologue that only normalises (no offset to move: without a
 * weight the norm has none to apply). */
static bool unweighted_norm(const ir_func *f, const ir_node *n)
{
	const ir_shape *x = &f->values[n->in[0]].shape;
	int64_t group = ir_node_attr_int(n, "group", 0);
	return n->n_in == 1 && ir_node_attr_int(n, "offset", 0) == 0 &&
	       (group == 0 || (x->rank > 0 && group == x->dim[x->rank - 1].c));
}

/* Whether norm n of f becomes its readers' prologue, and whether that
 * prologue takes no norm weight operand (folded, or none to fold). */
static bool fusable_norm(bool int8, const ir_func *f, const func_uses *u, const ir_node *n, const fold_plan *fp,
			 bool *bare)
{
	if (n->op != IR_OP_RMS_NORM || n->dead || !only_matmul_readers(f, u, n->out[0]))
		return false;
	if (n->n_in == 1)
		return *bare = unweighted_norm(f, n);
	if (n->n_in != 2)
		return false;
	*bare = foldable(f, u, n, fp);
	return *bare || int8 || reader_weights(f, u, n->out[0]) <= FUSE_NORM_MAX_WEIGHTS;
}

/* int8: f is run by int8 steps alone (int8_graph). */
static void fuse_func(ir_module *m, ir_func *f, const fold_plan *fp, bool int8)
{
	func_uses u;
	func_uses_build(f, &u);
	bool any = false;
	for (int i = 0; i < f->n_nodes; i++) {
		bool bare = false;
		if (!fusable_norm(int8, f, &u, &f->nodes[i], fp, &bare))
			continue;
		int v = f->nodes[i].out[0];
		int n_users = func_uses_count(&u, v);
		const int *users = &u.user[u.start[v]];
		fuse_move_edges(m, f, i, users, n_users);
		for (int k = 0; k < n_users; k++)
			add_prologue(m, f, users[k], &f->nodes[i], bare);
		f->nodes[i].dead = true;
		any = true;
	}
	func_uses_free(&u);
	if (any)
		ir_func_compact(m, f);
}

/* Entries whose matvecs take int8 activations. */
static bool int8_steps(const ir_module *m, const ir_entry *e)
{
	return m->int8_max_rows > 0 && e->t_max <= m->int8_max_rows;
}

/* Whether every entry that runs graph fi takes int8 activations (and one
 * does). */
static bool int8_graph(const ir_module *m, int fi)
{
	bool any = false;
	for (int i = 0; i < m->n_entries; i++) {
		if (m->entries[i].func != fi)
			continue;
		if (!int8_steps(m, &m->entries[i]))
			return false;
		any = true;
	}
	return any;
}

bool pass_fuse_norm_matmul(ir_module *m, ir_error *err)
{
	/* the int8 steps' own graphs, before anything is planned on them */
	for (int src = 0, n = m->n_funcs; m->int8_max_rows > 0 && src < n; src++) {
		int first;
		entry_graph_for(m, src, int8_steps, "xq", &first);
	}
	/* Planned once, before any fusion: fusing only moves a read's norm
	 * into its prologue. */
	fold_plan fp;
	bool ok = plan_folds(m, &fp);
	if (ok)
		settle_folds(m, &fp);
	else
		ir_error_set(err, (ir_loc){m->path, 0, 0}, "fuse_norm_matmul: out of memory");
	for (int i = 0; ok && i < m->n_funcs; i++)
		if (func_is_live(m, &m->funcs[i]))
			fuse_func(m, &m->funcs[i], &fp, int8_graph(m, i));
	free(fp.norm);
	free(fp.offset);
	return ok;
}
