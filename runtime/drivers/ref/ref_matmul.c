#include "runtime/drivers/ref/ref_ops.h"

static float dot(const float *x, const float *w, int64_t K)
{
	double acc = 0.0;
	for (int64_t k = 0; k < K; k++)
		acc += (double)x[k] * (double)w[k];
	return (float)acc;
}

void ref_matmul(const float *x, const float *w, float *y, int64_t T, int64_t K, int64_t N)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t n = 0; n < N; n++)
			y[t * N + n] = dot(x + t * K, w + n * K, K);
}

void ref_matmul_grouped(const float *x, const float *w, float *y, int64_t T, int64_t K, int64_t N, int64_t groups)
{
	int64_t per = N / groups;
	for (int64_t t = 0; t < T; t++)
		for (int64_t n = 0; n < N; n++)
			y[t * N + n] = dot(x + (t * groups + n / per) * K, w + n * K, K);
}

void ref_matmul_pair(const float *x, const float *w, float *y, int64_t T, int64_t K, int64_t N)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t n = 0; n < N; n++) {
			float g = dot(x + t * K, w + 2 * n * K, K), u = dot(x + t * K, w + (2 * n + 1) * K, K);
			y[t * N + n] = ref_silu_f(g) * u;
		}
}
