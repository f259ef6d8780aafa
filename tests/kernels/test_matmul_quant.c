/* matvec (T <= 8 rows), the tiled matmul (more) and the cooperative-matrix
 * matmul on q8_0, q4_k, f8e4m3_b128 and mxfp4 weights (runtime/drivers/ref/quant.h), against ref_matmul
 * on the dequantized weights (halo_dequantize_rows: the dequantizer every
 * kernel is held to). Random weights and activations without zeros, the
 * weights quantized with halo_quantize_rows. matvec: the candidates a bundle
 * carries (the space's first 8), at T = 1..8 with the fused rms_norm prologue and
 * epilogue chains, N not a multiple of any column group, K = 256..4096 and
 * K that are multiples of 32 but not of 256 (q4_k rows ending in a partial
 * super-block); batch invariance (the rows
 * of one T = 8 dispatch equal eight T = 1 dispatches bitwise) for every
 * candidate; bad descriptors refused with a message naming the op and dtype.
 * The cooperative-matrix kernel is compiled and its SPIR-V validated on any
 * device; lavapipe has no VK_NV_cooperative_matrix, so there it is reported
 * as skipped and runs on the H200 (tools/gpu).
 *
 * Tolerances, all as max |got - want| / max(|want|, 1) unless said, with
 * |x| <= 1 and dequantized |w| about <= 1, so |want| is of order sqrt(K)/3:
 * - matvec: the kernel scales each chunk's sum s = sum x q once (q8_0:
 *   d * s; q4_k: (d*sc) * s - (dmin*m) * sum x, two sums of up to 32 terms
 *   whose difference is the chunk's dot) where the reference multiplies each
 *   weight. Each chunk's f32 result is off by a few ulps of those two terms,
 *   each at most about 32 * 1 * (15 * d*sc + dmin*m) ~ 2 * 32 in size for
 *   q4_k, so up to ~1e-5 absolute per chunk; over K/8 chunks of random sign
 *   the error walks to ~1e-5 sqrt(K/8) ~ 2e-4 absolute in the worst
 *   (q4_k, K = 4096) case against |want| ~ 20. The test allows 1e-4 (q8_0,
 *   f8e4m3_b128 and mxfp4: their one term per chunk, d * s with |d q| <= 1,
 *   is half that size) and 2e-4 (q4_k) of
 *   max(|want|, 1), so outputs near 0 are judged absolutely at that level:
 *   one chunk dropped, a wrong scale or sub-block (errors of order 1) fails.
 * - tiled matmul: the tile holds the dequantized weights (bitwise for q8_0,
 *   f8e4m3_b128 and mxfp4, up to one fma rounding for q4_k) and sums in f32 as for f32 weights:
 *   test_matmul_coopmat.c's f32 bound, 8 * 2^-24 sqrt(K) s_i + 2e-5
 *   max(|want|, 1), s_i = sqrt(sum_k (x'_k w_k)^2).
 * - coopmat: x' and the dequantized w are both rounded to f16 (u = 2^-11)
 *   before exact products: an error of standard deviation about
 *   sqrt(2/3) u s_i; the test allows 12 u s_i + 2e-5 max(|want|, 1), about
 *   15 standard deviations.
 * Measured on lavapipe: see the printed max errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/quant.h"
#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	int64_t K, N, T, t_max;
	halo_dtype wtype;
	bool pro;
	int n_epi;
	kv_elem_op epi[KV_MAX_EPILOGUE];
	int xq; /* 8: int8 activations */
} qcase;

/* Quantized weights of a case: the bytes, and their dequantized f32 values. */
typedef struct {
	uint8_t *q;
	size_t bytes;
	float *w;
} qweights;

static qweights make_weights(halo_dtype t, int64_t N, int64_t K, uint32_t *seed)
{
	qweights r = {.bytes = halo_dtype_bytes(t, (size_t)N, (size_t)K)};
	float *src = alloc_floats((size_t)(N * K));
	r.q = calloc(r.bytes, 1);
	r.w = alloc_floats((size_t)(N * K));
	if (!r.q) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	fill_random(src, (size_t)(N * K), 1.0f, seed);
	halo_quantize_rows(t, src, (uint64_t)N, (uint64_t)K, 0, (uint64_t)N, r.q);
	halo_dequantize_rows(t, r.q, (uint64_t)N, (uint64_t)K, 0, (uint64_t)N, r.w);
	free(src);
	return r;
}

static void weights_free(qweights *w)
{
	free(w->q);
	free(w->w);
}

