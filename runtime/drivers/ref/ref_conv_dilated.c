/* conv1d_dilated: the depthwise causal convolution of Qwen4-Exp's PLE, whose
 * taps are `dilation` tokens apart, so its state is (K-1)*dilation rows deep. */
#include "runtime/drivers/ref/ref_ops.h"

/* Row r of s = [state; x], the state having `hist` rows. */
static float seq_at(const float *state, const float *x, int64_t r, int64_t c, int64_t C, int64_t hist)
{
	return r < hist ? state[r * C + c] : x[(r - hist) * C + c];
}

void ref_conv1d_dilated(const float *x, const float *state, const float *w, float *y, float *new_state,
			float *steps, int64_t T, int64_t C, int64_t K, int64_t dilation, bool act_silu)
{
	int64_t hist = (K - 1) * dilation;
	for (int64_t t = 0; t < T; t++)
		for (int64_t c = 0; c < C; c++) {
			double acc = 0.0;
			for (int64_t j = 0; j < K; j++)
				acc += (double)w[c * K + j] * (double)seq_at(state, x, t + j * dilation, c, C, hist);
			y[t * C + c] = act_silu ? ref_silu_f((float)acc) : (float)acc;
		}
	/* before new_state: it may alias state */
	for (int64_t t = 0; steps && t < T; t++)
		for (int64_t r = 0; r < hist; r++)
			for (int64_t c = 0; c < C; c++)
				steps[(t * hist + r) * C + c] = seq_at(state, x, t + 1 + r, c, C, hist);
	/* row T+r >= r of s is read before row r of an aliased state is written */
	for (int64_t r = 0; r < hist; r++)
		for (int64_t c = 0; c < C; c++)
			new_state[r * C + c] = seq_at(state, x, T + r, c, C, hist);
}
