/* DeepSeek V4's attention ops in the reference (docs/ops.md "DeepSeek V4"):
 * rope's interleaved tail layout, inverse, offset and YaRN frequencies, and
 * state_write's every, on cases worked out by hand and on random inputs (never zero) against a
 * straightforward double-precision computation written here from the
 * contract.
 *
 * Tolerances, from the reference's f32 steps:
 * - rope: the angle p * theta is one f32 product of an f32 theta, off by up
 *   to ~|p| * 2^-23 rad (positions < 300 here: < 4e-5), plus an ulp or two of
 *   cosf/sinf, on inputs of magnitude <= 1: 1e-4;
 * - the YaRN frequencies: powf, the reciprocal and the blend in f32, a few
 *   ulps: 1e-6 relative. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ref/ref_ops.h"

static int failures;

static void expect_near(const char *what, double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol)) {
		printf("FAIL %s: got %.9g want %.9g (tol %.3g)\n", what, got, want, tol);
		failures++;
	}
}

static void expect_true(const char *what, bool cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		failures++;
	}
}

/* Deterministic values in [-1, -1/64] u [1/64, 1]: never zero, so a dropped
 * term or a row left unwritten shows. */
static void fill(float *x, int64_t n, uint32_t seed)
{
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		double u = (double)(seed >> 8) / 16777216.0; /* [0, 1) */
		double mag = 1.0 / 64.0 + (1.0 - 1.0 / 64.0) * fabs(2.0 * u - 1.0);
		x[i] = (float)(u < 0.5 ? -mag : mag);
	}
}

/* ---- rope -------------------------------------------------------------------------- */

/* theta_i of the contract in f64, YaRN blended when f > 0. */
static double theta_f64(const ref_rope_params *p, int64_t i)
{
	double r = (double)p->rot_dim, theta = pow((double)p->base, -2.0 * (double)i / r);
	if (!(p->yarn_factor > 0.0f))
		return theta;
	double corr_fast = r * log((double)p->yarn_orig_ctx / (2.0 * M_PI * p->yarn_beta_fast)) / (2.0 * log(p->base));
	double corr_slow = r * log((double)p->yarn_orig_ctx / (2.0 * M_PI * p->yarn_beta_slow)) / (2.0 * log(p->base));
	double lo = fmax(floor(corr_fast), 0.0), hi = fmin(ceil(corr_slow), r - 1.0);
	if (hi == lo)
		hi = lo + 0.001;
	double ramp = fmin(fmax(((double)i - lo) / (hi - lo), 0.0), 1.0);
	return (1.0 - ramp) * theta + ramp * theta / p->yarn_factor;
}

/* models.md 6.2's tiny config: r = 8, base 160000, factor 4, L0 = 64. Then
 * corr(32) = 8 ln(64 / 64pi) / (2 ln 160000) = -0.38 and corr(1) =
 * 8 ln(64 / 2pi) / (2 ln 160000) = 0.77, so lo = max(-1, 0) = 0 and
 * hi = min(1, 7) = 1: ramp = (0, 1, 1, 1). 160000 = 20^4, so theta =
 * (1, 1/20, 1/400, 1/8000): pair 0 keeps 1, pairs 1-3 are divided by 4. */
static void test_yarn_tiny(void)
{
	ref_rope_params p = {.rot_dim = 8, .base = 160000.0f, .layout = REF_ROPE_INTERLEAVED_TAIL, .yarn_factor = 4.0f,
			     .yarn_orig_ctx = 64, .yarn_beta_fast = 32.0f, .yarn_beta_slow = 1.0f};
	const double want[4] = {1.0, 1.0 / 80.0, 1.0 / 1600.0, 1.0 / 32000.0};
	for (int i = 0; i < 4; i++)
		expect_near("tiny YaRN inv_freq", ref_rope_inv_freq(&p, i), want[i], 1e-6 * want[i]);
	p.yarn_factor = 0.0f;
	const double plain[4] = {1.0, 1.0 / 20.0, 1.0 / 400.0, 1.0 / 8000.0};
	for (int i = 0; i < 4; i++)
		expect_near("tiny plain inv_freq", ref_rope_inv_freq(&p, i), plain[i], 1e-6 * plain[i]);
}

/* V4-Flash's compress rope (r = 64, factor 16, L0 = 65536): lo = 15,
 * hi = 25, a ramp of tenths in between, against the f64 formula. */
static void test_yarn_flash(void)
{
	ref_rope_params p = {.rot_dim = 64, .base = 160000.0f, .layout = REF_ROPE_INTERLEAVED_TAIL,
			     .yarn_factor = 16.0f, .yarn_orig_ctx = 65536, .yarn_beta_fast = 32.0f, .yarn_beta_slow = 1.0f};
	for (int i = 0; i < 32; i++) {
		double want = theta_f64(&p, i);
		expect_near("V4-Flash YaRN inv_freq", ref_rope_inv_freq(&p, i), want, 1e-6 * want);
	}
	double th20 = pow(160000.0, -40.0 / 64.0);
	expect_near("pair 20 is half way", theta_f64(&p, 20), 0.5 * th20 + 0.5 * th20 / 16.0, 1e-15);
}

