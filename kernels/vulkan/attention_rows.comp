// attention_partial for prompt steps (more rows than a decode or verify step):
// workgroup (j, g, b) takes query rows t = g * RT .. g * RT + RT - 1 of head j
// and key block b, keys [b * BLOCK, (b + 1) * BLOCK), and writes for each row
// what attention.comp's PARTIAL form writes for it: at
// part[((t * HQ + j) * NBLK + b) * (DV + 2)] the unnormalised sums over the
// row's keys in the block (those below pos + t + 1), then the max score and
// the denominator (NEG_BIG and 0 for a row with no key in the block).
//
// Why: attention.comp gives each query row a workgroup of its own, which
// re-reads the block's keys and values from memory for every row (a
// 512-token prompt's attention was a quarter of its time on the H200). Here
// a chunk of KP keys is read once into shared memory for RT rows.
//
// Lanes: row r = lane / LPR of the tile, sub = lane % LPR. Passes of KP
// keys from the block's first: the keys' rows are staged (row stride D + 4
// floats, so the LPR lanes of a row, reading LPR different keys, fall in
// different banks; q rows likewise); lane (r, sub) scores keys sub,
// sub + LPR, ... of the pass for row r, each q load serving all of them,
// summing each q . k as attention.comp does (4 partial dots over channels
// p, p + 4, ..., then those 4 in order); every lane of row r takes the
// pass's max over its KP scores (exact in any order) and weights
// e^(s - max), 0 for a key past the row's last, and sums the denominator and
// its output channels (vec4s sub, sub + LPR, ...) over the pass's keys in
// key order, the values staged in the same shared rows. A key past the row's last adds
// exactly 0 (its weight is 0, its values finite: written by this step or an
// earlier one, or staged as 0 past the tile's last row's keys), so each
// row's sums are written as attention.comp's are (at its default 32 keys a
// pass), and a row's result never depends on T or on the other rows of its
// tile (batch invariance; prompt steps need not match decode's bits, since
// their projections come from other matmul kernels anyway).

#extension GL_EXT_control_flow_attributes : require

layout(set = 0, binding = B_Q) readonly buffer Q4b { vec4 q4[]; };
layout(set = 0, binding = B_K) readonly buffer K4b { vec4 kc4[]; };
layout(set = 0, binding = B_V) readonly buffer V4b { vec4 vc4[]; };
layout(set = 0, binding = B_Y) writeonly buffer Yb { float y[]; };

#define LPR (LS_X / RT)
#define KP 32u
#define KPL (KP / LPR) // keys a lane scores per pass
#define NEG_BIG -3.0e38
// staged row strides in vec4s: D + 4 (or DV + 4) floats, so that rows read
// together fall in different banks
#define DW (max(D, DV) / 4u + 1u)
#define QW (D / 4u + 1u)
#define NCH4 (DV / 4u / LPR) // vec4s of output channels per lane
// Every loop over acc, w and d is unrolled: an array indexed in a loop the
// compiler keeps rolled lives in local memory on NVIDIA (matvec.comp's
// accumulators did, running 1.3-1.6x slower).

shared vec4 qs[RT * QW];
shared vec4 kv[KP * DW];
shared float sc[RT * KP];

// Keys c0 .. c0 + KP - 1 of kv head kvh, W floats per key (D or DV) from
// buf, into kv; keys from end on read 0 (rows no step has written may hold
// anything, and 0 * NaN would not vanish).
#define STAGE(buf, W, c0, end, kvh)                                                 \
	for (uint e = gl_LocalInvocationID.x; e < KP * ((W) / 4u); e += LS_X) {     \
		uint key = e / ((W) / 4u), i = e % ((W) / 4u);                      \
		kv[key * DW + i] = (c0) + key < (end) ? buf[(((c0) + key) * HK + (kvh)) * ((W) / 4u) + i] \
						      : vec4(0.0);                           \
	}

