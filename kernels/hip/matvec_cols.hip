// matvec.hip's per-lane work for @NC@ columns per column group: the twin of
// kernels/vulkan/matvec_cols.glsl (which explains the layout), written by
// codegen/emit_kernel.c into the kernel's struct once per column count, with
// @NC@ replaced.

#define NDOT_@NC@ (@NC@u * T_MAX)
#define NVAL_@NC@ (NDOT_@NC@ + PRO_RMS * T_MAX)
// acc holds column c of row t at c * T_MAX + t and row t's sum of squares at
// NDOT + t; only rows < ROWS are live. ROWS is not a constant here (HIP has
// no specialisation constants), so the loops over rows run to T_MAX and skip
// the rows past ROWS (GLSL's break), and every loop that indexes acc (or the
// chunks in flight) is unrolled by pragma: with constant indices acc stays
// in registers. A break left the loops rolled (the reduction's, holding
// subgroup shuffles, cannot be unrolled by an unknown count) and the
// unroller's own threshold left the wider paths' loops rolled, both with
// acc in local memory.
#define FOR_LIVE_@NC@(i, v, BODY)                                                  \
	_Pragma("unroll") for (uint c_ = 0u; c_ < @NC@u + PRO_RMS; c_++)           \
		_Pragma("unroll") for (uint t_ = 0u; t_ < T_MAX; t_++) {            \
			if (t_ >= ROWS)                                             \
				continue;                                           \
			uint i = c_ < @NC@u ? c_ * T_MAX + t_ : NDOT_@NC@ + t_;      \
			uint v = c_ * ROWS + t_;                                    \
			BODY                                                        \
		}
#define NLIVE_@NC@ ((@NC@u + PRO_RMS) * ROWS)

