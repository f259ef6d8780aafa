#include "runtime/drivers/ref/ref_exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/op_table.h"
#include "runtime/drivers/ref/quant.h"
#include "runtime/drivers/ref/ref_ops.h"

enum {
#define IR_OP(id, name, cls, expr) OP_##id,
#include "kernels/ops.def"
#undef IR_OP
};


/* Everything one op needs: operand addresses, evaluated dims, attributes. */
typedef struct {
	const halo_dispatch *d;
	int64_t T, pos;
	void *p[HALO_MAX_OPERANDS];
	int64_t dim[HALO_MAX_OPERANDS][HALO_MAX_RANK];
	/* A matmul with int8 activations and an rms_norm prologue: x is the
	 * prologue's x * weight, each row's 1/rms is here, applied after the
	 * rounding (exec_matmul); NULL otherwise. */
	const float *row_scale;
	char *err;
	size_t errlen;
} exec_ctx;

static int64_t attr_i(const halo_attr *a, int n, const char *name, int64_t dflt)
{
	const halo_attr *x = halo_attr_find(a, n, name);
	return x ? x->i : dflt;
}

static float attr_f(const halo_attr *a, int n, const char *name, float dflt)
{
	const halo_attr *x = halo_attr_find(a, n, name);
	return x ? (float)x->f : dflt;
}

static bool attr_is(const halo_attr *a, int n, const char *name, const char *value)
{
	const halo_attr *x = halo_attr_find(a, n, name);
	return x && x->is_str && strcmp(x->s, value) == 0;
}

#define A_I(name, dflt) attr_i(c->d->attr, c->d->n_attr, name, dflt)
#define A_F(name, dflt) attr_f(c->d->attr, c->d->n_attr, name, dflt)

static int64_t numel(const exec_ctx *c, int i)
{
	int64_t n = 1;
	for (int k = 0; k < c->d->operand[i].rank; k++)
		n *= c->dim[i][k];
	return n;
}

static int64_t last_dim(const exec_ctx *c, int i)
{
	return c->d->operand[i].rank ? c->dim[i][c->d->operand[i].rank - 1] : 1;
}

static bool fail(exec_ctx *c, const char *fmt, const char *detail)
{
	snprintf(c->err, c->errlen, "ref backend: dispatch '%s' (%s): %s%s", c->d->node,
		 halo_op_name(c->d->op), fmt, detail ? detail : "");
	return false;
}

static bool ref_failed(exec_ctx *c, const ref_error *e)
{
	return fail(c, "", e->msg);
}

/* b's broadcast against a (docs/ops.md, elementwise). */
static ref_bcast bcast_of(const exec_ctx *c, int a, int b)
{
	int64_t na = numel(c, a), nb = numel(c, b);
	if (nb == na)
		return (ref_bcast){REF_BCAST_FULL, na};
	if (last_dim(c, b) == 1 && nb * last_dim(c, a) == na)
		return (ref_bcast){REF_BCAST_LASTDIM, last_dim(c, a)};
	return (ref_bcast){REF_BCAST_TRAILING, nb};
}

/* An op's elementwise arity from its class in kernels/ops.def (0: not elementwise). */
static int arity_of(int op)
{
	static const int arity[] = {[HALO_OP_OTHER] = 0, [HALO_OP_UNARY] = 1, [HALO_OP_SCALED] = 1,
				    [HALO_OP_BINARY] = 2, [HALO_OP_GATE] = 2};
	return arity[halo_op_class_of(op)];
}

static const ref_bcast full_bcast = {REF_BCAST_FULL, 0};

static bool exec_rows_op(exec_ctx *c, const float *x, float *y)
{
	const halo_dispatch *d = c->d;
	int64_t D = last_dim(c, 0), rows = numel(c, 0) / (D ? D : 1);
	switch (d->op) {
	case OP_RMS_NORM: /* (x, w), or (x) unweighted */
		ref_rms_norm(x, d->n_in == 2 ? c->p[1] : NULL, y, rows, D, A_I("group", 0), A_F("eps", 1e-6f),
			     (int)A_I("offset", 0));
		return true;
	case OP_L2_NORM:
		ref_l2_norm(x, y, rows, D, A_F("eps", 1e-6f));
		return true;
	case OP_GATED_RMS_NORM:
		ref_gated_rms_norm(x, c->p[1], c->p[2], y, rows, D, A_F("eps", 1e-6f));
		return true;
	case OP_SOFTMAX:
		ref_softmax(x, y, rows, D);
		return true;
	default:
		return false;
	}
}

