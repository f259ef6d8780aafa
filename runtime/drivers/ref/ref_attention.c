/* attention (causal over the cache, GQA) and softmax. */
#include "runtime/drivers/ref/ref_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

/* In-place softmax of n scores: f32 max and exponentials, f64 denominator. */
static void softmax_row(float *s, int64_t n)
{
	float m = s[0];
	for (int64_t j = 1; j < n; j++)
		m = fmaxf(m, s[j]);
	double sum = 0.0;
	for (int64_t j = 0; j < n; j++) {
		s[j] = expf(s[j] - m);
		sum += s[j];
	}
	float inv = (float)(1.0 / sum);
	for (int64_t j = 0; j < n; j++)
		s[j] *= inv;
}

void ref_softmax(const float *x, float *y, int64_t rows, int64_t D)
{
	for (int64_t r = 0; r < rows; r++) {
		for (int64_t j = 0; j < D; j++)
			y[r * D + j] = x[r * D + j];
		softmax_row(y + r * D, D);
	}
}

/* One query row of one head: scores over keys 0..n-1 then the weighted sum. */
static void attend_row(const float *q, const float *k, const float *v, float *y, float *s,
		       int64_t n, int64_t hk, int64_t d, int64_t dv, int64_t kv, float scale)
{
	for (int64_t j = 0; j < n; j++) {
		const float *kj = k + (j * hk + kv) * d;
		double dot = 0.0;
		for (int64_t i = 0; i < d; i++)
			dot += (double)q[i] * (double)kj[i];
		s[j] = (float)dot * scale;
	}
	softmax_row(s, n);
	for (int64_t c = 0; c < dv; c++) {
		double acc = 0.0;
		for (int64_t j = 0; j < n; j++)
			acc += (double)s[j] * (double)v[(j * hk + kv) * dv + c];
		y[c] = (float)acc;
	}
}

bool ref_attention(const float *q, const float *k, const float *v, float *y, int64_t T, int64_t hq,
		   int64_t hk, int64_t d, int64_t dv, int64_t C, int64_t pos, float scale,
		   ref_error *err)
{
	if (pos < 0 || pos + T > C)
		return ref_fail(err, "attention", "positions [%" PRId64 ", %" PRId64
				") exceed the cache of %" PRId64 " rows", pos, pos + T, C);
	if (hk <= 0 || hq % hk != 0)
		return ref_fail(err, "attention", "%" PRId64 " query heads are not a multiple of %"
				PRId64 " kv heads", hq, hk);
	float *s = malloc((size_t)(pos + T) * sizeof *s);
	if (!s)
		return ref_fail(err, "attention", "out of memory");
	int64_t group = hq / hk;
	for (int64_t t = 0; t < T; t++)
		for (int64_t j = 0; j < hq; j++)
			attend_row(q + (t * hq + j) * d, k, v, y + (t * hq + j) * dv, s, pos + t + 1,
				   hk, d, dv, j / group, scale);
	free(s);
	return true;
}

/* The "no key" max score of an empty block, as the kernels write it. */
#define NO_KEY_MAX (-3.0e38f)

/* Whether key c of query row t counts: every key without a mask. */
static bool key_live(const float *mask, int64_t t, int64_t C, int64_t c)
{
	return !mask || mask[t * C + c] != 0.0f;
}

int64_t ref_mask_empty_row(const float *mask, int64_t T, int64_t C, int64_t pos)
{
	for (int64_t t = 0; mask && t < T; t++) {
		bool any = false;
		for (int64_t c = 0; c <= pos + t && !any; c++)
			any = key_live(mask, t, C, c);
		if (!any)
			return t;
	}
	return -1;
}

bool ref_attention_partial(const float *q, const float *k, const float *v, const float *mask, float *part, int64_t T,
			   int64_t hq, int64_t hk, int64_t d, int64_t dv, int64_t C, int64_t block, int64_t pos,
			   float scale, ref_error *err)
{
	if (pos < 0 || pos + T > C)
		return ref_fail(err, "attention_partial", "positions [%" PRId64 ", %" PRId64
				") exceed the cache of %" PRId64 " rows", pos, pos + T, C);
	if (hk <= 0 || hq % hk != 0 || block <= 0)
		return ref_fail(err, "attention_partial", "%" PRId64 " query heads, %" PRId64 " kv heads, block %" PRId64
				": heads must divide and the block be positive", hq, hk, block);
	int64_t empty = ref_mask_empty_row(mask, T, C, pos);
	if (empty >= 0)
		return ref_fail(err, "attention_partial", "query row %" PRId64 " sees no key", empty);
	int64_t S = (C + block - 1) / block, group = hq / hk;
	float *s = malloc((size_t)block * sizeof *s);
	if (!s)
		return ref_fail(err, "attention_partial", "out of memory");
	for (int64_t t = 0; t < T; t++)
		for (int64_t j = 0; j < hq; j++)
			for (int64_t b = 0; b < S; b++) {
				const float *qr = q + (t * hq + j) * d;
				float *out = part + ((t * hq + j) * S + b) * (dv + 2);
				int64_t lo = b * block, hi = pos + t + 1 < lo + block ? pos + t + 1 : lo + block, kv = j / group;
				float m = NO_KEY_MAX;
				for (int64_t c = lo; c < hi; c++) {
					double dot = 0.0;
					for (int64_t i = 0; i < d; i++)
						dot += (double)qr[i] * (double)k[(c * hk + kv) * d + i];
					s[c - lo] = (float)dot * scale;
					if (key_live(mask, t, C, c))
						m = fmaxf(m, s[c - lo]);
				}
				double l = 0.0;
				for (int64_t c = lo; c < hi; c++)
					l += (double)(s[c - lo] = key_live(mask, t, C, c) ? expf(s[c - lo] - m) : 0.0f);
				for (int64_t ch = 0; ch < dv; ch++) {
					double acc = 0.0;
					for (int64_t c = lo; c < hi; c++)
						acc += (double)s[c - lo] * (double)v[(c * hk + kv) * dv + ch];
					out[ch] = (float)acc;
				}
				out[dv] = m;
				out[dv + 1] = (float)l;
			}
	free(s);
	return true;
}

void ref_attention_combine(const float *part, float *y, int64_t rows, int64_t S, int64_t dv)
{
	for (int64_t r = 0; r < rows; r++) {
		const float *p = part + r * S * (dv + 2);
		float m = NO_KEY_MAX;
		for (int64_t b = 0; b < S; b++)
			m = fmaxf(m, p[b * (dv + 2) + dv]);
		double l = 0.0;
		for (int64_t b = 0; b < S; b++)
			if (p[b * (dv + 2) + dv + 1] > 0.0f)
				l += (double)expf(p[b * (dv + 2) + dv] - m) * p[b * (dv + 2) + dv + 1];
		for (int64_t ch = 0; ch < dv; ch++) {
			double acc = 0.0;
			for (int64_t b = 0; b < S; b++)
				if (p[b * (dv + 2) + dv + 1] > 0.0f)
					acc += (double)expf(p[b * (dv + 2) + dv] - m) * p[b * (dv + 2) + ch];
			y[r * dv + ch] = (float)(acc / l);
		}
	}
}
