#include "codegen/select_kernels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/glsl_compile.h"
#include "codegen/hip_compile.h"
#include "codegen/parallel.h"
#include "codegen/kernel_variant.h"
#include "ir/ops.h"
#include "kernels/device_features.h"
#include "kernels/op_table.h"
#include "runtime/drivers/ref/ref_ops.h"

static int64_t cdim(const halo_tensor_ref *t, int i)
{
	return t->dim[i].c;
}

/* numel as an affine function of T (at most one dim depends on T). */
static bool numel_affine(const halo_tensor_ref *t, ir_dim *out)
{
	int64_t coef = 0, rest = 1, c = 1;
	int n_t = 0;
	for (int i = 0; i < t->rank; i++) {
		if (t->dim[i].coef_T) {
			if (t->dim[i].c || ++n_t > 1)
				return false;
			coef = t->dim[i].coef_T;
		} else {
			rest *= t->dim[i].c;
		}
		c *= t->dim[i].c;
	}
	*out = n_t ? (ir_dim){coef * rest, 0} : (ir_dim){0, c};
	return true;
}

/* Product of dims [from, to) as an affine function of T. */
static bool span_affine(const halo_tensor_ref *t, int from, int to, ir_dim *out)
{
	halo_tensor_ref sub = *t;
	sub.rank = 0;
	for (int i = from; i < to; i++)
		sub.dim[sub.rank++] = t->dim[i];
	return numel_affine(&sub, out);
}

static int64_t rows_per_token(const halo_tensor_ref *t)
{
	int64_t r = 1;
	for (int i = 1; i + 1 < t->rank; i++)
		r *= t->dim[i].c;
	return r;
}

static double attr_f(const halo_attr *a, int n, const char *name, double dflt)
{
	const halo_attr *x = halo_attr_find(a, n, name);
	return x ? x->f : dflt;
}

static int64_t attr_i(const halo_attr *a, int n, const char *name, int64_t dflt)
{
	const halo_attr *x = halo_attr_find(a, n, name);
	return x ? x->i : dflt;
}

static bool attr_is(const halo_dispatch *d, const char *name, const char *value)
{
	const halo_attr *x = halo_attr_find(d->attr, d->n_attr, name);
	return x && x->is_str && strcmp(x->s, value) == 0;
}

#define DA(name, dflt) attr_f(d->attr, d->n_attr, name, dflt)
#define DI(name, dflt) attr_i(d->attr, d->n_attr, name, dflt)

/* The rotation attributes of a rope or attention_rope dispatch over heads
 * of D (docs/ops.md); absent ones take their defaults. */
static ref_rope_params rope_params(const halo_dispatch *d, int64_t D)
{
	return (ref_rope_params){
		.rot_dim = DI("rot_dim", D),
		.base = (float)DA("base", 10000.0),
		.layout = attr_is(d, "layout", "interleaved_tail") ? REF_ROPE_INTERLEAVED_TAIL : REF_ROPE_NEOX,
		.inverse = DI("inverse", 0) != 0,
		.offset = DI("offset", 0),
		.yarn_factor = (float)DA("yarn_factor", 0.0),
		.yarn_orig_ctx = DI("yarn_orig_ctx", 0),
		.yarn_beta_fast = (float)DA("yarn_beta_fast", 32.0),
		.yarn_beta_slow = (float)DA("yarn_beta_slow", 1.0),
	};
}

static bool same_affine_shape(const halo_tensor_ref *a, const halo_tensor_ref *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dim[i].coef_T != b->dim[i].coef_T || a->dim[i].c != b->dim[i].c)
			return false;
	return true;
}

/* How `other` is indexed against the running value `run` (docs/ops.md). */
static void elem_bcast(const halo_tensor_ref *run, const halo_tensor_ref *other, kv_elem_op *e)
{
	if (same_affine_shape(run, other)) {
		e->bcast = KV_BCAST_FULL;
		return;
	}
	if (other->rank == run->rank && cdim(other, other->rank - 1) == 1) {
		e->bcast = KV_BCAST_LASTDIM;
		e->bcast_n = cdim(run, run->rank - 1);
		return;
	}
	/* Trailing broadcast operands never depend on T (docs/ops.md). */
	ir_dim n = {0, 0};
	numel_affine(other, &n);
	e->bcast = KV_BCAST_TRAILING;
	e->bcast_n = n.coef_T ? 0 : n.c; /* 0 is refused by kernel_variant_build */
}

static void fused_into_desc(const halo_dispatch *d, kv_desc *k)
{
	const halo_tensor_ref *out = &d->operand[d->n_in + d->n_extra];
	for (int i = 0; i < d->n_fused; i++) {
		const halo_fused_op *f = &d->fused[i];
		if (f->prologue) {
			k->pro = (kv_prologue){.on = true,
					       .folded = f->n_operand == 0,
					       .eps = (float)attr_f(f->attr, f->n_attr, "eps", 1e-6),
					       .offset = (int)attr_i(f->attr, f->n_attr, "offset", 0)};
			continue;
		}
		/* a longer chain is counted, not stored: the variant builder
		 * refuses it by name (the fusion passes never make one) */
		if (k->n_epi++ >= KV_MAX_EPILOGUE)
			continue;
		kv_elem_op *e = &k->epi[k->n_epi - 1];
		e->op = (ir_op)f->op;
		e->value = (float)attr_f(f->attr, f->n_attr, "value", 1.0);
		e->operand = f->side;
		if (f->n_operand == 1)
			elem_bcast(out, &d->operand[f->operand[0]], e);
	}
}

static void set_copy(kv_desc *k, ir_dim rows, int64_t width, int64_t src_stride, int64_t src_offset,
		     int64_t dst_stride, int64_t rep, bool at_pos)
{
	k->u.copy.rows = rows;
	k->u.copy.width = width;
	k->u.copy.src_stride = src_stride;
	k->u.copy.src_offset = src_offset;
	k->u.copy.dst_stride = dst_stride;
	k->u.copy.dst_offset = 0;
	k->u.copy.rep = rep;
	k->u.copy.at_pos = at_pos;
}

