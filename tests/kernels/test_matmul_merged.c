/* Merged sibling matmuls (passes/merge_matmuls.c; kernels/vulkan/matmul_out.glsl)
 * on the matvec and tiled matmul kernels:
 *  - split: one matmul over the rows of 2-4 weights writes each part's
 *    columns to its own result;
 *  - pair: over (gate, up) rows interleaved, one result silu(gate) * up,
 *    then the rest of the epilogue chain.
 * Each against the reference (ref_matmul per part, ref_matmul_pair), with
 * test_matmul.c's tolerance and reasoning (2e-5 relative to max(|want|, 1):
 * f32 sums of K <= 4096 products against f64); a pair's value is a product
 * of two such sums (|gate|, |up| up to ~4 here), which multiplies their
 * rounding by the other factor: 6e-5. And bitwise against the same
 * kernel variant (the merged kernel's tiles) run on each part alone: a
 * column's sums do not depend on the columns beside it, so merging may only
 * change results through the tiles a wider N picks. The cooperative-matrix
 * kernel is skipped where the device lacks it (lavapipe); where it runs, it
 * rounds x' to f16 before its products, and the check takes
 * test_matmul_coopmat.c's derived bound element by element: 8 u s with
 * u = 2^-11 and s = sqrt(sum_k (x'_k w_k)^2) of the output's row, plus 2e-5
 * max(|want|, 1); for a pair, silu(g) * u passes the errors of g and u on
 * scaled by |u silu'(g)| and |silu(g)|, so its bound is 8 u (|u silu'(g)| s_g
 * + |silu(g)| s_u) plus 6e-5 max(|want|, 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL 2e-5
#define TOL_PAIR 6e-5
#define U_F16 (1.0 / 2048.0)

typedef struct {
	int64_t K, T, t_max;
	int n;               /* parts */
	int64_t rows[KV_MAX_SPLIT];
	bool pair;           /* n == 2: gate, up */
	halo_dtype wtype;
	bool pro;            /* the rms_norm prologue, with its weight */
	bool residual;       /* pair: an add epilogue after the swiglu */
} merged_case;

typedef struct {
	int64_t R, N, NO;    /* rows of x, weight rows, output columns */
	float *x, *w, *nw, *res;
	uint16_t *w16;
	float *y[KV_MAX_SPLIT];
} bufs;

static kv_desc desc_of(const merged_case *c, int64_t N, int n_split, bool pair, bool residual)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = c->t_max, .wtype = c->wtype,
		     .pro = {.on = c->pro, .eps = 1e-6f, .offset = 1}};
	d.u.matmul.K = c->K;
	d.u.matmul.N = N;
	d.u.matmul.pair = pair;
	d.u.matmul.n_split = n_split;
	for (int i = 0; i < n_split; i++)
		d.u.matmul.split[i] = c->rows[i];
	if (residual) {
		d.n_epi = 1;
		d.epi[0] = (kv_elem_op){.op = IR_OP_ADD, .operand = 0, .bcast = KV_BCAST_FULL};
	}
	return d;
}

/* Runs kernel k on x and weight rows w16/w (N of them), writing n_y results. */
static bool run(harness *h, hkernel *k, const merged_case *c, const bufs *b, const float *w, const uint16_t *w16,
		int64_t N, const float *res, float **y, const int64_t *y_cols, int n_y)
{
	hop ops[4 + KV_MAX_SPLIT];
	int n = 0;
	ops[n++] = (hop){b->x, (size_t)(b->R * c->K) * 4, false};
	ops[n++] = c->wtype == HALO_F16 ? (hop){(void *)w16, (size_t)(N * c->K) * 2, false}
					: (hop){(void *)w, (size_t)(N * c->K) * 4, false};
	if (c->pro)
		ops[n++] = (hop){b->nw, (size_t)c->K * 4, false};
	if (res)
		ops[n++] = (hop){(void *)res, (size_t)(b->R * b->NO) * 4, false};
	for (int i = 0; i < n_y; i++)
		ops[n++] = (hop){y[i], (size_t)(b->R * y_cols[i]) * 4, true};
	return hk_run(h, k, ops, n, (uint32_t)c->T, 0);
}

