// The results of the matmul kernels (matvec.comp, matmul.comp,
// matmul_coopmat.comp), which compute columns n < N of x' w^T:
//  - one result y[t, n] of N columns, the epilogue applied (NSEG 1);
//  - split (NSEG 2..4): the columns are the results of merged sibling
//    matmuls one after another (passes/merge_matmuls.c), result s holding
//    columns SEG_s .. SEG_s+1 - 1 (SEG0 = 0, SEG_NSEG = N) in y, y1, y2, y3;
//    no epilogue;
//  - PAIR: columns 2j and 2j + 1 are the gate and up of output column j
//    (w's rows interleaved): y[t, j] = epilogue(silu(gate) * up) of N / 2
//    columns. A kernel hands each even column over with its odd neighbour
//    (store_pair); the two come from the same lane, so nothing is exchanged.
// Result s with POS<s> = 1 lies in a state's rows from the step's position
// (a KV-cache write fused into the matmul, passes/fuse_state_store.c): row
// t is stored at row step_pos + t of its binding. The epilogue still sees
// the logical index.

layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
#if NSEG > 1
layout(set = 0, binding = B_Y1) writeonly buffer Y1 { float y1[]; };
#endif
#if NSEG > 2
layout(set = 0, binding = B_Y2) writeonly buffer Y2 { float y2[]; };
#endif
#if NSEG > 3
layout(set = 0, binding = B_Y3) writeonly buffer Y3 { float y3[]; };
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
