// index_topk (docs/ops.md): q [T,H,DI], w [T,H], keys [E_ROWS,DI] -> ids
// [T,KSEL] i32. The twin of kernels/vulkan/index_topk.comp, which gives the
// scheme: one workgroup per token takes the n = min((p+1)/RATIO, E_ROWS)
// visible keys CH at a time; lane l scores keys c0 + l + LS_X * r (q staged
// HG heads at a time, the heads' terms added in head order, f32); the
// chunk's (score, index) pairs are sorted best first by a bitonic network
// and merged into the running best KP (a half-cleaner against the reversed
// chunk, then a bitonic merge). Higher score first, ties to the lower index.
// The loops over tot[] and dots[] are unrolled so both stay in registers
// (README.md). The split's halves (passes/split_attention.c): SCORE
// (index_score) has workgroup (b, t) score keys b * BLOCK .. + BLOCK (CH:
// BLOCK rounded up to a multiple of the lanes) into scores [T,E_ROWS] at
// B_SC (0 past the n visible ones); SELECT (index_select) runs the
// selection over those scores.
// Grid: x = 1 (SCORE: ceil(E_ROWS / BLOCK)), y = T.

#define D4 (DI / 4u)
#define KPL (CH / LS_X)
#define NONE 0xffffffffu

#ifndef SELECT
HALO_SHARED vec4 qs[HG * D4];
HALO_SHARED float wts[H];
#endif
#ifndef SCORE
HALO_SHARED float cv[CH];
HALO_SHARED uint ci[CH];
HALO_SHARED float bv[KP];
HALO_SHARED uint bi[KP];
#endif
// @struct

#ifdef SELECT
const float *__restrict__ sc = (const float *)args.b[B_SC];
#else
const vec4 *__restrict__ q4 = (const vec4 *)args.b[B_Q];
const float *__restrict__ hw = (const float *)args.b[B_HW];
const vec4 *__restrict__ k4 = (const vec4 *)args.b[B_K];
#endif
#ifdef SCORE
float *__restrict__ sc = (float *)args.b[B_SC];
#else
int *__restrict__ ids = (int *)args.b[B_IDS];
#endif

#ifndef SCORE
// (v, i) ranks before (w, j): higher score, then lower index; NONE last.
static bool before(float v, uint i, float w, uint j)
{
	return i != NONE && (j == NONE || v > w || (v == w && i < j));
}

#endif

#ifndef SELECT
// Scores of the lane's keys of the chunk at c0 (0 past the n visible ones).
void score_chunk(uint t, uint l, uint c0, uint n, float (&tot)[KPL])
{
#pragma unroll
	for (uint r = 0u; r < KPL; r++)
		tot[r] = 0.0f;
	for (uint h0 = 0u; h0 < H; h0 += HG) {
		barrier(); // the previous stage is read
		for (uint i = l; i < HG * D4; i += LS_X) {
			uint hh = h0 + i / D4;
			qs[i] = hh < H ? q4[(t * H + hh) * D4 + i % D4] : vec4(0.0f);
		}
		barrier();
#pragma unroll
		for (uint r = 0u; r < KPL; r++) {
			uint e = c0 + l + r * LS_X;
			if (e >= n)
				continue;
			float dots[HG];
#pragma unroll
			for (uint g = 0u; g < HG; g++)
				dots[g] = 0.0f;
			for (uint i = 0u; i < D4; i++) {
				vec4 kv = k4[e * D4 + i];
#pragma unroll
				for (uint g = 0u; g < HG; g++)
					dots[g] += dot(qs[g * D4 + i], kv);
			}
#pragma unroll
			for (uint g = 0u; g < HG; g++)
				if (h0 + g < H)
					tot[r] += wts[h0 + g] * (max(dots[g], 0.0f) * SCALE);
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
#pragma unroll
		for (uint r = 0u; r < KPL; r++) {
			uint e = c0 + l + r * LS_X;
			if (e < end)
				sc[t * E_ROWS + e] = e < n ? tot[r] : 0.0f;
		}
	} else {
		for (uint e = c0 + l; e < end; e += LS_X)
			sc[t * E_ROWS + e] = 0.0f;
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
		bv[i] = 0.0f;
		bi[i] = NONE;
	}
	for (uint c0 = 0u; c0 < n; c0 += CH) {
#ifdef SELECT
		// the previous chunk's merge ended on a barrier: cv is free
		for (uint r = 0u; r < KPL; r++) {
			uint e = c0 + l + r * LS_X;
			cv[l + r * LS_X] = e < n ? sc[t * E_ROWS + e] : 0.0f;
			ci[l + r * LS_X] = e < n ? e : NONE;
		}
#else
		float tot[KPL];
		score_chunk(t, l, c0, n, tot);
#pragma unroll
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