static bool exec_slice(exec_ctx *c, const float *x, float *y)
{
	int rank = c->d->operand[0].rank;
	int64_t axis = A_I("axis", 0), outer = 1, inner = 1;
	if (axis < 0 || axis >= rank)
		return fail(c, "slice axis out of range", NULL);
	for (int k = 0; k < axis; k++)
		outer *= c->dim[0][k];
	for (int k = (int)axis + 1; k < rank; k++)
		inner *= c->dim[0][k];
	ref_error e;
	if (!ref_slice(x, y, outer, c->dim[0][axis], inner, A_I("start", 0), A_I("len", 0), &e))
		return ref_failed(c, &e);
	return true;
}

static bool exec_state_write(exec_ctx *c, const float *v)
{
	const halo_dispatch *d = c->d;
	int out = d->n_in + d->n_extra;
	const halo_attr *at = halo_attr_find(d->attr, d->n_attr, "at");
	if (at) { /* rows [pos, pos + T) or, at start, [0, T); with every, one row per closed window */
		int64_t C = c->dim[out][0], row = numel(c, out) / (C ? C : 1), every = A_I("every", 0);
		int64_t pos = attr_is(d->attr, d->n_attr, "at", "pos") ? c->pos : 0;
		ref_error e;
		bool ok = every		? ref_state_write_every(v, c->p[out], c->T, C, row, pos, every, &e)
			  : A_I("ring", 0) ? ref_state_write_ring(v, c->p[out], c->T, C, row, pos, &e)
					   : ref_state_write_at(v, c->p[out], c->T, C, row, pos, &e);
		return ok || ref_failed(c, &e);
	}
	memmove(c->p[out], v, (size_t)numel(c, out) * sizeof(float));
	return true;
}

static bool exec_reduce_mean(exec_ctx *c, const float *x, float *y)
{
	int rank = c->d->operand[0].rank;
	int64_t axis = A_I("axis", 0), outer = 1, inner = 1;
	if (axis < 0 || axis >= rank)
		return fail(c, "reduce_mean axis out of range", NULL);
	for (int k = 0; k < axis; k++)
		outer *= c->dim[0][k];
	for (int k = (int)axis + 1; k < rank; k++)
		inner *= c->dim[0][k];
	ref_reduce_mean(x, y, outer, c->dim[0][axis], inner);
	return true;
}

/* A recurrent op's optional third result: its state after each token. */
static float *steps_out(const exec_ctx *c)
{
	const halo_dispatch *d = c->d;
	return d->n_out == 3 ? c->p[d->n_in + d->n_extra + 2] : NULL;
}

static bool exec_ngram_embed(exec_ctx *c, float *y, float *new_hist, float *steps)
{
	ref_ngram_params p = {.ngram = A_I("ngram", 2), .heads_per_ngram = A_I("heads_per_ngram", 1),
			      .eos = A_I("eos", 0), .vocab = A_I("vocab", 1), .seed = A_I("seed", 0),
			      .layer_index = A_I("layer_index", 0), .table_base = A_I("table_base", 2)};
	ref_error e;
	if (!ref_ngram_embed(&p, c->p[0], c->p[1], c->p[2], y, new_hist, steps, c->dim[1][0], c->dim[0][0], c->dim[0][1], &e))
		return ref_failed(c, &e);
	return true;
}

static bool exec_qsa_select(exec_ctx *c, const float *q, float *mask)
{
	ref_qsa_params p = {.block = A_I("block", 1), .top_blocks = A_I("top_blocks", 1),
			    .rot_dim = A_I("rot_dim", 2), .base = A_F("base", 10000.0f), .eps = A_F("eps", 1e-6f)};
	ref_error e;
	if (!ref_qsa_select(&p, q, c->p[1], c->p[2], mask, c->dim[0][0], c->dim[0][1], c->dim[0][2], c->dim[1][0],
			    c->pos, &e))
		return ref_failed(c, &e);
	return true;
}

