// attention: q [T,HQ,D], k cache [C,HK,D], v cache [C,HK,DV] -> y [T,HQ,DV];
// with MASKED the masked_attention op, with PARTIAL attention_partial (grid
// z = NBLK, each block's unnormalised sums, max score and denominator).
// The twin of kernels/vulkan/attention.comp, whose comment gives the scheme:
// passes of KP = LS_X / LPK keys, LPK lanes a key summed in lane order, an
// online softmax, lane l owning output channels l, l + LS_X, ... summed in
// key order. Loops over acc and vv carry `#pragma unroll` where the GLSL
// has none: an array indexed in a rolled loop would live in local memory
// (the compile test refuses it); the order of the sums is the same.
// Grid: x = HQ, y = T, z = NBLK (1 without PARTIAL).

#define NCH ((DV + LS_X - 1u) / LS_X)
#define KP (LS_X / LPK)
// Stands in for -infinity: exp(NEG_BIG - m) is exactly 0 for any finite score.
#define NEG_BIG -3.0e38f

#if VEC4
HALO_SHARED vec4 qs4[D / 4u];
#else
HALO_SHARED float qs[D];
#endif
HALO_SHARED float part_dot[LS_X];
HALO_SHARED float score[KP];
HALO_SHARED float weight[KP];
// @struct

const float *__restrict__ q = (const float *)args.b[B_Q];
const float *__restrict__ kc = (const float *)args.b[B_K];
#if VEC4
const vec4 *__restrict__ q4 = (const vec4 *)args.b[B_Q];
const vec4 *__restrict__ kc4 = (const vec4 *)args.b[B_K];
#endif
const float *__restrict__ vc = (const float *)args.b[B_V];
float *__restrict__ y = (float *)args.b[B_Y];
#ifdef MASKED
const float *__restrict__ mask = (const float *)args.b[B_M];
#endif

bool key_live(uint key, uint hi, uint t)
{
#ifdef MASKED
	return key < hi && mask[t * MASK_C + key] != 0.0f;
#else
	return key < hi;
#endif
}

// This lane's share of q . k for one key row (channels p, p + LPK, ...).
float partial_dot(uint row, uint p)
{
	float d = 0.0f;
#if VEC4
	for (uint i = p; i < D / 4u; i += LPK)
		d += dot(qs4[i], kc4[row * (D / 4u) + i]);
#else
	for (uint i = p; i < D; i += LPK)
		d += qs[i] * kc[row * D + i];
#endif
	return d;
}

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint j = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
	uint kvh = j / (HQ / HK);
	uint n = step_pos + t + 1u;
#if PARTIAL
	uint lo = gl_WorkGroupID.z * BLOCK, hi = min(n, lo + BLOCK);
#else
	uint lo = 0u, hi = n;
#endif
#if VEC4
	for (uint i = l; i < D / 4u; i += LS_X)
		qs4[i] = q4[(t * HQ + j) * (D / 4u) + i];
#else
	for (uint i = l; i < D; i += LS_X)
		qs[i] = q[(t * HQ + j) * D + i];
#endif
	barrier();
	float m = NEG_BIG, lsum = 0.0f;
	float acc[NCH];
#pragma unroll
	for (uint ci = 0u; ci < NCH; ci++)
		acc[ci] = 0.0f;
	uint kk = l / LPK, p = l % LPK;
	for (uint c0 = lo; c0 < hi; c0 += KP) {
		uint key = c0 + kk;
		part_dot[l] = key < hi ? partial_dot(key * HK + kvh, p) : 0.0f;
		barrier();
		if (l < KP) {
			float s = 0.0f;
			for (uint r = 0u; r < LPK; r++)
				s += part_dot[l * LPK + r];
			score[l] = key_live(c0 + l, hi, t) ? s * SCALE : NEG_BIG;
		}
		barrier();
		float m_new = m;
		for (uint i = 0u; i < KP; i++)
			m_new = max(m_new, score[i]);
		if (l < KP)
			weight[l] = key_live(c0 + l, hi, t) ? exp(score[l] - m_new) : 0.0f;
		barrier();
		// The next pass writes weight only after two more barriers, which
		// every lane reaches only when done reading it here.
		float corr = exp(m - m_new);
		uint cnt = min(KP, hi - c0);
		float wsum = 0.0f;
		if (cnt == KP) {
#pragma unroll
			for (uint i = 0u; i < KP; i++)
				wsum += weight[i];
		} else {
			for (uint i = 0u; i < cnt; i++)
				wsum += weight[i];
		}
		lsum = lsum * corr + wsum;
#pragma unroll
		for (uint ci = 0u; ci < NCH; ci++) {
			uint c = l + ci * LS_X;
			if (c >= DV)
				break;
			float a = acc[ci] * corr;
			if (cnt == KP) {
				// A full pass: all KP loads issued before the first
				// use; the sum's order is the loop's below.
				float vv[KP];
#pragma unroll
				for (uint i = 0u; i < KP; i++)
					vv[i] = vc[((c0 + i) * HK + kvh) * DV + c];
#pragma unroll
				for (uint i = 0u; i < KP; i++)
					a += weight[i] * vv[i];
			} else {
				for (uint i = 0u; i < cnt; i++)
					a += weight[i] * vc[((c0 + i) * HK + kvh) * DV + c];
			}
			acc[ci] = a;
		}
		m = m_new;
	}
#if PARTIAL
	uint base = ((t * HQ + j) * NBLK + gl_WorkGroupID.z) * (DV + 2u);
#pragma unroll
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			y[base + c] = acc[ci];
	}
	if (l == 0u) {
		y[base + DV] = m;
		y[base + DV + 1u] = lsum;
	}
#else
#pragma unroll
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			y[(t * HQ + j) * DV + c] = epilogue(acc[ci] / lsum, (t * HQ + j) * DV + c);
	}
#endif
}
