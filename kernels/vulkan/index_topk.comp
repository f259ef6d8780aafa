// index_topk (docs/ops.md): q [T,H,DI], w [T,H], keys [E_ROWS,DI] -> ids
// [T,KSEL] i32, DeepSeek V4's Lightning indexer. Row t at p = pos + t scores
// the n = min((p+1)/RATIO, E_ROWS) visible keys,
// I(e) = sum_h w[t,h] * (relu(q[t,h] . keys[e]) * SCALE), and writes the best
// min(KSEL, n) of them (higher score first, ties to the lower index), then -1.
//
// One workgroup per token (grid x = 1, y = T), the keys taken CH at a time.
// Scoring: lane l takes keys c0 + l + LS_X * r (r < KPL = CH / LS_X); its
// dots read the key's vec4s from memory and the q rows from shared memory,
// staged HG heads at a time (every lane reads the same q vec4: a broadcast);
// the heads' terms are added in head order, all in f32 in one lane.
// Selection: the chunk's (score, index) pairs are sorted best first by a
// bitonic network, then merged into the running best KP (KSEL rounded up to
// a power of two; CH >= KP): best[i] keeps the better of best[i] and
// chunk[KP-1-i], which leaves the best KP of both as a bitonic sequence, and
// a bitonic merge sorts it. The order (higher score, then lower index, the
// slots past the keys last) is total, so the picks are exact: they are the
// reference's whenever the scores are (the reference sums in f64, this
// kernel in f32, so scores closer than their rounding may rank apart). A
// row's scores and picks depend on the row alone, never on T. Any E_ROWS
// works: shared memory holds a q stage, a chunk and the running best.
//
// Split for long contexts (passes/split_attention.c) into two dispatches
// of this template. SCORE (index_score: binding B_SC, scores [T,E_ROWS],
// instead of B_IDS): workgroup (b, t) scores keys b * BLOCK .. + BLOCK
// (grid x = ceil(E_ROWS / BLOCK); CH is BLOCK rounded up to a multiple of
// the lanes, the lanes past the block idle) exactly as a chunk is scored
// above, writing 0 past the n visible keys; a block past them scores
// nothing. SELECT
// (index_select: scores [T,E_ROWS] at B_SC instead of q, w and keys): one
// workgroup per token runs the selection above over the scores read back.
// The same scoring code and order per key, the same selection: the split
// picks what the unsplit kernel picks, bitwise.

#ifdef SELECT
layout(set = 0, binding = B_SC) readonly buffer Sb { float sc[]; };
#else
layout(set = 0, binding = B_Q) readonly buffer Qb { vec4 q4[]; };
layout(set = 0, binding = B_HW) readonly buffer Wb { float hw[]; };
layout(set = 0, binding = B_K) readonly buffer Kb { vec4 k4[]; };
#endif
#ifdef SCORE
layout(set = 0, binding = B_SC) writeonly buffer Sb { float sc[]; };
#else
layout(set = 0, binding = B_IDS) writeonly buffer Ib { int ids[]; };
#endif

#define D4 (DI / 4u)
#define KPL (CH / LS_X)
#define NONE 0xffffffffu

#ifndef SELECT
shared vec4 qs[HG * D4];
shared float wts[H];
#endif
#ifndef SCORE
shared float cv[CH];
shared uint ci[CH];
shared float bv[KP];
shared uint bi[KP];
#endif

#ifndef SCORE
// (v, i) ranks before (w, j): higher score, then lower index; NONE last.
bool before(float v, uint i, float w, uint j)
{
	return i != NONE && (j == NONE || v > w || (v == w && i < j));
}

#endif

#ifndef SELECT
// Scores of the lane's keys of the chunk at c0 (0 past the n visible ones).
void score_chunk(uint t, uint l, uint c0, uint n, out float tot[KPL])
{
	for (uint r = 0u; r < KPL; r++)
		tot[r] = 0.0;
	for (uint h0 = 0u; h0 < H; h0 += HG) {
		barrier(); // the previous stage is read
		for (uint i = l; i < HG * D4; i += LS_X) {
			uint hh = h0 + i / D4;
			qs[i] = hh < H ? q4[(t * H + hh) * D4 + i % D4] : vec4(0.0);
		}
		barrier();
		for (uint r = 0u; r < KPL; r++) {
			uint e = c0 + l + r * LS_X;
			if (e >= n)
				continue;
			float dots[HG];
			for (uint g = 0u; g < HG; g++)
				dots[g] = 0.0;
			for (uint i = 0u; i < D4; i++) {
				vec4 kv = k4[e * D4 + i];
				for (uint g = 0u; g < HG; g++)
					dots[g] += dot(qs[g * D4 + i], kv);
			}
			for (uint g = 0u; g < HG; g++)
				if (h0 + g < H)
					tot[r] += wts[h0 + g] * (max(dots[g], 0.0) * SCALE);
		}
	}
}