/* The ops of models/qwen4_exp.yaml that no other model uses; false with
 * *handled unset when op is not one of them. */
static bool exec_qwen4_op(exec_ctx *c, const float *x, bool *handled)
{
	const halo_dispatch *d = c->d;
	int o = d->n_in + d->n_extra;
	float *y = c->p[o];
	ref_error e;
	*handled = true;
	switch (d->op) {
	case OP_REDUCE_MEAN:
		return exec_reduce_mean(c, x, y);
	case OP_SIGNED_SQRT:
		ref_signed_sqrt(x, y, numel(c, 0), A_F("eps", 1e-6f));
		return true;
	case OP_NGRAM_EMBED:
		return exec_ngram_embed(c, y, c->p[o + 1], steps_out(c));
	case OP_CONV1D_DILATED:
		ref_conv1d_dilated(x, c->p[1], c->p[2], y, c->p[o + 1], steps_out(c), c->dim[0][0], c->dim[0][1],
				   c->dim[2][1], A_I("dilation", 1), attr_is(d->attr, d->n_attr, "act", "silu"));
		return true;
	case OP_QSA_SELECT:
	case OP_QSA_SELECT_BLOCKS: /* and the kernels' sync counters */
		return exec_qsa_select(c, x, y);
	case OP_MASKED_ATTENTION:
		if (!ref_masked_attention(x, c->p[1], c->p[2], c->p[3], y, c->dim[0][0], c->dim[0][1], c->dim[1][1],
					  c->dim[0][2], c->dim[2][2], c->dim[1][0], c->pos, A_F("scale", 1.0f), &e))
			return ref_failed(c, &e);
		return true;
	default:
		*handled = false;
		return false;
	}
}

/* rope's attributes (docs/ops.md); absent ones take their defaults. */
static ref_rope_params rope_params(const exec_ctx *c)
{
	const halo_dispatch *d = c->d;
	return (ref_rope_params){
		.rot_dim = A_I("rot_dim", c->dim[0][2]),
		.base = A_F("base", 10000.0f),
		.layout = attr_is(d->attr, d->n_attr, "layout", "interleaved_tail") ? REF_ROPE_INTERLEAVED_TAIL
										     : REF_ROPE_NEOX,
		.inverse = A_I("inverse", 0) != 0,
		.offset = A_I("offset", 0),
		.yarn_factor = A_F("yarn_factor", 0.0f),
		.yarn_orig_ctx = A_I("yarn_orig_ctx", 0),
		.yarn_beta_fast = A_F("yarn_beta_fast", 32.0f),
		.yarn_beta_slow = A_F("yarn_beta_slow", 1.0f),
	};
}

/* sink_attention (q, kv, sinks[, entries[, ids]]), whole or per key block. */
static bool exec_sink_attention(exec_ctx *c, const float *q, float *y)
{
	const halo_dispatch *d = c->d;
	bool entries = d->n_in >= 4, ids = d->n_in == 5;
	ref_sink_params p = {.scale = A_F("scale", 1.0f), .window = A_I("window", 1), .ratio = A_I("ratio", 0),
			     .N = c->dim[1][0], .E = entries ? c->dim[3][0] : 0, .k = ids ? c->dim[4][1] : 0,
			     .block = d->op == OP_SINK_ATTENTION_PARTIAL ? A_I("block", 1) : 0,
			     .blocks = d->op == OP_SINK_ATTENTION_PARTIAL ? c->dim[d->n_in + d->n_extra][2] : 1};
	ref_error e;
	if (!ref_sink_attention(&p, q, c->p[1], c->p[2], entries ? c->p[3] : NULL, ids ? c->p[4] : NULL, y,
				c->dim[0][0], c->dim[0][1], c->dim[0][2], c->pos, &e))
		return ref_failed(c, &e);
	return true;
}

/* DeepSeek V4's compressed sparse attention ops; false with *handled unset
 * when op is not one of them. */
