// copy_rows: dst[DST_OFF + (r + r0) * DST_STRIDE + j] =
//            src[SRC_OFF + (s / REP) * SRC_STRIDE + j]
// for rows r < ROWS (affine in T) and j < W, with r0 = pos when AT_POS, else 0
// (with EVERY, only rows closing a window, to the window's row: below),
// and s = r, or s = pos + POS_OFFSET + r when FROM_POS (rows of a positional
// state; a row outside [0, SRC_ROWS) reads as zeros).
// Covers state_write (whole, or rows pos..pos+T-1), slice along any axis
// (rows = the dims before it), repeat_heads (REP = r) and rows_at_pos.
// Grid: x = ceil(W / LS_X), y = ROWS.

layout(set = 0, binding = B_SRC) readonly buffer Src { float src[]; };
layout(set = 0, binding = B_DST) writeonly buffer Dst { float dst[]; };

void main()
{
	uint r = gl_WorkGroupID.y;
	uint j = gl_GlobalInvocationID.x;
	if (j >= W)
		return;
	uint r0 = AT_POS != 0 ? step_pos : 0u;
#if FROM_POS
	int s = int(step_pos) + POS_OFFSET + int(r);
	float v = s >= 0 && s < int(SRC_ROWS) ? src[SRC_OFF + uint(s) * SRC_STRIDE + j] : 0.0;
#else
	float v = src[SRC_OFF + (r / REP) * SRC_STRIDE + j];
#endif
#ifdef EVERY
	// state_write's every: the row of the position closing a window of
	// EVERY goes to that window's row, the others nowhere
	uint q = r + r0 + 1u;
	if (q % EVERY == 0u)
		dst[DST_OFF + (q / EVERY - 1u) * DST_STRIDE + j] = v;
#elif defined(RING)
	// state_write's ring: the state holds the last RING positions
	dst[DST_OFF + ((r + r0) % RING) * DST_STRIDE + j] = v;
#else
	dst[DST_OFF + (r + r0) * DST_STRIDE + j] = v;
#endif
}