static size_t epi_numel(const kv_elem_op *e, int64_t T, int64_t N)
{
	if (e->bcast == KV_BCAST_TRAILING || e->bcast == KV_BCAST_LASTDIM)
		return (size_t)(e->bcast == KV_BCAST_TRAILING ? e->bcast_n : T * N / e->bcast_n);
	return (size_t)(T * N);
}

static bool is_binary(ir_op op)
{
	return op == IR_OP_ADD || op == IR_OP_SUB || op == IR_OP_MUL || op == IR_OP_SWIGLU;
}

/* x' (the normalised rows with the prologue), want = the reference, and
 * s[i] = sqrt(sum_k (x'_k w_k)^2) per output. */
static void reference(const qcase *c, const float *x, const float *w, const float *nw, float **extra, float *want,
		      float *s)
{
	float *xin = alloc_floats((size_t)(c->T * c->K));
	if (c->pro && c->xq) { /* x * (1 + nw) rounded, the dots scaled by 1/rms (docs/quantization.md) */
		for (int64_t i = 0; i < c->T * c->K; i++)
			xin[i] = x[i] * (nw[i % c->K] + 1.0f);
	} else if (c->pro) {
		ref_rms_norm(x, nw, xin, c->T, c->K, 0, 1e-6f, 1);
	} else {
		memcpy(xin, x, (size_t)(c->T * c->K) * sizeof *x);
	}
	if (c->xq)
		halo_round_x_q8(xin, xin, (uint64_t)(c->T * c->K));
	ref_matmul(xin, w, want, c->T, c->K, c->N);
	for (int64_t t = 0; c->pro && c->xq && t < c->T; t++) {
		float r = ref_rms_inv(x + t * c->K, c->K, 1e-6f);
		for (int64_t n = 0; n < c->N; n++)
			want[t * c->N + n] *= r;
		for (int64_t k = 0; k < c->K; k++)
			xin[t * c->K + k] *= r; /* for s below */
	}
	for (int j = 0; j < c->n_epi; j++)
		ref_apply_elem(&c->epi[j], want, extra[j], c->T * c->N);
	for (int64_t t = 0; t < c->T; t++)
		for (int64_t n = 0; n < c->N; n++) {
			double q = 0.0;
			for (int64_t k = 0; k < c->K; k++) {
				double p = (double)xin[t * c->K + k] * w[n * c->K + k];
				q += p * p;
			}
			s[t * c->N + n] = (float)sqrt(q);
		}
	free(xin);
}

/* Per-output bound a * s_i + b * max(|want|, 1) (a = 0: the relative check). */
static bool check_bound(const char *what, const float *got, const float *want, const float *s, size_t n,
			double a, double b)
{
	double worst = 0.0;
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		double lim = a * s[i] + b * fmax(fabs((double)want[i]), 1.0);
		double e = fabs((double)got[i] - (double)want[i]) / lim;
		if (!(e <= worst)) {
			worst = e;
			at = i;
			if (isnan(e))
				break;
		}
	}
	bool ok = worst <= 1.0;
	printf("%s %s: worst err %.3g of its bound at %zu (got %.9g want %.9g)\n", ok ? "ok  " : "FAIL", what, worst,
	       at, n ? (double)got[at] : 0.0, n ? (double)want[at] : 0.0);
	return ok;
}

static const double U16 = 1.0 / 2048.0, U32 = 1.0 / 16777216.0;

/* That an xq kernel rounds x at all: its outputs are on average within a
 * tenth of the distance between the rounded-x reference (want) and the
 * f32-x one (a kernel that skipped the rounding would sit at that
 * distance, which xq_bound's allowance for single flipped codes could
 * hide on one output but not on the mean). */
static bool rounds_x(const qcase *c, const float *x, const float *w, const float *nw, float **extra, const float *got,
		     const float *want)
{
	qcase f = *c;
	f.xq = 0;
	size_t n = (size_t)(c->T * c->N);
	float *want_f = alloc_floats(n), *s = alloc_floats(n);
	reference(&f, x, w, nw, extra, want_f, s);
	double err = 0.0, gap = 0.0;
	for (size_t i = 0; i < n; i++) {
		err += fabs((double)got[i] - want[i]);
		gap += fabs((double)want_f[i] - want[i]);
	}
	free(want_f), free(s);
	bool ok = err < 0.1 * gap;
	printf("%s   x rounded: mean error %.3g against the rounding's mean effect %.3g\n", ok ? "ok  " : "FAIL",
	       err / (double)n, gap / (double)n);
	return ok;
}


