/* pass_merge_matmuls: sibling matmuls become one dispatch.
 *
 * Decode streams every weight once per token, and a matvec of a few tens of
 * MB pays a few microseconds of ramp and tail beyond its bytes (on the H200
 * a 2560 x 10240 f16 matrix streams at 71% of the read ceiling, the
 * 2560 x 248320 head at 99%: bench/results-h200-matvec.txt). A layer's q, k
 * and v projections read the same normalised x, and so do its FFN gate and
 * up: one matmul over their rows streams the same bytes in one dispatch, and
 * gives a prefill matmul of few columns more workgroups. Two forms:
 *   split  matmuls of the same input and prologue without epilogues: one
 *          matmul over their rows one after another, whose results are the
 *          originals (attribute split: their column counts, in that order);
 *   pair   a matmul u whose first epilogue is swiglu with another matmul g
 *          of the same input and prologue, read by u alone: one matmul over
 *          their rows interleaved (gate row n at 2n, up row n at 2n + 1)
 *          that forms silu(gate) * up itself (attribute pair), u's further
 *          epilogues after it. g's result is never written.
 * Each output column is still its own row's dot product over the whole K,
 * so the reference backend computes the same bits as before the merge; a
 * GPU backend may pick another kernel variant for the wider matrix, as for
 * any other N.
 *
 * The merged matrix is a new module weight whose parts are the siblings'
 * weights (ir_weight.parts); codegen builds it from the parts as stored
 * (read, transformed, folded) and stores the parts no longer. So a weight
 * joins a merge only when every read of it, in every live function (entries
 * of several sizes, draft heads), is in a group of the same weights and the
 * same form. Parts are per-layer [N, K] matrices read directly, never a
 * router's (moe_route and topk read router logits: they stay as declared),
 * nor, with m->merge_min_rows, one of fewer rows (halo compile --quant keeps
 * such small gates in --dtype, and a merged matrix has one dtype). A
 * matmul with any attribute (a split, a pair, DeepSeek V4's groups, whose
 * x rows are not its K) joins none. */
#include "passes/fuse_common.h"
#include "passes/passes.h"

#include <stdlib.h>
#include <string.h>

#include "ir/ops.h"

/* The most results of a split matmul: the kernels bind one buffer each. */
#define MERGE_MAX_PARTS 4

enum { FORM_SPLIT, FORM_PAIR };

/* One group in one function: its nodes and their weights, in the merged
 * matrix's order (a split's by weight name; a pair's node[0] is the
 * swiglu's host and weight[0] the gate's). */
typedef struct {
	int func, form, n;
	int node[MERGE_MAX_PARTS];
	int weight[MERGE_MAX_PARTS];
} merge_group;

typedef struct {
	merge_group *g;
	int n, cap;
	int *reads;   /* per module weight: reads in all live functions */
	int *covered; /* per module weight: reads inside groups */
	int *first;   /* per module weight: the first group holding it, -1 */
	bool *mixed;  /* per module weight: in groups of different parts or forms */
} merge_plan;

/* The module weight matmul node n reads as its matrix, read by n alone, or -1. */
static int own_weight(const ir_module *m, const ir_func *f, const func_uses *u, const ir_node *n)
{
	int v = n->in[1], p = f->values[v].producer;
	if (p < 0 || f->nodes[p].op != IR_OP_WEIGHT || f->nodes[p].ref_local || u->is_output[v] ||
	    func_uses_count(u, v) != 1 || n->in[0] == v)
		return -1;
	const ir_weight *w = &m->weights[f->nodes[p].ref];
	if (w->shape.rank != 2 || w->layer < 0 || w->n_parts || w->shape.dim[0].c < m->merge_min_rows)
		return -1;
	return f->nodes[p].ref;
}

static bool feeds_router(const ir_func *f, const func_uses *u, int v)
{
	for (int k = u->start[v]; k < u->start[v + 1]; k++) {
		ir_op op = f->nodes[u->user[k]].op;
		if (op == IR_OP_MOE_ROUTE || op == IR_OP_MOE_ROUTE_HASH || op == IR_OP_TOPK)
			return true;
	}
	return false;
}

/* Node i is a plain matmul that may join a group: one result, no attribute
 * (split, pair, groups), its own per-layer matrix, at most a prologue
 * before `epi` epilogue entries are allowed (any when epi). */
static bool candidate(const ir_module *m, const ir_func *f, const func_uses *u, int i, bool epi)
{
	const ir_node *n = &f->nodes[i];
	if (n->dead || n->op != IR_OP_MATMUL || n->n_in != 2 || n->n_out != 1 || n->n_attr ||
	    own_weight(m, f, u, n) < 0 || feeds_router(f, u, n->out[0]))
		return false;
	int pro = n->n_fused && n->fused[0].pos == IR_FUSE_PROLOGUE;
	return epi || n->n_fused == pro;
}