static bool copy_desc(const halo_dispatch *d, kv_desc *k, char *err, size_t errlen)
{
	const halo_tensor_ref *x = &d->operand[0];
	ir_dim all;
	if (d->op == IR_OP_STATE_WRITE) {
		/* at: rows of axis 0 (T of them), from the position or from row 0 */
		const halo_attr *at = halo_attr_find(d->attr, d->n_attr, "at");
		if (!numel_affine(x, &all))
			goto bad;
		int64_t width = at ? all.coef_T : all.c;
		set_copy(k, at ? (ir_dim){1, 0} : (ir_dim){0, 1}, width, width, 0, width, 1,
			 at && at->is_str && !strcmp(at->s, "pos"));
		k->u.copy.every = DI("every", 0);
		/* the state's rows: the ring a position wraps around */
		k->u.copy.ring = DI("ring", 0) ? cdim(&d->operand[d->n_in + d->n_extra], 0) : 0;
		return true;
	}
	if (d->op == IR_OP_ROWS_AT_POS) {
		int64_t rows = cdim(x, 0), width = 1;
		for (int i = 1; i < x->rank; i++)
			width *= cdim(x, i);
		set_copy(k, (ir_dim){1, 0}, width, width, 0, width, 1, false);
		k->u.copy.from_pos = true;
		k->u.copy.src_rows = rows;
		k->u.copy.pos_offset = DI("offset", 0);
		return true;
	}
	if (d->op == IR_OP_REPEAT_HEADS) {
		int64_t r = DI("r", 1);
		set_copy(k, (ir_dim){x->dim[0].coef_T * cdim(x, 1) * r, 0}, cdim(x, 2), cdim(x, 2), 0, cdim(x, 2), r,
			 false);
		return true;
	}
	int64_t axis = DI("axis", 0), start = DI("start", 0), len = DI("len", 0), inner = 1;
	ir_dim outer;
	if (axis < 0 || axis >= x->rank || x->dim[axis].coef_T || !span_affine(x, 0, (int)axis, &outer))
		goto bad;
	for (int i = (int)axis + 1; i < x->rank; i++)
		inner *= cdim(x, i);
	set_copy(k, outer, len * inner, cdim(x, axis) * inner, start * inner, len * inner, 1, false);
	return true;
bad:
	snprintf(err, errlen, "dispatch '%s': a copy whose shape depends on T in more than one place", d->node);
	return false;
}

/* ngram_embed's tables are computed here, with the reference's own functions,
 * so the kernel hashes exactly as ref_ngram_embed does. */
static bool ngram_desc(const halo_dispatch *d, kv_desc *k, char *err, size_t errlen)
{
	const halo_tensor_ref *table = &d->operand[0];
	ref_ngram_params p = {.ngram = DI("ngram", 0), .heads_per_ngram = DI("heads_per_ngram", 0),
			      .eos = DI("eos", 0), .vocab = DI("vocab", 0), .seed = DI("seed", 0),
			      .layer_index = DI("layer_index", 0), .table_base = DI("table_base", 0)};
	if (p.ngram < 2 || p.ngram > KV_NGRAM_MAX || p.heads_per_ngram < 1 || p.heads_per_ngram > 64 ||
	    p.layer_index < 0 || p.table_base < 2) {
		snprintf(err, errlen, "dispatch '%s': ngram_embed ngram %lld, heads_per_ngram %lld, layer_index %lld,"
			 " table_base %lld out of range", d->node, (long long)p.ngram, (long long)p.heads_per_ngram,
			 (long long)p.layer_index, (long long)p.table_base);
		return false;
	}
	int64_t heads = (p.ngram - 1) * p.heads_per_ngram, m[KV_NGRAM_MAX];
	int64_t size[KV_NGRAM_MAX_HEADS], offset[KV_NGRAM_MAX_HEADS];
	ref_ngram_multipliers(&p, m);
	ref_ngram_tables(&p, size, offset);
	for (int64_t j = 0; j < heads; j++) {
		if (size[j] > INT32_MAX) {
			snprintf(err, errlen, "dispatch '%s': ngram_embed table size %lld of head %lld is 2^31 or more",
				 d->node, (long long)size[j], (long long)j);
			return false;
		}
		k->u.ngram.size[j] = (uint32_t)size[j];
	}
	for (int64_t s = 0; s < p.ngram; s++)
		k->u.ngram.mult[s] = (uint64_t)m[s];
	k->wtype = table->dtype;
	k->u.ngram.ngram = p.ngram;
	k->u.ngram.hpn = p.heads_per_ngram;
	k->u.ngram.eos = p.eos;
	k->u.ngram.vocab = p.vocab;
	k->u.ngram.rows = cdim(table, 0);
	k->u.ngram.dp = cdim(table, 1);
	return true;
}

/* A recurrent op lowered with its optional last result (IR_OPF_STEPS), the
 * state after each token: the kernel writes it to its last output. */
static bool has_steps(const halo_dispatch *d)
{
	const ir_op_info *info = ir_op_get((ir_op)d->op);
	return info && (info->flags & IR_OPF_STEPS) && d->n_out == info->n_out + 1;
}

/* Quantized operands (runtime/drivers/ref/quant.h) only where a kernel reads them:
 * matmul's weight [N, K], the MoE experts [E, N, K] and the gathered tables
 * (embed's, ngram_embed's [rows, K]), whole weight tensors. Their kernels find the scales region from the dims, so the
 * binding must start at the tensor's first byte: lower.c binds a weight (or
 * a reshape of it) at the tensor's own offset, never at a row inside it. */