/* The parts' weights as the merged matrix holds them: rows one after
 * another, or a pair's interleaved (gate n at 2n, up n at 2n + 1). */
static void merge_rows(const merged_case *c, const float *parts, float *merged)
{
	int64_t K = c->K, rows = c->rows[0];
	if (!c->pair) {
		int64_t n = 0;
		for (int i = 0; i < c->n; i++)
			n += c->rows[i];
		memcpy(merged, parts, (size_t)(n * K) * sizeof *parts);
		return;
	}
	for (int64_t r = 0; r < 2 * rows; r++)
		memcpy(merged + ((r % rows) * 2 + r / rows) * K, parts + r * K, (size_t)K * sizeof *parts);
}

/* sqrt(sum_k (x'_k w_k)^2) for row t of x' and weight row r. */
static double row_s(const float *xin, const float *w, int64_t K, int64_t t, int64_t r)
{
	double s = 0.0;
	for (int64_t k = 0; k < K; k++) {
		double p = (double)xin[t * K + k] * w[r * K + k];
		s += p * p;
	}
	return sqrt(s);
}

static double silu_d(double g)
{
	double sg = 1.0 / (1.0 + exp(-g));
	return sg * (1.0 + g * (1.0 - sg));
}

/* The cooperative-matrix kernel's bound (the header), element by element. */
static bool check_coopmat(const merged_case *c, const bufs *b, const float *xin, const float *merged,
			  const char *sig)
{
	double worst = 0.0;
	int64_t at = 0, n_out = c->pair ? 1 : c->n;
	bool ok = true;
	for (int i = 0, first = 0; i < n_out; first += (int)c->rows[i], i++) {
		int64_t cols = c->pair ? b->NO : c->rows[i];
		float *want = alloc_floats((size_t)(b->R * cols));
		if (c->pair)
			ref_matmul_pair(xin, merged, want, b->R, c->K, b->NO);
		else
			ref_matmul(xin, merged + first * c->K, want, b->R, c->K, cols);
		for (int64_t e = 0; e < b->R * cols; e++) {
			int64_t t = e / cols, n = e % cols;
			double bound;
			if (c->pair) {
				double g = 0.0, u = 0.0;
				for (int64_t k = 0; k < c->K; k++) {
					g += (double)xin[t * c->K + k] * merged[2 * n * c->K + k];
					u += (double)xin[t * c->K + k] * merged[(2 * n + 1) * c->K + k];
				}
				double silu = g / (1.0 + exp(-g));
				bound = 8 * U_F16 * (fabs(u * silu_d(g)) * row_s(xin, merged, c->K, t, 2 * n) +
						     fabs(silu) * row_s(xin, merged, c->K, t, 2 * n + 1)) +
					TOL_PAIR * fmax(fabs((double)want[e]), 1.0);
				if (c->residual)
					want[e] += b->res[e];
			} else {
				bound = 8 * U_F16 * row_s(xin, merged, c->K, t, first + n) +
					TOL * fmax(fabs((double)want[e]), 1.0);
			}
			double r = fabs((double)b->y[i][e] - want[e]) / bound;
			if (!(r <= worst)) {
				worst = r;
				at = e;
			}
		}
		ok &= worst <= 1.0;
		printf("%s %s T=%lld result %d (coopmat bound): max err / bound %.3g at %lld\n", worst <= 1.0 ? "ok  " : "FAIL",
		       sig, (long long)c->T, i, worst, (long long)at);
		free(want);
	}
	return ok;
}