static bool run_variant(harness *h, const qcase *c, const kv_desc *d, uint32_t *seed)
{
	hkernel k;
	if (!hk_build(h, d, &k))
		return false;
	if (!hk_supported(h, &k.k)) {
		printf("skip (the device lacks what it needs; SPIR-V built and validated): %s\n", k.k.signature);
		hk_free(h, &k);
		return true;
	}
	size_t nx = (size_t)(c->T * c->K), ny = (size_t)(c->T * c->N);
	float *x = alloc_floats(nx), *nwt = alloc_floats((size_t)c->K), *y = alloc_floats(ny);
	float *want = alloc_floats(ny), *s = alloc_floats(ny);
	float *extra[KV_MAX_EPILOGUE] = {0};
	qweights w = make_weights(c->wtype, c->N, c->K, seed);
	fill_random(x, nx, 1.0f, seed);
	fill_random(nwt, (size_t)c->K, 0.5f, seed);
	hop ops[3 + KV_MAX_EPILOGUE];
	int n = 0;
	ops[n++] = (hop){x, nx * 4, false};
	ops[n++] = (hop){w.q, w.bytes, false};
	if (c->pro)
		ops[n++] = (hop){nwt, (size_t)c->K * 4, false};
	for (int j = 0; j < c->n_epi; j++) {
		if (!is_binary(c->epi[j].op))
			continue;
		size_t ne = epi_numel(&c->epi[j], c->T, c->N);
		extra[j] = alloc_floats(ne);
		fill_random(extra[j], ne, 1.0f, seed);
		ops[n++] = (hop){extra[j], ne * 4, false};
	}
	ops[n++] = (hop){y, ny * 4, true};
	bool ok = hk_run(h, &k, ops, n, (uint32_t)c->T, 0);
	if (ok) {
		reference(c, x, w.w, nwt, extra, want, s);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)c->T);
		double a = 0.0, b;
		if (c->t_max <= KV_MATVEC_MAX_T)
			b = c->wtype == HALO_Q4_K ? 2e-4 : 1e-4;
		else if (k.k.needs & HALO_NEED_COOPMAT_NV)
			a = 12.0 * U16, b = 2e-5;
		else
			a = 8.0 * U32 * sqrt((double)c->K), b = 2e-5;
		ok = check_bound(what, y, want, s, ny, a, b);
		if (c->xq)
			ok &= rounds_x(c, x, w.w, nwt, extra, y, want);
	}
	for (int j = 0; j < KV_MAX_EPILOGUE; j++)
		free(extra[j]);
	free(x), free(nwt), free(y), free(want), free(s);
	weights_free(&w);
	hk_free(h, &k);
	return ok;
}

static kv_desc desc_of(const qcase *c)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = c->t_max, .wtype = c->wtype, .pro = {.on = c->pro, .eps = 1e-6f, .offset = 1},
		     .n_epi = c->n_epi};
	d.u.matmul.K = c->K;
	d.u.matmul.N = c->N;
	d.u.matmul.xq = c->xq;
	memcpy(d.epi, c->epi, sizeof d.epi);
	return d;
}

/* The candidates a bundle carries (codegen/select_kernels.c keeps the
 * space's first 8). */
#define CANDIDATES 8

/* Every candidate of the case's space, or the heuristic's alone. */
static bool run_case(harness *h, const qcase *c, bool all, uint32_t *seed)
{
	kv_desc d = desc_of(c);
	kv_tiles t[CANDIDATES];
	int n = all ? kv_variant_space(&d, t, CANDIDATES) : 1;
	bool ok = n > 0;
	for (int i = 0; i < n; i++) {
		d.tiles = all ? t[i] : (kv_tiles){0};
		ok &= run_variant(h, c, &d, seed);
	}
	return ok;
}

/* Batch invariance of every decode variant: the rows of one T = 8 dispatch
 * equal eight T = 1 dispatches bitwise. */
