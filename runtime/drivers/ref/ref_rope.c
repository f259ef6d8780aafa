/* rope: NeoX or DeepSeek V4's interleaved tail pairs, inverse, a position
 * offset and transformers' YaRN frequencies (docs/ops.md). */
#include "runtime/drivers/ref/ref_ops.h"

#include <math.h>
#include <string.h>

bool ref_rope_f32_angles(const ref_rope_params *p)
{
	return p->yarn_factor > 0.0f || p->layout == REF_ROPE_INTERLEAVED_TAIL;
}

/* transformers' find_correction_dim: the pair index (fractional) whose
 * wavelength fits `rotations` turns into the original context. Python
 * computes it in f64. */
static double correction_dim(const ref_rope_params *p, double rotations)
{
	return (double)p->rot_dim * log((double)p->yarn_orig_ctx / (rotations * 2.0 * M_PI)) /
	       (2.0 * log((double)p->base));
}

/* The YaRN ramp of pair i, in [0, 1]: 0 keeps the frequency, 1 divides it
 * by the factor. lo and hi are floor and ceil of the correction dims
 * (transformers' truncate, its default), clamped to [0, r-1]; hi == lo
 * becomes lo + 0.001 there. The ramp itself is f32, as torch computes it. */
static float yarn_ramp(const ref_rope_params *p, int64_t i)
{
	double lo = fmax(floor(correction_dim(p, (double)p->yarn_beta_fast)), 0.0);
	double hi = fmin(ceil(correction_dim(p, (double)p->yarn_beta_slow)), (double)(p->rot_dim - 1));
	if (hi == lo)
		hi += 0.001;
	float r = ((float)i - (float)lo) / (float)(hi - lo);
	return r < 0.0f ? 0.0f : r > 1.0f ? 1.0f : r;
}

float ref_rope_inv_freq(const ref_rope_params *p, int64_t i)
{
	float pos_freq = powf(p->base, (float)(2 * i) / (float)p->rot_dim);
	float extrapolation = 1.0f / pos_freq;
	if (!(p->yarn_factor > 0.0f))
		return extrapolation;
	/* the expression transformers evaluates, operation by operation */
	float interpolation = 1.0f / (p->yarn_factor * pos_freq);
	float keep = 1.0f - yarn_ramp(p, i);
	return interpolation * (1.0f - keep) + extrapolation * keep;
}

/* cos and sin of pair i's angle at position pos, sin negated when inverse. */
static void pair_cos_sin(const ref_rope_params *p, int64_t i, int64_t pos, float *c, float *s)
{
	if (ref_rope_f32_angles(p)) {
		float a = (float)pos * ref_rope_inv_freq(p, i);
		*c = cosf(a);
		*s = sinf(a);
	} else {
		double theta = pow((double)p->base, -2.0 * (double)i / (double)p->rot_dim);
		*c = (float)cos((double)pos * theta);
		*s = (float)sin((double)pos * theta);
	}
	if (p->inverse)
		*s = -*s;
}

/* The channels of pair i in a head of d: (a, b) rotate together. */
static void pair_channels(const ref_rope_params *p, int64_t d, int64_t i, int64_t *a, int64_t *b)
{
	if (p->layout == REF_ROPE_INTERLEAVED_TAIL) {
		*a = d - p->rot_dim + 2 * i;
		*b = *a + 1;
	} else {
		*a = i;
		*b = i + p->rot_dim / 2;
	}
}

void ref_rope(const ref_rope_params *p, const float *x, float *y, int64_t T, int64_t h, int64_t d, int64_t pos)
{
	for (int64_t t = 0; t < T; t++) {
		for (int64_t j = 0; j < h; j++) {
			const float *xs = x + (t * h + j) * d;
			float *ys = y + (t * h + j) * d;
			memmove(ys, xs, (size_t)d * sizeof *ys);
			for (int64_t i = 0; i < p->rot_dim / 2; i++) {
				int64_t a, b;
				float c, s;
				pair_channels(p, d, i, &a, &b);
				pair_cos_sin(p, i, pos + t + p->offset, &c, &s);
				float xa = xs[a], xb = xs[b];
				ys[a] = xa * c - xb * s;
				ys[b] = xb * c + xa * s;
			}
		}
	}
}
