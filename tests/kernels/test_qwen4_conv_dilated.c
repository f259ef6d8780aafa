/* conv1d_dilated against the reference (dilations 1..5, f32 and f16 weights,
 * act none and silu, odd channel counts, T = 1, T below and above the state
 * depth) and batch invariance: T tokens in one dispatch equal T one-token
 * dispatches that carry the state, bitwise. The kernel with steps (the
 * state after each token, a verify step's state slots): steps as the
 * reference's, and y and state' bitwise the plain kernel's.
 *
 * Tolerance: y within max |got - want| / max(|want|, 1e-2) <= 1e-5, as for
 * conv1d_causal: each output is an f32 sum of K <= 4 products in order (f64
 * in the reference), silu's exp adds a few ulps, and outputs below 1e-2 can
 * come from cancellation so they are judged absolutely. state' and steps are
 * copies of rows of [state; x] and must match bitwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	int64_t C, K, dil;
	bool silu;
	halo_dtype wt;
} dconv_shape;

static size_t state_len(const dconv_shape *s)
{
	return (size_t)((s->K - 1) * s->dil * s->C);
}

static bool build(harness *h, const dconv_shape *s, bool steps, hkernel *k)
{
	kv_desc d = {.op = IR_OP_CONV1D_DILATED, .t_max = 16, .wtype = s->wt, .steps = steps};
	d.u.conv_dilated.C = s->C;
	d.u.conv_dilated.K = s->K;
	d.u.conv_dilated.dilation = s->dil;
	d.u.conv_dilated.silu = s->silu;
	return hk_build(h, &d, k);
}

typedef struct {
	float *x, *state, *w, *y, *ns, *want_y, *want_ns;
	uint16_t *w16;
} dconv_data;

/* Binds w16 (f16 bits) instead of w when the shape says f16, and steps
 * (the kernel's third output) when not NULL. */
static bool run(harness *h, hkernel *k, const dconv_shape *s, const dconv_data *a, const float *x,
		float *state, float *y, float *ns, float *steps, int64_t T)
{
	size_t nw = (size_t)(s->C * s->K), nst = state_len(s);
	hop ops[6] = {
		{(void *)x, (size_t)(T * s->C) * 4, false},
		{state, nst * 4, false},
		s->wt == HALO_F16 ? (hop){a->w16, nw * 2, false} : (hop){a->w, nw * 4, false},
		{y, (size_t)(T * s->C) * 4, true},
		{ns, nst * 4, true},
		{steps, (size_t)T * nst * 4, true},
	};
	return hk_run(h, k, ops, steps ? 6 : 5, (uint32_t)T, 0);
}

static dconv_data data_new(const dconv_shape *s, int64_t T, uint32_t *seed)
{
	size_t nx = (size_t)(T * s->C), ns = state_len(s), nw = (size_t)(s->C * s->K);
	dconv_data a = {alloc_floats(nx), alloc_floats(ns), alloc_floats(nw), alloc_floats(nx),
			alloc_floats(ns), alloc_floats(nx), alloc_floats(ns), calloc(nw, 2)};
	if (!a.w16) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	fill_random(a.x, nx, 1.0f, seed);
	fill_random(a.state, ns, 1.0f, seed);
	fill_random(a.w, nw, 0.5f, seed);
	if (s->wt == HALO_F16)
		round_f16(a.w, a.w16, nw);
	return a;
}

static void data_free(dconv_data *a)
{
	free(a->x), free(a->state), free(a->w), free(a->y), free(a->ns), free(a->want_y);
	free(a->want_ns), free(a->w16);
}

static bool dconv_case(harness *h, dconv_shape s, int64_t T, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, false, &k))
		return false;
	dconv_data a = data_new(&s, T, seed);
	bool ok = run(h, &k, &s, &a, a.x, a.state, a.y, a.ns, NULL, T);
	if (ok) {
		ref_conv1d_dilated(a.x, a.state, a.w, a.want_y, a.want_ns, NULL, T, s.C, s.K, s.dil, s.silu);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		ok = check_close(what, a.y, a.want_y, (size_t)(T * s.C), 1e-5, 1e-2);
		snprintf(what, sizeof what, "%s T=%lld state'", k.k.signature, (long long)T);
		ok &= check_bitwise(what, a.ns, a.want_ns, state_len(&s));
	}
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

