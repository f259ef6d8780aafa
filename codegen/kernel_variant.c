/* Kernel variants (kernel_variant.h): each op's row in kv_ops (at the end)
 * plans a variant in no target language (codegen/kernel_plan.h): checks,
 * key, template, constants, tiles, grid, bindings, fused ops. The GLSL
 * emitter (codegen/emit_glsl.h) then spells the plan as a Vulkan shader. */
#include "codegen/kernel_variant.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit_glsl.h"
#include "codegen/emit_hip.h"
#include "codegen/kernel_plan.h"
#include "codegen/strbuf.h"
#include "kernels/op_table.h"

static const char *op_name(ir_op op)
{
	return halo_op_name((int)op);
}

/* Shared memory every target offers: lavapipe's 32 KiB (the H200 has more). */
#define KV_SHARED_LIMIT 32768
/* The guaranteed minimum of maxComputeWorkGroupCount in every dimension. */
#define KV_MAX_GROUPS 65535
#define KV_MAX_LANES 1024

/* ---- the build state ---------------------------------------------------------- */

typedef struct {
	const kv_desc *d;
	kv_kernel *k;
	kv_plan *p;
	strbuf sig;  /* the key: what the kernel computes */
	strbuf tile; /* how: the variant's tile parameters */
	uint32_t next_binding;
	/* set by the op's dims: how many of its row's last inputs are absent
	 * (optional operands the dispatch lacks, e.g. an unweighted rms_norm's
	 * w, a sink_attention's entries and ids) */
	int absent_in;
	/* set by the op's dims where its result count varies (a matmul's split
	 * results, hc_weights' one or three); 0: the row's first two, and the
	 * states after each token with steps */
	int n_out;
	char *err;
	size_t errlen;
} kv_build;

