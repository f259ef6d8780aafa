// conv1d_causal and conv1d_dilated, depthwise over the sequence s = [state; x]
// (HIST+T rows of C, HIST = (K-1)*DILATION): y[t,c] = act(sum_j w[c,j]
// s[t+j*DILATION,c]), j in order; new_state = the last HIST rows of s.
// Workgroup row r < T computes y row r; row r >= T copies s row r into
// new_state row r-T, so new_state must not alias state. With STEPS, row
// r < T also writes slot r of steps [T, HIST, C], the state after token r:
// rows r+1 .. r+HIST of s. conv1d_causal is DILATION 1 (its builder leaves
// it undefined).
// Grid: x = ceil(C / LS_X), y = T + HIST.

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
layout(set = 0, binding = B_S) readonly buffer S { float st[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
layout(set = 0, binding = B_NS) writeonly buffer NS { float ns[]; };
#ifdef STEPS
layout(set = 0, binding = B_ST) writeonly buffer ST { float steps[]; };
#endif

#ifndef DILATION
#define DILATION 1u
#endif
#define HIST ((K - 1u) * DILATION)

float seq(uint r, uint c)
{
	return r < HIST ? st[r * C + c] : x[(r - HIST) * C + c];
}

void main()
{
	uint c = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
	if (c >= C)
		return;
	if (r < STEP_T) {
		float acc = 0.0;
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
