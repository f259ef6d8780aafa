/* The DeepSeek V4 reference ops and attributes (docs/ops.md): hc_weights (both
 * forms), hc_collapse, hc_expand, the unweighted rms_norm, the grouped
 * matmul, moe_route's scorings, bias and scaling, moe_route_hash, the
 * clamped experts (limit) and clamp_max / clamp_abs. Each on a case worked
 * out by hand and on random inputs against a direct double-precision
 * computation written here; then through ref_exec_dispatch, so that the
 * dispatch hands each op its operands and attributes as docs/ops.md says
 * (bitwise the direct call). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/runtime/expect.h"
#include "runtime/drivers/ref/ref_exec.h"

enum {
#define IR_OP(id, name, cls, expr) OP_##id,
#include "kernels/ops.def"
#undef IR_OP
};

/* Deterministic values of magnitude in [0.05, 1) times amp, either sign:
 * never zero, so no term of a sum can hide. */
static void fill(float *x, int64_t n, float amp, uint32_t seed)
{
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		double u = (seed >> 9) / 8388608.0; /* [0, 1) */
		x[i] = (float)(amp * (0.05 + 0.95 * u) * ((seed >> 8) & 1 ? 1 : -1));
	}
}

/* max |got - want| / max(|want|, floor) over n values, against tol. */
static void expect_close(const char *what, const float *got, const double *want, int64_t n, double tol,
			 double floor)
{
	double worst = 0;
	int64_t at = 0;
	for (int64_t i = 0; i < n; i++) {
		double e = fabs(got[i] - want[i]) / fmax(fabs(want[i]), floor);
		if (!(e <= worst))
			worst = e, at = i;
	}
	if (!(worst <= tol)) {
		printf("FAIL %s: element %lld got %.9g want %.9g (error %.3g > %.3g)\n", what, (long long)at, got[at],
		       want[at], worst, tol);
		expect_failures++;
	}
}

