/* rms_norm, l2_norm, gated_rms_norm. */
#include "runtime/drivers/ref/ref_ops.h"

#include <math.h>

static double sum_squares(const float *x, int64_t n)
{
	double s = 0.0;
	for (int64_t i = 0; i < n; i++)
		s += (double)x[i] * (double)x[i];
	return s;
}

float ref_rms_inv(const float *x, int64_t n, float eps)
{
	float mean = (float)(sum_squares(x, n) / (double)n);
	return 1.0f / sqrtf(mean + eps);
}

void ref_rms_norm(const float *x, const float *w, float *y, int64_t rows, int64_t D, int64_t group,
		  float eps, int offset)
{
	int64_t G = group > 0 ? group : D;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t g0 = 0; g0 < D; g0 += G) {
			const float *xs = x + r * D + g0;
			float inv = ref_rms_inv(xs, G, eps);
			for (int64_t i = 0; i < G; i++)
				y[r * D + g0 + i] = w ? xs[i] * inv * (w[g0 + i] + (float)offset) : xs[i] * inv;
		}
}

void ref_l2_norm(const float *x, float *y, int64_t rows, int64_t D, float eps)
{
	for (int64_t r = 0; r < rows; r++) {
		float inv = 1.0f / sqrtf((float)sum_squares(x + r * D, D) + eps);
		for (int64_t i = 0; i < D; i++)
			y[r * D + i] = x[r * D + i] * inv;
	}
}

void ref_gated_rms_norm(const float *x, const float *z, const float *w, float *y, int64_t rows,
			int64_t D, float eps)
{
	for (int64_t r = 0; r < rows; r++) {
		float mean = (float)(sum_squares(x + r * D, D) / (double)D);
		float inv = 1.0f / sqrtf(mean + eps);
		for (int64_t i = 0; i < D; i++)
			y[r * D + i] = w[i] * (x[r * D + i] * inv) * ref_silu_f(z[r * D + i]);
	}
}