static bool exec_compressed_op(exec_ctx *c, const float *x, bool *handled)
{
	const halo_dispatch *d = c->d;
	int o = d->n_in + d->n_extra;
	ref_error e;
	*handled = true;
	switch (d->op) {
	case OP_COMPRESS_KV: /* (c [N, w*D], z, bias [m, w*D]) -> [T, D] */
		if (!ref_compress_kv(x, c->p[1], c->p[2], c->p[o], c->dim[o][0], c->dim[0][0], c->dim[o][1],
				     A_I("ratio", 1), A_I("overlap", 0) != 0, c->pos, &e))
			return ref_failed(c, &e);
		return true;
	case OP_INDEX_TOPK: /* (q [T,h,d], w [T,h], keys [E,d]) -> ids [T,k] */
		ref_index_topk(x, c->p[1], c->p[2], c->p[o], c->dim[0][0], c->dim[0][1], c->dim[0][2], c->dim[2][0],
			       c->dim[o][1], A_I("ratio", 1), A_F("scale", 1.0f), c->pos);
		return true;
	case OP_INDEX_SCORE: /* (q [T,h,d], w [T,h], keys [E,d]) -> scores [T,E] */
		ref_index_score(x, c->p[1], c->p[2], c->p[o], c->dim[0][0], c->dim[0][1], c->dim[0][2], c->dim[2][0],
				A_I("ratio", 1), A_F("scale", 1.0f), c->pos);
		return true;
	case OP_INDEX_SELECT: /* (scores [T,E]) -> ids [T,k] */
		ref_index_select(x, c->p[o], c->dim[0][0], c->dim[0][1], c->dim[o][1], A_I("ratio", 1), c->pos);
		return true;
	case OP_SINK_ATTENTION:
	case OP_SINK_ATTENTION_PARTIAL:
		return exec_sink_attention(c, x, c->p[o]);
	default:
		*handled = false;
		return false;
	}
}

/* matmul: one result, a (gate, up) pair's, a grouped one's, or a split's
 * results, each over the next rows of w (docs/ops.md). xq = 8: x's rows
 * rounded to int8 activations first (halo_round_x_q8), then, with the norm
 * factored out (row_scale), each rounded row times its 1/rms, which scales
 * every dot product as the kernel scales them, whatever the results are. */
static bool exec_matmul(exec_ctx *c, const float *x)
{
	const halo_dispatch *d = c->d;
	int o = d->n_in + d->n_extra;
	int64_t T = c->dim[0][0], K = c->dim[0][1], groups = A_I("groups", 1);
	if (groups > 1) { /* x [T, groups*K'], w [N, K'] */
		ref_matmul_grouped(x, c->p[1], c->p[o], T, c->dim[1][1], c->dim[1][0], groups);
		return true;
	}
	float *xq = NULL;
	if (A_I("xq", 0)) {
		if (A_I("xq", 0) != 8 || K % 32)
			return fail(c, "xq must be 8 (int8 activations), over rows of a multiple of 32", NULL);
		xq = malloc((size_t)(T * K) * sizeof(float) + 1);
		if (!xq)
			return fail(c, "out of memory", NULL);
		halo_round_x_q8(x, xq, (uint64_t)(T * K));
		for (int64_t t = 0; c->row_scale && t < T; t++)
			for (int64_t k = 0; k < K; k++)
				xq[t * K + k] *= c->row_scale[t];
		x = xq;
	}
	if (halo_attr_find(d->attr, d->n_attr, "pair")) {
		ref_matmul_pair(x, c->p[1], c->p[o], T, K, c->dim[1][0] / 2);
	} else {
		const float *w = c->p[1];
		for (int s = 0; s < d->n_out; s++) {
			ref_matmul(x, w, c->p[o + s], T, K, c->dim[o + s][1]);
			w += c->dim[o + s][1] * K;
		}
	}
	free(xq);
	return true;
}

/* moe_route and moe_route_hash attributes (docs/ops.md; absent: softmax, 1). */
static ref_route_params route_params(const exec_ctx *c, int64_t k)
{
	const halo_attr *a = c->d->attr;
	int n = c->d->n_attr;
	ref_scoring s = attr_is(a, n, "scoring", "sigmoid")	  ? REF_SCORE_SIGMOID
			: attr_is(a, n, "scoring", "sqrtsoftplus") ? REF_SCORE_SQRTSOFTPLUS
								   : REF_SCORE_SOFTMAX;
	return (ref_route_params){.k = k, .norm_topk = A_I("norm_topk", 1), .scoring = s, .scaling = A_F("scaling", 1.0f)};
}

