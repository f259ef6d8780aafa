// conv1d_causal and conv1d_dilated, depthwise over the sequence s = [state; x]
// (HIST+T rows of C, HIST = (K-1)*DILATION): y[t,c] = act(sum_j w[c,j]
// s[t+j*DILATION,c]), j in order; new_state = the last HIST rows of s; with
// STEPS, row r < T also writes the state after token r. The twin of
// kernels/vulkan/conv1d_causal.comp (the weights: prelude.hip's load_w).
// Grid: x = ceil(C / LS_X), y = T + HIST.
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
const float *__restrict__ st = (const float *)args.b[B_S];
float *__restrict__ y = (float *)args.b[B_Y];
float *__restrict__ ns = (float *)args.b[B_NS];
#ifdef STEPS
float *__restrict__ steps = (float *)args.b[B_ST];
#endif

#ifndef DILATION
#define DILATION 1u
#endif
#define HIST ((K - 1u) * DILATION)

float seq(uint r, uint c) { return r < HIST ? st[r * C + c] : x[(r - HIST) * C + c]; }

void main()
{
	uint c = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
	if (c >= C)
		return;
	if (r < STEP_T) {
		float acc = 0.0f;
		for (uint j = 0u; j < K; j++)
			acc += load_w(c * K + j) * seq(r + j * DILATION, c);
#if ACT_SILU
		acc = silu_f(acc);
#endif
		y[r * C + c] = acc;
#ifdef STEPS
		for (uint j = 0u; j < HIST; j++)
			steps[(r * HIST + j) * C + c] = seq(r + 1u + j, c);
#endif
	} else {
		ns[(r - STEP_T) * C + c] = seq(r, c);
	}
}
