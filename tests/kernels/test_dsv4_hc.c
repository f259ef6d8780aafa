/* DeepSeek V4's mHC kernels against ref_hc.c: hc_weights (hc_weights.comp,
 * both forms), hc_collapse and hc_expand (hc_streams.comp) at V4-Flash's
 * n = 4 streams and H = 7168, at odd n and H (the scalar path), at decode T
 * and past one workgroup of tokens; and batch invariance (rows of a T = m
 * dispatch equal m one-row dispatches, bitwise). The same for Qwen3.8
 * Flash's hc_inject (hc_streams.comp's INJECT) at its n = 4, H = 2560, bit
 * for bit: one f32 product and one f32 sum, both correctly rounded.
 *
 * Tolerances, as max |got - want| / max(|want|, floor):
 *  - hc_collapse, floor 1: n <= 5 products p_j x_j (|x| <= 1, p <= 1.1)
 *    summed in order in f32 against the reference's f64 sum rounded once:
 *    at most n * 2^-24 * sum |p_j x_j| <= 5 * 6e-8 * 5.5 = 1.6e-6; 2e-6.
 *  - hc_expand, floor 1: post * y (post <= 2) plus n products with comb <=
 *    1: (n + 1) * 2^-24 * (2 + n) = 2.5e-6 at n = 5; 3e-6.
 *  - hc_weights' pre and post, floor 1e-30 (they are positive): one sigmoid
 *    each, 1 / (1 + e^-z) with |z| <= 4; Vulkan's exp is within 3 + 2|z| ulp
 *    and its division 2.5 ulp, so about 14 ulp (8e-7) at worst; 1e-6.
 *  - comb, floor 1e-30 (entries are > 0): the softmax (exp and division as
 *    above) then 2 * iters - 1 normalisations, each adding per entry the f32
 *    sum of n terms (n - 1 roundings against one) and a division. Errors
 *    that scale a whole row or column leave Sinkhorn's limit unchanged and
 *    decay; the per-entry roundings do not, about 3 ulp each, so 39 of them
 *    add up to 7e-6 if they never cancel (the observed worst is 5.8e-7);
 *    1e-5.
 *  - hc_inject_norm (rms_norm.comp's INJECT): its streams bit for bit
 *    hc_inject's (the reference's), its norm bit for bit the rms_norm
 *    kernel's over those streams (the two dispatches it replaces), and
 *    against ref_rms_norm within 1e-4, floor 1: rms_norm's own bound (the
 *    f32 tree of H squares against the reference's order; test_rope.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

static float *randoms(size_t n, float lo, float hi, uint32_t *seed)
{
	float *v = alloc_floats(n);
	fill_random(v, n, 1.0f, seed);
	for (size_t i = 0; i < n; i++)
		v[i] = lo + (v[i] + 1.0f) * 0.5f * (hi - lo);
	return v;
}

/* ---- hc_weights ---- */

typedef struct {
	int64_t n, iters;
	bool full;
} hw_case;

static bool hw_build(harness *h, const hw_case *c, int64_t t_max, hkernel *k)
{
	kv_desc d = {.op = IR_OP_HC_WEIGHTS, .t_max = t_max};
	d.u.hc.n = c->n;
	d.u.hc.full = c->full;
	d.u.hc.iters = c->iters;
	d.u.hc.eps = 1e-6f;
	return hk_build(h, &d, k);
}

static int64_t hw_width(const hw_case *c)
{
	return c->full ? (2 + c->n) * c->n : c->n;
}

/* One dispatch of T tokens from token t0 of mix; results at their rows t0.. */
static bool hw_run(harness *h, hkernel *k, const hw_case *c, const float *mix, const float *base, const float *scale,
		   int64_t t0, int64_t T, float *pre, float *post, float *comb)
{
	int64_t n = c->n, M = hw_width(c);
	hop ops[6] = {{(void *)(mix + t0 * M), (size_t)(T * M) * 4, false},
		      {(void *)base, (size_t)M * 4, false},
		      {(void *)scale, (c->full ? 3 : 1) * 4, false},
		      {pre + t0 * n, (size_t)(T * n) * 4, true},
		      {post + t0 * n, (size_t)(T * n) * 4, true},
		      {comb + t0 * n * n, (size_t)(T * n * n) * 4, true}};
	return hk_run(h, k, ops, c->full ? 6 : 4, (uint32_t)T, 0);
}

