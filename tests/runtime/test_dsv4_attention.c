/* DeepSeek V4's attention ops in the reference (docs/ops.md "DeepSeek V4"):
 * rope's interleaved tail layout, inverse, offset and YaRN frequencies,
 * state_write's every, compress_kv, index_topk and sink_attention. Each on
 * cases worked out by hand and on random inputs (never zero) against a
 * straightforward double-precision computation written here from the
 * contract; then the property that makes prefill and decode agree: a
 * sequence run in one call, one token at a time or in uneven chunks gives
 * bitwise the same rows.
 *
 * Tolerances, from the reference's f32 steps (its sums are f64):
 * - rope: the angle p * theta is one f32 product of an f32 theta, off by up
 *   to ~|p| * 2^-23 rad (positions < 300 here: < 4e-5), plus an ulp or two of
 *   cosf/sinf, on inputs of magnitude <= 1: 1e-4;
 * - compress_kv and sink_attention: the softmax weights are f32 (their
 *   exponent's argument rounded, expf, the product with 1/sum), a few ulps
 *   relative each, over values of magnitude <= 1: 1e-5;
 * - the YaRN frequencies: powf, the reciprocal and the blend in f32, a few
 *   ulps: 1e-6 relative;
 * - index_topk's scores: f32 terms, so the selection is compared against the
 *   double scores with 1e-5 of slack for near ties. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/runtime/expect.h"

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

static float *floats(int64_t n)
{
	float *x = calloc((size_t)n, sizeof *x);
	if (!x)
		abort();
	return x;
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

/* ---- compress_kv ------------------------------------------------------------------------ */

/* Hand cases, D = 1, m = 2. No overlap: gates (0, ln 3) weigh rows 0 and 1
 * 1/4 and 3/4. Overlap: a row holds (first half, second half); equal gates
 * average window 0's first halves and window 1's second halves. */
static void test_compress_hand(void)
{
	ref_error e;
	const float c[4] = {4, 8, 100, 100}, z[4] = {0, (float)log(3.0), 0, 0}, bias[2] = {0, 0};
	float y[2];
	expect_true("compress_kv runs", ref_compress_kv(c, z, bias, y, 2, 4, 1, 2, false, 0, &e));
	expect_near("position 0 closes nothing", y[0], 0, 0);
	expect_near("window 0 = 1/4 c0 + 3/4 c1", y[1], 0.25 * 4 + 0.75 * 8, 1e-6);
	/* rows (first, second): window 1 pools firsts of rows 0, 1 and seconds of rows 2, 3 */
	const float c2[8] = {1, 50, 2, 60, 70, 3, 80, 4}, z2[8] = {0}, b2[4] = {0};
	float y2[4];
	expect_true("compress_kv overlap runs", ref_compress_kv(c2, z2, b2, y2, 4, 4, 1, 2, true, 0, &e));
	expect_near("overlap window 0: its own seconds only", y2[1], (50 + 60) / 2.0, 1e-5);
	expect_near("overlap window 1", y2[3], (1 + 2 + 3 + 4) / 4.0, 1e-6);
	/* positions 3, 4 wrap a cache of 4 rows, which cannot also hold their windows' 4 slots */
	expect_true("a ring too short for the step is refused",
		    !ref_compress_kv(c2, z2, b2, y2, 2, 4, 1, 2, true, 3, &e) && strstr(e.msg, "need 5 rows, the cache holds 4"));
}

/* The entry of the window closed at position p, in f64 from the contract. */
static void compress_f64(const float *c, const float *z, const float *bias, int64_t D, int64_t m, bool overlap,
			 int64_t p, double *out)
{
	int64_t W = (overlap ? 2 : 1) * D, wi = (p + 1) / m - 1, b = wi * m;
	for (int64_t d = 0; d < D; d++) {
		double g[64], cv[64], mx = -INFINITY, sum = 0.0, acc = 0.0;
		int n = 0;
		for (int64_t r = 0; overlap && wi > 0 && r < m; r++, n++) {
			g[n] = (double)z[(b - m + r) * W + d] + bias[r * W + d];
			cv[n] = c[(b - m + r) * W + d];
		}
		for (int64_t r = 0; r < m; r++, n++) {
			int64_t col = (overlap ? D : 0) + d;
			g[n] = (double)z[(b + r) * W + col] + bias[r * W + col];
			cv[n] = c[(b + r) * W + col];
		}
		for (int j = 0; j < n; j++)
			mx = fmax(mx, g[j]);
		for (int j = 0; j < n; j++)
			sum += exp(g[j] - mx);
		for (int j = 0; j < n; j++)
			acc += exp(g[j] - mx) / sum * cv[j];
		out[d] = acc;
	}
}

