// The results of the matmul twins (matvec, matmul, matmul_coopmat): the HIP
// dialect's kernels/vulkan/matmul_out.glsl, which says what NSEG, SEG1..SEG3
// and PAIR mean. Everything here is a member of the kernel struct.
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

// Column n of row t (not with PAIR).
void store_y(uint t, uint n, float v)
{
#if NSEG > 3
	if (n >= SEG3) {
		y3[t * (N - SEG3) + n - SEG3] = v;
		return;
	}
#endif
#if NSEG > 2
	if (n >= SEG2) {
		y2[t * (SEG3 - SEG2) + n - SEG2] = v;
		return;
	}
#endif
#if NSEG > 1
	if (n >= SEG1) {
		y1[t * (SEG2 - SEG1) + n - SEG1] = v;
		return;
	}
	y[t * SEG1 + n] = v;
#else
	y[t * N + n] = epilogue(v, t * N + n);
#endif
}

// Columns n (even: the gate) and n + 1 (the up) of row t (PAIR).
void store_pair(uint t, uint n, float gate, float up)
{
	uint i = t * (N / 2u) + n / 2u;
	y[i] = epilogue(silu_f(gate) * up, i);
}
