#include "runtime/ref/ref_ops.h"

void ref_matmul(const float *x, const float *w, float *y, int64_t T, int64_t K, int64_t N)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t n = 0; n < N; n++) {
			double acc = 0.0;
			for (int64_t k = 0; k < K; k++)
				acc += (double)x[t * K + k] * (double)w[n * K + k];
			y[t * N + n] = (float)acc;
		}
}
