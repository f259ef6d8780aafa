// attention: q [T,HQ,D], k cache [C,HK,D], v cache [C,HK,DV] -> y [T,HQ,DV].
// Query t attends cache rows 0..pos+t; q head j reads kv head j / (HQ / HK).
// One workgroup per (head, token) (grid x = HQ, y = T).
//
// Keys are taken in passes of KP = LS_X / LPK keys from the first: LPK
// neighbouring lanes score one key, each over the channels i = p, p + LPK,
// ... (vec4s with VEC4, so the LPK lanes read a key row's consecutive 16-byte
// words together), their partial dots summed in lane order through shared
// memory. An online softmax carries the running max and denominator across
// passes: every lane takes the pass's max over its KP scores (a max is exact
// in any order), the pass's first KP lanes write the weights e^(s - max),
// and lane l accumulates output channels l, l + LS_X, ... and the
// denominator over the pass's keys in key order. Three barriers a pass. The
// passes, dots and sums are fixed by the key positions alone, so a row's
// result depends only on its own query and keys, never on T (decode of m
// tokens = m decodes of one). Prefill and decode share this kernel.
//
// masked_attention is this kernel with MASKED: key c of query t counts only
// when mask[t * MASK_C + c] != 0. A row with no such key divides by a zero
// sum (the reference rejects it).
//
// attention_partial is this kernel with PARTIAL (grid z = NBLK): workgroup
// (j, t, b) attends keys [b * BLOCK, min((b + 1) * BLOCK, pos + t + 1)) and
// writes, at part[((t * HQ + j) * NBLK + b) * (DV + 2)], the unnormalised
// sums, then the max score and the denominator (NEG_BIG and 0 for a block
// with no key); attention_combine.comp merges the blocks.

#extension GL_EXT_control_flow_attributes : require

layout(set = 0, binding = B_Q) readonly buffer Qb { float q[]; };
layout(set = 0, binding = B_K) readonly buffer Kb { float kc[]; };
#if VEC4
layout(set = 0, binding = B_Q) readonly buffer Q4b { vec4 q4[]; };
layout(set = 0, binding = B_K) readonly buffer K4b { vec4 kc4[]; };
#endif
layout(set = 0, binding = B_V) readonly buffer Vb { float vc[]; };
layout(set = 0, binding = B_Y) writeonly buffer Yb { float y[]; };
#ifdef MASKED
layout(set = 0, binding = B_M) readonly buffer Mb { float mask[]; };
#endif

#define NCH ((DV + LS_X - 1u) / LS_X)
#define KP (LS_X / LPK)
// Stands in for -infinity: exp(NEG_BIG - m) is exactly 0 for any finite score.
#define NEG_BIG -3.0e38

#if VEC4
shared vec4 qs4[D / 4u];
#else
shared float qs[D];
#endif
shared float part_dot[LS_X];
shared float score[KP];
shared float weight[KP];

bool key_live(uint key, uint hi, uint t)
{
#ifdef MASKED
	return key < hi && mask[t * MASK_C + key] != 0.0;
#else
	return key < hi;
#endif
}

// This lane's share of q . k for one key row (channels p, p + LPK, ...).
float partial_dot(uint row, uint p)
{
	float d = 0.0;
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
	float m = NEG_BIG, lsum = 0.0;
	float acc[NCH];
	for (uint ci = 0u; ci < NCH; ci++)
		acc[ci] = 0.0;
	uint kk = l / LPK, p = l % LPK;
	for (uint c0 = lo; c0 < hi; c0 += KP) {
		uint key = c0 + kk;
		part_dot[l] = key < hi ? partial_dot(key * HK + kvh, p) : 0.0;
		barrier();
		if (l < KP) {
			float s = 0.0;
			for (uint r = 0u; r < LPK; r++)
				s += part_dot[l * LPK + r];
			score[l] = key_live(c0 + l, hi, t) ? s * SCALE : NEG_BIG;
		}
		barrier();
		float m_new = m;
		for (uint i = 0u; i < KP; i++)
			m_new = max(m_new, score[i]);
		if (l < KP)
			weight[l] = key_live(c0 + l, hi, t) ? exp(score[l] - m_new) : 0.0;
		barrier();
		// The next pass writes weight only after two more barriers, which
		// every lane reaches only when done reading it here.
		float corr = exp(m - m_new);
		uint cnt = min(KP, hi - c0);
		float wsum = 0.0;
		if (cnt == KP) {
			[[unroll]] for (uint i = 0u; i < KP; i++)
				wsum += weight[i];
		} else {
			for (uint i = 0u; i < cnt; i++)
				wsum += weight[i];
		}
		lsum = lsum * corr + wsum;
		for (uint ci = 0u; ci < NCH; ci++) {
			uint c = l + ci * LS_X;
			if (c >= DV)
				break;
			float a = acc[ci] * corr;
			if (cnt == KP) {
				// A full pass: all KP loads issued before the first
				// use (a loop of load-then-add waited out each load's
				// latency in turn: 30 us a decode call at 576 keys).
				// The sum's order is the loop's below.
				float vv[KP];
				[[unroll]] for (uint i = 0u; i < KP; i++)
					vv[i] = vc[((c0 + i) * HK + kvh) * DV + c];
				[[unroll]] for (uint i = 0u; i < KP; i++)
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
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			y[(t * HQ + j) * DV + c] = epilogue(acc[ci] / lsum, (t * HQ + j) * DV + c);
	}
#endif
}
