/* The prefill matmul's variant space (T > 8) against ref_matmul: the
 * cooperative-matrix kernel (matmul_coopmat.comp, where the device has
 * HALO_NEED_COOPMAT_NV) and the tiled fallback (matmul.comp), f16 weights,
 * ragged T, N and K, with and without the fused rms_norm prologue and
 * epilogue chains. Every coopmat variant is compiled and its SPIR-V validated
 * on any device; one the device cannot run is reported as skipped, and the
 * fallback is tested regardless.
 *
 * Tolerances.
 * - matmul.comp multiplies in f32. Its sum of K products rounds each
 *   partial sum (about sqrt(k) s_i / sqrt K in size) to 2^-24, a random walk
 *   of standard deviation about 2^-24 sqrt(K) s_i / sqrt 6, where
 *   s_i = sqrt(sum_k (x'_k w_k)^2); test_matmul.c's 2e-5 of max(|want|, 1)
 *   alone is too tight at K = 4096 and T = 512 (2 million outputs reach
 *   1.8e-4 absolute against |want| of order 20). The test allows
 *   8 2^-24 sqrt(K) s_i (about 20 standard deviations) plus 2e-5
 *   max(|want|, 1).
 * - matmul_coopmat.comp rounds x' (x, or the normalised row) to f16 before
 *   the products; w is f16 already and f16 x f16 products are exact in the
 *   f32 accumulators. So output i carries sum_k d_k x'_k w_k with
 *   independent roundings |d_k| <= u = 2^-11 (standard deviation about
 *   u / sqrt 3), an error of standard deviation about (u / sqrt 3) s_i. The
 *   test allows 8 u s_i, about 14 standard deviations: rounding never
 *   reaches it, while one dropped or doubled 16-wide block of k costs about
 *   4 s_i / sqrt K, 16 times the bound at K = 4096, and staging x in bf16
 *   (8 times u) would cross it too. The f32 accumulation adds at most about
 *   (K / 16) 2^-23 times the partial sums, about 1e-4 s_i at K = 4096.
 * - Each epilogue op passes the error on scaled by its derivative, at most
 *   1.1 for the ops and operands (|b| <= 1) used here, so both bounds grow
 *   1.1 times per op, and 2e-5 max(|want|, 1) covers the epilogue's own f32
 *   math. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL_F32 2e-5
#define U_F16 (1.0 / 2048.0)

typedef struct {
	int64_t K, N, T, t_max;
	int pro; /* 0: none, 1: rms_norm with its weight, 2: folded into the matrix */
	float x_amp; /* |x| range; large with the prologue: x' must stay in f16 range */
	int n_epi;
	kv_elem_op epi[KV_MAX_EPILOGUE];
	bool extra_tiles; /* also the coopmat tiles outside the space (small shapes) */
} mm_case;

typedef struct {
	int coop_run, coop_skipped, tiled_run;
} tally;