static bool hw_case_run(harness *h, hw_case c, int64_t T, uint32_t *seed)
{
	hkernel k;
	if (!hw_build(h, &c, T, &k))
		return false;
	int64_t n = c.n, M = hw_width(&c);
	float *mix = randoms((size_t)(T * M), -1.0f, 1.0f, seed), *base = randoms((size_t)M, -1.0f, 1.0f, seed);
	float *scale = randoms(3, 0.5f, 2.0f, seed);
	float *pre = alloc_floats((size_t)(T * n)), *post = alloc_floats((size_t)(T * n));
	float *comb = alloc_floats((size_t)(T * n * n)), *wpre = alloc_floats((size_t)(T * n));
	float *wpost = alloc_floats((size_t)(T * n)), *wcomb = alloc_floats((size_t)(T * n * n));
	bool ok = hw_run(h, &k, &c, mix, base, scale, 0, T, pre, post, comb);
	if (ok) {
		ref_hc_weights(mix, base, scale, wpre, c.full ? wpost : NULL, c.full ? wcomb : NULL, T, n, c.iters, 1e-6f);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pre", k.k.signature, (long long)T);
		ok = check_close(what, pre, wpre, (size_t)(T * n), 1e-6, 1e-30);
		if (c.full) {
			snprintf(what, sizeof what, "%s T=%lld post", k.k.signature, (long long)T);
			ok &= check_close(what, post, wpost, (size_t)(T * n), 1e-6, 1e-30);
			snprintf(what, sizeof what, "%s T=%lld comb", k.k.signature, (long long)T);
			ok &= check_close(what, comb, wcomb, (size_t)(T * n * n), 1e-5, 1e-30);
		}
	}
	free(mix), free(base), free(scale), free(pre), free(post), free(comb), free(wpre), free(wpost), free(wcomb);
	hk_free(h, &k);
	return ok;
}

static bool hw_invariance(harness *h, hw_case c, int64_t m, uint32_t *seed)
{
	hkernel k;
	if (!hw_build(h, &c, m, &k))
		return false;
	int64_t n = c.n, M = hw_width(&c);
	float *mix = randoms((size_t)(m * M), -1.0f, 1.0f, seed), *base = randoms((size_t)M, -1.0f, 1.0f, seed);
	float *scale = randoms(3, 0.5f, 2.0f, seed);
	float *out[2][3];
	for (int i = 0; i < 2; i++) {
		out[i][0] = alloc_floats((size_t)(m * n));
		out[i][1] = alloc_floats((size_t)(m * n));
		out[i][2] = alloc_floats((size_t)(m * n * n));
	}
	bool ok = hw_run(h, &k, &c, mix, base, scale, 0, m, out[0][0], out[0][1], out[0][2]);
	for (int64_t t = 0; ok && t < m; t++)
		ok = hw_run(h, &k, &c, mix, base, scale, t, 1, out[1][0], out[1][1], out[1][2]);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single rows", k.k.signature, (long long)m);
	ok = ok && check_bitwise(what, out[0][0], out[1][0], (size_t)(m * n)) &&
	     (!c.full || (check_bitwise(what, out[0][1], out[1][1], (size_t)(m * n)) &&
			  check_bitwise(what, out[0][2], out[1][2], (size_t)(m * n * n))));
	for (int i = 0; i < 2; i++)
		free(out[i][0]), free(out[i][1]), free(out[i][2]);
	free(mix), free(base), free(scale);
	hk_free(h, &k);
	return ok;
}

/* ---- hc_collapse and hc_expand ---- */

typedef struct {
	int64_t n, H;
	ir_op op; /* hc_collapse, hc_expand or hc_inject */
} hs_case;

/* Streams of the result: n, or 1 for hc_collapse. */
static int64_t hs_out_streams(const hs_case *c)
{
	return c->op == IR_OP_HC_COLLAPSE ? 1 : c->n;
}

/* The operands of T tokens from token t0 (x [T,n,H], y [T,H], the weights)
 * and the result, in binding order. */
typedef struct {
	float *x, *y, *pre, *comb, *out;
} hs_data;

static hs_data hs_fill(const hs_case *c, int64_t T, uint32_t *seed)
{
	int64_t n = c->n, H = c->H;
	return (hs_data){randoms((size_t)(T * n * H), -1.0f, 1.0f, seed), randoms((size_t)(T * H), -1.0f, 1.0f, seed),
			 randoms((size_t)(T * n), 1e-6f, c->op == IR_OP_HC_COLLAPSE ? 1.1f : 2.0f, seed),
			 randoms((size_t)(T * n * n), 1e-6f, 1.0f, seed),
			 alloc_floats((size_t)(T * hs_out_streams(c) * H))};
}

static void hs_free(hs_data *a)
{
	free(a->x), free(a->y), free(a->pre), free(a->comb), free(a->out);
}