static double d_sigmoid(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

/* ---- hc_weights ---------------------------------------------------------------- */

/* models.md 3.4 for one token, in f64. */
static void d_hc_weights(const float *mix, const float *base, const float *scale, int64_t n, int64_t iters,
			 double eps, bool full, double *pre, double *post, double *C)
{
	for (int64_t j = 0; j < n; j++)
		pre[j] = d_sigmoid((double)mix[j] * scale[0] + base[j]) + eps;
	if (!full)
		return;
	for (int64_t j = 0; j < n; j++)
		post[j] = 2.0 * d_sigmoid((double)mix[n + j] * scale[1] + base[n + j]);
	for (int64_t j = 0; j < n; j++) {
		double z[16], m = -INFINITY, sum = 0;
		for (int64_t k = 0; k < n; k++) {
			z[k] = (double)mix[2 * n + j * n + k] * scale[2] + base[2 * n + j * n + k];
			m = fmax(m, z[k]);
		}
		for (int64_t k = 0; k < n; k++)
			sum += exp(z[k] - m);
		for (int64_t k = 0; k < n; k++)
			C[j * n + k] = exp(z[k] - m) / sum + eps;
	}
	for (int64_t it = 0; it < iters; it++) {
		for (int64_t j = 0; it > 0 && j < n; j++) { /* rows, from the second round on */
			double s = 0;
			for (int64_t k = 0; k < n; k++)
				s += C[j * n + k];
			for (int64_t k = 0; k < n; k++)
				C[j * n + k] /= s + eps;
		}
		for (int64_t k = 0; k < n; k++) { /* columns */
			double s = 0;
			for (int64_t j = 0; j < n; j++)
				s += C[j * n + k];
			for (int64_t j = 0; j < n; j++)
				C[j * n + k] /= s + eps;
		}
	}
}

/* n = 2, eps 0: softmax rows [1/4, 3/4] and [1/2, 1/2]; columns sum to 3/4
 * and 5/4, so one pass gives [[1/3, 3/5], [2/3, 2/5]]; with iters 2 the
 * rows ([5/14, 9/14], [5/8, 3/8]) and the columns again give
 * [[4/11, 12/19], [7/11, 7/19]]. */
static void test_hc_weights_hand(void)
{
	const float l3 = logf(3.0f);
	const float mix[8] = {0, l3, l3, 0, 0, l3, 0, 0}, base[8] = {0}, scale[3] = {2, 1, 1};
	float pre[2], post[2], comb[4];
	ref_hc_weights(mix, base, scale, pre, post, comb, 1, 2, 1, 0.0f);
	expect_near("hc pre sigma(0)", pre[0], 0.5, 1e-7);
	expect_near("hc pre sigma(2 ln 3) = 9/10", pre[1], 0.9, 1e-7);
	expect_near("hc post 2 sigma(ln 3)", post[0], 1.5, 1e-6);
	expect_near("hc post 2 sigma(0)", post[1], 1.0, 1e-7);
	const double one[4] = {1.0 / 3, 3.0 / 5, 2.0 / 3, 2.0 / 5}, two[4] = {4.0 / 11, 12.0 / 19, 7.0 / 11, 7.0 / 19};
	for (int i = 0; i < 4; i++)
		expect_near("hc comb, iters 1", comb[i], one[i], 1e-7);
	ref_hc_weights(mix, base, scale, pre, post, comb, 1, 2, 2, 0.0f);
	for (int i = 0; i < 4; i++)
		expect_near("hc comb, iters 2", comb[i], two[i], 1e-7);
	/* eps: pre gains it, and softmax + eps then (1 + 2 eps) per column */
	ref_hc_weights(mix, base, scale, pre, post, comb, 1, 2, 1, 0.25f);
	expect_near("hc pre + eps", pre[0], 0.75, 1e-7);
	expect_near("hc comb with eps", comb[0], (0.25 + 0.25) / (0.5 + 0.75 + 0.25), 1e-7);
}

/* Random T x n = 4 streams, 20 iterations, eps 1e-6, against f64.
 * Tolerance: pre and post are a sigmoid of an f32 product-sum (a few ulp,
 * 1e-6 absolute is ten times that); comb runs 39 normalisation passes of
 * an f32 division by an f32-rounded f64 sum, each within 2 ulp, and
 * Sinkhorn passes do not amplify relative errors: at most 39 * 2 * 6e-8
 * = 5e-6 relative, taken as 1e-5. Columns sum to 1 - eps/sum after the
 * closing column pass; rows have converged (a positive 4 x 4 matrix) far
 * below 1e-4. */
static void test_hc_weights_random(void)
{
	enum { T = 3, n = 4, M = (2 + n) * n, IT = 20 };
	float mix[T * M], base[M], scale[3], pre[T * n], post[T * n], comb[T * n * n];
	double dpre[T * n], dpost[T * n], dcomb[T * n * n];
	fill(mix, T * M, 1.0f, 11), fill(base, M, 1.0f, 12), fill(scale, 3, 1.5f, 13);
	ref_hc_weights(mix, base, scale, pre, post, comb, T, n, IT, 1e-6f);
	for (int t = 0; t < T; t++)
		d_hc_weights(mix + t * M, base, scale, n, IT, 1e-6, true, dpre + t * n, dpost + t * n,
			     dcomb + t * n * n);
	expect_close("hc pre vs f64", pre, dpre, T * n, 1e-6, 1.0);
	expect_close("hc post vs f64", post, dpost, T * n, 1e-6, 1.0);
	expect_close("hc comb vs f64", comb, dcomb, T * n * n, 1e-5, 1e-3);
	for (int t = 0; t < T; t++)
		for (int a = 0; a < n; a++) {
			double row = 0, col = 0;
			for (int b = 0; b < n; b++) {
				row += comb[(t * n + a) * n + b];
				col += comb[(t * n + b) * n + a];
			}
			expect_near("comb row sums to 1", row, 1.0, 1e-4);
			expect_near("comb column sums to 1", col, 1.0, 1e-5);
		}
	/* the HyperHead's form: pre alone, from mix [T, n] and scale [1] */
	float hpre[T * n];
	ref_hc_weights(mix, base, scale, hpre, NULL, NULL, T, n, IT, 1e-6f);
	for (int t = 0; t < T; t++)
		d_hc_weights(mix + t * n, base, scale, n, IT, 1e-6, false, dpre + t * n, NULL, NULL);
	expect_close("hyperhead pre vs f64", hpre, dpre, T * n, 1e-6, 1.0);
}

/* ---- hc_collapse, hc_expand ------------------------------------------------------- */

/* Tolerance for both: one f64 sum of a few products rounded to f32 once,
 * against the same sum in f64: half an ulp, 1e-7 relative to the terms. */
static void test_hc_collapse_expand(void)
{
	/* by hand: pre = (0.5, 2) over streams (1, 2) and (3, 4) */
	const float x[4] = {1, 2, 3, 4}, pre[2] = {0.5f, 2};
	float y[2];
	ref_hc_collapse(x, pre, y, 1, 2, 2);
	expect_near("collapse [0]", y[0], 6.5, 0);
	expect_near("collapse [1]", y[1], 9.0, 0);
	/* by hand, H = 1: out_k = post_k y + sum_j C[j,k] x_j (the first index
	 * runs: C transposed would give 6.5 and 14) */
	const float xs[2] = {1, 2}, ys[1] = {3}, post[2] = {0.5f, 1}, C[4] = {1, 2, 3, 4};
	float out[2];
	ref_hc_expand(xs, ys, post, C, out, 1, 2, 1);
	expect_near("expand [0] = 1.5 + 1 + 6", out[0], 8.5, 0);
	expect_near("expand [1] = 3 + 2 + 8", out[1], 13.0, 0);

	enum { T = 3, n = 4, H = 40 };
	float rx[T * n * H], rp[T * n], rq[T * n], rc[T * n * n], ry[T * H], ro[T * n * H];
	double wy[T * H], wo[T * n * H];
	fill(rx, T * n * H, 2.0f, 21), fill(rp, T * n, 1.0f, 22), fill(rq, T * n, 2.0f, 23);
	fill(rc, T * n * n, 1.0f, 24), fill(ry, T * H, 2.0f, 25);
	float cy[T * H];
	ref_hc_collapse(rx, rp, cy, T, n, H);
	ref_hc_expand(rx, ry, rq, rc, ro, T, n, H);
	for (int t = 0; t < T; t++)
		for (int h = 0; h < H; h++) {
			wy[t * H + h] = 0;
			for (int j = 0; j < n; j++)
				wy[t * H + h] += (double)rp[t * n + j] * rx[(t * n + j) * H + h];
			for (int k = 0; k < n; k++) {
				double s = (double)rq[t * n + k] * ry[t * H + h];
				for (int j = 0; j < n; j++)
					s += (double)rc[(t * n + j) * n + k] * rx[(t * n + j) * H + h];
				wo[(t * n + k) * H + h] = s;
			}
		}
	expect_close("collapse vs f64", cy, wy, T * H, 1e-7, 1.0);
	expect_close("expand vs f64", ro, wo, T * n * H, 1e-7, 1.0);
}

/* ---- unweighted rms_norm, grouped matmul ------------------------------------------------ */

/* Tolerance: the mean of squares in f64 rounded once, then 1/sqrtf and a
 * product in f32: a few ulp, 1e-6 relative. */
static void test_rms_norm_unweighted(void)
{
	const float x[2] = {3, 4};
	float y[2];
	ref_rms_norm(x, NULL, y, 1, 2, 0, 0.0f, 0);
	expect_near("unweighted norm [3, 4] / sqrt(12.5)", y[0], 3 / sqrt(12.5), 1e-7);
	expect_near("unweighted norm [1]", y[1], 4 / sqrt(12.5), 1e-7);
	enum { R = 5, D = 48 };
	float rx[R * D], ry[R * D];
	double want[R * D];
	fill(rx, R * D, 3.0f, 31);
	ref_rms_norm(rx, NULL, ry, R, D, 0, 1e-6f, 0);
	for (int r = 0; r < R; r++) {
		double ss = 0;
		for (int i = 0; i < D; i++)
			ss += (double)rx[r * D + i] * rx[r * D + i];
		for (int i = 0; i < D; i++)
			want[r * D + i] = rx[r * D + i] / sqrt(ss / D + 1e-6);
	}
	expect_close("unweighted norm vs f64", ry, want, R * D, 1e-6, 1e-3);
}

/* Tolerance: each output is an f64 dot product rounded once; 1e-7
 * relative to the sum of |terms| (the floor) covers the rounding. */
static void test_matmul_grouped(void)
{
	/* by hand: groups 2, K = 2: y0 = (1, 2).(1, 1), y1 = (3, 4).(1, -1) */
	const float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, -1};
	float y[2];
	ref_matmul_grouped(x, w, y, 1, 2, 2, 2);
	expect_near("grouped y0", y[0], 3, 0);
	expect_near("grouped y1", y[1], -1, 0);
	enum { T = 3, G = 4, K = 24, N = 16 };
	float rx[T * G * K], rw[N * K], ry[T * N];
	double want[T * N];
	fill(rx, T * G * K, 1.0f, 41), fill(rw, N * K, 1.0f, 42);
	ref_matmul_grouped(rx, rw, ry, T, K, N, G);
	for (int t = 0; t < T; t++)
		for (int o = 0; o < N; o++) {
			double s = 0;
			for (int k = 0; k < K; k++)
				s += (double)rx[t * G * K + (o / (N / G)) * K + k] * rw[o * K + k];
			want[t * N + o] = s;
		}
	expect_close("grouped matmul vs f64", ry, want, T * N, 1e-6, 1.0);
	/* one group is the plain matmul */
	float plain[T * N];
	ref_matmul(rx, rw, plain, T, K, N);
	ref_matmul_grouped(rx, rw, ry, T, K, N, 1);
	expect_true("groups 1 = matmul", memcmp(plain, ry, sizeof plain) == 0);
}

