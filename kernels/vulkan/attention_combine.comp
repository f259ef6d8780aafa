// attention_combine: part [T,HQ,NBLK,DV+2] (attention_partial's key blocks:
// each block's unnormalised sums, max score and denominator) -> y [T,HQ,DV].
// One workgroup per (head, token) (grid x = HQ, y = T): the blocks' maxima
// give the row's max m, each block is weighted by e^(m_b - m), and the sums
// and denominators are added in block order; blocks with no key (denominator
// 0) are skipped. Nothing depends on T.

layout(set = 0, binding = B_P) readonly buffer Pb { float part[]; };
layout(set = 0, binding = B_Y) writeonly buffer Yb { float y[]; };

#define NEG_BIG -3.0e38
#define ROW (DV + 2u)

shared float blk_w[NBLK];

void main()
{
	uint l = gl_LocalInvocationID.x, j = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
	uint base = (t * HQ + j) * NBLK * ROW;
	float m = NEG_BIG;
	for (uint b = 0u; b < NBLK; b++)
		m = max(m, part[base + b * ROW + DV]);
	for (uint b = l; b < NBLK; b += LS_X)
		blk_w[b] = part[base + b * ROW + DV + 1u] > 0.0 ? exp(part[base + b * ROW + DV] - m) : 0.0;
	barrier();
	float lsum = 0.0;
	for (uint b = 0u; b < NBLK; b++)
		if (blk_w[b] > 0.0)
			lsum += blk_w[b] * part[base + b * ROW + DV + 1u];
	for (uint c = l; c < DV; c += LS_X) {
		float a = 0.0;
		for (uint b = 0u; b < NBLK; b++)
			if (blk_w[b] > 0.0)
				a += blk_w[b] * part[base + b * ROW + c];
		y[(t * HQ + j) * DV + c] = epilogue(a / lsum, (t * HQ + j) * DV + c);
	}
}
