// attention_partial for prompt steps: workgroup (g, r, b) takes QR query
// vectors, GH heads of one kv group (heads g * GH ..) for each of the RT =
// QR / GH token rows t = r * RT .., and key block b, and writes for each
// query what attention.hip's PARTIAL form writes for it (the row's
// unnormalised sums over its keys in the block, the max score, the
// denominator). The twin of kernels/vulkan/attention_rows.comp, whose
// comment gives the scheme: passes of KP keys staged once in shared memory
// for the QR queries; 128 lanes, lane l = query group l / 8 (SQ queries) and
// key or channel group l % 8; scores of SQ x SK register tiles (dot products
// over the channels' vec4s in order) to sw[key][query]; lane l < QR turns
// query l's scores into weights (its max, e^(s - max), the denominator in key
// order) while the values are staged; then the lane's SQ queries' output
// vec4s kg, kg + 8, ... rescaled and summed over the pass's keys in key
// order. The stores of acc's components carry `#pragma unroll` where the
// GLSL has none: a vector indexed in a rolled loop would live in local
// memory. With BLOCKS (attention_blocks) the blocks go to part and the
// tile's last live block merges its rows (attention_merge.hip).
// Grid: x = HQ / GH, y = ceil(T / RT), z = NBLK.

#define RT (QR / GH)
#define SQ (QR / 16u)
#define SK (KP / 8u)
#define NCV (DV / 4u)
#define CV ((NCV + 7u) / 8u)
#ifndef NEG_BIG
#define NEG_BIG -3.0e38f
#endif
#ifdef BLOCKS
#define PART_OUT part
#else
#define PART_OUT y
#endif
// staged row strides in vec4s: D + 4 (or DV + 4) floats, so that the rows
// the 8 key groups read together fall in different banks (a conditional
// where the GLSL calls max: a shared array's size must be a constant
// expression in C++)
#define DW ((D > DV ? D : DV) / 4u + 1u)
#define QW (D / 4u + 1u)

HALO_SHARED vec4 qs[QR * QW];
HALO_SHARED vec4 kv[KP * DW];
HALO_SHARED float sw[KP * QR]; // [key][query]: scores, then weights
HALO_SHARED float cs[QR];      // each query's rescale of the pass
// @struct

const vec4 *__restrict__ q4 = (const vec4 *)args.b[B_Q];
const vec4 *__restrict__ kc4 = (const vec4 *)args.b[B_K];
const vec4 *__restrict__ vc4 = (const vec4 *)args.b[B_V];
#ifndef BLOCKS
float *__restrict__ y = (float *)args.b[B_Y];
#endif

// Keys c0 .. c0 + KP - 1 of kv head kvh, W floats per key (D or DV) from
// buf, into kv; keys from end on read 0 (rows no step has written may hold
// anything, and 0 * NaN would not vanish).
#define STAGE(buf, W, c0, end, kvh)                                                                  \
	for (uint e = gl_LocalInvocationID.x; e < KP * ((W) / 4u); e += LS_X) {                      \
		uint key = e / ((W) / 4u), i = e % ((W) / 4u);                                       \
		kv[key * DW + i] = (c0) + key < (end) ? buf[(((c0) + key) * HK + (kvh)) * ((W) / 4u) + i] \
						      : vec4{0.0f, 0.0f, 0.0f, 0.0f};                 \
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
		qs[qi * QW + c] =
			tt < STEP_T ? q4[(tt * HQ + j0 + qi % GH) * (D / 4u) + c] : vec4{0.0f, 0.0f, 0.0f, 0.0f};
	}
	float m = NEG_BIG, lsum = 0.0f; // query l's, for l < QR
	vec4 acc[SQ][CV];
#pragma unroll
	for (uint a = 0u; a < SQ; a++)
#pragma unroll
		for (uint v = 0u; v < CV; v++)
			acc[a][v] = vec4{0.0f, 0.0f, 0.0f, 0.0f};
	for (uint c0 = lo; c0 < hi_wg; c0 += KP) {
		barrier(); // the previous pass's reads of kv, sw and cs are done
		STAGE(kc4, D, c0, hi_wg, kvh)
		barrier();
		float s[SQ][SK];
#pragma unroll
		for (uint a = 0u; a < SQ; a++)
#pragma unroll
			for (uint i = 0u; i < SK; i++)
				s[a][i] = 0.0f;
		for (uint c = 0u; c < D / 4u; c++) {
			vec4 kr[SK];
#pragma unroll
			for (uint i = 0u; i < SK; i++)
				kr[i] = kv[(kg + 8u * i) * DW + c];
#pragma unroll
			for (uint a = 0u; a < SQ; a++) {
				vec4 qv = qs[(qg * SQ + a) * QW + c];
#pragma unroll
				for (uint i = 0u; i < SK; i++)
					s[a][i] += dot(qv, kr[i]);
			}
		}
#pragma unroll
		for (uint a = 0u; a < SQ; a++) {
			uint qi = qg * SQ + a, hi = query_end(qi, t0, lo);
#pragma unroll
			for (uint i = 0u; i < SK; i++) {
				uint key = kg + 8u * i;
				sw[key * QR + qi] = c0 + key < hi ? s[a][i] * SCALE : NEG_BIG;
			}
		}
		barrier(); // the keys are scored: the values may replace them
		if (l < QR) {
			uint hi = query_end(l, t0, lo);
			float m_new = m;
#pragma unroll
			for (uint i = 0u; i < KP; i++)
				m_new = max(m_new, sw[i * QR + l]);
			float wsum = 0.0f;
#pragma unroll
			for (uint i = 0u; i < KP; i++) {
				float w = c0 + i < hi ? exp(sw[i * QR + l] - m_new) : 0.0f;
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
#pragma unroll
		for (uint a = 0u; a < SQ; a++) {
			float corr = cs[qg * SQ + a];
#pragma unroll
			for (uint v = 0u; v < CV; v++)
				acc[a][v] = acc[a][v] * corr;
		}
		for (uint i = 0u; i < KP; i++) {
			float w[SQ];
#pragma unroll
			for (uint a = 0u; a < SQ; a++)
				w[a] = sw[i * QR + qg * SQ + a];
#pragma unroll
			for (uint v = 0u; v < CV; v++)
				if (kg + 8u * v < NCV) {
					vec4 x = kv[i * DW + kg + 8u * v];
#pragma unroll
					for (uint a = 0u; a < SQ; a++)
						acc[a][v] += w[a] * x;
				}
		}
	}
#pragma unroll
	for (uint a = 0u; a < SQ; a++) {
		uint qi = qg * SQ + a, t = t0 + qi / GH;
		if (t >= STEP_T)
			continue;
		uint base = ((t * HQ + j0 + qi % GH) * NBLK + b) * (DV + 2u);
#pragma unroll
		for (uint v = 0u; v < CV; v++)
			if (kg + 8u * v < NCV)
#pragma unroll
				for (uint e = 0u; e < 4u; e++)
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