static bool quant_operands_ok(const halo_dispatch *d, char *err, size_t errlen)
{
	int n = d->n_in + d->n_extra + d->n_out;
	for (int i = 0; i < n; i++) {
		const halo_tensor_ref *t = &d->operand[i];
		if (!halo_dtype_is_quant(t->dtype))
			continue;
		bool weight_in = (d->op == IR_OP_MATMUL && i == 1 && t->rank == 2) ||
				 (d->op == IR_OP_MOE_GATE_UP && (i == 2 || i == 3) && t->rank == 3) ||
				 (d->op == IR_OP_MOE_DOWN && i == 3 && t->rank == 3) ||
				 ((d->op == IR_OP_EMBED || d->op == IR_OP_NGRAM_EMBED) && i == 0 && t->rank == 2);
		for (int j = 0; j < t->rank; j++)
			weight_in &= t->dim[j].coef_T == 0;
		if (!weight_in || t->space != HALO_SPACE_WEIGHT) {
			const char *op = halo_op_name(d->op);
			/* the caller names the entry and the dispatch */
			snprintf(err, errlen, "%s operand %d is %s; the Vulkan kernels read quantized tensors only as"
				 " matmul's weight, the MoE experts and the gathered tables (whole weight tensors)",
				 op ? op : "?", i,
				 halo_dtype_name(t->dtype));
			return false;
		}
	}
	return true;
}

/* The mHC kernels take row t of every operand for token t. */
static bool one_row_per_token(const halo_dispatch *d, char *err, size_t errlen)
{
	const halo_tensor_ref *x = &d->operand[0];
	if (x->dim[0].coef_T == 1 && x->dim[0].c == 0)
		return true;
	snprintf(err, errlen, "dispatch '%s': %s over %lld*T+%lld rows; its kernel takes one row per token", d->node,
		 halo_op_name(d->op), (long long)x->dim[0].coef_T, (long long)x->dim[0].c);
	return false;
}

