// attention_partial for prompt steps: workgroup (j, g, b) takes query rows
// t = g * RT .. g * RT + RT - 1 of head j and key block b, and writes for
// each row what attention.hip's PARTIAL form writes for it (the row's
// unnormalised sums over its keys in the block, the max score, the
// denominator). The twin of kernels/vulkan/attention_rows.comp, whose
// comment gives the scheme: chunks of KP keys staged once in shared memory
// for RT rows, lane (r, sub) scoring keys sub, sub + LPR, ... of row r
// (4 partial dots over channels p, p + 4, ..., then those 4 in order), and
// summing its output vec4s sub, sub + LPR, ... over the pass's keys in key
// order. The store of acc's components carries `#pragma unroll` where the
// GLSL has none: a vector indexed in a rolled loop would live in local
// memory.
// Grid: x = HQ, y = ceil(T / RT), z = NBLK.

#define LPR (LS_X / RT)
#define KP 32u
#define KPL (KP / LPR) // keys a lane scores per pass
#define NEG_BIG -3.0e38f
// staged row strides in vec4s: D + 4 (or DV + 4) floats, so that rows read
// together fall in different banks (a conditional where the GLSL calls max:
// a shared array's size must be a constant expression in C++)
#define DW ((D > DV ? D : DV) / 4u + 1u)
#define QW (D / 4u + 1u)
#define NCH4 (DV / 4u / LPR) // vec4s of output channels per lane

HALO_SHARED vec4 qs[RT * QW];
HALO_SHARED vec4 kv[KP * DW];
HALO_SHARED float sc[RT * KP];
// @struct

const vec4 *__restrict__ q4 = (const vec4 *)args.b[B_Q];
const vec4 *__restrict__ kc4 = (const vec4 *)args.b[B_K];
const vec4 *__restrict__ vc4 = (const vec4 *)args.b[B_V];
float *__restrict__ y = (float *)args.b[B_Y];

// Keys c0 .. c0 + KP - 1 of kv head kvh, W floats per key (D or DV) from
// buf, into kv; keys from end on read 0 (rows no step has written may hold
// anything, and 0 * NaN would not vanish).
#define STAGE(buf, W, c0, end, kvh)                                                                  \
	for (uint e = gl_LocalInvocationID.x; e < KP * ((W) / 4u); e += LS_X) {                      \
		uint key = e / ((W) / 4u), i = e % ((W) / 4u);                                       \
		kv[key * DW + i] = (c0) + key < (end) ? buf[(((c0) + key) * HK + (kvh)) * ((W) / 4u) + i] \
						      : vec4{0.0f, 0.0f, 0.0f, 0.0f};                 \
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
		qs[rr * QW + e % (D / 4u)] =
			tt < STEP_T ? q4[(tt * HQ + j) * (D / 4u) + e % (D / 4u)] : vec4{0.0f, 0.0f, 0.0f, 0.0f};
	}
	float m = NEG_BIG, lsum = 0.0f;
	vec4 acc[NCH4];
#pragma unroll
	for (uint k = 0u; k < NCH4; k++)
		acc[k] = vec4{0.0f, 0.0f, 0.0f, 0.0f};
	for (uint c0 = lo; c0 < hi_wg; c0 += KP) {
		barrier(); // the previous pass's reads of kv and sc are done
		STAGE(kc4, D, c0, hi_wg, kvh)
		barrier();
		// key ii of the lane is sub + ii * LPR; d[ii][p] sums channels
		// p, p + 4, ... in order, each q load serving all KPL keys
		float d[KPL][4];
#pragma unroll
		for (uint ii = 0u; ii < KPL; ii++)
#pragma unroll
			for (uint p = 0u; p < 4u; p++)
				d[ii][p] = 0.0f;
		for (uint c4 = 0u; c4 < D / 4u; c4 += 4u)
#pragma unroll
			for (uint p = 0u; p < 4u; p++) {
				vec4 qv = qs[r * QW + c4 + p];
#pragma unroll
				for (uint ii = 0u; ii < KPL; ii++)
					d[ii][p] += dot(qv, kv[(sub + ii * LPR) * DW + c4 + p]);
			}
#pragma unroll
		for (uint ii = 0u; ii < KPL; ii++) {
			uint i = sub + ii * LPR;
			float s = 0.0f;
#pragma unroll
			for (uint p = 0u; p < 4u; p++)
				s += d[ii][p];
			sc[r * KP + i] = c0 + i < hi ? s * SCALE : NEG_BIG;
		}
		barrier();
		float m_new = m;
#pragma unroll
		for (uint i = 0u; i < KP; i++)
			m_new = max(m_new, sc[r * KP + i]);
		float w[KP];
		float wsum = 0.0f;
#pragma unroll
		for (uint i = 0u; i < KP; i++) {
			w[i] = c0 + i < hi ? exp(sc[r * KP + i] - m_new) : 0.0f;
			wsum += w[i];
		}
		float corr = exp(m - m_new);
		lsum = lsum * corr + wsum;
		m = m_new;
		barrier(); // every row's scores of the keys are read: stage the values
		STAGE(vc4, DV, c0, hi_wg, kvh)
		barrier();
#pragma unroll
		for (uint k = 0u; k < NCH4; k++) {
			vec4 a = acc[k] * corr;
#pragma unroll
			for (uint i = 0u; i < KP; i++)
				a += w[i] * kv[i * DW + sub + k * LPR];
			acc[k] = a;
		}
	}
	if (t >= STEP_T)
		return;
	uint base = ((t * HQ + j) * NBLK + b) * (DV + 2u);
#pragma unroll
	for (uint k = 0u; k < NCH4; k++)
#pragma unroll
		for (uint e = 0u; e < 4u; e++)
			y[base + 4u * (sub + k * LPR) + e] = acc[k][e];
	if (sub == 0u) {
		y[base + DV] = m;
		y[base + DV + 1u] = lsum;
	}
}