/* ---- routing ------------------------------------------------------------------------- */

static double d_score(ref_scoring s, const float *x, int64_t E, int64_t e)
{
	if (s == REF_SCORE_SIGMOID)
		return d_sigmoid(x[e]);
	if (s == REF_SCORE_SQRTSOFTPLUS)
		return sqrt(x[e] > 20 ? x[e] : log1p(exp(x[e])));
	double m = -INFINITY, sum = 0;
	for (int64_t i = 0; i < E; i++)
		m = fmax(m, x[i]);
	for (int64_t i = 0; i < E; i++)
		sum += exp(x[i] - m);
	return exp(x[e] - m) / sum;
}

/* The f64 router of one token: ids by s + bias (first best on ties),
 * weights s[ids] renormalised and scaled. */
static void d_route(const ref_route_params *p, const float *x, const float *bias, const int32_t *given, int64_t E,
		    int32_t *ids, double *w)
{
	double s[256], sum = 0;
	bool taken[256] = {false};
	for (int64_t e = 0; e < E; e++)
		s[e] = d_score(p->scoring, x, E, e);
	for (int64_t j = 0; j < p->k; j++) {
		int64_t best = -1;
		for (int64_t e = 0; !given && e < E; e++)
			if (!taken[e] && (best < 0 || s[e] + (bias ? bias[e] : 0) > s[best] + (bias ? bias[best] : 0)))
				best = e;
		ids[j] = given ? given[j] : (int32_t)best;
		taken[ids[j]] = true;
		w[j] = s[ids[j]];
		sum += w[j];
	}
	for (int64_t j = 0; j < p->k; j++)
		w[j] = (p->norm_topk ? w[j] / (sum + (p->scoring == REF_SCORE_SOFTMAX ? 0 : 1e-20)) : w[j]) * p->scaling;
}