#ifdef XQ8
// Adds chunk j (QPC weights, from column k0 of the staged tile on) of every
// live row against the columns' quantized chunks w[c], in x's codes (the
// twin of matvec_cols.glsl's XQ8 accumulate): integer sums per chunk, scaled
// once per chunk, column and row.
void accumulate_@NC@(float (&acc)[NVAL_@NC@], uint j, const WCHUNK (&w)[@NC@], uint k0)
{
	uint kk = j * QPC - k0, xw = kk / 4u, xb = kk / 32u;
	int s[NDOT_@NC@];
#pragma unroll
	for (uint i = 0u; i < NDOT_@NC@; i++)
		s[i] = 0;
#if WQ4K
	int sx[T_MAX];
#pragma unroll
	for (uint t = 0u; t < T_MAX; t++)
		sx[t] = 0;
#endif
#pragma unroll
	for (uint q = 0u; q < uint(QW); q++) {
#if WQ4K
		uint lo[@NC@], hi[@NC@];
#pragma unroll
		for (uint c = 0u; c < @NC@u; c++) {
			lo[c] = WQ_WORD(w[c].v, q) & 0x0f0f0f0fu;
			hi[c] = (WQ_WORD(w[c].v, q) >> 4u) & 0x0f0f0f0fu;
		}
#pragma unroll
		for (uint t = 0u; t < T_MAX; t++) {
			if (t >= ROWS)
				continue;
			uint xe = xq_code[t * (XT / 4u) + xw + 2u * q], xo = xq_code[t * (XT / 4u) + xw + 2u * q + 1u];
			sx[t] += dot4(xe, 0x01010101u) + dot4(xo, 0x01010101u);
#pragma unroll
			for (uint c = 0u; c < @NC@u; c++)
				s[c * T_MAX + t] += dot4(lo[c], xe) + dot4(hi[c], xo);
		}
#else
#pragma unroll
		for (uint t = 0u; t < T_MAX; t++) {
			if (t >= ROWS)
				continue;
			uint xv = xq_code[t * (XT / 4u) + xw + q];
#pragma unroll
			for (uint c = 0u; c < @NC@u; c++)
				s[c * T_MAX + t] += dot4(WQ_WORD(w[c].v, q), xv);
		}
#endif
	}
#pragma unroll
	for (uint c = 0u; c < @NC@u; c++) {
#if WQ4K
		vec2 so = q4_scales(w[c].meta, (j * QPC / 32u) % 8u);
#endif
#pragma unroll
		for (uint t = 0u; t < T_MAX; t++) {
			if (t >= ROWS)
				continue;
			float dx = xq_d[t * (XT / 32u) + xb];
#if WQ4K
			acc[c * T_MAX + t] += dx * (so.x * float(s[c * T_MAX + t]) - so.y * float(sx[t]));
#else
			acc[c * T_MAX + t] += (w[c].d * dx) * float(s[c * T_MAX + t]);
#endif
		}
	}
#if PRO_RMS
	if (kk % 32u == 0u) {
#pragma unroll
		for (uint t = 0u; t < T_MAX; t++) {
			if (t >= ROWS)
				continue;
			acc[NDOT_@NC@ + t] += xq_ss[t * (XT / 32u) + xb];
		}
	}
#endif
}
#elif defined(WQUANT)
// Adds chunk j (QPC weights) of every live row, against the columns'
// quantized chunks w[c]: each of the chunk's QW words is unpacked once for
// all rows, the row's x * q summed over the chunk (word order, then vec4
// order within a word), and the sum scaled once per chunk and column.
void accumulate_@NC@(float (&acc)[NVAL_@NC@], uint j, const WCHUNK (&w)[@NC@])
{
	float s[NDOT_@NC@];
#pragma unroll
	for (uint i = 0u; i < NDOT_@NC@; i++)
		s[i] = 0.0f;
#if WQ4K
	float sx[T_MAX];
#pragma unroll
	for (uint t = 0u; t < T_MAX; t++)
		sx[t] = 0.0f;
#endif
#pragma unroll
	for (uint q = 0u; q < uint(QW); q++) {
		// this word's x: vec4s xi .. xi + QPW / 4 - 1 of a row
		uint xi = j * (QPC / 4u) + q * (QPW / 4u);
#if WQ_NIB
		vec4 wa[@NC@], wb[@NC@];
#pragma unroll
		for (uint c = 0u; c < @NC@u; c++)
			WQ_NIB_UNPACK(WQ_WORD(w[c].v, q), wa[c], wb[c]);
#if PRO_NW
		vec4 na = nw4[xi] + PRO_OFFSET, nb = nw4[xi + 1u] + PRO_OFFSET;
#endif
#pragma unroll
		for (uint t = 0u; t < T_MAX; t++) {
			if (t >= ROWS)
				continue;
			vec4 xa = x4[X4ROW(t) + xi], xb = x4[X4ROW(t) + xi + 1u];
#if PRO_RMS
			acc[NDOT_@NC@ + t] += dot(xa, xa) + dot(xb, xb);
#endif
#if PRO_NW
			xa *= na;
			xb *= nb;
#endif
#if WQ4K
			sx[t] += dot(xa, vec4{1.0f, 1.0f, 1.0f, 1.0f}) + dot(xb, vec4{1.0f, 1.0f, 1.0f, 1.0f});
#endif
#pragma unroll
			for (uint c = 0u; c < @NC@u; c++)
				s[c * T_MAX + t] += dot(xa, wa[c]) + dot(xb, wb[c]);
		}
#else
		vec4 wq[@NC@];
#pragma unroll
		for (uint c = 0u; c < @NC@u; c++)
			wq[c] = b8_unpack(WQ_WORD(w[c].v, q));
#if PRO_NW
		vec4 na = nw4[xi] + PRO_OFFSET;
#endif
#pragma unroll
		for (uint t = 0u; t < T_MAX; t++) {
			if (t >= ROWS)
				continue;
			vec4 xa = x4[X4ROW(t) + xi];
#if PRO_RMS
			acc[NDOT_@NC@ + t] += dot(xa, xa);
#endif
#if PRO_NW
			xa *= na;
#endif
#pragma unroll
			for (uint c = 0u; c < @NC@u; c++)
				s[c * T_MAX + t] += dot(xa, wq[c]);
		}
#endif
	}
#pragma unroll
	for (uint c = 0u; c < @NC@u; c++) {
#if WQ4K
		vec2 so = q4_scales(w[c].meta, (j * QPC / 32u) % 8u);
#endif
#pragma unroll
		for (uint t = 0u; t < T_MAX; t++) {
			if (t >= ROWS)
				continue;
#if WQ4K
			acc[c * T_MAX + t] += so.x * s[c * T_MAX + t] - so.y * sx[t];
#else
			acc[c * T_MAX + t] += w[c].d * s[c * T_MAX + t];
#endif
		}
	}
}
#else
// Adds chunk j of every live row, against the columns' chunks w[c].
void accumulate_@NC@(float (&acc)[NVAL_@NC@], uint j, const WCHUNK (&w)[@NC@])
{
#pragma unroll
	for (uint t = 0u; t < T_MAX; t++) {
		if (t >= ROWS)
			continue;
#if VEC8
		vec4 xa = x4[X4ROW(t) + 2u * j], xb = x4[X4ROW(t) + 2u * j + 1u];
#if PRO_RMS
		acc[NDOT_@NC@ + t] += dot(xa, xa) + dot(xb, xb);
#endif
#if PRO_NW
		xa *= nw4[2u * j] + PRO_OFFSET;
		xb *= nw4[2u * j + 1u] + PRO_OFFSET;
#endif
#pragma unroll
		for (uint c = 0u; c < @NC@u; c++) {
			vec4 wa, wb;
			unpack_chunk(w[c], wa, wb);
			acc[c * T_MAX + t] += dot(xa, wa) + dot(xb, wb);
		}
#else
		float xv = x[XROW(t) + j];
#if PRO_RMS
		acc[NDOT_@NC@ + t] += xv * xv;
#endif
#if PRO_NW
		xv *= nw[j] + PRO_OFFSET;
#endif
#pragma unroll
		for (uint c = 0u; c < @NC@u; c++)
			acc[c * T_MAX + t] += xv * w[c];
#endif
	}
}
#endif

