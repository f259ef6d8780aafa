/* The grouped matmul (docs/ops.md, `groups`: DeepSeek V4's block-diagonal
 * o_a_proj) on the decode matvec and the tiled prefill kernel against
 * ref_matmul_grouped: the tiny model's shape (x [T,128], w [32,64], g = 2)
 * and V4-Flash's (x [T,64*512], w [8*1024,4096], g = 8) at T = 1..5 and 64,
 * f32 and f16 weights; every variant of the tiny shape's spaces; a ragged
 * shape (K = 37: the scalar loads; 6 columns per group: the builder narrows
 * the column groups and the tile to 2 columns); a fused epilogue; decode
 * batch invariance (rows of a T = 5 dispatch equal five T = 1 dispatches,
 * bitwise).
 *
 * Tolerance: max |got - want| / max(|want|, max(1, K/256)) <= 2e-5. A
 * group's output is an ordinary K-long dot product of terms of magnitude
 * <= 1 (the groups only choose which K inputs it reads), summed in f32, the
 * reference in f64. For K <= 300 that is test_matmul.c's bound. At K = 4096
 * the tiled kernel adds the K products in order in one accumulator: with
 * partial sums of order sqrt(k)/3 its rounding is a random walk of standard
 * deviation about 2^-24 * K / 4.2 (5.8e-5; observed worst 9.8e-5 over 2^19
 * outputs), so the floor there is K/256 = 16, an allowance of 3.2e-4 (about
 * 5.5 standard deviations). The matvec's K split sums shorter runs. f16
 * weights are rounded first, so both sides see the same weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL 2e-5

typedef struct {
	int64_t K, N, g, t_max;
	halo_dtype wtype;
	bool epi; /* a residual add fused after the matmul */
} gm_case;

static kv_desc gm_desc(const gm_case *c)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = c->t_max, .wtype = c->wtype};
	d.u.matmul.K = c->K;
	d.u.matmul.N = c->N;
	d.u.matmul.groups = c->g;
	if (c->epi) {
		d.n_epi = 1;
		d.epi[0] = (kv_elem_op){.op = IR_OP_ADD, .bcast = KV_BCAST_FULL};
	}
	return d;
}

/* Random x [T, g*K], w [N, K] (rounded to f16 for f16 weights, bits in w16)
 * and the epilogue's residual [T, N]. */
typedef struct {
	float *x, *w, *res;
	uint16_t *w16;
} gm_data;

static gm_data gm_fill(const gm_case *c, int64_t T, uint32_t *seed)
{
	size_t nx = (size_t)(T * c->g * c->K), nw = (size_t)(c->N * c->K);
	gm_data a = {alloc_floats(nx), alloc_floats(nw), alloc_floats((size_t)(T * c->N)), calloc(nw, 2)};
	if (!a.w16) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	fill_random(a.x, nx, 1.0f, seed);
	fill_random(a.w, nw, 1.0f, seed);
	fill_random(a.res, (size_t)(T * c->N), 1.0f, seed);
	if (c->wtype == HALO_F16)
		round_f16(a.w, a.w16, nw);
	return a;
}

static void gm_free(gm_data *a)
{
	free(a->x), free(a->w), free(a->res), free(a->w16);
}

/* One dispatch of T rows: x rows from row r0 of a, y [T, N]. */
static bool gm_run(harness *h, hkernel *k, const gm_case *c, const gm_data *a, int64_t r0, int64_t T, float *y)
{
	size_t nw = (size_t)(c->N * c->K), row = (size_t)(c->g * c->K);
	hop ops[4];
	int n = 0;
	ops[n++] = (hop){a->x + r0 * (int64_t)row, (size_t)T * row * 4, false};
	ops[n++] = c->wtype == HALO_F16 ? (hop){a->w16, nw * 2, false} : (hop){a->w, nw * 4, false};
	if (c->epi)
		ops[n++] = (hop){a->res + r0 * c->N, (size_t)(T * c->N) * 4, false};
	ops[n++] = (hop){y, (size_t)(T * c->N) * 4, true};
	return hk_run(h, k, ops, n, (uint32_t)T, 0);
}