static void test_route_hand(void)
{
	/* sigmoid scores (1/2, 3/4, 1/4); the bias (0, -1, 0.6) selects 2 then
	 * 0; their scores renormalised (1/3, 2/3) and scaled by 2 */
	const float l3 = logf(3.0f), logits[3] = {0, l3, -l3}, bias[3] = {0, -1, 0.6f};
	ref_route_params p = {.k = 2, .norm_topk = true, .scoring = REF_SCORE_SIGMOID, .scaling = 2.0f};
	int32_t ids[2];
	float w[2];
	ref_moe_route(&p, logits, bias, ids, w, 1, 3);
	expect_true("bias selects experts 2, 0", ids[0] == 2 && ids[1] == 0);
	expect_near("weight from the score, not the bias [0]", w[0], 2.0 / 3, 1e-7);
	expect_near("weight [1]", w[1], 4.0 / 3, 2e-7);
	/* sqrt(softplus): softplus of ln(e^s^2 - 1) is s^2, so scores 1, 2, 1/2 */
	const float sp[3] = {logf(expf(1) - 1), logf(expf(4) - 1), logf(expf(0.25f) - 1)};
	p = (ref_route_params){.k = 1, .norm_topk = false, .scoring = REF_SCORE_SQRTSOFTPLUS, .scaling = 1.5f};
	ref_moe_route(&p, sp, NULL, ids, w, 1, 3);
	expect_true("sqrtsoftplus picks expert 1", ids[0] == 1);
	expect_near("sqrtsoftplus weight 2 * 1.5", w[0], 3.0, 2e-6);
	/* hash: tokens 2 and 0 read table rows (1, 2) and (0, 1) */
	const float table[6] = {0, 1, 2, 0, 1, 2}, hl[6] = {0, l3, -l3, 0, l3, -l3};
	const int32_t tokens[2] = {2, 0};
	int32_t hid[4];
	float hw[4];
	ref_error e;
	p = (ref_route_params){.k = 2, .norm_topk = false, .scoring = REF_SCORE_SIGMOID, .scaling = 1.0f};
	expect_true("moe_route_hash runs", ref_moe_route_hash(&p, hl, table, tokens, hid, hw, 2, 3, 3, &e));
	expect_true("hash ids", hid[0] == 1 && hid[1] == 2 && hid[2] == 0 && hid[3] == 1);
	expect_near("hash weight [0]", hw[0], 0.75, 1e-7);
	expect_near("hash weight [3]", hw[3], 0.75, 1e-7);
	const int32_t far[1] = {3};
	expect_true("a token past the table is refused",
		    !ref_moe_route_hash(&p, hl, table, far, hid, hw, 1, 3, 3, &e) && strstr(e.msg, "token 0 is 3"));
	const float bad_id[2] = {0, 3}, half[2] = {0, 1.5f};
	expect_true("an id past the experts is refused",
		    !ref_moe_route_hash(&p, hl, bad_id, tokens + 1, hid, hw, 1, 3, 1, &e) && strstr(e.msg, "holds 3"));
	expect_true("a fractional id is refused",
		    !ref_moe_route_hash(&p, hl, half, tokens + 1, hid, hw, 1, 3, 1, &e) && strstr(e.msg, "holds 1.5"));
}

