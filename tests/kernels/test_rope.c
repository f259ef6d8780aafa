/* rope against ref_rope: full and partial rot_dim, positions past 0, and
 * DeepSeek V4's options (the interleaved tail layout, inverse, a position
 * offset, negative positions included, YaRN frequencies); with the
 * per-head rms_norm prologue (passes/fuse_norm_rope.c) against ref_rms_norm
 * then ref_rope, and bitwise against the two dispatches it replaces (the
 * rms_norm kernel, then rope on its output).
 *
 * Tolerance: max |got - want| / max(|want|, 1) <= 1e-4. The kernel forms the
 * angle (pos + t) * theta in f32 (the plain reference in f64): at positions up
 * to ~300 the angle is off by up to ~300 * 2^-24 rad ~ 2e-5, and GPU cos/sin
 * add a few ulps, on values of magnitude <= 1. With the DeepSeek options the
 * reference's angle is the same f32 product of the same table, and the GPU's
 * cos/sin and fused multiply-adds are all that differ. */
#include <stdio.h>
#include <stdlib.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

static kv_desc rope_desc(int64_t H, int64_t D, const ref_rope_params *p, bool pro, int offset)
{
	kv_desc d = {.op = IR_OP_ROPE, .t_max = 64};
	d.u.rope.heads = H;
	d.u.rope.D = D;
	d.u.rope.p = *p;
	d.pro = (kv_prologue){.on = pro, .eps = 1e-6f, .offset = offset};
	return d;
}

/* rms_norm over each head of D with weight nw, then rope: the prologue's
 * reference for every variant (the tuner's reduction widths), and for the
 * heuristic's, which reduces as the rms_norm kernel does, the two
 * dispatches it replaces, bitwise. */
static bool norm_rope_variant(harness *h, kv_tiles tiles, bool two, int64_t T, int64_t H, int64_t D,
			      const ref_rope_params *rp, int offset, uint32_t pos, uint32_t *seed)
{
	kv_desc d = rope_desc(H, D, rp, true, offset), r = rope_desc(H, D, rp, false, 0);
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
		ref_rope(rp, mid, want, T, H, D, pos);
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

static bool norm_rope_case(harness *h, int64_t T, int64_t H, int64_t D, const ref_rope_params *rp, int offset,
			   uint32_t pos, uint32_t *seed)
{
	kv_desc d = rope_desc(H, D, rp, true, offset);
	kv_tiles t[8];
	int n = kv_variant_space(&d, t, 8);
	bool ok = n > 1;
	for (int i = 0; i < n; i++)
		ok &= norm_rope_variant(h, t[i], i == 0, T, H, D, rp, offset, pos, seed);
	return ok;
}

static bool rope_case(harness *h, int64_t T, int64_t H, int64_t D, const ref_rope_params *rp, uint32_t pos,
		      uint32_t *seed)
{
	kv_desc d = rope_desc(H, D, rp, false, 0);
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	size_t n = (size_t)(T * H * D);
	float *x = alloc_floats(n), *y = alloc_floats(n), *want = alloc_floats(n);
	fill_random(x, n, 1.0f, seed);
	hop ops[2] = {{x, n * 4, false}, {y, n * 4, true}};
	bool ok = hk_run(h, &k, ops, 2, (uint32_t)T, pos);
	if (ok) {
		ref_rope(rp, x, want, T, H, D, pos);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u", k.k.signature, (long long)T, pos);
		ok = check_close(what, y, want, n, 1e-4, 1.0);
	}
	free(x), free(y), free(want);
	hk_free(h, &k);
	return ok;
}

/* The plain NeoX rope. */
static ref_rope_params neox(int64_t rot, float base)
{
	return (ref_rope_params){.rot_dim = rot, .base = base};
}

/* DeepSeek V4's compress-layer rope (models.md 6.2's YaRN, theta 160000). */
static ref_rope_params deepseek(int64_t rot, bool inverse, int64_t offset)
{
	return (ref_rope_params){.rot_dim = rot, .base = 160000.0f, .layout = REF_ROPE_INTERLEAVED_TAIL,
				 .inverse = inverse, .offset = offset, .yarn_factor = 4.0f, .yarn_orig_ctx = 64,
				 .yarn_beta_fast = 32.0f, .yarn_beta_slow = 1.0f};
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 99;
	bool ok = true;
	const ref_rope_params p[] = {neox(16, 10000.0f), neox(8, 10000.0f), neox(34, 1000000.0f), neox(2, 500.0f),
			       deepseek(8, false, 0), deepseek(8, true, 0), deepseek(16, false, -3),
			       /* the tail layout and an offset without YaRN: the sliding layers' rope */
			       {.rot_dim = 8, .base = 10000.0f, .layout = REF_ROPE_INTERLEAVED_TAIL, .offset = 2}};
	ok &= rope_case(h, 5, 4, 16, &p[0], 0, &seed);
	ok &= rope_case(h, 3, 2, 16, &p[1], 17, &seed); /* partial: rot_dim = d/2 */
	ok &= rope_case(h, 9, 3, 34, &p[2], 250, &seed);
	ok &= rope_case(h, 1, 1, 6, &p[3], 301, &seed);
	ok &= rope_case(h, 7, 4, 32, &p[4], 61, &seed); /* rot 8 of 32: the last quarter */
	ok &= rope_case(h, 7, 4, 32, &p[5], 61, &seed); /* the output's de-rotation */
	ok &= rope_case(h, 6, 2, 16, &p[6], 0, &seed);	/* positions -3..2 */
	ok &= rope_case(h, 4, 3, 32, &p[7], 9, &seed);
	ok &= norm_rope_case(h, 5, 4, 128, &(ref_rope_params){.rot_dim = 128, .base = 1000000.0f}, 0, 33, &seed);
	ok &= norm_rope_case(h, 3, 2, 64, &(ref_rope_params){.rot_dim = 32, .base = 10000.0f}, 1, 7,
			     &seed); /* partial rot_dim, (1 + w) */
	ok &= norm_rope_case(h, 40, 3, 256, &(ref_rope_params){.rot_dim = 256, .base = 10000.0f}, 0, 0,
			     &seed); /* a prompt step, a wide head */
	ok &= norm_rope_case(h, 5, 1, 32, &p[4], 0, 40, &seed); /* DeepSeek's kv_norm then rope */
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