/* The ops of models/deepseek_v4.yaml that no other model uses; false with
 * *handled unset when op is not one of them. */
static bool exec_dsv4_op(exec_ctx *c, const float *x, bool *handled)
{
	const halo_dispatch *d = c->d;
	int o = d->n_in + d->n_extra;
	ref_error e;
	*handled = true;
	switch (d->op) {
	case OP_HC_WEIGHTS: /* (mix [T,M], base, scale) -> pre [T,n] (, post, comb) */
		ref_hc_weights(x, c->p[1], c->p[2], c->p[o], d->n_out == 3 ? c->p[o + 1] : NULL,
			       d->n_out == 3 ? c->p[o + 2] : NULL, c->dim[0][0], c->dim[o][1], A_I("iters", 20),
			       A_F("eps", 1e-6f));
		return true;
	case OP_HC_COLLAPSE: /* (x [T,n,H], pre) */
		ref_hc_collapse(x, c->p[1], c->p[o], c->dim[0][0], c->dim[0][1], c->dim[0][2]);
		return true;
	case OP_HC_INJECT: /* (x [T,n,H], y, g) */
		ref_hc_inject(x, c->p[1], c->p[2], c->p[o], c->dim[0][0], c->dim[0][1], c->dim[0][2]);
		return true;
	case OP_HC_INJECT_NORM: /* (x [T,n,H], y, g, w): hc_inject, then rms_norm of each stream */
		ref_hc_inject(x, c->p[1], c->p[2], c->p[o], c->dim[0][0], c->dim[0][1], c->dim[0][2]);
		ref_rms_norm(c->p[o], c->p[3], c->p[o + 1], c->dim[0][0], c->dim[0][1] * c->dim[0][2], c->dim[0][2],
			     A_F("eps", 1e-6f), (int)A_I("offset", 0));
		return true;
	case OP_HC_EXPAND: /* (x [T,n,H], y, post, comb) */
		ref_hc_expand(x, c->p[1], c->p[2], c->p[3], c->p[o], c->dim[0][0], c->dim[0][1], c->dim[0][2]);
		return true;
	case OP_MOE_ROUTE_HASH: { /* (logits [T,E], table [V,k], tokens) */
		ref_route_params p = route_params(c, c->dim[1][1]);
		if (!ref_moe_route_hash(&p, x, c->p[1], c->p[2], c->p[o], c->p[o + 1], c->dim[0][0], c->dim[0][1],
					c->dim[1][0], &e))
			return ref_failed(c, &e);
		return true;
	}
	default:
		*handled = false;
		return false;
	}
}

/* Rows [rows, D] of x normalised with weight w (the node's eps and
 * norm_offset) and rotated for positions pos.. into y; tmp holds the
 * normalised rows. */
static void norm_rope(const exec_ctx *c, const float *x, const float *w, float *tmp, float *y, int64_t T, int64_t h)
{
	int64_t D = c->dim[0][2];
	ref_rms_norm(x, w, tmp, T * h, D, 0, A_F("eps", 1e-6f), (int)A_I("norm_offset", 0));
	ref_rope_params p = rope_params(c);
	ref_rope(&p, tmp, y, T, h, D, c->pos);
}

/* attention_rope (q, k, v, sync, k_new, q_norm, k_norm) -> (y, part, k_out):
 * the step's keys normalised and rotated into k_out, the queries likewise
 * into a scratch, then attention_blocks' partial and merge over the cache's
 * rows below pos and k_out. In a model k_out is the cache's rows from pos
 * (an in-place state write), so the cache holds every key; an op alone may
 * write it elsewhere, and the keys are then gathered into a copy. */