/* Random logits over 40 experts, every scoring, with and without bias and
 * renormalisation. ids exactly (the spread inputs leave no two candidates
 * within rounding); weights within 2e-6 relative: a score is a few f32
 * operations (expf, log1pf, sqrtf each within an ulp or two), then one
 * f64-summed division and the scaling's product. */
static void test_route_random(void)
{
	enum { T = 4, E = 40, K = 6 };
	float x[T * E], bias[E], w[T * K];
	int32_t ids[T * K], wid[K];
	double want[T * K];
	fill(x, T * E, 4.0f, 51), fill(bias, E, 0.5f, 52);
	for (int s = 0; s < 3; s++)
		for (int v = 0; v < 4; v++) {
			ref_route_params p = {.k = K, .norm_topk = v & 1, .scoring = (ref_scoring)s,
					      .scaling = v & 2 ? 2.5f : 1.0f};
			const float *b = v & 2 ? bias : NULL;
			ref_moe_route(&p, x, b, ids, w, T, E);
			bool same = true;
			for (int t = 0; t < T; t++) {
				d_route(&p, x + t * E, b, NULL, E, wid, want + t * K);
				same &= memcmp(wid, ids + t * K, sizeof wid) == 0;
			}
			char what[96];
			snprintf(what, sizeof what, "route scoring %d variant %d ids", s, v);
			expect_true(what, same);
			snprintf(what, sizeof what, "route scoring %d variant %d weights", s, v);
			expect_close(what, w, want, T * K, 2e-6, 1e-30);
		}
	/* the hash router's weights are the same function of its table's ids */
	float table[5 * K];
	const int32_t tokens[T] = {4, 0, 2, 4};
	for (int r = 0; r < 5; r++)
		for (int j = 0; j < K; j++)
			table[r * K + j] = (float)((r * 7 + j * 5) % E);
	ref_route_params p = {.k = K, .norm_topk = true, .scoring = REF_SCORE_SQRTSOFTPLUS, .scaling = 2.5f};
	ref_error e;
	expect_true("hash route runs", ref_moe_route_hash(&p, x, table, tokens, ids, w, T, E, 5, &e));
	bool same = true;
	for (int t = 0; t < T; t++) {
		int32_t given[K];
		for (int j = 0; j < K; j++)
			given[j] = (int32_t)table[tokens[t] * K + j];
		d_route(&p, x + t * E, NULL, given, E, wid, want + t * K);
		same &= memcmp(given, ids + t * K, sizeof given) == 0;
	}
	expect_true("hash ids = table rows", same);
	expect_close("hash weights vs f64", w, want, T * K, 2e-6, 1e-30);
}

/* ---- clamped experts ------------------------------------------------------------------ */

/* by hand: H = F = E = k = 1, x = 2, gate 3, up -4: g = 6, u = -8; limit 5
 * clamps both to 5 and -5 */
static void test_limit_hand(void)
{
	const float x[1] = {2}, gate[1] = {3}, up[1] = {-4}, down[1] = {0.5f}, w[1] = {2};
	const int32_t ids[1] = {0};
	float act[1], y[1];
	ref_error e;
	expect_true("gate_up, no limit", ref_moe_gate_up(x, ids, gate, up, act, 1, 1, 1, 1, 1, 0.0f, &e));
	expect_near("no limit: silu(6) * -8", act[0], ref_silu_f(6) * -8.0f, 0);
	expect_true("gate_up, limit 5", ref_moe_gate_up(x, ids, gate, up, act, 1, 1, 1, 1, 1, 5.0f, &e));
	expect_near("limit 5: silu(5) * -5", act[0], ref_silu_f(5) * -5.0f, 0);
	expect_true("experts, limit 5", ref_moe_experts(x, ids, w, gate, up, down, y, 1, 1, 1, 1, 1, 5.0f, &e));
	expect_near("experts: 2 * 0.5 * silu(5) * -5", y[0], ref_silu_f(5) * -5.0f, 0);
}

static double d_silu(double v)
{
	return v * d_sigmoid(v);
}

/* Random experts with a limit that fires on both sides of u and above g,
 * against f64: the dots rounded to f32 once (half an ulp) and silu in f32
 * (a few ulp) give 1e-5 relative, the floor 1e-2 absorbing the
 * cancellation of small products. */
