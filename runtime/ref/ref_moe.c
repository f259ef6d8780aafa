/* moe_experts: the routed SwiGLU experts, summed in selection order. */
#include "runtime/ref/ref_error.h"

#include <inttypes.h>
#include <stdlib.h>

static float dot_f64(const float *a, const float *b, int64_t n)
{
	double acc = 0.0;
	for (int64_t i = 0; i < n; i++)
		acc += (double)a[i] * (double)b[i];
	return (float)acc;
}

/* y += w * down (silu(gate x) * up x) for one expert; act [F] is scratch. */
static void expert_accumulate(const float *x, const float *gate, const float *up,
			      const float *down, float w, double *y, float *act, int64_t H,
			      int64_t F)
{
	for (int64_t f = 0; f < F; f++)
		act[f] = ref_silu_f(dot_f64(gate + f * H, x, H)) * dot_f64(up + f * H, x, H);
	for (int64_t h = 0; h < H; h++)
		y[h] += (double)(w * dot_f64(down + h * F, act, F));
}

bool ref_moe_experts(const float *x, const int32_t *ids, const float *w, const float *gate,
		     const float *up, const float *down, float *y, int64_t T, int64_t H, int64_t F,
		     int64_t E, int64_t k, ref_error *err)
{
	for (int64_t i = 0; i < T * k; i++)
		if (ids[i] < 0 || ids[i] >= E)
			return ref_fail(err, "moe_experts", "token %" PRId64 " slot %" PRId64
					" selects expert %" PRId32 ", expected 0 <= id < %" PRId64,
					i / k, i % k, ids[i], E);
	float *act = malloc((size_t)F * sizeof *act);
	double *acc = malloc((size_t)H * sizeof *acc);
	if (!act || !acc) {
		free(act);
		free(acc);
		return ref_fail(err, "moe_experts", "out of memory");
	}
	for (int64_t t = 0; t < T; t++) {
		for (int64_t h = 0; h < H; h++)
			acc[h] = 0.0;
		for (int64_t j = 0; j < k; j++) {
			int64_t e = ids[t * k + j];
			expert_accumulate(x + t * H, gate + e * F * H, up + e * F * H, down + e * H * F,
					  w[t * k + j], acc, act, H, F);
		}
		for (int64_t h = 0; h < H; h++)
			y[t * H + h] = (float)acc[h];
	}
	free(act);
	free(acc);
	return true;
}
