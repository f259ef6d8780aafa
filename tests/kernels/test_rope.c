/* rope against ref_rope: full and partial rot_dim, positions past 0.
 *
 * Tolerance: max |got - want| / max(|want|, 1) <= 1e-4. The kernel forms the
 * angle (pos + t) * theta in f32 (the reference in f64): at positions up to
 * ~300 the angle is off by up to ~300 * 2^-24 rad ~ 2e-5, and GPU cos/sin add
 * a few ulps, on values of magnitude <= 1. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/ref/ref_ops.h"
#include "tests/kernels/harness.h"

static bool rope_case(harness *h, int64_t T, int64_t H, int64_t D, int64_t rot, float base,
		      uint32_t pos, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_ROPE, .t_max = 64};
	d.u.rope.heads = H;
	d.u.rope.D = D;
	d.u.rope.rot_dim = rot;
	d.u.rope.base = base;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	size_t n = (size_t)(T * H * D);
	float *x = alloc_floats(n), *y = alloc_floats(n), *want = alloc_floats(n);
	fill_random(x, n, 1.0f, seed);
	hop ops[2] = {{x, n * 4, false}, {y, n * 4, true}};
	bool ok = hk_run(h, &k, ops, 2, (uint32_t)T, pos);
	if (ok) {
		ref_rope(x, want, T, H, D, rot, base, pos);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u", k.k.signature, (long long)T, pos);
		ok = check_close(what, y, want, n, 1e-4, 1.0);
	}
	free(x), free(y), free(want);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 99;
	bool ok = true;
	ok &= rope_case(h, 5, 4, 16, 16, 10000.0f, 0, &seed);
	ok &= rope_case(h, 3, 2, 16, 8, 10000.0f, 17, &seed);     /* partial: rot_dim = d/2 */
	ok &= rope_case(h, 9, 3, 34, 34, 1000000.0f, 250, &seed);
	ok &= rope_case(h, 1, 1, 6, 2, 500.0f, 301, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
