/* reduce_mean and signed_sqrt: the per-stream statistics of Qwen4-Exp's
 * hyper-connections and PLE gate. */
#include "runtime/drivers/ref/ref_ops.h"

#include <math.h>

void ref_reduce_mean(const float *x, float *y, int64_t outer, int64_t n, int64_t inner)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			double acc = 0.0;
			for (int64_t a = 0; a < n; a++)
				acc += (double)x[(o * n + a) * inner + i];
			y[o * inner + i] = (float)(acc / (double)n);
		}
}

void ref_signed_sqrt(const float *x, float *y, int64_t n, float eps)
{
	for (int64_t i = 0; i < n; i++) {
		float v = x[i];
		/* PyTorch's sign(0) = 0: a zero stays zero despite the clamp */
		float s = v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : 0.0f;
		y[i] = s * sqrtf(fmaxf(fabsf(v), eps));
	}
}