// The lane's K loop for the columns n0 .. n0 + @NC@ - 1 (columns past N read
// column N - 1 and are never written).
#ifdef XQ8
// The same over the tiles of x's codes (matvec_cols.glsl's XQ8 stream): the
// whole workgroup stages a tile between barriers, then each lane adds its
// chunks of the tile, j = l mod SPLIT.
void stream_@NC@(float (&acc)[NVAL_@NC@], uint l, uint n0)
{
#pragma unroll
	for (uint i = 0u; i < NVAL_@NC@; i++)
		acc[i] = 0.0f;
	for (uint k0 = 0u; k0 < K; k0 += XT) {
		uint jlo = k0 / QPC, jhi = min(k0 + XT, K) / QPC;
		barrier(); /* the last tile's codes are read */
		stage_x(k0, min(XT, K - k0));
		barrier();
		for (uint j0 = jlo + (l + SPLIT - jlo % SPLIT) % SPLIT; j0 < jhi; j0 += SPLIT * UNROLL) {
			WCHUNK w[UNROLL][@NC@];
#pragma unroll
			for (uint u = 0u; u < UNROLL; u++) {
				uint j = min(j0 + u * SPLIT, jhi - 1u);
#pragma unroll
				for (uint c = 0u; c < @NC@u; c++)
					w[u][c] = load_chunk(min(n0 + c, N - 1u), j);
			}
#pragma unroll
			for (uint u = 0u; u < UNROLL; u++)
				if (j0 + u * SPLIT < jhi)
					accumulate_@NC@(acc, j0 + u * SPLIT, w[u], k0);
		}
	}
}
#else
void stream_@NC@(float (&acc)[NVAL_@NC@], uint l, uint n0)
{
#pragma unroll
	for (uint i = 0u; i < NVAL_@NC@; i++)
		acc[i] = 0.0f;
	for (uint j0 = l; j0 < KC; j0 += SPLIT * UNROLL) {
		WCHUNK w[UNROLL][@NC@];
#pragma unroll
		for (uint u = 0u; u < UNROLL; u++) {
			uint j = min(j0 + u * SPLIT, KC - 1u);
#pragma unroll
			for (uint c = 0u; c < @NC@u; c++)
				w[u][c] = load_chunk(min(n0 + c, N - 1u), j);
		}
#pragma unroll
		for (uint u = 0u; u < UNROLL; u++)
			if (j0 + u * SPLIT < KC)
				accumulate_@NC@(acc, j0 + u * SPLIT, w[u]);
	}
}
#endif