static bool batch_invariance(harness *h, halo_dtype wt, int64_t K, int64_t N, bool pro, int xq, uint32_t *seed)
{
	const int64_t m = 8;
	qcase c = {K, N, m, m, wt, pro, 0, {{0}}, xq};
	kv_desc d = desc_of(&c);
	kv_tiles t[CANDIDATES];
	int nt = kv_variant_space(&d, t, CANDIDATES);
	qweights w = make_weights(wt, N, K, seed);
	float *x = alloc_floats((size_t)(m * K)), *nw = alloc_floats((size_t)K);
	float *yb = alloc_floats((size_t)(m * N)), *y1 = alloc_floats((size_t)(m * N));
	fill_random(x, (size_t)(m * K), 1.0f, seed);
	fill_random(nw, (size_t)K, 0.5f, seed);
	bool ok = nt > 1;
	for (int i = 0; i < nt; i++) {
		d.tiles = t[i];
		hkernel k;
		if (!hk_build(h, &d, &k)) {
			ok = false;
			continue;
		}
		if (!hk_supported(h, &k.k)) {
			hk_free(h, &k);
			continue;
		}
		hop ops[4];
		int n = 0;
		ops[n++] = (hop){x, (size_t)(m * K) * 4, false};
		ops[n++] = (hop){w.q, w.bytes, false};
		if (pro)
			ops[n++] = (hop){nw, (size_t)K * 4, false};
		ops[n++] = (hop){yb, (size_t)(m * N) * 4, true};
		bool vok = hk_run(h, &k, ops, n, (uint32_t)m, 0);
		for (int64_t r = 0; vok && r < m; r++) {
			ops[0] = (hop){x + r * K, (size_t)K * 4, false};
			ops[n - 1] = (hop){y1 + r * N, (size_t)N * 4, true};
			vok = hk_run(h, &k, ops, n, 1, 0);
		}
		char what[512];
		snprintf(what, sizeof what, "batch invariance %s, T=8 vs 8 x T=1", k.k.signature);
		ok &= vok && check_bitwise(what, yb, y1, (size_t)(m * N));
		hk_free(h, &k);
	}
	free(x), free(nw), free(yb), free(y1);
	weights_free(&w);
	return ok;
}