static void test_compress_random(void)
{
	enum { N = 24, D = 5, M = 4 };
	for (int overlap = 0; overlap < 2; overlap++) {
		int64_t W = (1 + overlap) * D;
		float *c = floats(N * W), *z = floats(N * W), *bias = floats(M * W), *y = floats(N * D);
		fill(c, N * W, 11), fill(z, N * W, 12), fill(bias, M * W, 13);
		for (int64_t i = 0; i < N * W; i++)
			z[i] *= 3.0f; /* gates far enough apart that the softmax is not flat */
		ref_error e;
		expect_true("compress_kv random runs", ref_compress_kv(c, z, bias, y, N, N, D, M, overlap, 0, &e));
		for (int64_t p = 0; p < N; p++) {
			double want[D] = {0};
			if ((p + 1) % M == 0)
				compress_f64(c, z, bias, D, M, overlap, p, want);
			for (int d = 0; d < D; d++)
				expect_near(overlap ? "compress_kv overlap vs f64" : "compress_kv vs f64", y[p * D + d],
					    want[d], (p + 1) % M ? 0 : 1e-5);
		}
		free(c), free(z), free(bias), free(y);
	}
}

/* ---- index_topk -------------------------------------------------------------------------- */

/* h = 1, d = 2, m = 1, w = 1, scale 1; keys (1,0), (0,1), (1,1), (-1,0) and
 * q = (2,1): scores 2, 1, 3, relu(-2) = 0. */