#if SG_SHUFFLE
// Leaves the group's sums in the group's first lane or, for a group inside
// one subgroup, in every lane (returns false then).
bool reduce_@NC@(float (&acc)[NVAL_@NC@], uint lane, uint g)
{
	uint cl = min(uint(SPLIT), gl_SubgroupSize);
#pragma unroll
	for (uint o = cl / 2u; o > 0u; o >>= 1)
		FOR_LIVE_@NC@(i, v, acc[i] += subgroupShuffleXor(acc[i], o);)
	if (gl_SubgroupSize >= SPLIT)
		return false;
	// Several subgroups per group: their sums, added in subgroup order.
	uint spg = SPLIT / gl_SubgroupSize;
	if (gl_SubgroupInvocationID == 0u)
		FOR_LIVE_@NC@(i, v, PART(gl_SubgroupID, v) = acc[i];)
	barrier();
	if (lane % SPLIT == 0u)
		FOR_LIVE_@NC@(i, v, {
			float s = PART(g * spg, v);
			for (uint q = 1u; q < spg; q++)
				s += PART(g * spg + q, v);
			acc[i] = s;
		})
	return true;
}
#else
bool reduce_@NC@(float (&acc)[NVAL_@NC@], uint lane, uint g)
{
	FOR_LIVE_@NC@(i, v, PART(lane, v) = acc[i];)
	uint l = lane % SPLIT, base = g * SPLIT;
	for (uint s = SPLIT / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l < s)
			for (uint v = 0u; v < NLIVE_@NC@; v++)
				PART(base + l, v) += PART(base + l + s, v);
	}
	barrier();
	if (l == 0u)
		FOR_LIVE_@NC@(i, v, acc[i] = PART(base, v);)
	return true;
}
#endif

// Column group grp's outputs: its columns for every live row.
void run_@NC@(uint lane, uint g, uint l, uint grp)
{
	float acc[NVAL_@NC@];
	uint n0 = grp * @NC@u;
	stream_@NC@(acc, l, n0);
	bool leader_only = reduce_@NC@(acc, lane, g);
	// One lane per group writes or, where every lane holds the sums, lane
	// l writes the outputs r = l, l + SPLIT, ...
	if (leader_only && l != 0u)
		return;
#pragma unroll
	for (uint r = 0u; r < NDOT_@NC@; r++) {
		uint c = r / T_MAX, t = r % T_MAX, n = n0 + c;
		if (t >= ROWS || n >= N || (!leader_only && r % SPLIT != l))
			continue;
#if PAIR
		if (c % 2u == 1u)
			continue; /* the up of column c - 1, stored with it */
#endif
		float s = 1.0f;
#if PRO_RMS
		s = 1.0f / sqrt(acc[NDOT_@NC@ + t] / float(K) + PRO_EPS);
#endif
#if PAIR
		store_pair(t, n, acc[r] * s, acc[r + T_MAX] * s);
#else
		store_y(t, n, acc[r] * s);
#endif
	}
}
