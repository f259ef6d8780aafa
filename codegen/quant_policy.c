#include "codegen/quant_policy.h"

#include <stdio.h>
#include <stdlib.h>

#include "codegen/kernel_variant.h"
#include "passes/graph_query.h"

/* What --quant does to each class (docs/quantization.md says why): KEEP
 * stores the weight in --dtype, FORMAT in the requested format, Q8 in q8_0
 * whatever the format (at least 8 bits), by the requested format. */
typedef enum { KEEP, FORMAT, Q8 } quant_rule;

static const struct {
	const char *name;
	quant_rule rule[HALO_DTYPE_COUNT];
} policy[CG_WCLASS_COUNT] = {
	[CG_WCLASS_OTHER] = {"other", {0}},
	/* mxfp4 is the routed experts' format, as MXFP4 checkpoints ship it:
	 * the layers every token passes keep --dtype (q4_k is the better
	 * 4-bit format for them: 0.071 against 0.117 relative rms error) */
	[CG_WCLASS_LINEAR] = {"linear", {[HALO_Q8_0] = FORMAT, [HALO_Q4_K] = FORMAT, [HALO_F8E4M3_B128] = FORMAT}},
	[CG_WCLASS_EXPERT] = {"expert", {[HALO_Q8_0] = FORMAT, [HALO_Q4_K] = FORMAT, [HALO_F8E4M3_B128] = FORMAT,
					 [HALO_MXFP4] = FORMAT}},
	/* fp8 is 8 bits already: the head too */
	[CG_WCLASS_HEAD] = {"head", {[HALO_Q8_0] = FORMAT, [HALO_Q4_K] = Q8, [HALO_F8E4M3_B128] = FORMAT}},
	[CG_WCLASS_ROUTER] = {"router", {0}},
	[CG_WCLASS_GATE] = {"gate", {0}},
	/* gathered rows cost memory, not decode time (a token reads one row
	 * of each): q4_k, the format asked for to fit memory, stores them (the
	 * published Qwen3.8 Flash's n-gram tables are half its f16 bytes); the
	 * 8-bit formats keep them, as the quality choice: the embedding row is
	 * where the residual stream starts, and on the hybrid test model its
	 * q8_0 rounding alone moved the logits as much as that of all 15
	 * matrices together (docs/quantization.md) */
	[CG_WCLASS_TABLE] = {"table", {[HALO_Q4_K] = FORMAT}},
};

const char *cg_weight_class_name(cg_weight_class c)
{
	return (unsigned)c < CG_WCLASS_COUNT ? policy[c].name : "?";
}

/* The module weight whose buffer value v is (a weight node's result, or a
 * reshape of one), or -1. */
static int weight_of(const ir_func *f, int v)
{
	while (v >= 0 && f->values[v].producer >= 0) {
		const ir_node *p = &f->nodes[f->values[v].producer];
		if (p->op == IR_OP_WEIGHT)
			return p->ref_local ? -1 : p->ref;
		if (p->op != IR_OP_RESHAPE)
			return -1;
		v = p->in[0];
	}
	return -1;
}

static int64_t param_int(const ir_module *m, const char *name)
{
	const ir_param *p = ir_module_param(m, name);
	return p && !p->is_float ? p->i : -1;
}

/* How matmul node n (reading weight w through value v as its operand 1)
 * uses it. */
static cg_weight_class matmul_class(const ir_module *m, const ir_func *f, const func_uses *u, const ir_node *n,
				    int w, int v)
{
	const ir_weight *d = &m->weights[w];
	const ir_shape *vs = &f->values[v].shape;
	if (d->shape.rank < 2 || vs->rank != 2 ||
	    vs->dim[1].coef_T || vs->dim[1].c != d->shape.dim[d->shape.rank - 1].c)
		return CG_WCLASS_OTHER; /* read with another K than it is stored with */
	int out = n->out[0];
	for (int k = u->start[out]; k < u->start[out + 1]; k++) {
		ir_op op = f->nodes[u->user[k]].op;
		if (op == IR_OP_MOE_ROUTE || op == IR_OP_MOE_ROUTE_HASH || op == IR_OP_TOPK)
			return CG_WCLASS_ROUTER;
	}
	int64_t vocab = param_int(m, "vocab");
	if (u->is_output[out] || (vocab > 0 && vs->dim[0].c == vocab))
		return CG_WCLASS_HEAD;
	if (vs->dim[0].c < CG_QUANT_MIN_ROWS)
		return CG_WCLASS_GATE;
	return CG_WCLASS_LINEAR;
}

/* The operand position of a gathered table. */
static bool table_operand(ir_op op, int i)
{
	return (op == IR_OP_EMBED || op == IR_OP_NGRAM_EMBED) && i == 0;
}

/* The operand positions of the expert stacks. */
static bool expert_operand(ir_op op, int i)
{
	return (op == IR_OP_MOE_EXPERTS && i >= 3 && i <= 5) || (op == IR_OP_MOE_GATE_UP && (i == 2 || i == 3)) ||
	       (op == IR_OP_MOE_DOWN && i == 3);
}

/* Two reads of one weight: the more conservative class wins (OTHER, then the
 * classes kept in --dtype, then the head's q8_0, then the rest: a tied
 * embedding is the head's). */
