/* l2_norm and gated_rms_norm against the reference, with and without a fused
 * epilogue, at several row counts and odd D.
 *
 * Tolerance: max |got - want| / max(|want|, floor) <= 1e-5. Each output is
 * one f32 sum of squares over <= 300 terms reduced by a fixed tree (f64 in
 * the reference), one square root and division, and up to three products
 * (silu's exp adds a few ulps), so the error stays within a few f32 ulps of
 * the output. Inputs are never 0, so without an epilogue the error is purely
 * relative (floor 1e-6); a fused residual add can cancel an output to near 0:
 * floor 0.1 there, as in test_norm. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL 1e-5

static bool norm_case(harness *h, bool gated, int64_t T, int64_t R, int64_t D,
		      const kv_elem_op *epi, uint32_t *seed)
{
	const float eps = 1e-6f;
	kv_desc d = {.op = gated ? IR_OP_GATED_RMS_NORM : IR_OP_L2_NORM, .t_max = T + 2,
		     .n_epi = epi ? 1 : 0};
	d.u.norm.rows_per_t = R;
	d.u.norm.D = D;
	d.u.norm.eps = eps;
	if (epi)
		d.epi[0] = *epi;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	size_t n = (size_t)(T * R * D);
	float *x = alloc_floats(n), *z = alloc_floats(n), *w = alloc_floats((size_t)D);
	float *res = alloc_floats(n), *y = alloc_floats(n), *want = alloc_floats(n);
	fill_random(x, n, 2.0f, seed);
	fill_random(z, n, 3.0f, seed);
	fill_random(w, (size_t)D, 1.0f, seed);
	fill_random(res, n, 1.0f, seed);
	hop ops[5] = {{x, n * 4, false}};
	int nops = 1;
	if (gated) {
		ops[nops++] = (hop){z, n * 4, false};
		ops[nops++] = (hop){w, (size_t)D * 4, false};
	}
	if (epi && epi->op == IR_OP_ADD)
		ops[nops++] = (hop){res, n * 4, false};
	ops[nops++] = (hop){y, n * 4, true};
	bool ok = hk_run(h, &k, ops, nops, (uint32_t)T, 0);
	if (ok) {
		if (gated)
			ref_gated_rms_norm(x, z, w, want, T * R, D, eps);
		else
			ref_l2_norm(x, want, T * R, D, eps);
		if (epi)
			ref_apply_elem(epi, want, res, (int64_t)n);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		ok = check_close(what, y, want, n, TOL, epi && epi->op == IR_OP_ADD ? 0.1 : 1e-6);
	}
	free(x), free(z), free(w), free(res), free(y), free(want);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 9001;
	const kv_elem_op add = {.op = IR_OP_ADD, .bcast = KV_BCAST_FULL};
	const kv_elem_op scale = {.op = IR_OP_SCALE, .value = 0.375f};
	bool ok = true;
	ok &= norm_case(h, false, 3, 4, 16, NULL, &seed);   /* per-head q/k norm */
	ok &= norm_case(h, false, 5, 3, 129, &scale, &seed);
	ok &= norm_case(h, false, 1, 1, 1, NULL, &seed);
	ok &= norm_case(h, true, 4, 2, 64, NULL, &seed);    /* per-head gated output norm */
	ok &= norm_case(h, true, 3, 1, 300, &add, &seed);
	ok &= norm_case(h, true, 7, 3, 7, NULL, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