#endif

#ifndef SCORE
// One compare-exchange of the chunk: slot x (< y) gets the better of the
// two when `first`, else the worse.
void exchange_chunk(uint x, uint y, bool first)
{
	if (before(cv[y], ci[y], cv[x], ci[x]) == first) {
		float v = cv[x];
		uint i = ci[x];
		cv[x] = cv[y];
		ci[x] = ci[y];
		cv[y] = v;
		ci[y] = i;
	}
}

// Sorts the chunk best first: a bitonic network, one barrier a stage.
void sort_chunk(uint l)
{
	for (uint k = 2u; k <= CH; k <<= 1)
		for (uint j = k >> 1; j > 0u; j >>= 1) {
			for (uint x = l; x < CH; x += LS_X)
				if ((x ^ j) > x)
					exchange_chunk(x, x ^ j, (x & k) == 0u);
			barrier();
		}
}

// The sorted chunk's best KP into the running best, which stays sorted.
void merge_best(uint l)
{
	for (uint i = l; i < KP; i += LS_X)
		if (before(cv[KP - 1u - i], ci[KP - 1u - i], bv[i], bi[i])) {
			bv[i] = cv[KP - 1u - i];
			bi[i] = ci[KP - 1u - i];
		}
	for (uint j = KP >> 1; j > 0u; j >>= 1) {
		barrier();
		for (uint x = l; x < KP; x += LS_X) {
			uint y = x ^ j;
			if (y > x && before(bv[y], bi[y], bv[x], bi[x])) {
				float v = bv[x];
				uint i = bi[x];
				bv[x] = bv[y];
				bi[x] = bi[y];
				bv[y] = v;
				bi[y] = i;
			}
		}
	}
	barrier();
}

#endif

#ifdef SCORE
void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y, c0 = gl_WorkGroupID.x * BLOCK;
	uint n = min((step_pos + t + 1u) / RATIO, E_ROWS), end = min(c0 + BLOCK, E_ROWS);
	if (c0 < n) {
		for (uint i = l; i < H; i += LS_X)
			wts[i] = hw[t * H + i];
		float tot[KPL];
		score_chunk(t, l, c0, min(n, end), tot); // its first barrier publishes wts
		for (uint r = 0u; r < KPL; r++) {
			uint e = c0 + l + r * LS_X;
			if (e < end)
				sc[t * E_ROWS + e] = e < n ? tot[r] : 0.0;
		}
	} else {
		for (uint e = c0 + l; e < end; e += LS_X)
			sc[t * E_ROWS + e] = 0.0;
	}
}
#else
void main()
{
	uint l = gl_LocalInvocationID.x, t = gl_WorkGroupID.y;
	uint n = min((step_pos + t + 1u) / RATIO, E_ROWS);
#ifndef SELECT
	for (uint i = l; i < H; i += LS_X)
		wts[i] = hw[t * H + i];
#endif
	for (uint i = l; i < KP; i += LS_X) {
		bv[i] = 0.0;
		bi[i] = NONE;
	}
	for (uint c0 = 0u; c0 < n; c0 += CH) {
#ifdef SELECT
		// the previous chunk's merge ended on a barrier: cv is free
		for (uint r = 0u; r < KPL; r++) {
			uint e = c0 + l + r * LS_X;
			cv[l + r * LS_X] = e < n ? sc[t * E_ROWS + e] : 0.0;
			ci[l + r * LS_X] = e < n ? e : NONE;
		}
#else
		float tot[KPL];
		score_chunk(t, l, c0, n, tot);
		for (uint r = 0u; r < KPL; r++) {
			uint e = c0 + l + r * LS_X;
			cv[l + r * LS_X] = tot[r];
			ci[l + r * LS_X] = e < n ? e : NONE;
		}
#endif
		barrier();
		sort_chunk(l);
		merge_best(l);
	}
	barrier();
	for (uint i = l; i < KSEL; i += LS_X)
		ids[t * KSEL + i] = bi[i] == NONE ? -1 : int(bi[i]);
}
#endif
