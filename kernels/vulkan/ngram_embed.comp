// ngram_embed: the hashed n-gram embedding (docs/ops.md). seq = [hist; ids]
// decodes hist (id + 1, 0 = before the sequence = EOS); for token t (row
// i = t + N-1 of seq) head j of order n = j / HPN + 2 reads table row
// (mix_n mod P[j]) + OFF[j], mix_n = XOR_{s<n} ctx_s * m_s. The 64-bit
// products, XORs and the modulus run on (lo, hi) pairs of 32-bit words, so
// no shaderInt64 feature is needed: ctx_s < 2^31 and the products stay below
// 2^63 (the multipliers are bounded by vocab), so the low 64 bits of
// ctx * m are the product. An id outside [0, VOCAB) reads as EOS (the
// reference rejects it). Lane e of row t owns output element c = e (head
// c / DP, channel c % DP), or elements c = 8e .. 8e + 7 of a quantized
// table (WQUANT: one wq_load8; DP is whole blocks, so one head's);
// workgroup row 0 also writes hist', which must not alias hist. With STEPS,
// lane e < N-1 of row t writes slot t of steps [T, N-1], the history after
// token t (rows t+1 .. t+N-1 of seq, as id + 1).
// Grid: x = ceil(HEADS * DP / (LS_X * PER_LANE)), y = T.
// Tables (#defined before): NG_MLO[NGRAM], NG_MHI[NGRAM], NG_P[HEADS],
// NG_OFF[HEADS].

layout(set = 0, binding = B_IDS) readonly buffer Ids { int ids[]; };
layout(set = 0, binding = B_H) readonly buffer Hist { float hist[]; };
layout(set = 0, binding = B_Y) writeonly buffer Y { float y[]; };
layout(set = 0, binding = B_NH) writeonly buffer NHist { float nh[]; };
#ifdef STEPS
layout(set = 0, binding = B_ST) writeonly buffer Steps { float steps[]; };
#endif

#define HN (NGRAM - 1u)
#ifdef WQUANT
#define PER_LANE 8u
#else
#define PER_LANE 1u
#endif

uint seq_at(uint i)
{
	if (i < HN) {
		float h = hist[i];
		return h == 0.0 ? EOS : uint(h) - 1u;
	}
	int v = ids[i - HN];
	return v < 0 || uint(v) >= VOCAB ? EOS : uint(v);
}

// The token s back from row i, or EOS when an EOS lies in rows i-s .. i-1.
uint context(uint i, uint s)
{
	for (uint r = i - s; r < i; r++)
		if (seq_at(r) == EOS)
			return EOS;
	return seq_at(i - s);
}

// Low 64 bits of a * (hi:lo), as (lo, hi).
uvec2 mul64(uint a, uint lo, uint hi)
{
	uint ph, pl;
	umulExtended(a, lo, ph, pl);
	return uvec2(pl, ph + a * hi);
}

// (hi:lo) mod p for p < 2^31, one bit at a time from the top, so the
// remainder never leaves 32 bits.
uint mod64(uvec2 v, uint p)
{
	uint r = 0u;
	for (int b = 63; b >= 0; b--) {
		uint bit = b >= 32 ? (v.y >> uint(b - 32)) & 1u : (v.x >> uint(b)) & 1u;
		r = (r << 1) | bit;
		if (r >= p)
			r -= p;
	}
	return r;
}

void main()
{
	uint e = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
	if (t == 0u && e < HN)
		nh[e] = float(seq_at(STEP_T + e) + 1u);
#ifdef STEPS
	if (e < HN)
		steps[t * HN + e] = float(seq_at(t + 1u + e) + 1u);
#endif
	uint c = e * PER_LANE; /* the first output element this lane writes */
	if (c >= HEADS * DP)
		return;
	uint j = c / DP, n = j / HPN + 2u, i = t + HN;
	uvec2 mix = mul64(context(i, 0u), NG_MLO[0], NG_MHI[0]);
	for (uint s = 1u; s < n; s++)
		mix ^= mul64(context(i, s), NG_MLO[s], NG_MHI[s]);
	uint row = mod64(mix, NG_P[j]) + NG_OFF[j];
	uint o = t * HEADS * DP + c;
#ifdef WQUANT
	vec4 a, b;
	wq_load8(row, c % DP, a, b);
	for (uint q = 0u; q < 4u; q++) {
		y[o + q] = a[q];
		y[o + 4u + q] = b[q];
	}
#else
	y[o] = load_w(row * DP + c % DP);
#endif
}