static void test_limit_random(void)
{
	enum { T = 3, H = 16, F = 6, E = 4, K = 2 };
	const float L = 0.75f;
	float x[T * H], gate[E * F * H], up[E * F * H], act[T * K * F];
	double want[T * K * F];
	const int32_t ids[T * K] = {0, 3, 2, 1, 3, 2};
	fill(x, T * H, 1.0f, 61), fill(gate, E * F * H, 0.5f, 62), fill(up, E * F * H, 0.5f, 63);
	ref_error e;
	expect_true("gate_up with limit runs", ref_moe_gate_up(x, ids, gate, up, act, T, H, F, E, K, L, &e));
	int g_fired = 0, u_low = 0, u_high = 0;
	for (int i = 0; i < T * K; i++)
		for (int f = 0; f < F; f++) {
			double g = 0, u = 0;
			for (int h = 0; h < H; h++) {
				g += (double)gate[(ids[i] * F + f) * H + h] * x[(i / K) * H + h];
				u += (double)up[(ids[i] * F + f) * H + h] * x[(i / K) * H + h];
			}
			g_fired += g > L, u_low += u < -L, u_high += u > L;
			want[i * F + f] = d_silu(fmin(g, L)) * fmin(fmax(u, -L), L);
		}
	expect_true("the limit fires on g, and on u from both sides", g_fired && u_low && u_high);
	expect_close("clamped gate_up vs f64", act, want, T * K * F, 1e-5, 1e-2);
}

/* ---- clamp_max, clamp_abs ------------------------------------------------------------------ */

static void test_clamps(void)
{
	const float x[4] = {-3, -0.5f, 0.5f, 3};
	const float want_max[4] = {-3, -0.5f, 0.5f, 1}, want_abs[4] = {-1, -0.5f, 0.5f, 1};
	float y[4];
	const ref_bcast full = {REF_BCAST_FULL, 0};
	expect_true("clamp_max runs", ref_elementwise(OP_CLAMP_MAX, x, NULL, y, 4, full, 1.0f));
	expect_true("clamp_max by hand", memcmp(y, want_max, sizeof y) == 0);
	expect_true("clamp_abs runs", ref_elementwise(OP_CLAMP_ABS, x, NULL, y, 4, full, 1.0f));
	expect_true("clamp_abs by hand", memcmp(y, want_abs, sizeof y) == 0);
	enum { N = 64 };
	float r[N], a[N], b[N];
	fill(r, N, 3.0f, 71);
	ref_elementwise(OP_CLAMP_MAX, r, NULL, a, N, full, 0.8f);
	ref_elementwise(OP_CLAMP_ABS, r, NULL, b, N, full, 0.8f);
	bool ok = true;
	for (int i = 0; i < N; i++) /* exact: a clamp only chooses */
		ok &= a[i] == fminf(r[i], 0.8f) && b[i] == fmaxf(fminf(r[i], 0.8f), -0.8f);
	expect_true("clamps = fmin/fmax", ok);
}

/* ---- through ref_exec_dispatch ---------------------------------------------------------- */

/* A dispatch whose operand i lives at ptr[i] (its offset is i). */
typedef struct {
	halo_dispatch d;
	void *ptr[HALO_MAX_OPERANDS];
} disp;

static void *resolve(void *ctx, const halo_tensor_ref *t)
{
	return ((disp *)ctx)->ptr[t->offset];
}

static void operand(disp *x, void *data, halo_dtype dt, int rank, const int64_t *dims)
{
	int i = x->d.n_in + x->d.n_out;
	halo_tensor_ref *t = &x->d.operand[i];
	*t = (halo_tensor_ref){.space = HALO_SPACE_ACT, .offset = (uint64_t)i, .dtype = dt, .rank = rank};
	for (int k = 0; k < rank; k++)
		t->dim[k] = (halo_affine){0, dims[k]};
	x->ptr[i] = data;
}

#define IN(x, data, dt, ...) (operand(x, data, dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, (int64_t[]){__VA_ARGS__}), \
			      (x)->d.n_in++)
#define OUT(x, data, dt, ...) (operand(x, data, dt, sizeof((int64_t[]){__VA_ARGS__}) / 8, (int64_t[]){__VA_ARGS__}), \
			       (x)->d.n_out++)

static void attr_int(disp *x, const char *name, int64_t v)
{
	halo_attr *a = &x->d.attr[x->d.n_attr++];
	*a = (halo_attr){.i = v};
	snprintf(a->name, sizeof a->name, "%s", name);
}

static void attr_float(disp *x, const char *name, double v)
{
	halo_attr *a = &x->d.attr[x->d.n_attr++];
	*a = (halo_attr){.is_float = true, .f = v};
	snprintf(a->name, sizeof a->name, "%s", name);
}

static void attr_str(disp *x, const char *name, const char *v)
{
	halo_attr *a = &x->d.attr[x->d.n_attr++];
	*a = (halo_attr){.is_str = true};
	snprintf(a->name, sizeof a->name, "%s", name);
	snprintf(a->s, sizeof a->s, "%s", v);
}

static disp *new_dispatch(int op)
{
	disp *x = calloc(1, sizeof *x);
	if (!x)
		abort();
	x->d.node = "n";
	x->d.op = op;
	return x;
}

