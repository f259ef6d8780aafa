/* rms_norm (groups, offset, fused epilogue, unweighted) and softmax against
 * the reference.
 *
 * Tolerance: max |got - want| / max(|want|, floor) <= 1e-5. Each output is one
 * f32 sum of squares (or of exponentials) over <= 300 terms reduced by a tree
 * (f64 in the reference), one square root or division, and one or two
 * products, so the error stays within a few f32 ulps. rms_norm outputs are of
 * order 1 and a fused residual add can cancel them to near 0: floor 0.1.
 * Softmax outputs are of order 1/D: floor 1e-3/D. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL 1e-5

static bool rms_variant(harness *h, const kv_desc *d, int64_t T, const kv_elem_op *epi, uint32_t *seed)
{
	int64_t R = d->u.rms_norm.rows_per_t, D = d->u.rms_norm.D, G = d->u.rms_norm.group;
	int offset = d->u.rms_norm.offset;
	bool weighted = !d->u.rms_norm.unweighted;
	hkernel k;
	if (!hk_build(h, d, &k))
		return false;
	size_t n = (size_t)(T * R * D);
	float *x = alloc_floats(n), *w = alloc_floats((size_t)D), *y = alloc_floats(n);
	float *want = alloc_floats(n), *res = alloc_floats(n);
	fill_random(x, n, 2.0f, seed);
	fill_random(w, (size_t)D, 1.0f, seed);
	fill_random(res, n, 1.0f, seed);
	hop ops[4] = {{x, n * 4, false}, {w, (size_t)D * 4, false}};
	int nops = weighted ? 2 : 1; /* unweighted: no w binding */
	if (epi && epi->op == IR_OP_ADD)
		ops[nops++] = (hop){res, n * 4, false};
	ops[nops++] = (hop){y, n * 4, true};
	bool ok = hk_run(h, &k, ops, nops, (uint32_t)T, 0);
	if (ok) {
		ref_rms_norm(x, weighted ? w : NULL, want, T * R, D, G, 1e-6f, offset);
		if (epi)
			ref_apply_elem(epi, want, res, (int64_t)n);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		ok = check_close(what, y, want, n, TOL, 0.1);
	}
	free(x), free(w), free(y), free(want), free(res);
	hk_free(h, &k);
	return ok;
}

/* Every choice of the descriptor's variant space (kv_variant_space). */
static bool rms_case(harness *h, int64_t T, int64_t R, int64_t D, int64_t G, int offset, bool unweighted,
		     const kv_elem_op *epi, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_RMS_NORM, .t_max = T + 3, .n_epi = epi ? 1 : 0};
	d.u.rms_norm.rows_per_t = R;
	d.u.rms_norm.D = D;
	d.u.rms_norm.group = G;
	d.u.rms_norm.eps = 1e-6f;
	d.u.rms_norm.offset = offset;
	d.u.rms_norm.unweighted = unweighted;
	if (epi)
		d.epi[0] = *epi;
	kv_tiles t[16];
	int n = kv_variant_space(&d, t, 16);
	bool ok = n > 1; /* a width to choose */
	for (int i = 0; i < n; i++) {
		d.tiles = t[i];
		ok &= rms_variant(h, &d, T, epi, seed);
	}
	return ok;
}

static bool softmax_variant(harness *h, const kv_desc *d, int64_t T, uint32_t *seed)
{
	int64_t R = d->u.softmax.rows_per_t, D = d->u.softmax.D;
	hkernel k;
	if (!hk_build(h, d, &k))
		return false;
	size_t n = (size_t)(T * R * D);
	float *x = alloc_floats(n), *y = alloc_floats(n), *want = alloc_floats(n);
	fill_random(x, n, 8.0f, seed);
	hop ops[2] = {{x, n * 4, false}, {y, n * 4, true}};
	bool ok = hk_run(h, &k, ops, 2, (uint32_t)T, 0);
	if (ok) {
		ref_softmax(x, want, T * R, D);
		ok = check_close(k.k.signature, y, want, n, TOL, 1e-3 / (double)D);
	}
	free(x), free(y), free(want);
	hk_free(h, &k);
	return ok;
}

static bool softmax_case(harness *h, int64_t T, int64_t R, int64_t D, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_SOFTMAX, .t_max = T};
	d.u.softmax.rows_per_t = R;
	d.u.softmax.D = D;
	kv_tiles t[16];
	int n = kv_variant_space(&d, t, 16);
	bool ok = n > 1;
	for (int i = 0; i < n; i++) {
		d.tiles = t[i];
		ok &= softmax_variant(h, &d, T, seed);
	}
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 777;
	const kv_elem_op add = {.op = IR_OP_ADD, .bcast = KV_BCAST_FULL};
	const kv_elem_op silu = {.op = IR_OP_SILU};
	bool ok = true;
	ok &= rms_case(h, 3, 1, 64, 0, 1, false, NULL, &seed);
	ok &= rms_case(h, 5, 4, 16, 0, 0, false, NULL, &seed);      /* per-head q/k norm */
	ok &= rms_case(h, 2, 1, 129, 0, 1, false, &silu, &seed);
	ok &= rms_case(h, 1, 3, 300, 100, 0, false, &add, &seed);   /* groups */
	ok &= rms_case(h, 2, 1, 10240, 2560, 1, false, NULL, &seed); /* Qwen3.8 Flash's HC streams */
	ok &= rms_case(h, 7, 1, 1, 0, 1, false, NULL, &seed);
	/* DeepSeek V4's unweighted norms: the mHC input over n*H, per head */
	ok &= rms_case(h, 3, 1, 1024, 0, 0, true, NULL, &seed);
	ok &= rms_case(h, 2, 8, 64, 0, 0, true, &add, &seed);
	ok &= softmax_case(h, 3, 1, 129, &seed);
	ok &= softmax_case(h, 2, 4, 7, &seed);
	ok &= softmax_case(h, 1, 1, 1, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
