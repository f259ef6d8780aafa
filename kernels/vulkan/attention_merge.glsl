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
// One counter per (token, head) row (attention.comp) or per tile of rows
// (attention_rows.comp): zero before the dispatch, and zero again after it.
layout(set = 0, binding = B_SY) coherent buffer Sb { uint counts[]; };
#else
layout(set = 0, binding = B_P) readonly buffer Pb { float part[]; };
#endif
layout(set = 0, binding = B_Y) writeonly buffer Yb { float y[]; };

#define NEG_BIG -3.0e38
#define MERGE_ROW (DV + 2u)

shared float blk_w[NBLK];

// y's row `row` from its first nblk blocks (those past them hold no key of
// it): the blocks' maxima give the row's max m, each block is weighted by
// e^(m_b - m), and the sums and denominators are added in block order;
// blocks with no key (denominator 0) are skipped. The same operations in the
// same order for any nblk that covers the row's keys, so the result does not
// depend on how many blocks a dispatch has. Every lane calls it.
void merge_row(uint row, uint nblk)
{
	uint l = gl_LocalInvocationID.x, base = row * NBLK * MERGE_ROW;
	float m = NEG_BIG;
	for (uint b = 0u; b < nblk; b++)
		m = max(m, part[base + b * MERGE_ROW + DV]);
	barrier(); // the previous row's reads of blk_w are done
	for (uint b = l; b < nblk; b += LS_X)
		blk_w[b] = part[base + b * MERGE_ROW + DV + 1u] > 0.0 ? exp(part[base + b * MERGE_ROW + DV] - m) : 0.0;
	barrier();
	float lsum = 0.0;
	for (uint b = 0u; b < nblk; b++)
		if (blk_w[b] > 0.0)
			lsum += blk_w[b] * part[base + b * MERGE_ROW + DV + 1u];
	for (uint c = l; c < DV; c += LS_X) {
		float a = 0.0;
		for (uint b = 0u; b < nblk; b++)
			if (blk_w[b] > 0.0)
				a += blk_w[b] * part[base + b * MERGE_ROW + c];
		y[row * DV + c] = epilogue(a / lsum, row * DV + c);
	}
}

#ifdef BLOCKS
shared bool merge_last;

// Called by every lane of each of the n workgroups sharing counter `slot`
// once it has written its blocks to part: true in the last of them to
// arrive, which has then zeroed the counter and may read every block. The
// classic last-block reduction: each workgroup's writes are made visible
// before its count (memoryBarrierBuffer), and the last reads them after.
bool merge_turn(uint slot, uint n)
{
	memoryBarrierBuffer();
	barrier();
	if (gl_LocalInvocationID.x == 0u) {
		merge_last = atomicAdd(counts[slot], 1u) + 1u == n;
		if (merge_last)
			counts[slot] = 0u; // all n have counted: nothing else touches it in this dispatch
	}
	barrier();
	memoryBarrierBuffer();
	return merge_last;
}
#endif
