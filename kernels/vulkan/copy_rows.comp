// copy_rows: dst[DST_OFF + (r + r0) * DST_STRIDE + j] =
//            src[SRC_OFF + (r / REP) * SRC_STRIDE + j]
// for rows r < ROWS (affine in T) and j < W, with r0 = pos when AT_POS, else 0.
// Covers state_write (whole, or rows pos..pos+T-1), slice along any axis
// (rows = the dims before it) and repeat_heads (REP = r).
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
	dst[DST_OFF + (r + r0) * DST_STRIDE + j] = src[SRC_OFF + (r / REP) * SRC_STRIDE + j];
}