static void test_index_hand(void)
{
	const float keys[8] = {1, 0, 0, 1, 1, 1, -1, 0}, q[6] = {2, 1, 2, 1, 2, 1}, w[3] = {1, 1, 1};
	int32_t ids[9];
	ref_index_topk(q, w, keys, ids, 3, 1, 2, 4, 3, 1, 1.0f, 0);
	const int32_t want[9] = {0, -1, -1, /* p = 0: one key */ 0, 1, -1, /* p = 1 */ 2, 0, 1 /* p = 2 */};
	for (int i = 0; i < 9; i++)
		expect_true("index_topk hand ids", ids[i] == want[i]);
	/* equal scores: the lower index first; m = 2 at p = 3: two keys visible */
	const float same[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	ref_index_topk(q, w, same, ids, 1, 1, 2, 4, 3, 2, 1.0f, 3);
	expect_true("ties to the lower index, then -1", ids[0] == 0 && ids[1] == 1 && ids[2] == -1);
}

/* Random: the ids are the best visible keys by the f64 score (1e-5 slack
 * for near ties), descending, distinct, then -1. */
static void test_index_random(void)
{
	enum { T = 9, H = 3, DI = 8, E = 6, K = 3, M = 2 };
	const int64_t pos = 3;
	float q[T * H * DI], w[T * H], keys[E * DI];
	int32_t ids[T * K];
	fill(q, T * H * DI, 21), fill(w, T * H, 22), fill(keys, E * DI, 23);
	const float scale = 0.25f;
	ref_index_topk(q, w, keys, ids, T, H, DI, E, K, M, scale, pos);
	for (int64_t t = 0; t < T; t++) {
		int64_t n = (pos + t + 1) / M < E ? (pos + t + 1) / M : E, kk = K < n ? K : n;
		double score[E];
		for (int64_t e = 0; e < n; e++) {
			score[e] = 0.0;
			for (int64_t h = 0; h < H; h++) {
				double dot = 0.0;
				for (int64_t i = 0; i < DI; i++)
					dot += (double)q[(t * H + h) * DI + i] * keys[e * DI + i];
				score[e] += w[t * H + h] * fmax(dot, 0.0) * scale;
			}
		}
		bool taken[E] = {false};
		for (int64_t i = 0; i < K; i++) {
			int32_t id = ids[t * K + i];
			if (i >= kk) {
				expect_true("index_topk pads with -1", id == -1);
				continue;
			}
			expect_true("index_topk id visible and distinct", id >= 0 && id < n && !taken[id]);
			if (id < 0 || id >= n)
				continue;
			taken[id] = true;
			if (i > 0 && ids[t * K + i - 1] >= 0)
				expect_true("index_topk descending", score[ids[t * K + i - 1]] >= score[id] - 1e-5);
		}
		for (int64_t e = 0; e < n; e++)
			for (int64_t i = 0; i < kk; i++)
				if (!taken[e] && ids[t * K + i] >= 0)
					expect_true("index_topk keeps the best", score[e] <= score[ids[t * K + i]] + 1e-5);
	}
}

/* ---- sink_attention ------------------------------------------------------------------------ */

/* One head, D = 2, window 1: a query orthogonal to its key scores 0, the
 * sink 0 as well, so y = key / 2. Window 2 at p = 2 sees rows 1 and 2. */
static void test_sink_hand(void)
{
	const float q[2] = {1, -1}, kv[6] = {9, 9, 3, 3, 4, 4}, sink[1] = {0};
	float y[2];
	ref_error e;
	ref_sink_params p = {.scale = 1.0f, .window = 1, .N = 3};
	expect_true("sink_attention runs", ref_sink_attention(&p, q, kv, sink, NULL, NULL, y, 1, 1, 2, 2, &e));
	expect_near("one key and the sink: half the key", y[0], 2.0, 1e-7);
	expect_near("one key and the sink: half the key (1)", y[1], 2.0, 1e-7);
	p.window = 2;
	expect_true("window 2 runs", ref_sink_attention(&p, q, kv, sink, NULL, NULL, y, 1, 1, 2, 2, &e));
	expect_near("rows 1 and 2, row 0 outside the window", y[0], (3.0 + 4.0) / 3.0, 1e-6);
}

/* The keys query position p attends, from the contract: window rows, then
 * the entries (every closed one, or the ids >= 0 in order). */
static int sink_keys(const ref_sink_params *p, const float *kv, const float *entries, const int32_t *ids, int64_t pos,
		     int64_t D, const float **keys)
{
	int n = 0;
	for (int64_t r = pos - p->window + 1; r <= pos; r++)
		if (r >= 0)
			keys[n++] = kv + r * D;
	for (int64_t e = 0; entries && !ids && e < (pos + 1) / p->ratio; e++)
		keys[n++] = entries + e * D;
	for (int64_t i = 0; ids && i < p->k; i++)
		if (ids[i] >= 0)
			keys[n++] = entries + ids[i] * D;
	return n;
}

static void sink_f64(const ref_sink_params *p, const float *q, const float *kv, const float *sinks,
		     const float *entries, const int32_t *ids, int64_t T, int64_t H, int64_t D, int64_t pos, double *want)
{
	for (int64_t t = 0; t < T; t++) {
		const float *keys[64];
		int n = sink_keys(p, kv, entries, ids ? ids + t * p->k : NULL, pos + t, D, keys);
		for (int64_t h = 0; h < H; h++) {
			double s[64], mx = sinks[h], sum = 0.0;
			for (int j = 0; j < n; j++) {
				s[j] = 0.0;
				for (int64_t i = 0; i < D; i++)
					s[j] += (double)q[(t * H + h) * D + i] * keys[j][i];
				s[j] *= p->scale;
				mx = fmax(mx, s[j]);
			}
			for (int j = 0; j < n; j++)
				sum += exp(s[j] - mx);
			sum += exp(sinks[h] - mx);
			for (int64_t i = 0; i < D; i++) {
				double acc = 0.0;
				for (int j = 0; j < n; j++)
					acc += exp(s[j] - mx) / sum * keys[j][i];
				want[(t * H + h) * D + i] = acc;
			}
		}
	}
}

static void test_sink_random(void)
{
	enum { T = 6, H = 3, D = 8, N = 20, E = 5, K = 3, M = 2 };
	const int64_t pos = 8; /* positions 8..13: 4..7 closed entries, E = 5 rows */
	float q[T * H * D], kv[N * D], sinks[H], entries[E * D], y[T * H * D];
	double want[T * H * D];
	fill(q, T * H * D, 31), fill(kv, N * D, 32), fill(sinks, H, 33), fill(entries, E * D, 34);
	/* the ids of each row: closed entries in any order, -1 anywhere */
	const int32_t ids[T * K] = {3, -1, 0, 4, 1, -1, -1, -1, 2, 4, 3, 2, 0, -1, 1, 2, 4, 3};
	ref_sink_params p = {.scale = 0.35f, .window = 4, .ratio = M, .N = N, .E = E, .k = K};
	ref_error e;
	expect_true("sink_attention with ids runs",
		    ref_sink_attention(&p, q, kv, sinks, entries, ids, y, T, H, D, pos, &e));
	sink_f64(&p, q, kv, sinks, entries, ids, T, H, D, pos, want);
	for (int i = 0; i < T * H * D; i++)
		expect_near("sink_attention with ids vs f64", y[i], want[i], 1e-5);
	/* without ids every closed entry; at most 5 closed up to position 10 */
	p.k = 0;
	expect_true("sink_attention with entries runs",
		    ref_sink_attention(&p, q, kv, sinks, entries, NULL, y, 3, H, D, pos, &e));
	sink_f64(&p, q, kv, sinks, entries, NULL, 3, H, D, pos, want);
	for (int i = 0; i < 3 * H * D; i++)
		expect_near("sink_attention all entries vs f64", y[i], want[i], 1e-5);
	expect_true("closed entries past E are refused",
		    !ref_sink_attention(&p, q, kv, sinks, entries, NULL, y, T, H, D, pos, &e) &&
			    strstr(e.msg, "entries hold 5"));
	p.E = 0;
	expect_true("sink_attention window only runs",
		    ref_sink_attention(&p, q, kv, sinks, NULL, NULL, y, T, H, D, pos, &e));
	sink_f64(&p, q, kv, sinks, NULL, NULL, T, H, D, pos, want);
	for (int i = 0; i < T * H * D; i++)
		expect_near("sink_attention window only vs f64", y[i], want[i], 1e-5);
	p.N = T + p.window - 2; /* positions past it wrap a ring one row short of the step and its window */
	expect_true("a ring too short for the step is refused",
		    !ref_sink_attention(&p, q, kv, sinks, NULL, NULL, y, T, H, D, p.N - T + 1, &e) &&
			    strstr(e.msg, "the cache holds 8"));
	p.N = N;
	/* ids that are not closed entries, or repeated */
	p.E = E, p.k = K;
	const int32_t future[K] = {4, -1, -1}, twice[K] = {1, -1, 1};
	expect_true("an id not yet closed is refused",
		    !ref_sink_attention(&p, q, kv, sinks, entries, future, y, 1, H, D, 8, &e) &&
			    strstr(e.msg, "not a closed"));
	expect_true("a repeated id is refused",
		    !ref_sink_attention(&p, q, kv, sinks, entries, twice, y, 1, H, D, 8, &e) && strstr(e.msg, "repeated"));
}

/* ---- prefill and decode agree ---------------------------------------------------------------- */

/* Runs compress_kv over positions 0..N-1 in the chunks of `cut` (summing to
 * N), storing each step's rows through state_write every into entries. */
static void compress_in_steps(const float *c, const float *z, const float *bias, const int *cut, int64_t N, int64_t D,
			      int64_t M, float *rows, float *entries)
{
	ref_error e;
	for (int64_t pos = 0, i = 0; pos < N; pos += cut[i++]) {
		expect_true("a compress_kv step runs",
			    ref_compress_kv(c, z, bias, rows + pos * D, cut[i], N, D, M, true, pos, &e) &&
				    ref_state_write_every(rows + pos * D, entries, cut[i], N / M, D, pos, M, &e));
	}
}

/* The caches hold every position's projections (as the per-token states
 * do); whatever the step sizes, every row and every stored entry is the
 * same, bit for bit, and so are the indexer's ids and the attention that
 * reads them. */
static void test_streaming(void)
{
	enum { N = 40, D = 6, M = 4, W = 2 * D, H = 2 };
	static const int whole[] = {N}, uneven[] = {3, 5, 1, 7, 2, 9, 4, 6, 3};
	int ones[N];
	for (int i = 0; i < N; i++)
		ones[i] = 1;
	const int *cuts[3] = {whole, ones, uneven};
	float *c = floats(N * W), *z = floats(N * W), *bias = floats(M * W);
	fill(c, N * W, 41), fill(z, N * W, 42), fill(bias, M * W, 43);
	float *rows[3], *entries[3];
	for (int s = 0; s < 3; s++) {
		rows[s] = floats(N * D), entries[s] = floats(N / M * D);
		compress_in_steps(c, z, bias, cuts[s], N, D, M, rows[s], entries[s]);
	}
	for (int s = 1; s < 3; s++) {
		expect_true("compress_kv rows: one call = these steps", memcmp(rows[0], rows[s], N * D * 4) == 0);
		expect_true("stored entries: one call = these steps", memcmp(entries[0], entries[s], N / M * D * 4) == 0);
	}
	/* the indexer and the attention over those entries, one call against one token at a time */
	float q[N * H * D], w[N * H], kv[N * D], sinks[H], y1[N * H * D], yt[N * H * D];
	int32_t ids1[N * 2], idst[N * 2];
	fill(q, N * H * D, 44), fill(w, N * H, 45), fill(kv, N * D, 46), fill(sinks, H, 47);
	ref_sink_params p = {.scale = 0.4f, .window = 8, .ratio = M, .N = N, .E = N / M, .k = 2};
	ref_error e;
	ref_index_topk(q, w, entries[0], ids1, N, H, D, N / M, 2, M, 0.5f, 0);
	bool ok = ref_sink_attention(&p, q, kv, sinks, entries[0], ids1, y1, N, H, D, 0, &e);
	for (int64_t t = 0; t < N; t++) {
		ref_index_topk(q + t * H * D, w + t * H, entries[0], idst + t * 2, 1, H, D, N / M, 2, M, 0.5f, t);
		ok = ok && ref_sink_attention(&p, q + t * H * D, kv, sinks, entries[0], idst + t * 2, yt + t * H * D, 1, H,
					      D, t, &e);
	}
	expect_true("index_topk: one call = one token at a time", memcmp(ids1, idst, sizeof ids1) == 0);
	expect_true("sink_attention: one call = one token at a time", ok && memcmp(y1, yt, sizeof y1) == 0);
	for (int s = 0; s < 3; s++)
		free(rows[s]), free(entries[s]);
	free(c), free(z), free(bias);
}

/* Rings: caches of the last R positions (state_write ring, rows q mod R)
 * give the full caches' bits, step after step, as long as R holds the
 * step's rows and what they read: compress_kv's windows (R = T + 2m - 1
 * with overlap) and sink_attention's window (R = T + Wn - 1). Positions
 * run past R several times, in decode steps and in uneven chunks. */
static void test_rings(void)
{
	enum { N = 60, D = 6, M = 4, W = 2 * D, H = 2, WN = 5, TMAX = 7 };
	static const int uneven[] = {7, 3, 1, 6, 2, 7, 5, 1, 4, 7, 7, 3, 7};
	float *c = floats(N * W), *z = floats(N * W), *bias = floats(M * W), *kv = floats(N * D);
	float q[N * H * D], sinks[H];
	fill(c, N * W, 51), fill(z, N * W, 52), fill(bias, M * W, 53), fill(kv, N * D, 54);
	fill(q, N * H * D, 55), fill(sinks, H, 56);
	const int64_t RC = TMAX + 2 * M - 1, RK = TMAX + WN - 1;
	float *cr = floats(RC * W), *zr = floats(RC * W), *kvr = floats(RK * D);
	float *full = floats(N * D), *ring = floats(N * D), *yf = floats(N * H * D), *yr = floats(N * H * D);
	ref_sink_params pf = {.scale = 0.4f, .window = WN, .N = N}, pr = pf;
	pr.N = RK;
	ref_error e;
	bool ok = true;
	for (int64_t pos = 0, i = 0; ok && pos < N; pos += uneven[i++]) {
		int64_t T = uneven[i];
		ok = ref_state_write_ring(c + pos * W, cr, T, RC, W, pos, &e) &&
		     ref_state_write_ring(z + pos * W, zr, T, RC, W, pos, &e) &&
		     ref_state_write_ring(kv + pos * D, kvr, T, RK, D, pos, &e) &&
		     ref_compress_kv(c, z, bias, full + pos * D, T, N, D, M, true, pos, &e) &&
		     ref_compress_kv(cr, zr, bias, ring + pos * D, T, RC, D, M, true, pos, &e) &&
		     ref_sink_attention(&pf, q + pos * H * D, kv, sinks, NULL, NULL, yf + pos * H * D, T, H, D, pos, &e) &&
		     ref_sink_attention(&pr, q + pos * H * D, kvr, sinks, NULL, NULL, yr + pos * H * D, T, H, D, pos, &e);
	}
	expect_true("ring steps run", ok);
	expect_true("compress_kv over rings = over the full caches", memcmp(full, ring, N * D * 4) == 0);
	expect_true("sink_attention over a ring = over the full cache", memcmp(yf, yr, N * H * D * 4) == 0);
	expect_true("a step longer than its ring is refused",
		    !ref_state_write_ring(kv, kvr, RK + 1, RK, D, 0, &e) && strstr(e.msg, "do not fit a ring"));
	free(c), free(z), free(bias), free(kv), free(cr), free(zr), free(kvr), free(full), free(ring), free(yf), free(yr);
}

int main(void)
{
	test_yarn_tiny();
	test_yarn_flash();
	test_rope_hand();
	test_rope_random();
	test_state_write_every();
	test_compress_hand();
	test_compress_random();
	test_index_hand();
	test_index_random();
	test_sink_hand();
	test_sink_random();
	test_streaming();
	test_rings();
	if (expect_failures) {
		printf("%d failure(s)\n", expect_failures);
		return 1;
	}
	printf("all DeepSeek V4 attention reference op tests passed\n");
	return 0;
}
