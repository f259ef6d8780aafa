/* reduce_mean and signed_sqrt (Qwen4-Exp's hyper-connection mean and PLE
 * gate) against the reference ops, at odd sizes, decode and prefill T, and
 * the reduce's batch invariance (T rows in one dispatch equal T one-row
 * dispatches, bitwise).
 *
 * Tolerances: reduce_mean's n <= 37 inputs of order 1 are summed in order in
 * f32 (f64 in the reference): the error is at most ~n ulps of the largest
 * partial sum; with terms of either sign the mean can be far smaller than the
 * inputs, so it is judged relative to max(|want|, 1e-2): 37 * 2^-24 * 4 / 1e-2
 * ~ 9e-4 is a crude bound, the observed worst is far below; 1e-4 is used.
 * signed_sqrt is one correctly rounded (or ulp-accurate) sqrt: 1e-6 relative.
 * Zeros must stay zero and tiny values clamp to sqrt(eps): both are put in
 * the signed_sqrt input on purpose. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

/* x viewed as [outer(T), n, inner] with outer = ot*T + oc. */
typedef struct {
	int64_t ot, oc, n, inner;
} red_shape;

static bool red_build(harness *h, const red_shape *s, int64_t t_max, hkernel *k)
{
	kv_desc d = {.op = IR_OP_REDUCE_MEAN, .t_max = t_max, .wtype = HALO_F32};
	d.u.reduce.outer = (ir_dim){s->ot, s->oc};
	d.u.reduce.n = s->n;
	d.u.reduce.inner = s->inner;
	return hk_build(h, &d, k);
}

static bool red_run(harness *h, hkernel *k, const red_shape *s, float *x, float *y, int64_t T)
{
	int64_t outer = s->ot * T + s->oc;
	hop ops[2] = {{x, (size_t)(outer * s->n * s->inner) * 4, false}, {y, (size_t)(outer * s->inner) * 4, true}};
	return hk_run(h, k, ops, 2, (uint32_t)T, 0);
}

static bool red_case(harness *h, red_shape s, int64_t T, uint32_t *seed)
{
	hkernel k;
	if (!red_build(h, &s, 16, &k))
		return false;
	int64_t outer = s.ot * T + s.oc;
	size_t nx = (size_t)(outer * s.n * s.inner), ny = (size_t)(outer * s.inner);
	float *x = alloc_floats(nx), *y = alloc_floats(ny), *want = alloc_floats(ny);
	fill_random(x, nx, 1.0f, seed);
	bool ok = red_run(h, &k, &s, x, y, T);
	if (ok) {
		ref_reduce_mean(x, want, outer, s.n, s.inner);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		ok = check_close(what, y, want, ny, 1e-4, 1e-2);
	}
	free(x), free(y), free(want);
	hk_free(h, &k);
	return ok;
}

static bool red_invariance(harness *h, red_shape s, int64_t m, uint32_t *seed)
{
	hkernel k;
	if (!red_build(h, &s, m, &k))
		return false;
	int64_t rx = s.ot * s.n * s.inner, ry = s.ot * s.inner;
	float *x = alloc_floats((size_t)(m * rx)), *yb = alloc_floats((size_t)(m * ry));
	float *y1 = alloc_floats((size_t)(m * ry));
	fill_random(x, (size_t)(m * rx), 1.0f, seed);
	bool ok = red_run(h, &k, &s, x, yb, m);
	for (int64_t t = 0; ok && t < m; t++)
		ok = red_run(h, &k, &s, x + t * rx, y1 + t * ry, 1);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single rows", k.k.signature, (long long)m);
	ok = ok && check_bitwise(what, yb, y1, (size_t)(m * ry));
	free(x), free(yb), free(y1);
	hk_free(h, &k);
	return ok;
}

static bool sqrt_case(harness *h, int64_t per_t, int64_t T, float eps, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_SIGNED_SQRT, .t_max = 16, .wtype = HALO_F32};
	d.u.signed_sqrt.numel = (ir_dim){per_t, 0};
	d.u.signed_sqrt.eps = eps;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	size_t n = (size_t)(per_t * T);
	float *x = alloc_floats(n), *y = alloc_floats(n), *want = alloc_floats(n);
	fill_random(x, n, 2.0f, seed);
	/* the two special cases: sign(0) = 0, and |x| < eps clamps */
	x[0] = 0.0f;
	if (n > 2) {
		x[1] = eps * 0.25f;
		x[2] = -eps * 0.5f;
	}
	hop ops[2] = {{x, n * 4, false}, {y, n * 4, true}};
	bool ok = hk_run(h, &k, ops, 2, (uint32_t)T, 0);
	if (ok) {
		ref_signed_sqrt(x, want, (int64_t)n, eps);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		ok = check_close(what, y, want, n, 1e-6, 1e-30);
		if (y[0] != 0.0f) {
			fprintf(stderr, "FAIL: %s: signed_sqrt(0) = %g, expected 0\n", what, (double)y[0]);
			ok = false;
		}
	}
	free(x), free(y), free(want);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 8086;
	bool ok = true;
	ok &= red_case(h, (red_shape){1, 0, 4, 96}, 1, &seed);   /* HC mean over 4 streams, decode */
	ok &= red_case(h, (red_shape){1, 0, 3, 257}, 13, &seed); /* odd streams and width, prefill */
	ok &= red_case(h, (red_shape){5, 0, 37, 1}, 7, &seed);   /* last axis: per-stream dots */
	ok &= red_case(h, (red_shape){0, 3, 11, 5}, 2, &seed);   /* no T dependence */
	ok &= red_invariance(h, (red_shape){1, 0, 4, 129}, 6, &seed);
	ok &= sqrt_case(h, 96, 1, 1e-6f, &seed);
	ok &= sqrt_case(h, 333, 7, 1e-3f, &seed);
	ok &= sqrt_case(h, 5, 13, 1e-6f, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
