/* The op table and shape/dtype rules (docs/ops.md is the reference). */
#include "ir/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- attribute schemas ----------------------------------------------------- */

#define REQ_INT(n, lo, hi) {.name = n, .kind = IR_ATTR_INT, .presence = IR_ATTR_REQUIRED, .min_i = lo, .max_i = hi}
#define DEF_INT(n, d, lo, hi) \
	{.name = n, .kind = IR_ATTR_INT, .presence = IR_ATTR_DEFAULT, .dflt_i = d, .min_i = lo, .max_i = hi}
#define OPT_INT(n, lo, hi) {.name = n, .kind = IR_ATTR_INT, .presence = IR_ATTR_OPTIONAL, .min_i = lo, .max_i = hi}
#define REQ_FLOAT(n) {.name = n, .kind = IR_ATTR_FLOAT, .presence = IR_ATTR_REQUIRED}
#define DEF_FLOAT(n, d) {.name = n, .kind = IR_ATTR_FLOAT, .presence = IR_ATTR_DEFAULT, .dflt_f = d}
#define OPT_FLOAT(n) {.name = n, .kind = IR_ATTR_FLOAT, .presence = IR_ATTR_OPTIONAL}

#define BIG INT64_MAX

/* at: pos writes rows [pos, pos+T) of axis 0, start rows [0, T) */
static const char *const at_choices[] = {"pos", "start", NULL};
static const char *const act_choices[] = {"none", "silu", NULL};
static const char *const pair_choices[] = {"swiglu", NULL};

/* layer: an instance call's layer (absent on an inline call: a block's call
 * of a block, or a graph's call of a block without weights or state); as:
 * an inline call's name prefix (docs/ir.md, "Blocks that call blocks"). */
static const ir_attr_schema a_call[] = {OPT_INT("layer", 0, BIG),
					 {.name = "hf_prefix", .kind = IR_ATTR_STR, .presence = IR_ATTR_OPTIONAL},
					 {.name = "as", .kind = IR_ATTR_STR, .presence = IR_ATTR_OPTIONAL}};
/* every: with at: pos, one row per closed window of that many tokens */
static const ir_attr_schema a_state_write[] = {
	{.name = "at", .kind = IR_ATTR_STR, .presence = IR_ATTR_OPTIONAL, .choices = at_choices},
	OPT_INT("every", 1, BIG), OPT_INT("ring", 0, 1)};
static const ir_attr_schema a_reshape[] = {
	{.name = "shape", .kind = IR_ATTR_SHAPE, .presence = IR_ATTR_REQUIRED}};
static const ir_attr_schema a_slice[] = {REQ_INT("axis", 0, IR_MAX_RANK - 1), REQ_INT("start", 0, BIG),
					  REQ_INT("len", 1, BIG)};
static const ir_attr_schema a_concat[] = {REQ_INT("axis", 0, IR_MAX_RANK - 1)};
static const ir_attr_schema a_repeat[] = {REQ_INT("r", 1, BIG)};
/* split: the column counts of several results (sibling matmuls merged by
 * passes/merge_matmuls.c); pair: w's rows are (gate, up) pairs and the one
 * result is silu(x gate^T) * (x up^T); w_rows: only w's first w_rows rows
 * (a draft head's vocabulary prefix) (docs/ops.md). */
static const ir_attr_schema a_matmul[] = {
	{.name = "split", .kind = IR_ATTR_INTS, .presence = IR_ATTR_OPTIONAL},
	{.name = "pair", .kind = IR_ATTR_STR, .presence = IR_ATTR_OPTIONAL, .choices = pair_choices},
	OPT_INT("groups", 1, BIG), OPT_INT("w_rows", 1, BIG)};
static const ir_attr_schema a_rms[] = {REQ_FLOAT("eps"), DEF_INT("offset", 0, 0, 1), DEF_INT("group", 0, 0, BIG)};
static const ir_attr_schema a_l2[] = {DEF_FLOAT("eps", 1e-6)};
static const ir_attr_schema a_gated_rms[] = {REQ_FLOAT("eps")};
static const ir_attr_schema a_scale[] = {REQ_FLOAT("value")};
static const char *const rope_layouts[] = {"neox", "interleaved_tail", NULL};
/* Past base and rot_dim every attribute is optional, its absence its
 * default (docs/ops.md): a default the reader filled in would be lowered
 * into every existing rope dispatch and change existing bundles. */
#define ROPE_ATTRS                                                                                         \
	REQ_FLOAT("base"), OPT_INT("rot_dim", 2, BIG),                                                     \
		{.name = "layout", .kind = IR_ATTR_STR, .presence = IR_ATTR_OPTIONAL, .choices = rope_layouts}, \
		OPT_INT("inverse", 0, 1), OPT_INT("offset", -BIG, BIG), OPT_FLOAT("yarn_factor"),           \
		OPT_INT("yarn_orig_ctx", 0, BIG), OPT_FLOAT("yarn_beta_fast"), OPT_FLOAT("yarn_beta_slow")
static const ir_attr_schema a_rope[] = {ROPE_ATTRS};
static const ir_attr_schema a_scale_attr[] = {REQ_FLOAT("scale")};
static const ir_attr_schema a_attention_partial[] = {REQ_FLOAT("scale"), REQ_INT("block", 1, BIG)};
/* attention_blocks', rope's and the two heads' norm's (its offset renamed:
 * rope has one) */
static const ir_attr_schema a_attention_rope[] = {REQ_FLOAT("scale"), REQ_INT("block", 1, BIG), ROPE_ATTRS,
						  REQ_FLOAT("eps"), DEF_INT("norm_offset", 0, 0, 1)};
static const ir_attr_schema a_conv[] = {
	{.name = "act", .kind = IR_ATTR_STR, .presence = IR_ATTR_DEFAULT, .dflt_s = "none", .choices = act_choices}};
static const ir_attr_schema a_topk[] = {REQ_INT("k", 1, BIG)};
/* The attributes DeepSeek V4 added to the routers are optional, not
 * defaulted: a default would be written into every existing model's nodes
 * (and bundles); readers take softmax and 1 when they are absent. */
static const char *const scoring_choices[] = {"softmax", "sigmoid", "sqrtsoftplus", NULL};
#define ROUTE_SCORING \
	{.name = "scoring", .kind = IR_ATTR_STR, .presence = IR_ATTR_OPTIONAL, .choices = scoring_choices}
#define ROUTE_SCALING {.name = "scaling", .kind = IR_ATTR_FLOAT, .presence = IR_ATTR_OPTIONAL}
static const ir_attr_schema a_moe_route[] = {REQ_INT("k", 1, BIG), DEF_INT("norm_topk", 1, 0, 1), ROUTE_SCORING,
					     ROUTE_SCALING};
static const ir_attr_schema a_moe_route_hash[] = {DEF_INT("norm_topk", 1, 0, 1), ROUTE_SCORING, ROUTE_SCALING};
/* limit: DeepSeek V4's swiglu_limit, optional for the same reason */
static const ir_attr_schema a_moe_limit[] = {{.name = "limit", .kind = IR_ATTR_FLOAT, .presence = IR_ATTR_OPTIONAL}};
static const ir_attr_schema a_hc_weights[] = {DEF_INT("iters", 20, 1, BIG), DEF_FLOAT("eps", 1e-6)};
static const ir_attr_schema a_reduce[] = {REQ_INT("axis", 0, IR_MAX_RANK - 1)};
static const ir_attr_schema a_signed_sqrt[] = {DEF_FLOAT("eps", 1e-6)};
static const ir_attr_schema a_hc_inject_norm[] = {REQ_FLOAT("eps"), DEF_INT("offset", 0, 0, 1)};
static const ir_attr_schema a_ngram[] = {REQ_INT("ngram", 2, 16),	  REQ_INT("heads_per_ngram", 1, 64),
					 REQ_INT("eos", 0, BIG),	  REQ_INT("vocab", 1, BIG),
					 REQ_INT("seed", 0, BIG),	  DEF_INT("layer_index", 0, 0, BIG),
					 REQ_INT("table_base", 2, BIG)};
static const ir_attr_schema a_conv_dilated[] = {
	REQ_INT("dilation", 1, BIG),
	{.name = "act", .kind = IR_ATTR_STR, .presence = IR_ATTR_DEFAULT, .dflt_s = "none", .choices = act_choices}};
/* offset -1 reads the previous position's row: a draft head's own output,
 * written at its position, is the next position's input */
static const ir_attr_schema a_rows_at_pos[] = {DEF_INT("offset", 0, -1, 0)};
/* zero_pos0: the row at absolute position 0 is zero (vLLM's DeepSeek V4 MTP
 * embedding); optional so that other models' dumps do not show it */
static const ir_attr_schema a_embed[] = {OPT_INT("zero_pos0", 0, 1)};
static const ir_attr_schema a_qsa_select[] = {REQ_INT("block", 1, BIG), REQ_INT("top_blocks", 1, BIG),
					      REQ_FLOAT("base"), REQ_INT("rot_dim", 2, BIG), REQ_FLOAT("eps")};
static const ir_attr_schema a_compress_kv[] = {REQ_INT("ratio", 1, BIG), REQ_INT("overlap", 0, 1)};
static const ir_attr_schema a_index_topk[] = {REQ_INT("k", 1, BIG), REQ_INT("ratio", 1, BIG), REQ_FLOAT("scale")};
/* ratio: with entries only (their windows' length) */
static const ir_attr_schema a_sink_attention[] = {REQ_FLOAT("scale"), REQ_INT("window", 1, BIG),
						  OPT_INT("ratio", 1, BIG)};
static const ir_attr_schema a_sink_attention_partial[] = {REQ_FLOAT("scale"), REQ_INT("window", 1, BIG),
							  OPT_INT("ratio", 1, BIG), REQ_INT("block", 1, BIG)};
static const ir_attr_schema a_index_score[] = {REQ_INT("ratio", 1, BIG), REQ_FLOAT("scale"),
					       REQ_INT("block", 1, BIG)};
static const ir_attr_schema a_index_select[] = {REQ_INT("k", 1, BIG), REQ_INT("ratio", 1, BIG)};