/* Runs x at T tokens, then frees it. */
static bool run(const char *what, disp *x, int64_t T)
{
	char err[512];
	bool ok = ref_exec_dispatch(&x->d, T, 0, resolve, x, err, sizeof err);
	if (!ok)
		printf("FAIL %s: %s\n", what, err);
	expect_failures += !ok;
	free(x);
	return ok;
}

static void expect_same(const char *what, const void *a, const void *b, size_t bytes)
{
	expect_true(what, memcmp(a, b, bytes) == 0);
}

static void test_dispatch_norm_matmul(void)
{
	enum { T = 2, D = 12, G = 3, K = 4, N = 6 };
	float x[T * D], y[T * D], want[T * D], w[N * K], mm[T * N], mm_want[T * N];
	fill(x, T * D, 2.0f, 81), fill(w, N * K, 1.0f, 82);
	disp *c = new_dispatch(OP_RMS_NORM); /* (x) alone: no weight operand */
	IN(c, x, HALO_F32, T, D), OUT(c, y, HALO_F32, T, D);
	attr_float(c, "eps", 1e-5);
	if (run("unweighted rms_norm dispatch", c, T)) {
		ref_rms_norm(x, NULL, want, T, D, 0, 1e-5f, 0);
		expect_same("unweighted rms_norm dispatch = ref", y, want, sizeof y);
	}
	c = new_dispatch(OP_MATMUL); /* x [T, G*K], w [N, K] */
	IN(c, x, HALO_F32, T, D), IN(c, w, HALO_F32, N, K), OUT(c, mm, HALO_F32, T, N);
	attr_int(c, "groups", G);
	if (run("grouped matmul dispatch", c, T)) {
		ref_matmul_grouped(x, w, mm_want, T, K, N, G);
		expect_same("grouped matmul dispatch = ref", mm, mm_want, sizeof mm);
	}
}

static void test_dispatch_routing(void)
{
	enum { T = 3, E = 16, K = 4, V = 5 };
	float logits[T * E], bias[E], w[T * K], w_want[T * K], table[V * K];
	int32_t ids[T * K], ids_want[T * K];
	const int32_t tokens[T] = {3, 1, 4};
	fill(logits, T * E, 3.0f, 91), fill(bias, E, 0.3f, 92);
	for (int i = 0; i < V * K; i++)
		table[i] = (float)((i * 3) % E);
	disp *c = new_dispatch(OP_MOE_ROUTE); /* no DeepSeek attributes: softmax, scaling 1 */
	IN(c, logits, HALO_F32, T, E), OUT(c, ids, HALO_I32, T, K), OUT(c, w, HALO_F32, T, K);
	attr_int(c, "k", K), attr_int(c, "norm_topk", 1);
	ref_route_params p = {.k = K, .norm_topk = true, .scoring = REF_SCORE_SOFTMAX, .scaling = 1.0f};
	if (run("moe_route dispatch", c, T)) {
		ref_moe_route(&p, logits, NULL, ids_want, w_want, T, E);
		expect_same("moe_route dispatch ids", ids, ids_want, sizeof ids);
		expect_same("moe_route dispatch weights", w, w_want, sizeof w);
	}
	c = new_dispatch(OP_MOE_ROUTE);
	IN(c, logits, HALO_F32, T, E), IN(c, bias, HALO_F32, E), OUT(c, ids, HALO_I32, T, K), OUT(c, w, HALO_F32, T, K);
	attr_int(c, "k", K), attr_int(c, "norm_topk", 1), attr_str(c, "scoring", "sqrtsoftplus");
	attr_float(c, "scaling", 2.5);
	p = (ref_route_params){.k = K, .norm_topk = true, .scoring = REF_SCORE_SQRTSOFTPLUS, .scaling = 2.5f};
	if (run("moe_route dispatch with bias", c, T)) {
		ref_moe_route(&p, logits, bias, ids_want, w_want, T, E);
		expect_same("biased moe_route dispatch ids", ids, ids_want, sizeof ids);
		expect_same("biased moe_route dispatch weights", w, w_want, sizeof w);
	}
	c = new_dispatch(OP_MOE_ROUTE_HASH);
	IN(c, logits, HALO_F32, T, E), IN(c, table, HALO_F32, V, K), IN(c, (void *)tokens, HALO_I32, T);
	OUT(c, ids, HALO_I32, T, K), OUT(c, w, HALO_F32, T, K);
	attr_int(c, "norm_topk", 0), attr_str(c, "scoring", "sigmoid"), attr_float(c, "scaling", 1.5);
	p = (ref_route_params){.k = K, .norm_topk = false, .scoring = REF_SCORE_SIGMOID, .scaling = 1.5f};
	ref_error e;
	if (run("moe_route_hash dispatch", c, T)) {
		ref_moe_route_hash(&p, logits, table, tokens, ids_want, w_want, T, E, V, &e);
		expect_same("moe_route_hash dispatch ids", ids, ids_want, sizeof ids);
		expect_same("moe_route_hash dispatch weights", w, w_want, sizeof w);
	}
}