static bool check_reference(const merged_case *c, const bufs *b, const float *parts, const float *merged,
			    const char *sig, double tol, bool coopmat)
{
	float *xin = alloc_floats((size_t)(b->R * c->K));
	if (c->pro)
		ref_rms_norm(b->x, b->nw, xin, b->R, c->K, 0, 1e-6f, 1);
	else
		memcpy(xin, b->x, (size_t)(b->R * c->K) * 4);
	if (coopmat) {
		bool ok = check_coopmat(c, b, xin, merged, sig);
		free(xin);
		return ok;
	}
	bool ok = true;
	char what[512];
	if (c->pair) {
		float *want = alloc_floats((size_t)(b->R * b->NO));
		ref_matmul_pair(xin, merged, want, b->R, c->K, b->NO);
		if (c->residual)
			for (int64_t i = 0; i < b->R * b->NO; i++)
				want[i] += b->res[i];
		snprintf(what, sizeof what, "%s T=%lld vs ref_matmul_pair", sig, (long long)c->T);
		ok = check_close(what, b->y[0], want, (size_t)(b->R * b->NO), tol, 1.0);
		free(want);
	}
	for (int i = 0, at = 0; !c->pair && i < c->n; at += (int)c->rows[i], i++) {
		float *want = alloc_floats((size_t)(b->R * c->rows[i]));
		ref_matmul(xin, parts + at * c->K, want, b->R, c->K, c->rows[i]);
		snprintf(what, sizeof what, "%s T=%lld result %d vs ref_matmul", sig, (long long)c->T, i);
		ok &= check_close(what, b->y[i], want, (size_t)(b->R * c->rows[i]), tol, 1.0);
		free(want);
	}
	free(xin);
	return ok;
}

/* Each part alone with the merged kernel's tiles: a split's results, or the
 * gate's result fed to the up's swiglu epilogue, equal bitwise. */
static bool check_unmerged(harness *h, const merged_case *c, const bufs *b, kv_tiles tiles, const float *parts,
			   const uint16_t *parts16, const char *sig)
{
	bool ok = true;
	float *gate = c->pair ? alloc_floats((size_t)(b->R * c->rows[0])) : NULL;
	for (int i = 0, at = 0; ok && i < c->n; at += (int)c->rows[i], i++) {
		bool up = c->pair && i == 1;
		kv_desc d = desc_of(c, c->rows[i], 0, false, false);
		d.tiles = tiles;
		d.tiles.cols = 0; /* columns per group never change a column's sums */
		if (up) {
			d.epi[d.n_epi++] = (kv_elem_op){.op = IR_OP_SWIGLU, .operand = 1, .bcast = KV_BCAST_FULL};
			if (c->residual)
				d.epi[d.n_epi++] = (kv_elem_op){.op = IR_OP_ADD, .operand = 0, .bcast = KV_BCAST_FULL};
		}
		hkernel k;
		if (!hk_build(h, &d, &k))
			return false;
		float *y = alloc_floats((size_t)(b->R * c->rows[i]));
		hop ops[6];
		int n = 0;
		ops[n++] = (hop){b->x, (size_t)(b->R * c->K) * 4, false};
		ops[n++] = c->wtype == HALO_F16 ? (hop){(void *)(parts16 + at * c->K), (size_t)(c->rows[i] * c->K) * 2, false}
						: (hop){(void *)(parts + at * c->K), (size_t)(c->rows[i] * c->K) * 4, false};
		if (c->pro)
			ops[n++] = (hop){b->nw, (size_t)c->K * 4, false};
		if (up)
			ops[n++] = (hop){gate, (size_t)(b->R * c->rows[0]) * 4, false};
		if (up && c->residual)
			ops[n++] = (hop){b->res, (size_t)(b->R * b->NO) * 4, false};
		ops[n++] = (hop){c->pair && !up ? gate : y, (size_t)(b->R * c->rows[i]) * 4, true};
		ok = hk_run(h, &k, ops, n, (uint32_t)c->T, 0);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld part %d vs the part alone (%s)", sig, (long long)c->T, i,
			 k.k.signature);
		if (ok && (!c->pair || up))
			ok = check_bitwise(what, b->y[c->pair ? 0 : i], y, (size_t)(b->R * c->rows[i]));
		free(y);
		hk_free(h, &k);
	}
	free(gate);
	return ok;
}

