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
#define MERGE_NCH ((DV + LS_X - 1u) / LS_X)

HALO_SHARED float blk_m[NBLK], blk_d[NBLK], blk_w[NBLK];
// MERGE_CHUNK blocks' sums at a time; MERGE_STAGE, where the plan sets it,
// is larger: attention_rope's prologue stages its head and keys here too
// (attention.hip).
#ifndef MERGE_STAGE
#define MERGE_STAGE (MERGE_CHUNK * DV)
#endif
HALO_SHARED float merge_stage[MERGE_STAGE];
// @struct

#ifdef BLOCKS
volatile float *part = (volatile float *)args.b[B_P];
#else
const float *__restrict__ part = (const float *)args.b[B_P];
#endif
float *__restrict__ y = (float *)args.b[B_Y];

// y's row `row` from its first nblk blocks, staged MERGE_CHUNK at a time
// (attention_merge.glsl).
void merge_row(uint row, uint nblk)
{
	uint l = gl_LocalInvocationID.x, base = row * NBLK * MERGE_ROW;
	barrier(); // the previous row's reads of the shared arrays are done
	for (uint b = l; b < nblk; b += LS_X) {
		blk_m[b] = part[base + b * MERGE_ROW + DV];
		blk_d[b] = part[base + b * MERGE_ROW + DV + 1u];
	}
	barrier();
	float m = NEG_BIG;
	for (uint b = 0u; b < nblk; b++)
		m = max(m, blk_m[b]);
	for (uint b = l; b < nblk; b += LS_X)
		blk_w[b] = blk_d[b] > 0.0f ? exp(blk_m[b] - m) : 0.0f;
	barrier();
	float lsum = 0.0f;
	for (uint b = 0u; b < nblk; b++)
		if (blk_w[b] > 0.0f)
			lsum += blk_w[b] * blk_d[b];
	float acc[MERGE_NCH];
#pragma unroll
	for (uint ci = 0u; ci < MERGE_NCH; ci++)
		acc[ci] = 0.0f;
	for (uint b0 = 0u; b0 < nblk; b0 += MERGE_CHUNK) {
		uint nb = min(MERGE_CHUNK, nblk - b0);
		barrier(); // the previous round's reads of merge_stage are done
		for (uint e = l; e < nb * DV; e += LS_X)
			merge_stage[e] = part[base + (b0 + e / DV) * MERGE_ROW + e % DV];
		barrier();
#pragma unroll
		for (uint ci = 0u; ci < MERGE_NCH; ci++) {
			uint c = l + ci * LS_X;
			if (c < DV)
				for (uint b = 0u; b < nb; b++)
					if (blk_w[b0 + b] > 0.0f)
						acc[ci] += blk_w[b0 + b] * merge_stage[b * DV + c];
		}
	}
#pragma unroll
	for (uint ci = 0u; ci < MERGE_NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			y[row * DV + c] = epilogue(acc[ci] / lsum, row * DV + c);
	}
}