static bool same_attr(const ir_attr *a, const ir_attr *b)
{
	if (strcmp(a->name, b->name) || a->kind != b->kind || a->i != b->i || a->f != b->f ||
	    (a->s != b->s && (!a->s || !b->s || strcmp(a->s, b->s))) || a->n_ints != b->n_ints)
		return false;
	return !a->n_ints || !memcmp(a->ints, b->ints, (size_t)a->n_ints * sizeof(*a->ints));
}

/* Same input, same prologue (or none), same K. */
static bool siblings(const ir_func *f, const ir_node *a, const ir_node *b)
{
	if (a->in[0] != b->in[0] ||
	    !ir_dim_eq(f->values[a->in[1]].shape.dim[1], f->values[b->in[1]].shape.dim[1]))
		return false;
	bool pa = a->n_fused && a->fused[0].pos == IR_FUSE_PROLOGUE;
	bool pb = b->n_fused && b->fused[0].pos == IR_FUSE_PROLOGUE;
	if (pa != pb)
		return false;
	if (!pa)
		return true;
	const ir_fused *x = &a->fused[0], *y = &b->fused[0];
	if (x->op != y->op || x->n_attr != y->n_attr || x->n_extra != y->n_extra ||
	    (x->n_extra && memcmp(x->extra, y->extra, (size_t)x->n_extra * sizeof(int))))
		return false;
	for (int k = 0; k < x->n_attr; k++)
		if (!same_attr(&x->attr[k], &y->attr[k]))
			return false;
	return true;
}

static int weight_of_node(const ir_func *f, const ir_node *n)
{
	return f->nodes[f->values[n->in[1]].producer].ref;
}

static void add_group(merge_plan *p, const merge_group *g)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		p->g = realloc(p->g, (size_t)p->cap * sizeof(*p->g));
		if (!p->g)
			abort();
	}
	p->g[p->n++] = *g;
}

/* The first epilogue of node n, if it is swiglu; its index in n->fused, or -1. */
static int swiglu_at(const ir_node *n)
{
	int k = n->n_fused && n->fused[0].pos == IR_FUSE_PROLOGUE;
	return k < n->n_fused && n->fused[k].op == IR_OP_SWIGLU && n->fused[k].n_extra == 1 ? k : -1;
}

/* Pair groups of function fi: a host u with swiglu(gate, up) first among its
 * epilogues, the other operand g's producer a sibling read by u alone. */
static void find_pairs(const ir_module *m, int fi, const func_uses *u, bool *taken, merge_plan *p)
{
	const ir_func *f = &m->funcs[fi];
	for (int i = 0; i < f->n_nodes; i++) {
		int k = candidate(m, f, u, i, true) ? swiglu_at(&f->nodes[i]) : -1;
		if (k < 0)
			continue;
		const ir_fused *sw = &f->nodes[i].fused[k];
		int other = sw->extra[0], g = f->values[other].producer;
		if (g < 0 || taken[g] || !candidate(m, f, u, g, false) || u->is_output[other] ||
		    func_uses_count(u, other) != 1 || !siblings(f, &f->nodes[i], &f->nodes[g]) ||
		    !ir_shape_eq(&f->values[other].shape, &f->values[f->nodes[i].out[0]].shape))
			continue;
		/* sw->operand: the side of swiglu(gate, up) that u's own result is */
		int gate = sw->operand == 1 ? g : i, up = sw->operand == 1 ? i : g;
		merge_group grp = {.func = fi, .form = FORM_PAIR, .n = 2, .node = {i, g},
				   .weight = {weight_of_node(f, &f->nodes[gate]), weight_of_node(f, &f->nodes[up])}};
		taken[i] = taken[g] = true;
		add_group(p, &grp);
	}
}

/* A split group's parts in weight-name order, so that the merged matrix,
 * its results' order and the node's name do not depend on the order the
 * model file lists independent ops in (tests/passes/determinism_test.c). */
static void canonical_order(const ir_module *m, merge_group *g)
{
	for (int i = 1; i < g->n; i++)
		for (int j = i; j > 0 && strcmp(m->weights[g->weight[j - 1]].name, m->weights[g->weight[j]].name) > 0;
		     j--) {
			int w = g->weight[j], n = g->node[j];
			g->weight[j] = g->weight[j - 1];
			g->node[j] = g->node[j - 1];
			g->weight[j - 1] = w;
			g->node[j - 1] = n;
		}
}

/* Split groups of function fi: the siblings left, in node order, at most
 * MERGE_MAX_PARTS a group. */
