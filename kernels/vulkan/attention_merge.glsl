// The merge of a row's key blocks into its attention output:
// attention_combine.comp, and with BLOCKS the last workgroup of a row of
// attention_blocks (attention.comp and attention_rows.comp, whose other
// workgroups only write their blocks). part [T,HQ,NBLK,DV+2] holds each
// block's unnormalised sums, then its max score and denominator (NEG_BIG and
// 0 for a block with no key of the row); y is [T,HQ,DV].

#ifdef BLOCKS
// Written by the dispatch's workgroups, read by each row's last one: coherent,
// so that those reads see the other workgroups' writes, not a stale cache.
layout(set = 0, binding = B_P) coherent buffer Pb { float part[]; };
#else
layout(set = 0, binding = B_P) readonly buffer Pb { float part[]; };
#endif
layout(set = 0, binding = B_Y) writeonly buffer Yb { float y[]; };

#define NEG_BIG -3.0e38
#define MERGE_ROW (DV + 2u)
#define MERGE_NCH ((DV + LS_X - 1u) / LS_X)

shared float blk_m[NBLK], blk_d[NBLK], blk_w[NBLK];
// MERGE_CHUNK blocks' sums at a time (the plan's constant: what the
// template's shared memory leaves room for); MERGE_STAGE, where the plan
// sets it, is larger: attention_rope's prologue stages its head and keys
// here too (attention.comp).
#ifndef MERGE_STAGE
#define MERGE_STAGE (MERGE_CHUNK * DV)
#endif
shared float merge_stage[MERGE_STAGE];

// y's row `row` from its first nblk blocks (those past them hold no key of
// it): the blocks' maxima give the row's max m, each block is weighted by
// e^(m_b - m), and the sums and denominators are added in block order;
// blocks with no key (denominator 0) are skipped. The same operations in the
// same order for any nblk that covers the row's keys, so the result does not
// depend on how many blocks a dispatch has. The blocks are read into shared
// memory first, every lane loading its share at once (MERGE_CHUNK blocks a
// round): a lane walking a channel's blocks one load after another waited
// out each load, and with BLOCKS's coherent loads that made a 4096-key
// decode step 12% slower than two dispatches (bench/results-h100-qwen3_8b.txt).
// Every lane calls it.
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
		blk_w[b] = blk_d[b] > 0.0 ? exp(blk_m[b] - m) : 0.0;
	barrier();
	float lsum = 0.0;
	for (uint b = 0u; b < nblk; b++)
		if (blk_w[b] > 0.0)
			lsum += blk_w[b] * blk_d[b];
	float acc[MERGE_NCH];
	for (uint ci = 0u; ci < MERGE_NCH; ci++)
		acc[ci] = 0.0;
	for (uint b0 = 0u; b0 < nblk; b0 += MERGE_CHUNK) {
		uint nb = min(MERGE_CHUNK, nblk - b0);
		barrier(); // the previous round's reads of merge_stage are done
		for (uint e = l; e < nb * DV; e += LS_X)
			merge_stage[e] = part[base + (b0 + e / DV) * MERGE_ROW + e % DV];
		barrier();
		for (uint ci = 0u; ci < MERGE_NCH; ci++) {
			uint c = l + ci * LS_X;
			if (c < DV)
				for (uint b = 0u; b < nb; b++)
					if (blk_w[b0 + b] > 0.0)
						acc[ci] += blk_w[b0 + b] * merge_stage[b * DV + c];
		}
	}
	for (uint ci = 0u; ci < MERGE_NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			y[row * DV + c] = epilogue(acc[ci] / lsum, row * DV + c);
	}
}