static bool hs_run(harness *h, hkernel *k, const hs_case *c, const hs_data *a, int64_t t0, int64_t T, float *out)
{
	int64_t n = c->n, H = c->H;
	hop x = {a->x + t0 * n * H, (size_t)(T * n * H) * 4, false};
	hop w = {a->pre + t0 * n, (size_t)(T * n) * 4, false};
	hop y = {a->y + t0 * H, (size_t)(T * H) * 4, false}, o = {out + t0 * n * H, (size_t)(T * n * H) * 4, true};
	if (c->op == IR_OP_HC_COLLAPSE) {
		hop ops[3] = {x, w, {out + t0 * H, (size_t)(T * H) * 4, true}};
		return hk_run(h, k, ops, 3, (uint32_t)T, 0);
	}
	if (c->op == IR_OP_HC_INJECT) {
		hop ops[4] = {x, y, w, o};
		return hk_run(h, k, ops, 4, (uint32_t)T, 0);
	}
	hop ops[5] = {x, {a->y + t0 * H, (size_t)(T * H) * 4, false}, w,
		      {a->comb + t0 * n * n, (size_t)(T * n * n) * 4, false},
		      {out + t0 * n * H, (size_t)(T * n * H) * 4, true}};
	return hk_run(h, k, ops, 5, (uint32_t)T, 0);
}

static bool hs_build(harness *h, const hs_case *c, int64_t t_max, hkernel *k)
{
	kv_desc d = {.op = c->op, .t_max = t_max};
	d.u.hc.n = c->n;
	d.u.hc.H = c->H;
	return hk_build(h, &d, k);
}

static bool hs_case_run(harness *h, hs_case c, int64_t T, uint32_t *seed)
{
	hkernel k;
	if (!hs_build(h, &c, T, &k))
		return false;
	hs_data a = hs_fill(&c, T, seed);
	size_t no = (size_t)(T * hs_out_streams(&c) * c.H);
	float *want = alloc_floats(no);
	bool ok = hs_run(h, &k, &c, &a, 0, T, a.out);
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		if (c.op == IR_OP_HC_INJECT) {
			ref_hc_inject(a.x, a.y, a.pre, want, T, c.n, c.H);
			ok = check_bitwise(what, a.out, want, no);
		} else if (c.op == IR_OP_HC_EXPAND) {
			ref_hc_expand(a.x, a.y, a.pre, a.comb, want, T, c.n, c.H);
			ok = check_close(what, a.out, want, no, 3e-6, 1.0);
		} else {
			ref_hc_collapse(a.x, a.pre, want, T, c.n, c.H);
			ok = check_close(what, a.out, want, no, 2e-6, 1.0);
		}
	}
	hs_free(&a);
	free(want);
	hk_free(h, &k);
	return ok;
}

static bool hs_invariance(harness *h, hs_case c, int64_t m, uint32_t *seed)
{
	hkernel k;
	if (!hs_build(h, &c, m, &k))
		return false;
	hs_data a = hs_fill(&c, m, seed);
	size_t no = (size_t)(m * hs_out_streams(&c) * c.H);
	float *one = alloc_floats(no);
	bool ok = hs_run(h, &k, &c, &a, 0, m, a.out);
	for (int64_t t = 0; ok && t < m; t++)
		ok = hs_run(h, &k, &c, &a, t, 1, one);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single rows", k.k.signature, (long long)m);
	ok = ok && check_bitwise(what, a.out, one, no);
	hs_free(&a);
	free(one);
	hk_free(h, &k);
	return ok;
}

/* ---- hc_inject_norm ---- */

static kv_desc norm_desc(int64_t n, int64_t H, int64_t t_max, bool inject)
{
	kv_desc d = {.op = inject ? IR_OP_HC_INJECT_NORM : IR_OP_RMS_NORM, .t_max = t_max};
	d.u.rms_norm.rows_per_t = 1;
	d.u.rms_norm.D = n * H;
	d.u.rms_norm.group = H;
	d.u.rms_norm.eps = 1e-6f;
	d.u.rms_norm.offset = 1;
	d.u.rms_norm.inject = inject;
	return d;
}

/* T tokens of n streams of H, from token t0 of a: the fused kernel's streams
 * into sum, its norm into y (both [T, n*H]). */
static bool in_run(harness *h, hkernel *k, const hs_data *a, const float *nw, int64_t n, int64_t H, int64_t t0,
		   int64_t T, float *sum, float *y)
{
	size_t row = (size_t)(n * H) * 4;
	hop ops[6] = {{a->x + t0 * n * H, (size_t)T * row, false}, {a->y + t0 * H, (size_t)(T * H) * 4, false},
		      {a->pre + t0 * n, (size_t)(T * n) * 4, false}, {(float *)nw, row, false},
		      {sum + t0 * n * H, (size_t)T * row, true},  {y + t0 * n * H, (size_t)T * row, true}};
	return hk_run(h, k, ops, 6, (uint32_t)T, 0);
}

