// qsa_select: the QSA indexer (docs/ops.md). For query t at p = pos + t, the
// nb = (p+1) / BLOCK complete key blocks are scored and the best
// min(TOP, nb) of them (ties: lower index) plus the tail rows nb*BLOCK .. p
// get mask 1, every other row of the C-wide mask row 0.
// One workgroup per token. Lane l computes block keys b = l, l+LS_X, ... on
// its own: the mean of the block's BLOCK rows (in order), the (1+w) rms norm
// (sum of squares in order), NeoX rope at position b*BLOCK on the first ROT
// channels (θ from the f64 table THETA, angle in f32), then the score
// sum_h relu(q_h . key) / sqrt(D) against the token's q staged in shared
// memory. Every sum runs in one lane in a fixed order, so a token's scores,
// and so its mask, never depend on T. The lanes then pick the TOP blocks
// together (pick_top: the TOP-th best score a byte at a time, four passes
// over the scores, each counting them into 256 bins, where one lane
// scanning them TOP times was TOP * nb steps, 4 M at 32k tokens, and a
// bisection a bit at a time was 33 passes, each every lane summing all
// LS_X lanes' counts), and every lane writes its share of the mask row.
// The counts are integers, the same in any order, and which blocks are
// kept is a set the ranking defines, whatever the lanes.
// qsa_select_blocks is this kernel with BLOCKS: a token's blocks are spread
// over the grid's x workgroups, a block a lane (the plan makes them enough
// for the cache's blocks), workgroups with no block return at once, and the
// last of the token's workgroups to finish scoring (a ticket on its counter
// in sync, left zero) picks and writes the mask row. A block's score is the
// same lane's work in the same order, so the same bits.
// Grid: x = 1 (BLOCKS: ceil(C / BLOCK / LS_X)), y = T.

layout(set = 0, binding = B_Q) readonly buffer Qb { float q[]; };
layout(set = 0, binding = B_K) readonly buffer Kb { float keys[]; };
#if VEC4
layout(set = 0, binding = B_K) readonly buffer K4b { vec4 keys4[]; };
#endif
layout(set = 0, binding = B_NW) readonly buffer Wb { float kw[]; };
// The blocks' scores are kept in the token's mask row (C >= nb floats)
// until the mask is written over them: shared memory holds a bit a block,
// so that a long context fits (32k tokens in blocks of 4 are 8448 blocks).
layout(set = 0, binding = B_Y) coherent buffer Mb { float mask[]; };

shared float qs[H * D];
shared uint picked[PICK_WORDS]; // bit b % 32 of word b / 32: block b is kept
shared uint lane_n[LS_X];
shared uint bins[256]; // select_key's counts of one byte's values

float block_score(uint b)
{
	float key[D];
	float ss = 0.0;
	// The mean key, channel by channel in order; with VEC4 four channels a
	// load, the same sums in a quarter of the loads (a lane's rows are 2 KB
	// from its neighbours' at Qwen3.8 Flash's D = 128, so no load of a
	// workgroup's is coalesced: each one is a 32-byte sector a lane, and
	// four floats of it cost one load, not four).
#if VEC4
	for (uint i = 0u; i < D; i += 4u) {
		vec4 acc = vec4(0.0);
		for (uint r = 0u; r < BLOCK; r++)
			acc += keys4[((b * BLOCK + r) * D + i) / 4u];
		for (uint c = 0u; c < 4u; c++) {
			key[i + c] = acc[c] / float(BLOCK);
			ss += key[i + c] * key[i + c];
		}
	}
#else
	for (uint i = 0u; i < D; i++) {
		float acc = 0.0;
		for (uint r = 0u; r < BLOCK; r++)
			acc += keys[(b * BLOCK + r) * D + i];
		key[i] = acc / float(BLOCK);
		ss += key[i] * key[i];
	}
#endif
	float inv = inversesqrt(ss / float(D) + EPS);
	for (uint i = 0u; i < D; i++)
		key[i] = key[i] * inv * (kw[i] + 1.0);
	float p = float(b * BLOCK);
	for (uint i = 0u; i < ROT / 2u; i++) {
		float a = reduce_2pi(p * THETA[i]), c = cos(a), s = sin(a);
		float x1 = key[i], x2 = key[i + ROT / 2u];
		key[i] = x1 * c - x2 * s;
		key[i + ROT / 2u] = x2 * c + x1 * s;
	}
	float total = 0.0;
	for (uint h = 0u; h < H; h++) {
		float dot = 0.0;
		for (uint i = 0u; i < D; i++)
			dot += qs[h * D + i] * key[i];
		total += max(dot, 0.0);
	}
	return total / sqrt(float(D));
}