static bool exec_attention_rope(exec_ctx *c, const float *q)
{
	const halo_dispatch *d = c->d;
	int o = d->n_in + d->n_extra;
	int64_t T = c->dim[0][0], hq = c->dim[0][1], hk = c->dim[1][1], D = c->dim[0][2], C = c->dim[1][0];
	if (c->pos < 0 || c->pos + T > C)
		return fail(c, "the step's rows run past the cache", NULL);
	float *k_out = c->p[o + 2];
	const float *k = c->p[1];
	size_t below = (size_t)(c->pos * hk * D), rows = (size_t)(T * hk * D);
	bool in_place = k_out == k + below;
	float *qn = malloc((size_t)(2 * T * hq * D + (in_place ? 0 : C * hk * D)) * sizeof(float) + 1);
	if (!qn)
		return fail(c, "out of memory", NULL);
	float *tmp = qn + T * hq * D, *keys = tmp + T * hq * D;
	norm_rope(c, c->p[4], c->p[6], tmp, k_out, T, hk);
	norm_rope(c, q, c->p[5], tmp, qn, T, hq);
	if (!in_place) {
		memcpy(keys, k, below * sizeof(float));
		memcpy(keys + below, k_out, rows * sizeof(float));
		memset(keys + below + rows, 0, ((size_t)(C * hk * D) - below - rows) * sizeof(float));
		k = keys;
	}
	ref_error e;
	bool ok = ref_attention_partial(qn, k, c->p[2], NULL, c->p[o + 1], T, hq, hk, D, c->dim[2][2], C, A_I("block", 1),
					c->pos, A_F("scale", 1.0f), &e);
	free(qn);
	if (!ok)
		return ref_failed(c, &e);
	ref_attention_combine(c->p[o + 1], c->p[o], T * hq, c->dim[o + 1][2], c->dim[2][2]);
	return true;
}