/* Hand cases: d = 4, r = 2 with the tail layout rotates channels 2 and 3
 * by 1 rad at position 1 (theta_0 = 1); inverse turns the other way; an
 * offset of -1 makes position 1 position 0 (no rotation). */
static void test_rope_hand(void)
{
	const float x[4] = {0.5f, -0.25f, 1.0f, 2.0f};
	float y[4];
	ref_rope_params p = {.rot_dim = 2, .base = 10000.0f, .layout = REF_ROPE_INTERLEAVED_TAIL};
	ref_rope(&p, x, y, 1, 1, 4, 1);
	expect_near("tail: channel 0 passes", y[0], 0.5, 0);
	expect_near("tail: channel 1 passes", y[1], -0.25, 0);
	expect_near("tail: channel 2", y[2], cos(1.0) - 2.0 * sin(1.0), 1e-6);
	expect_near("tail: channel 3", y[3], 2.0 * cos(1.0) + sin(1.0), 1e-6);
	p.inverse = true;
	ref_rope(&p, x, y, 1, 1, 4, 1);
	expect_near("inverse: channel 2", y[2], cos(1.0) + 2.0 * sin(1.0), 1e-6);
	expect_near("inverse: channel 3", y[3], 2.0 * cos(1.0) - sin(1.0), 1e-6);
	p.inverse = false;
	p.offset = -1;
	ref_rope(&p, x, y, 1, 1, 4, 1);
	expect_true("offset -1 at position 1 is position 0", memcmp(x, y, sizeof y) == 0);
}

/* Random heads against the f64 rotation of the contract, every option. */
static void test_rope_random(void)
{
	enum { T = 5, H = 3, D = 24 };
	const ref_rope_params cases[] = {
		{.rot_dim = 8, .base = 160000.0f, .layout = REF_ROPE_INTERLEAVED_TAIL, .yarn_factor = 4.0f,
		 .yarn_orig_ctx = 64, .yarn_beta_fast = 32.0f, .yarn_beta_slow = 1.0f},
		{.rot_dim = 16, .base = 10000.0f, .layout = REF_ROPE_INTERLEAVED_TAIL, .inverse = true, .offset = -3},
		{.rot_dim = 12, .base = 10000.0f, .offset = 7, .inverse = true}, /* NeoX with the new options */
		{.rot_dim = 24, .base = 1000000.0f},				  /* the plain rope, f64 angles */
	};
	float x[T * H * D], y[T * H * D];
	fill(x, T * H * D, 5);
	for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
		const ref_rope_params *p = &cases[c];
		const int64_t pos = 250;
		ref_rope(p, x, y, T, H, D, pos);
		for (int t = 0; t < T; t++)
			for (int h = 0; h < H; h++) {
				const float *xs = x + (t * H + h) * D;
				const float *ys = y + (t * H + h) * D;
				double want[D];
				for (int i = 0; i < D; i++)
					want[i] = xs[i];
				for (int i = 0; i < p->rot_dim / 2; i++) {
					bool tail = p->layout == REF_ROPE_INTERLEAVED_TAIL;
					int a = tail ? D - (int)p->rot_dim + 2 * i : i;
					int b = tail ? a + 1 : i + (int)p->rot_dim / 2;
					double ang = (double)(pos + t + p->offset) * theta_f64(p, i);
					ang = p->inverse ? -ang : ang;
					want[a] = xs[a] * cos(ang) - xs[b] * sin(ang);
					want[b] = xs[b] * cos(ang) + xs[a] * sin(ang);
				}
				for (int i = 0; i < D; i++)
					expect_near("rope vs f64", ys[i], want[i], 1e-4);
			}
	}
}

/* ---- state_write every ---------------------------------------------------------------- */

/* m = 4, positions 2..8: 3 closes window 0, 7 window 1; rows 2 and 3 of
 * the state stay as they were. */
static void test_state_write_every(void)
{
	enum { T = 7, C = 4, ROW = 3 };
	float v[T * ROW], st[C * ROW], before[C * ROW];
	fill(v, T * ROW, 7);
	fill(st, C * ROW, 8);
	memcpy(before, st, sizeof st);
	ref_error e;
	expect_true("every runs", ref_state_write_every(v, st, T, C, ROW, 2, 4, &e));
	expect_true("window 0 <- position 3 (row t = 1)", memcmp(st, v + 1 * ROW, ROW * 4) == 0);
	expect_true("window 1 <- position 7 (row t = 5)", memcmp(st + ROW, v + 5 * ROW, ROW * 4) == 0);
	expect_true("the other rows untouched", memcmp(st + 2 * ROW, before + 2 * ROW, 2 * ROW * 4) == 0);
	expect_true("a window past the state is refused",
		    !ref_state_write_every(v, st, T, C, ROW, 13, 4, &e) &&
			    strstr(e.msg, "up to row 4, past the state's 4 rows"));
}

int main(void)
{
	test_yarn_tiny();
	test_yarn_flash();
	test_rope_hand();
	test_rope_random();
	test_state_write_every();
	if (failures) {
		printf("%d failure(s)\n", failures);
		return 1;
	}
	printf("all DeepSeek V4 attention reference op tests passed\n");
	return 0;
}
