/* hc_weights, hc_collapse, hc_expand: DeepSeek V4's hyper-connections with
 * Sinkhorn-normalised mixing (models.md 3.4); hc_inject: Qwen3.8 Flash's
 * sublayer exit into its streams. */
#include "runtime/drivers/ref/ref_ops.h"

/* One Sinkhorn half-step on C [n,n]: every row (columns false) or every
 * column (true) divided by its sum (f64, in index order) + eps. */
static void normalise(float *C, int64_t n, bool columns, float eps)
{
	for (int64_t a = 0; a < n; a++) {
		double sum = 0.0;
		for (int64_t b = 0; b < n; b++)
			sum += C[columns ? b * n + a : a * n + b];
		float den = (float)sum + eps;
		for (int64_t b = 0; b < n; b++)
			C[columns ? b * n + a : a * n + b] /= den;
	}
}

/* comb for one token: softmax over each row of z = mix_c * scale + base_c
 * (n x n), + eps, then a column pass, then iters - 1 (rows, columns). */
static void comb_weights(const float *mix_c, const float *base_c, float scale, float *C, int64_t n, int64_t iters,
			 float eps)
{
	for (int64_t i = 0; i < n * n; i++)
		C[i] = mix_c[i] * scale + base_c[i];
	ref_softmax(C, C, n, n);
	for (int64_t i = 0; i < n * n; i++)
		C[i] += eps;
	normalise(C, n, true, eps);
	for (int64_t i = 1; i < iters; i++) {
		normalise(C, n, false, eps);
		normalise(C, n, true, eps);
	}
}

void ref_hc_weights(const float *mix, const float *base, const float *scale, float *pre, float *post, float *comb,
		    int64_t T, int64_t n, int64_t iters, float eps)
{
	int64_t M = post ? (2 + n) * n : n;
	for (int64_t t = 0; t < T; t++) {
		const float *m = mix + t * M;
		for (int64_t j = 0; j < n; j++)
			pre[t * n + j] = ref_sigmoid_f(m[j] * scale[0] + base[j]) + eps;
		if (!post)
			continue;
		for (int64_t j = 0; j < n; j++)
			post[t * n + j] = 2.0f * ref_sigmoid_f(m[n + j] * scale[1] + base[n + j]);
		comb_weights(m + 2 * n, base + 2 * n, scale[2], comb + t * n * n, n, iters, eps);
	}
}

void ref_hc_collapse(const float *x, const float *pre, float *y, int64_t T, int64_t n, int64_t H)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t h = 0; h < H; h++) {
			double acc = 0.0;
			for (int64_t j = 0; j < n; j++)
				acc += (double)pre[t * n + j] * (double)x[(t * n + j) * H + h];
			y[t * H + h] = (float)acc;
		}
}

void ref_hc_inject(const float *x, const float *y, const float *g, float *out, int64_t T, int64_t n, int64_t H)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t k = 0; k < n; k++)
			for (int64_t h = 0; h < H; h++) {
				float gy = g[t * n + k] * y[t * H + h];
				out[(t * n + k) * H + h] = x[(t * n + k) * H + h] + gy;
			}
}

void ref_hc_expand(const float *x, const float *y, const float *post, const float *comb, float *out, int64_t T,
		   int64_t n, int64_t H)
{
	for (int64_t t = 0; t < T; t++) {
		const float *C = comb + t * n * n;
		for (int64_t k = 0; k < n; k++)
			for (int64_t h = 0; h < H; h++) {
				double acc = (double)post[t * n + k] * (double)y[t * H + h];
				for (int64_t j = 0; j < n; j++)
					acc += (double)C[j * n + k] * (double)x[(t * n + j) * H + h];
				out[(t * n + k) * H + h] = (float)acc;
			}
	}
}
