// attention_combine: part [T,HQ,NBLK,DV+2] (attention_partial's key blocks:
// each block's unnormalised sums, max score and denominator) -> y [T,HQ,DV].
// The twin of kernels/vulkan/attention_combine.comp: the blocks' maxima give
// the row's max m, each block is weighted by e^(m_b - m), the sums and
// denominators are added in block order, blocks with no key skipped.
// Grid: x = HQ, y = T.

#define NEG_BIG -3.0e38f
#define ROW (DV + 2u)

HALO_SHARED float blk_w[NBLK];
// @struct

const float *__restrict__ part = (const float *)args.b[B_P];
float *__restrict__ y = (float *)args.b[B_Y];

void main()
{
	uint l = gl_LocalInvocationID.x, j = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
	uint base = (t * HQ + j) * NBLK * ROW;
	float m = NEG_BIG;
	for (uint b = 0u; b < NBLK; b++)
		m = max(m, part[base + b * ROW + DV]);
	for (uint b = l; b < NBLK; b += LS_X)
		blk_w[b] = part[base + b * ROW + DV + 1u] > 0.0f ? exp(part[base + b * ROW + DV] - m) : 0.0f;
	barrier();
	float lsum = 0.0f;
	for (uint b = 0u; b < NBLK; b++)
		if (blk_w[b] > 0.0f)
			lsum += blk_w[b] * part[base + b * ROW + DV + 1u];
	for (uint c = l; c < DV; c += LS_X) {
		float a = 0.0f;
		for (uint b = 0u; b < NBLK; b++)
			if (blk_w[b] > 0.0f)
				a += blk_w[b] * part[base + b * ROW + c];
		y[(t * HQ + j) * DV + c] = epilogue(a / lsum, (t * HQ + j) * DV + c);
	}
}