static bool expect(const char *what, bool ok)
{
	if (!ok)
		printf("FAIL %s\n", what);
	return ok;
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

/* Inputs and the reference of one case, shared by all its variants. */
typedef struct {
	float *x, *w, *nw, *want, *s; /* s: s_i above, computed on first use */
	uint16_t *w16;
	float *extra[KV_MAX_EPILOGUE];
	float *xin; /* x' */
} mm_data;

static void data_make(const mm_case *c, mm_data *m, uint32_t *seed)
{
	size_t nx = (size_t)(c->T * c->K), nw = (size_t)(c->N * c->K), ny = (size_t)(c->T * c->N);
	memset(m, 0, sizeof *m);
	m->x = alloc_floats(nx);
	m->w = alloc_floats(nw);
	m->nw = alloc_floats((size_t)c->K);
	m->want = alloc_floats(ny);
	m->xin = alloc_floats(nx);
	m->w16 = calloc(nw + 1, sizeof *m->w16);
	fill_random(m->x, nx, c->x_amp, seed);
	fill_random(m->w, nw, 1.0f, seed);
	fill_random(m->nw, (size_t)c->K, 0.5f, seed);
	round_f16(m->w, m->w16, nw);
	for (int j = 0; j < c->n_epi; j++)
		if (is_binary(c->epi[j].op)) {
			size_t ne = epi_numel(&c->epi[j], c->T, c->N);
			m->extra[j] = alloc_floats(ne);
			fill_random(m->extra[j], ne, 1.0f, seed);
		}
	if (c->pro)
		ref_rms_norm(m->x, c->pro == 1 ? m->nw : NULL, m->xin, c->T, c->K, 0, 1e-6f, 1);
	else
		memcpy(m->xin, m->x, nx * sizeof *m->x);
	ref_matmul(m->xin, m->w, m->want, c->T, c->K, c->N);
	for (int j = 0; j < c->n_epi; j++)
		ref_apply_elem(&c->epi[j], m->want, m->extra[j], c->T * c->N);
}

/* s_i = sqrt(sum_k x'_k^2 w_k^2), a matmul of the squares. */
static const float *data_spread(const mm_case *c, mm_data *m)
{
	if (m->s)
		return m->s;
	size_t nx = (size_t)(c->T * c->K), nw = (size_t)(c->N * c->K), ny = (size_t)(c->T * c->N);
	float *x2 = alloc_floats(nx), *w2 = alloc_floats(nw);
	for (size_t i = 0; i < nx; i++)
		x2[i] = m->xin[i] * m->xin[i];
	for (size_t i = 0; i < nw; i++)
		w2[i] = m->w[i] * m->w[i];
	m->s = alloc_floats(ny);
	ref_matmul(x2, w2, m->s, c->T, c->K, c->N);
	for (size_t i = 0; i < ny; i++)
		m->s[i] = sqrtf(m->s[i]);
	free(x2);
	free(w2);
	return m->s;
}

static void data_free(mm_data *m)
{
	for (int j = 0; j < KV_MAX_EPILOGUE; j++)
		free(m->extra[j]);
	free(m->x), free(m->w), free(m->nw), free(m->want), free(m->s), free(m->w16), free(m->xin);
}

/* The bounds of the header, element by element: 8 u s_i for the coopmat
 * kernel (x' rounded to f16), 8 2^-24 sqrt(K) s_i for the tiled one (f32
 * sums); prints the worst ratio of error to bound. */
static bool check_bound(const char *what, const mm_case *c, bool f16, const float *got, const float *want,
			const float *s, size_t n)
{
	double grow = pow(1.1, c->n_epi), worst = 0.0;
	double per_s = f16 ? 8.0 * U_F16 : 8.0 * ldexp(1.0, -24) * sqrt((double)c->K);
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		double bound = grow * (per_s * s[i] + TOL_F32 * fmax(fabs((double)want[i]), 1.0));
		double r = fabs((double)got[i] - (double)want[i]) / bound;
		if (!(r <= worst)) { /* also catches NaN */
			worst = r;
			at = i;
			if (isnan(r))
				break;
		}
	}
	bool ok = worst <= 1.0;
	printf("%s %s: max err / bound %.3g at %zu (got %.9g want %.9g, s %.4g)\n", ok ? "ok  " : "FAIL", what,
	       worst, at, (double)got[at], (double)want[at], (double)s[at]);
	return ok;
}

static bool run_variant(harness *h, const mm_case *c, mm_data *m, const kv_desc *d, tally *tl)
{
	hkernel k;
	if (!hk_build(h, d, &k))
		return false;
	bool coop = k.k.needs & HALO_NEED_COOPMAT_NV;
	if (!hk_supported(h, &k.k)) {
		printf("skip coopmat variant (SPIR-V valid; the device lacks VK_NV_cooperative_matrix "
		       "16x16x16 f16/f32): %s\n",
		       k.k.signature);
		tl->coop_skipped += coop;
		hk_free(h, &k);
		/* Only the coopmat variants need a device feature. */
		return expect("only coopmat variants are skipped", coop);
	}
	size_t nx = (size_t)(c->T * c->K), nw = (size_t)(c->N * c->K), ny = (size_t)(c->T * c->N);
	float *y = alloc_floats(ny);
	hop ops[3 + KV_MAX_EPILOGUE];
	int n = 0;
	ops[n++] = (hop){m->x, nx * 4, false};
	ops[n++] = (hop){m->w16, nw * 2, false};
	if (c->pro == 1)
		ops[n++] = (hop){m->nw, (size_t)c->K * 4, false};
	for (int j = 0; j < c->n_epi; j++)
		if (m->extra[j])
			ops[n++] = (hop){m->extra[j], epi_numel(&c->epi[j], c->T, c->N) * 4, false};
	ops[n++] = (hop){y, ny * 4, true};
	bool ok = hk_run(h, &k, ops, n, (uint32_t)c->T, 0);
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)c->T);
		ok = check_bound(what, c, coop, y, m->want, data_spread(c, m), ny);
		tl->coop_run += coop;
		tl->tiled_run += !coop;
	}
	free(y);
	hk_free(h, &k);
	return ok;
}