/* The main op. x is operand 0 after the prologue (may differ from p[0]). */
static bool exec_main(exec_ctx *c, const float *x)
{
	const halo_dispatch *d = c->d;
	int o = d->n_in + d->n_extra; /* first output */
	float *y = c->p[o];
	ref_error e;
	if (exec_rows_op(c, x, y))
		return true;
	int arity = arity_of(d->op);
	if (arity)
		return ref_elementwise(d->op, x, arity == 2 ? c->p[1] : NULL, y, numel(c, 0),
				       arity == 2 ? bcast_of(c, 0, 1) : full_bcast, A_F("value", 1.0f));
	switch (d->op) {
	case OP_EMBED:
		if (!ref_embed(c->p[0], c->p[1], y, c->T, c->dim[0][0], c->dim[0][1], &e))
			return ref_failed(c, &e);
		if (A_I("zero_pos0", 0) && c->pos == 0 && c->T > 0)
			memset(y, 0, sizeof(float) * (size_t)c->dim[0][1]);
		return true;
	case OP_MATMUL:
		return exec_matmul(c, x);
	case OP_ROPE: {
		ref_rope_params p = rope_params(c);
		ref_rope(&p, x, y, c->dim[0][0], c->dim[0][1], c->dim[0][2], c->pos);
		return true;
	}
	case OP_ATTENTION:
		if (!ref_attention(x, c->p[1], c->p[2], y, c->dim[0][0], c->dim[0][1], c->dim[1][1], c->dim[0][2],
				   c->dim[2][2], c->dim[1][0], c->pos, A_F("scale", 1.0f), &e))
			return ref_failed(c, &e);
		return true;
	case OP_ATTENTION_PARTIAL:
		if (!ref_attention_partial(x, c->p[1], c->p[2], NULL, y, c->dim[0][0], c->dim[0][1], c->dim[1][1],
					   c->dim[0][2], c->dim[2][2], c->dim[1][0], A_I("block", 1), c->pos,
					   A_F("scale", 1.0f), &e))
			return ref_failed(c, &e);
		return true;
	case OP_ATTENTION_BLOCKS: /* (q, k, v, sync[, mask]) -> (y, part): the partial, then its merge */
	case OP_MASKED_ATTENTION_BLOCKS: {
		float *part = c->p[d->n_in + d->n_extra + 1];
		const float *mask = d->op == OP_MASKED_ATTENTION_BLOCKS ? c->p[4] : NULL;
		if (!ref_attention_partial(x, c->p[1], c->p[2], mask, part, c->dim[0][0], c->dim[0][1], c->dim[1][1],
					   c->dim[0][2], c->dim[2][2], c->dim[1][0], A_I("block", 1), c->pos,
					   A_F("scale", 1.0f), &e))
			return ref_failed(c, &e);
		ref_attention_combine(part, y, c->dim[0][0] * c->dim[0][1], c->dim[d->n_in + d->n_extra + 1][2],
				      c->dim[2][2]);
		return true;
	}
	case OP_ATTENTION_ROPE:
		return exec_attention_rope(c, x);
	case OP_ATTENTION_COMBINE: /* (part [T,hq,S,dv+2]) */
		ref_attention_combine(x, y, c->dim[0][0] * c->dim[0][1], c->dim[0][2], c->dim[0][3] - 2);
		return true;
	case OP_SLICE:
		return exec_slice(c, x, y);
	case OP_ROWS_AT_POS: {
		int64_t C = c->dim[0][0];
		ref_rows_at_pos(x, y, c->T, C, numel(c, 0) / (C ? C : 1), c->pos, A_I("offset", 0));
		return true;
	}
	case OP_CONCAT: {
		int rank = d->operand[0].rank;
		int64_t axis = A_I("axis", 0), outer = 1, inner = 1;
		for (int k = 0; k < axis; k++)
			outer *= c->dim[0][k];
		for (int k = (int)axis + 1; k < rank; k++)
			inner *= c->dim[0][k];
		ref_concat(x, c->p[1], y, outer, c->dim[0][axis], c->dim[1][axis], inner);
		return true;
	}
	case OP_REPEAT_HEADS:
		ref_repeat_heads(x, y, c->dim[0][0], c->dim[0][1], c->dim[0][2], A_I("r", 1));
		return true;
	case OP_STATE_WRITE:
		return exec_state_write(c, x);
	case OP_CONV1D_CAUSAL:
		ref_conv1d_causal(x, c->p[1], c->p[2], y, c->p[o + 1], steps_out(c), c->dim[0][0], c->dim[0][1],
				  c->dim[2][1], attr_is(d->attr, d->n_attr, "act", "silu"));
		return true;
	case OP_GATED_DELTA_RULE:
		ref_gated_delta_rule(x, c->p[1], c->p[2], c->p[3], c->p[4], c->p[5], y, c->p[o + 1], steps_out(c),
				     c->dim[0][0], c->dim[0][1], c->dim[2][1], c->dim[0][2], c->dim[2][2], A_F("scale", 1.0f));
		return true;
	case OP_TOPK:
		ref_topk(x, c->p[o], c->p[o + 1], c->dim[0][0], c->dim[0][1], A_I("k", 1));
		return true;
	case OP_MOE_ROUTE: { /* (logits [T,E]) or (logits, bias [E]) */
		ref_route_params p = route_params(c, A_I("k", 1));
		ref_moe_route(&p, x, d->n_in == 2 ? c->p[1] : NULL, c->p[o], c->p[o + 1], c->dim[0][0], c->dim[0][1]);
		return true;
	}
	case OP_MOE_GATE_UP: /* (x [T,H], ids [T,k], gate, up [E,F,H]) */
		if (!ref_moe_gate_up(x, c->p[1], c->p[2], c->p[3], y, c->dim[0][0], c->dim[0][1], c->dim[2][1],
				     c->dim[2][0], c->dim[1][1], A_F("limit", 0.0f), &e))
			return ref_failed(c, &e);
		return true;
	case OP_MOE_DOWN: /* (act [T,k,F], ids, w [T,k], down [E,H,F]) */
		if (!ref_moe_down(x, c->p[1], c->p[2], c->p[3], y, c->dim[0][0], c->dim[3][1], c->dim[0][2],
				  c->dim[3][0], c->dim[0][1], &e))
			return ref_failed(c, &e);
		return true;
	case OP_ARGMAX:
		ref_argmax(x, c->p[o], c->dim[0][0], c->dim[0][1]);
		return true;
	default: {
		bool handled, ok = exec_qwen4_op(c, x, &handled);
		if (!handled)
			ok = exec_dsv4_op(c, x, &handled);
		if (!handled)
			ok = exec_compressed_op(c, x, &handled);
		return handled ? ok : fail(c, "op has no reference implementation in a dispatch", NULL);
	}
	}
}