/* The kernel descriptor of one dispatch. */
static bool describe(const halo_dispatch *d, int64_t t_max, kv_desc *k, char *err, size_t errlen)
{
	const halo_tensor_ref *x = &d->operand[0];
	if (!quant_operands_ok(d, err, errlen))
		return false;
	memset(k, 0, sizeof(*k));
	k->op = (ir_op)d->op;
	k->t_max = t_max;
	k->wtype = HALO_F32;
	k->steps = has_steps(d);
	fused_into_desc(d, k);
	for (int i = 0; i < d->n_out && i < 32; i++)
		if (d->operand[d->n_in + d->n_extra + i].pos_rows)
			k->out_at_pos |= 1u << i;
	switch (d->op) {
	case IR_OP_EMBED:
		k->wtype = x->dtype;
		k->u.embed.V = cdim(x, 0);
		k->u.embed.H = cdim(x, 1);
		k->u.embed.zero_pos0 = DI("zero_pos0", 0) != 0;
		return true;
	case IR_OP_MATMUL:
		/* the matmul and matvec kernels run a whole number of rows per token */
		if (x->dim[0].coef_T < 1 || x->dim[0].c != 0) {
			snprintf(err, errlen, "dispatch '%s': matmul over %lld*T+%lld rows; the Vulkan kernels take a*T "
				 "(a >= 1 rows per token)", d->node, (long long)x->dim[0].coef_T, (long long)x->dim[0].c);
			return false;
		}
		k->wtype = d->operand[1].dtype;
		k->u.matmul.groups = DI("groups", 1);
		k->u.matmul.K = cdim(&d->operand[1], 1); /* w's rows; a grouped x row holds groups of them */
		k->u.matmul.N = cdim(&d->operand[1], 0);
		if (halo_attr_find(d->attr, d->n_attr, "w_rows")) { /* w's first rows: the result's columns */
			k->u.matmul.w_rows = k->u.matmul.N;
			k->u.matmul.N = cdim(&d->operand[d->n_in + d->n_extra], 1);
		}
		k->u.matmul.rows_per_t = x->dim[0].coef_T;
		k->u.matmul.pair = halo_attr_find(d->attr, d->n_attr, "pair") != NULL;
		k->u.matmul.xq = (int)DI("xq", 0);
		/* a split matmul's column counts are its results' widths */
		if (d->n_out > KV_MAX_SPLIT) {
			snprintf(err, errlen, "dispatch '%s': matmul with %d results, at most %d", d->node, d->n_out,
				 KV_MAX_SPLIT);
			return false;
		}
		k->u.matmul.n_split = d->n_out > 1 ? d->n_out : 0;
		for (int i = 0; i < k->u.matmul.n_split; i++)
			k->u.matmul.split[i] = cdim(&d->operand[d->n_in + d->n_extra + i], 1);
		return true; /* tiles: kv_variant_space, the heuristic first */
	case IR_OP_RMS_NORM:
		k->u.rms_norm.rows_per_t = rows_per_token(x);
		k->u.rms_norm.D = cdim(x, x->rank - 1);
		k->u.rms_norm.group = DI("group", 0);
		k->u.rms_norm.eps = (float)DA("eps", 1e-6);
		k->u.rms_norm.offset = (int)DI("offset", 0);
		k->u.rms_norm.unweighted = d->n_in == 1;
		return true;
	case IR_OP_ROPE:
		k->u.rope.heads = cdim(x, 1);
		k->u.rope.D = cdim(x, 2);
		k->u.rope.p = rope_params(d, cdim(x, 2));
		return true;
	case IR_OP_ATTENTION:
	case IR_OP_MASKED_ATTENTION: /* (q, k, v[, mask]): the same dims */
	case IR_OP_ATTENTION_PARTIAL:
	case IR_OP_ATTENTION_BLOCKS:        /* and sync [rows, hq] */
	case IR_OP_MASKED_ATTENTION_BLOCKS: /* and sync, mask */
	case IR_OP_ATTENTION_ROPE:          /* and sync, k_new, q_norm, k_norm */
		k->u.attention.sync_rows = d->op == IR_OP_ATTENTION_BLOCKS || d->op == IR_OP_MASKED_ATTENTION_BLOCKS ||
						   d->op == IR_OP_ATTENTION_ROPE
					   ? cdim(&d->operand[3], 0)
					   : 0;
		if (d->op == IR_OP_ATTENTION_ROPE) {
			k->u.attention.rope = rope_params(d, cdim(x, 2));
			k->u.attention.norm_eps = (float)DA("eps", 1e-6);
			k->u.attention.norm_offset = (int)DI("norm_offset", 0);
		}
		k->u.attention.hq = cdim(x, 1);
		k->u.attention.D = cdim(x, 2);
		k->u.attention.hk = cdim(&d->operand[1], 1);
		k->u.attention.C = cdim(&d->operand[1], 0);
		k->u.attention.dv = cdim(&d->operand[2], 2);
		k->u.attention.scale = (float)DA("scale", 1.0);
		k->u.attention.block = DI("block", 0);
		return true;
	case IR_OP_ATTENTION_COMBINE: /* (part [T, hq, blocks, dv + 2]) */
		k->u.attention.hq = cdim(x, 1);
		k->u.attention.blocks = cdim(x, 2);
		k->u.attention.dv = cdim(x, 3) - 2;
		return true;
	case IR_OP_SOFTMAX:
		k->u.softmax.rows_per_t = rows_per_token(x);
		k->u.softmax.D = cdim(x, x->rank - 1);
		return true;
	case IR_OP_ARGMAX:
		k->u.argmax.N = cdim(x, 1);
		return true;
	case IR_OP_L2_NORM:
	case IR_OP_GATED_RMS_NORM:
		k->u.norm.rows_per_t = rows_per_token(x);
		k->u.norm.D = cdim(x, x->rank - 1);
		k->u.norm.eps = (float)DA("eps", 1e-6);
		return true;
	case IR_OP_CONV1D_CAUSAL: {
		const halo_tensor_ref *w = &d->operand[2];
		const halo_attr *act = halo_attr_find(d->attr, d->n_attr, "act");
		k->wtype = w->dtype;
		k->u.conv1d.C = cdim(w, 0);
		k->u.conv1d.K = cdim(w, 1);
		k->u.conv1d.silu = act && act->is_str && strcmp(act->s, "silu") == 0;
		return true;
	}
	case IR_OP_GATED_DELTA_RULE:
		k->u.gdr.hk = cdim(x, 1);
		k->u.gdr.dk = cdim(x, 2);
		k->u.gdr.hv = cdim(&d->operand[2], 1);
		k->u.gdr.dv = cdim(&d->operand[2], 2);
		k->u.gdr.scale = (float)DA("scale", 1.0);
		return true;
	case IR_OP_TOPK:
	case IR_OP_MOE_ROUTE:
	case IR_OP_MOE_ROUTE_HASH: { /* hash: (logits, table [V,k], tokens) */
		const halo_tensor_ref *table = &d->operand[1];
		bool hash = d->op == IR_OP_MOE_ROUTE_HASH;
		k->u.topk.N = cdim(x, 1);
		k->u.topk.k = hash ? cdim(table, 1) : DI("k", 1);
		k->u.topk.norm = d->op != IR_OP_TOPK && DI("norm_topk", 1);
		k->u.topk.scoring = attr_is(d, "scoring", "sigmoid")	    ? KV_SCORE_SIGMOID
				    : attr_is(d, "scoring", "sqrtsoftplus") ? KV_SCORE_SQRTSOFTPLUS
									    : KV_SCORE_SOFTMAX;
		k->u.topk.bias = d->op == IR_OP_MOE_ROUTE && d->n_in == 2;
		k->u.topk.scaling = (float)DA("scaling", 1.0);
		if (hash) {
			k->wtype = table->dtype;
			k->u.topk.V = cdim(table, 0);
		}
		return true;
	}
	case IR_OP_MOE_GATE_UP: { /* (x, ids, gate [E,F,H], up) */
		const halo_tensor_ref *gate = &d->operand[2];
		k->wtype = gate->dtype;
		k->u.moe.E = cdim(gate, 0);
		k->u.moe.F = cdim(gate, 1);
		k->u.moe.H = cdim(gate, 2);
		k->u.moe.k = cdim(&d->operand[1], 1);
		k->u.moe.limit = (float)DA("limit", 0.0);
		return true;
	}
	case IR_OP_MOE_DOWN: { /* (act, ids, w, down [E,H,F]) */
		const halo_tensor_ref *down = &d->operand[3];
		k->wtype = down->dtype;
		k->u.moe.E = cdim(down, 0);
		k->u.moe.H = cdim(down, 1);
		k->u.moe.F = cdim(down, 2);
		k->u.moe.k = cdim(&d->operand[1], 1);
		k->u.moe.limit = (float)DA("limit", 0.0); /* the kernels refuse one here */
		return true;
	}
	case IR_OP_SLICE:
	case IR_OP_REPEAT_HEADS:
	case IR_OP_STATE_WRITE:
	case IR_OP_ROWS_AT_POS:
		return copy_desc(d, k, err, errlen);
	case IR_OP_REDUCE_MEAN: {
		/* the kernel's reduced and inner extents are compile time; only outer may grow with T */
		int64_t axis = DI("axis", 0);
		ir_dim inner = {0, 0};
		if (axis < 0 || axis >= x->rank || x->dim[axis].coef_T ||
		    !span_affine(x, 0, (int)axis, &k->u.reduce.outer) ||
		    !span_affine(x, (int)axis + 1, x->rank, &inner) || inner.coef_T) {
			snprintf(err, errlen, "dispatch '%s': unsupported reduce_mean axis %lld", d->node,
				 (long long)axis);
			return false;
		}
		k->u.reduce.n = cdim(x, (int)axis);
		k->u.reduce.inner = inner.c;
		return true;
	}
	case IR_OP_SIGNED_SQRT:
		k->u.signed_sqrt.eps = (float)DA("eps", 1e-6);
		if (!numel_affine(x, &k->u.signed_sqrt.numel)) {
			snprintf(err, errlen, "dispatch '%s': signed_sqrt numel is not affine in T", d->node);
			return false;
		}
		return true;
	case IR_OP_CONV1D_DILATED: {
		const halo_tensor_ref *w = &d->operand[2];
		const halo_attr *act = halo_attr_find(d->attr, d->n_attr, "act");
		k->wtype = w->dtype;
		k->u.conv_dilated.C = cdim(w, 0);
		k->u.conv_dilated.K = cdim(w, 1);
		k->u.conv_dilated.dilation = DI("dilation", 1);
		k->u.conv_dilated.silu = act && act->is_str && strcmp(act->s, "silu") == 0;
		return true;
	}
	case IR_OP_NGRAM_EMBED:
		return ngram_desc(d, k, err, errlen);
	case IR_OP_QSA_SELECT:
	case IR_OP_QSA_SELECT_BLOCKS: /* and sync [rows, 1] */
		k->u.qsa.sync_rows = d->op == IR_OP_QSA_SELECT_BLOCKS ? cdim(&d->operand[3], 0) : 0;
		k->u.qsa.h = cdim(x, 1);
		k->u.qsa.D = cdim(x, 2);
		k->u.qsa.C = cdim(&d->operand[1], 0);
		k->u.qsa.block = DI("block", 0);
		k->u.qsa.top = DI("top_blocks", 0);
		k->u.qsa.rot_dim = DI("rot_dim", cdim(x, 2));
		k->u.qsa.base = (float)DA("base", 10000.0);
		k->u.qsa.eps = (float)DA("eps", 1e-6);
		return true;
	case IR_OP_COMPRESS_KV: /* (c [N, w*D], z, bias [m, w*D]) -> [T, D] */
		k->u.compress.N = cdim(x, 0);
		k->u.compress.overlap = DI("overlap", 0) != 0;
		k->u.compress.D = cdim(x, 1) / (k->u.compress.overlap ? 2 : 1);
		k->u.compress.ratio = DI("ratio", 1);
		return true;
	case IR_OP_INDEX_TOPK: /* (q [T,h,d], w [T,h], keys [E,d]) -> ids [T,k] */
	case IR_OP_INDEX_SCORE: /* the same -> scores [T,E] */
		k->u.index.h = cdim(x, 1);
		k->u.index.d = cdim(x, 2);
		k->u.index.E = cdim(&d->operand[2], 0);
		k->u.index.k = DI("k", 0);
		k->u.index.ratio = DI("ratio", 1);
		k->u.index.scale = (float)DA("scale", 1.0);
		k->u.index.block = DI("block", 0);
		return true;
	case IR_OP_INDEX_SELECT: /* (scores [T,E]) -> ids [T,k] */
		k->u.index.E = cdim(x, 1);
		k->u.index.k = DI("k", 1);
		k->u.index.ratio = DI("ratio", 1);
		return true;
	case IR_OP_SINK_ATTENTION: /* (q [T,h,D], kv [N,D], sinks [h] [, entries [E,D] [, ids [T,k]]]) */
	case IR_OP_SINK_ATTENTION_PARTIAL: /* the same -> part [T,h,S,D+2] */
		k->u.sink.h = cdim(x, 1);
		k->u.sink.D = cdim(x, 2);
		k->u.sink.N = cdim(&d->operand[1], 0);
		k->u.sink.E = d->n_in >= 4 ? cdim(&d->operand[3], 0) : 0;
		k->u.sink.k = d->n_in == 5 ? cdim(&d->operand[4], 1) : 0;
		k->u.sink.window = DI("window", 1);
		k->u.sink.ratio = DI("ratio", 0);
		k->u.sink.scale = (float)DA("scale", 1.0);
		k->u.sink.block = DI("block", 0);
		k->u.sink.blocks = k->u.sink.block ? cdim(&d->operand[d->n_in + d->n_extra], 2) : 1;
		return true;
	case IR_OP_HC_WEIGHTS: /* (mix [T,M], base, scale) -> pre [T,n] (, post, comb) */
		k->u.hc.n = cdim(&d->operand[d->n_in + d->n_extra], 1);
		k->u.hc.full = d->n_out == 3;
		k->u.hc.iters = DI("iters", 20);
		k->u.hc.eps = (float)DA("eps", 1e-6);
		return one_row_per_token(d, err, errlen);
	case IR_OP_HC_COLLAPSE:
	case IR_OP_HC_EXPAND:
	case IR_OP_HC_INJECT: /* (x [T,n,H], ...) */
		k->u.hc.n = cdim(x, 1);
		k->u.hc.H = cdim(x, 2);
		return one_row_per_token(d, err, errlen);
	case IR_OP_HC_INJECT_NORM: /* (x [T,n,H], iy, post, w): rms_norm's rows of n*H in groups of H */
		k->u.rms_norm.rows_per_t = 1;
		k->u.rms_norm.D = cdim(x, 1) * cdim(x, 2);
		k->u.rms_norm.group = cdim(x, 2);
		k->u.rms_norm.eps = (float)DA("eps", 1e-6);
		k->u.rms_norm.offset = (int)DI("offset", 0);
		k->u.rms_norm.inject = true;
		return one_row_per_token(d, err, errlen);
	case IR_OP_CONCAT: {
		int64_t axis = DI("axis", 0), inner = 1;
		const halo_tensor_ref *b = &d->operand[1];
		for (int i = (int)axis + 1; i < x->rank; i++)
			inner *= cdim(x, i);
		if (axis < 0 || axis >= x->rank || !span_affine(x, 0, (int)axis, &k->u.concat.rows)) {
			snprintf(err, errlen, "dispatch '%s': unsupported concat", d->node);
			return false;
		}
		k->u.concat.wa = (ir_dim){x->dim[axis].coef_T * inner, cdim(x, axis) * inner};
		k->u.concat.wb = (ir_dim){b->dim[axis].coef_T * inner, cdim(b, axis) * inner};
		return true;
	}
	default:
		break;
	}
	/* The ops with a reference implementation only: a clear refusal, not an
	 * elementwise kernel that would misread them. */
	if (halo_op_class_of(d->op) == HALO_OP_OTHER) {
		snprintf(err, errlen, "no Vulkan kernel for op '%s' (its semantics are the reference's only so far: "
			 "compile with --targets ref)", halo_op_name(d->op));
		return false;
	}
	/* Elementwise: the node's own op is the head of the chain. */
	if (!numel_affine(x, &k->u.elementwise.numel)) {
		snprintf(err, errlen, "dispatch '%s': no Vulkan kernel for this op and shape", d->node);
		return false;
	}
	kv_elem_op *m = &k->u.elementwise.main;
	m->op = (ir_op)d->op;
	m->value = (float)DA("value", 1.0);
	if (d->n_in == 2)
		elem_bcast(x, &d->operand[1], m);
	return true;
}