// A score's rank key: a higher score has a higher key, and +0 and -0 (equal
// scores, which rank by index) have one key.
uint rank_key(float s)
{
	uint u = floatBitsToUint(s);
	if ((u & 0x7fffffffu) == 0u)
		u = 0u;
	return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}

// The TOP-th best of the nb >= TOP blocks' keys, v, a byte at a time from
// the top: the keys that share the bytes found so far are counted into
// bins by their next byte, and that byte is the highest whose bin and those
// above it hold the rank still wanted. need: on return, how many of the
// blocks at v are among the TOP (at least 1). Every lane calls it and gets
// the same v and need.
uint select_key(uint l, uint row, uint nb, out uint need)
{
	uint v = 0u;
	need = TOP;
	for (int shift = 24; shift >= 0; shift -= 8) {
		uint high = shift == 24 ? 0u : ~0u << uint(shift + 8);
		for (uint i = l; i < 256u; i += LS_X)
			bins[i] = 0u;
		barrier();
		for (uint b = l; b < nb; b += LS_X) {
			uint k = rank_key(mask[row + b]);
			if ((k & high) == v)
				atomicAdd(bins[(k >> uint(shift)) & 255u], 1u);
		}
		barrier();
		uint above = 0u, digit = 255u;
		while (above + bins[digit] < need) {
			above += bins[digit];
			digit--;
		}
		need -= above;
		v |= digit << uint(shift);
		barrier();
	}
	return v;
}

// Marks the TOP best of nb > TOP blocks (higher score, then lower index):
// the TOP-th best key v (select_key), then every block above v and, in
// index order, the first `need` blocks at v. Lane l owns a run of whole
// words of picked[] and counts, before its run, the blocks at v of the
// lanes before.
void pick_top(uint l, uint row, uint nb)
{
	uint need;
	uint v = select_key(l, row, nb, need);
	uint per = (((nb + LS_X - 1u) / LS_X) + 31u) & ~31u;
	uint b0 = min(l * per, nb), b1 = min(b0 + per, nb);
	uint eq = 0u;
	for (uint b = b0; b < b1; b++)
		eq += uint(rank_key(mask[row + b]) == v);
	lane_n[l] = eq;
	barrier();
	uint before = 0u;
	for (uint i = 0u; i < l; i++)
		before += lane_n[i];
	for (uint w = b0; w < b1; w += 32u) {
		uint bits = 0u;
		for (uint b = w; b < min(w + 32u, b1); b++) {
			uint k = rank_key(mask[row + b]);
			if (k > v || (k == v && before < need))
				bits |= 1u << (b - w);
			before += uint(k == v);
		}
		picked[w / 32u] = bits;
	}
}

void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
	uint p = step_pos + t, nb = (p + 1u) / BLOCK, row = t * C;
	// nb <= TOP keeps every block, so nothing is scored: a lane's scores
	// are one block's serial work after another (a 4-layer Qwen3.8 Flash
	// cut spent 33 us a token here on the H200 at a few hundred tokens,
	// where TOP * BLOCK = 2048 keeps them all). nb is the same for every
	// lane, so the barriers inside stay uniform. Workgroup g of the `live`
	// ones that have blocks scores blocks g * LS_X + l, then every
	// live * LS_X-th (one each with BLOCKS, the grid covering the cache).
#ifdef BLOCKS
	uint g = gl_WorkGroupID.x, live = nb > TOP ? (nb + LS_X - 1u) / LS_X : 1u;
	if (g >= live)
		return;
#else
	uint g = 0u, live = 1u;
#endif
	if (nb > TOP) {
		for (uint i = l; i < H * D; i += LS_X)
			qs[i] = q[t * H * D + i];
		barrier();
		for (uint b = g * LS_X + l; b < nb; b += live * LS_X)
			mask[row + b] = block_score(b);
#ifdef BLOCKS
		if (!last_workgroup(t, live))
			return;
#endif
		memoryBarrierBuffer();
		barrier();
		pick_top(l, row, nb);
		memoryBarrierBuffer();
		barrier();
	}
	for (uint j = l; j < C; j += LS_X) {
		uint b = j / BLOCK;
		bool on = j <= p && (b >= nb || nb <= TOP || ((picked[b / 32u] >> (b % 32u)) & 1u) != 0u);
		mask[row + j] = on ? 1.0 : 0.0;
	}
}