static bool exec_epilogue(exec_ctx *c, const halo_fused_op *f)
{
	const halo_dispatch *d = c->d;
	int o = d->n_in + d->n_extra;
	float *y = c->p[o];
	int64_t n = numel(c, o);
	int arity = arity_of(f->op);
	float value = attr_f(f->attr, f->n_attr, "value", 1.0f);
	if (arity == 1)
		return ref_elementwise(f->op, y, NULL, y, n, full_bcast, value);
	if (arity != 2 || f->n_operand != 1)
		return fail(c, "unsupported epilogue op ", halo_op_name(f->op));
	int other = f->operand[0];
	if (f->side == 0) {
		ref_elementwise(f->op, y, c->p[other], y, n, bcast_of(c, o, other), value);
	} else if (numel(c, other) == n) {
		ref_elementwise(f->op, c->p[other], y, y, n, full_bcast, value);
	} else {
		return fail(c, "a right-hand epilogue operand must have the output's shape", NULL);
	}
	return true;
}

bool ref_exec_dispatch(const halo_dispatch *d, int64_t T, int64_t pos, ref_resolve_fn resolve, void *ctx,
		       char *err, size_t errlen)
{
	exec_ctx c = {.d = d, .T = T, .pos = pos, .err = err, .errlen = errlen};
	int n_ops = d->n_in + d->n_extra + d->n_out;
	for (int i = 0; i < n_ops; i++) {
		c.p[i] = resolve(ctx, &d->operand[i]);
		if (!c.p[i])
			return fail(&c, "an operand names bytes the backend cannot read as f32 (part of a block-quantized "
				    "weight)", NULL);
		for (int k = 0; k < d->operand[i].rank; k++)
			c.dim[i][k] = halo_affine_eval(d->operand[i].dim[k], T);
		if (d->operand[i].pos_rows) { /* rows pos.. of a state (manifest.h) */
			if (pos < 0 || pos + T > d->operand[i].pos_rows)
				return fail(&c, "rows past the end of the state an operand is stored in", NULL);
			c.p[i] = (char *)c.p[i] + (size_t)pos * halo_tensor_bytes(&d->operand[i], 1);
		}
	}
	const float *x = n_ops ? c.p[0] : NULL;
	float *scratch = NULL;
	for (int i = 0; i < d->n_fused; i++) {
		const halo_fused_op *f = &d->fused[i];
		if (!f->prologue)
			continue;
		if (f->op != OP_RMS_NORM || f->n_operand > 1)
			return fail(&c, "only rms_norm can be a prologue", NULL);
		int64_t D = last_dim(&c, 0), n = numel(&c, 0);
		scratch = malloc((size_t)(n + n / D) * sizeof(float) + 1);
		if (!scratch)
			return fail(&c, "out of memory", NULL);
		/* no operand: a norm folded into the weights only normalises */
		const float *nw = f->n_operand ? c.p[f->operand[0]] : NULL;
		float eps = attr_f(f->attr, f->n_attr, "eps", 1e-6f);
		int64_t group = attr_i(f->attr, f->n_attr, "group", 0);
		int offset = (int)attr_i(f->attr, f->n_attr, "offset", 0);
		if (d->op == OP_MATMUL && attr_i(d->attr, d->n_attr, "xq", 0) && group == 0) {
			/* int8 activations round x * weight; the norm's 1/rms
			 * scales the dot products, as the kernel does */
			float *scale = scratch + n;
			for (int64_t r = 0; r < n / D; r++) {
				scale[r] = ref_rms_inv(x + r * D, D, eps);
				for (int64_t k = 0; k < D; k++)
					scratch[r * D + k] = nw ? x[r * D + k] * (nw[k] + (float)offset) : x[r * D + k];
			}
			c.row_scale = scale;
		} else {
			ref_rms_norm(x, nw, scratch, n / D, D, group, eps, offset);
		}
		x = scratch;
	}
	bool ok = exec_main(&c, x);
	free(scratch);
	for (int i = 0; ok && i < d->n_fused; i++)
		if (!d->fused[i].prologue)
			ok = exec_epilogue(&c, &d->fused[i]);
	return ok;
}
