// The merge of a row's key blocks: the twin of
// kernels/vulkan/attention_merge.glsl (attention_combine, and with BLOCKS the
// last workgroup of a row of attention_blocks), the same operations in the
// same order. With BLOCKS, part is read through volatile loads: the other
// workgroups wrote it in this dispatch, and a cached line would be stale
// (CUDA's last-block reduction reads its partials the same way).

#ifndef NEG_BIG
#define NEG_BIG -3.0e38f
#endif
#define MERGE_ROW (DV + 2u)

HALO_SHARED float blk_w[NBLK];
#ifdef BLOCKS
HALO_SHARED bool merge_last;
#endif
// @struct

#ifdef BLOCKS
volatile float *part = (volatile float *)args.b[B_P];
uint *counts = (uint *)args.b[B_SY];
#else
const float *__restrict__ part = (const float *)args.b[B_P];
#endif
float *__restrict__ y = (float *)args.b[B_Y];

// y's row `row` from its first nblk blocks (attention_merge.glsl).
void merge_row(uint row, uint nblk)
{
	uint l = gl_LocalInvocationID.x, base = row * NBLK * MERGE_ROW;
	float m = NEG_BIG;
	for (uint b = 0u; b < nblk; b++)
		m = max(m, (float)part[base + b * MERGE_ROW + DV]);
	barrier(); // the previous row's reads of blk_w are done
	for (uint b = l; b < nblk; b += LS_X)
		blk_w[b] = part[base + b * MERGE_ROW + DV + 1u] > 0.0f ? exp(part[base + b * MERGE_ROW + DV] - m) : 0.0f;
	barrier();
	float lsum = 0.0f;
	for (uint b = 0u; b < nblk; b++)
		if (blk_w[b] > 0.0f)
			lsum += blk_w[b] * part[base + b * MERGE_ROW + DV + 1u];
	for (uint c = l; c < DV; c += LS_X) {
		float a = 0.0f;
		for (uint b = 0u; b < nblk; b++)
			if (blk_w[b] > 0.0f)
				a += blk_w[b] * part[base + b * MERGE_ROW + c];
		y[row * DV + c] = epilogue(a / lsum, row * DV + c);
	}
}

#ifdef BLOCKS
// True in the last of the n workgroups sharing counter slot to arrive, which
// has zeroed it (attention_merge.glsl).
bool merge_turn(uint slot, uint n)
{
	memoryBarrierBuffer();
	barrier();
	if (gl_LocalInvocationID.x == 0u) {
		merge_last = atomicAdd(counts[slot], 1u) + 1u == n;
		if (merge_last)
			counts[slot] = 0u;
	}
	barrier();
	memoryBarrierBuffer();
	return merge_last;
}
#endif
