/* rope against ref_rope: full and partial rot_dim, positions past 0; with
 * the per-head rms_norm prologue (passes/fuse_norm_rope.c) against
 * ref_rms_norm then ref_rope, and bitwise against the two dispatches it
 * replaces (the rms_norm kernel, then rope on its output).
 *
 * Tolerance: max |got - want| / max(|want|, 1) <= 1e-4. The kernel forms the
 * angle (pos + t) * theta in f32 (the reference in f64): at positions up to
 * ~300 the angle is off by up to ~300 * 2^-24 rad ~ 2e-5, and GPU cos/sin add
 * a few ulps, on values of magnitude <= 1. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/ref/ref_ops.h"
#include "tests/kernels/harness.h"

static kv_desc rope_desc(int64_t H, int64_t D, int64_t rot, float base, bool pro, int offset)
{
	kv_desc d = {.op = IR_OP_ROPE, .t_max = 64};
	d.u.rope.heads = H;
	d.u.rope.D = D;
	d.u.rope.rot_dim = rot;
	d.u.rope.base = base;
	d.pro = (kv_prologue){.on = pro, .eps = 1e-6f, .offset = offset};
	return d;
}

/* rms_norm over each head of D with weight nw, then rope: the prologue's
 * reference for every variant (the tuner's reduction widths), and for the
 * heuristic's, which reduces as the rms_norm kernel does, the two
 * dispatches it replaces, bitwise. */
static bool norm_rope_variant(harness *h, kv_tiles tiles, bool two, int64_t T, int64_t H, int64_t D, int64_t rot,
			      float base, int offset, uint32_t pos, uint32_t *seed)
{
	kv_desc d = rope_desc(H, D, rot, base, true, offset), r = rope_desc(H, D, rot, base, false, 0);
	d.tiles = tiles;
	kv_desc nd = {.op = IR_OP_RMS_NORM, .t_max = 64};
	nd.u.rms_norm.rows_per_t = H;
	nd.u.rms_norm.D = D;
	nd.u.rms_norm.eps = 1e-6f;
	nd.u.rms_norm.offset = offset;
	hkernel k, kn, kr;
	if (!hk_build(h, &d, &k))
		return false;
	if (!hk_build(h, &nd, &kn) || !hk_build(h, &r, &kr)) {
		hk_free(h, &k);
		return false;
	}
	size_t n = (size_t)(T * H * D);
	float *x = alloc_floats(n), *nw = alloc_floats((size_t)D), *y = alloc_floats(n), *mid = alloc_floats(n);
	float *two_y = alloc_floats(n), *want = alloc_floats(n);
	fill_random(x, n, 3.0f, seed);
	fill_random(nw, (size_t)D, 0.5f, seed);
	hop ops[3] = {{x, n * 4, false}, {nw, (size_t)D * 4, false}, {y, n * 4, true}};
	hop norm_ops[3] = {{x, n * 4, false}, {nw, (size_t)D * 4, false}, {mid, n * 4, true}};
	hop rope_ops[2] = {{mid, n * 4, false}, {two_y, n * 4, true}};
	bool ok = hk_run(h, &k, ops, 3, (uint32_t)T, pos) && hk_run(h, &kn, norm_ops, 3, (uint32_t)T, pos) &&
		  hk_run(h, &kr, rope_ops, 2, (uint32_t)T, pos);
	if (ok) {
		ref_rms_norm(x, nw, mid, T * H, D, 0, 1e-6f, offset);
		ref_rope(mid, want, T, H, D, rot, base, pos);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u", k.k.signature, (long long)T, pos);
		ok = check_close(what, y, want, n, 1e-4, 1.0);
		snprintf(what, sizeof what, "%s T=%lld pos=%u vs rms_norm then rope", k.k.signature, (long long)T, pos);
		ok &= !two || check_bitwise(what, y, two_y, n);
	}
	free(x), free(nw), free(y), free(mid), free(two_y), free(want);
	hk_free(h, &k);
	hk_free(h, &kn);
	hk_free(h, &kr);
	return ok;
}

static bool norm_rope_case(harness *h, int64_t T, int64_t H, int64_t D, int64_t rot, float base, int offset,
			   uint32_t pos, uint32_t *seed)
{
	kv_desc d = rope_desc(H, D, rot, base, true, offset);
	kv_tiles t[8];
	int n = kv_variant_space(&d, t, 8);
	bool ok = n > 1;
	for (int i = 0; i < n; i++)
		ok &= norm_rope_variant(h, t[i], i == 0, T, H, D, rot, base, offset, pos, seed);
	return ok;
}

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
	ok &= norm_rope_case(h, 5, 4, 128, 128, 1000000.0f, 0, 33, &seed);
	ok &= norm_rope_case(h, 3, 2, 64, 32, 10000.0f, 1, 7, &seed);   /* partial rot_dim, (1 + w) */
	ok &= norm_rope_case(h, 40, 3, 256, 256, 10000.0f, 0, 0, &seed); /* a prompt step, a wide head */
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
