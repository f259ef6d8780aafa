// The results of the matmul twins (matvec, matmul, matmul_coopmat): the HIP
// dialect's kernels/vulkan/matmul_out.glsl, which says what NSEG, SEG1..SEG3,
// PAIR and POS0..POS3 mean. Everything here is a member of the kernel struct.
// @struct

float *__restrict__ y = (float *)args.b[B_Y];
#if NSEG > 1
float *__restrict__ y1 = (float *)args.b[B_Y1];
#endif
#if NSEG > 2
float *__restrict__ y2 = (float *)args.b[B_Y2];
#endif
#if NSEG > 3
float *__restrict__ y3 = (float *)args.b[B_Y3];
#endif

// The stored row of row t of a result (at_pos: POS<s>).
uint out_row(uint t, uint at_pos)
{
	return t + at_pos * step_pos;
}

// Column n of row t (not with PAIR).
void store_y(uint t, uint n, float v)
{
#if NSEG > 3
	if (n >= SEG3) {
		y3[out_row(t, POS3) * (N - SEG3) + n - SEG3] = v;
		return;
	}
#endif
#if NSEG > 2
	if (n >= SEG2) {
		y2[out_row(t, POS2) * (SEG3 - SEG2) + n - SEG2] = v;
		return;
	}
#endif
#if NSEG > 1
	if (n >= SEG1) {
		y1[out_row(t, POS1) * (SEG2 - SEG1) + n - SEG1] = v;
		return;
	}
	y[out_row(t, POS0) * SEG1 + n] = v;
#else
	y[out_row(t, POS0) * N + n] = epilogue(v, t * N + n);
#endif
}

// Columns n (even: the gate) and n + 1 (the up) of row t (PAIR).
void store_pair(uint t, uint n, float gate, float up)
{
	uint i = t * (N / 2u) + n / 2u;
	y[out_row(t, POS0) * (N / 2u) + n / 2u] = epilogue(silu_f(gate) * up, i);
}