/* Candidates per choice in the bundle: enough for the tuner's neighbours of
 * the heuristic, few enough that every kernel is compiled in reasonable time. */
#define SK_MAX_CANDIDATES 8
/* Tile choices asked of kv_variant_space: more than are kept, so that a
 * portable candidate past the first SK_MAX_CANDIDATES can still be found. */
#define SK_SPACE_MAX 32

/* A kernel waiting for its code: its GLSL, its HIP-dialect source (NULL:
 * its template has no twin) and the name messages give. */
typedef struct {
	char *source, *hip, *name;
} pending_kernel;

typedef struct {
	halo_manifest *man;
	pending_kernel *pending; /* [man->n_kernels] */
} selector;

/* The built candidates of one descriptor, in the space's order. */
typedef struct {
	int n;
	kv_kernel k[SK_MAX_CANDIDATES];
} candidates;

static void candidates_free(candidates *c)
{
	for (int i = 0; i < c->n; i++)
		kv_kernel_free(&c->k[i]);
	c->n = 0;
}

/* The manifest's record of variant v, its SPIR-V aside. */
static bool describe_kernel(const kv_kernel *v, halo_kernel *k)
{
	size_t n = strlen(v->template_name);
	k->name = strndup(v->template_name, n > 5 ? n - 5 : n); /* drop ".comp" */
	k->signature = strdup(v->signature);
	k->key = strdup(v->key);
	k->tile = strdup(v->tile);
	k->needs = v->needs;
	k->push_size = v->push_size;
	k->n_bindings = v->n_bindings;
	memcpy(k->local, v->local_size, sizeof(k->local));
	for (int a = 0; a < 3; a++)
		k->groups[a] = (halo_grid_dim){v->groups[a].a, v->groups[a].b, v->groups[a].d};
	return k->name && k->signature && k->key && k->tile;
}