/* ---- shape rules ------------------------------------------------------------ */

typedef struct {
	const ir_module *m;
	const ir_func *f;
	const ir_node *n;
	ir_shape *os;
	halo_dtype *ot;
	ir_error *err;
} infer_ctx;

typedef bool (*infer_fn)(infer_ctx *c);

static const ir_value *in_val(const infer_ctx *c, int i)
{
	return &c->f->values[c->n->in[i]];
}

static const ir_shape *in_shape(const infer_ctx *c, int i)
{
	return &in_val(c, i)->shape;
}

static halo_dtype in_dtype(const infer_ctx *c, int i)
{
	return in_val(c, i)->dtype;
}

static bool fail(infer_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(infer_ctx *c, const char *fmt, ...)
{
	char what[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ir_error_set(c->err, c->n->loc, "%s '%s': %s", ir_op_name(c->n->op), c->n->name ? c->n->name : "?", what);
	return false;
}

/* "x is [T, 64]": names the operand by its value name. */
static const char *desc(const infer_ctx *c, int i, char *buf, size_t len)
{
	char sh[128];
	const ir_value *v = in_val(c, i);
	snprintf(buf, len, "%s is %s", v->name ? v->name : "?", ir_shape_str(&v->shape, sh, sizeof(sh)));
	return buf;
}

static bool need_rank(infer_ctx *c, int i, int rank)
{
	if (in_shape(c, i)->rank == rank)
		return true;
	char d[192];
	return fail(c, "operand %d must have rank %d: %s", i, rank, desc(c, i, d, sizeof(d)));
}

static bool need_dim_eq(infer_ctx *c, int i, int ai, int j, int aj, const char *what)
{
	if (ir_dim_eq(in_shape(c, i)->dim[ai], in_shape(c, j)->dim[aj]))
		return true;
	char d1[192], d2[192];
	return fail(c, "%s differ: %s, %s", what, desc(c, i, d1, sizeof(d1)), desc(c, j, d2, sizeof(d2)));
}

static bool need_same_shape(infer_ctx *c, int i, int j)
{
	if (ir_shape_eq(in_shape(c, i), in_shape(c, j)))
		return true;
	char d1[192], d2[192];
	return fail(c, "shapes differ: %s, %s", desc(c, i, d1, sizeof(d1)), desc(c, j, d2, sizeof(d2)));
}

static bool is_float(halo_dtype t)
{
	return t == HALO_F32 || t == HALO_F16 || t == HALO_BF16;
}

static bool need_float(infer_ctx *c, int i)
{
	if (is_float(in_dtype(c, i)))
		return true;
	return fail(c, "operand %d ('%s') must be f32/f16/bf16, not %s", i, in_val(c, i)->name,
		    halo_dtype_name(in_dtype(c, i)));
}

static bool need_i32(infer_ctx *c, int i)
{
	if (in_dtype(c, i) == HALO_I32)
		return true;
	return fail(c, "operand %d ('%s') must be i32, not %s", i, in_val(c, i)->name,
		    halo_dtype_name(in_dtype(c, i)));
}

static bool need_const_dim(infer_ctx *c, int i, int axis)
{
	if (ir_dim_is_const(in_shape(c, i)->dim[axis]))
		return true;
	char d[192];
	return fail(c, "dim %d of operand %d must not depend on T: %s", axis, i, desc(c, i, d, sizeof(d)));
}

static bool need_rank_at_least(infer_ctx *c, int i, int rank)
{
	if (in_shape(c, i)->rank >= rank)
		return true;
	char d[192];
	return fail(c, "operand %d must have rank >= %d: %s", i, rank, desc(c, i, d, sizeof(d)));
}

static ir_shape mk_shape(int rank, const ir_dim *dims)
{
	ir_shape s = {.rank = rank};
	for (int i = 0; i < rank; i++)
		s.dim[i] = dims[i];
	return s;
}

static const ir_shape *module_or_local_shape(infer_ctx *c, halo_dtype *t)
{
	if (c->n->op == IR_OP_WEIGHT) {
		const ir_weight *w = ir_node_weight(c->m, c->f, c->n);
		if (!w)
			return NULL;
		*t = w->dtype;
		return &w->shape;
	}
	const ir_state *s = ir_node_state(c->m, c->f, c->n);
	if (!s)
		return NULL;
	*t = s->dtype;
	return &s->shape;
}

static bool infer_source(infer_ctx *c)
{
	halo_dtype t = HALO_F32;
	const ir_shape *s = module_or_local_shape(c, &t);
	if (!s)
		return fail(c, "ref %d names no declaration", c->n->ref);
	c->os[0] = *s;
	c->ot[0] = t;
	return true;
}

static bool infer_state_write(infer_ctx *c)
{
	halo_dtype t = HALO_F32;
	const ir_shape *s = module_or_local_shape(c, &t);
	if (!s)
		return fail(c, "ref %d names no state", c->n->ref);
	const ir_shape *v = in_shape(c, 0);
	char sb[128], vb[192];
	if (!ir_node_attr_str(c->n, "at", NULL)) {
		if (!ir_shape_eq(s, v))
			return fail(c, "value and state shapes differ: %s, state is %s", desc(c, 0, vb, sizeof(vb)),
				    ir_shape_str(s, sb, sizeof(sb)));
		return true;
	}
	bool ok = v->rank == s->rank && v->rank >= 1;
	for (int i = 1; ok && i < v->rank; i++)
		ok = ir_dim_eq(v->dim[i], s->dim[i]);
	if (!ok)
		return fail(c, "rows must match the state's trailing dims: %s, state is %s",
			    desc(c, 0, vb, sizeof(vb)), ir_shape_str(s, sb, sizeof(sb)));
	/* the state's rows per window of a token axis are the model's business */
	if (ir_node_attr(c->n, "every") && strcmp(ir_node_attr_str(c->n, "at", ""), "pos") != 0)
		return fail(c, "every needs at: pos (it writes the windows the step's positions close)");
	if (ir_node_attr_int(c->n, "ring", 0) &&
	    (strcmp(ir_node_attr_str(c->n, "at", ""), "pos") != 0 || ir_node_attr(c->n, "every")))
		return fail(c, "ring needs at: pos and no every (position p goes to row p mod the state's rows)");
	return true;
}

/* A block instance: the callee's body is inferred on a scratch copy of its
 * values, with the call's operand shapes bound to the callee's inputs. */
static bool infer_call(infer_ctx *c)
{
	if (c->n->ref < 0 || c->n->ref >= c->m->n_funcs)
		return fail(c, "ref %d names no function", c->n->ref);
	const ir_func *callee = &c->m->funcs[c->n->ref];
	if (callee->n_inputs != c->n->n_in || callee->n_outputs != c->n->n_out)
		return fail(c, "block '%s' takes %d inputs and returns %d outputs, the call has %d and %d",
			    callee->name, callee->n_inputs, callee->n_outputs, c->n->n_in, c->n->n_out);
	ir_func scratch = *callee;
	scratch.values = calloc((size_t)(callee->n_values ? callee->n_values : 1), sizeof(ir_value));
	if (!scratch.values)
		abort();
	memcpy(scratch.values, callee->values, (size_t)callee->n_values * sizeof(ir_value));
	for (int i = 0; i < callee->n_inputs; i++) {
		ir_value *v = &scratch.values[callee->inputs[i]];
		v->shape = *in_shape(c, i);
		v->dtype = in_dtype(c, i);
		v->shape_known = true;
	}
	bool ok = true;
	for (int i = 0; ok && i < callee->n_nodes; i++) {
		const ir_node *bn = &callee->nodes[i];
		ir_shape os[8];
		halo_dtype ot[8];
		if (bn->n_out > 8) {
			ok = fail(c, "node '%s' of block '%s' has too many results", bn->name, callee->name);
			break;
		}
		ok = ir_op_infer(c->m, &scratch, bn, os, ot, c->err);
		for (int j = 0; ok && j < bn->n_out; j++) {
			ir_value *v = &scratch.values[bn->out[j]];
			v->shape = os[j];
			v->dtype = ot[j];
			v->shape_known = true;
		}
	}
	for (int i = 0; ok && i < callee->n_outputs; i++) {
		c->os[i] = scratch.values[callee->outputs[i]].shape;
		c->ot[i] = scratch.values[callee->outputs[i]].dtype;
	}
	free(scratch.values);
	return ok;
}

static bool infer_embed(infer_ctx *c)
{
	if (!need_rank(c, 0, 2) || !need_rank(c, 1, 1) || !need_i32(c, 1) || !need_float(c, 0))
		return false;
	c->os[0] = mk_shape(2, (ir_dim[]){in_shape(c, 1)->dim[0], in_shape(c, 0)->dim[1]});
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* numel is a polynomial in T of degree <= IR_MAX_RANK; two such polynomials
 * that agree at IR_MAX_RANK + 1 points are equal. */
static bool numel_equal(const ir_shape *a, const ir_shape *b)
{
	for (int64_t T = 1; T <= IR_MAX_RANK + 1; T++) {
		int64_t na = ir_shape_numel(a, T), nb = ir_shape_numel(b, T);
		if (na < 0 || na != nb)
			return false;
	}
	return true;
}

static bool infer_reshape(infer_ctx *c)
{
	const ir_attr *a = ir_node_attr(c->n, "shape");
	if (!a || a->kind != IR_ATTR_SHAPE)
		return fail(c, "missing attribute 'shape'");
	if (!numel_equal(in_shape(c, 0), &a->shape)) {
		char d[192], sb[128];
		return fail(c, "element count differs: %s, shape is %s", desc(c, 0, d, sizeof(d)),
			    ir_shape_str(&a->shape, sb, sizeof(sb)));
	}
	c->os[0] = a->shape;
	c->ot[0] = in_dtype(c, 0);
	return true;
}

static bool infer_slice(infer_ctx *c)
{
	const ir_shape *x = in_shape(c, 0);
	int64_t axis = ir_node_attr_int(c->n, "axis", -1), start = ir_node_attr_int(c->n, "start", -1);
	int64_t len = ir_node_attr_int(c->n, "len", 0);
	char d[192];
	if (axis < 0 || axis >= x->rank)
		return fail(c, "axis %lld out of range: %s", (long long)axis, desc(c, 0, d, sizeof(d)));
	/* T >= 1, and dims never shrink as T grows, so T = 1 bounds every step. */
	int64_t extent = ir_dim_eval(x->dim[axis], 1);
	if (start < 0 || len < 1 || start > extent || len > extent - start)
		return fail(c, "slice [%lld, %lld) out of bounds on axis %lld: %s", (long long)start,
			    (long long)(start + len), (long long)axis, desc(c, 0, d, sizeof(d)));
	c->os[0] = *x;
	c->os[0].dim[axis] = ir_dim_const(len);
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* (x[N, d1..]) -> [T, d1..]: rows of a positional state (N constant). */
static bool infer_rows_at_pos(infer_ctx *c)
{
	const ir_shape *x = in_shape(c, 0);
	char d[192];
	if (x->rank < 1 || !ir_dim_is_const(x->dim[0]))
		return fail(c, "expected a constant leading row count: %s", desc(c, 0, d, sizeof(d)));
	c->os[0] = *x;
	c->os[0].dim[0] = (ir_dim){1, 0};
	c->ot[0] = in_dtype(c, 0);
	return true;
}

static bool infer_concat(infer_ctx *c)
{
	const ir_shape *a = in_shape(c, 0), *b = in_shape(c, 1);
	int64_t axis = ir_node_attr_int(c->n, "axis", -1);
	char d1[192], d2[192];
	if (axis < 0 || axis >= a->rank)
		return fail(c, "axis %lld out of range: %s", (long long)axis, desc(c, 0, d1, sizeof(d1)));
	bool ok = a->rank == b->rank;
	for (int i = 0; ok && i < a->rank; i++)
		ok = i == axis || ir_dim_eq(a->dim[i], b->dim[i]);
	if (!ok)
		return fail(c, "dims other than axis %lld differ: %s, %s", (long long)axis,
			    desc(c, 0, d1, sizeof(d1)), desc(c, 1, d2, sizeof(d2)));
	if (in_dtype(c, 0) != in_dtype(c, 1))
		return fail(c, "dtypes differ: %s, %s", halo_dtype_name(in_dtype(c, 0)), halo_dtype_name(in_dtype(c, 1)));
	c->os[0] = *a;
	ir_dim *d = &c->os[0].dim[axis];
	if (__builtin_add_overflow(d->coef_T, b->dim[axis].coef_T, &d->coef_T) ||
	    __builtin_add_overflow(d->c, b->dim[axis].c, &d->c))
		return fail(c, "concatenated dim overflows");
	c->ot[0] = in_dtype(c, 0);
	return true;
}

static bool infer_repeat_heads(infer_ctx *c)
{
	if (!need_rank(c, 0, 3))
		return false;
	int64_t r = ir_node_attr_int(c->n, "r", 1);
	c->os[0] = *in_shape(c, 0);
	ir_dim *h = &c->os[0].dim[1];
	if (__builtin_mul_overflow(h->coef_T, r, &h->coef_T) || __builtin_mul_overflow(h->c, r, &h->c))
		return fail(c, "r = %lld overflows the head count", (long long)r);
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* With `groups` g > 1, x [M, g*K] and w [N, K], N a multiple of g: output
 * n reads x's group n / (N/g) (a block-diagonal weight). */
static bool grouped_dims_ok(infer_ctx *c, int64_t g)
{
	ir_dim xk = in_shape(c, 0)->dim[1], K = in_shape(c, 1)->dim[1], N = in_shape(c, 1)->dim[0];
	char d1[192], d2[192];
	if (ir_node_attr(c->n, "split") || ir_node_attr_str(c->n, "pair", NULL))
		return fail(c, "groups %lld excludes split and pair", (long long)g);
	if (!ir_dim_is_const(xk) || !ir_dim_is_const(K) || xk.c % g || xk.c / g != K.c)
		return fail(c, "groups %lld: x's last dim must be %lld times w's: %s, %s", (long long)g, (long long)g,
			    desc(c, 0, d1, sizeof(d1)), desc(c, 1, d2, sizeof(d2)));
	if (!ir_dim_is_const(N) || N.c % g)
		return fail(c, "groups %lld does not divide w's rows: %s", (long long)g, desc(c, 1, d2, sizeof(d2)));
	return true;
}

/* w_rows: y[rows, w_rows] from w's first w_rows rows, alone. */
static bool w_rows_ok(infer_ctx *c, int64_t w_rows)
{
	ir_dim N = in_shape(c, 1)->dim[0];
	char d[192];
	if (ir_node_attr(c->n, "split") || ir_node_attr_str(c->n, "pair", NULL) || ir_node_attr(c->n, "groups"))
		return fail(c, "w_rows %lld excludes split, pair and groups", (long long)w_rows);
	if (!ir_dim_is_const(N) || w_rows > N.c)
		return fail(c, "w_rows %lld is more than the weight's rows: %s", (long long)w_rows,
			    desc(c, 1, d, sizeof(d)));
	return true;
}

/* One result y[rows, N] by default; with `split` one per listed column
 * count, w's rows in that order; with `pair` one of N/2 columns; with
 * `groups` one of N columns over a grouped x; with `w_rows` one of w_rows
 * columns. */
static bool infer_matmul(infer_ctx *c)
{
	if (!need_rank(c, 0, 2) || !need_rank(c, 1, 2) || !need_float(c, 0) || !need_float(c, 1))
		return false;
	int64_t w_rows = ir_node_attr_int(c->n, "w_rows", 0);
	if (w_rows && !w_rows_ok(c, w_rows))
		return false;
	int64_t groups = ir_node_attr_int(c->n, "groups", 1);
	if (groups > 1 ? !grouped_dims_ok(c, groups) : !need_dim_eq(c, 0, 1, 1, 1, "inner dims"))
		return false;
	const ir_attr *split = ir_node_attr(c->n, "split");
	bool pair = ir_node_attr_str(c->n, "pair", NULL) != NULL;
	ir_dim rows = in_shape(c, 0)->dim[0], N = in_shape(c, 1)->dim[0];
	int n_out = split ? split->n_ints : 1;
	if (split && pair)
		return fail(c, "split and pair exclude each other");
	if (c->n->n_out != n_out)
		return fail(c, "%d result(s) for %d column count(s) in split", c->n->n_out, n_out);
	if (pair && (!ir_dim_is_const(N) || N.c % 2))
		return fail(c, "pair needs an even number of weight rows, got %lld", (long long)N.c);
	int64_t sum = 0;
	for (int i = 0; split && i < split->n_ints; i++) {
		if (split->ints[i] < 1)
			return fail(c, "split column count %d is %lld, must be positive", i, (long long)split->ints[i]);
		sum += split->ints[i];
		c->os[i] = mk_shape(2, (ir_dim[]){rows, {0, split->ints[i]}});
		c->ot[i] = in_dtype(c, 0);
	}
	if (split && (!ir_dim_is_const(N) || sum != N.c))
		return fail(c, "split column counts add up to %lld, the weight has %lld rows", (long long)sum,
			    (long long)N.c);
	if (!split) {
		c->os[0] = mk_shape(2, (ir_dim[]){rows, pair ? (ir_dim){0, N.c / 2} : w_rows ? (ir_dim){0, w_rows} : N});
		c->ot[0] = in_dtype(c, 0);
	}
	return true;
}

/* Normalisations take x[..., D] and optional w[D] (operand wi, -1 if none). */
static bool infer_norm_common(infer_ctx *c, int wi)
{
	if (!need_rank_at_least(c, 0, 1) || !need_float(c, 0))
		return false;
	const ir_shape *x = in_shape(c, 0);
	if (wi >= 0 && (!need_rank(c, wi, 1) || !need_float(c, wi) ||
			!need_dim_eq(c, 0, x->rank - 1, wi, 0, "normalised dims")))
		return false;
	c->os[0] = *x;
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* rms_norm (x, w) or, unweighted, (x): an unweighted norm has no w to
 * offset. */
static bool infer_rms_norm(infer_ctx *c)
{
	bool weighted = c->n->n_in == 2;
	if (!infer_norm_common(c, weighted ? 1 : -1))
		return false;
	int64_t offset = ir_node_attr_int(c->n, "offset", 0);
	if (!weighted && offset != 0)
		return fail(c, "offset %lld needs a weight operand; an unweighted norm takes offset 0",
			    (long long)offset);
	const ir_shape *x = in_shape(c, 0);
	int64_t group = ir_node_attr_int(c->n, "group", 0);
	if (group == 0)
		return true;
	ir_dim D = x->dim[x->rank - 1];
	char d[192];
	if (!ir_dim_is_const(D) || D.c % group != 0)
		return fail(c, "group %lld does not divide the last dim: %s", (long long)group, desc(c, 0, d, sizeof(d)));
	return true;
}

static bool infer_l2_norm(infer_ctx *c)
{
	return infer_norm_common(c, -1);
}

static bool infer_gated_rms_norm(infer_ctx *c)
{
	return need_float(c, 1) && need_same_shape(c, 0, 1) && infer_norm_common(c, 2);
}

static bool infer_unary(infer_ctx *c)
{
	if (!need_float(c, 0))
		return false;
	c->os[0] = *in_shape(c, 0);
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* b has a's shape, or a's trailing dims, or a's shape with the last dim 1. */
static bool broadcast_ok(const ir_shape *a, const ir_shape *b)
{
	if (ir_shape_eq(a, b))
		return true;
	if (b->rank < a->rank) {
		for (int i = 0; i < b->rank; i++)
			if (!ir_dim_eq(b->dim[i], a->dim[a->rank - b->rank + i]))
				return false;
		return true;
	}
	if (b->rank != a->rank || a->rank == 0 || !ir_dim_eq(b->dim[b->rank - 1], ir_dim_const(1)))
		return false;
	for (int i = 0; i + 1 < a->rank; i++)
		if (!ir_dim_eq(a->dim[i], b->dim[i]))
			return false;
	return true;
}

static bool infer_binary(infer_ctx *c)
{
	if (!need_float(c, 0) || !need_float(c, 1))
		return false;
	if (!broadcast_ok(in_shape(c, 0), in_shape(c, 1))) {
		char d1[192], d2[192];
		return fail(c, "b does not broadcast to a: %s, %s", desc(c, 0, d1, sizeof(d1)), desc(c, 1, d2, sizeof(d2)));
	}
	c->os[0] = *in_shape(c, 0);
	c->ot[0] = in_dtype(c, 0);
	return true;
}

static bool infer_swiglu(infer_ctx *c)
{
	return need_float(c, 1) && need_same_shape(c, 0, 1) && infer_unary(c);
}

/* YaRN: yarn_factor 0 (or absent) is none, whatever the other yarn_
 * attributes say (a model file may pass a config's values through); a
 * factor > 0 needs the original context, a base > 1 (the correction range
 * divides by ln base) and positive betas. */
static bool check_yarn(infer_ctx *c)
{
	double f = ir_node_attr_float(c->n, "yarn_factor", 0.0), base = ir_node_attr_float(c->n, "base", 0.0);
	double fast = ir_node_attr_float(c->n, "yarn_beta_fast", 32.0);
	double slow = ir_node_attr_float(c->n, "yarn_beta_slow", 1.0);
	int64_t ctx = ir_node_attr_int(c->n, "yarn_orig_ctx", 0);
	if (f == 0.0)
		return true;
	if (!(f > 0.0) || ctx < 1)
		return fail(c, "yarn_factor %g must be positive (0: no YaRN), with yarn_orig_ctx >= 1, got %lld", f,
			    (long long)ctx);
	if (!(base > 1.0) || !(fast > 0.0) || !(slow > 0.0))
		return fail(c, "YaRN needs base > 1 and positive betas, got base %g, yarn_beta_fast %g, yarn_beta_slow %g",
			    base, fast, slow);
	return true;
}

/* rope's attributes over operand 0's heads [.., .., D] (D constant):
 * rot_dim and YaRN. */
static bool check_rope_attrs(infer_ctx *c)
{
	int64_t d = in_shape(c, 0)->dim[2].c;
	int64_t rot = ir_node_attr_int(c->n, "rot_dim", d);
	char buf[192];
	if (rot < 2 || rot > d || rot % 2)
		return fail(c, "rot_dim %lld must be even and in [2, %lld]: %s", (long long)rot, (long long)d,
			    desc(c, 0, buf, sizeof(buf)));
	return check_yarn(c);
}

static bool infer_rope(infer_ctx *c)
{
	return need_rank(c, 0, 3) && need_const_dim(c, 0, 2) && infer_unary(c) && check_rope_attrs(c);
}

static bool heads_divide(infer_ctx *c, int qi, int qaxis, int ki, int kaxis)
{
	ir_dim hq = in_shape(c, qi)->dim[qaxis], hk = in_shape(c, ki)->dim[kaxis];
	if (ir_dim_is_const(hq) && ir_dim_is_const(hk) && hk.c > 0 && hq.c % hk.c == 0)
		return true;
	char d1[192], d2[192];
	return fail(c, "head count of %s is not a multiple of %s", desc(c, qi, d1, sizeof(d1)), desc(c, ki, d2, sizeof(d2)));
}

static bool infer_attention(infer_ctx *c)
{
	for (int i = 0; i < 3; i++)
		if (!need_rank(c, i, 3) || !need_float(c, i))
			return false;
	if (!need_dim_eq(c, 0, 2, 1, 2, "q and k head dims") || !need_dim_eq(c, 1, 0, 2, 0, "k and v lengths") ||
	    !need_dim_eq(c, 1, 1, 2, 1, "k and v head counts") || !heads_divide(c, 0, 1, 1, 1))
		return false;
	const ir_shape *q = in_shape(c, 0), *v = in_shape(c, 2);
	c->os[0] = mk_shape(3, (ir_dim[]){q->dim[0], q->dim[1], v->dim[2]});
	c->ot[0] = in_dtype(c, 0);
	return true;
}

static bool infer_softmax(infer_ctx *c)
{
	return need_rank_at_least(c, 0, 1) && infer_unary(c);
}

/* conv1d_causal (dilation 1) and conv1d_dilated: x[T,C], state[(K-1)*dil, C],
 * w[C,K] -> (y like x, new state like state). */
static bool infer_conv1d(infer_ctx *c)
{
	for (int i = 0; i < 3; i++)
		if (!need_rank(c, i, 2) || !need_float(c, i))
			return false;
	if (!need_dim_eq(c, 0, 1, 1, 1, "channels of x and state") || !need_dim_eq(c, 0, 1, 2, 0, "channels of x and w") ||
	    !need_const_dim(c, 2, 1) || !need_const_dim(c, 1, 0))
		return false;
	int64_t K = in_shape(c, 2)->dim[1].c, rows = in_shape(c, 1)->dim[0].c;
	int64_t dil = ir_node_attr_int(c->n, "dilation", 1);
	char d1[192], d2[192];
	if (K < 1 || rows != (K - 1) * dil) {
		if (dil == 1)
			return fail(c, "state rows must be kernel size - 1: %s, %s", desc(c, 1, d1, sizeof(d1)),
				    desc(c, 2, d2, sizeof(d2)));
		return fail(c, "state rows must be (kernel size - 1) * dilation %lld: %s, %s", (long long)dil,
			    desc(c, 1, d1, sizeof(d1)), desc(c, 2, d2, sizeof(d2)));
	}
	c->os[0] = *in_shape(c, 0);
	c->os[1] = *in_shape(c, 1);
	c->ot[0] = c->ot[1] = in_dtype(c, 0);
	return true;
}

static bool infer_gdr(infer_ctx *c)
{
	static const int ranks[6] = {3, 3, 3, 2, 2, 3};
	for (int i = 0; i < 6; i++)
		if (!need_rank(c, i, ranks[i]) || !need_float(c, i))
			return false;
	if (!need_same_shape(c, 0, 1) || !need_dim_eq(c, 0, 0, 2, 0, "token counts of q and v") ||
	    !need_dim_eq(c, 2, 0, 3, 0, "token counts of v and g") || !need_dim_eq(c, 2, 1, 3, 1, "head counts of v and g") ||
	    !need_same_shape(c, 3, 4) || !need_dim_eq(c, 2, 1, 5, 0, "value head counts of v and S") ||
	    !need_dim_eq(c, 0, 2, 5, 1, "key dims of k and S") || !need_dim_eq(c, 2, 2, 5, 2, "value dims of v and S") ||
	    !heads_divide(c, 2, 1, 0, 1))
		return false;
	c->os[0] = *in_shape(c, 2);
	c->os[1] = *in_shape(c, 5);
	c->ot[0] = in_dtype(c, 0);
	c->ot[1] = in_dtype(c, 5);
	return true;
}

/* topk / moe_route: x[T,N] -> two [T,k] results. */
static bool infer_select_k(infer_ctx *c, halo_dtype vals_dtype)
{
	if (!need_rank(c, 0, 2) || !need_float(c, 0) || !need_const_dim(c, 0, 1))
		return false;
	int64_t k = ir_node_attr_int(c->n, "k", 1);
	char d[192];
	if (k > in_shape(c, 0)->dim[1].c)
		return fail(c, "k = %lld exceeds the row length: %s", (long long)k, desc(c, 0, d, sizeof(d)));
	c->os[0] = c->os[1] = mk_shape(2, (ir_dim[]){in_shape(c, 0)->dim[0], ir_dim_const(k)});
	c->ot[0] = HALO_I32;
	c->ot[1] = vals_dtype;
	return true;
}

static bool infer_topk(infer_ctx *c)
{
	return infer_select_k(c, c->f->values[c->n->in[0]].dtype);
}

/* scaling multiplies the routing weights: a finite factor. */
static bool scaling_ok(infer_ctx *c)
{
	double s = ir_node_attr_float(c->n, "scaling", 1.0);
	if (isfinite(s))
		return true;
	return fail(c, "scaling %g must be finite", s);
}

/* moe_route (logits [T,E]) or (logits, bias [E]): the bias only selects. */
static bool infer_moe_route(infer_ctx *c)
{
	if (!infer_select_k(c, HALO_F32) || !scaling_ok(c))
		return false;
	if (c->n->n_in == 2 && (!need_rank(c, 1, 1) || !need_float(c, 1) ||
				!need_dim_eq(c, 0, 1, 1, 0, "expert counts of logits and bias")))
		return false;
	return true;
}

/* moe_route_hash (logits [T,E], table [V,k], tokens [T] i32) -> ids, w
 * [T,k]: the experts come from the table, k from its width. */
static bool infer_moe_route_hash(infer_ctx *c)
{
	if (!need_rank(c, 0, 2) || !need_float(c, 0) || !need_const_dim(c, 0, 1) || !need_rank(c, 1, 2) ||
	    !need_float(c, 1) || !need_const_dim(c, 1, 0) || !need_const_dim(c, 1, 1) || !need_rank(c, 2, 1) ||
	    !need_i32(c, 2) || !need_dim_eq(c, 0, 0, 2, 0, "token counts of logits and tokens") || !scaling_ok(c))
		return false;
	ir_dim k = in_shape(c, 1)->dim[1];
	char d1[192], d2[192];
	if (k.c > in_shape(c, 0)->dim[1].c)
		return fail(c, "the table selects more experts per token than there are: %s, %s",
			    desc(c, 1, d1, sizeof(d1)), desc(c, 0, d2, sizeof(d2)));
	c->os[0] = c->os[1] = mk_shape(2, (ir_dim[]){in_shape(c, 0)->dim[0], k});
	c->ot[0] = HALO_I32;
	c->ot[1] = HALO_F32;
	return true;
}

/* limit (moe_experts, moe_gate_up): 0 (none) or a positive clamp. */
static bool limit_ok(infer_ctx *c)
{
	double l = ir_node_attr_float(c->n, "limit", 0.0);
	if (isfinite(l) && l >= 0)
		return true;
	return fail(c, "limit %g must be finite and >= 0 (0: none)", l);
}

static bool infer_moe_experts(infer_ctx *c)
{
	static const int ranks[6] = {2, 2, 2, 3, 3, 3};
	for (int i = 0; i < 6; i++)
		if (!need_rank(c, i, ranks[i]))
			return false;
	if (!need_float(c, 0) || !need_i32(c, 1) || !need_float(c, 2) || !need_float(c, 3) || !need_float(c, 4) ||
	    !need_float(c, 5) || !need_same_shape(c, 1, 2) || !need_dim_eq(c, 0, 0, 1, 0, "token counts of x and ids") ||
	    !need_same_shape(c, 3, 4) || !need_dim_eq(c, 0, 1, 3, 2, "hidden dims of x and gate") ||
	    !need_dim_eq(c, 3, 0, 5, 0, "expert counts of gate and down") ||
	    !need_dim_eq(c, 3, 1, 5, 2, "ffn dims of gate and down") ||
	    !need_dim_eq(c, 0, 1, 5, 1, "hidden dims of x and down") || !limit_ok(c))
		return false;
	c->os[0] = *in_shape(c, 0);
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* moe_gate_up (x, ids, gate, up) -> act [T, k, F] (passes/split_moe.c). */
static bool infer_moe_gate_up(infer_ctx *c)
{
	static const int ranks[4] = {2, 2, 3, 3};
	for (int i = 0; i < 4; i++)
		if (!need_rank(c, i, ranks[i]))
			return false;
	if (!need_float(c, 0) || !need_i32(c, 1) || !need_float(c, 2) || !need_float(c, 3) ||
	    !need_dim_eq(c, 0, 0, 1, 0, "token counts of x and ids") || !need_same_shape(c, 2, 3) ||
	    !need_dim_eq(c, 0, 1, 2, 2, "hidden dims of x and gate") || !limit_ok(c))
		return false;
	c->os[0] = mk_shape(3, (ir_dim[]){in_shape(c, 0)->dim[0], in_shape(c, 1)->dim[1], in_shape(c, 2)->dim[1]});
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* moe_down (act [T,k,F], ids, w, down [E,H,F]) -> [T, H]. */
static bool infer_moe_down(infer_ctx *c)
{
	static const int ranks[4] = {3, 2, 2, 3};
	for (int i = 0; i < 4; i++)
		if (!need_rank(c, i, ranks[i]))
			return false;
	if (!need_float(c, 0) || !need_i32(c, 1) || !need_float(c, 2) || !need_float(c, 3) ||
	    !need_same_shape(c, 1, 2) || !need_dim_eq(c, 0, 0, 1, 0, "token counts of act and ids") ||
	    !need_dim_eq(c, 0, 1, 1, 1, "expert slots of act and ids") ||
	    !need_dim_eq(c, 0, 2, 3, 2, "ffn dims of act and down"))
		return false;
	c->os[0] = mk_shape(2, (ir_dim[]){in_shape(c, 0)->dim[0], in_shape(c, 3)->dim[1]});
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* argmax: one row a token, x[T, N] (its kernels give each token's row a
 * workgroup; rows of a [a*T, N] view would be mis-assigned). */
static bool infer_argmax(infer_ctx *c)
{
	if (!need_rank(c, 0, 2) || !need_float(c, 0))
		return false;
	ir_dim rows = in_shape(c, 0)->dim[0];
	if (rows.coef_T != 1 || rows.c != 0) {
		char d[192];
		return fail(c, "operand 0 must be [T, N], one row a token: %s", desc(c, 0, d, sizeof(d)));
	}
	c->os[0] = mk_shape(1, (ir_dim[]){in_shape(c, 0)->dim[0]});
	c->ot[0] = HALO_I32;
	return true;
}

/* reduce_mean: x with the axis removed; the axis must be a constant dim. */
static bool infer_reduce_mean(infer_ctx *c)
{
	const ir_shape *x = in_shape(c, 0);
	int64_t axis = ir_node_attr_int(c->n, "axis", -1);
	char d[192];
	if (!need_rank_at_least(c, 0, 2) || !need_float(c, 0))
		return false;
	if (axis < 0 || axis >= x->rank)
		return fail(c, "axis %lld out of range: %s", (long long)axis, desc(c, 0, d, sizeof(d)));
	if (!need_const_dim(c, 0, (int)axis))
		return false;
	ir_shape y = {.rank = x->rank - 1};
	for (int i = 0, j = 0; i < x->rank; i++)
		if (i != axis)
			y.dim[j++] = x->dim[i];
	c->os[0] = y;
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* ngram_embed: table[R,dP], ids[T] i32, hist[N-1] -> [T, heads*dP], hist'. */
static bool infer_ngram_embed(infer_ctx *c)
{
	if (!need_rank(c, 0, 2) || !need_float(c, 0) || !need_const_dim(c, 0, 1) || !need_rank(c, 1, 1) ||
	    !need_i32(c, 1) || !need_rank(c, 2, 1) || !need_float(c, 2) || !need_const_dim(c, 2, 0))
		return false;
	int64_t n = ir_node_attr_int(c->n, "ngram", 2), hpn = ir_node_attr_int(c->n, "heads_per_ngram", 1);
	char d[192];
	if (in_shape(c, 2)->dim[0].c != n - 1)
		return fail(c, "the history holds ngram - 1 = %lld ids: %s", (long long)(n - 1), desc(c, 2, d, sizeof(d)));
	int64_t width;
	if (__builtin_mul_overflow((n - 1) * hpn, in_shape(c, 0)->dim[1].c, &width))
		return fail(c, "embedding width overflows");
	c->os[0] = mk_shape(2, (ir_dim[]){in_shape(c, 1)->dim[0], ir_dim_const(width)});
	c->os[1] = *in_shape(c, 2);
	c->ot[0] = in_dtype(c, 0);
	c->ot[1] = in_dtype(c, 2);
	return true;
}

/* qsa_select: q[T,h,d], keys[C,d], k_norm[d] -> mask[T,C]. */
static bool infer_qsa_select(infer_ctx *c)
{
	if (!need_rank(c, 0, 3) || !need_rank(c, 1, 2) || !need_rank(c, 2, 1) || !need_float(c, 0) ||
	    !need_float(c, 1) || !need_float(c, 2) || !need_const_dim(c, 1, 0) ||
	    !need_dim_eq(c, 0, 2, 1, 1, "head dims of q and keys") || !need_dim_eq(c, 1, 1, 2, 0, "dims of keys and k_norm"))
		return false;
	int64_t rot = ir_node_attr_int(c->n, "rot_dim", 2), dI = in_shape(c, 1)->dim[1].c;
	char d[192];
	if (rot % 2 || rot > dI)
		return fail(c, "rot_dim %lld must be even and at most the head dim: %s", (long long)rot,
			    desc(c, 1, d, sizeof(d)));
	c->os[0] = mk_shape(2, (ir_dim[]){in_shape(c, 0)->dim[0], in_shape(c, 1)->dim[0]});
	c->ot[0] = HALO_F32;
	return true;
}

/* qsa_select_blocks: qsa_select's operands, then sync [t, 1] i32, a counter
 * per token of a step of at most t. */
static bool infer_qsa_select_blocks(infer_ctx *c)
{
	return infer_qsa_select(c) && need_rank(c, 3, 2) && need_i32(c, 3) && need_const_dim(c, 3, 0);
}

static bool infer_masked_attention(infer_ctx *c)
{
	if (!need_rank(c, 3, 2) || !need_float(c, 3) || !need_dim_eq(c, 0, 0, 3, 0, "token counts of q and mask") ||
	    !need_dim_eq(c, 1, 0, 3, 1, "cache lengths of k and mask"))
		return false;
	return infer_attention(c);
}

/* attention_partial (q, k [C,hk,D], v [C,hk,dv]) -> part [T, hq, S, dv + 2],
 * S = ceil(C / block): per block of keys its output sum, max score and
 * denominator. */
static bool infer_attention_partial(infer_ctx *c)
{
	if (!infer_attention(c) || !need_const_dim(c, 1, 0))
		return false;
	int64_t C = in_shape(c, 1)->dim[0].c, block = ir_node_attr_int(c->n, "block", 1);
	const ir_shape *y = &c->os[0];
	c->os[0] = mk_shape(4, (ir_dim[]){y->dim[0], y->dim[1], {.c = (C + block - 1) / block},
					 {.c = y->dim[2].c + 2}});
	return true;
}

/* attention_blocks (q, k, v, sync [t, hq] i32) -> (y [T, hq, dv], part
 * [T, hq, S, dv + 2]): attention_partial's blocks and their merge in one node.
 * Each of a step's (token, head) rows takes one counter of sync, so its
 * rows bound the step's tokens. */
static bool infer_attention_blocks(infer_ctx *c)
{
	if (!infer_attention_partial(c) || !need_rank(c, 3, 2) || !need_i32(c, 3) || !need_const_dim(c, 3, 0) ||
	    !need_dim_eq(c, 0, 1, 3, 1, "query heads of q and sync"))
		return false;
	const ir_shape *part = &c->os[0];
	c->os[1] = *part;
	c->ot[1] = in_dtype(c, 0);
	c->os[0] = mk_shape(3, (ir_dim[]){part->dim[0], part->dim[1], {.c = part->dim[3].c - 2}});
	return true;
}

/* masked_attention_blocks (q, k, v, sync, mask [T, C]) -> (y, part):
 * attention_blocks whose keys count where the mask is non-zero. */
static bool infer_masked_attention_blocks(infer_ctx *c)
{
	return infer_attention_blocks(c) && need_rank(c, 4, 2) && need_float(c, 4) &&
	       need_dim_eq(c, 0, 0, 4, 0, "token counts of q and mask") &&
	       need_dim_eq(c, 1, 0, 4, 1, "cache lengths of k and mask");
}

/* attention_rope (q, k, v, sync, k_new [T, hk, D], q_norm [D], k_norm [D])
 * -> (y, part, k_out [T, hk, D]): attention_blocks over q and k_new as they
 * are after their heads' norm and rope, k_out the latter. */
static bool infer_attention_rope(infer_ctx *c)
{
	if (!infer_attention_blocks(c) || !need_rank(c, 4, 3) || !need_float(c, 4) ||
	    !need_dim_eq(c, 0, 0, 4, 0, "token counts of q and k_new") ||
	    !need_dim_eq(c, 1, 1, 4, 1, "kv heads of k and k_new") || !need_dim_eq(c, 1, 2, 4, 2, "head dims of k and k_new"))
		return false;
	for (int i = 5; i < 7; i++)
		if (!need_rank(c, i, 1) || !need_float(c, i) || !need_dim_eq(c, i, 0, 0, 2, "norm weight and head dim"))
			return false;
	c->os[2] = *in_shape(c, 4);
	c->ot[2] = in_dtype(c, 4);
	return need_const_dim(c, 0, 2) && check_rope_attrs(c);
}

/* attention_combine (part [T, hq, S, dv + 2]) -> [T, hq, dv]. */
static bool infer_attention_combine(infer_ctx *c)
{
	if (!need_rank(c, 0, 4) || !need_float(c, 0) || !need_const_dim(c, 0, 2) || !need_const_dim(c, 0, 3))
		return false;
	const ir_shape *p = in_shape(c, 0);
	if (p->dim[3].c < 3) {
		char d[192];
		return fail(c, "partial rows must hold dv + 2 >= 3 values: %s", desc(c, 0, d, sizeof(d)));
	}
	c->os[0] = mk_shape(3, (ir_dim[]){p->dim[0], p->dim[1], {.c = p->dim[3].c - 2}});
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* ---- DeepSeek V4: mHC ---------------------------------------------------------- */

/* hc_weights (mix [T,M], base [M], scale [S]): three results (pre [T,n],
 * post [T,n], comb [T,n,n]) with M = (2+n)*n and S = 3, or the HyperHead's
 * one (pre [T,n]) with M = n and S = 1. All f32. */
static bool infer_hc_weights(infer_ctx *c)
{
	if (!need_rank(c, 0, 2) || !need_float(c, 0) || !need_const_dim(c, 0, 1) || !need_rank(c, 1, 1) ||
	    !need_float(c, 1) || !need_dim_eq(c, 0, 1, 1, 0, "mixing widths of mix and base") || !need_rank(c, 2, 1) ||
	    !need_float(c, 2) || !need_const_dim(c, 2, 0))
		return false;
	bool full = c->n->n_out == 3;
	if (!full && c->n->n_out != 1)
		return fail(c, "has 1 result (the HyperHead's pre) or 3 (pre, post, comb), got %d", c->n->n_out);
	int64_t M = in_shape(c, 0)->dim[1].c, n = M;
	char d[192];
	if (full) /* the n with (2+n)*n = M, if any */
		for (n = 1; (2 + n) * n < M; n++)
			;
	if ((full ? (2 + n) * n : n) != M)
		return fail(c, "mix's width must be (2+n)*n for pre, post and comb: %s", desc(c, 0, d, sizeof(d)));
	if (in_shape(c, 2)->dim[0].c != (full ? 3 : 1))
		return fail(c, "scale holds %d factor(s) for %d result(s): %s", full ? 3 : 1, c->n->n_out,
			    desc(c, 2, d, sizeof(d)));
	ir_dim T = in_shape(c, 0)->dim[0];
	/* os and ot hold n_out entries: the HyperHead form writes one */
	c->os[0] = mk_shape(2, (ir_dim[]){T, ir_dim_const(n)});
	c->ot[0] = HALO_F32;
	if (full) {
		c->os[1] = c->os[0];
		c->os[2] = mk_shape(3, (ir_dim[]){T, ir_dim_const(n), ir_dim_const(n)});
		c->ot[1] = c->ot[2] = HALO_F32;
	}
	return true;
}

/* x [T,n,H] and a [T,n] weight per stream (operand wi). */
static bool streams_ok(infer_ctx *c, int wi)
{
	return need_rank(c, 0, 3) && need_float(c, 0) && need_const_dim(c, 0, 1) && need_rank(c, wi, 2) &&
	       need_float(c, wi) && need_dim_eq(c, 0, 0, wi, 0, "token counts") &&
	       need_dim_eq(c, 0, 1, wi, 1, "stream counts");
}

/* hc_collapse (x [T,n,H], pre [T,n]) -> [T,H]. */
static bool infer_hc_collapse(infer_ctx *c)
{
	if (!streams_ok(c, 1))
		return false;
	const ir_shape *x = in_shape(c, 0);
	c->os[0] = mk_shape(2, (ir_dim[]){x->dim[0], x->dim[2]});
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* compress_kv (c [N, w*D], z [N, w*D], bias [m, w*D]) -> [T, D], w = 1 + overlap. */
static bool infer_compress_kv(infer_ctx *c)
{
	for (int i = 0; i < 3; i++)
		if (!need_rank(c, i, 2) || !need_float(c, i) || !need_const_dim(c, i, 0) || !need_const_dim(c, i, 1))
			return false;
	if (!need_same_shape(c, 0, 1) || !need_dim_eq(c, 0, 1, 2, 1, "row widths of c and bias"))
		return false;
	int64_t m = ir_node_attr_int(c->n, "ratio", 1), w = 1 + ir_node_attr_int(c->n, "overlap", 0);
	int64_t width = in_shape(c, 0)->dim[1].c;
	char d[192];
	if (in_shape(c, 2)->dim[0].c != m)
		return fail(c, "the bias has one row per slot of a window, ratio = %lld: %s", (long long)m,
			    desc(c, 2, d, sizeof(d)));
	if (width % w)
		return fail(c, "with overlap a row holds two halves, its width must be even: %s", desc(c, 0, d, sizeof(d)));
	c->os[0] = mk_shape(2, (ir_dim[]){{1, 0}, {0, width / w}});
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* hc_expand (x [T,n,H], y [T,H], post [T,n], comb [T,n,n]) -> [T,n,H]. */
static bool infer_hc_expand(infer_ctx *c)
{
	if (!streams_ok(c, 2) || !need_rank(c, 1, 2) || !need_float(c, 1) ||
	    !need_dim_eq(c, 0, 0, 1, 0, "token counts of x and y") ||
	    !need_dim_eq(c, 0, 2, 1, 1, "widths of x and y") ||
	    !need_rank(c, 3, 3) || !need_float(c, 3) || !need_dim_eq(c, 0, 0, 3, 0, "token counts of x and comb") ||
	    !need_dim_eq(c, 0, 1, 3, 1, "stream counts of x and comb's rows") ||
	    !need_dim_eq(c, 0, 1, 3, 2, "stream counts of x and comb's columns"))
		return false;
	c->os[0] = *in_shape(c, 0);
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* hc_inject (x [T,n,H], y [T,H], g [T,n]) -> [T,n,H]. */
static bool infer_hc_inject(infer_ctx *c)
{
	if (!streams_ok(c, 2) || !need_rank(c, 1, 2) || !need_float(c, 1) ||
	    !need_dim_eq(c, 0, 0, 1, 0, "token counts of x and y") || !need_dim_eq(c, 0, 2, 1, 1, "widths of x and y"))
		return false;
	c->os[0] = *in_shape(c, 0);
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* hc_inject_norm (x [T,n,H], y [T,H], g [T,n], w [n*H]) -> (hc_inject's
 * streams and their rms_norm over each stream of H, both [T,n*H]: the
 * residual as the next sublayer reads it). */
static bool infer_hc_inject_norm(infer_ctx *c)
{
	if (!infer_hc_inject(c) || !need_const_dim(c, 0, 2) || !need_rank(c, 3, 1) || !need_float(c, 3))
		return false;
	const ir_shape *x = in_shape(c, 0), *w = in_shape(c, 3);
	int64_t W = x->dim[1].c * x->dim[2].c;
	if (!ir_dim_is_const(w->dim[0]) || w->dim[0].c != W) {
		char d[192];
		return fail(c, "the norm weight must hold n * H = %lld values: %s", (long long)W, desc(c, 3, d, sizeof(d)));
	}
	c->os[0] = c->os[1] = mk_shape(2, (ir_dim[]){x->dim[0], {0, W}});
	c->ot[1] = in_dtype(c, 0);
	return true;
}

/* The operands of index_topk and index_score: q [T,h,d], w [T,h], keys [E,d]. */
static bool need_index_operands(infer_ctx *c)
{
	static const int ranks[3] = {3, 2, 2};
	for (int i = 0; i < 3; i++)
		if (!need_rank(c, i, ranks[i]) || !need_float(c, i))
			return false;
	return need_dim_eq(c, 0, 0, 1, 0, "token counts of q and w") &&
	       need_dim_eq(c, 0, 1, 1, 1, "head counts of q and w") &&
	       need_dim_eq(c, 0, 2, 2, 1, "head dims of q and keys") && need_const_dim(c, 2, 0);
}

/* index_topk (q [T,h,d], w [T,h], keys [E,d]) -> ids [T,k] i32. */
static bool infer_index_topk(infer_ctx *c)
{
	if (!need_index_operands(c))
		return false;
	c->os[0] = mk_shape(2, (ir_dim[]){in_shape(c, 0)->dim[0], ir_dim_const(ir_node_attr_int(c->n, "k", 1))});
	c->ot[0] = HALO_I32;
	return true;
}

/* index_score (q [T,h,d], w [T,h], keys [E,d]) -> scores [T,E] f32. */
static bool infer_index_score(infer_ctx *c)
{
	if (!need_index_operands(c))
		return false;
	c->os[0] = mk_shape(2, (ir_dim[]){in_shape(c, 0)->dim[0], in_shape(c, 2)->dim[0]});
	c->ot[0] = HALO_F32;
	return true;
}

/* index_select (scores [T,E]) -> ids [T,k] i32. */
static bool infer_index_select(infer_ctx *c)
{
	if (!need_rank(c, 0, 2) || !need_float(c, 0) || !need_const_dim(c, 0, 1))
		return false;
	c->os[0] = mk_shape(2, (ir_dim[]){in_shape(c, 0)->dim[0], ir_dim_const(ir_node_attr_int(c->n, "k", 1))});
	c->ot[0] = HALO_I32;
	return true;
}

/* sink_attention (q [T,h,D], kv [N,D], sinks [h]) with entries [E,D] and
 * then ids [T,k] i32 optional -> [T,h,D]. */
static bool infer_sink_attention(infer_ctx *c)
{
	static const int ranks[5] = {3, 2, 1, 2, 2};
	int n = c->n->n_in;
	for (int i = 0; i < n; i++)
		if (!need_rank(c, i, ranks[i]) || (i < 4 && !need_float(c, i)))
			return false;
	if (!need_dim_eq(c, 0, 2, 1, 1, "head dims of q and kv") || !need_const_dim(c, 1, 0) ||
	    !need_dim_eq(c, 0, 1, 2, 0, "head counts of q and sinks"))
		return false;
	if (n >= 4 && (!need_dim_eq(c, 0, 2, 3, 1, "head dims of q and entries") || !need_const_dim(c, 3, 0)))
		return false;
	if (n == 5 && (!need_i32(c, 4) || !need_dim_eq(c, 0, 0, 4, 0, "token counts of q and ids") ||
		       !need_const_dim(c, 4, 1)))
		return false;
	if ((n >= 4) != (ir_node_attr(c->n, "ratio") != NULL))
		return fail(c, n >= 4 ? "entries need ratio, the tokens per entry" : "ratio applies to entries only");
	c->os[0] = *in_shape(c, 0);
	c->ot[0] = in_dtype(c, 0);
	return true;
}

/* sink_attention_partial (sink_attention's operands) -> part [T, h, S, D + 2],
 * S = ceil(L / block) for the longest key list L a row can have: the
 * window's rows (at most N), then the ids' k or the E entries. */
static bool infer_sink_attention_partial(infer_ctx *c)
{
	if (!infer_sink_attention(c))
		return false;
	int n = c->n->n_in;
	int64_t more = n == 5 ? in_shape(c, 4)->dim[1].c : n == 4 ? in_shape(c, 3)->dim[0].c : 0;
	int64_t L = ir_sink_keys_max(ir_node_attr_int(c->n, "window", 1), in_shape(c, 1)->dim[0].c, more);
	int64_t block = ir_node_attr_int(c->n, "block", 1);
	const ir_shape *y = &c->os[0];
	c->os[0] = mk_shape(4, (ir_dim[]){y->dim[0], y->dim[1], {.c = (L + block - 1) / block}, {.c = y->dim[2].c + 2}});
	return true;
}

int64_t ir_sink_keys_max(int64_t window, int64_t N, int64_t more)
{
	return (window < N ? window : N) + more;
}

/* ---- the table -------------------------------------------------------------- */

typedef struct {
	ir_op_info info;
	infer_fn rule;
} op_def;

#define ATTRS(a) .n_attrs = (int)(sizeof(a) / sizeof(a[0])), .attrs = a
#define UN IR_OPF_UNARY | IR_OPF_PURE | IR_OPF_EPILOGUE
#define BIN IR_OPF_BINARY | IR_OPF_PURE | IR_OPF_EPILOGUE
#define PURE IR_OPF_PURE
#define EPI IR_OPF_PURE | IR_OPF_EPILOGUE
#define STEPS IR_OPF_STEPS

static const op_def ops[IR_OP_COUNT] = {
	[IR_OP_WEIGHT] = {{IR_OP_WEIGHT, 0, 0, 1, PURE, 0, NULL}, infer_source},
	[IR_OP_STATE_READ] = {{IR_OP_STATE_READ, 0, 0, 1, 0, 0, NULL}, infer_source},
	[IR_OP_STATE_WRITE] = {{IR_OP_STATE_WRITE, 1, 1, 0, IR_OPF_SINK, ATTRS(a_state_write)}, infer_state_write},
	[IR_OP_CALL] = {{IR_OP_CALL, 0, -1, IR_OP_VARIADIC, 0, ATTRS(a_call)}, infer_call},
	[IR_OP_EMBED] = {{IR_OP_EMBED, 2, 2, 1, PURE, ATTRS(a_embed)}, infer_embed},
	[IR_OP_RESHAPE] = {{IR_OP_RESHAPE, 1, 1, 1, PURE, ATTRS(a_reshape)}, infer_reshape},
	[IR_OP_SLICE] = {{IR_OP_SLICE, 1, 1, 1, PURE, ATTRS(a_slice)}, infer_slice},
	[IR_OP_CONCAT] = {{IR_OP_CONCAT, 2, 2, 1, PURE, ATTRS(a_concat)}, infer_concat},
	[IR_OP_REPEAT_HEADS] = {{IR_OP_REPEAT_HEADS, 1, 1, 1, PURE, ATTRS(a_repeat)}, infer_repeat_heads},
	[IR_OP_MATMUL] = {{IR_OP_MATMUL, 2, 2, IR_OP_VARIADIC, EPI, ATTRS(a_matmul)}, infer_matmul},
	[IR_OP_RMS_NORM] = {{IR_OP_RMS_NORM, 1, 2, 1, EPI, ATTRS(a_rms)}, infer_rms_norm},
	[IR_OP_L2_NORM] = {{IR_OP_L2_NORM, 1, 1, 1, EPI, ATTRS(a_l2)}, infer_l2_norm},
	[IR_OP_GATED_RMS_NORM] = {{IR_OP_GATED_RMS_NORM, 3, 3, 1, EPI, ATTRS(a_gated_rms)}, infer_gated_rms_norm},
/* The elementwise ops, by their class in kernels/ops.def: swiglu (GATE)
 * takes same-shaped operands and is fused by fuse_gates, not as a chain link. */
#define ELEM_OTHER(id)
#define ELEM_UNARY(id) [IR_OP_##id] = {{IR_OP_##id, 1, 1, 1, UN, 0, NULL}, infer_unary},
#define ELEM_SCALED(id) [IR_OP_##id] = {{IR_OP_##id, 1, 1, 1, UN, ATTRS(a_scale)}, infer_unary},
#define ELEM_BINARY(id) [IR_OP_##id] = {{IR_OP_##id, 2, 2, 1, BIN, 0, NULL}, infer_binary},
#define ELEM_GATE(id) [IR_OP_##id] = {{IR_OP_##id, 2, 2, 1, PURE, 0, NULL}, infer_swiglu},
#define IR_OP(id, name, cls, expr) ELEM_##cls(id)
#include "kernels/ops.def"
#undef IR_OP
#undef ELEM_OTHER
#undef ELEM_UNARY
#undef ELEM_SCALED
#undef ELEM_BINARY
#undef ELEM_GATE
	[IR_OP_ROPE] = {{IR_OP_ROPE, 1, 1, 1, EPI, ATTRS(a_rope)}, infer_rope},
	[IR_OP_ATTENTION] = {{IR_OP_ATTENTION, 3, 3, 1, EPI, ATTRS(a_scale_attr)}, infer_attention},
	[IR_OP_SOFTMAX] = {{IR_OP_SOFTMAX, 1, 1, 1, EPI, 0, NULL}, infer_softmax},
	[IR_OP_CONV1D_CAUSAL] = {{IR_OP_CONV1D_CAUSAL, 3, 3, 2, PURE | STEPS, ATTRS(a_conv)}, infer_conv1d},
	[IR_OP_GATED_DELTA_RULE] = {{IR_OP_GATED_DELTA_RULE, 6, 6, 2, PURE | STEPS, ATTRS(a_scale_attr)}, infer_gdr},
	[IR_OP_TOPK] = {{IR_OP_TOPK, 1, 1, 2, PURE, ATTRS(a_topk)}, infer_topk},
	[IR_OP_MOE_ROUTE] = {{IR_OP_MOE_ROUTE, 1, 2, 2, PURE, ATTRS(a_moe_route)}, infer_moe_route},
	[IR_OP_MOE_EXPERTS] = {{IR_OP_MOE_EXPERTS, 6, 6, 1, PURE, ATTRS(a_moe_limit)}, infer_moe_experts},
	[IR_OP_ARGMAX] = {{IR_OP_ARGMAX, 1, 1, 1, PURE, 0, NULL}, infer_argmax},
	[IR_OP_REDUCE_MEAN] = {{IR_OP_REDUCE_MEAN, 1, 1, 1, PURE, ATTRS(a_reduce)}, infer_reduce_mean},
	/* not marked unary: no kernel generator knows it, so it must not be fused */
	[IR_OP_SIGNED_SQRT] = {{IR_OP_SIGNED_SQRT, 1, 1, 1, PURE, ATTRS(a_signed_sqrt)}, infer_unary},
	[IR_OP_NGRAM_EMBED] = {{IR_OP_NGRAM_EMBED, 3, 3, 2, PURE | STEPS, ATTRS(a_ngram)}, infer_ngram_embed},
	[IR_OP_CONV1D_DILATED] = {{IR_OP_CONV1D_DILATED, 3, 3, 2, PURE | STEPS, ATTRS(a_conv_dilated)}, infer_conv1d},
	[IR_OP_QSA_SELECT] = {{IR_OP_QSA_SELECT, 3, 3, 1, PURE, ATTRS(a_qsa_select)}, infer_qsa_select},
	[IR_OP_QSA_SELECT_BLOCKS] = {{IR_OP_QSA_SELECT_BLOCKS, 4, 4, 1, PURE, ATTRS(a_qsa_select)},
				     infer_qsa_select_blocks},
	[IR_OP_MASKED_ATTENTION] = {{IR_OP_MASKED_ATTENTION, 4, 4, 1, PURE, ATTRS(a_scale_attr)},
				    infer_masked_attention},
	[IR_OP_ROWS_AT_POS] = {{IR_OP_ROWS_AT_POS, 1, 1, 1, PURE, ATTRS(a_rows_at_pos)}, infer_rows_at_pos},
	[IR_OP_MOE_GATE_UP] = {{IR_OP_MOE_GATE_UP, 4, 4, 1, PURE, ATTRS(a_moe_limit)}, infer_moe_gate_up},
	[IR_OP_MOE_DOWN] = {{IR_OP_MOE_DOWN, 4, 4, 1, PURE, 0, NULL}, infer_moe_down},
	[IR_OP_ATTENTION_PARTIAL] = {{IR_OP_ATTENTION_PARTIAL, 3, 3, 1, PURE, ATTRS(a_attention_partial)},
				     infer_attention_partial},
	[IR_OP_ATTENTION_COMBINE] = {{IR_OP_ATTENTION_COMBINE, 1, 1, 1, EPI, 0, NULL}, infer_attention_combine},
	[IR_OP_ATTENTION_BLOCKS] = {{IR_OP_ATTENTION_BLOCKS, 4, 4, 2, EPI, ATTRS(a_attention_partial)},
				    infer_attention_blocks},
	[IR_OP_HC_WEIGHTS] = {{IR_OP_HC_WEIGHTS, 3, 3, IR_OP_VARIADIC, PURE, ATTRS(a_hc_weights)}, infer_hc_weights},
	[IR_OP_HC_COLLAPSE] = {{IR_OP_HC_COLLAPSE, 2, 2, 1, PURE, 0, NULL}, infer_hc_collapse},
	[IR_OP_HC_EXPAND] = {{IR_OP_HC_EXPAND, 4, 4, 1, PURE, 0, NULL}, infer_hc_expand},
	[IR_OP_HC_INJECT] = {{IR_OP_HC_INJECT, 3, 3, 1, PURE, 0, NULL}, infer_hc_inject},
	[IR_OP_ATTENTION_ROPE] = {{IR_OP_ATTENTION_ROPE, 7, 7, 3, EPI, ATTRS(a_attention_rope)}, infer_attention_rope},
	[IR_OP_MASKED_ATTENTION_BLOCKS] = {{IR_OP_MASKED_ATTENTION_BLOCKS, 5, 5, 2, PURE, ATTRS(a_attention_partial)},
					   infer_masked_attention_blocks},
	[IR_OP_MOE_ROUTE_HASH] = {{IR_OP_MOE_ROUTE_HASH, 3, 3, 2, PURE, ATTRS(a_moe_route_hash)},
				  infer_moe_route_hash},
	[IR_OP_COMPRESS_KV] = {{IR_OP_COMPRESS_KV, 3, 3, 1, PURE, ATTRS(a_compress_kv)}, infer_compress_kv},
	[IR_OP_INDEX_TOPK] = {{IR_OP_INDEX_TOPK, 3, 3, 1, PURE, ATTRS(a_index_topk)}, infer_index_topk},
	[IR_OP_SINK_ATTENTION] = {{IR_OP_SINK_ATTENTION, 3, 5, 1, PURE, ATTRS(a_sink_attention)},
				  infer_sink_attention},
	[IR_OP_SINK_ATTENTION_PARTIAL] = {{IR_OP_SINK_ATTENTION_PARTIAL, 3, 5, 1, PURE, ATTRS(a_sink_attention_partial)},
					  infer_sink_attention_partial},
	[IR_OP_INDEX_SCORE] = {{IR_OP_INDEX_SCORE, 3, 3, 1, PURE, ATTRS(a_index_score)}, infer_index_score},
	[IR_OP_INDEX_SELECT] = {{IR_OP_INDEX_SELECT, 1, 1, 1, PURE, ATTRS(a_index_select)}, infer_index_select},
	[IR_OP_HC_INJECT_NORM] = {{IR_OP_HC_INJECT_NORM, 4, 4, 2, PURE, ATTRS(a_hc_inject_norm)},
				  infer_hc_inject_norm},
};

const ir_op_info *ir_op_get(ir_op op)
{
	return (unsigned)op < IR_OP_COUNT ? &ops[op].info : NULL;
}

const ir_attr_schema *ir_op_attr_schema(ir_op op, const char *name)
{
	const ir_op_info *info = ir_op_get(op);
	for (int i = 0; info && i < info->n_attrs; i++)
		if (strcmp(info->attrs[i].name, name) == 0)
			return &info->attrs[i];
	return NULL;
}

static unsigned op_flags(ir_op op)
{
	const ir_op_info *info = ir_op_get(op);
	return info ? info->flags : 0;
}

bool ir_op_is_unary(ir_op op)
{
	return op_flags(op) & IR_OPF_UNARY;
}

bool ir_op_is_binary(ir_op op)
{
	return op_flags(op) & IR_OPF_BINARY;
}

bool ir_op_is_elementwise(ir_op op)
{
	return op_flags(op) & (IR_OPF_UNARY | IR_OPF_BINARY);
}

bool ir_op_result_count_ok(ir_op op, int n)
{
	const ir_op_info *info = ir_op_get(op);
	return info && (info->n_out == IR_OP_VARIADIC || n == info->n_out ||
			((info->flags & IR_OPF_STEPS) && n == info->n_out + 1));
}

bool ir_op_is_sink(ir_op op)
{
	return op_flags(op) & IR_OPF_SINK;
}

bool ir_op_is_pure(ir_op op)
{
	return op_flags(op) & IR_OPF_PURE;
}

bool ir_op_takes_epilogue(ir_op op)
{
	return op_flags(op) & IR_OPF_EPILOGUE;
}

static const char *const kind_names[] = {
	[IR_ATTR_INT] = "an int", [IR_ATTR_FLOAT] = "a float", [IR_ATTR_STR] = "a string",
	[IR_ATTR_INTS] = "a list of ints", [IR_ATTR_SHAPE] = "a shape",
};

bool ir_op_check_attr(ir_op op, const ir_attr *a, ir_loc loc, ir_error *err)
{
	const ir_attr_schema *s = ir_op_attr_schema(op, a->name);
	if (!s) {
		ir_error_set(err, loc, "%s has no attribute '%s'", ir_op_name(op), a->name);
		return false;
	}
	if (s->kind != a->kind) {
		ir_error_set(err, loc, "%s attribute '%s' must be %s", ir_op_name(op), a->name, kind_names[s->kind]);
		return false;
	}
	if (s->kind == IR_ATTR_INT && (a->i < s->min_i || a->i > s->max_i)) {
		if (s->max_i == BIG)
			ir_error_set(err, loc, "%s attribute '%s' must be >= %lld, got %lld", ir_op_name(op), a->name,
				     (long long)s->min_i, (long long)a->i);
		else
			ir_error_set(err, loc, "%s attribute '%s' must be in [%lld, %lld], got %lld", ir_op_name(op),
				     a->name, (long long)s->min_i, (long long)s->max_i, (long long)a->i);
		return false;
	}
	if (s->kind == IR_ATTR_STR && s->choices) {
		for (int i = 0; s->choices[i]; i++)
			if (strcmp(s->choices[i], a->s) == 0)
				return true;
		char list[160] = "";
		for (int i = 0, at = 0; s->choices[i] && at < (int)sizeof list; i++)
			at += snprintf(list + at, sizeof list - (size_t)at, "%s%s", i ? ", " : "", s->choices[i]);
		ir_error_set(err, loc, "%s attribute '%s' must be one of %s, got '%s'", ir_op_name(op), a->name, list,
			     a->s);
		return false;
	}
	return true;
}

static bool check_operands(const ir_func *f, const ir_node *n, const ir_op_info *info, ir_error *err)
{
	if (n->n_in < info->min_in || (info->max_in >= 0 && n->n_in > info->max_in)) {
		if (info->max_in > info->min_in)
			ir_error_set(err, n->loc, "%s '%s': takes %d to %d operands, got %d", ir_op_name(n->op),
				     n->name ? n->name : "?", info->min_in, info->max_in, n->n_in);
		else
			ir_error_set(err, n->loc, "%s '%s': takes %d operand(s), got %d", ir_op_name(n->op),
				     n->name ? n->name : "?", info->min_in, n->n_in);
		return false;
	}
	if (!ir_op_result_count_ok(n->op, n->n_out)) {
		ir_error_set(err, n->loc, "%s '%s': has %d result(s), got %d", ir_op_name(n->op), n->name ? n->name : "?",
			     info->n_out, n->n_out);
		return false;
	}
	for (int i = 0; i < n->n_in; i++) {
		const ir_value *v = n->in[i] >= 0 && n->in[i] < f->n_values ? &f->values[n->in[i]] : NULL;
		if (!v || !v->shape_known) {
			ir_error_set(err, n->loc, "%s '%s': operand %d ('%s') has no known shape", ir_op_name(n->op),
				     n->name ? n->name : "?", i, v && v->name ? v->name : "?");
			return false;
		}
	}
	return true;
}

static bool check_required_attrs(const ir_node *n, const ir_op_info *info, ir_error *err)
{
	for (int i = 0; i < info->n_attrs; i++) {
		if (info->attrs[i].presence == IR_ATTR_REQUIRED && !ir_node_attr(n, info->attrs[i].name)) {
			ir_error_set(err, n->loc, "%s '%s': missing attribute '%s'", ir_op_name(n->op),
				     n->name ? n->name : "?", info->attrs[i].name);
			return false;
		}
	}
	return true;
}

/* The optional result of an IR_OPF_STEPS op: result `state` with T in front. */
static bool infer_steps(const ir_node *n, int state, ir_shape *os, halo_dtype *ot, ir_error *err)
{
	const ir_shape *s = &os[state];
	if (s->rank >= IR_MAX_RANK) {
		ir_error_set(err, n->loc, "%s '%s': its state has rank %d, so its state after each token would "
			     "exceed rank %d", ir_op_name(n->op), n->name, s->rank, IR_MAX_RANK);
		return false;
	}
	ir_shape *o = &os[n->n_out - 1];
	o->rank = s->rank + 1;
	o->dim[0] = (ir_dim){1, 0};
	for (int i = 0; i < s->rank; i++)
		o->dim[i + 1] = s->dim[i];
	ot[n->n_out - 1] = ot[state];
	return true;
}

bool ir_op_infer(const ir_module *m, const ir_func *f, const ir_node *n, ir_shape *out_shapes,
		 halo_dtype *out_dtypes, ir_error *err)
{
	const ir_op_info *info = ir_op_get(n->op);
	if (!info) {
		ir_error_set(err, n->loc, "unknown op %d", (int)n->op);
		return false;
	}
	if (!check_operands(f, n, info, err) || !check_required_attrs(n, info, err))
		return false;
	infer_ctx c = {m, f, n, out_shapes, out_dtypes, err};
	if (!ops[n->op].rule(&c))
		return false;
	if ((info->flags & IR_OPF_STEPS) && n->n_out == info->n_out + 1)
		return infer_steps(n, info->n_out - 1, out_shapes, out_dtypes, err);
	return true;
}
