/* conv1d_causal and gated_delta_rule. */
#include "runtime/drivers/ref/ref_ops.h"

#include <math.h>
#include <string.h>

/* The dilated conv with taps one token apart: one definition of the sums. */
void ref_conv1d_causal(const float *x, const float *state, const float *w, float *y,
		       float *new_state, float *steps, int64_t T, int64_t C, int64_t K, bool act_silu)
{
	ref_conv1d_dilated(x, state, w, y, new_state, steps, T, C, K, 1, act_silu);
}

/* One step of one value head on its state block S [dk,dv]. Every column c
 * of S evolves on its own (kv, delta, update and output of column c only read
 * column c), so the step runs column by column in the documented order. */
static void gdr_step(float *S, const float *q, const float *k, const float *v, float g, float beta,
		     float *o, int64_t dk, int64_t dv, float scale)
{
	float decay = expf(g);
	for (int64_t c = 0; c < dv; c++) {
		double kv = 0.0;
		for (int64_t i = 0; i < dk; i++) {
			S[i * dv + c] *= decay;
			kv += (double)S[i * dv + c] * (double)k[i];
		}
		float delta = (v[c] - (float)kv) * beta;
		double acc = 0.0;
		for (int64_t i = 0; i < dk; i++) {
			S[i * dv + c] += k[i] * delta;
			acc += (double)S[i * dv + c] * (double)(q[i] * scale);
		}
		o[c] = (float)acc;
	}
}

void ref_gated_delta_rule(const float *q, const float *k, const float *v, const float *g,
			  const float *beta, const float *S, float *o, float *S_out, float *steps, int64_t T,
			  int64_t hk, int64_t hv, int64_t dk, int64_t dv, float scale)
{
	int64_t block = dk * dv, group = hv / hk;
	memmove(S_out, S, (size_t)(hv * block) * sizeof *S_out);
	for (int64_t h = 0; h < hv; h++) {
		int64_t kh = h / group;
		float *Sh = S_out + h * block;
		for (int64_t t = 0; t < T; t++) {
			gdr_step(Sh, q + (t * hk + kh) * dk, k + (t * hk + kh) * dk, v + (t * hv + h) * dv,
				 g[t * hv + h], beta[t * hv + h], o + (t * hv + h) * dv, dk, dv, scale);
			if (steps)
				memcpy(steps + (t * hv + h) * block, Sh, (size_t)block * sizeof *Sh);
		}
	}
}