static bool gm_variant(harness *h, const gm_case *c, const kv_desc *d, int64_t T, uint32_t *seed)
{
	hkernel k;
	if (!hk_build(h, d, &k))
		return false;
	if (!hk_supported(h, &k.k)) {
		printf("skip (the device lacks what it needs): %s\n", k.k.signature);
		hk_free(h, &k);
		return true;
	}
	gm_data a = gm_fill(c, T, seed);
	float *y = alloc_floats((size_t)(T * c->N)), *want = alloc_floats((size_t)(T * c->N));
	bool ok = gm_run(h, &k, c, &a, 0, T, y);
	if (ok) {
		ref_matmul_grouped(a.x, a.w, want, T, c->K, c->N, c->g);
		if (c->epi)
			for (int64_t i = 0; i < T * c->N; i++)
				want[i] += a.res[i];
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		ok = check_close(what, y, want, (size_t)(T * c->N), TOL, c->K > 256 ? (double)c->K / 256.0 : 1.0);
	}
	gm_free(&a);
	free(y), free(want);
	hk_free(h, &k);
	return ok;
}

/* The heuristic's variant or, with all, every choice of the space. */
static bool gm_case_run(harness *h, const gm_case *c, int64_t T, bool all, uint32_t *seed)
{
	kv_desc d = gm_desc(c);
	kv_tiles t[16];
	int n = all ? kv_variant_space(&d, t, 16) : 1;
	bool ok = n > 0;
	for (int i = 0; i < n; i++) {
		d.tiles = all ? t[i] : (kv_tiles){0};
		ok &= gm_variant(h, c, &d, T, seed);
	}
	return ok;
}

/* Rows of one T = m decode dispatch equal m one-row dispatches, bitwise. */
static bool gm_invariance(harness *h, const gm_case *c, int64_t m, uint32_t *seed)
{
	kv_desc d = gm_desc(c);
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	gm_data a = gm_fill(c, m, seed);
	float *yb = alloc_floats((size_t)(m * c->N)), *y1 = alloc_floats((size_t)(m * c->N));
	bool ok = gm_run(h, &k, c, &a, 0, m, yb);
	for (int64_t t = 0; ok && t < m; t++)
		ok = gm_run(h, &k, c, &a, t, 1, y1 + t * c->N);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single rows", k.k.signature, (long long)m);
	ok = ok && check_bitwise(what, yb, y1, (size_t)(m * c->N));
	gm_free(&a);
	free(yb), free(y1);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 2718;
	bool ok = true;
	static const halo_dtype types[] = {HALO_F32, HALO_F16};
	for (int i = 0; i < 2; i++) {
		gm_case tiny = {64, 32, 2, 8, types[i], false}, tiny_pre = {64, 32, 2, 64, types[i], false};
		gm_case flash = {4096, 8192, 8, 8, types[i], false}, flash_pre = {4096, 8192, 8, 64, types[i], false};
		for (int64_t T = 1; T <= 5; T++) {
			ok &= gm_case_run(h, &tiny, T, T == 5, &seed);
			ok &= gm_case_run(h, &flash, T, false, &seed);
		}
		ok &= gm_case_run(h, &tiny_pre, 64, true, &seed);
		ok &= gm_case_run(h, &flash_pre, 64, false, &seed);
		ok &= gm_invariance(h, &tiny, 5, &seed);
	}
	/* ragged: scalar loads, 6 columns per group; a fused residual add */
	gm_case ragged = {37, 18, 3, 8, HALO_F32, true}, ragged_pre = {37, 18, 3, 64, HALO_F16, true};
	ok &= gm_case_run(h, &ragged, 5, true, &seed);
	ok &= gm_case_run(h, &ragged_pre, 33, true, &seed);
	ok &= gm_invariance(h, &ragged, 5, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