static bool run_variant(harness *h, const merged_case *c, kv_tiles tiles, uint32_t *seed)
{
	bufs b = {.R = c->T};
	for (int i = 0; i < c->n; i++)
		b.N += c->rows[i];
	b.NO = c->pair ? c->rows[0] : b.N;
	kv_desc d = desc_of(c, b.N, c->pair ? 0 : c->n, c->pair, c->residual);
	d.tiles = tiles;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	if (!hk_supported(h, &k.k)) {
		printf("skip (the device lacks what it needs): %s\n", k.k.signature);
		hk_free(h, &k);
		return true;
	}
	bool coopmat = (k.k.needs & HALO_NEED_COOPMAT_NV) != 0;
	size_t nw = (size_t)(b.N * c->K);
	float *parts = alloc_floats(nw), *merged = alloc_floats(nw);
	uint16_t *parts16 = calloc(nw + 1, 2), *merged16 = calloc(nw + 1, 2);
	b.x = alloc_floats((size_t)(b.R * c->K));
	b.nw = alloc_floats((size_t)c->K);
	b.res = alloc_floats((size_t)(b.R * b.NO));
	fill_random(b.x, (size_t)(b.R * c->K), 1.0f, seed);
	fill_random(parts, nw, 1.0f, seed);
	fill_random(b.nw, (size_t)c->K, 0.5f, seed);
	fill_random(b.res, (size_t)(b.R * b.NO), 1.0f, seed);
	if (c->wtype == HALO_F16)
		round_f16(parts, parts16, nw);
	merge_rows(c, parts, merged);
	if (c->wtype == HALO_F16)
		round_f16(merged, merged16, nw);
	int64_t cols[KV_MAX_SPLIT];
	int n_y = c->pair ? 1 : c->n;
	for (int i = 0; i < n_y; i++) {
		cols[i] = c->pair ? b.NO : c->rows[i];
		b.y[i] = alloc_floats((size_t)(b.R * cols[i]));
	}
	bool ok = run(h, &k, c, &b, merged, merged16, b.N, c->residual ? b.res : NULL, b.y, cols, n_y);
	ok = ok && check_reference(c, &b, parts, merged, k.k.signature, c->pair ? TOL_PAIR : TOL, coopmat);
	if (ok && !coopmat)
		ok = check_unmerged(h, c, &b, tiles, parts, parts16, k.k.signature);
	for (int i = 0; i < n_y; i++)
		free(b.y[i]);
	free(parts), free(merged), free(parts16), free(merged16), free(b.x), free(b.nw), free(b.res);
	hk_free(h, &k);
	return ok;
}

/* Every variant of the case's space (the heuristic's first): the prefill
 * space holds the cooperative-matrix tiles where f16 weights allow them. */
static bool run_case(harness *h, const merged_case *c, uint32_t *seed)
{
	int64_t N = 0;
	for (int i = 0; i < c->n; i++)
		N += c->rows[i];
	kv_desc d = desc_of(c, N, c->pair ? 0 : c->n, c->pair, c->residual);
	kv_tiles t[8];
	int n = kv_variant_space(&d, t, c->t_max > KV_MATVEC_MAX_T ? 8 : 1);
	bool ok = n > 0;
	for (int i = 0; i < n; i++)
		ok &= run_variant(h, c, t[i], seed);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 777;
	const merged_case cases[] = {
		/* q, k, v of a decode step (matvec), f16 and f32, with and without the prologue */
		{256, 1, 8, 3, {128, 64, 64}, false, HALO_F16, true, false},
		{256, 5, 8, 3, {128, 64, 64}, false, HALO_F16, true, false},
		{130, 3, 8, 2, {96, 33}, false, HALO_F32, false, false},
		{64, 8, 8, 4, {16, 16, 32, 8}, false, HALO_F32, true, false},
		/* gate and up: matvec, then the residual after the swiglu */
		{256, 1, 8, 2, {96, 96}, true, HALO_F16, true, false},
		{256, 4, 8, 2, {96, 96}, true, HALO_F16, true, true},
		{129, 7, 8, 2, {33, 33}, true, HALO_F32, false, false},
		/* prefill: the tiled kernel (f32) or the cooperative-matrix one (f16) */
		{96, 37, 64, 3, {64, 32, 32}, false, HALO_F32, true, false},
		{96, 37, 64, 2, {40, 40}, true, HALO_F32, true, true},
		{128, 70, 128, 3, {128, 64, 64}, false, HALO_F16, true, false},
		{128, 70, 128, 2, {96, 96}, true, HALO_F16, true, false},
	};
	bool ok = true;
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
		ok &= run_case(h, &cases[i], &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