/* The space of a prefill matmul: with f16 weights coopmat choices first and
 * the tiled kernel (needing nothing) last; f32 weights only the tiled one. */
static bool check_space(kv_desc d)
{
	kv_tiles t[16];
	bool ok = true;
	char err[512];
	for (int f16 = 0; f16 < 2; f16++) {
		d.wtype = f16 ? HALO_F16 : HALO_F32;
		int n = kv_variant_space(&d, t, 16);
		ok &= expect("space size", f16 ? n >= 2 && n <= 3 : n == 1);
		for (int i = 0; i < n; i++) {
			kv_kernel k;
			d.tiles = t[i];
			bool built = kernel_variant_build(&d, &k, err, sizeof err);
			ok &= expect(built ? "space choice builds" : err, built);
			if (!built)
				continue;
			bool last = i == n - 1;
			ok &= expect("coopmat choices first, then the tiled kernel",
				     last ? k.needs == 0 && !strcmp(k.template_name, "matmul.comp")
					  : k.needs == HALO_NEED_COOPMAT_NV &&
						    !strcmp(k.template_name, "matmul_coopmat.comp") &&
						    !strncmp(k.tile, "cm,", 3));
			kv_kernel_free(&k);
		}
		/* max = 1 keeps the portable choice. */
		d.tiles = (kv_tiles){0};
		n = kv_variant_space(&d, t, 1);
		ok &= expect("a one-choice space is the tiled kernel", n == 1 && !t[0].coopmat);
	}
	/* What the builder refuses. */
	kv_kernel k;
	d.wtype = HALO_F32;
	d.tiles = (kv_tiles){.coopmat = 1};
	ok &= expect("coopmat refuses f32 weights", !kernel_variant_build(&d, &k, err, sizeof err) &&
							    strstr(err, "f16 weights"));
	d.wtype = HALO_F16;
	d.tiles = (kv_tiles){.coopmat = 1, .bm = 64, .bn = 64, .tm = 8, .tn = 32};
	ok &= expect("coopmat refuses a subgroup tile under 16", !kernel_variant_build(&d, &k, err, sizeof err));
	d.tiles = (kv_tiles){.coopmat = 1, .bm = 256, .bn = 256, .bk = 32, .tm = 64, .tn = 64};
	ok &= expect("coopmat refuses a tile past the shared memory limit",
		     !kernel_variant_build(&d, &k, err, sizeof err) && strstr(err, "shared memory"));
	d.tiles = (kv_tiles){.coopmat = 1, .bm = 128, .bn = 128, .tm = 128, .tn = 64};
	ok &= expect("coopmat refuses more than 16 accumulators per subgroup",
		     !kernel_variant_build(&d, &k, err, sizeof err) && strstr(err, "accumulators"));
	return ok;
}