static void test_dispatch_hc_and_limit(void)
{
	enum { T = 2, n = 4, M = (2 + n) * n, H = 8, F = 3, E = 2, K = 2 };
	float mix[T * M], base[M], scale[3], pre[T * n], post[T * n], comb[T * n * n];
	float wpre[T * n], wpost[T * n], wcomb[T * n * n];
	fill(mix, T * M, 1.0f, 101), fill(base, M, 1.0f, 102), fill(scale, 3, 1.0f, 103);
	disp *c = new_dispatch(OP_HC_WEIGHTS);
	IN(c, mix, HALO_F32, T, M), IN(c, base, HALO_F32, M), IN(c, scale, HALO_F32, 3);
	OUT(c, pre, HALO_F32, T, n), OUT(c, post, HALO_F32, T, n), OUT(c, comb, HALO_F32, T, n, n);
	attr_int(c, "iters", 7), attr_float(c, "eps", 1e-4);
	if (run("hc_weights dispatch", c, T)) {
		ref_hc_weights(mix, base, scale, wpre, wpost, wcomb, T, n, 7, 1e-4f);
		expect_same("hc_weights dispatch pre", pre, wpre, sizeof pre);
		expect_same("hc_weights dispatch post", post, wpost, sizeof post);
		expect_same("hc_weights dispatch comb", comb, wcomb, sizeof comb);
	}
	c = new_dispatch(OP_HC_WEIGHTS); /* the HyperHead's form, attributes as read: iters 20, eps 1e-6 */
	IN(c, mix, HALO_F32, T, n), IN(c, base, HALO_F32, n), IN(c, scale, HALO_F32, 1), OUT(c, pre, HALO_F32, T, n);
	attr_int(c, "iters", 20), attr_float(c, "eps", 1e-6);
	if (run("hyperhead hc_weights dispatch", c, T)) {
		ref_hc_weights(mix, base, scale, wpre, NULL, NULL, T, n, 20, 1e-6f);
		expect_same("hyperhead dispatch pre", pre, wpre, sizeof pre);
	}
	float x[T * n * H], y[T * H], out[T * n * H], want[T * n * H];
	fill(x, T * n * H, 1.0f, 104), fill(y, T * H, 1.0f, 105);
	c = new_dispatch(OP_HC_COLLAPSE);
	IN(c, x, HALO_F32, T, n, H), IN(c, wpre, HALO_F32, T, n), OUT(c, out, HALO_F32, T, H);
	if (run("hc_collapse dispatch", c, T)) {
		ref_hc_collapse(x, wpre, want, T, n, H);
		expect_same("hc_collapse dispatch", out, want, T * H * sizeof(float));
	}
	c = new_dispatch(OP_HC_EXPAND);
	IN(c, x, HALO_F32, T, n, H), IN(c, y, HALO_F32, T, H), IN(c, wpost, HALO_F32, T, n);
	IN(c, wcomb, HALO_F32, T, n, n), OUT(c, out, HALO_F32, T, n, H);
	if (run("hc_expand dispatch", c, T)) {
		ref_hc_expand(x, y, wpost, wcomb, want, T, n, H);
		expect_same("hc_expand dispatch", out, want, sizeof out);
	}
	float gate[E * F * H], up[E * F * H], act[T * K * F], act_want[T * K * F];
	const int32_t ids[T * K] = {1, 0, 0, 1};
	fill(gate, E * F * H, 1.0f, 106), fill(up, E * F * H, 1.0f, 107);
	c = new_dispatch(OP_MOE_GATE_UP);
	IN(c, y, HALO_F32, T, H), IN(c, (void *)ids, HALO_I32, T, K), IN(c, gate, HALO_F32, E, F, H);
	IN(c, up, HALO_F32, E, F, H), OUT(c, act, HALO_F32, T, K, F);
	attr_float(c, "limit", 0.5);
	ref_error e;
	if (run("clamped moe_gate_up dispatch", c, T)) {
		ref_moe_gate_up(y, ids, gate, up, act_want, T, H, F, E, K, 0.5f, &e);
		expect_same("clamped moe_gate_up dispatch", act, act_want, sizeof act);
	}
}

int main(void)
{
	test_hc_weights_hand();
	test_hc_weights_random();
	test_hc_collapse_expand();
	test_rms_norm_unweighted();
	test_matmul_grouped();
	test_route_hand();
	test_route_random();
	test_limit_hand();
	test_limit_random();
	test_clamps();
	test_dispatch_norm_matmul();
	test_dispatch_routing();
	test_dispatch_hc_and_limit();
	printf("dsv4_ops: %d failure(s)\n", expect_failures);
	return expect_failures ? 1 : 0;
}
