// attention_partial for prompt steps (more rows than a decode or verify step):
// workgroup (g, r, b) takes QR query vectors, GH heads of one kv group
// (heads g * GH .. g * GH + GH - 1) for each of the RT = QR / GH token rows
// t = r * RT .. r * RT + RT - 1, and key block b, keys [b * BLOCK, (b + 1) *
// BLOCK), and writes for each query what attention.comp's PARTIAL form
// writes for it: at part[((t * HQ + j) * NBLK + b) * (DV + 2)] the
// unnormalised sums over the row's keys in the block (those below pos + t +
// 1), then the max score and the denominator (NEG_BIG and 0 for a row with
// no key in the block).
//
// Why: attention.comp gives each query row a workgroup of its own, which
// re-reads the block's keys and values for every row. Here a pass of KP keys
// is staged once in shared memory for the QR queries (the GH heads that share
// a kv head among them), and each lane works on a register tile, so that a
// shared load feeds several products: the first form of this kernel (one
// query a lane-row, every lane of a row recomputing the row's 32 weights)
// spent about a quarter of a 512-token prompt on the H200, bound by its
// shared-memory loads (five 16-byte loads per 16 multiply-adds).
//
// 128 lanes; lane l is query group qg = l / 8 (queries qg * SQ ..
// qg * SQ + SQ - 1) and key or channel group kg = l % 8. A pass:
//   scores: the lane sums q . k for its SQ queries and SK keys kg, kg + 8,
//     ... (each a sum of dot products over the channels' vec4s in order), so
//     a step over D loads SQ + SK vec4s for SQ * SK dot products; they go
//     to sw[key][query] times SCALE, NEG_BIG for a key past the query's last;
//   weights: lane l < QR takes query l's max over its scores (exact in any
//     order), replaces each score by e^(s - max) (0 past the query's last
//     key), sums them in key order and keeps the running max and denominator;
//     its rescale of the pass goes to cs[l]. Meanwhile every lane stages the
//     values where the keys were;
//   sums: the lane scales its SQ queries' output vec4s kg, kg + 8, ... by
//     the rescale and adds w * v over the pass's keys in key order, a load
//     of v feeding SQ products.
// A key past a query's last adds exactly 0 (its weight is 0, its values
// finite: written by this step or an earlier one, or staged as 0 past the
// tile's last keys), and a pass whose keys are all past it leaves its sums
// as they were (rescale e^0), so each query's sums do not depend on T, on
// the other rows of its tile or on which lane holds it (batch invariance;
// prompt steps need not match decode's bits, since their projections come
// from other matmul kernels anyway).
//
// attention_blocks is this kernel with BLOCKS: the blocks go to part
// (attention_merge.glsl declares it, y and the counters), a block past the
// tile's last key returns at once, and the last of the tile's live blocks to
// finish merges each of its rows (one counter a tile: GH heads, RT tokens).

#extension GL_EXT_control_flow_attributes : require

layout(set = 0, binding = B_Q) readonly buffer Q4b { vec4 q4[]; };
layout(set = 0, binding = B_K) readonly buffer K4b { vec4 kc4[]; };
layout(set = 0, binding = B_V) readonly buffer V4b { vec4 vc4[]; };
#ifdef BLOCKS
#define PART_OUT part
#else
layout(set = 0, binding = B_Y) writeonly buffer Yb { float y[]; };
#define PART_OUT y
#endif

#define RT (QR / GH)         // token rows a workgroup
#define SQ (QR / 16u)        // queries a lane scores and sums
#define SK (KP / 8u)         // keys a lane scores
#define NCV (DV / 4u)        // output vec4s of a query
#define CV ((NCV + 7u) / 8u) // of which a lane sums (kg, kg + 8, ...)
#ifndef NEG_BIG
#define NEG_BIG -3.0e38
#endif
// staged row strides in vec4s: D + 4 (or DV + 4) floats, so that the rows
// the 8 key groups read together fall in different banks
#define DW (max(D, DV) / 4u + 1u)
#define QW (D / 4u + 1u)
// Every loop over s, acc and w is unrolled: an array indexed in a loop the
// compiler keeps rolled lives in local memory on NVIDIA (matvec.comp's
// accumulators did, running 1.3-1.6x slower).

shared vec4 qs[QR * QW];
shared vec4 kv[KP * DW];
shared float sw[KP * QR]; // [key][query]: scores, then weights
shared float cs[QR];      // each query's rescale of the pass

// Keys c0 .. c0 + KP - 1 of kv head kvh, W floats per key (D or DV) from
// buf, into kv; keys from end on read 0 (rows no step has written may hold
// anything, and 0 * NaN would not vanish).
#define STAGE(buf, W, c0, end, kvh)                                                 \
	for (uint e = gl_LocalInvocationID.x; e < KP * ((W) / 4u); e += LS_X) {     \
		uint key = e / ((W) / 4u), i = e % ((W) / 4u);                      \
		kv[key * DW + i] = (c0) + key < (end) ? buf[(((c0) + key) * HK + (kvh)) * ((W) / 4u) + i] \
						      : vec4(0.0);                           \
	}

// Where query qi's keys in the block end (lo: none).
uint query_end(uint qi, uint t0, uint lo)
{
	uint t = t0 + qi / GH;
	return t < STEP_T ? min(step_pos + t + 1u, lo + BLOCK) : lo;
}