/* Index of the kernel for variant v, registered on first use; its GLSL
 * waits in s->pending for compile_all. */
static int kernel_for(selector *s, const kv_kernel *v, char *err, size_t errlen)
{
	halo_manifest *m = s->man;
	for (int i = 0; i < m->n_kernels; i++)
		if (strcmp(m->kernels[i].signature, v->signature) == 0)
			return i;
	halo_kernel *grown = realloc(m->kernels, (size_t)(m->n_kernels + 1) * sizeof(*grown));
	if (grown)
		m->kernels = grown;
	pending_kernel *more = realloc(s->pending, (size_t)(m->n_kernels + 1) * sizeof(*more));
	if (more)
		s->pending = more;
	if (!grown || !more) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	halo_kernel *k = &m->kernels[m->n_kernels];
	pending_kernel *p = &s->pending[m->n_kernels];
	memset(k, 0, sizeof(*k));
	*p = (pending_kernel){strdup(v->source), v->hip ? strdup(v->hip) : NULL, strdup(v->template_name)};
	m->n_kernels++; /* even on failure, so cleanup frees what was made */
	if (!describe_kernel(v, k) || !p->source || !p->name || (v->hip && !p->hip)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	return m->n_kernels - 1;
}

static bool has_signature(const candidates *c, const char *sig)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->k[i].signature, sig) == 0)
			return true;
	return false;
}

static bool any_portable(const candidates *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->k[i].needs == 0)
			return true;
	return false;
}

/* Builds the candidates of desc: the first SK_MAX_CANDIDATES distinct
 * variants of its space, the heuristic first. Some candidate must need no
 * device feature (the runtime falls back to it anywhere): if none of those
 * does, the first portable variant further on takes the last place. A
 * variant after the heuristic that fails to build is left out (the space
 * promises it builds; the heuristic's failure is the descriptor's error). */
static bool build_candidates(kv_desc *desc, candidates *c, char *why, size_t whylen)
{
	kv_tiles tiles[SK_SPACE_MAX];
	int n = kv_variant_space(desc, tiles, SK_SPACE_MAX);
	c->n = 0;
	for (int i = 0; i < n && (c->n < SK_MAX_CANDIDATES || !any_portable(c)); i++) {
		kv_kernel v;
		desc->tiles = tiles[i];
		if (!kernel_variant_build(desc, &v, why, whylen)) {
			if (i == 0)
				return false;
			continue;
		}
		bool dup = has_signature(c, v.signature);
		bool room = c->n < SK_MAX_CANDIDATES || v.needs == 0;
		if (dup || !room) {
			kv_kernel_free(&v);
			continue;
		}
		if (c->n == SK_MAX_CANDIDATES)
			kv_kernel_free(&c->k[--c->n]);
		c->k[c->n++] = v;
	}
	if (c->n == 0 || !any_portable(c)) {
		snprintf(why, whylen, "no variant of %s runs without device features", c->n ? c->k[0].key : "the op");
		candidates_free(c);
		return false;
	}
	return true;
}

/* The candidates agree with each other and with the dispatch: one key, one
 * binding count (the dispatch's operands + the step record), one push size,
 * and only device features the manifest can name. */
