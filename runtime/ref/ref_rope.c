#include "runtime/ref/ref_ops.h"

#include <math.h>
#include <string.h>

void ref_rope(const float *x, float *y, int64_t T, int64_t h, int64_t d, int64_t rot_dim,
	      float base, int64_t pos)
{
	int64_t half = rot_dim / 2;
	for (int64_t t = 0; t < T; t++) {
		double p = (double)(pos + t);
		for (int64_t j = 0; j < h; j++) {
			const float *xs = x + (t * h + j) * d;
			float *ys = y + (t * h + j) * d;
			for (int64_t i = 0; i < half; i++) {
				double theta = pow((double)base, -2.0 * (double)i / (double)rot_dim);
				float c = (float)cos(p * theta), s = (float)sin(p * theta);
				float x1 = xs[i], x2 = xs[i + half];
				ys[i] = x1 * c - x2 * s;
				ys[i + half] = x2 * c + x1 * s;
			}
			if (rot_dim < d)
				memmove(ys + rot_dim, xs + rot_dim, (size_t)(d - rot_dim) * sizeof *ys);
		}
	}
}