static bool invariance(harness *h, dconv_shape s, int64_t m, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, false, &k))
		return false;
	dconv_data a = data_new(&s, m, seed);
	size_t ns = state_len(&s);
	float *st = alloc_floats(ns), *st_next = alloc_floats(ns);
	bool ok = run(h, &k, &s, &a, a.x, a.state, a.y, a.ns, NULL, m);
	memcpy(st, a.state, ns * 4);
	for (int64_t t = 0; ok && t < m; t++) {
		ok = run(h, &k, &s, &a, a.x + t * s.C, st, a.want_y + t * s.C, st_next, NULL, 1);
		memcpy(st, st_next, ns * 4);
	}
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single steps", k.k.signature, (long long)m);
	ok = ok && check_bitwise(what, a.y, a.want_y, (size_t)(m * s.C));
	ok = ok && check_bitwise("  final state", a.ns, st, ns);
	free(st), free(st_next);
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

/* The kernel with steps: steps and state' bitwise the reference's (row t
 * the state after token t, row T-1 state'), y and state' bitwise the plain
 * kernel's on the same inputs. */
static bool steps_case(harness *h, dconv_shape s, int64_t T, uint32_t *seed)
{
	hkernel k, plain;
	if (!build(h, &s, true, &k))
		return false;
	if (!build(h, &s, false, &plain)) {
		hk_free(h, &k);
		return false;
	}
	dconv_data a = data_new(&s, T, seed);
	size_t ns = state_len(&s), ny = (size_t)(T * s.C);
	float *steps = alloc_floats((size_t)T * ns), *want = alloc_floats((size_t)T * ns);
	bool ok = run(h, &k, &s, &a, a.x, a.state, a.y, a.ns, steps, T) &&
		  run(h, &plain, &s, &a, a.x, a.state, a.want_y, a.want_ns, NULL, T);
	char what[512];
	snprintf(what, sizeof what, "%s T=%lld y vs the plain kernel", k.k.signature, (long long)T);
	ok = ok && check_bitwise(what, a.y, a.want_y, ny);
	ok = ok && check_bitwise("  state' vs the plain kernel", a.ns, a.want_ns, ns);
	if (ok) {
		ref_conv1d_dilated(a.x, a.state, a.w, a.want_y, a.want_ns, want, T, s.C, s.K, s.dil, s.silu);
		snprintf(what, sizeof what, "%s T=%lld steps", k.k.signature, (long long)T);
		ok = check_bitwise(what, steps, want, (size_t)T * ns);
		ok &= check_bitwise("  state' vs the reference", a.ns, a.want_ns, ns);
		ok &= check_close("  y vs the reference", a.y, a.want_y, ny, 1e-5, 1e-2);
	}
	free(steps), free(want);
	data_free(&a);
	hk_free(h, &plain);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 27182;
	bool ok = true;
	ok &= dconv_case(h, (dconv_shape){64, 4, 2, true, HALO_F32}, 1, &seed);   /* decode */
	ok &= dconv_case(h, (dconv_shape){7, 3, 5, false, HALO_F32}, 13, &seed);  /* T past the 10-row state */
	ok &= dconv_case(h, (dconv_shape){300, 4, 3, true, HALO_F16}, 2, &seed);  /* T < state depth */
	ok &= dconv_case(h, (dconv_shape){33, 2, 4, false, HALO_F16}, 9, &seed);
	ok &= dconv_case(h, (dconv_shape){17, 4, 1, true, HALO_F32}, 5, &seed);   /* d = 1 is conv1d_causal */
	ok &= invariance(h, (dconv_shape){37, 4, 3, true, HALO_F32}, 11, &seed);
	ok &= steps_case(h, (dconv_shape){64, 4, 2, true, HALO_F32}, 1, &seed);   /* one token: steps = state' */
	ok &= steps_case(h, (dconv_shape){33, 4, 3, true, HALO_F16}, 8, &seed);   /* a verify step, T < state depth */
	ok &= steps_case(h, (dconv_shape){7, 3, 5, false, HALO_F32}, 13, &seed);  /* T past the 10-row state */
	ok &= steps_case(h, (dconv_shape){17, 4, 1, true, HALO_F32}, 5, &seed);   /* d = 1 */
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