static bool check_candidates(const candidates *c, const halo_dispatch *d, char *why, size_t whylen)
{
	const kv_kernel *h = &c->k[0];
	for (int i = 0; i < c->n; i++) {
		const kv_kernel *v = &c->k[i];
		if (strcmp(v->key, h->key) != 0 || v->push_size != h->push_size) {
			snprintf(why, whylen, "variant %s does not match the heuristic's %s", v->signature, h->signature);
			return false;
		}
		if ((int)v->n_bindings != d->n_in + d->n_extra + d->n_out + 1) {
			snprintf(why, whylen, "kernel %s binds %u buffers, the dispatch has %d operands", v->signature,
				 v->n_bindings, d->n_in + d->n_extra + d->n_out);
			return false;
		}
		if (v->needs & ~halo_need_known()) {
			snprintf(why, whylen, "kernel %s needs device features 0x%x without a manifest name", v->signature,
				 v->needs);
			return false;
		}
	}
	return true;
}

static int find_choice(const halo_manifest *m, const char *key)
{
	for (int i = 0; i < m->n_choices; i++)
		if (strcmp(m->choices[i].key, key) == 0)
			return i;
	return -1;
}

/* A new choice of the candidates, each compiled (or shared by signature). */
static int add_choice(selector *s, const candidates *c, char *err, size_t errlen)
{
	halo_manifest *m = s->man;
	halo_choice *grown = realloc(m->choices, (size_t)(m->n_choices + 1) * sizeof(*grown));
	if (!grown) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	m->choices = grown;
	halo_choice *ch = &m->choices[m->n_choices];
	memset(ch, 0, sizeof(*ch));
	ch->key = strdup(c->k[0].key);
	m->n_choices++; /* even on failure, so manifest cleanup frees the key */
	if (!ch->key) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < c->n; i++) {
		int k = kernel_for(s, &c->k[i], err, errlen);
		if (k < 0)
			return -1;
		ch->kernel[ch->n++] = k;
	}
	return m->n_choices - 1;
}

static bool select_dispatch(selector *s, const halo_entry *e, halo_dispatch *d, char *err, size_t errlen)
{
	kv_desc desc;
	candidates c = {0};
	char why[512];
	bool ok = describe(d, e->t_max, &desc, why, sizeof(why)) && build_candidates(&desc, &c, why, sizeof(why)) &&
		  check_candidates(&c, d, why, sizeof(why));
	if (!ok) {
		snprintf(err, errlen, "entry '%s', dispatch '%s': %s", e->name, d->node, why);
		candidates_free(&c);
		return false;
	}
	/* Dispatches of one key share its choice, so they run one kernel. */
	d->choice = find_choice(s->man, c.k[0].key);
	if (d->choice < 0)
		d->choice = add_choice(s, &c, err, errlen);
	candidates_free(&c);
	return d->choice >= 0;
}

/* Kernels are compiled on every core: glslang and clang dominate a
 * compile's time. A work item is one kernel for one target; each thread
 * takes the next item and has its own GLSL compiler. The code lands in an
 * array by item and is concatenated in kernel order per target, so the
 * bundle's bytes do not depend on the threads. Compiled code is kept in the
 * kernel cache (codegen/kernel_cache.h) for the next compile. */
#define SK_MAX_THREADS 32

typedef struct {
	uint8_t *bytes; /* NULL: none (a template without a twin on this target) */
	size_t size;
} kernel_code;

typedef struct {
	const pending_kernel *pending;
	int n_kernels;
	bool *gpu_runs; /* [kernel]: the one candidate of its choice the cuda and hip backends run */
	int target[HALO_TARGET_COUNT]; /* the wanted targets */
	int n_targets;
	kernel_code *code; /* [item], item = kernel * n_targets + target position */
	char (*why)[1024]; /* [item]: a compile error, "" if none */
	cg_kernel_cache *cache; /* the environment's (codegen/kernel_cache.h); NULL: none */
	atomic_int next;
} compile_queue;

static void compile_item(compile_queue *q, glsl_compiler **cc, int item)
{
	const pending_kernel *k = &q->pending[item / q->n_targets];
	int t = q->target[item % q->n_targets];
	kernel_code *out = &q->code[item];
	char *why = q->why[item];
	if (t != HALO_TARGET_VULKAN) {
		if (k->hip && q->gpu_runs[item / q->n_targets])
			cg_hip_compile(t == HALO_TARGET_HIP_GFX1151 ? CG_ARCH_GFX1151 : CG_ARCH_SM90, k->hip, k->name,
				       q->cache, &out->bytes, &out->size, why, sizeof q->why[0]);
		return;
	}
	glsl_spirv spv = {0};
	if (!*cc && (*cc = glsl_compiler_new()))
		glsl_compiler_use_cache(*cc, q->cache);
	if (!*cc)
		snprintf(why, sizeof q->why[0], "shaderc failed to start");
	else if (!glsl_compile(*cc, k->source, k->name, true, &spv, why, sizeof q->why[0]) && !why[0])
		snprintf(why, sizeof q->why[0], "%s: compilation failed", k->name);
	out->bytes = (uint8_t *)spv.words;
	out->size = spv.n_words * 4;
}

static void *compile_worker(void *arg)
{
	compile_queue *q = arg;
	glsl_compiler *cc = NULL;
	for (int i; (i = atomic_fetch_add(&q->next, 1)) < q->n_kernels * q->n_targets;)
		compile_item(q, &cc, i);
	glsl_compiler_free(cc);
	return NULL;
}

static int compile_threads(int n_items)
{
	int n = cg_cores() < SK_MAX_THREADS ? cg_cores() : SK_MAX_THREADS;
	return n < n_items ? n : n_items;
}

/* Compiles every item; the first failure by item is the error (the same
 * one whatever the threads did). */