void main()
{
	uint l = gl_LocalInvocationID.x, r = l / LPR, sub = l % LPR;
	uint j = gl_WorkGroupID.x, b = gl_WorkGroupID.z, kvh = j / (HQ / HK);
	uint t0 = gl_WorkGroupID.y * RT, t = t0 + r;
	uint lo = b * BLOCK;
	// this row's keys end before hi (lo: none); the tile's before hi_wg
	uint last = min(t0 + RT, STEP_T) - 1u;
	uint hi = t < STEP_T ? min(step_pos + t + 1u, lo + BLOCK) : lo;
	uint hi_wg = min(step_pos + last + 1u, lo + BLOCK);
	for (uint e = l; e < RT * (D / 4u); e += LS_X) {
		uint rr = e / (D / 4u), tt = t0 + rr;
		qs[rr * QW + e % (D / 4u)] = tt < STEP_T ? q4[(tt * HQ + j) * (D / 4u) + e % (D / 4u)] : vec4(0.0);
	}
	float m = NEG_BIG, lsum = 0.0;
	vec4 acc[NCH4];
	[[unroll]] for (uint k = 0u; k < NCH4; k++)
		acc[k] = vec4(0.0);
	for (uint c0 = lo; c0 < hi_wg; c0 += KP) {
		barrier(); // the previous pass's reads of kv and sc are done
		STAGE(kc4, D, c0, hi_wg, kvh)
		barrier();
		// key ii of the lane is sub + ii * LPR; d[ii][p] sums channels
		// p, p + 4, ... in order, each q load serving all KPL keys
		float d[KPL][4];
		[[unroll]] for (uint ii = 0u; ii < KPL; ii++)
			[[unroll]] for (uint p = 0u; p < 4u; p++)
				d[ii][p] = 0.0;
		for (uint c4 = 0u; c4 < D / 4u; c4 += 4u)
			[[unroll]] for (uint p = 0u; p < 4u; p++) {
				vec4 qv = qs[r * QW + c4 + p];
				[[unroll]] for (uint ii = 0u; ii < KPL; ii++)
					d[ii][p] += dot(qv, kv[(sub + ii * LPR) * DW + c4 + p]);
			}
		[[unroll]] for (uint ii = 0u; ii < KPL; ii++) {
			uint i = sub + ii * LPR;
			float s = 0.0;
			[[unroll]] for (uint p = 0u; p < 4u; p++)
				s += d[ii][p];
			sc[r * KP + i] = c0 + i < hi ? s * SCALE : NEG_BIG;
		}
		barrier();
		float m_new = m;
		[[unroll]] for (uint i = 0u; i < KP; i++)
			m_new = max(m_new, sc[r * KP + i]);
		float w[KP];
		float wsum = 0.0;
		[[unroll]] for (uint i = 0u; i < KP; i++) {
			w[i] = c0 + i < hi ? exp(sc[r * KP + i] - m_new) : 0.0;
			wsum += w[i];
		}
		float corr = exp(m - m_new);
		lsum = lsum * corr + wsum;
		m = m_new;
		barrier(); // every row's scores of the keys are read: stage the values
		STAGE(vc4, DV, c0, hi_wg, kvh)
		barrier();
		[[unroll]] for (uint k = 0u; k < NCH4; k++) {
			vec4 a = acc[k] * corr;
			[[unroll]] for (uint i = 0u; i < KP; i++)
				a += w[i] * kv[i * DW + sub + k * LPR];
			acc[k] = a;
		}
	}
	if (t >= STEP_T)
		return;
	uint base = ((t * HQ + j) * NBLK + b) * (DV + 2u);
	[[unroll]] for (uint k = 0u; k < NCH4; k++)
		for (uint e = 0u; e < 4u; e++)
			y[base + 4u * (sub + k * LPR) + e] = acc[k][e];
	if (sub == 0u) {
		y[base + DV] = m;
		y[base + DV + 1u] = lsum;
	}
}