static bool run_case(harness *h, const mm_case *c, uint32_t *seed, tally *tl)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = c->t_max, .wtype = HALO_F16, .n_epi = c->n_epi,
		     .pro = {.on = c->pro != 0, .folded = c->pro == 2, .eps = 1e-6f, .offset = c->pro == 1}};
	d.u.matmul.K = c->K;
	d.u.matmul.N = c->N;
	memcpy(d.epi, c->epi, sizeof d.epi);
	/* Tiles outside the space that the builder accepts: BK 16 and 64, 2
	 * subgroups per row of the tile, 16-row subgroup blocks. */
	static const kv_tiles extra[] = {
		{.coopmat = 1, .bm = 32, .bn = 64, .bk = 32, .tm = 16, .tn = 32},
		{.coopmat = 1, .bm = 64, .bn = 128, .bk = 16, .tm = 32, .tn = 64},
		{.coopmat = 1, .bm = 64, .bn = 64, .bk = 64, .tm = 32, .tn = 32},
	};
	kv_tiles t[16 + sizeof extra / sizeof *extra];
	int n = kv_variant_space(&d, t, 16);
	bool ok = expect("the space ends with the tiled kernel", n >= 1 && !t[n - 1].coopmat);
	if (c->extra_tiles)
		for (size_t i = 0; i < sizeof extra / sizeof *extra; i++)
			t[n++] = extra[i];
	mm_data m;
	data_make(c, &m, seed);
	for (int i = 0; i < n; i++) {
		d.tiles = t[i];
		ok &= run_variant(h, c, &m, &d, tl);
	}
	data_free(&m);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 4242;
	const kv_elem_op add_res = {.op = IR_OP_ADD, .operand = 0, .bcast = KV_BCAST_FULL};
	const kv_elem_op sub_rev = {.op = IR_OP_SUB, .operand = 1, .bcast = KV_BCAST_FULL};
	const kv_elem_op silu = {.op = IR_OP_SILU};
	const kv_elem_op scale = {.op = IR_OP_SCALE, .value = 0.37f};
	const kv_elem_op mul_row = {.op = IR_OP_MUL, .operand = 0, .bcast = KV_BCAST_LASTDIM, .bcast_n = 0};
	const kv_elem_op swiglu_gate = {.op = IR_OP_SWIGLU, .operand = 0, .bcast = KV_BCAST_FULL};
	const kv_elem_op swiglu_up = {.op = IR_OP_SWIGLU, .operand = 1, .bcast = KV_BCAST_FULL};
	mm_case cases[] = {
		/* ragged T and N; K a multiple of 32 */
		{320, 200, 77, 128, false, 1.0f, 0, {{0}}, true},
		{320, 200, 77, 128, true, 1.0f, 2, {add_res, silu}, true},
		/* K % 32 != 0 (a short last step), K % 8 != 0 (element loads) */
		{200, 144, 130, 256, true, 1.0f, 3, {swiglu_up, scale, sub_rev}, true},
		{100, 50, 33, 64, true, 1.0f, 1, {mul_row}, true},
		{77, 33, 9, 16, false, 1.0f, 1, {swiglu_gate}, true},
		/* rows of |x| up to 3e5, past f16's range: the prologue normalises
		 * them before the rounding */
		{256, 96, 40, 64, true, 3e5f, 0, {{0}}, false},
		/* a Qwen3-8B layer at pp512, prologue and residual add, and a
		 * dispatch of fewer rows than the variant's t_max */
		{4096, 4096, 512, 512, true, 1.0f, 1, {add_res}, false},
		{4096, 1024, 100, 512, false, 1.0f, 0, {{0}}, false},
		/* the norm folded into the weights */
		{320, 200, 77, 128, 2, 3e5f, 2, {add_res, silu}, true},
	};
	tally tl = {0};
	kv_desc sd = {.op = IR_OP_MATMUL, .t_max = 512};
	sd.u.matmul.K = 4096;
	sd.u.matmul.N = 1024;
	bool ok = check_space(sd);
	sd.pro = (kv_prologue){.on = true, .eps = 1e-6f, .offset = 1};
	ok &= check_space(sd);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mm_case *c = &cases[i];
		for (int j = 0; j < c->n_epi; j++)
			if (c->epi[j].bcast == KV_BCAST_LASTDIM)
				c->epi[j].bcast_n = c->N;
		ok &= run_case(h, c, &seed, &tl);
	}
	printf("coopmat variants: %d run, %d skipped (%s); tiled fallback: %d run\n", tl.coop_run,
	       tl.coop_skipped,
	       harness_features(h) & HALO_NEED_COOPMAT_NV ? "device has HALO_NEED_COOPMAT_NV"
							   : "device lacks HALO_NEED_COOPMAT_NV",
	       tl.tiled_run);
	ok &= expect("the fallback ran for every case", tl.tiled_run == (int)(sizeof cases / sizeof *cases));
	ok &= expect("coopmat ran wherever the device has it",
		     (harness_features(h) & HALO_NEED_COOPMAT_NV) ? tl.coop_skipped == 0 && tl.coop_run > 0
								 : tl.coop_run == 0 && tl.coop_skipped > 0);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