static bool compile_items(compile_queue *q, char *err, size_t errlen)
{
	int n = q->n_kernels * q->n_targets;
	atomic_init(&q->next, 0);
	pthread_t th[SK_MAX_THREADS];
	int started = 0, want = compile_threads(n);
	while (started < want - 1 && pthread_create(&th[started], NULL, compile_worker, q) == 0)
		started++;
	compile_worker(q); /* the calling thread works too, so none started is no failure */
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < n; i++)
		if (q->why[i][0]) {
			snprintf(err, errlen, "%s", q->why[i]);
			return false;
		}
	return true;
}

/* Target t's section: its kernels' code in kernel order. */
static bool concat_target(halo_manifest *m, const compile_queue *q, int pos, cg_kernel_sections *out)
{
	int t = q->target[pos];
	size_t total = 0;
	for (int i = 0; i < m->n_kernels; i++)
		total += q->code[i * q->n_targets + pos].size;
	uint8_t *buf = malloc(total ? total : 1);
	if (!buf)
		return false;
	size_t at = 0;
	for (int i = 0; i < m->n_kernels; i++) {
		const kernel_code *c = &q->code[i * q->n_targets + pos];
		if (c->size)
			memcpy(buf + at, c->bytes, c->size);
		m->kernels[i].code[t].offset = c->size ? at : 0;
		m->kernels[i].code[t].size = c->size;
		at += c->size;
	}
	out->data[t] = buf;
	out->size[t] = total;
	return true;
}

/* Every choice runs on every target: some candidate has source for it (a
 * GLSL one always; a HIP twin for the others). Checked before anything is
 * compiled, so that a refusal costs no compile. */
static bool check_coverage(const halo_manifest *m, const compile_queue *q, char *err, size_t errlen)
{
	for (int c = 0; c < m->n_choices; c++)
		for (int pos = 0; pos < q->n_targets; pos++) {
			int t = q->target[pos];
			bool any = t == HALO_TARGET_VULKAN;
			for (int j = 0; j < m->choices[c].n; j++)
				any |= q->pending[m->choices[c].kernel[j]].hip != NULL;
			if (!any) {
				const char *tmpl = q->pending[m->choices[c].kernel[0]].name;
				snprintf(err, errlen, "target %s: kernel template '%.*s' has no twin under kernels/hip yet "
					 "(%.*s.hip), so '%.200s' cannot run there (leave %s out of --targets)",
					 halo_targets[t].name, (int)strcspn(tmpl, "."), tmpl, (int)strcspn(tmpl, "."), tmpl,
					 m->choices[c].key, halo_targets[t].short_name);
				return false;
			}
		}
	return true;
}

/* The cuda and hip backends run each choice's first candidate with a twin
 * (they read no tuning database), so only that one gets code for their
 * targets: the others' would only run when a test forces them, and leaving
 * them out makes a compile for those targets about as many times shorter
 * as a choice has candidates (clang dominates it). With all, every
 * candidate with a twin gets code (cg_compile_options.gpu_all_variants). */
static void mark_gpu_runs(const halo_manifest *m, const pending_kernel *pending, bool all, bool *runs)
{
	for (int c = 0; c < m->n_choices; c++)
		for (int j = 0; j < m->choices[c].n; j++)
			if (pending[m->choices[c].kernel[j]].hip) {
				runs[m->choices[c].kernel[j]] = true;
				if (!all)
					break;
			}
}

static bool compile_all(selector *s, const bool want[HALO_TARGET_COUNT], bool gpu_all, cg_kernel_sections *out,
			char *err, size_t errlen)
{
	compile_queue q = {.pending = s->pending, .n_kernels = s->man->n_kernels,
			   .cache = cg_kernel_cache_open_default()};
	for (int t = 0; t < HALO_TARGET_COUNT; t++)
		if (want[t])
			q.target[q.n_targets++] = t;
	size_t n = (size_t)q.n_kernels * (size_t)q.n_targets + 1;
	q.code = calloc(n, sizeof *q.code);
	q.why = calloc(n, sizeof *q.why);
	q.gpu_runs = calloc((size_t)q.n_kernels + 1, sizeof *q.gpu_runs);
	bool ok = q.code && q.why && q.gpu_runs;
	if (!ok)
		snprintf(err, errlen, "out of memory");
	else
		mark_gpu_runs(s->man, s->pending, gpu_all, q.gpu_runs);
	ok = ok && check_coverage(s->man, &q, err, errlen) && compile_items(&q, err, errlen);
	for (int pos = 0; ok && pos < q.n_targets; pos++)
		if (!(ok = concat_target(s->man, &q, pos, out)))
			snprintf(err, errlen, "out of memory");
	for (size_t i = 0; q.code && i < n; i++)
		free(q.code[i].bytes);
	free(q.code);
	free(q.why);
	free(q.gpu_runs);
	cg_kernel_cache_close(q.cache);
	return ok;
}

void cg_kernel_sections_free(cg_kernel_sections *s)
{
	for (int t = 0; t < HALO_TARGET_COUNT; t++)
		free(s->data[t]);
	memset(s, 0, sizeof *s);
}

bool cg_select_kernels(halo_manifest *man, const bool want[HALO_TARGET_COUNT], bool gpu_all, cg_kernel_sections *out,
		       char *err, size_t errlen)
{
	selector s = {.man = man};
	bool ok = true;
	memset(out, 0, sizeof *out);
	for (int i = 0; ok && i < man->n_entries; i++)
		for (int j = 0; ok && j < man->entries[i].n_dispatch; j++)
			ok = select_dispatch(&s, &man->entries[i], &man->entries[i].dispatch[j], err, errlen);
	ok = ok && compile_all(&s, want, gpu_all, out, err, errlen);
	for (int i = 0; s.pending && i < man->n_kernels; i++) {
		free(s.pending[i].source);
		free(s.pending[i].hip);
		free(s.pending[i].name);
	}
	free(s.pending);
	if (!ok)
		cg_kernel_sections_free(out);
	return ok;
}
