// matmul, tiled for steps of more than 8 tokens: y[t,n] = sum_k x'[t,k] w[n,k]
// (x' = x, or rms_norm(x) with the fused prologue), then the epilogue.
// The twin of kernels/vulkan/matmul.comp: a workgroup computes a BM x BN
// tile of y through shared-memory tiles of BK; each of its LS_X x LS_Y lanes
// owns TM x TN outputs. Every output sums k in increasing order, independent
// of T. Quantized weights (WQUANT) are dequantized to f32 as the tile is
// loaded. Groups (XGROUPS: a grouped matmul, no prologue) as there: a
// tile's columns read one input group of x, from X_BASE on.
// Grid: x = ceil(N / BN), y = ceil(ROWS / BM).

#define TM (BM / LS_Y)
#define TN (BN / LS_X)
#define LANES (LS_X * LS_Y)

// Element k of row t of the tile's input.
#ifdef XGROUPS
#define X_BASE (gl_WorkGroupID.x * BN / GROUP_N * K)
#define XAT(t, k) ((t) * (XGROUPS * K) + X_BASE + (k))
#else
#define XAT(t, k) ((t) * K + (k))
#endif

HALO_SHARED float xs[BM][BK + 1];
HALO_SHARED float ws[BN][BK + 1];
#if PRO_RMS
HALO_SHARED float rs[BM];
#endif
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
#if PRO_NW
const float *__restrict__ nw = (const float *)args.b[B_NW];
#endif

#if PRO_RMS
// One lane per row of the tile sums its squares in k order.
void row_scales(uint lid, uint t0)
{
	if (lid < BM) {
		float s = 0.0f;
		if (t0 + lid < ROWS)
			for (uint k = 0u; k < K; k++)
				s += x[(t0 + lid) * K + k] * x[(t0 + lid) * K + k];
		rs[lid] = 1.0f / sqrt(s / float(K) + PRO_EPS);
	}
	barrier();
}

#if PRO_NW
float xin(uint t, uint k, uint r) { return x[t * K + k] * rs[r] * (nw[k] + PRO_OFFSET); }
#else
float xin(uint t, uint k, uint r) { return x[t * K + k] * rs[r]; }
#endif
#else
float xin(uint t, uint k, uint) { return x[XAT(t, k)]; }
#endif

void load_tiles(uint lid, uint t0, uint n0, uint k0)
{
	for (uint i = lid; i < BM * BK; i += LANES) {
		uint r = i / BK, kk = i % BK;
		xs[r][kk] = (t0 + r < ROWS && k0 + kk < K) ? xin(t0 + r, k0 + kk, r) : 0.0f;
	}
#ifdef WQUANT
	// Quantized weights (quant_weights.hip): 8 at a time, dequantized
	// (BK and K are multiples of 8).
	for (uint i = lid; i < BN * (BK / 8u); i += LANES) {
		uint r = i / (BK / 8u), kk = (i % (BK / 8u)) * 8u;
		vec4 a = vec4{0.0f, 0.0f, 0.0f, 0.0f}, b = a;
		if (n0 + r < N && k0 + kk < K)
			wq_load8(n0 + r, k0 + kk, a, b);
		for (uint e = 0u; e < 4u; e++) {
			ws[r][kk + e] = a[e];
			ws[r][kk + 4u + e] = b[e];
		}
	}
#else
	for (uint i = lid; i < BN * BK; i += LANES) {
		uint r = i / BK, kk = i % BK;
		ws[r][kk] = (n0 + r < N && k0 + kk < K) ? load_w((n0 + r) * K + k0 + kk) : 0.0f;
	}
#endif
}

void main()
{
	uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
	uint lid = ty * LS_X + tx;
	uint n0 = gl_WorkGroupID.x * BN, t0 = gl_WorkGroupID.y * BM;
#if PRO_RMS
	row_scales(lid, t0);
#endif
	float acc[TM][TN];
	for (uint i = 0u; i < TM; i++)
		for (uint j = 0u; j < TN; j++)
			acc[i][j] = 0.0f;
	for (uint k0 = 0u; k0 < K; k0 += BK) {
		load_tiles(lid, t0, n0, k0);
		barrier();
		for (uint kk = 0u; kk < BK; kk++)
			for (uint i = 0u; i < TM; i++)
				for (uint j = 0u; j < TN; j++)
					acc[i][j] += xs[ty * TM + i][kk] * ws[tx * TN + j][kk];
		barrier();
	}
	// With PAIR, TN is even: a lane holds each gate column's up beside it.
	for (uint i = 0u; i < TM; i++)
		for (uint j = 0u; j < TN; j += 1u + PAIR) {
			uint t = t0 + ty * TM + i, n = n0 + tx * TN + j;
			if (t >= ROWS || n >= N)
				continue;
#if PAIR
			store_pair(t, n, acc[i][j], acc[i][j + 1u]);
#else
			store_y(t, n, acc[i][j]);
#endif
		}
}
