/* matvec (T <= 8 rows) and tiled matmul (more) against ref_matmul: f32 and
 * f16 weights, fused rms_norm prologue (with its weight, or folded into the
 * matrix), fused epilogue chains, several rows
 * per token (the hyper-connection streams' a*T rows), and batch invariance
 * of the decode kernel.
 *
 * Tolerance: max |got - want| / max(|want|, 1) <= 2e-5. The kernels sum K <= 4096
 * products of magnitude <= 1 in f32 (the reference in f64); with |want| of
 * order sqrt(K)/3 the f32 rounding stays near 1e-6, and the fused prologue
 * adds a few f32 roundings of the norm scale. f16 weights are rounded first,
 * so both sides see the same weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL 2e-5

/* The fused prologue: none, rms_norm with its weight (offset 1), or one
 * whose weight is folded into the matrix (the test's w stands for the
 * folded matrix: the kernel only normalises). */
enum { PRO_NONE, PRO_W, PRO_FOLDED };

static kv_prologue prologue(int pro)
{
	return (kv_prologue){.on = pro != PRO_NONE, .folded = pro == PRO_FOLDED, .eps = 1e-6f, .offset = pro == PRO_W};
}

typedef struct {
	int64_t K, N, T, t_max;
	halo_dtype wtype;
	int pro; /* a PRO_* */
	int n_epi;
	kv_elem_op epi[KV_MAX_EPILOGUE];
	int64_t rpt; /* rows per token, 0 = 1 */
} mm_case;

/* The rows of a case's step: T tokens of rpt rows each. */
static int64_t rows_of(const mm_case *c)
{
	return c->T * (c->rpt ? c->rpt : 1);
}

static size_t epi_numel(const kv_elem_op *e, int64_t T, int64_t N)
{
	if (e->bcast == KV_BCAST_TRAILING || e->bcast == KV_BCAST_LASTDIM)
		return (size_t)(e->bcast == KV_BCAST_TRAILING ? e->bcast_n : T * N / e->bcast_n);
	return (size_t)(T * N);
}

/* The reference: [rms_norm] -> matmul -> epilogue chain. */
static void reference(const mm_case *c, const float *x, const float *w, const float *nw,
		      float **extra, float *y)
{
	int64_t R = rows_of(c);
	float *xin = alloc_floats((size_t)(R * c->K));
	if (c->pro)
		ref_rms_norm(x, c->pro == PRO_W ? nw : NULL, xin, R, c->K, 0, 1e-6f, 1);
	else
		memcpy(xin, x, (size_t)(R * c->K) * sizeof *x);
	ref_matmul(xin, w, y, R, c->K, c->N);
	for (int j = 0; j < c->n_epi; j++)
		ref_apply_elem(&c->epi[j], y, extra[j], R * c->N);
	free(xin);
}

static bool run_variant(harness *h, const mm_case *c, const kv_desc *d, uint32_t *seed)
{
	hkernel k;
	if (!hk_build(h, d, &k))
		return false;
	if (k.k.needs & HALO_NEED_COOPMAT_NV) { /* f16 products: its tolerance is derived there */
		printf("skip (test_kernels_matmul_coopmat checks it): %s\n", k.k.signature);
		hk_free(h, &k);
		return true;
	}
	if (!hk_supported(h, &k.k)) {
		printf("skip (the device lacks what it needs): %s\n", k.k.signature);
		hk_free(h, &k);
		return true;
	}
	int64_t R = rows_of(c);
	size_t nx = (size_t)(R * c->K), nw = (size_t)(c->N * c->K), ny = (size_t)(R * c->N);
	float *x = alloc_floats(nx), *w = alloc_floats(nw), *nwt = alloc_floats((size_t)c->K);
	float *y = alloc_floats(ny), *want = alloc_floats(ny);
	uint16_t *w16 = calloc(nw + 1, sizeof *w16);
	float *extra[KV_MAX_EPILOGUE] = {0};
	fill_random(x, nx, 1.0f, seed);
	fill_random(w, nw, 1.0f, seed);
	fill_random(nwt, (size_t)c->K, 0.5f, seed);
	if (c->wtype == HALO_F16)
		round_f16(w, w16, nw);
	hop ops[3 + KV_MAX_EPILOGUE];
	int n = 0;
	ops[n++] = (hop){x, nx * 4, false};
	ops[n++] = c->wtype == HALO_F16 ? (hop){w16, nw * 2, false} : (hop){w, nw * 4, false};
	if (c->pro == PRO_W)
		ops[n++] = (hop){nwt, (size_t)c->K * 4, false};
	for (int j = 0; j < c->n_epi; j++) {
		if (c->epi[j].op != IR_OP_ADD && c->epi[j].op != IR_OP_SUB && c->epi[j].op != IR_OP_MUL &&
		    c->epi[j].op != IR_OP_SWIGLU)
			continue;
		size_t ne = epi_numel(&c->epi[j], R, c->N);
		extra[j] = alloc_floats(ne);
		fill_random(extra[j], ne, 1.0f, seed);
		ops[n++] = (hop){extra[j], ne * 4, false};
	}
	ops[n++] = (hop){y, ny * 4, true};
	bool ok = hk_run(h, &k, ops, n, (uint32_t)c->T, 0);
	if (ok) {
		reference(c, x, w, nwt, extra, want);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)c->T);
		ok = check_close(what, y, want, ny, TOL, 1.0);
	}
	for (int j = 0; j < KV_MAX_EPILOGUE; j++)
		free(extra[j]);
	free(x), free(w), free(nwt), free(y), free(want), free(w16);
	hk_free(h, &k);
	return ok;
}