static bool in_case_run(harness *h, int64_t n, int64_t H, int64_t T, uint32_t *seed)
{
	kv_desc fd = norm_desc(n, H, T, true), pd = norm_desc(n, H, T, false);
	hkernel k, kp;
	if (!hk_build(h, &fd, &k))
		return false;
	if (!hk_build(h, &pd, &kp)) {
		hk_free(h, &k);
		return false;
	}
	hs_case c = {n, H, IR_OP_HC_INJECT};
	hs_data a = hs_fill(&c, T, seed);
	size_t no = (size_t)(T * n * H);
	float *nw = randoms((size_t)(n * H), -0.5f, 0.5f, seed), *y = alloc_floats(no), *want = alloc_floats(no);
	float *two = alloc_floats(no), *want_y = alloc_floats(no);
	hop plain[3] = {{want, no * 4, false}, {nw, (size_t)(n * H) * 4, false}, {two, no * 4, true}};
	ref_hc_inject(a.x, a.y, a.pre, want, T, n, H);
	bool ok = in_run(h, &k, &a, nw, n, H, 0, T, a.out, y) && hk_run(h, &kp, plain, 3, (uint32_t)T, 0);
	if (ok) {
		char what[512];
		ref_rms_norm(want, nw, want_y, T, n * H, H, 1e-6f, 1);
		snprintf(what, sizeof what, "%s T=%lld: streams vs ref_hc_inject", k.k.signature, (long long)T);
		ok = check_bitwise(what, a.out, want, no);
		snprintf(what, sizeof what, "%s T=%lld: norm vs the rms_norm kernel", k.k.signature, (long long)T);
		ok &= check_bitwise(what, y, two, no);
		snprintf(what, sizeof what, "%s T=%lld: norm vs ref_rms_norm", k.k.signature, (long long)T);
		ok &= check_close(what, y, want_y, no, 1e-4, 1.0);
	}
	/* batch invariance: each token alone gives its row of the T-token run */
	float *one_sum = alloc_floats(no), *one_y = alloc_floats(no);
	for (int64_t t = 0; ok && t < T; t++)
		ok = in_run(h, &k, &a, nw, n, H, t, 1, one_sum, one_y);
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single rows: streams", k.k.signature,
			 (long long)T);
		ok = check_bitwise(what, a.out, one_sum, no);
		snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single rows: norm", k.k.signature,
			 (long long)T);
		ok &= check_bitwise(what, y, one_y, no);
	}
	hs_free(&a);
	free(nw), free(y), free(want), free(two), free(want_y), free(one_sum), free(one_y);
	hk_free(h, &k);
	hk_free(h, &kp);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 31337;
	bool ok = true;
	/* V4-Flash: n = 4, 20 iterations; odd stream counts and iterations; the HyperHead's pre */
	ok &= hw_case_run(h, (hw_case){4, 20, true}, 1, &seed);
	ok &= hw_case_run(h, (hw_case){4, 20, true}, 70, &seed);
	ok &= hw_case_run(h, (hw_case){3, 1, true}, 5, &seed);
	ok &= hw_case_run(h, (hw_case){5, 7, true}, 9, &seed);
	ok &= hw_case_run(h, (hw_case){4, 20, false}, 3, &seed);
	ok &= hw_case_run(h, (hw_case){4, 20, false}, 65, &seed);
	ok &= hw_invariance(h, (hw_case){4, 20, true}, 5, &seed);
	/* V4-Flash: n = 4, H = 7168 (vec4s); odd n and H (floats); hc_inject
	 * at Qwen3.8 Flash's n = 4, H = 2560 too */
	static const ir_op ops[] = {IR_OP_HC_COLLAPSE, IR_OP_HC_EXPAND, IR_OP_HC_INJECT};
	for (size_t e = 0; e < sizeof ops / sizeof *ops; e++) {
		ok &= hs_case_run(h, (hs_case){4, 7168, ops[e]}, 1, &seed);
		ok &= hs_case_run(h, (hs_case){4, 7168, ops[e]}, 3, &seed);
		ok &= hs_case_run(h, (hs_case){5, 130, ops[e]}, 9, &seed);
		ok &= hs_case_run(h, (hs_case){3, 37, ops[e]}, 20, &seed);
		ok &= hs_invariance(h, (hs_case){4, 264, ops[e]}, 5, &seed);
	}
	ok &= hs_case_run(h, (hs_case){4, 2560, IR_OP_HC_INJECT}, 5, &seed);
	/* hc_inject_norm at Qwen3.8 Flash's n = 4, H = 2560 (decode and verify
	 * steps), at 3 odd streams of 37, past a workgroup's lanes of tokens */
	ok &= in_case_run(h, 4, 2560, 1, &seed);
	ok &= in_case_run(h, 4, 2560, 5, &seed);
	ok &= in_case_run(h, 3, 37, 20, &seed);
	ok &= in_case_run(h, 5, 130, 70, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
