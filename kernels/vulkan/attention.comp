// attention: q [T,HQ,D], k cache [C,HK,D], v cache [C,HK,DV] -> y [T,HQ,DV].
// Query t attends cache rows 0..pos+t; q head j reads kv head j / (HQ / HK).
// One workgroup per (head, token). Keys are taken in chunks of LS_X starting
// at 0 (lane l scores key c0 + l); an online softmax carries the running max
// and denominator across chunks, and lane l accumulates output channels
// l, l + LS_X, ... over each chunk's keys in order. Chunk boundaries and
// reduction trees are fixed, so a row's result depends only on its own query
// and keys, never on T (decode of m tokens = m decodes of one). Prefill and
// decode share this kernel.
// masked_attention is this kernel with MASKED: key c of query t counts only
// when mask[t * MASK_C + c] != 0 (a masked key scores like one past n). A
// row with no such key divides by a zero sum (the reference rejects it).
// Grid: x = HQ, y = T.

layout(set = 0, binding = B_Q) readonly buffer Qb { float q[]; };
layout(set = 0, binding = B_K) readonly buffer Kb { float kc[]; };
layout(set = 0, binding = B_V) readonly buffer Vb { float vc[]; };
layout(set = 0, binding = B_Y) writeonly buffer Yb { float y[]; };
#ifdef MASKED
layout(set = 0, binding = B_M) readonly buffer Mb { float mask[]; };
#endif

#define NCH ((DV + LS_X - 1u) / LS_X)
// Stands in for -infinity: exp(NEG_BIG - m) is exactly 0 for any finite score.
#define NEG_BIG -3.0e38

shared float qs[D];
shared float ps[LS_X];

float score(uint key, uint kvh)
{
	float d = 0.0;
	for (uint i = 0u; i < D; i++)
		d += qs[i] * kc[(key * HK + kvh) * D + i];
	return d * SCALE;
}

void main()
{
	uint l = gl_LocalInvocationID.x;
	uint j = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
	uint kvh = j / (HQ / HK);
	uint n = step_pos + t + 1u;
	for (uint i = l; i < D; i += LS_X)
		qs[i] = q[(t * HQ + j) * D + i];
	barrier();
	float m = NEG_BIG, lsum = 0.0;
	float acc[NCH];
	for (uint ci = 0u; ci < NCH; ci++)
		acc[ci] = 0.0;
	for (uint c0 = 0u; c0 < n; c0 += LS_X) {
		uint key = c0 + l;
		bool live = key < n;
#ifdef MASKED
		live = live && mask[t * MASK_C + key] != 0.0;
#endif
		float s = live ? score(key, kvh) : NEG_BIG;
		float m_new = max(m, tree_max(l, s));
		float p = live ? exp(s - m_new) : 0.0;
		float corr = exp(m - m_new);
		ps[l] = p;
		lsum = lsum * corr + tree_sum(l, p); // its barriers publish ps too
		uint cnt = min(LS_X, n - c0);
		for (uint ci = 0u; ci < NCH; ci++) {
			uint c = l + ci * LS_X;
			if (c >= DV)
				break;
			float a = acc[ci] * corr;
			for (uint jj = 0u; jj < cnt; jj++)
				a += ps[jj] * vc[((c0 + jj) * HK + kvh) * DV + c];
			acc[ci] = a;
		}
		m = m_new;
	}
	for (uint ci = 0u; ci < NCH; ci++) {
		uint c = l + ci * LS_X;
		if (c < DV)
			y[(t * HQ + j) * DV + c] = epilogue(acc[ci] / lsum, (t * HQ + j) * DV + c);
	}
}