static void find_splits(const ir_module *m, int fi, const func_uses *u, bool *taken, merge_plan *p)
{
	const ir_func *f = &m->funcs[fi];
	for (int i = 0; i < f->n_nodes; i++) {
		if (taken[i] || !candidate(m, f, u, i, false))
			continue;
		merge_group grp = {.func = fi, .form = FORM_SPLIT, .n = 1, .node = {i},
				   .weight = {weight_of_node(f, &f->nodes[i])}};
		for (int j = i + 1; j < f->n_nodes && grp.n < MERGE_MAX_PARTS; j++) {
			if (taken[j] || !candidate(m, f, u, j, false) || !siblings(f, &f->nodes[i], &f->nodes[j]))
				continue;
			grp.node[grp.n] = j;
			grp.weight[grp.n++] = weight_of_node(f, &f->nodes[j]);
		}
		if (grp.n < 2)
			continue;
		for (int k = 0; k < grp.n; k++)
			taken[grp.node[k]] = true;
		canonical_order(m, &grp);
		add_group(p, &grp);
	}
}

static bool same_parts(const merge_group *a, const merge_group *b)
{
	return a->form == b->form && a->n == b->n && !memcmp(a->weight, b->weight, (size_t)a->n * sizeof(int));
}

/* Counts every read of each module weight and which of them groups cover. */
static void count_reads(const ir_module *m, int fi, const func_uses *u, merge_plan *p)
{
	const ir_func *f = &m->funcs[fi];
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		if (!n->dead && n->op == IR_OP_WEIGHT && !n->ref_local)
			p->reads[n->ref] += func_uses_count(u, n->out[0]) + (u->is_output[n->out[0]] ? 1 : 0);
	}
}

static bool plan_groups(const ir_module *m, merge_plan *p)
{
	size_t nw = (size_t)m->n_weights + 1;
	p->reads = calloc(nw, sizeof(int));
	p->covered = calloc(nw, sizeof(int));
	p->first = malloc(nw * sizeof(int));
	p->mixed = calloc(nw, sizeof(bool));
	if (!p->reads || !p->covered || !p->first || !p->mixed)
		return false;
	for (int i = 0; i < m->n_weights; i++)
		p->first[i] = -1;
	for (int fi = 0; fi < m->n_funcs; fi++) {
		const ir_func *f = &m->funcs[fi];
		if (!func_is_live(m, f))
			continue;
		func_uses u;
		func_uses_build(f, &u);
		bool *taken = calloc((size_t)f->n_nodes + 1, sizeof(bool));
		if (!taken)
			abort();
		count_reads(m, fi, &u, p);
		find_pairs(m, fi, &u, taken, p);
		find_splits(m, fi, &u, taken, p);
		free(taken);
		func_uses_free(&u);
	}
	for (int g = 0; g < p->n; g++)
		for (int k = 0; k < p->g[g].n; k++) {
			int w = p->g[g].weight[k];
			p->covered[w]++;
			if (p->first[w] < 0)
				p->first[w] = g;
			else if (!same_parts(&p->g[p->first[w]], &p->g[g]))
				p->mixed[w] = true;
		}
	return true;
}

static bool group_ok(const merge_plan *p, const merge_group *g)
{
	for (int k = 0; k < g->n; k++) {
		int w = g->weight[k];
		if (p->mixed[w] || p->covered[w] != p->reads[w])
			return false;
	}
	return true;
}

/* The common prefix of the parts' names up to its last '.', then each
 * part's rest joined by '+': layers.3.wq+wk+wv. */
static const char *merged_name(ir_module *m, const merge_group *g)
{
	const char *a = m->weights[g->weight[0]].name;
	size_t cut = 0;
	for (size_t i = 0; a[i]; i++) {
		bool all = true;
		for (int k = 1; k < g->n && all; k++)
			all = m->weights[g->weight[k]].name[i] == a[i];
		if (!all)
			break;
		if (a[i] == '.')
			cut = i + 1;
	}
	const char *name = ir_arena_printf(&m->arena, "%.*s", (int)cut, a);
	for (int k = 0; k < g->n; k++)
		name = ir_arena_printf(&m->arena, "%s%s%s", name, k ? "+" : "", m->weights[g->weight[k]].name + cut);
	return name;
}