static bool fail(kv_build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(kv_build *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = snprintf(b->err, b->errlen, "kernel variant %s: ", op_name(b->d->op));
	if (n >= 0 && (size_t)n < b->errlen)
		vsnprintf(b->err + n, b->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

/* ---- the plan's constants ----------------------------------------------------------------- */

/* Appends helper file `name` to the plan's (a fixed table's names: a full
 * table is a bug in the builders). */
static void add_helper(kv_build *b, const char *name)
{
	int i = 0;
	while (i < KV_MAX_HELPERS && b->p->helpers[i])
		i++;
	if (i == KV_MAX_HELPERS)
		abort();
	b->p->helpers[i] = name;
}

static kv_const *add_const(kv_build *b, kv_const_kind kind, const char *name)
{
	kv_plan *p = b->p;
	if (p->n_c == p->cap_c) {
		int cap = p->cap_c ? 2 * p->cap_c : 32;
		kv_const *c = realloc(p->c, (size_t)cap * sizeof(*c));
		if (!c)
			abort();
		p->c = c;
		p->cap_c = cap;
	}
	kv_const *c = &p->c[p->n_c++];
	*c = (kv_const){.kind = kind, .name = name};
	return c;
}

static void def_uint(kv_build *b, const char *name, int64_t v)
{
	add_const(b, KV_CONST_UINT, name)->i = v;
}

static void def_int(kv_build *b, const char *name, int64_t v)
{
	add_const(b, KV_CONST_INT, name)->i = v;
}

static void def_float(kv_build *b, const char *name, float v)
{
	add_const(b, KV_CONST_FLOAT, name)->f = v;
}

/* NAME_T and NAME_C of an affine dim, for AFF(NAME) in the templates. */
static void def_affine(kv_build *b, const char *name_t, const char *name_c, ir_dim v)
{
	def_uint(b, name_t, v.coef_T);
	def_uint(b, name_c, v.c);
}

/* A constant table of n values, taken over (malloc'd). */
static void def_uint_array(kv_build *b, const char *name, uint32_t *v, int64_t n)
{
	kv_const *c = add_const(b, KV_CONST_UINT_ARRAY, name);
	c->u32 = v;
	c->n = n;
}

static void def_float_array(kv_build *b, const char *name, float *v, int64_t n)
{
	kv_const *c = add_const(b, KV_CONST_FLOAT_ARRAY, name);
	c->f32 = v;
	c->n = n;
}

/* The next binding; `name` (may be NULL) stands for its index in the template. */
static uint32_t bind(kv_build *b, const char *name)
{
	uint32_t i = b->next_binding++;
	if (name)
		add_const(b, KV_CONST_BINDING, name)->i = i;
	return i;
}

void kv_plan_free(kv_plan *p)
{
	for (int i = 0; i < p->n_c; i++) {
		free(p->c[i].u32);
		free(p->c[i].f32);
	}
	free(p->c);
	memset(p, 0, sizeof *p);
}

static void set_grid(kv_build *b, int axis, int64_t a, int64_t c, int64_t d)
{
	b->k->groups[axis] = (kv_groups){a, c, d};
}

static void set_local(kv_build *b, uint32_t x, uint32_t y)
{
	b->k->local_size[0] = x;
	b->k->local_size[1] = y;
	b->k->local_size[2] = 1;
	def_uint(b, "LS_X", x);
	def_uint(b, "LS_Y", y);
}

/* The common layout: 1-D workgroups of ls lanes, ceil(items / per_group)
 * groups along x for each of the T tokens along y; the signature names ls. */
static void per_token_grid(kv_build *b, uint32_t ls, int64_t items, int64_t per_group)
{
	set_local(b, ls, 1);
	set_grid(b, 0, 0, items, per_group);
	set_grid(b, 1, 1, 0, 1);
	sb_printf(&b->tile, "ls%u", ls);
}

static int64_t dim_at(ir_dim v, int64_t T)
{
	return v.coef_T * T + v.c;
}

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Every index a kernel forms is a 32-bit uint. */
static bool check_index(kv_build *b, const char *what, int64_t v)
{
	if (v <= 0 || v > (int64_t)UINT32_MAX)
		return fail(b, "%s = %" PRId64 " must be in [1, 2^32)", what, v);
	return true;
}

/* 1-D lanes: the tile's `local` or dflt, a power of two. */
/* Sets *out even on failure: callers print it after `||` chains that gcc's
 * -O3 flow analysis cannot follow. */
static bool lanes_1d(kv_build *b, uint32_t dflt, uint32_t *out)
{
	uint32_t l = b->d->tiles.local ? b->d->tiles.local : dflt;
	*out = l;
	if (!is_pow2(l) || l > KV_MAX_LANES)
		return fail(b, "local size %u is not a power of two <= %d", l, KV_MAX_LANES);
	return true;
}

/* With steps, the states after each token fit 32-bit indices: t_max rows of
 * `state` elements. */
static bool check_steps(kv_build *b, int64_t state)
{
	return !b->d->steps || check_index(b, "T*state (steps)", b->d->t_max * state);
}

/* ---- fused elementwise chains -------------------------------------------------------- */

static bool elem_is_unary(ir_op op)
{
	return halo_op_class_of((int)op) == HALO_OP_UNARY || halo_op_class_of((int)op) == HALO_OP_SCALED;
}

static bool elem_is_binary(ir_op op)
{
	return halo_op_class_of((int)op) == HALO_OP_BINARY || halo_op_class_of((int)op) == HALO_OP_GATE;
}

static bool check_elem(kv_build *b, const kv_elem_op *e, const char *where)
{
	if (elem_is_unary(e->op)) {
		if (halo_op_class_of((int)e->op) == HALO_OP_SCALED && !isfinite(e->value))
			return fail(b, "%s: scale by a non-finite value", where);
		return true;
	}
	if (!elem_is_binary(e->op))
		return fail(b, "%s: '%s' is not an elementwise op", where, op_name(e->op));
	if (e->operand != 0 && e->operand != 1)
		return fail(b, "%s: operand side %d, expected 0 or 1", where, e->operand);
	if (e->bcast != KV_BCAST_FULL && !check_index(b, "broadcast size", e->bcast_n))
		return false;
	/* Only b broadcasts (docs/ops.md): a running value on side 1 is b, so the
	 * extra operand is a and has the running value's full shape. */
	if (e->operand == 1 && e->bcast != KV_BCAST_FULL)
		return fail(b, "%s: with the running value as operand 1 the other operand must have its shape",
			    where);
	return true;
}

static void sig_elem(strbuf *s, const kv_elem_op *e)
{
	static const char *const bc[] = {"full", "trail", "last"};
	sb_printf(s, "%s", op_name(e->op));
	if (halo_op_class_of((int)e->op) == HALO_OP_SCALED)
		sb_printf(s, "(%.9g)", (double)e->value);
	if (elem_is_binary(e->op)) {
		sb_printf(s, "(side=%d,%s", e->operand, bc[e->bcast]);
		if (e->bcast != KV_BCAST_FULL)
			sb_printf(s, ":%" PRId64, e->bcast_n);
		sb_printf(s, ")");
	}
}

/* Which fused ops an op's kernels take; AT_POS: outputs stored at rows
 * pos.. of a state (kv_desc.out_at_pos). */
enum { KV_FUSE_EPILOGUE = 1, KV_FUSE_PROLOGUE = 2, KV_FUSE_AT_POS = 4 };

/* POS0..POS3: 1 where output i is stored from row pos of its binding (the
 * template adds step_pos rows to its row index), else 0. */
static bool bind_at_pos(kv_build *b, unsigned fuse)
{
	uint32_t at = b->d->out_at_pos;
	if (at && !(fuse & KV_FUSE_AT_POS))
		return fail(b, "no output stored at the step's position for this op");
	if (!(fuse & KV_FUSE_AT_POS))
		return true;
	if (at >> KV_MAX_SPLIT)
		return fail(b, "out_at_pos 0x%x names outputs past the %d a kernel has", at, KV_MAX_SPLIT);
	static const char *const names[KV_MAX_SPLIT] = {"POS0", "POS1", "POS2", "POS3"};
	for (int i = 0; i < KV_MAX_SPLIT; i++)
		def_int(b, names[i], (int)(at >> i) & 1);
	if (at)
		sb_printf(&b->sig, " out_at_pos=%u", at);
	return true;
}

/* Binds the prologue's and the epilogue's extra operands (in that order),
 * after the op's inputs, and records them in the key and the plan. */
static bool bind_fused(kv_build *b, unsigned fuse)
{
	const kv_desc *d = b->d;
	if (d->pro.on && !(fuse & KV_FUSE_PROLOGUE))
		return fail(b, "no fused rms_norm prologue for this op");
	if (d->n_epi && !(fuse & KV_FUSE_EPILOGUE))
		return fail(b, "no fused epilogue for this op");
	if (d->n_epi < 0 || d->n_epi > KV_MAX_EPILOGUE)
		return fail(b, "%d epilogue ops, at most %d", d->n_epi, KV_MAX_EPILOGUE);
	if (fuse & KV_FUSE_PROLOGUE) {
		def_int(b, "PRO_RMS", d->pro.on ? 1 : 0);
		def_int(b, "PRO_NW", d->pro.on && !d->pro.folded ? 1 : 0);
		if (d->pro.on && d->pro.folded && d->pro.offset)
			return fail(b, "a folded prologue's offset is in the weights");
		if (d->pro.on) {
			if (!d->pro.folded)
				bind(b, "B_NW");
			def_float(b, "PRO_EPS", d->pro.eps);
			def_float(b, "PRO_OFFSET", d->pro.offset ? 1.0f : 0.0f);
			if (d->pro.folded)
				sb_printf(&b->sig, " pro=rms(eps=%.9g,folded)", (double)d->pro.eps);
			else
				sb_printf(&b->sig, " pro=rms(eps=%.9g,off=%d)", (double)d->pro.eps, d->pro.offset ? 1 : 0);
		}
	}
	for (int j = 0; j < d->n_epi; j++) {
		const kv_elem_op *e = &d->epi[j];
		if (!check_elem(b, e, "epilogue"))
			return false;
		sb_printf(&b->sig, j == 0 ? " epi=" : ",");
		sig_elem(&b->sig, e);
		b->p->epi_binding[j] = elem_is_binary(e->op) ? (int)bind(b, NULL) : -1;
	}
	return bind_at_pos(b, fuse);
}

/* ---- per-op builders ------------------------------------------------------------------- */

/* Ops whose kernels read f32 or f16 weights (conv1d, the norms' scales):
 * halo compile keeps those unquantized. */
static bool weight_type(kv_build *b)
{
	const char *name = halo_dtype_name(b->d->wtype) ? halo_dtype_name(b->d->wtype) : "?";
	if (halo_dtype_is_quant(b->d->wtype))
		return fail(b, "weight dtype %s: this op's kernel reads f32 or f16 weights (the quantized formats"
			    " are for matmul and the MoE experts)", name);
	if (b->d->wtype != HALO_F32 && b->d->wtype != HALO_F16)
		return fail(b, "weight dtype %s, expected f32 or f16", name);
	def_int(b, "WTYPE_F16", b->d->wtype == HALO_F16 ? 1 : 0);
	sb_printf(&b->sig, " w=%s", name);
	return true;
}

/* matmul, the MoE experts and the gathers (embed, ngram_embed): f32, f16,
 * or a quantized format (kernels/vulkan/quant_weights.glsl) over a tensor of
 * `rows` rows of `len` elements, len a multiple of the format's block. */
static bool weight_type_q(kv_build *b, int64_t rows, int64_t len)
{
	halo_dtype t = b->d->wtype;
	if (!halo_dtype_is_quant(t))
		return weight_type(b);
	int64_t block = (int64_t)halo_dtype_block(t);
	if (len % block)
		return fail(b, "weight dtype %s: rows of %" PRId64 " elements, not a multiple of its %" PRId64
			    "-element block", halo_dtype_name(t), len, block);
	/* its words are indexed in 32 bits */
	if (!check_index(b, "weight bytes / 4", (int64_t)(halo_dtype_bytes(t, (size_t)rows, (size_t)len) / 4)))
		return false;
	def_int(b, "WTYPE_F16", 0);
	def_int(b, "WQUANT", 1);
	def_int(b, "WQ4K", t == HALO_Q4_K ? 1 : 0);
	def_int(b, "WQF8", t == HALO_F8E4M3_B128 ? 1 : 0);
	def_int(b, "WQFP4", t == HALO_MXFP4 ? 1 : 0);
	def_uint(b, "WQ_ROWS", rows);
	def_uint(b, "WQ_LEN", len);
	add_helper(b, "quant_weights");
	sb_printf(&b->sig, " w=%s", halo_dtype_name(t));
	return true;
}

/* A gather kernel's lanes read one element of a row each, or 8 (one
 * wq_load8) from a quantized table. */
static int64_t gather_per_lane(const kv_desc *d)
{
	return halo_dtype_is_quant(d->wtype) ? 8 : 1;
}

static bool build_embed(kv_build *b)
{
	int64_t V = b->d->u.embed.V, H = b->d->u.embed.H;
	uint32_t ls;
	if (!check_index(b, "V", V) || !check_index(b, "H", H) || !check_index(b, "V*H", V * H) ||
	    !check_index(b, "T*H", b->d->t_max * H) || !lanes_1d(b, 256, &ls))
		return false;
	b->p->template = "embed";
	sb_printf(&b->sig, "embed V=%" PRId64 " H=%" PRId64 "%s", V, H, b->d->u.embed.zero_pos0 ? " zero_pos0" : "");
	def_uint(b, "V", V);
	def_uint(b, "H", H);
	if (b->d->u.embed.zero_pos0)
		def_int(b, "ZERO_POS0", 1);
	if (!weight_type_q(b, V, H))
		return false;
	set_local(b, ls, 1);
	set_grid(b, 0, 0, H / gather_per_lane(b->d), ls);
	set_grid(b, 1, 1, 0, 1);
	return true;
}


/* ---- matvec: the decode kernel and its variant space ------------------------------- */

/* Lanes the K splits of all columns should add up to: below it the H200
 * streamed a 4096 x 4096 matrix at 54% of its read ceiling with 2^17 lanes
 * and 58% with 2^18; vocabulary heads stream at 99% with the narrowest
 * split (bench/results-h200-matvec.txt). */
#define MATVEC_BUSY_LANES (1 << 18)

/* Int8 activations (matvec.comp's XQ8) stage a tile of at most this many
 * bytes of codes, and two f32s per 32 codes beside them. */
#define KV_XQ_CODE_BYTES 16384
#define KV_XQ_SHARED (KV_XQ_CODE_BYTES + 2 * KV_XQ_CODE_BYTES / 8)

/* A matmul's rows per token and its most rows in one dispatch. */
static int64_t mm_rpt(const kv_desc *d)
{
	return d->u.matmul.rows_per_t > 1 ? d->u.matmul.rows_per_t : 1;
}

static int64_t mm_rows_max(const kv_desc *d)
{
	return mm_rpt(d) * d->t_max;
}

/* A grouped matmul's groups (1: not grouped). */
static int64_t mm_groups(const kv_desc *d)
{
	return d->u.matmul.groups > 1 ? d->u.matmul.groups : 1;
}

/* Whether `cols` consecutive columns from a multiple of cols read one input
 * group: always without groups (columns past N are never stored). */
static bool mm_cols_fit(const kv_desc *d, uint32_t cols)
{
	return mm_groups(d) == 1 || (d->u.matmul.N / mm_groups(d)) % cols == 0;
}

/* Quantized weights: weights per 32-bit word (0 for f32 and f16): the
 * byte formats 4, the nibble formats 8. */
static uint32_t q_per_word(const kv_desc *d)
{
	switch (d->wtype) {
	case HALO_Q8_0:
	case HALO_F8E4M3_B128:
		return 4;
	case HALO_Q4_K:
	case HALO_MXFP4:
		return 8;
	default:
		return 0;
	}
}

/* The registers a quantized chunk's scales take in matvec: q4_k's
 * super-block of 16 bytes, the others' one block scale as an f32. */
static uint32_t q_scale_words(const kv_desc *d)
{
	return d->wtype == HALO_Q4_K ? 4 : 1;
}

/* A lane's loads of row k: 8 weights (16 bytes of f16) with K % 8 == 0,
 * else one; qw words of quantized weights. */
static int64_t matvec_chunks(const kv_desc *d, uint32_t qw)
{
	int64_t K = d->u.matmul.K;
	if (q_per_word(d))
		return K / (q_per_word(d) * (qw ? qw : 1));
	return K % 8 == 0 ? K / 8 : K;
}

/* Columns per group at the largest T: cols at T = 1, times up to 4 with
 * `grow` (matvec.comp), at most 8. */
static uint32_t matvec_nc_max(const kv_desc *d, kv_tiles t)
{
	uint32_t f = !t.grow ? 1 : mm_rows_max(d) >= 3 ? 4 : mm_rows_max(d) >= 2 ? 2 : 1;
	return t.cols * f < 8 ? t.cols * f : (t.cols > 8 ? t.cols : 8);
}

/* Whether t's columns may grow with T: not where they would leave a grouped
 * matmul's input group. */
static bool matvec_may_grow(const kv_desc *d, kv_tiles t)
{
	t.grow = 1;
	return mm_cols_fit(d, matvec_nc_max(d, t));
}

/* Why tiles t are not a matvec variant for d, or NULL when they are. */
static const char *matvec_illegal(const kv_desc *d, kv_tiles t)
{
	uint32_t nc_max = matvec_nc_max(d, t);
	uint64_t rows = (uint64_t)mm_rows_max(d);
	uint64_t nval = (uint64_t)nc_max * rows + (d->pro.on ? rows : 0);
	uint64_t slots = t.tree ? t.local : t.local / 4;
	if (!is_pow2(t.local) || t.local > KV_MAX_LANES || !is_pow2(t.split) || t.split < 4 || t.split > t.local)
		return "local and split must be powers of two with 4 <= split <= local <= 1024";
	/* f16 and f32 chunks are 4 and 8 registers: at most 16 in flight */
	if (!is_pow2(t.cols) || t.cols > 8 || !is_pow2(t.unroll) || t.unroll > 8 ||
	    (!q_per_word(d) && nc_max * t.unroll > 16))
		return "cols and unroll must be powers of two <= 8 with cols * unroll <= 16 at the largest T";
	if (!q_per_word(d) && t.qw)
		return "qw applies to quantized weights only";
	if (t.dot_emul && !d->u.matmul.xq)
		return "dot_emul applies to int8 activations (xq) only";
	if (d->u.matmul.pair && t.cols < 2)
		return "pair: a column group holds each gate column with its up, so cols >= 2";
	/* its columns share their x reads, so they must read one input group */
	if (!mm_cols_fit(d, nc_max))
		return "groups: a column group's columns must read one input group (N / groups a multiple of the"
		       " columns per group at the largest T)";
	/* A quantized chunk in registers: its qw words and its scales; at most
	 * 64 such registers per lane. */
	if (q_per_word(d) && (!is_pow2(t.qw) || t.qw > 4 || nc_max * t.unroll * (t.qw + q_scale_words(d)) > 64))
		return "quantized weights: qw must be 1, 2 or 4 with cols * unroll * (qw + scale words) <= 64 at the"
		       " largest T";
	if (slots * nval * 4 + (d->u.matmul.xq ? KV_XQ_SHARED : 0) > KV_SHARED_LIMIT)
		return "the reduction needs more shared memory than every target has";
	uint64_t per_group = (uint64_t)(t.local / t.split) * t.cols;
	if (((uint64_t)d->u.matmul.N + per_group - 1) / per_group > KV_MAX_GROUPS)
		return "too many workgroups for one grid axis";
	return NULL;
}

/* Both heuristics' split and columns for N columns of kc chunks: the K
 * split widened from 16 until the columns keep MATVEC_BUSY_LANES lanes busy
 * (or the split reaches 1024 or half the chunks), at least 128 lanes a
 * workgroup, and columns per group doubled from t->cols while the grid would
 * pass KV_MAX_GROUPS. */
static void matvec_widen(int64_t N, int64_t kc, kv_tiles *t)
{
	t->split = 16;
	while ((uint64_t)N * t->split < MATVEC_BUSY_LANES && t->split < 1024 && 2 * t->split <= (uint64_t)kc)
		t->split *= 2;
	t->local = t->split > 128 ? t->split : 128;
	while (t->cols < 8 && (N + (int64_t)(t->local / t->split) * t->cols - 1) /
				      ((int64_t)(t->local / t->split) * t->cols) > KV_MAX_GROUPS)
		t->cols *= 2;
}

/* Int8 activations (xq): each workgroup stages x's codes (K a row) for
 * its columns, so a workgroup should own many columns: half f16's K split
 * (matvec_widen) but at least 8, 256 to 512 lanes (16 column groups where
 * the split allows), 2 columns a group, 16-byte loads (the words need no
 * unpacking, so the float path's reasons for 8-byte ones are gone), four in
 * flight when a lane has 8 chunks or more. Measured on an H100 against the
 * space (bench/matvec_bench --xq, 2026-12-06, bench/results-quant.txt): the
 * space's fastest at T = 1 on the Qwen3-8B layer and head shapes had these
 * splits and lanes (4096 x 12288 ls256,sp16; 12288 x 4096 and 4096 x 4096
 * ls512,sp32; the 151936-column head ls256,sp8), where a first heuristic
 * with twice the split was up to 1.35x slower. */
static kv_tiles matvec_heuristic_xq(const kv_desc *d)
{
	kv_tiles t = {.cols = 2, .qw = 4, .grow = 1};
	matvec_widen(d->u.matmul.N, matvec_chunks(d, 1), &t);
	t.split = t.split / 2 < 8 ? 8 : t.split / 2;
	uint32_t lanes = t.split * 16 < 256 ? 256 : t.split * 16 > 512 ? 512 : t.split * 16;
	t.local = lanes > t.split ? lanes : t.split;
	uint64_t per_lane = ((uint64_t)matvec_chunks(d, t.qw) + t.split - 1) / t.split;
	t.unroll = per_lane >= 8 ? 4 : per_lane >= 2 ? 2 : 1;
	uint64_t rows = (uint64_t)mm_rows_max(d), nc = matvec_nc_max(d, t);
	if (nc * rows + nc * t.unroll * (t.qw + q_scale_words(d)) > 96 || matvec_illegal(d, t))
		t.grow = 0;
	while (matvec_illegal(d, t) && t.local > t.split && t.local > 128)
		t.local /= 2;
	while (matvec_illegal(d, t) && t.unroll > 1)
		t.unroll /= 2;
	return t;
}

/* Quantized weights: q8_0 two 32-bit words per lane load, q4_k one (x is
 * then read in consecutive 32 bytes across the lanes; a 16-byte load of q4_k
 * would take 128 bytes of x per lane, 32 lines of x per subgroup load), and
 * more columns per group than f16's one, since x is re-read per
 * column group: 4 bytes of x per weight are 4 (q8_0) and 8 (q4_k) bytes per
 * weight byte against f16's 2, so 2 and 4 columns keep it at f16's 1. The
 * K split as f16's, over words; loads in flight for f16's 32 bytes per lane
 * at T = 1 (cols * unroll * qw * 4). Columns grow with T only where the
 * per-chunk sums and the chunks in flight stay within about 128 registers
 * at the largest T (for the shapes of the targets they do not: fixed
 * columns). q8_0 measured on the H200 (matvec_bench --dtype q8_0, 2026-12-03,
 * bench/results-quant.txt): 8-byte loads (qw 2, unroll 2) beat 4-byte ones
 * (unroll 4) at T = 1 on every shape (4096 x 12288: 26.1 against 30.6 us;
 * the 4096 x 151936 head 221 against 293) and stayed within 1.2x of them at
 * T = 8; 16-byte loads were up to 1.10x faster at T = 1 but 1.5-2.1x slower
 * at T = 8, which verification runs. q4_k (matvec_bench --dtype q4_k,
 * 2026-12-04, bench/results-quant.txt) is bound by its unpacking, not its
 * bytes: one 8-byte load a lane (qw 2, unroll 1) beat 4-byte loads two in
 * flight (qw 1, unroll 2) on every shape at T = 1 (4096 x 12288 27.9
 * against 31.3 us, 12288 x 4096 24.1 against 29.4, the 4096 x 151936 head
 * 207 against 261) and T = 8 (106.5 against 128.8, 91.1 against 124.5);
 * 16-byte loads (qw 4) tied at T = 1 and lost 1.3-1.6x at T = 8.
 * f8e4m3_b128 takes q8_0's choice: the same byte per weight and
 * one scale per block (not measured either; its decode is a few more
 * integer operations per word). mxfp4 takes q4_k's: the same nibble per
 * weight, so the same bytes of x per weight byte, and a decode of a few
 * integer operations per value (not measured: tools/gpu/bench-quant.sh). */
static kv_tiles matvec_heuristic_q(const kv_desc *d)
{
	if (d->u.matmul.xq)
		return matvec_heuristic_xq(d);
	int64_t N = d->u.matmul.N, kc = matvec_chunks(d, 1);
	bool nib = q_per_word(d) == 8;
	kv_tiles t = {.cols = nib ? 4 : 2, .unroll = nib ? 1 : 2, .qw = 2, .grow = 1};
	while (t.cols > 1 && !mm_cols_fit(d, t.cols)) /* a grouped matmul's narrow input groups */
		t.cols /= 2;
	matvec_widen(N, kc, &t); /* the split of one-word chunks, as measured */
	uint64_t per_lane = ((uint64_t)matvec_chunks(d, t.qw) + t.split - 1) / t.split;
	while (t.unroll > 1 && t.unroll > per_lane)
		t.unroll /= 2;
	/* Growing columns also grow the per-chunk sums (a second array the size
	 * of the accumulators): keep the sums and the chunks in flight within
	 * about 128 registers at the largest T, else fixed columns. */
	uint64_t rows = (uint64_t)mm_rows_max(d), nc = matvec_nc_max(d, t);
	if (2 * nc * rows + nc * t.unroll * (t.qw + q_scale_words(d)) > 128 || matvec_illegal(d, t))
		t.grow = 0;
	while (matvec_illegal(d, t) && t.unroll > 1)
		t.unroll /= 2;
	while (matvec_illegal(d, t) && t.split > 16) {
		t.split /= 2;
		t.local = t.split > 128 ? t.split : 128;
	}
	return t;
}

/* The built-in choice: widen the K split until the columns keep enough lanes
 * busy (a narrow matrix, N = 4 or 320, gets whole workgroups per column),
 * four column groups per workgroup at least, more columns per group only when
 * the grid would pass its limit (a vocabulary-sized head), and columns that
 * grow with T, so that each x load serves more weight bytes in verification
 * steps. A pipeline specialised for T = 1 (vk_pipeline_for_t) compiles only
 * the 1-column path and sizes the reduction's shared memory for it, so
 * growing costs T = 1 nothing on the H200 (4096 x 4096 12.1 against 12.0 us,
 * the head 288.3 both) and wins at T = 8 (31.9 against 48.3 us, the head 837
 * against 1351; bench/results-h200-matvec.txt, run 6), where each lane's K
 * loop is long: with fewer than two chunks per lane (K of 320 split 32 ways,
 * 10240 split 1024) fixed columns won at T = 5 and 8 (10240 x 320 11.9
 * against 20.6 us at T = 5, 320 x 10240 10.7 against 17.9; run 7). Loads in
 * flight per lane: four when the lane has at least 8 chunks, else two (one
 * when it has one): at T = 1 four tie with two on every such shape (within
 * 1%), and verification's T = 5 takes 1.2-1.7x less time (12288 x 4096 38.3
 * against 65.0 us, 4096 x 12288 49.2 against 69.9, the 4096 x 151936 head
 * 392 against 450; run 7). */
static kv_tiles matvec_heuristic(const kv_desc *d)
{
	if (q_per_word(d))
		return matvec_heuristic_q(d);
	int64_t N = d->u.matmul.N, kc = matvec_chunks(d, 0);
	kv_tiles t = {.cols = d->u.matmul.pair ? 2 : 1};
	matvec_widen(N, kc, &t);
	uint64_t per_lane = ((uint64_t)kc + t.split - 1) / t.split;
	t.unroll = per_lane >= 8 ? 4 : per_lane >= 2 ? 2 : 1;
	t.grow = (uint64_t)kc >= 2 * (uint64_t)t.split && matvec_may_grow(d, t);
	/* Too many chunks in flight at the largest T: two loads a lane; too
	 * wide for the reduction's shared memory: columns that do not grow,
	 * then narrower groups. */
	if (matvec_illegal(d, t) && t.unroll > 2)
		t.unroll = 2;
	if (matvec_illegal(d, t))
		t.grow = 0;
	while (matvec_illegal(d, t) && t.split > 16) {
		t.split /= 2;
		t.local = t.split > 128 ? t.split : 128;
	}
	return t;
}

/* All-zero tiles are the heuristic's; zero sizes in others take its sizes. */
static kv_tiles matvec_resolve(const kv_desc *d)
{
	kv_tiles h = matvec_heuristic(d), t = d->tiles, zero = {0};
	if (!memcmp(&t, &zero, sizeof t))
		return h;
	if (!t.local)
		t.local = h.local;
	if (!t.split)
		t.split = h.split;
	if (!t.cols)
		t.cols = h.cols;
	if (!t.unroll)
		t.unroll = h.unroll;
	if (!t.qw)
		t.qw = h.qw;
	return t;
}


static bool matvec_tiles(kv_build *b)
{
	kv_tiles t = matvec_resolve(b->d);
	const char *why = matvec_illegal(b->d, t);
	if (why)
		return fail(b, "matvec tiles ls%u,sp%u,nc%u%s,u%u%s: %s", t.local, t.split, t.cols, t.grow ? "+" : "",
			    t.unroll, t.tree ? ",tree" : "", why);
	bool quant = q_per_word(b->d) != 0;
	b->p->template = "matvec";
	b->p->cols = t.cols;
	b->p->cols_max = matvec_nc_max(b->d, t);
	def_uint(b, "NC", t.cols);
	def_uint(b, "NC_MAX", matvec_nc_max(b->d, t));
	def_uint(b, "SPLIT", t.split);
	def_uint(b, "UNROLL", t.unroll);
	def_uint(b, "T_MAX", mm_rows_max(b->d));
	/* Rows of K % 8 == 0 start 16-byte aligned in every dtype: each lane
	 * then loads 8 weights at a time (one 16-byte load for f16). */
	bool vec8 = b->d->u.matmul.K % 8 == 0;
	def_int(b, "VEC8", vec8 ? 1 : 0);
	if (quant)
		def_int(b, "QW", t.qw);
	if (b->d->u.matmul.xq) {
		def_int(b, "XQ_SDOT", t.dot_emul ? 0 : 1);
		if (!t.dot_emul)
			b->k->needs |= HALO_NEED_INT_DOT;
	}
	def_int(b, "SG_SHUFFLE", t.tree ? 0 : 1);
	def_int(b, "USE_TREE", 0);
	if (!t.tree)
		b->k->needs |= HALO_NEED_SUBGROUP_SHUFFLE;
	set_local(b, t.local, 1);
	set_grid(b, 0, 0, b->d->u.matmul.N, (int64_t)(t.local / t.split) * t.cols);
	sb_printf(&b->tile, "ls%u,sp%u,nc%u%s,u%u%s%s", t.local, t.split, t.cols, t.grow ? "+" : "", t.unroll,
		  vec8 && !quant ? ",v8" : "", t.tree ? ",tree" : "");
	if (quant)
		sb_printf(&b->tile, ",w%u%s", t.qw, t.dot_emul ? ",i32" : "");
	return true;
}

/* Shared memory of the devices the cooperative-matrix kernel runs on: only
 * NVIDIA's drivers expose VK_NV_cooperative_matrix, on Turing and later, and
 * they report 48 KiB of maxComputeSharedMemorySize; two stages of 128x128
 * tiles with BK = 32 need 40 KiB. */
#define KV_COOPMAT_SHARED_LIMIT 49152
/* Accumulators one subgroup may hold (16x16 f32 each, 8 registers per lane):
 * past 16 the registers spill. */
#define KV_COOPMAT_MAX_ACC 16

/* matmul_coopmat.comp: BM x BN workgroup tiles of (BM/WM)(BN/WN) subgroups
 * of 32 lanes, each owning WM x WN of y; kernels/vulkan/README.md. */
static bool matmul_coopmat_tiles(kv_build *b)
{
	const kv_tiles *t = &b->d->tiles;
	uint32_t bm = t->bm ? t->bm : 64, bn = t->bn ? t->bn : 64, bk = t->bk ? t->bk : 32;
	uint32_t wm = t->tm ? t->tm : 32, wn = t->tn ? t->tn : 32;
	if (b->d->wtype != HALO_F16 && !q_per_word(b->d))
		return fail(b, "the cooperative-matrix matmul takes f16 weights or quantized ones (f32 weights use"
			    " matmul.comp)");
	if (mm_groups(b->d) > 1)
		return fail(b, "the cooperative-matrix matmul takes no groups (the tiled kernel does)");
	if (!is_pow2(bm) || !is_pow2(bn) || !is_pow2(bk) || !is_pow2(wm) || !is_pow2(wn) || wm < 16 ||
	    wn < 16 || bk < 16 || bm % wm || bn % wn)
		return fail(b, "coopmat tiles bm=%u bn=%u bk=%u wm=%u wn=%u: powers of two >= 16 with wm | bm, wn | bn",
			    bm, bn, bk, wm, wn);
	uint32_t nsg = (bm / wm) * (bn / wn), lanes = 32 * nsg, cpr = bk / 8;
	if ((wm / 16) * (wn / 16) > KV_COOPMAT_MAX_ACC)
		return fail(b, "coopmat: %u x %u per subgroup is more than %d accumulators", wm, wn,
			    KV_COOPMAT_MAX_ACC);
	if (lanes > KV_MAX_LANES)
		return fail(b, "coopmat: %u subgroups exceed %d lanes", nsg, KV_MAX_LANES);
	/* Each lane loads whole 16-byte chunks of the step: no remainder loop. */
	if ((bm * cpr) % lanes || (bn * cpr) % lanes)
		return fail(b, "coopmat: the %u x %u and %u x %u tiles do not split into 8-element chunks over %u lanes",
			    bm, bk, bn, bk, lanes);
	if (b->d->pro.on && (bm / nsg) % 8)
		return fail(b, "coopmat: the prologue sums 8 rows at a time per subgroup; %u rows over %u subgroups",
			    bm, nsg);
	uint64_t stage = (uint64_t)(bm + bn) * (cpr + 1) * 16;
	uint64_t shared = 2 * stage + (b->d->pro.on ? (uint64_t)bm * 4 : 0);
	/* The stages double as each subgroup's 1 KiB scratch (prologue sums, epilogue). */
	if ((uint64_t)nsg * 1024 > 2 * stage)
		return fail(b, "coopmat: %u subgroups need more scratch than the stages hold", nsg);
	if (shared > KV_COOPMAT_SHARED_LIMIT)
		return fail(b, "coopmat: tile needs %" PRIu64 " bytes of shared memory, more than %d", shared,
			    KV_COOPMAT_SHARED_LIMIT);
	b->p->template = "matmul_coopmat";
	b->k->needs |= HALO_NEED_COOPMAT_NV;
	def_uint(b, "BM", bm);
	def_uint(b, "BN", bn);
	def_uint(b, "BK", bk);
	def_uint(b, "WM", wm);
	def_uint(b, "WN", wn);
	/* Rows of K % 8 == 0 start 16-byte aligned for f16 w and 32-byte for f32 x. */
	bool vec8 = b->d->u.matmul.K % 8 == 0;
	def_int(b, "VEC8", vec8 ? 1 : 0);
	def_int(b, "USE_TREE", 0);
	set_local(b, lanes, 1);
	set_grid(b, 0, 0, b->d->u.matmul.N, bn);
	set_grid(b, 1, mm_rpt(b->d), 0, bm);
	sb_printf(&b->tile, "cm,bm%u,bn%u,bk%u,wm%u,wn%u%s", bm, bn, bk, wm, wn, vec8 ? ",v8" : "");
	return true;
}

/* The tiled kernel's default BN: 32, or for a grouped matmul the widest
 * power of two up to 32 that divides its columns per group (a tile's
 * columns then read one input group). */
static uint32_t matmul_bn(const kv_desc *d)
{
	uint32_t bn = 32;
	while (bn > 1 && !mm_cols_fit(d, bn))
		bn /= 2;
	return bn;
}

static bool matmul_tiles(kv_build *b)
{
	const kv_tiles *t = &b->d->tiles;
	if (t->coopmat)
		return matmul_coopmat_tiles(b);
	uint32_t bm = t->bm ? t->bm : 32, bn = t->bn ? t->bn : matmul_bn(b->d), bk = t->bk ? t->bk : 16;
	uint32_t tm = t->tm ? t->tm : 2, tn = t->tn ? t->tn : (bn < 2 ? bn : 2);
	if (!is_pow2(bm) || !is_pow2(bn) || !is_pow2(bk) || !is_pow2(tm) || !is_pow2(tn) || bm % tm ||
	    bn % tn)
		return fail(b, "matmul tiles bm=%u bn=%u bk=%u tm=%u tn=%u: powers of two with tm | bm, tn | bn",
			    bm, bn, bk, tm, tn);
	if (!mm_cols_fit(b->d, bn))
		return fail(b, "matmul: a tile's %u columns must read one input group of %" PRId64 " columns", bn,
			    b->d->u.matmul.N / mm_groups(b->d));
	if (q_per_word(b->d) && bk % 8)
		return fail(b, "matmul: quantized weights are dequantized 8 at a time; bk = %u", bk);
	if (b->d->u.matmul.pair && tn % 2)
		return fail(b, "matmul: pair keeps each gate column with its up in one lane; tn = %u", tn);
	uint32_t lx = bn / tn, ly = bm / tm;
	if ((uint64_t)lx * ly > KV_MAX_LANES)
		return fail(b, "matmul: %u x %u lanes exceed %d", lx, ly, KV_MAX_LANES);
	if (((uint64_t)(bm + bn) * (bk + 1) + bm) * 4 > KV_SHARED_LIMIT)
		return fail(b, "matmul: tile needs more than %d bytes of shared memory", KV_SHARED_LIMIT);
	b->p->template = "matmul";
	def_uint(b, "BM", bm);
	def_uint(b, "BN", bn);
	def_uint(b, "BK", bk);
	set_local(b, lx, ly);
	set_grid(b, 0, 0, b->d->u.matmul.N, bn);
	set_grid(b, 1, mm_rpt(b->d), 0, bm);
	def_int(b, "USE_TREE", 0);
	sb_printf(&b->tile, "bm%u,bn%u,bk%u,tm%u,tn%u", bm, bn, bk, tm, tn);
	return true;
}

/* The results (matmul_out.glsl): split's segment ends SEG1..SEG3 (N past
 * the last segment), or a pair's gate/up columns. */
static bool matmul_results(kv_build *b)
{
	const kv_desc *d = b->d;
	int n = d->u.matmul.n_split;
	if (n == 1 || n < 0 || n > KV_MAX_SPLIT)
		return fail(b, "split into %d results: 2 to %d, or none", n, KV_MAX_SPLIT);
	if (n && d->u.matmul.pair)
		return fail(b, "split and pair exclude each other");
	if (n && d->n_epi)
		return fail(b, "a split matmul takes no epilogue (its results are several)");
	if (d->out_at_pos && mm_rpt(d) > 1)
		return fail(b, "a result stored at the position has one row per token, not %" PRId64, mm_rpt(d));
	if (d->u.matmul.pair && d->u.matmul.N % 2)
		return fail(b, "pair: %" PRId64 " weight rows, an even count expected", d->u.matmul.N);
	static const char *const ends[] = {"SEG1", "SEG2", "SEG3"};
	int64_t at = 0;
	for (int i = 0; i < n; i++) {
		if (d->u.matmul.split[i] < 1)
			return fail(b, "split: result %d has %" PRId64 " columns", i, d->u.matmul.split[i]);
		at += d->u.matmul.split[i];
		sb_printf(&b->sig, "%s%" PRId64, i ? "," : " split=", d->u.matmul.split[i]);
	}
	if (n && at != d->u.matmul.N)
		return fail(b, "split: %" PRId64 " columns in all, the weight has %" PRId64 " rows", at, d->u.matmul.N);
	int64_t end = 0;
	for (int i = 0; i < KV_MAX_SPLIT - 1; i++) {
		end += i < n ? d->u.matmul.split[i] : 0;
		def_uint(b, ends[i], i + 1 < n ? end : d->u.matmul.N);
	}
	def_int(b, "NSEG", n ? n : 1);
	def_int(b, "PAIR", d->u.matmul.pair ? 1 : 0);
	b->n_out = n ? n : 1;
	if (d->u.matmul.pair)
		sb_printf(&b->sig, " pair=swiglu");
	add_helper(b, "matmul_out");
	return true;
}

/* groups g > 1 (docs/ops.md): x's rows are g inputs of K, column n reads
 * input n / (N/g). Named and defined (XGROUPS, GROUP_N) only then, so the
 * other matmuls' keys and code stay what they were. */
static bool matmul_groups(kv_build *b)
{
	const kv_desc *d = b->d;
	int64_t g = d->u.matmul.groups;
	if (g < 0)
		return fail(b, "groups %" PRId64 " must be positive", g);
	if (g <= 1)
		return true;
	if (d->u.matmul.N % g)
		return fail(b, "groups %" PRId64 " does not divide N = %" PRId64, g, d->u.matmul.N);
	if (d->u.matmul.n_split || d->u.matmul.pair)
		return fail(b, "groups exclude split and pair");
	if (d->pro.on)
		return fail(b, "a grouped matmul takes no rms_norm prologue (its x row is %" PRId64 " inputs)", g);
	if (!check_index(b, "rows*groups*K", mm_rows_max(d) * g * d->u.matmul.K))
		return false;
	sb_printf(&b->sig, " groups=%" PRId64, g);
	def_uint(b, "XGROUPS", g);
	def_uint(b, "GROUP_N", d->u.matmul.N / g);
	return true;
}

/* xq = 8: int8 activations (docs/quantization.md), a decode kernel's
 * (matvec) on q8_0 or q4_k weights, whose integer codes it multiplies with
 * OpSDot (the HIP twins: sdot4; tiles.dot_emul: integer operations, the
 * same sums). Named and defined (XQ8) only then. */
static bool matmul_xq(kv_build *b, bool vec)
{
	const kv_desc *d = b->d;
	if (!d->u.matmul.xq)
		return true;
	if (d->u.matmul.xq != 8)
		return fail(b, "xq %d: 8 (int8 activations) or absent", d->u.matmul.xq);
	if (!vec)
		return fail(b, "xq: int8 activations are the decode kernel's (at most %d rows a step), not %" PRId64
			    " rows", KV_MATVEC_MAX_T, mm_rows_max(d));
	if (d->wtype != HALO_Q8_0 && d->wtype != HALO_Q4_K)
		return fail(b, "xq: int8 activations take q8_0 or q4_k weights, not %s",
			    halo_dtype_name(d->wtype) ? halo_dtype_name(d->wtype) : "?");
	if (mm_groups(d) > 1)
		return fail(b, "xq: a grouped matmul reads several inputs per workgroup; int8 activations take one");
	sb_printf(&b->sig, " xq=8");
	def_int(b, "XQ8", 1);
	def_uint(b, "XQ_CODE_BYTES", KV_XQ_CODE_BYTES);
	return true;
}

static bool build_matmul(kv_build *b)
{
	int64_t K = b->d->u.matmul.K, N = b->d->u.matmul.N, rows = mm_rows_max(b->d);
	if (b->d->u.matmul.rows_per_t < 0)
		return fail(b, "rows per token %" PRId64 " must be positive", b->d->u.matmul.rows_per_t);
	if (!check_index(b, "K", K) || !check_index(b, "N", N) || !check_index(b, "N*K", N * K) ||
	    !check_index(b, "rows*K", rows * K) || !check_index(b, "rows*N", rows * N))
		return false;
	bool vec = rows <= KV_MATVEC_MAX_T;
	sb_printf(&b->sig, "%s K=%" PRId64 " N=%" PRId64, vec ? "matvec" : "matmul", K, N);
	/* one row per token is the common case: its keys name no row count */
	if (mm_rpt(b->d) > 1)
		sb_printf(&b->sig, " rows=%" PRId64 "*T", mm_rpt(b->d));
	def_uint(b, "K", K);
	def_uint(b, "N", N);
	def_uint(b, "RPT", mm_rpt(b->d));
	if (!matmul_groups(b) || !matmul_results(b))
		return false;
	int64_t w_rows = b->d->u.matmul.w_rows ? b->d->u.matmul.w_rows : N;
	if (w_rows < N)
		return fail(b, "w_rows %" PRId64 ": fewer weight rows than N = %" PRId64, w_rows, N);
	if (w_rows != N)
		sb_printf(&b->sig, " of=%" PRId64, w_rows);
	if (!weight_type_q(b, w_rows, K) || !matmul_xq(b, vec))
		return false;
	return vec ? matvec_tiles(b) : matmul_tiles(b);
}

/* One workgroup normalises one group of G elements: about 8 elements per
 * lane, 64 to 512 lanes. A whole hidden row (G = 4096) on 64 lanes is a
 * latency-bound dispatch of its own in decode once the norm is not fused
 * into its readers: on the H200 3.0 ms against 0.71 ms with 512 lanes over
 * the tuner's steps (bench/results-h200-qwen3_8b.txt, run of 2026-12-03). */
static uint32_t rms_norm_lanes(int64_t G)
{
	uint32_t l = 64;
	while (l < 512 && (int64_t)l * 8 < G)
		l *= 2;
	return l;
}

static bool build_rms_norm(kv_build *b)
{
	int64_t R = b->d->u.rms_norm.rows_per_t, D = b->d->u.rms_norm.D;
	int64_t G = b->d->u.rms_norm.group ? b->d->u.rms_norm.group : D;
	uint32_t ls;
	if (!check_index(b, "rows per token", R) || !check_index(b, "D", D) || !check_index(b, "group", G) ||
	    !check_index(b, "T*R*D", b->d->t_max * R * D) || !lanes_1d(b, rms_norm_lanes(G), &ls))
		return false;
	if (D % G)
		return fail(b, "group %" PRId64 " does not divide D = %" PRId64, G, D);
	if (b->d->u.rms_norm.inject && (R != 1 || b->d->u.rms_norm.unweighted))
		return fail(b, "hc_inject_norm normalises one weighted row a token");
	b->p->template = "rms_norm";
	sb_printf(&b->sig, "rms_norm R=%" PRId64 " D=%" PRId64 " G=%" PRId64 " eps=%.9g off=%d", R, D,
		  G, (double)b->d->u.rms_norm.eps, b->d->u.rms_norm.offset ? 1 : 0);
	/* named (and defined) only when set, so the weighted kernels' keys and
	 * code stay what they were */
	if (b->d->u.rms_norm.unweighted) {
		if (b->d->u.rms_norm.offset)
			return fail(b, "an unweighted norm has no weight to offset");
		sb_printf(&b->sig, " unweighted");
		def_int(b, "UNWEIGHTED", 1);
		b->absent_in = 1;
	}
	if (b->d->u.rms_norm.inject) {
		sb_printf(&b->sig, " inject");
		def_int(b, "INJECT", 1);
	}
	def_uint(b, "R", R);
	def_uint(b, "D", D);
	def_uint(b, "G", G);
	def_float(b, "EPS", b->d->u.rms_norm.eps);
	def_float(b, "OFFSET", (float)(b->d->u.rms_norm.offset ? 1 : 0));
	def_int(b, "USE_TREE", 1);
	per_token_grid(b, ls, R * (D / G), 1);
	return true;
}

/* theta_i as a constant table: the reference's f32 frequencies where its
 * angles are f32 (ref_rope_f32_angles: the same bits), else base^(-2i/rot)
 * in f64, rounded once to f32. */
static void rope_table(kv_build *b, const ref_rope_params *p)
{
	int64_t rot = p->rot_dim;
	float *th = malloc((size_t)(rot / 2) * sizeof(*th) + 1);
	if (!th)
		abort();
	for (int64_t i = 0; i < rot / 2; i++)
		th[i] = ref_rope_f32_angles(p) ? ref_rope_inv_freq(p, i)
					       : (float)pow((double)p->base, -2.0 * (double)i / (double)rot);
	def_float_array(b, "THETA", th, rot / 2);
}

/* rope's attributes past rot_dim and base, each a define and a part of the
 * key only where it differs from its default: the plain rope's kernels stay
 * byte for byte what they were. YaRN changes the table alone. */
static bool rope_options(kv_build *b, const ref_rope_params *p)
{
	if (p->offset < INT32_MIN / 2 || p->offset > INT32_MAX / 2)
		return fail(b, "position offset %" PRId64 " does not fit the kernel's int positions", p->offset);
	if (p->layout == REF_ROPE_INTERLEAVED_TAIL) {
		def_int(b, "ROPE_TAIL", 1);
		sb_printf(&b->sig, " tail");
	}
	if (p->inverse) {
		def_int(b, "ROPE_INVERSE", 1);
		sb_printf(&b->sig, " inverse");
	}
	if (p->offset) {
		def_int(b, "ROPE_OFFSET", p->offset);
		sb_printf(&b->sig, " offset=%" PRId64, p->offset);
	}
	if (p->yarn_factor > 0.0f)
		sb_printf(&b->sig, " yarn=%.9g,%" PRId64 ",%.9g,%.9g", (double)p->yarn_factor, p->yarn_orig_ctx,
			  (double)p->yarn_beta_fast, (double)p->yarn_beta_slow);
	return true;
}

/* rope_math's part of a plan, for heads of D: the checks, the key's
 * " D= rot= base=" and options, ROT, HALF and the table. */
static bool rope_math(kv_build *b, const ref_rope_params *rp, int64_t D)
{
	int64_t rot = rp->rot_dim;
	float base = rp->base;
	if (rot <= 0 || rot > D || rot % 2)
		return fail(b, "rot_dim %" PRId64 " must be even and in [2, %" PRId64 "]", rot, D);
	if (!(base > 0.0f) || !isfinite(base))
		return fail(b, "base %g must be positive and finite", (double)base);
	if (rp->yarn_factor > 0.0f && (!(base > 1.0f) || rp->yarn_orig_ctx < 1))
		return fail(b, "YaRN needs base > 1 (got %g) and an original context (got %" PRId64 ")", (double)base,
			    rp->yarn_orig_ctx);
	add_helper(b, "rope_math");
	sb_printf(&b->sig, " D=%" PRId64 " rot=%" PRId64 " base=%.9g", D, rot, (double)base);
	if (!rope_options(b, rp))
		return false;
	def_uint(b, "ROT", rot);
	def_uint(b, "HALF", rot / 2);
	rope_table(b, rp);
	return true;
}

static bool build_rope(kv_build *b)
{
	const ref_rope_params *rp = &b->d->u.rope.p;
	int64_t HH = b->d->u.rope.heads, D = b->d->u.rope.D;
	bool pro = b->d->pro.on;
	uint32_t ls;
	/* with the prologue, rms_norm.comp's lanes for a row of D: its sums */
	if (!check_index(b, "heads", HH) || !check_index(b, "D", D) ||
	    !check_index(b, "T*heads*D", b->d->t_max * HH * D) || !lanes_1d(b, pro ? rms_norm_lanes(D) : 64, &ls))
		return false;
	if (pro && b->d->pro.folded)
		return fail(b, "rope: its prologue's norm weight is an operand (a head's norm is never folded)");
	b->p->template = "rope";
	sb_printf(&b->sig, "rope H=%" PRId64, HH);
	if (!rope_math(b, rp, D))
		return false;
	def_uint(b, "HH", HH);
	def_uint(b, "D", D);
	def_int(b, "USE_TREE", pro ? 1 : 0);
	per_token_grid(b, ls, pro ? HH : HH * D, pro ? 1 : ls);
	return true;
}

/* attention_merge.glsl's shared memory is three floats a block and
 * MERGE_CHUNK blocks' sums of dv: the most blocks a round, up to 16, that fit
 * in `room` bytes (0: not one). */
static int64_t merge_chunk(int64_t dv, int64_t blocks, int64_t room)
{
	int64_t chunk = 16;
	while (chunk > 0 && 4 * (3 * blocks + chunk * dv) > room)
		chunk /= 2;
	return chunk;
}

/* attention_partial of a prompt step (t_max past the decode kernels'):
 * attention_rows.comp, 128 lanes, QR query vectors a workgroup (GH heads of
 * one kv group, the largest power of two dividing the group up to 4, times
 * QR / GH token rows) sharing each staged pass of KP keys: the first of
 * (QR, KP) = (32, 32), (32, 16), (16, 16) whose staged queries, keys and
 * weights fit the shared memory every target has (D = 128 takes (32, 16));
 * false (nothing built) where none fits or D, DV or the block do not suit
 * it. */
#define ATT_ROWS_LANES 128

static bool build_attention_rows(kv_build *b, uint32_t ls, int64_t blocks)
{
	const kv_desc *d = b->d;
	int64_t hq = d->u.attention.hq, hk = d->u.attention.hk, D = d->u.attention.D, dv = d->u.attention.dv;
	int64_t wide = D > dv ? D : dv, group = hq / hk, gh = 1;
	bool merged = d->op == IR_OP_ATTENTION_BLOCKS;
	if ((d->op != IR_OP_ATTENTION_PARTIAL && !merged) || d->t_max <= KV_MATVEC_MAX_T || ls != ATT_ROWS_LANES ||
	    D % 4 || dv % 4)
		return false;
	while (gh < 4 && group % (2 * gh) == 0)
		gh *= 2;
	static const int64_t tiles[][2] = {{32, 32}, {32, 16}, {16, 16}};
	for (size_t i = 0; i < sizeof tiles / sizeof *tiles; i++) {
		/* 16 query groups of SQ = qr / 16, 8 key groups of SK = kp / 8 */
		int64_t qr = tiles[i][0], kp = tiles[i][1];
		int64_t shared = (qr * (D + 4) + kp * (wide + 4) + kp * qr + qr) * 4;
		int64_t chunk = merged ? merge_chunk(dv, blocks, KV_SHARED_LIMIT - shared) : 1;
		if (shared > KV_SHARED_LIMIT || chunk < 1 || d->u.attention.block % kp)
			continue;
		if (merged)
			def_uint(b, "MERGE_CHUNK", chunk);
		b->p->template = "attention_rows";
		def_uint(b, "QR", qr);
		def_uint(b, "GH", gh);
		def_uint(b, "KP", kp);
		set_local(b, ls, 1);
		set_grid(b, 0, 0, hq / gh, 1);
		set_grid(b, 1, 1, 0, qr / gh);
		set_grid(b, 2, 0, blocks, 1);
		sb_printf(&b->tile, "ls%u,q%" PRId64 ",g%" PRId64 ",kp%" PRId64, ls, qr, gh, kp);
		return true;
	}
	return false;
}

/* attention_rope's ROPE_IN part of the plan: the rotation (rope_math), the
 * heads' norm, the staged keys' rows. */
static bool attention_rope_in(kv_build *b, int64_t D)
{
	const kv_desc *d = b->d;
	float eps = d->u.attention.norm_eps;
	if (!(eps >= 0.0f) || !isfinite(eps))
		return fail(b, "norm eps %g must be finite and not negative", (double)eps);
	sb_printf(&b->sig, " rope");
	if (!rope_math(b, &d->u.attention.rope, D))
		return false;
	sb_printf(&b->sig, " eps=%.9g%s", (double)eps, d->u.attention.norm_offset ? " norm_offset" : "");
	def_int(b, "ROPE_IN", 1);
	b->n_out = 3; /* y, part, k_out */
	def_uint(b, "NEW_MAX", d->t_max);
	def_float(b, "NORM_EPS", eps);
	def_float(b, "NORM_OFFSET", (float)(d->u.attention.norm_offset ? 1 : 0));
	return true;
}

/* attention, masked_attention (the same kernel with a 0/1 mask [T, C] over
 * the cache rows, MASKED; no fused epilogue on the masked forms),
 * attention_partial (PARTIAL: one workgroup per block of BLOCK keys, grid z,
 * writing the block's sums instead of y) and attention_blocks (PARTIAL and
 * BLOCKS: the blocks' sums to part, and each row's last block to finish
 * merges them into y, attention_merge.glsl; masked_attention_blocks with
 * MASKED too), and attention_rope (BLOCKS and
 * ROPE_IN: the queries and the step's keys normalised and rotated in the
 * kernel, rope_math.glsl; steps of at most KV_MATVEC_MAX_T tokens, whose
 * keys a workgroup stages). Keys are scored LPK lanes per key (vec4 loads
 * when D is a multiple of 4); the default 128 lanes take 32 keys a pass.
 * Prompt steps of attention_partial and attention_blocks take
 * build_attention_rows. */
static bool build_attention(kv_build *b)
{
	const kv_desc *d = b->d;
	bool masked = d->op == IR_OP_MASKED_ATTENTION || d->op == IR_OP_MASKED_ATTENTION_BLOCKS;
	bool rope_in = d->op == IR_OP_ATTENTION_ROPE;
	bool merged = d->op == IR_OP_ATTENTION_BLOCKS || d->op == IR_OP_MASKED_ATTENTION_BLOCKS || rope_in;
	bool partial = d->op == IR_OP_ATTENTION_PARTIAL || merged;
	int64_t hq = d->u.attention.hq, hk = d->u.attention.hk, D = d->u.attention.D;
	int64_t dv = d->u.attention.dv, C = d->u.attention.C, block = d->u.attention.block;
	int64_t blocks = partial && block > 0 ? (C + block - 1) / block : 1;
	uint32_t ls, lpk = 4;
	if (!check_index(b, "hq", hq) || !check_index(b, "hk", hk) || !check_index(b, "D", D) ||
	    !check_index(b, "dv", dv) || !check_index(b, "C", C) || !check_index(b, "C*hk*D", C * hk * D) ||
	    !check_index(b, "C*hk*dv", C * hk * dv) || !check_index(b, "T*hq*D", d->t_max * hq * D) ||
	    !check_index(b, "T*hq*dv", d->t_max * hq * dv) || !check_index(b, "T*C", d->t_max * C) ||
	    !check_index(b, "T*hq*blocks*(dv+2)", d->t_max * hq * blocks * (dv + 2)) || !lanes_1d(b, 128, &ls))
		return false;
	if (hq % hk)
		return fail(b, "%" PRId64 " query heads are not a multiple of %" PRId64 " kv heads", hq, hk);
	if (ls < lpk)
		return fail(b, "local size %u is below the %u lanes that score one key", ls, lpk);
	if (partial && (block <= 0 || block % (ls / lpk)))
		return fail(b, "block of %" PRId64 " keys is not a positive multiple of the %u keys a pass takes",
			    block, ls / lpk);
	if (merged && d->t_max > d->u.attention.sync_rows)
		return fail(b, "sync state of %" PRId64 " rows cannot count the rows of a step of %" PRId64 " tokens",
			    d->u.attention.sync_rows, d->t_max);
	if (rope_in && d->t_max > KV_MATVEC_MAX_T)
		return fail(b, "attention_rope stages a step's keys: at most %d tokens, not %" PRId64, KV_MATVEC_MAX_T,
			    d->t_max);
	/* qs, part_dot, score, weight; with ROPE_IN the tree (its head and keys
	 * share the merge's staging, rope_stage below) */
	int64_t room = KV_SHARED_LIMIT - ((int64_t)D + 3 * (int64_t)ls) * 4;
	if (rope_in)
		room -= (int64_t)ls * 4;
	if (masked && partial) /* the block's mask, a bit a key (kept_bits) */
		room -= (block + 31) / 32 * 4;
	if (room < 0 || (merged && merge_chunk(dv, blocks, room) < 1))
		return fail(b, "head dim %" PRId64 " (and %" PRId64 " blocks of %" PRId64 " to merge) need more than %d"
			    " bytes of shared memory", D, blocks, dv, KV_SHARED_LIMIT);
	if (!isfinite(d->u.attention.scale))
		return fail(b, "scale is not finite");
	sb_printf(&b->sig, "%s hq=%" PRId64 " hk=%" PRId64 " D=%" PRId64 " dv=%" PRId64 " C=%" PRId64 " scale=%.9g",
		  op_name(d->op), hq, hk, D, dv, C, (double)d->u.attention.scale);
	if (partial)
		sb_printf(&b->sig, " block=%" PRId64, block);
	if (rope_in && !attention_rope_in(b, D))
		return false;
	def_uint(b, "HQ", hq);
	def_uint(b, "HK", hk);
	def_uint(b, "D", D);
	def_uint(b, "DV", dv);
	def_uint(b, "LPK", lpk);
	def_int(b, "VEC4", D % 4 == 0);
	def_float(b, "SCALE", d->u.attention.scale);
	def_int(b, "USE_TREE", rope_in);
	if (masked) {
		def_uint(b, "MASK_C", C);
		def_int(b, "MASKED", 1);
	}
	if (partial) {
		def_int(b, "PARTIAL", 1);
		def_uint(b, "BLOCK", block);
		def_uint(b, "NBLK", blocks);
	}
	if (merged) {
		def_int(b, "BLOCKS", 1);
		add_helper(b, "attention_merge");
	}

	if (build_attention_rows(b, ls, blocks))
		return true;
	if (merged) {
		/* the staging array: the merge's chunk of blocks, or attention_rope's
		 * head and step keys where they need more */
		int64_t chunk = merge_chunk(dv, blocks, room), stage = chunk * dv;
		if (rope_in && (1 + d->t_max) * D > stage)
			stage = (1 + d->t_max) * D;
		if (4 * (3 * blocks + stage) > room)
			return fail(b, "the step's %" PRId64 " keys of %" PRId64 " need more than %d bytes of shared"
				    " memory", d->t_max, D, KV_SHARED_LIMIT);
		def_uint(b, "MERGE_CHUNK", chunk);
		if (stage > chunk * dv)
			def_uint(b, "MERGE_STAGE", stage);
	}
	b->p->template = "attention";
	per_token_grid(b, ls, hq, 1);
	set_grid(b, 2, 0, blocks, 1);
	return true;
}

/* attention_combine: one workgroup per (head, token) merges the NBLK block
 * sums in block order; lanes own output channels. */
static bool build_attention_combine(kv_build *b)
{
	const kv_desc *d = b->d;
	int64_t hq = d->u.attention.hq, dv = d->u.attention.dv, blocks = d->u.attention.blocks;
	uint32_t ls;
	if (!check_index(b, "hq", hq) || !check_index(b, "dv", dv) || !check_index(b, "blocks", blocks) ||
	    !check_index(b, "T*hq*blocks*(dv+2)", d->t_max * hq * blocks * (dv + 2)) || !lanes_1d(b, 128, &ls))
		return false;
	int64_t chunk = merge_chunk(dv, blocks, KV_SHARED_LIMIT);
	if (chunk < 1)
		return fail(b, "%" PRId64 " blocks of %" PRId64 " need more than %d bytes of shared memory", blocks, dv,
			    KV_SHARED_LIMIT);
	b->p->template = "attention_combine";
	add_helper(b, "attention_merge");
	def_uint(b, "MERGE_CHUNK", chunk);
	sb_printf(&b->sig, "attention_combine hq=%" PRId64 " dv=%" PRId64 " blocks=%" PRId64, hq, dv, blocks);
	def_uint(b, "HQ", hq);
	def_uint(b, "DV", dv);
	def_uint(b, "NBLK", blocks);
	def_int(b, "USE_TREE", 0);
	per_token_grid(b, ls, hq, 1);
	return true;
}

static bool build_softmax(kv_build *b)
{
	int64_t R = b->d->u.softmax.rows_per_t, D = b->d->u.softmax.D;
	uint32_t ls;
	if (!check_index(b, "rows per token", R) || !check_index(b, "D", D) ||
	    !check_index(b, "T*R*D", b->d->t_max * R * D) || !lanes_1d(b, 64, &ls))
		return false;
	b->p->template = "softmax";
	sb_printf(&b->sig, "softmax R=%" PRId64 " D=%" PRId64, R, D);
	def_uint(b, "R", R);
	def_uint(b, "D", D);
	def_int(b, "USE_TREE", 1);
	per_token_grid(b, ls, R, 1);
	return true;
}

static bool build_elementwise(kv_build *b)
{
	ir_dim n = b->d->u.elementwise.numel;
	uint32_t ls;
	if (n.coef_T < 0 || n.c < 0 || !check_index(b, "elements", dim_at(n, b->d->t_max)) ||
	    !lanes_1d(b, 256, &ls))
		return false;
	b->p->template = "elementwise";
	sb_printf(&b->sig, "elementwise n=%" PRId64 "*T+%" PRId64, n.coef_T, n.c);
	def_affine(b, "NUMEL_T", "NUMEL_C", n);
	def_int(b, "USE_TREE", 0);
	const kv_elem_op *m = &b->d->u.elementwise.main;
	if (m->op != b->d->op)
		return fail(b, "elementwise main op '%s' differs from the node's op", op_name(m->op));
	if (!check_elem(b, m, "main op"))
		return false;
	if (m->operand != 0)
		return fail(b, "main op: the running value is always operand 0");
	sb_printf(&b->sig, " op=");
	sig_elem(&b->sig, m);
	set_local(b, ls, 1);
	set_grid(b, 0, n.coef_T, n.c, ls);
	sb_printf(&b->tile, "ls%u", ls);
	return true;
}

/* Loads of 16 bytes each lane of argmax issues before comparing any. */
#define ARGMAX_UNROLL 4

/* One workgroup a row: by default as many lanes (up to 1024) as the row
 * gives each at least one round of loads, so that a vocabulary row (1 MB)
 * is read by a full workgroup with 64 KB in flight, not 64 lanes one float
 * at a time (400 us for Qwen3.8's 248320 on the H200: half a draft step). */
static bool build_argmax(kv_build *b)
{
	int64_t N = b->d->u.argmax.N;
	bool vec4 = N % 4 == 0;
	uint32_t dflt = 32, ls;
	while (dflt < KV_MAX_LANES && (int64_t)dflt * 2 * 4 * ARGMAX_UNROLL <= N)
		dflt *= 2;
	if (!check_index(b, "N", N) || !check_index(b, "T*N", b->d->t_max * N) || !lanes_1d(b, dflt, &ls))
		return false;
	b->p->template = "argmax";
	sb_printf(&b->sig, "argmax N=%" PRId64, N);
	def_uint(b, "N", N);
	def_int(b, "VEC4", vec4);
	def_uint(b, "UNROLL", ARGMAX_UNROLL);
	def_int(b, "USE_TREE", 0);
	set_local(b, ls, 1);
	set_grid(b, 0, 1, 0, 1);
	sb_printf(&b->tile, "ls%u%s", ls, vec4 ? ",v4" : "");
	return true;
}

static bool build_copy(kv_build *b)
{
	const kv_desc *d = b->d;
	ir_dim rows = d->u.copy.rows;
	int64_t W = d->u.copy.width, rep = d->u.copy.rep ? d->u.copy.rep : 1;
	int64_t rmax = dim_at(rows, d->t_max);
	uint32_t ls;
	if (rows.coef_T < 0 || rows.c < 0 || !check_index(b, "rows", rmax) || !check_index(b, "width", W) ||
	    !check_index(b, "source stride", d->u.copy.src_stride) ||
	    !check_index(b, "destination stride", d->u.copy.dst_stride) || !lanes_1d(b, 256, &ls))
		return false;
	if (d->u.copy.src_offset < 0 || d->u.copy.dst_offset < 0 || rep < 1)
		return fail(b, "negative offsets or repeat %" PRId64, rep);
	if (W > d->u.copy.src_stride || W > d->u.copy.dst_stride)
		return fail(b, "row width %" PRId64 " exceeds a stride", W);
	if (!check_index(b, "last source index",
			 d->u.copy.src_offset + ((rmax - 1) / rep + 1) * d->u.copy.src_stride))
		return false;
	if (d->u.copy.from_pos && (!check_index(b, "source rows", d->u.copy.src_rows) ||
				   !check_index(b, "last source index", d->u.copy.src_rows * d->u.copy.src_stride)))
		return false;
	if (d->u.copy.every && !d->u.copy.at_pos)
		return fail(b, "every %" PRId64 " writes rows at the position only", d->u.copy.every);
	if (d->u.copy.every && !check_index(b, "every", d->u.copy.every))
		return false;
	if (d->u.copy.ring && (!d->u.copy.at_pos || d->u.copy.every || !check_index(b, "ring", d->u.copy.ring)))
		return fail(b, "a ring of %" PRId64 " rows takes rows at the position, without every", d->u.copy.ring);
	b->p->template = "copy_rows";
	sb_printf(&b->sig, "copy_rows rows=%" PRId64 "*T+%" PRId64 " W=%" PRId64 " src=%" PRId64
		  "+r/%" PRId64 "*%" PRId64 " dst=%" PRId64 "+r*%" PRId64 "%s", rows.coef_T, rows.c, W,
		  d->u.copy.src_offset, rep, d->u.copy.src_stride, d->u.copy.dst_offset,
		  d->u.copy.dst_stride, d->u.copy.at_pos ? " at=pos" : "");
	if (d->u.copy.from_pos)
		sb_printf(&b->sig, " from=pos%+" PRId64 " of %" PRId64, d->u.copy.pos_offset, d->u.copy.src_rows);
	if (d->u.copy.every) { /* a define only then: the other copies stay byte for byte what they were */
		sb_printf(&b->sig, " every=%" PRId64, d->u.copy.every);
		def_uint(b, "EVERY", d->u.copy.every);
	}
	if (d->u.copy.ring) { /* likewise */
		sb_printf(&b->sig, " ring=%" PRId64, d->u.copy.ring);
		def_uint(b, "RING", d->u.copy.ring);
	}
	def_uint(b, "W", W);
	def_uint(b, "REP", rep);
	def_uint(b, "SRC_OFF", d->u.copy.src_offset);
	def_uint(b, "SRC_STRIDE", d->u.copy.src_stride);
	def_uint(b, "DST_OFF", d->u.copy.dst_offset);
	def_uint(b, "DST_STRIDE", d->u.copy.dst_stride);
	def_int(b, "AT_POS", d->u.copy.at_pos ? 1 : 0);
	def_int(b, "USE_TREE", 0);
	def_int(b, "FROM_POS", d->u.copy.from_pos ? 1 : 0);
	def_int(b, "POS_OFFSET", d->u.copy.pos_offset);
	def_uint(b, "SRC_ROWS", d->u.copy.src_rows);
	set_local(b, ls, 1);
	set_grid(b, 0, 0, W, ls);
	set_grid(b, 1, rows.coef_T, rows.c, 1);
	sb_printf(&b->tile, "ls%u", ls);
	return true;
}

static bool build_concat(kv_build *b)
{
	ir_dim rows = b->d->u.concat.rows, wa = b->d->u.concat.wa, wb = b->d->u.concat.wb;
	int64_t T = b->d->t_max;
	uint32_t ls;
	if (rows.coef_T < 0 || rows.c < 0 || wa.coef_T < 0 || wa.c < 0 || wb.coef_T < 0 || wb.c < 0)
		return fail(b, "negative dims");
	if (rows.coef_T && (wa.coef_T || wb.coef_T))
		return fail(b, "rows and row widths cannot both depend on T");
	if (!check_index(b, "rows", dim_at(rows, T)) || !check_index(b, "a row", dim_at(wa, T)) ||
	    !check_index(b, "b row", dim_at(wb, T)) ||
	    !check_index(b, "elements", dim_at(rows, T) * (dim_at(wa, T) + dim_at(wb, T))) ||
	    !lanes_1d(b, 256, &ls))
		return false;
	b->p->template = "concat";
	sb_printf(&b->sig, "concat rows=%" PRId64 "*T+%" PRId64 " a=%" PRId64 "*T+%" PRId64
		  " b=%" PRId64 "*T+%" PRId64, rows.coef_T, rows.c, wa.coef_T, wa.c, wb.coef_T, wb.c);
	def_affine(b, "WA_T", "WA_C", wa);
	def_affine(b, "WB_T", "WB_C", wb);
	def_int(b, "USE_TREE", 0);
	set_local(b, ls, 1);
	set_grid(b, 0, wa.coef_T + wb.coef_T, wa.c + wb.c, ls);
	set_grid(b, 1, rows.coef_T, rows.c, 1);
	sb_printf(&b->tile, "ls%u", ls);
	return true;
}

/* l2_norm (x) -> y, or gated_rms_norm (x, z, w) -> y: one workgroup per row. */
static bool build_row_norm(kv_build *b)
{
	bool gated = b->d->op == IR_OP_GATED_RMS_NORM;
	int64_t R = b->d->u.norm.rows_per_t, D = b->d->u.norm.D;
	float eps = b->d->u.norm.eps;
	uint32_t ls;
	if (!check_index(b, "rows per token", R) || !check_index(b, "D", D) ||
	    !check_index(b, "T*R*D", b->d->t_max * R * D) || !lanes_1d(b, 64, &ls))
		return false;
	if (!isfinite(eps) || eps < 0.0f)
		return fail(b, "eps %g must be finite and non-negative", (double)eps);
	b->p->template = gated ? "gated_rms_norm" : "l2_norm";
	sb_printf(&b->sig, "%s R=%" PRId64 " D=%" PRId64 " eps=%.9g", op_name(b->d->op), R, D,
		  (double)eps);
	def_uint(b, "R", R);
	def_uint(b, "D", D);
	def_float(b, "EPS", eps);
	def_int(b, "USE_TREE", 1);
	per_token_grid(b, ls, R, 1);
	return true;
}

static bool build_conv1d(kv_build *b)
{
	int64_t C = b->d->u.conv1d.C, K = b->d->u.conv1d.K;
	uint32_t ls;
	if (!check_index(b, "C", C) || !check_index(b, "K", K) || !check_index(b, "C*K", C * K) ||
	    !check_index(b, "(T+K-1)*C", (b->d->t_max + K - 1) * C) || !check_steps(b, (K - 1) * C) ||
	    !lanes_1d(b, 256, &ls))
		return false;
	if (K < 2)
		return fail(b, "kernel size K = %" PRId64 " must be at least 2 (the state holds K-1 rows)",
			    K);
	b->p->template = "conv1d_causal";
	sb_printf(&b->sig, "conv1d_causal C=%" PRId64 " K=%" PRId64 " act=%s", C, K,
		  b->d->u.conv1d.silu ? "silu" : "none");
	def_uint(b, "C", C);
	def_uint(b, "K", K);
	def_int(b, "ACT_SILU", b->d->u.conv1d.silu ? 1 : 0);
	def_int(b, "USE_TREE", 0);
	if (!weight_type(b))
		return false;
	set_local(b, ls, 1);
	set_grid(b, 0, 0, C, ls);
	set_grid(b, 1, 1, K - 1, 1);
	sb_printf(&b->tile, "ls%u", ls);
	return true;
}

/* gated_delta_rule_chunked.comp: tokens per chunk and lanes per value column. */
#define KV_GDR_CHUNK 64
#define KV_GDR_ROWS 8
/* Its default value columns per workgroup, halved until the shared memory fits. */
#define KV_GDR_CHUNK_COLS 16

/* Shared bytes of the chunked kernel with ls columns: the state slice
 * [dk][ls], the chunk matrix [64][64], delta [64][ls], five per-token vectors. */
static uint64_t gdr_chunked_shared(int64_t dk, uint32_t ls)
{
	return 4u * ((uint64_t)dk * ls + KV_GDR_CHUNK * KV_GDR_CHUNK + (uint64_t)KV_GDR_CHUNK * ls +
		     5u * KV_GDR_CHUNK);
}

/* The chunked kernel's columns per workgroup: the tile's `local` if set and
 * it fits, else the widest power of two up to KV_GDR_CHUNK_COLS that fits. */
static bool gdr_chunked_cols(kv_build *b, int64_t dk, uint32_t *out)
{
	uint32_t ls = b->d->tiles.local;
	*out = ls;
	if (ls) {
		if (!is_pow2(ls) || ls * KV_GDR_ROWS > KV_MAX_LANES)
			return fail(b, "local size %u is not a power of two <= %d", ls,
				    KV_MAX_LANES / KV_GDR_ROWS);
	} else {
		for (ls = KV_GDR_CHUNK_COLS; ls > 1 && gdr_chunked_shared(dk, ls) > KV_SHARED_LIMIT;)
			ls /= 2;
		*out = ls;
	}
	if (gdr_chunked_shared(dk, ls) > KV_SHARED_LIMIT)
		return fail(b, "key dim %" PRId64 " with %u value columns per workgroup needs more than"
			    " %d bytes of shared memory", dk, ls, KV_SHARED_LIMIT);
	return true;
}

/* Decode (t_max <= KV_MATVEC_MAX_T) runs the recurrent kernel, which is batch
 * invariant; prefill runs the chunked one, whose sums are grouped by chunk.
 * Steps take the recurrent kernel at any t_max: a verify step's states after
 * each token must be bitwise the ones decode would carry (the recurrent
 * kernel's), and the chunked kernel never holds them.
 * Sets *ls and *rows (lanes per column) and the template name. */
static bool gdr_pick(kv_build *b, int64_t dk, uint32_t *ls, uint32_t *rows)
{
	if (b->d->t_max <= KV_MATVEC_MAX_T || b->d->steps) {
		*rows = 1;
		if (!lanes_1d(b, 64, ls))
			return false;
		if ((uint64_t)dk * 2u * 4u > KV_SHARED_LIMIT)
			return fail(b, "key dim %" PRId64 " needs more than %d bytes of shared memory",
				    dk, KV_SHARED_LIMIT);
		b->p->template = "gated_delta_rule";
		return true;
	}
	*rows = KV_GDR_ROWS;
	b->p->template = "gated_delta_rule_chunked";
	return gdr_chunked_cols(b, dk, ls);
}

static bool build_gdr(kv_build *b)
{
	const kv_desc *d = b->d;
	int64_t hk = d->u.gdr.hk, hv = d->u.gdr.hv, dk = d->u.gdr.dk, dv = d->u.gdr.dv;
	uint32_t ls = 0, rows = 1;
	if (!check_index(b, "hk", hk) || !check_index(b, "hv", hv) || !check_index(b, "dk", dk) ||
	    !check_index(b, "dv", dv) || !check_index(b, "hv*dk*dv", hv * dk * dv) ||
	    !check_index(b, "T*hk*dk", d->t_max * hk * dk) ||
	    !check_index(b, "T*hv*dv", d->t_max * hv * dv) || !check_steps(b, hv * dk * dv))
		return false;
	if (hv % hk)
		return fail(b, "%" PRId64 " value heads are not a multiple of %" PRId64 " key heads", hv,
			    hk);
	if (!isfinite(d->u.gdr.scale))
		return fail(b, "scale is not finite");
	if (!gdr_pick(b, dk, &ls, &rows))
		return false;
	sb_printf(&b->sig, "%s hk=%" PRId64 " hv=%" PRId64 " dk=%" PRId64 " dv=%" PRId64
		  " scale=%.9g", rows > 1 ? "gated_delta_rule_chunked" : "gated_delta_rule", hk, hv,
		  dk, dv, (double)d->u.gdr.scale);
	def_uint(b, "HK", hk);
	def_uint(b, "HV", hv);
	def_uint(b, "DK", dk);
	def_uint(b, "DV", dv);
	def_float(b, "SCALE", d->u.gdr.scale);
	def_int(b, "USE_TREE", 0);
	set_local(b, ls, rows);
	set_grid(b, 0, 0, dv, ls);
	set_grid(b, 1, 0, hv, 1);
	sb_printf(&b->tile, "ls%u", ls);
	if (rows > 1)
		sb_printf(&b->tile, "x%u", rows);
	return true;
}

/* The selected values of a row live in each lane's registers. */
#define KV_TOPK_MAX_K 256

/* moe_route's DeepSeek V4 forms: the scoring, the bias and the scaling
 * are named in the key and defined for topk.comp only when they differ
 * from the softmax router's, whose kernels stay what they were. */
static bool route_options(kv_build *b)
{
	static const char *const names[] = {"softmax", "sigmoid", "sqrtsoftplus"};
	static const char *const defines[] = {NULL, "SCORE_SIGMOID", "SCORE_SQRTSOFTPLUS"};
	kv_scoring s = b->d->u.topk.scoring;
	float scaling = b->d->u.topk.scaling;
	bool route = b->d->op != IR_OP_TOPK, scaled = scaling != 0.0f && scaling != 1.0f;
	if ((unsigned)s > KV_SCORE_SQRTSOFTPLUS)
		return fail(b, "scoring %d unknown", (int)s);
	if (!route && (s != KV_SCORE_SOFTMAX || b->d->u.topk.bias || scaled))
		return fail(b, "scoring, bias and scaling apply to moe_route only");
	if (b->d->op == IR_OP_MOE_ROUTE_HASH && b->d->u.topk.bias)
		return fail(b, "hash routing takes no bias (nothing is ranked)");
	if (!isfinite(scaling))
		return fail(b, "scaling by a non-finite value");
	if (s != KV_SCORE_SOFTMAX) {
		sb_printf(&b->sig, " scoring=%s", names[s]);
		def_int(b, defines[s], 1);
	}
	if (b->d->u.topk.bias) {
		sb_printf(&b->sig, " bias");
		def_int(b, "BIAS", 1);
	}
	if (scaled) {
		sb_printf(&b->sig, " scaling=%.9g", (double)scaling);
		def_float(b, "SCALING", scaling);
	}
	b->absent_in = b->d->op == IR_OP_MOE_ROUTE && !b->d->u.topk.bias ? 1 : 0;
	return true;
}

/* moe_route_hash's table (HASH): V rows of k expert ids held as floats,
 * f32 or f16 (the compiler stores a matrix in its matrix dtype), read
 * through the prelude's load_w. */
static bool hash_table(kv_build *b)
{
	int64_t V = b->d->u.topk.V;
	if (b->d->op != IR_OP_MOE_ROUTE_HASH)
		return true;
	if (!check_index(b, "V", V) || !check_index(b, "V*k", V * b->d->u.topk.k))
		return false;
	sb_printf(&b->sig, " V=%" PRId64, V);
	def_int(b, "HASH", 1);
	def_uint(b, "V", V);
	return weight_type(b);
}

/* topk (x) -> (ids, vals), moe_route (logits[, bias]) -> (ids, w), or
 * moe_route_hash (logits, table, tokens) -> (ids, w): one workgroup per row. */
static bool build_topk(kv_build *b)
{
	bool route = b->d->op != IR_OP_TOPK, hash = b->d->op == IR_OP_MOE_ROUTE_HASH;
	int64_t N = b->d->u.topk.N, k = b->d->u.topk.k;
	bool norm = b->d->u.topk.norm;
	uint32_t ls;
	if (!check_index(b, "N", N) || !check_index(b, "k", k) ||
	    !check_index(b, "T*N", b->d->t_max * N) || !lanes_1d(b, 64, &ls))
		return false;
	if (k > N || k > KV_TOPK_MAX_K)
		return fail(b, "k = %" PRId64 " must be at most N = %" PRId64 " and at most %d", k, N,
			    KV_TOPK_MAX_K);
	if (norm && !route)
		return fail(b, "renormalising the selected values applies to moe_route only");
	b->p->template = "topk";
	if (route)
		sb_printf(&b->sig, "%s E=%" PRId64 " k=%" PRId64 " norm=%d", op_name(b->d->op), N, k, norm ? 1 : 0);
	else
		sb_printf(&b->sig, "topk N=%" PRId64 " k=%" PRId64, N, k);
	if (!route_options(b) || !hash_table(b))
		return false;
	def_uint(b, "N", N);
	def_uint(b, "KSEL", k);
	def_int(b, "ROUTE", route ? 1 : 0);
	def_int(b, "NORM", norm ? 1 : 0);
	def_int(b, "USE_TREE", route ? 1 : 0);
	/* the selections' combine: subgroup shuffles, or (tree, for devices
	 * without them) a shared-memory tree; a total order, so the same
	 * element either way. Hash routing selects nothing. */
	bool shuffle = !b->d->tiles.tree && !hash;
	def_int(b, "SG_SHUFFLE", shuffle ? 1 : 0);
	if (shuffle)
		b->k->needs |= HALO_NEED_SUBGROUP_SHUFFLE;
	set_local(b, ls, 1);
	set_grid(b, 0, 1, 0, 1);
	sb_printf(&b->tile, "ls%u%s", ls, shuffle || hash ? "" : ",tree");
	return true;
}


/* Rows of output per workgroup of the MoE halves: enough workgroups for
 * decode (k*F and H rows), few enough reductions per workgroup. */
#define MOE_ROWS 4
/* moe_down's default lanes: its rows (H) are few, so each workgroup spreads
 * a row's k * F / 8 chunks (800 for Qwen3.8 Flash's 10 experts of 640) over
 * many lanes to keep enough loads in flight. */
#define MOE_DOWN_LANES 256
/* moe_gate_up with 16-byte chunks (H a multiple of 8): a row is SPLIT
 * lanes', so the default width takes 8 rows a workgroup. The split is fixed,
 * not a function of the width: every width sums a row in the same order
 * (bitwise equal), and H = 2560 gives a lane 20 chunks of gate and up, 5
 * rounds of 4 each. */
#define MOE_GATE_UP_LANES 128
#define MOE_GATE_UP_SPLIT 16

/* moe_gate_up and moe_down: the shared checks, defines and bindings; the
 * dot products run over `len` (H for gate/up, F for down). */
static bool build_moe_half(kv_build *b)
{
	bool gate_up = b->d->op == IR_OP_MOE_GATE_UP;
	int64_t H = b->d->u.moe.H, F = b->d->u.moe.F, E = b->d->u.moe.E, k = b->d->u.moe.k;
	int64_t len = gate_up ? H : F, rows = gate_up ? k * F : H;
	int64_t rows_w = gate_up ? F : H; /* rows of one expert's weight matrix */
	uint32_t ls;
	if (!check_index(b, "H", H) || !check_index(b, "F", F) || !check_index(b, "E", E) ||
	    !check_index(b, "k", k) || !check_index(b, "E*F*H", E * F * H) ||
	    !check_index(b, "T*k*F", b->d->t_max * k * F) || !check_index(b, "T*H", b->d->t_max * H) ||
	    !lanes_1d(b, gate_up ? MOE_GATE_UP_LANES : MOE_DOWN_LANES, &ls))
		return false;
	if (k > E)
		return fail(b, "k = %" PRId64 " experts per token, more than E = %" PRId64, k, E);
	float limit = b->d->u.moe.limit;
	if (!isfinite(limit) || limit < 0.0f)
		return fail(b, "limit %g must be finite and >= 0 (0: none)", (double)limit);
	if (limit > 0.0f && !gate_up)
		return fail(b, "limit %g: the clamp is moe_gate_up's, moe_down takes none", (double)limit);
	bool vec8 = len % 8 == 0, split = vec8 && gate_up;
	if (split && ls < MOE_GATE_UP_SPLIT)
		return fail(b, "local size %u: moe_gate_up splits a row over %d lanes", ls, MOE_GATE_UP_SPLIT);
	int64_t nr = split ? ls / MOE_GATE_UP_SPLIT : MOE_ROWS;
	b->p->template = gate_up ? "moe_gate_up" : "moe_down";
	sb_printf(&b->sig, "%s H=%" PRId64 " F=%" PRId64 " E=%" PRId64 " k=%" PRId64, gate_up ? "moe_gate_up" : "moe_down",
		  H, F, E, k);
	/* named and defined only when set: the unclamped kernels stay what they were */
	if (limit > 0.0f) {
		sb_printf(&b->sig, " limit=%.9g", (double)limit);
		def_float(b, "LIMIT", limit);
	}
	def_uint(b, "H", H);
	def_uint(b, "F", F);
	def_uint(b, "E", E);
	def_uint(b, "KSEL", k);
	def_uint(b, "NR", nr);
	def_uint(b, "RED_ROWS", split ? 2 : gate_up ? 2 * nr : nr);
	def_int(b, "VEC8", vec8 ? 1 : 0);
	if (split) {
		/* a lane's gate and up chunks of CPR rounds in flight: 8 loads of
		 * f16 held packed (32 registers), 4 of f32 held as floats
		 * (moe_weights' W8); quantized chunks one round (two rounds of
		 * q4_k's dequantized floats spilled in the cuda twin); never
		 * more rounds than the row gives a lane */
		int64_t cpl = (len / 8 + MOE_GATE_UP_SPLIT - 1) / MOE_GATE_UP_SPLIT;
		int64_t round = b->d->wtype == HALO_F16 ? 4 : b->d->wtype == HALO_F32 ? 2 : 1;
		def_uint(b, "SPLIT", MOE_GATE_UP_SPLIT);
		def_uint(b, "CPR", cpl < round ? cpl : round);
	}
	if (vec8 && !gate_up) {
		/* moe_down: a lane's 16-byte chunks of a row's k experts (cpl),
		 * loaded CPR at a time for its NR rows before any is used (8
		 * loads a lane in flight): one at a time left 10 experts of
		 * 2560 x 640 f16 at 62-89 us a token on the H200, 42.5 us with
		 * a round per expert. */
		int64_t cpl = (k * len / 8 + ls - 1) / ls, round = 8 / MOE_ROWS > 1 ? 8 / MOE_ROWS : 1;
		def_uint(b, "CPR", cpl < round ? cpl : round);
	}
	def_int(b, "USE_TREE", 0);
	if (!weight_type_q(b, E * rows_w, len))
		return false;
	add_helper(b, "moe_weights");
	per_token_grid(b, ls, rows, nr);
	if (split)
		sb_printf(&b->tile, ",sp%d", MOE_GATE_UP_SPLIT);
	sb_printf(&b->tile, ",rows%" PRId64 "%s", nr, vec8 ? ",v8" : "");
	return true;
}

/* ---- Qwen4-Exp ops ------------------------------------------------------------------------ */

static bool build_reduce_mean(kv_build *b)
{
	ir_dim outer = b->d->u.reduce.outer;
	int64_t n = b->d->u.reduce.n, inner = b->d->u.reduce.inner;
	int64_t rows = dim_at(outer, b->d->t_max);
	uint32_t ls;
	if (outer.coef_T < 0 || outer.c < 0)
		return fail(b, "outer rows %" PRId64 "*T+%" PRId64 " must not be negative", outer.coef_T, outer.c);
	if (!check_index(b, "outer rows", rows) || !check_index(b, "n", n) || !check_index(b, "inner", inner) ||
	    !check_index(b, "outer*n*inner", rows * n * inner) || !lanes_1d(b, 256, &ls))
		return false;
	b->p->template = "reduce_mean";
	sb_printf(&b->sig, "reduce_mean outer=%" PRId64 "*T+%" PRId64 " n=%" PRId64 " inner=%" PRId64,
		  outer.coef_T, outer.c, n, inner);
	def_affine(b, "OUTER_T", "OUTER_C", outer);
	def_uint(b, "N", n);
	def_uint(b, "INNER", inner);
	def_int(b, "USE_TREE", 0);
	set_local(b, ls, 1);
	set_grid(b, 0, outer.coef_T * inner, outer.c * inner, ls);
	sb_printf(&b->tile, "ls%u", ls);
	return true;
}

static bool build_signed_sqrt(kv_build *b)
{
	ir_dim numel = b->d->u.signed_sqrt.numel;
	float eps = b->d->u.signed_sqrt.eps;
	uint32_t ls;
	if (numel.coef_T < 0 || numel.c < 0)
		return fail(b, "numel %" PRId64 "*T+%" PRId64 " must not be negative", numel.coef_T, numel.c);
	if (!check_index(b, "numel", dim_at(numel, b->d->t_max)) || !lanes_1d(b, 256, &ls))
		return false;
	if (!isfinite(eps) || eps < 0.0f)
		return fail(b, "eps %g must be finite and non-negative", (double)eps);
	b->p->template = "signed_sqrt";
	sb_printf(&b->sig, "signed_sqrt numel=%" PRId64 "*T+%" PRId64 " eps=%.9g", numel.coef_T, numel.c,
		  (double)eps);
	def_affine(b, "NUMEL_T", "NUMEL_C", numel);
	def_float(b, "EPS", eps);
	def_int(b, "USE_TREE", 0);
	set_local(b, ls, 1);
	set_grid(b, 0, numel.coef_T, numel.c, ls);
	sb_printf(&b->tile, "ls%u", ls);
	return true;
}

/* conv1d_causal.comp with DILATION: the state holds (K-1)*dilation rows. */
static bool build_conv1d_dilated(kv_build *b)
{
	int64_t C = b->d->u.conv_dilated.C, K = b->d->u.conv_dilated.K, dil = b->d->u.conv_dilated.dilation;
	uint32_t ls;
	if (!check_index(b, "C", C) || !check_index(b, "K", K) || !check_index(b, "dilation", dil) ||
	    !check_index(b, "C*K", C * K) || !check_index(b, "(T+(K-1)*dilation)*C", (b->d->t_max + (K - 1) * dil) * C) ||
	    !check_steps(b, (K - 1) * dil * C) || !lanes_1d(b, 256, &ls))
		return false;
	if (K < 2)
		return fail(b, "kernel size K = %" PRId64 " must be at least 2 (the state holds (K-1)*dilation rows)",
			    K);
	b->p->template = "conv1d_causal";
	sb_printf(&b->sig, "conv1d_dilated C=%" PRId64 " K=%" PRId64 " dilation=%" PRId64 " act=%s", C, K, dil,
		  b->d->u.conv_dilated.silu ? "silu" : "none");
	def_uint(b, "C", C);
	def_uint(b, "K", K);
	def_uint(b, "DILATION", dil);
	def_int(b, "ACT_SILU", b->d->u.conv_dilated.silu ? 1 : 0);
	def_int(b, "USE_TREE", 0);
	if (!weight_type(b))
		return false;
	set_local(b, ls, 1);
	set_grid(b, 0, 0, C, ls);
	set_grid(b, 1, 1, (K - 1) * dil, 1);
	sb_printf(&b->tile, "ls%u", ls);
	return true;
}

/* The hash multipliers as 32-bit halves and each head's prime and row offset,
 * as constant tables; false when the tables overrun the embedding. */
static bool ngram_tables(kv_build *b, int64_t heads)
{
	const kv_desc *d = b->d;
	int64_t n = d->u.ngram.ngram;
	uint32_t *lo = malloc((size_t)n * 4), *hi = malloc((size_t)n * 4);
	uint32_t *p = malloc((size_t)heads * 4 + 1), *off = malloc((size_t)heads * 4 + 1);
	if (!lo || !hi || !p || !off)
		abort();
	for (int64_t s = 0; s < n; s++) {
		lo[s] = (uint32_t)d->u.ngram.mult[s];
		hi[s] = (uint32_t)(d->u.ngram.mult[s] >> 32);
	}
	int64_t rows = 0;
	bool ok = true;
	for (int64_t j = 0; j < heads && ok; j++) {
		p[j] = d->u.ngram.size[j];
		off[j] = (uint32_t)rows;
		if (p[j] < 2 || p[j] > INT32_MAX)
			ok = fail(b, "head %" PRId64 " table size %u must be in [2, 2^31)", j, p[j]);
		rows += p[j];
	}
	if (ok && rows > d->u.ngram.rows)
		ok = fail(b, "the head tables need %" PRId64 " rows, the embedding has %" PRId64, rows, d->u.ngram.rows);
	/* the plan owns the tables even on failure (kv_plan_free) */
	def_uint_array(b, "NG_MLO", lo, n);
	def_uint_array(b, "NG_MHI", hi, n);
	def_uint_array(b, "NG_P", p, heads);
	def_uint_array(b, "NG_OFF", off, heads);
	return ok;
}

/* FNV-1a over the head table sizes. */
static uint32_t ngram_size_hash(const uint32_t *size, int64_t heads)
{
	uint32_t h = 2166136261u;
	for (int64_t j = 0; j < heads; j++)
		for (int k = 0; k < 4; k++)
			h = (h ^ ((size[j] >> (8 * k)) & 0xffu)) * 16777619u;
	return h;
}

static bool build_ngram_embed(kv_build *b)
{
	const kv_desc *d = b->d;
	int64_t N = d->u.ngram.ngram, hpn = d->u.ngram.hpn, dp = d->u.ngram.dp, rows = d->u.ngram.rows;
	int64_t eos = d->u.ngram.eos, vocab = d->u.ngram.vocab, heads = (N - 1) * hpn;
	uint32_t ls;
	if (N < 2 || N > KV_NGRAM_MAX || hpn < 1 || hpn > 64)
		return fail(b, "ngram %" PRId64 " must be in [2, %d] and heads_per_ngram %" PRId64 " in [1, 64]", N,
			    KV_NGRAM_MAX, hpn);
	if (vocab < 1 || vocab > INT32_MAX || eos < 0 || eos >= vocab)
		return fail(b, "vocab %" PRId64 " must be in [1, 2^31) and eos %" PRId64 " in [0, vocab)", vocab,
			    eos);
	if (!check_index(b, "rows", rows) || !check_index(b, "dp", dp) || !check_index(b, "rows*dp", rows * dp) ||
	    !check_index(b, "T*heads*dp", d->t_max * heads * dp) || !check_steps(b, N - 1) ||
	    !lanes_1d(b, 256, &ls))
		return false;
	b->p->template = "ngram_embed";
	sb_printf(&b->sig, "ngram_embed N=%" PRId64 " hpn=%" PRId64 " eos=%" PRId64 " vocab=%" PRId64
		  " rows=%" PRId64 " dp=%" PRId64 " m=", N, hpn, eos, vocab, rows, dp);
	/* the signature keys the kernel cache, so it names every table entry:
	 * the multipliers in full, the primes by a hash */
	for (int64_t s = 0; s < N; s++)
		sb_printf(&b->sig, "%s%" PRIx64, s ? "," : "", d->u.ngram.mult[s]);
	sb_printf(&b->sig, " p=%u..%08x", d->u.ngram.size[0], ngram_size_hash(d->u.ngram.size, heads));
	def_uint(b, "NGRAM", N);
	def_uint(b, "HPN", hpn);
	def_uint(b, "HEADS", heads);
	def_uint(b, "DP", dp);
	def_uint(b, "EOS", eos);
	def_uint(b, "VOCAB", vocab);
	def_int(b, "USE_TREE", 0);
	if (!ngram_tables(b, heads) || !weight_type_q(b, rows, dp))
		return false;
	per_token_grid(b, ls, heads * dp / gather_per_lane(d), ls);
	return true;
}

/* qsa_select.comp keeps the token's q and per-block scores and picks in
 * shared memory. qsa_select_blocks (BLOCKS): a token's blocks over as many
 * workgroups as its lanes need at the cache's length (grid x), a block a
 * lane, the token's last workgroup to finish picking. */
static bool build_qsa_select(kv_build *b)
{
	const kv_desc *d = b->d;
	bool blocks = d->op == IR_OP_QSA_SELECT_BLOCKS;
	int64_t h = d->u.qsa.h, D = d->u.qsa.D, C = d->u.qsa.C, c = d->u.qsa.block, top = d->u.qsa.top;
	int64_t rot = d->u.qsa.rot_dim, nb_max = C / (c > 0 ? c : 1);
	uint32_t ls;
	if (!check_index(b, "h", h) || !check_index(b, "D", D) || !check_index(b, "C", C) ||
	    !check_index(b, "block", c) || !check_index(b, "top_blocks", top) || !check_index(b, "C*D", C * D) ||
	    !check_index(b, "T*C", d->t_max * C) || !check_index(b, "T*h*D", d->t_max * h * D) ||
	    !lanes_1d(b, 256, &ls)) /* a lane a block: 8448 blocks at 32k tokens */
		return false;
	if (rot < 2 || rot > D || rot % 2)
		return fail(b, "rot_dim %" PRId64 " must be even and in [2, D = %" PRId64 "]", rot, D);
	if (blocks && d->t_max > d->u.qsa.sync_rows)
		return fail(b, "sync state of %" PRId64 " rows cannot count the tokens of a step of %" PRId64,
			    d->u.qsa.sync_rows, d->t_max);
	if (!isfinite(d->u.qsa.base) || d->u.qsa.base <= 0.0f || !isfinite(d->u.qsa.eps) || d->u.qsa.eps < 0.0f)
		return fail(b, "base %g must be positive and eps %g non-negative", (double)d->u.qsa.base,
			    (double)d->u.qsa.eps);
	/* q staged, a bit a block (blocks 0 .. nb_max), a count a lane, a
	 * byte's 256 bins (qsa_select.comp) */
	int64_t pick_words = (nb_max + 32) / 32;
	if (((uint64_t)h * D + (uint64_t)pick_words + ls + 256) * 4 > KV_SHARED_LIMIT)
		return fail(b, "%" PRId64 " heads of %" PRId64 " and %" PRId64 " blocks need more than %d bytes of"
			    " shared memory", h, D, nb_max, KV_SHARED_LIMIT);
	b->p->template = "qsa_select";
	sb_printf(&b->sig, "%s h=%" PRId64 " D=%" PRId64 " C=%" PRId64 " block=%" PRId64 " top=%" PRId64
		  " rot=%" PRId64 " base=%.9g eps=%.9g", op_name(d->op), h, D, C, c, top, rot, (double)d->u.qsa.base,
		  (double)d->u.qsa.eps);
	def_uint(b, "H", h);
	def_uint(b, "D", D);
	def_uint(b, "C", C);
	def_uint(b, "BLOCK", c);
	def_uint(b, "TOP", top);
	def_uint(b, "ROT", rot);
	def_uint(b, "PICK_WORDS", pick_words);
	def_int(b, "VEC4", D % 4 == 0);
	def_float(b, "EPS", d->u.qsa.eps);
	def_int(b, "USE_TREE", 0);
	rope_table(b, &(ref_rope_params){.rot_dim = rot, .base = d->u.qsa.base});
	per_token_grid(b, ls, 1, 1);
	if (blocks) {
		def_int(b, "BLOCKS", 1);
		set_grid(b, 0, 0, nb_max > (int64_t)ls ? (nb_max + ls - 1) / ls : 1, 1);
	}
	return true;
}

/* ---- DeepSeek V4's compressed sparse attention ------------------------------------------ */

/* compress_kv.comp: a lane per channel of a row's pooled entry; position q
 * is cache row q mod N (the caches may be rings). */
static bool build_compress_kv(kv_build *b)
{
	const kv_desc *d = b->d;
	int64_t N = d->u.compress.N, D = d->u.compress.D, m = d->u.compress.ratio, w = d->u.compress.overlap ? 2 : 1;
	uint32_t ls;
	if (!check_index(b, "N", N) || !check_index(b, "D", D) || !check_index(b, "ratio", m) ||
	    !check_index(b, "N*w*D", N * w * D) || !check_index(b, "ratio*w*D", m * w * D) ||
	    !check_index(b, "T*D", d->t_max * D) || !lanes_1d(b, 64, &ls))
		return false;
	b->p->template = "compress_kv";
	sb_printf(&b->sig, "compress_kv N=%" PRId64 " D=%" PRId64 " ratio=%" PRId64 " overlap=%d", N, D, m,
		  (int)(w - 1));
	def_uint(b, "N_ROWS", N);
	def_uint(b, "D", D);
	def_uint(b, "RATIO", m);
	def_uint(b, "OVERLAP", w - 1);
	def_int(b, "USE_TREE", 0);
	per_token_grid(b, ls, D, ls);
	return true;
}

/* The most accumulators a lane of index_topk keeps (its keys times the
 * heads of a q stage): past it they would spill out of registers. */
#define INDEX_MAX_ACC 64

/* index_topk.comp's shared memory in bytes: a stage of hg q rows, the
 * head weights, a chunk's and the running best's (score, index) pairs. */
static int64_t index_shared(int64_t h, int64_t dd, int64_t hg, int64_t ch, int64_t kp)
{
	return 4 * (hg * dd + h + 2 * ch + 2 * kp);
}

/* The defines every form of index_topk.comp takes. */
static void index_defs(kv_build *b, int64_t h, int64_t dd, int64_t kp, int64_t ch, int64_t hg)
{
	const kv_desc *d = b->d;
	def_uint(b, "H", h);
	def_uint(b, "DI", dd);
	def_uint(b, "E_ROWS", d->u.index.E);
	def_uint(b, "KSEL", d->u.index.k);
	def_uint(b, "KP", kp);
	def_uint(b, "CH", ch);
	def_uint(b, "HG", hg);
	def_uint(b, "RATIO", d->u.index.ratio);
	def_float(b, "SCALE", d->u.index.scale);
	def_int(b, "USE_TREE", 0);
}

/* KSEL rounded up to a power of two: the running best's size. */
static int64_t index_kp(int64_t k)
{
	int64_t kp = 1;
	while (kp < k)
		kp *= 2;
	return kp;
}

/* The scoring checks of index_topk and index_score: hg heads a q stage of
 * keys a lane at most INDEX_MAX_ACC accumulators, the stage in shared memory. */
static bool index_scoring_ok(kv_build *b, int64_t hg, int64_t per_lane, int64_t shared)
{
	const kv_desc *d = b->d;
	int64_t h = d->u.index.h, dd = d->u.index.d, E = d->u.index.E, m = d->u.index.ratio;
	if (!check_index(b, "h", h) || !check_index(b, "d", dd) || !check_index(b, "E", E) ||
	    !check_index(b, "ratio", m) || !check_index(b, "E*d", E * dd) || !check_index(b, "T*h*d", d->t_max * h * dd))
		return false;
	if (dd % 4)
		return fail(b, "head dim %" PRId64 " is not a multiple of 4 (keys are read as vec4s)", dd);
	if (!isfinite(d->u.index.scale))
		return fail(b, "scale is not finite");
	if (hg < 1 || hg > h || per_lane * hg > INDEX_MAX_ACC)
		return fail(b, "%" PRId64 " heads a q stage: at least 1, at most h = %" PRId64 ", and times %" PRId64
			    " keys a lane at most %d accumulators", hg, h, per_lane, INDEX_MAX_ACC);
	if (shared > KV_SHARED_LIMIT)
		return fail(b, "%" PRId64 " heads of %" PRId64 " a stage and a chunk need more than %d bytes of shared"
			    " memory", hg, dd, KV_SHARED_LIMIT);
	return true;
}

/* index_topk.comp: one workgroup per token scores the visible keys a chunk
 * at a time and merges each chunk's best into the running best. A decode
 * or verify step has a workgroup per token and nothing else, so its variant
 * (t_max <= KV_MATVEC_MAX_T) takes 512 lanes, a prompt step's 256. The
 * selecting half of the split (index_select, SELECT) is the same workgroup
 * over scores read back. */
static bool build_index_topk(kv_build *b)
{
	const kv_desc *d = b->d;
	bool select = d->op == IR_OP_INDEX_SELECT;
	int64_t h = d->u.index.h, dd = d->u.index.d, E = d->u.index.E, k = d->u.index.k, m = d->u.index.ratio;
	uint32_t ls;
	if (!check_index(b, "E", E) || !check_index(b, "k", k) || !check_index(b, "ratio", m) ||
	    !check_index(b, "T*k", d->t_max * k) || !check_index(b, "T*E", d->t_max * E) ||
	    !lanes_1d(b, d->t_max <= KV_MATVEC_MAX_T ? 512 : 256, &ls))
		return false;
	int64_t kp = index_kp(k), hg = select ? 1 : d->tiles.cols ? d->tiles.cols : (h < 16 ? h : 16);
	int64_t ch = d->tiles.bk ? d->tiles.bk : (kp > ls ? kp : ls);
	if (!is_pow2((uint64_t)ch) || ch < kp || ch < ls)
		return fail(b, "a chunk of %" PRId64 " keys must be a power of two holding k = %" PRId64
			    " (rounded up to %" PRId64 ") and one key per lane (%u)", ch, k, kp, ls);
	if (select) {
		if (index_shared(0, 0, 0, ch, kp) > KV_SHARED_LIMIT)
			return fail(b, "a chunk of %" PRId64 " keys needs more than %d bytes of shared memory", ch,
				    KV_SHARED_LIMIT);
	} else if (!index_scoring_ok(b, hg, ch / ls, index_shared(h, dd, hg, ch, kp))) {
		return false;
	}
	b->p->template = "index_topk";
	if (select)
		sb_printf(&b->sig, "index_select E=%" PRId64 " k=%" PRId64 " ratio=%" PRId64, E, k, m);
	else
		sb_printf(&b->sig, "index_topk h=%" PRId64 " d=%" PRId64 " E=%" PRId64 " k=%" PRId64 " ratio=%" PRId64
			  " scale=%.9g", h, dd, E, k, m, (double)d->u.index.scale);
	index_defs(b, h, dd, kp, ch, hg);
	if (select)
		def_int(b, "SELECT", 1);
	per_token_grid(b, ls, 1, 1);
	sb_printf(&b->tile, ",hg%" PRId64 ",ch%" PRId64, hg, ch);
	return true;
}

/* index_score (index_topk.comp with SCORE): a workgroup per (block of keys,
 * token) scores its block as index_topk scores a chunk, so the scores are
 * that kernel's, bitwise, at the same hg. Lanes: the largest power of two
 * <= 128 and <= the block (the pass's blocks are multiples of 32: 160 keys
 * take 128 lanes twice, the second time 32 of them); CH, the block rounded
 * up to a multiple of the lanes, sets each lane's keys. */
static bool build_index_score(kv_build *b)
{
	const kv_desc *d = b->d;
	int64_t h = d->u.index.h, dd = d->u.index.d, E = d->u.index.E, block = d->u.index.block;
	uint32_t ls, dflt = 128;
	while (dflt > 1 && dflt > block)
		dflt /= 2;
	if (!lanes_1d(b, dflt, &ls) || !check_index(b, "T*E", d->t_max * E) || !check_index(b, "block", block))
		return false;
	if (block < 1)
		return fail(b, "a block of %" PRId64 " keys", block);
	int64_t per_lane = (block + ls - 1) / ls, hg = d->tiles.cols ? d->tiles.cols : (h < 16 ? h : 16);
	if (!d->tiles.cols)
		while (hg > 1 && per_lane * hg > INDEX_MAX_ACC)
			hg /= 2;
	if (!index_scoring_ok(b, hg, per_lane, 4 * (hg * dd + h)))
		return false;
	b->p->template = "index_topk";
	sb_printf(&b->sig, "index_score h=%" PRId64 " d=%" PRId64 " E=%" PRId64 " ratio=%" PRId64 " scale=%.9g block=%"
		  PRId64, h, dd, E, d->u.index.ratio, (double)d->u.index.scale, block);
	index_defs(b, h, dd, 1, per_lane * ls, hg);
	def_int(b, "SCORE", 1);
	def_uint(b, "BLOCK", block);
	per_token_grid(b, ls, (E + block - 1) / block, 1);
	sb_printf(&b->tile, ",hg%" PRId64, hg);
	return true;
}

/* sink_attention.comp's shared memory in bytes: the group's q rows, a
 * chunk of keys (rows padded by p vec4s), the partial dots, the chunk's
 * weights, each head's max, denominator and rescale, and with ids (k > 0)
 * their compacted rows and a scan over the lanes. */
static int64_t sink_shared(int64_t D, int64_t hg, int64_t kc, int64_t ls, int64_t k)
{
	int64_t p = ls / (hg * kc);
	return 4 * (hg * D + kc * (D + 4 * p) + ls + hg * kc + 3 * hg + (k ? k + ls : 0));
}

/* The heads per workgroup (tile cols, else the largest power of two <= 4
 * dividing h: more workgroups at decode, where one token has h / hg) and
 * the keys per chunk (tile bk, else the largest power of two <= 16 that
 * fits: fewer barriers a key). */
static bool sink_tiles(kv_build *b, uint32_t ls, int64_t *hg, int64_t *kc)
{
	const kv_desc *d = b->d;
	int64_t h = d->u.sink.h, D = d->u.sink.D, k = d->u.sink.k;
	*hg = d->tiles.cols;
	if (!*hg)
		for (*hg = 4; h % *hg; *hg /= 2)
			;
	*kc = d->tiles.bk;
	if (!*kc)
		for (*kc = 16; *kc > 1 && (*hg * *kc > ls || sink_shared(D, *hg, *kc, ls, k) > KV_SHARED_LIMIT); *kc /= 2)
			;
	if (!is_pow2((uint64_t)*hg) || h % *hg || !is_pow2((uint64_t)*kc) || *hg * *kc > ls)
		return fail(b, "%" PRId64 " heads a workgroup and %" PRId64 " keys a chunk: powers of two, the heads"
			    " dividing h = %" PRId64 ", their product at most the %u lanes", *hg, *kc, h, ls);
	if (sink_shared(D, *hg, *kc, ls, k) > KV_SHARED_LIMIT)
		return fail(b, "%" PRId64 " heads of %" PRId64 " and %" PRId64 " keys a chunk need more than %d bytes of"
			    " shared memory", *hg, D, *kc, KV_SHARED_LIMIT);
	return true;
}

/* sink_attention.comp: a workgroup per (token, group of heads), the row's
 * keys staged a chunk at a time for all the group's heads; position j is
 * cache row j mod N (the cache may be a ring). sink_attention_partial
 * (PARTIAL) adds grid z, a workgroup per block of the row's keys. */
static bool build_sink_attention(kv_build *b)
{
	const kv_desc *d = b->d;
	int64_t h = d->u.sink.h, D = d->u.sink.D, N = d->u.sink.N, E = d->u.sink.E, k = d->u.sink.k;
	int64_t block = d->op == IR_OP_SINK_ATTENTION_PARTIAL ? d->u.sink.block : 0;
	int64_t blocks = block ? d->u.sink.blocks : 1;
	int64_t hg, kc;
	uint32_t ls;
	if (d->op == IR_OP_SINK_ATTENTION_PARTIAL && (block < 1 || blocks < 1))
		return fail(b, "a split needs at least one block of at least one key, not %" PRId64 " of %" PRId64,
			    blocks, block);
	if (!check_index(b, "T*h*blocks*(D+2)", d->t_max * h * blocks * (D + 2)) ||
	    !check_index(b, "h", h) || !check_index(b, "D", D) || !check_index(b, "N*D", N * D) ||
	    !check_index(b, "T*h*D", d->t_max * h * D) || !check_index(b, "window", d->u.sink.window) ||
	    (E && (!check_index(b, "E*D", E * D) || !check_index(b, "ratio", d->u.sink.ratio))) ||
	    (k && (!check_index(b, "T*k", d->t_max * k) || !E)) || !lanes_1d(b, 256, &ls) ||
	    !sink_tiles(b, ls, &hg, &kc))
		return false;
	if (D % 4)
		return fail(b, "head dim %" PRId64 " is not a multiple of 4 (keys are staged as vec4s)", D);
	if (!isfinite(d->u.sink.scale))
		return fail(b, "scale is not finite");
	b->p->template = "sink_attention";
	sb_printf(&b->sig, "%s h=%" PRId64 " D=%" PRId64 " N=%" PRId64 " window=%" PRId64 " scale=%.9g",
		  block ? "sink_attention_partial" : "sink_attention", h, D, N, d->u.sink.window, (double)d->u.sink.scale);
	def_uint(b, "N_ROWS", N);
	def_uint(b, "H", h);
	def_uint(b, "D", D);
	def_uint(b, "HG", hg);
	def_uint(b, "KC", kc);
	def_uint(b, "LPP", ls / (hg * kc));
	def_uint(b, "WINDOW", d->u.sink.window);
	def_float(b, "SCALE", d->u.sink.scale);
	def_int(b, "USE_TREE", 0);
	b->absent_in = E ? (k ? 0 : 1) : 2;
	if (E) {
		sb_printf(&b->sig, " entries=%" PRId64 " ratio=%" PRId64, E, d->u.sink.ratio);
		def_int(b, "ENTRIES", 1);
		def_uint(b, "E_ROWS", E);
		def_uint(b, "RATIO", d->u.sink.ratio);
	}
	if (k) {
		sb_printf(&b->sig, " ids=%" PRId64, k);
		def_int(b, "IDS", 1);
		def_uint(b, "KSEL", k);
	}
	if (block) {
		sb_printf(&b->sig, " block=%" PRId64, block);
		def_int(b, "PARTIAL", 1);
		def_uint(b, "BLOCK", block);
		def_uint(b, "NBLK", blocks);
	}
	per_token_grid(b, ls, h / hg, 1);
	if (block)
		set_grid(b, 2, 0, blocks, 1);
	sb_printf(&b->tile, ",hg%" PRId64 ",kc%" PRId64, hg, kc);
	return true;
}

/* ---- DeepSeek V4 ops ---------------------------------------------------------------------- */

/* The most streams: hc_weights keeps a token's n x n matrix, hc_expand its
 * n inputs, in one lane's registers. */
#define KV_HC_MAX_N 8

static bool hc_streams_ok(kv_build *b)
{
	int64_t n = b->d->u.hc.n;
	if (!check_index(b, "n", n))
		return false;
	if (n > KV_HC_MAX_N)
		return fail(b, "%" PRId64 " streams, at most %d (a lane holds them in registers)", n, KV_HC_MAX_N);
	return true;
}

/* hc_weights: one lane per token computes its (2+n)*n weights (or the n of
 * pre) in f32, the Sinkhorn iterations on its n x n matrix in registers. */
static bool build_hc_weights(kv_build *b)
{
	const kv_desc *d = b->d;
	int64_t n = d->u.hc.n, iters = d->u.hc.iters;
	float eps = d->u.hc.eps;
	bool full = d->u.hc.full;
	uint32_t ls;
	if (!hc_streams_ok(b) || !check_index(b, "T*(2+n)*n", d->t_max * (2 + n) * n) || !lanes_1d(b, 64, &ls))
		return false;
	if (!isfinite(eps) || eps < 0.0f)
		return fail(b, "eps %g must be finite and non-negative", (double)eps);
	if (full && !check_index(b, "iters", iters))
		return false;
	b->p->template = "hc_weights";
	sb_printf(&b->sig, "hc_weights n=%" PRId64 " eps=%.9g", n, (double)eps);
	def_uint(b, "NS", n);
	def_float(b, "EPS", eps);
	def_int(b, "FULL", full ? 1 : 0);
	if (full) { /* the HyperHead's form (pre alone) has no Sinkhorn */
		sb_printf(&b->sig, " iters=%" PRId64, iters);
		def_uint(b, "ITERS", iters);
	} else {
		sb_printf(&b->sig, " pre");
	}
	def_int(b, "USE_TREE", 0);
	b->n_out = full ? 3 : 1;
	set_local(b, ls, 1);
	set_grid(b, 0, 1, 0, ls);
	sb_printf(&b->tile, "ls%u", ls);
	return true;
}

/* hc_collapse, (EXPAND) hc_expand and (INJECT) hc_inject: lanes over H in
 * vec4s (VEC4, H % 4 == 0) or floats, one token per grid row; a lane reads
 * its n stream elements once. */
static bool build_hc_streams(kv_build *b)
{
	bool expand = b->d->op == IR_OP_HC_EXPAND, inject = b->d->op == IR_OP_HC_INJECT;
	int64_t n = b->d->u.hc.n, H = b->d->u.hc.H;
	bool vec4 = H % 4 == 0;
	uint32_t ls;
	if (!hc_streams_ok(b) || !check_index(b, "H", H) || !check_index(b, "T*n*H", b->d->t_max * n * H) ||
	    !lanes_1d(b, 64, &ls))
		return false;
	b->p->template = "hc_streams";
	sb_printf(&b->sig, "%s n=%" PRId64 " H=%" PRId64, op_name(b->d->op), n, H);
	def_uint(b, "NS", n);
	def_uint(b, "H", H);
	def_int(b, "VEC4", vec4 ? 1 : 0);
	def_int(b, "EXPAND", expand ? 1 : 0);
	def_int(b, "INJECT", inject ? 1 : 0);
	def_int(b, "USE_TREE", 0);
	per_token_grid(b, ls, vec4 ? H / 4 : H, ls);
	if (vec4)
		sb_printf(&b->tile, ",v4");
	return true;
}

/* ---- assembly ------------------------------------------------------------------------------ */

/* One row per op (kv_ops, after the variant spaces): how its variants are
 * planned. dims checks the descriptor and decides the key, the template,
 * the constants, the tiles and the grid; the driver then binds in[] (the
 * op's inputs, docs/ops.md order; optional last ones only where the
 * descriptor has them, kv_build.absent_in), the fused ops' operands and
 * out[] (the first kv_build.n_out where dims sets it). out[2] is an
 * IR_OPF_STEPS op's optional result, its states after each token: bound
 * (and STEPS defined) only with the descriptor's steps. */
typedef struct {
	ir_op op;
	bool (*dims)(kv_build *b);
	const char *in[7], *out[KV_MAX_SPLIT];
	unsigned fuse;
	bool elementwise; /* a, b and y are bound by position (emit_glsl.c declares them) */
	int (*space)(const kv_desc *d, kv_tiles *out, int max);
} kv_op_row;

static const kv_op_row *row_of(ir_op op);

static bool bind_operands(kv_build *b, const kv_op_row *r)
{
	kv_plan *p = b->p;
	if (r->elementwise) {
		p->elementwise = true;
		p->a_binding = (int)bind(b, NULL);
		p->b_binding = elem_is_binary(b->d->op) ? (int)bind(b, NULL) : -1;
	}
	int n_in = 0;
	while (n_in < 7 && r->in[n_in])
		n_in++;
	for (int i = 0; i < n_in - b->absent_in; i++)
		bind(b, r->in[i]);
	if (!bind_fused(b, r->fuse))
		return false;
	if (r->elementwise)
		p->y_binding = (int)bind(b, NULL);
	int n_out = b->n_out ? b->n_out : b->d->steps ? 3 : 2;
	for (int i = 0; i < n_out && r->out[i]; i++)
		bind(b, r->out[i]);
	if (b->d->steps) {
		def_int(b, "STEPS", 1);
		sb_printf(&b->sig, " steps");
	}
	return true;
}

static bool check_grid(kv_build *b)
{
	for (int axis = 0; axis < 3; axis++) {
		kv_groups g = b->k->groups[axis];
		if (g.d == 0) { /* unused axis: one group */
			b->k->groups[axis] = (kv_groups){0, 1, 1};
			continue;
		}
		int64_t n = (g.a * b->d->t_max + g.b + g.d - 1) / g.d;
		if (n > KV_MAX_GROUPS)
			return fail(b, "%" PRId64 " workgroups along axis %d at T=%" PRId64 ", at most %d",
				    n, axis, b->d->t_max, KV_MAX_GROUPS);
	}
	return true;
}

/* The key and tile of a planned variant, then its GLSL and, where its
 * template has a HIP twin, its HIP-dialect source. */
static bool finish(kv_build *b, kv_plan *plan)
{
	kv_kernel *out = b->k;
	def_uint(b, "B_STEP", b->next_binding);
	sb_printf(&b->sig, " tmax=%" PRId64, b->d->t_max);
	out->key = strdup(b->sig.s);
	out->tile = sb_take(&b->tile);
	if (!out->key)
		abort();
	if (out->tile[0])
		sb_printf(&b->sig, " tile=%s", out->tile);
	out->signature = sb_take(&b->sig);
	out->push_size = 4;
	out->n_bindings = b->next_binding + 1; /* + the step record, B_STEP */
	out->source = kv_emit_glsl(b->d, plan, out->signature, &out->template_name, b->err, b->errlen);
	char no_twin[256];
	out->hip = kv_emit_hip(b->d, plan, out->signature, no_twin, sizeof no_twin);
	return out->source != NULL;
}

bool kernel_variant_build(const kv_desc *d, kv_kernel *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	kv_plan plan = {0};
	kv_build b = {.d = d, .k = out, .p = &plan, .err = err, .errlen = errlen};
	const kv_op_row *r = row_of(d->op);
	bool ok = true;
	if (d->t_max < 1)
		ok = fail(&b, "t_max %" PRId64 " must be at least 1", d->t_max);
	else if (!r)
		ok = fail(&b, "no kernel template for this op");
	else if (d->steps && !r->out[2])
		ok = fail(&b, "no states after each token (steps) for this op");
	ok = ok && r->dims(&b) && bind_operands(&b, r) && check_grid(&b) && finish(&b, &plan);
	kv_plan_free(&plan);
	free(b.sig.s);
	free(b.tile.s);
	if (!ok)
		kv_kernel_free(out);
	return ok;
}

void kv_kernel_free(kv_kernel *k)
{
	free(k->source);
	free(k->hip);
	free(k->signature);
	free(k->key);
	free(k->tile);
	memset(k, 0, sizeof *k);
}

uint32_t kv_groups_eval(const kv_kernel *k, int axis, int64_t T)
{
	kv_groups g = k->groups[axis];
	return (uint32_t)((g.a * T + g.b + g.d - 1) / g.d);
}

/* ---- variant spaces (kv_variant_space) ------------------------------------------------ */

/* The heuristic's tiles h with other sizes. */
static kv_tiles mv_tiles(kv_tiles h, uint32_t local, uint32_t split, uint32_t cols, uint32_t unroll)
{
	h.local = local;
	h.split = split;
	h.cols = cols;
	h.unroll = unroll;
	return h;
}

static bool same_tiles(kv_tiles a, kv_tiles b)
{
	return !memcmp(&a, &b, sizeof a);
}

/* The matvec space from its candidates in order: those with a split of at
 * least min_split, widened to hold their split, legal and not seen before;
 * the heuristic's tiles h when none is (a matvec of any shape has them). */
static int matvec_keep(const kv_desc *d, const kv_tiles *cand, size_t n_cand, uint32_t min_split, kv_tiles h,
		       kv_tiles *out, int max)
{
	int n = 0;
	for (size_t i = 0; i < n_cand && n < max; i++) {
		kv_tiles t = cand[i];
		if (t.split < min_split)
			continue;
		if (t.split > t.local)
			t.local = t.split;
		bool dup = false;
		for (int j = 0; j < n && !dup; j++)
			dup = same_tiles(out[j], t);
		if (!dup && !matvec_illegal(d, t))
			out[n++] = t;
	}
	if (n == 0) {
		out[0] = h;
		n = 1;
	}
	return n;
}

/* Decode matvec: the heuristic; its columns fixed at every T; narrower K splits with as many more
 * loads in flight per lane (the lanes of one subgroup cover more columns and
 * share more of x's loads: on the H200 they won at T = 1 on narrow shapes,
 * 4096 x 1024 7.3 -> 6.4 us, bench/results-h200-matvec.txt run 3); its
 * neighbours one step along split and unroll; the shared-memory-tree form
 * that needs no subgroup operations (the one every device runs); then, past
 * the compiler's first 8 candidates, two columns per group at every T
 * (faster than growing ones at T = 8 on the H200, 26.7 against 31.9 us at
 * 4096 x 4096, and up to 9% slower at T = 1, run 6) and what the
 * sweeps found slower everywhere (fewer loads in flight, wider workgroups). */
static int matvec_space(const kv_desc *d, kv_tiles *out, int max)
{
	kv_tiles h = matvec_heuristic(d);
	kv_tiles fixed = h, tree = {.local = 128, .split = 32, .cols = h.cols, .unroll = h.unroll, .tree = 1, .grow = 1};
	tree.grow = matvec_may_grow(d, tree);
	fixed.grow = !h.grow;
	kv_tiles cand[] = {
		h,
		fixed,
		mv_tiles(h, h.local, h.split / 2, h.cols, h.unroll * 2),
		mv_tiles(h, h.local, h.split / 4, h.cols, h.unroll * 4),
		mv_tiles(h, h.local, h.split * 2, h.cols, h.unroll),
		mv_tiles(h, h.local, h.split / 2, h.cols, h.unroll),
		mv_tiles(h, h.local, h.split, h.cols, h.unroll * 2),
		tree,
		mv_tiles(fixed, h.local, h.split, h.cols * 2, h.unroll),
		mv_tiles(h, h.local, h.split, h.cols, h.unroll / 2 ? h.unroll / 2 : 1),
		mv_tiles(h, h.local * 2, h.split, h.cols, h.unroll),
	};
	return matvec_keep(d, cand, sizeof cand / sizeof *cand, 1, h, out, max);
}

/* Quantized weights' decode matvec: the heuristic (one word per load); its
 * columns fixed; the 16-byte form (a q8_0 half block or a q4_k sub-block per
 * load, the brief's first design: fewer loads, but 4 times the x lines per
 * subgroup load) and the 8-byte one; neighbours along split, unroll and
 * cols; the shared-memory tree; with int8 activations, their portable form
 * (integer operations, no device feature). */
static int matvec_space_q(const kv_desc *d, kv_tiles *out, int max)
{
	kv_tiles h = matvec_heuristic_q(d);
	kv_tiles fixed = h, tree = h, w4 = h, w2 = h;
	fixed.grow = !h.grow;
	tree.local = 128;
	tree.split = 32;
	tree.tree = 1;
	/* int8 activations' portable variant: a tree over 64 lanes, so that
	 * its slots fit beside the staged codes */
	kv_tiles emul = mv_tiles(tree, 64, 16, h.cols, 1);
	emul.grow = 0;
	emul.dot_emul = d->u.matmul.xq != 0;
	w4.qw = 4;
	w4.unroll = 1;
	w2.qw = 2;
	w2.unroll = h.unroll / 2 ? h.unroll / 2 : 1;
	kv_tiles cand[] = {
		h,
		fixed,
		w4,
		w2,
		mv_tiles(h, h.local, h.split / 2, h.cols, h.unroll * 2),
		mv_tiles(h, h.local, h.split * 2, h.cols, h.unroll),
		mv_tiles(h, h.local, h.split, h.cols * 2, h.unroll),
		tree,
		mv_tiles(h, h.local, h.split, h.cols / 2 ? h.cols / 2 : 1, h.unroll),
		mv_tiles(fixed, h.local, h.split, h.cols, h.unroll / 2 ? h.unroll / 2 : 1),
		mv_tiles(w4, h.local, h.split / 4, h.cols, 1),
		emul, /* int8 activations alone: the variant every device runs */
	};
	size_t n_cand = sizeof cand / sizeof *cand - (d->u.matmul.xq ? 0 : 1);
	return matvec_keep(d, cand, n_cand, 4, h, out, max);
}

static kv_tiles cm_tiles(uint32_t bm, uint32_t bn, uint32_t wm, uint32_t wn)
{
	return (kv_tiles){.coopmat = 1, .bm = bm, .bn = bn, .bk = 32, .tm = wm, .tn = wn};
}

/* Prefill matmul. f16 weights: the cooperative-matrix kernel first, for
 * devices that have it, in two tile sizes (128x128 in 8 subgroups of 64x32,
 * 64x64 in 4 of 32x32), the larger first when its grid at t_max covers 3/4
 * of an H200's 132 SMs: on a full device the 64x64 tile ran at about 70% of
 * the 128x128 tile's rate (bench/matmul_bench, Qwen3-8B at T = 512: 91 vs
 * 131 TFLOP/s with 128 workgroups of 128x128), while with 32 of them
 * (N = 1024) 64x64 was twice as fast; and only when a step has 128 rows or
 * more: at t_max = 64 half of a 128-row tile is empty, and on an H100 the
 * 64x64 tile was 1.26x faster for the 24576-column gate/up pair and 1.29x
 * for the 151936-column head (halo tune, bench/results-h100-matvec.txt).
 * Then the tiled kernel's defaults,
 * which need nothing. f32 weights and grouped matmuls (matmul_coopmat.comp
 * reads x without groups): the tiled kernel only. */
static int matmul_space(const kv_desc *d, kv_tiles *out, int max)
{
	int n = 0;
	if ((d->wtype == HALO_F16 || q_per_word(d)) && mm_groups(d) == 1) {
		int64_t big = ((d->u.matmul.N + 127) / 128) * ((mm_rows_max(d) + 127) / 128);
		kv_tiles a = cm_tiles(128, 128, 64, 32), b = cm_tiles(64, 64, 32, 32);
		bool large = big >= 99 && mm_rows_max(d) >= 128;
		kv_tiles cand[2] = {large ? a : b, large ? b : a};
		for (int i = 0; i < 2 && n + 1 < max; i++)
			out[n++] = cand[i];
	}
	memset(&out[n], 0, sizeof *out);
	return n + 1;
}

/* Row reductions and the expert kernels: the workgroup width, the default
 * first. Wider rows want more lanes (a 10240-wide norm group has 40 elements
 * per lane at 256) but every lane pays the fixed tree's barriers. */
static int lanes_space(const kv_desc *d, kv_tiles *out, int max)
{
	static const uint32_t lanes[] = {0, 32, 64, 128, 256, 512};
	char *sig[sizeof lanes / sizeof *lanes];
	kv_desc v = *d;
	int n = 0;
	char err[256];
	for (size_t i = 0; i < sizeof lanes / sizeof *lanes && n < max; i++) {
		kv_kernel k;
		v.tiles = (kv_tiles){.local = lanes[i]};
		if (!kernel_variant_build(&v, &k, err, sizeof err))
			continue;
		bool dup = false;
		for (int j = 0; j < n && !dup; j++)
			dup = !strcmp(sig[j], k.signature);
		if (dup) {
			kv_kernel_free(&k);
			continue;
		}
		sig[n] = k.signature; /* kept; the rest of k goes */
		k.signature = NULL;
		kv_kernel_free(&k);
		out[n++] = v.tiles;
	}
	for (int j = 0; j < n; j++)
		free(sig[j]);
	if (n == 0) { /* an illegal descriptor: its build reports why */
		memset(out, 0, sizeof *out);
		n = 1;
	}
	return n;
}

/* rope: with the rms_norm prologue, the reduction's widths as rms_norm's
 * (lanes_space); without, one kernel (a lane per element: the width
 * changes nothing the tuner could find). */
static int rope_space(const kv_desc *d, kv_tiles *out, int max)
{
	if (d->pro.on)
		return lanes_space(d, out, max);
	memset(out, 0, sizeof *out);
	return 1;
}

/* topk and moe_route: the shuffle combine first, the tree after it for
 * devices without subgroup shuffles. */
static int topk_space(const kv_desc *d, kv_tiles *out, int max)
{
	(void)d;
	int n = 0;
	out[n++] = (kv_tiles){0};
	if (n < max)
		out[n++] = (kv_tiles){.tree = 1};
	return n;
}

/* Prefill and decode share the matmul op: the most rows of a dispatch pick the kernel family. */
static int matmul_family_space(const kv_desc *d, kv_tiles *out, int max)
{
	if (mm_rows_max(d) > KV_MATVEC_MAX_T)
		return matmul_space(d, out, max);
	return q_per_word(d) ? matvec_space_q(d, out, max) : matvec_space(d, out, max);
}

/* ---- the op table ---------------------------------------------------------------------------- */

#define EPI KV_FUSE_EPILOGUE
#define PRO KV_FUSE_PROLOGUE
#define POS KV_FUSE_AT_POS
#define ELEMENTWISE(id) {IR_OP_##id, build_elementwise, {NULL}, {NULL}, EPI, true, NULL}

static const kv_op_row kv_ops[] = {
	{IR_OP_EMBED, build_embed, {"B_W", "B_IDS"}, {"B_Y"}, 0, false, NULL},
	{IR_OP_MATMUL, build_matmul, {"B_X", "B_W"}, {"B_Y", "B_Y1", "B_Y2", "B_Y3"}, EPI | PRO | POS, false,
	 matmul_family_space},
	{IR_OP_RMS_NORM, build_rms_norm, {"B_X", "B_NW"}, {"B_Y"}, EPI, false, lanes_space},
	{IR_OP_L2_NORM, build_row_norm, {"B_X"}, {"B_Y"}, EPI, false, lanes_space},
	{IR_OP_GATED_RMS_NORM, build_row_norm, {"B_X", "B_Z", "B_NW"}, {"B_Y"}, EPI, false, lanes_space},
	{IR_OP_ROPE, build_rope, {"B_X"}, {"B_Y"}, EPI | PRO | POS, false, rope_space},
	{IR_OP_ATTENTION, build_attention, {"B_Q", "B_K", "B_V"}, {"B_Y"}, EPI, false, NULL},
	{IR_OP_MASKED_ATTENTION, build_attention, {"B_Q", "B_K", "B_V", "B_M"}, {"B_Y"}, 0, false, NULL},
	{IR_OP_ATTENTION_PARTIAL, build_attention, {"B_Q", "B_K", "B_V"}, {"B_Y"}, 0, false, NULL},
	{IR_OP_ATTENTION_COMBINE, build_attention_combine, {"B_P"}, {"B_Y"}, EPI, false, NULL},
	{IR_OP_ATTENTION_BLOCKS, build_attention, {"B_Q", "B_K", "B_V", "B_SY"}, {"B_Y", "B_P"}, EPI, false, NULL},
	{IR_OP_ATTENTION_ROPE, build_attention, {"B_Q", "B_K", "B_V", "B_SY", "B_KN", "B_QW", "B_KW"},
	 {"B_Y", "B_P", "B_KO"}, EPI | POS, false, NULL},
	{IR_OP_MASKED_ATTENTION_BLOCKS, build_attention, {"B_Q", "B_K", "B_V", "B_SY", "B_M"}, {"B_Y", "B_P"}, 0, false,
	 NULL},
	{IR_OP_SOFTMAX, build_softmax, {"B_X"}, {"B_Y"}, EPI, false, lanes_space},
	{IR_OP_ARGMAX, build_argmax, {"B_X"}, {"B_Y"}, 0, false, lanes_space},
	{IR_OP_SLICE, build_copy, {"B_SRC"}, {"B_DST"}, 0, false, NULL},
	{IR_OP_REPEAT_HEADS, build_copy, {"B_SRC"}, {"B_DST"}, 0, false, NULL},
	{IR_OP_STATE_WRITE, build_copy, {"B_SRC"}, {"B_DST"}, 0, false, NULL},
	{IR_OP_ROWS_AT_POS, build_copy, {"B_SRC"}, {"B_DST"}, 0, false, NULL},
	{IR_OP_CONCAT, build_concat, {"B_A", "B_B"}, {"B_Y"}, 0, false, NULL},
	{IR_OP_CONV1D_CAUSAL, build_conv1d, {"B_X", "B_S", "B_W"}, {"B_Y", "B_NS", "B_ST"}, 0, false, NULL},
	{IR_OP_CONV1D_DILATED, build_conv1d_dilated, {"B_X", "B_S", "B_W"}, {"B_Y", "B_NS", "B_ST"}, 0, false, NULL},
	{IR_OP_GATED_DELTA_RULE, build_gdr, {"B_Q", "B_K", "B_V", "B_G", "B_BETA", "B_S"}, {"B_O", "B_SO", "B_ST"}, 0,
	 false, NULL},
	{IR_OP_TOPK, build_topk, {"B_X"}, {"B_IDS", "B_VALS"}, 0, false, topk_space},
	{IR_OP_MOE_ROUTE, build_topk, {"B_X", "B_BIAS"}, {"B_IDS", "B_VALS"}, 0, false, topk_space},
	{IR_OP_MOE_ROUTE_HASH, build_topk, {"B_X", "B_W", "B_TOK"}, {"B_IDS", "B_VALS"}, 0, false, NULL},
	{IR_OP_MOE_GATE_UP, build_moe_half, {"B_X", "B_IDS", "B_A", "B_B"}, {"B_Y"}, 0, false, lanes_space},
	{IR_OP_MOE_DOWN, build_moe_half, {"B_X", "B_IDS", "B_WR", "B_A"}, {"B_Y"}, 0, false, lanes_space},
	{IR_OP_REDUCE_MEAN, build_reduce_mean, {"B_X"}, {"B_Y"}, 0, false, NULL},
	{IR_OP_SIGNED_SQRT, build_signed_sqrt, {"B_X"}, {"B_Y"}, 0, false, NULL},
	{IR_OP_NGRAM_EMBED, build_ngram_embed, {"B_W", "B_IDS", "B_H"}, {"B_Y", "B_NH", "B_ST"}, 0, false, NULL},
	{IR_OP_QSA_SELECT, build_qsa_select, {"B_Q", "B_K", "B_NW"}, {"B_Y"}, 0, false, lanes_space},
	{IR_OP_QSA_SELECT_BLOCKS, build_qsa_select, {"B_Q", "B_K", "B_NW", "B_SY"}, {"B_Y"}, 0, false, lanes_space},
	{IR_OP_COMPRESS_KV, build_compress_kv, {"B_C", "B_Z", "B_BIAS"}, {"B_Y"}, 0, false, NULL},
	{IR_OP_INDEX_TOPK, build_index_topk, {"B_Q", "B_HW", "B_K"}, {"B_IDS"}, 0, false, NULL},
	{IR_OP_SINK_ATTENTION, build_sink_attention, {"B_Q", "B_KV", "B_SINK", "B_ENT", "B_IDS"}, {"B_Y"}, 0, false,
	 NULL},
	{IR_OP_SINK_ATTENTION_PARTIAL, build_sink_attention, {"B_Q", "B_KV", "B_SINK", "B_ENT", "B_IDS"}, {"B_Y"}, 0,
	 false, NULL},
	{IR_OP_INDEX_SCORE, build_index_score, {"B_Q", "B_HW", "B_K"}, {"B_SC"}, 0, false, NULL},
	{IR_OP_INDEX_SELECT, build_index_topk, {"B_SC"}, {"B_IDS"}, 0, false, NULL},
	{IR_OP_HC_WEIGHTS, build_hc_weights, {"B_MIX", "B_BASE", "B_SCALE"}, {"B_PRE", "B_POST", "B_COMB"}, 0, false,
	 NULL},
	{IR_OP_HC_COLLAPSE, build_hc_streams, {"B_X", "B_PRE"}, {"B_Y"}, 0, false, NULL},
	{IR_OP_HC_EXPAND, build_hc_streams, {"B_X", "B_Y", "B_POST", "B_COMB"}, {"B_OUT"}, 0, false, NULL},
	{IR_OP_HC_INJECT, build_hc_streams, {"B_X", "B_Y", "B_POST"}, {"B_OUT"}, 0, false, NULL},
	{IR_OP_HC_INJECT_NORM, build_rms_norm, {"B_X", "B_IY", "B_POST", "B_NW"}, {"B_SUM", "B_Y"}, 0, false,
	 lanes_space},
#define ELEMENTWISE_OTHER(id)
#define ELEMENTWISE_UNARY(id) ELEMENTWISE(id),
#define ELEMENTWISE_SCALED(id) ELEMENTWISE(id),
#define ELEMENTWISE_BINARY(id) ELEMENTWISE(id),
#define ELEMENTWISE_GATE(id) ELEMENTWISE(id),
#define IR_OP(id, name, cls, expr) ELEMENTWISE_##cls(id)
#include "kernels/ops.def"
#undef IR_OP
};

#undef EPI
#undef PRO
#undef POS
#undef ELEMENTWISE
#undef ELEMENTWISE_OTHER
#undef ELEMENTWISE_UNARY
#undef ELEMENTWISE_SCALED
#undef ELEMENTWISE_BINARY
#undef ELEMENTWISE_GATE

static const kv_op_row *row_of(ir_op op)
{
	for (size_t i = 0; i < sizeof kv_ops / sizeof *kv_ops; i++)
		if (kv_ops[i].op == op)
			return &kv_ops[i];
	return NULL;
}

int kv_variant_space(const kv_desc *d, kv_tiles *out, int max)
{
	if (max < 1)
		return 0;
	const kv_op_row *r = row_of(d->op);
	if (r && r->space)
		return r->space(d, out, max);
	memset(out, 0, sizeof *out);
	return 1;
}