/* Descriptors the kernels refuse, each with a message naming the problem. */
static bool refusals(void)
{
	struct {
		ir_op op;
		halo_dtype wt;
		int64_t K;
		const char *needle;
		int64_t t_max;
		int xq;
	} bad[] = {
		{IR_OP_MATMUL, HALO_MXFP4, 256, "xq: int8 activations take q8_0 or q4_k weights, not mxfp4", 4, 8},
		{IR_OP_MATMUL, HALO_Q8_0, 256, "xq: int8 activations are the decode kernel's", 16, 8},
		{IR_OP_MATMUL, HALO_Q4_K, 256, "xq 4: 8 (int8 activations) or absent", 4, 4},
		{IR_OP_MATMUL, HALO_Q4_K, 272, "not a multiple of its 32-element block", 0, 0},
		{IR_OP_MATMUL, HALO_Q8_0, 48, "not a multiple of its 32-element block", 0, 0},
		{IR_OP_MATMUL, HALO_F8E4M3_B128, 192, "not a multiple of its 128-element block", 0, 0},
		{IR_OP_MATMUL, HALO_MXFP4, 48, "not a multiple of its 32-element block", 0, 0},
		{IR_OP_EMBED, HALO_Q4_K, 80, "not a multiple of its 32-element block", 0, 0},
		{IR_OP_CONV1D_CAUSAL, HALO_Q4_K, 4, "weight dtype q4_k: this op's kernel reads f32 or f16", 0, 0},
	};
	bool ok = true;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		kv_desc d = {.op = bad[i].op, .t_max = bad[i].t_max ? bad[i].t_max : 4, .wtype = bad[i].wt};
		if (bad[i].op == IR_OP_MATMUL) {
			d.u.matmul.K = bad[i].K;
			d.u.matmul.N = 8;
			d.u.matmul.xq = bad[i].xq;
		} else if (bad[i].op == IR_OP_EMBED) {
			d.u.embed.V = 100;
			d.u.embed.H = bad[i].K;
		} else {
			d.u.conv1d.C = 64;
			d.u.conv1d.K = bad[i].K;
		}
		kv_kernel k;
		char err[512] = "";
		bool built = kernel_variant_build(&d, &k, err, sizeof err);
		if (built)
			kv_kernel_free(&k);
		bool good = !built && strstr(err, bad[i].needle);
		printf("%s refused: %s\n", good ? "ok  " : "FAIL", built ? "(built)" : err);
		ok &= good;
	}
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 4242;
	const kv_elem_op add_res = {.op = IR_OP_ADD, .operand = 0, .bcast = KV_BCAST_FULL};
	const kv_elem_op silu = {.op = IR_OP_SILU};
	const kv_elem_op swiglu_up = {.op = IR_OP_SWIGLU, .operand = 1, .bcast = KV_BCAST_FULL};
	const kv_elem_op scale = {.op = IR_OP_SCALE, .value = 0.37f};
	bool ok = refusals();
	halo_dtype types[] = {HALO_Q8_0, HALO_Q4_K, HALO_F8E4M3_B128, HALO_MXFP4};
	for (size_t q = 0; q < sizeof types / sizeof *types; q++) {
		halo_dtype wt = types[q];
		/* decode: every variant at T = 1..8, N off every column group */
		qcase dec[] = {
			{256, 37, 1, 8, wt, false, 0, {{0}}, 0},
			{256, 37, 2, 8, wt, true, 2, {add_res, silu}, 0},
			{512, 45, 3, 8, wt, false, 1, {scale}, 0},
			{1024, 19, 4, 8, wt, true, 0, {{0}}, 0},
			{768, 61, 5, 8, wt, false, 2, {swiglu_up, scale}, 0},
			{2048, 13, 6, 8, wt, true, 1, {add_res}, 0},
			{256, 100, 7, 8, wt, true, 2, {add_res, silu}, 0},
			{4096, 23, 8, 8, wt, true, 1, {add_res}, 0},
			{4096, 5, 1, 1, wt, false, 0, {{0}}, 0},
		};
		/* every candidate on every other case (lavapipe builds each in
		 * about half a second), the heuristic on the rest */
		for (size_t i = 0; i < sizeof dec / sizeof *dec; i++)
			ok &= run_case(h, &dec[i], i % 2 == 0, &seed);
		/* prefill: the tiled kernel (and coopmat where the device has it) */
		qcase pre[] = {
			{256, 70, 9, 16, wt, false, 0, {{0}}, 0},
			{512, 33, 37, 64, wt, true, 2, {add_res, silu}, 0},
			{1024, 130, 100, 128, wt, false, 1, {add_res}, 0},
		};
		for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
			ok &= run_case(h, &pre[i], true, &seed);
		ok &= batch_invariance(h, wt, 1024, 29, true, 0, &seed);
		ok &= batch_invariance(h, wt, 256, 9, false, 0, &seed);
	}
	/* rows that are whole blocks of 32 but not of 256 (q4_k: 3 sub-blocks,
	 * 4 super-blocks and 1 sub-block, 5 sub-blocks) */
	halo_dtype b32[] = {HALO_Q8_0, HALO_MXFP4, HALO_Q4_K};
	for (size_t q = 0; q < sizeof b32 / sizeof *b32; q++) {
		qcase odd[] = {
			{96, 21, 3, 8, b32[q], true, 1, {add_res}, 0},
			{1056, 17, 8, 8, b32[q], false, 0, {{0}}, 0},
			{160, 40, 20, 32, b32[q], true, 0, {{0}}, 0},
		};
		for (size_t i = 0; i < sizeof odd / sizeof *odd; i++)
			ok &= run_case(h, &odd[i], true, &seed);
		ok &= batch_invariance(h, b32[q], 96, 21, true, 0, &seed);
	}
	/* int8 activations: every variant at T = 1..8 and batch invariance, on
	 * the two formats they take, and q8_0 rows of 3 and 33 blocks */
	halo_dtype xqt[] = {HALO_Q8_0, HALO_Q4_K};
	for (size_t q = 0; q < sizeof xqt / sizeof *xqt; q++) {
		halo_dtype wt = xqt[q];
		qcase dec[] = {
			{256, 37, 1, 8, wt, false, 0, {{0}}, 8},
			{512, 45, 3, 8, wt, true, 2, {add_res, silu}, 8},
			{768, 61, 5, 8, wt, false, 2, {swiglu_up, scale}, 8},
			{4096, 23, 8, 8, wt, true, 1, {add_res}, 8},
			{4096, 5, 1, 1, wt, true, 0, {{0}}, 8},
			{1024, 19, 4, 4, wt, false, 0, {{0}}, 8},
		};
		for (size_t i = 0; i < sizeof dec / sizeof *dec; i++)
			ok &= run_case(h, &dec[i], i % 2 == 0, &seed);
		ok &= batch_invariance(h, wt, 4096, 13, true, 8, &seed); /* T = 8 stages 2 tiles, T = 1 one */
		ok &= batch_invariance(h, wt, 256, 9, false, 8, &seed);
	}
	for (size_t q = 0; q < sizeof xqt / sizeof *xqt; q++) {
		qcase odd_xq[] = {
			{96, 21, 3, 8, xqt[q], true, 1, {add_res}, 8},
			{1056, 17, 8, 8, xqt[q], false, 0, {{0}}, 8},
			{640, 33, 2, 8, xqt[q], true, 0, {{0}}, 8},
		};
		for (size_t i = 0; i < sizeof odd_xq / sizeof *odd_xq; i++)
			ok &= run_case(h, &odd_xq[i], true, &seed);
		ok &= batch_invariance(h, xqt[q], 96, 21, true, 8, &seed);
	}
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