static cg_weight_class merge(cg_weight_class a, cg_weight_class b)
{
	static const int rank[CG_WCLASS_COUNT] = {[CG_WCLASS_OTHER] = 6, [CG_WCLASS_ROUTER] = 5,
						  [CG_WCLASS_GATE] = 4, [CG_WCLASS_HEAD] = 3,
						  [CG_WCLASS_TABLE] = 2, [CG_WCLASS_EXPERT] = 1,
						  [CG_WCLASS_LINEAR] = 0};
	return rank[a] >= rank[b] ? a : b;
}

bool cg_weight_classes(const ir_module *m, cg_weight_class *cls)
{
	bool *seen = calloc((size_t)m->n_weights + 1, sizeof(*seen));
	bool *done = calloc((size_t)m->n_funcs + 1, sizeof(*done));
	if (!seen || !done) {
		free(seen);
		free(done);
		return false;
	}
	for (int i = 0; i < m->n_weights; i++)
		cls[i] = CG_WCLASS_OTHER;
	bool ok = true;
	for (int e = 0; e < m->n_entries && ok; e++) {
		int fi = m->entries[e].func;
		if (done[fi])
			continue;
		done[fi] = true;
		const ir_func *f = &m->funcs[fi];
		func_uses u = {0};
		func_uses_build(f, &u);
		if (!u.start) {
			ok = false;
			break;
		}
		for (int j = 0; j < f->n_nodes; j++) {
			const ir_node *n = &f->nodes[j];
			if (n->dead || n->op == IR_OP_WEIGHT || n->op == IR_OP_RESHAPE)
				continue;
			for (int k = 0; k < node_n_reads(n); k++) {
				int v = node_read(n, k), w = weight_of(f, v);
				if (w < 0)
					continue;
				cg_weight_class c = CG_WCLASS_OTHER;
				if (k < n->n_in && n->op == IR_OP_MATMUL && k == 1)
					c = matmul_class(m, f, &u, n, w, v);
				else if (k < n->n_in && expert_operand(n->op, k) && m->weights[w].shape.rank >= 2)
					c = CG_WCLASS_EXPERT;
				else if (k < n->n_in && table_operand(n->op, k) && m->weights[w].shape.rank >= 2)
					c = CG_WCLASS_TABLE;
				cls[w] = seen[w] ? merge(cls[w], c) : c;
				seen[w] = true;
			}
		}
		func_uses_free(&u);
	}
	free(seen);
	free(done);
	return ok;
}

bool cg_quant_class_allows(cg_weight_class c, halo_dtype t)
{
	return (unsigned)c < CG_WCLASS_COUNT && (unsigned)t < HALO_DTYPE_COUNT && policy[c].rule[t] == FORMAT;
}

static void shape_str(const ir_shape *s, char *buf, size_t len)
{
	int n = snprintf(buf, len, "[");
	for (int i = 0; i < s->rank && n > 0 && (size_t)n < len; i++)
		n += snprintf(buf + n, len - (size_t)n, "%s%lld", i ? ", " : "", (long long)s->dim[i].c);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "]");
}

bool cg_quant_dtype(cg_weight_class c, const char *name, const ir_shape *s, halo_dtype matrix_dtype,
		    halo_dtype quant, halo_dtype *out, bool *fallback, char *err, size_t errlen)
{
	*out = matrix_dtype;
	*fallback = false;
	if (!halo_dtype_is_quant(quant) || (unsigned)c >= CG_WCLASS_COUNT || s->rank < 1)
		return true;
	quant_rule r = policy[c].rule[quant];
	if (r == KEEP)
		return true;
	halo_dtype t = r == Q8 ? HALO_Q8_0 : quant;
	int64_t k = s->dim[s->rank - 1].c;
	/* a format of a larger block that does not divide K (f8e4m3_b128's
	 * 128) falls back to q8_0's 32 */
	if (halo_dtype_block(t) > halo_dtype_block(HALO_Q8_0) && k % (int64_t)halo_dtype_block(t) != 0) {
		t = HALO_Q8_0;
		*fallback = true;
	}
	if (k % (int64_t)halo_dtype_block(t) != 0) {
		if (c == CG_WCLASS_TABLE) {
			*fallback = false;
			return true; /* rows of part blocks: the table stays matrix_dtype */
		}
		char shape[128];
		shape_str(s, shape, sizeof shape);
		snprintf(err, errlen,
			 "weight '%s' %s: its last dim K = %lld is not a multiple of %s's block of %zu elements, so it "
			 "cannot be stored %s (--quant %s)",
			 name, shape, (long long)k, halo_dtype_name(t), halo_dtype_block(t), halo_dtype_name(t),
			 halo_dtype_name(quant));
		return false;
	}
	*out = t;
	return true;
}

bool cg_mark_int8_activations(halo_entry *e, int *marked, char *err, size_t errlen)
{
	for (int i = 0; i < e->n_dispatch; i++) {
		halo_dispatch *d = &e->dispatch[i];
		if (d->op != IR_OP_MATMUL || d->n_in < 2 || halo_attr_find(d->attr, d->n_attr, "groups"))
			continue;
		halo_dtype w = d->operand[1].dtype;
		int64_t rows = d->operand[0].dim[0].coef_T * e->t_max + d->operand[0].dim[0].c;
		if ((w != HALO_Q8_0 && w != HALO_Q4_K) || rows > KV_MATVEC_MAX_T)
			continue;
		if (d->n_attr >= HALO_MAX_ATTRS) {
			snprintf(err, errlen, "entry '%s', dispatch '%s': no room for the xq attribute", e->name, d->node);
			return false;
		}
		d->attr[d->n_attr++] = (halo_attr){.name = "xq", .i = 8, .f = 8.0};
		++*marked;
	}
	return true;
}