/* The heuristic's variant or, with all, every choice of the descriptor's
 * variant space (kv_variant_space). */
static bool run_case(harness *h, const mm_case *c, bool all, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = c->t_max, .wtype = c->wtype,
		     .pro = prologue(c->pro), .n_epi = c->n_epi};
	d.u.matmul.K = c->K;
	d.u.matmul.N = c->N;
	d.u.matmul.rows_per_t = c->rpt;
	memcpy(d.epi, c->epi, sizeof d.epi);
	kv_tiles t[16];
	int n = all ? kv_variant_space(&d, t, 16) : 1;
	bool ok = n > 0;
	for (int i = 0; i < n; i++) {
		d.tiles = all ? t[i] : (kv_tiles){0};
		ok &= run_variant(h, c, &d, seed);
	}
	return ok;
}

/* Decode batch invariance: rows of one T=m dispatch equal m T=1 dispatches
 * bitwise, for the decode kernel with tiles t. */
static bool batch_invariance(harness *h, int64_t K, int64_t N, halo_dtype wtype, int pro, kv_tiles tiles,
			     uint32_t *seed)
{
	const int64_t m = 5;
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = 8, .wtype = wtype, .pro = prologue(pro), .tiles = tiles};
	d.u.matmul.K = K;
	d.u.matmul.N = N;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	if (!hk_supported(h, &k.k)) {
		hk_free(h, &k);
		return true;
	}
	float *x = alloc_floats((size_t)(m * K)), *w = alloc_floats((size_t)(N * K));
	float *nw = alloc_floats((size_t)K), *yb = alloc_floats((size_t)(m * N));
	float *y1 = alloc_floats((size_t)(m * N));
	uint16_t *w16 = calloc((size_t)(N * K), sizeof *w16);
	fill_random(x, (size_t)(m * K), 1.0f, seed);
	fill_random(w, (size_t)(N * K), 1.0f, seed);
	fill_random(nw, (size_t)K, 0.5f, seed);
	round_f16(w, w16, (size_t)(N * K));
	hop wop = wtype == HALO_F16 ? (hop){w16, (size_t)(N * K) * 2, false}
				    : (hop){w, (size_t)(N * K) * 4, false};
	hop ops[4];
	int n = 0;
	ops[n++] = (hop){x, (size_t)(m * K) * 4, false};
	ops[n++] = wop;
	if (pro == PRO_W)
		ops[n++] = (hop){nw, (size_t)K * 4, false};
	ops[n++] = (hop){yb, (size_t)(m * N) * 4, true};
	bool ok = hk_run(h, &k, ops, n, (uint32_t)m, 0);
	for (int64_t t = 0; ok && t < m; t++) {
		ops[0] = (hop){x + t * K, (size_t)K * 4, false};
		ops[n - 1] = (hop){y1 + t * N, (size_t)N * 4, true};
		ok = hk_run(h, &k, ops, n, 1, 0);
	}
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld vs %lld x T=1", k.k.signature,
		 (long long)m, (long long)m);
	ok = ok && check_bitwise(what, yb, y1, (size_t)(m * N));
	free(x), free(w), free(nw), free(yb), free(y1), free(w16);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 12345;
	const kv_elem_op add_res = {.op = IR_OP_ADD, .operand = 0, .bcast = KV_BCAST_FULL};
	const kv_elem_op sub_rev = {.op = IR_OP_SUB, .operand = 1, .bcast = KV_BCAST_FULL};
	const kv_elem_op silu = {.op = IR_OP_SILU};
	const kv_elem_op scale = {.op = IR_OP_SCALE, .value = 0.37f};
	const kv_elem_op mul_row = {.op = IR_OP_MUL, .operand = 0, .bcast = KV_BCAST_LASTDIM, .bcast_n = 0};
	const kv_elem_op swiglu_up = {.op = IR_OP_SWIGLU, .operand = 1, .bcast = KV_BCAST_FULL};
	mm_case cases[] = {
		{64, 96, 1, 8, HALO_F32, false, 0, {{0}}, 0},
		{64, 96, 3, 8, HALO_F32, false, 0, {{0}}, 0},
		{64, 96, 8, 8, HALO_F32, false, 0, {{0}}, 0},
		{7, 1, 2, 4, HALO_F32, false, 0, {{0}}, 0},
		{129, 7, 5, 8, HALO_F32, false, 0, {{0}}, 0},
		{130, 33, 4, 8, HALO_F16, false, 0, {{0}}, 0},
		{129, 65, 3, 8, HALO_F32, true, 2, {add_res, silu}, 0},
		{64, 48, 2, 8, HALO_F16, true, 3, {swiglu_up, scale, sub_rev}, 0},
		{4096, 40, 3, 8, HALO_F16, true, 2, {add_res, silu}, 0},
		{1000, 300, 8, 8, HALO_F32, true, 0, {{0}}, 0},
		{2560, 777, 1, 8, HALO_F16, false, 1, {mul_row}, 0},
		{64, 96, 37, 64, HALO_F32, false, 0, {{0}}, 0},
		{129, 7, 9, 16, HALO_F32, false, 0, {{0}}, 0},
		{7, 129, 40, 64, HALO_F16, false, 0, {{0}}, 0},
		{300, 70, 33, 64, HALO_F32, true, 2, {add_res, silu}, 0},
		{96, 40, 19, 32, HALO_F16, true, 2, {mul_row, swiglu_up}, 0},
		/* several rows per token: matvec (4 x 2 rows), tiled (3 x 8) */
		{64, 96, 2, 2, HALO_F32, false, 0, {{0}}, 4},
		{130, 33, 1, 2, HALO_F16, true, 1, {add_res}, 4},
		{129, 7, 7, 8, HALO_F32, true, 2, {add_res, silu}, 3},
		/* the norm folded into the weights: matvec, tiled */
		{4096, 40, 3, 8, HALO_F16, PRO_FOLDED, 2, {add_res, silu}, 0},
		{129, 65, 3, 8, HALO_F32, PRO_FOLDED, 0, {{0}}, 0},
		{300, 70, 33, 64, HALO_F32, PRO_FOLDED, 1, {add_res}, 0},
	};
	bool ok = true;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		mm_case *c = &cases[i];
		for (int j = 0; j < c->n_epi; j++)
			if (c->epi[j].bcast == KV_BCAST_LASTDIM)
				c->epi[j].bcast_n = c->N;
		/* Every variant where the space matters (long K, ragged K, fused
		 * chains, prefill); lavapipe compiles each in about a second. */
		bool all = c->t_max > KV_MATVEC_MAX_T || c->K >= 1000 || c->n_epi >= 2 || c->rpt > 1;
		ok &= run_case(h, c, all, &seed);
	}
	/* Batch invariance: the heuristic on a ragged scalar shape, and every
	 * decode variant of a long-K vectorised one whose split spans subgroups. */
	ok &= batch_invariance(h, 131, 37, HALO_F32, false, (kv_tiles){0}, &seed);
	ok &= batch_invariance(h, 131, 37, HALO_F16, PRO_W, (kv_tiles){0}, &seed);
	ok &= batch_invariance(h, 131, 37, HALO_F16, PRO_FOLDED, (kv_tiles){0}, &seed);
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = 8, .wtype = HALO_F16, .pro = prologue(PRO_W)};
	d.u.matmul.K = 2048;
	d.u.matmul.N = 24;
	kv_tiles t[16];
	int n = kv_variant_space(&d, t, 16);
	for (int i = 0; i < n; i++)
		ok &= batch_invariance(h, 2048, 24, HALO_F16, PRO_W, t[i], &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
