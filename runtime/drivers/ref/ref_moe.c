/* The routed SwiGLU experts: moe_gate_up (every selected expert's
 * activations), moe_down (their down projections summed in selection
 * order), and moe_experts, the two in sequence. */
#include "runtime/drivers/ref/ref_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

static float dot_f64(const float *a, const float *b, int64_t n)
{
	double acc = 0.0;
	for (int64_t i = 0; i < n; i++)
		acc += (double)a[i] * (double)b[i];
	return (float)acc;
}

static bool check_ids(const int32_t *ids, int64_t n, int64_t k, int64_t E, const char *op, ref_error *err)
{
	for (int64_t i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= E)
			return ref_fail(err, op, "token %" PRId64 " slot %" PRId64 " selects expert %" PRId32
					", expected 0 <= id < %" PRId64, i / k, i % k, ids[i], E);
	return true;
}

/* silu(g) * u, with limit L > 0 first g = min(g, L), u = clamp(u, -L, L). */
static float swiglu_limited(float g, float u, float limit)
{
	if (limit > 0.0f) {
		g = fminf(g, limit);
		u = fminf(fmaxf(u, -limit), limit);
	}
	return ref_silu_f(g) * u;
}

bool ref_moe_gate_up(const float *x, const int32_t *ids, const float *gate, const float *up, float *act,
		     int64_t T, int64_t H, int64_t F, int64_t E, int64_t k, float limit, ref_error *err)
{
	if (!check_ids(ids, T * k, k, E, "moe_gate_up", err))
		return false;
	for (int64_t i = 0; i < T * k; i++) {
		const float *xt = x + (i / k) * H, *g = gate + ids[i] * F * H, *u = up + ids[i] * F * H;
		for (int64_t f = 0; f < F; f++)
			act[i * F + f] = swiglu_limited(dot_f64(g + f * H, xt, H), dot_f64(u + f * H, xt, H), limit);
	}
	return true;
}

bool ref_moe_down(const float *act, const int32_t *ids, const float *w, const float *down, float *y, int64_t T,
		  int64_t H, int64_t F, int64_t E, int64_t k, ref_error *err)
{
	if (!check_ids(ids, T * k, k, E, "moe_down", err))
		return false;
	for (int64_t t = 0; t < T; t++) {
		for (int64_t h = 0; h < H; h++) {
			double acc = 0.0;
			for (int64_t j = 0; j < k; j++) {
				int64_t i = t * k + j;
				acc += (double)(w[i] * dot_f64(down + (ids[i] * H + h) * F, act + i * F, F));
			}
			y[t * H + h] = (float)acc;
		}
	}
	return true;
}

bool ref_moe_experts(const float *x, const int32_t *ids, const float *w, const float *gate,
		     const float *up, const float *down, float *y, int64_t T, int64_t H, int64_t F,
		     int64_t E, int64_t k, float limit, ref_error *err)
{
	float *act = malloc((size_t)(T * k * F) * sizeof *act + 1);
	if (!act)
		return ref_fail(err, "moe_experts", "out of memory");
	bool ok = ref_moe_gate_up(x, ids, gate, up, act, T, H, F, E, k, limit, err) &&
		  ref_moe_down(act, ids, w, down, y, T, H, F, E, k, err);
	free(act);
	return ok;
}