/* The merged module weight of group g, made once per distinct parts list. */
static int merged_weight(ir_module *m, merge_plan *p, const merge_group *g, int *made)
{
	int first = p->first[g->weight[0]];
	if (made[first] >= 0)
		return made[first];
	const ir_weight *w0 = &m->weights[g->weight[0]];
	ir_weight w = {.name = merged_name(m, g), .shape = w0->shape, .dtype = w0->dtype, .transform = "none",
		       .layer = w0->layer, .loc = w0->loc, .n_parts = g->n, .interleave = g->form == FORM_PAIR};
	int *parts = ir_arena_alloc(&m->arena, (size_t)g->n * sizeof(int));
	w.shape.dim[0].c = 0;
	for (int k = 0; k < g->n; k++) {
		parts[k] = g->weight[k];
		w.shape.dim[0].c += m->weights[g->weight[k]].shape.dim[0].c;
	}
	w.parts = parts;
	made[first] = ir_module_add_weight(m, &w);
	return made[first];
}

static void set_attr(ir_module *m, ir_func *f, int nid, ir_attr a)
{
	ir_node_add_attr(m, f, nid, &a);
}

/* Group g rewritten: one node reads the merged matrix through its own weight
 * node and the others (and their weight nodes) die. A split keeps the node
 * first in program order, where every result is defined before its readers,
 * under the name of its first part's; a pair keeps the swiglu's host. */
static void apply_group(ir_module *m, ir_func *f, const merge_group *g, int w)
{
	int keep = g->node[0];
	for (int k = 1; g->form == FORM_SPLIT && k < g->n; k++)
		keep = g->node[k] < keep ? g->node[k] : keep;
	ir_node *wn = &f->nodes[f->values[f->nodes[keep].in[1]].producer];
	wn->ref = w;
	wn->name = m->weights[w].name;
	f->values[wn->out[0]].name = m->weights[w].name;
	f->values[wn->out[0]].shape = m->weights[w].shape;
	for (int k = 0; k < g->n; k++) {
		if (g->node[k] == keep)
			continue;
		ir_node *o = &f->nodes[g->node[k]];
		f->nodes[f->values[o->in[1]].producer].dead = true;
		o->dead = true;
		fuse_move_edges(m, f, g->node[k], &keep, 1);
	}
	if (g->form == FORM_PAIR) {
		ir_node *n = &f->nodes[keep];
		int at = swiglu_at(n);
		ir_fused *fz = ir_arena_alloc(&m->arena, (size_t)n->n_fused * sizeof(ir_fused));
		memcpy(fz, n->fused, (size_t)at * sizeof(ir_fused));
		memcpy(fz + at, n->fused + at + 1, (size_t)(n->n_fused - at - 1) * sizeof(ir_fused));
		n->fused = fz;
		n->n_fused--;
		set_attr(m, f, keep, (ir_attr){.name = "pair", .kind = IR_ATTR_STR, .s = "swiglu"});
		return;
	}
	int *out = ir_arena_alloc(&m->arena, (size_t)g->n * sizeof(int));
	int64_t *cols = ir_arena_alloc(&m->arena, (size_t)g->n * sizeof(int64_t));
	for (int k = 0; k < g->n; k++) {
		out[k] = f->nodes[g->node[k]].out[0];
		cols[k] = m->weights[g->weight[k]].shape.dim[0].c;
		f->values[out[k]].producer = keep;
		f->values[out[k]].producer_out = k;
	}
	f->nodes[keep].out = out;
	f->nodes[keep].n_out = g->n;
	f->nodes[keep].name = f->nodes[g->node[0]].name;
	set_attr(m, f, keep, (ir_attr){.name = "split", .kind = IR_ATTR_INTS, .ints = cols, .n_ints = g->n});
}

bool pass_merge_matmuls(ir_module *m, ir_error *err)
{
	if (m->no_merge_matmuls)
		return true;
	merge_plan p = {0};
	bool ok = plan_groups(m, &p);
	int *made = ok ? malloc(((size_t)p.n + 1) * sizeof(int)) : NULL;
	ok = ok && made;
	for (int g = 0; ok && g < p.n; g++)
		made[g] = -1;
	bool *touched = ok ? calloc((size_t)m->n_funcs + 1, sizeof(bool)) : NULL;
	ok = ok && touched;
	for (int g = 0; ok && g < p.n; g++) {
		if (!group_ok(&p, &p.g[g]))
			continue;
		int w = merged_weight(m, &p, &p.g[g], made);
		apply_group(m, &m->funcs[p.g[g].func], &p.g[g], w);
		touched[p.g[g].func] = true;
	}
	for (int fi = 0; ok && fi < m->n_funcs; fi++)
		if (touched[fi])
			ir_func_compact(m, &m->funcs[fi]);
	if (!ok)
		ir_error_set(err, (ir_loc){m->path, 0, 0}, "merge_matmuls: out of memory");
	free(made);
	free(touched);
	free(p.g);
	free(p.reads);
	free(p.covered);
	free(p.first);
	free(p.mixed);
	return ok;
}