void main()
{
	uint l = gl_LocalInvocationID.x, qg = l / 8u, kg = l % 8u;
	uint j0 = gl_WorkGroupID.x * GH, kvh = j0 / (HQ / HK), b = gl_WorkGroupID.z;
	uint t0 = gl_WorkGroupID.y * RT, lo = b * BLOCK;
	// the tile's keys end before hi_wg
	uint last = min(t0 + RT, STEP_T) - 1u;
	uint hi_wg = min(step_pos + last + 1u, lo + BLOCK);
#ifdef BLOCKS
	if (lo >= step_pos + last + 1u)
		return;
#endif
	for (uint e = l; e < QR * (D / 4u); e += LS_X) {
		uint qi = e / (D / 4u), c = e % (D / 4u), tt = t0 + qi / GH;
		qs[qi * QW + c] = tt < STEP_T ? q4[(tt * HQ + j0 + qi % GH) * (D / 4u) + c] : vec4(0.0);
	}
	float m = NEG_BIG, lsum = 0.0; // query l's, for l < QR
	vec4 acc[SQ][CV];
	[[unroll]] for (uint a = 0u; a < SQ; a++)
		[[unroll]] for (uint v = 0u; v < CV; v++)
			acc[a][v] = vec4(0.0);
	for (uint c0 = lo; c0 < hi_wg; c0 += KP) {
		barrier(); // the previous pass's reads of kv, sw and cs are done
		STAGE(kc4, D, c0, hi_wg, kvh)
		barrier();
		float s[SQ][SK];
		[[unroll]] for (uint a = 0u; a < SQ; a++)
			[[unroll]] for (uint i = 0u; i < SK; i++)
				s[a][i] = 0.0;
		for (uint c = 0u; c < D / 4u; c++) {
			vec4 kr[SK];
			[[unroll]] for (uint i = 0u; i < SK; i++)
				kr[i] = kv[(kg + 8u * i) * DW + c];
			[[unroll]] for (uint a = 0u; a < SQ; a++) {
				vec4 qv = qs[(qg * SQ + a) * QW + c];
				[[unroll]] for (uint i = 0u; i < SK; i++)
					s[a][i] += dot(qv, kr[i]);
			}
		}
		[[unroll]] for (uint a = 0u; a < SQ; a++) {
			uint qi = qg * SQ + a, hi = query_end(qi, t0, lo);
			[[unroll]] for (uint i = 0u; i < SK; i++) {
				uint key = kg + 8u * i;
				sw[key * QR + qi] = c0 + key < hi ? s[a][i] * SCALE : NEG_BIG;
			}
		}
		barrier(); // the keys are scored: the values may replace them
		if (l < QR) {
			uint hi = query_end(l, t0, lo);
			float m_new = m;
			[[unroll]] for (uint i = 0u; i < KP; i++)
				m_new = max(m_new, sw[i * QR + l]);
			float wsum = 0.0;
			[[unroll]] for (uint i = 0u; i < KP; i++) {
				float w = c0 + i < hi ? exp(sw[i * QR + l] - m_new) : 0.0;
				sw[i * QR + l] = w;
				wsum += w;
			}
			float corr = exp(m - m_new);
			lsum = lsum * corr + wsum;
			m = m_new;
			cs[l] = corr;
		}
		STAGE(vc4, DV, c0, hi_wg, kvh)
		barrier();
		[[unroll]] for (uint a = 0u; a < SQ; a++) {
			float corr = cs[qg * SQ + a];
			[[unroll]] for (uint v = 0u; v < CV; v++)
				acc[a][v] *= corr;
		}
		for (uint i = 0u; i < KP; i++) {
			float w[SQ];
			[[unroll]] for (uint a = 0u; a < SQ; a++)
				w[a] = sw[i * QR + qg * SQ + a];
			[[unroll]] for (uint v = 0u; v < CV; v++)
				if (kg + 8u * v < NCV) {
					vec4 x = kv[i * DW + kg + 8u * v];
					[[unroll]] for (uint a = 0u; a < SQ; a++)
						acc[a][v] += w[a] * x;
				}
		}
	}
	[[unroll]] for (uint a = 0u; a < SQ; a++) {
		uint qi = qg * SQ + a, t = t0 + qi / GH;
		if (t >= STEP_T)
			continue;
		uint base = ((t * HQ + j0 + qi % GH) * NBLK + b) * (DV + 2u);
		[[unroll]] for (uint v = 0u; v < CV; v++)
			if (kg + 8u * v < NCV)
				[[unroll]] for (uint e = 0u; e < 4u; e++)
					PART_OUT[base + 4u * (kg + 8u * v) + e] = acc[a][v][e];
	}
	if (l < QR && t0 + l / GH < STEP_T) {
		uint base = (((t0 + l / GH) * HQ + j0 + l % GH) * NBLK + b) * (DV + 2u);
		PART_OUT[base + DV] = m;
		PART_OUT[base + DV + 1u] = lsum;
	}
#ifdef BLOCKS
	uint live = min(NBLK, (step_pos + last + BLOCK) / BLOCK);
	if (last_workgroup(gl_WorkGroupID.y * (HQ / GH) + gl_WorkGroupID.x, live))
		for (uint qi = 0u; qi < QR && t0 + qi / GH < STEP_T; qi++)
			merge_row((t0 + qi / GH) * HQ + j0 + qi % GH, live);
#endif
}
