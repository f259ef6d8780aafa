// matmul on 16x16x16 f16 tiles, for steps of more than 8 tokens with f16 (or
// quantized, WQUANT) weights: y[t,n] = sum_k x'[t,k] w[n,k] (x' = x, or
// rms_norm(x) with the fused prologue), then the epilogue. The twin of
// kernels/vulkan/matmul_coopmat.comp, whose comment gives the scheme: NSG
// subgroups of 32 lanes, subgroup s owning a WM x WN block of the BM x BN
// tile as (WM/16) x (WN/16) 16x16 f32 accumulators; K walked in steps of BK
// through double-buffered shared stages of x' rounded to f16 (after the
// prologue's normalisation) and w as stored; the same staging, skew, fetch
// and prologue as there.
//
// The 16x16x16 product (mma below) per target:
//  - gfx1151: WMMA, v_wmma_f32_16x16x16_f16 (RDNA 3 wave32 layout: lane l
//    holds row l % 16 of A and column l % 16 of B, all 16 k, twice over in
//    the two half-waves; accumulator element e of lane l is row
//    2e + l / 16, column l % 16). Its sum over the 16 k is the hardware's
//    own order, as the Vulkan kernel's matrix units.
//  - sm_90: two mma.sync.m16n8k16 (f16 in, f32 accumulate), one per 8
//    columns of the block, their operands read from the staged tiles as
//    32-bit pairs of halves (PTX ISA's fragment layout: lane l holds rows
//    g = l / 4 and g + 8, halves 2c, 2c + 1 and 2c + 8, 2c + 9 of k,
//    c = l % 4; accumulator element e of lane l is row g + 8 ((e / 2) % 2),
//    column 8 (e / 4) + 2c + e % 2). Its sum over the 16 k is the tensor
//    cores' own order, as the Vulkan kernel's matrix units.
//  - the host form (tests only, HALO_HOST): an f32 fma per k over the
//    staged f16 tiles, k in increasing order, in gfx1151's layout.
// Either way an output sums its BK steps in increasing order, the same for
// any T (no split of K). A lane's accumulator elements are outputs of the
// 16x16 block (ACC_ROW, ACC_COL), so the epilogue writes them from
// registers, without the round trip through the scratch.
// Grid: x = ceil(N / BN), y = ceil(ROWS / BM) (ROWS = RPT * T).

#define SG 32u
#define NSG (LS_X / SG)
#define SG_COLS (BN / WN)
#define FM (WM / 16u)
#define FN (WN / 16u)
// 8-element chunks (16 bytes of f16) per staged row and step, and the row
// stride in uvec4 with the skew.
#define CPR (BK / 8u)
#define SROW (CPR + 1u)
// Chunks each lane loads per step (the builder makes these whole).
#define A_PER (BM * CPR / LS_X)
#define B_PER (BN * CPR / LS_X)
// uvec4 per stage: BM rows of x, then BN rows of w.
#define STAGE ((BM + BN) * SROW)
#define NK ((K + BK - 1u) / BK)
// Scratch per subgroup (the prologue's partial sums): 64 uvec4.
#define SCR 64u

HALO_SHARED uvec4 stages[2u * STAGE];
#if PRO_RMS
HALO_SHARED float rs[BM];
#endif

// A lane's part of a 16x16 f32 accumulator: elements (2e + lane / 16,
// lane % 16), e = 0..7.
typedef float frag_acc __attribute__((ext_vector_type(8)));
#if defined(__AMDGCN__)
typedef _Float16 half16 __attribute__((ext_vector_type(16)));
typedef uint uvec8 __attribute__((ext_vector_type(8)));
// A lane's A or B operand: 16 halves, k = 0..15 of its row (A) or column (B).
typedef half16 frag_in;
#elif defined(__NVPTX__)
// A lane's A or B operand: halves 2c, 2c + 1 of rows g, g + 8 and the same
// at k + 8, as 32-bit pairs (x: row g, y: row g + 8, z, w: the same at k + 8).
typedef uvec4 frag_in;
#else
// The operand stays in shared memory: the uvec4 index of its first row.
typedef uint frag_in;
#endif
// Row and column of accumulator element e of `lane` in its 16x16 block:
// PTX's mma layout on sm_90, WMMA's on gfx1151 (which the host form keeps).
#if defined(__NVPTX__)
#define ACC_ROW(e, lane) ((lane) / 4u + 8u * (((e) / 2u) % 2u))
#define ACC_COL(e, lane) (8u * ((e) / 4u) + 2u * ((lane) % 4u) + (e) % 2u)
#else
#define ACC_ROW(e, lane) (2u * (e) + (lane) / 16u)
#define ACC_COL(e, lane) ((lane) % 16u)
#endif
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
#if VEC8
const vec4 *__restrict__ x4 = (const vec4 *)args.b[B_X];
const uvec4 *__restrict__ w4 = (const uvec4 *)args.b[B_W];
#endif
#if PRO_NW
const float *__restrict__ nw = (const float *)args.b[B_NW];
#if VEC8
const vec4 *__restrict__ nw4 = (const vec4 *)args.b[B_NW];
#endif
#endif

// Step k+1 in flight: raw x (and norm weight) values, packed w halves.
vec4 xr[2u * A_PER];
#if PRO_NW
vec4 nr[2u * A_PER];
#endif
uvec4 wr[B_PER];

#if PRO_RMS
#define RPS (BM / NSG)
// Rows summed at once: their loads are independent, so RB of them are in
// flight per lane.
#define RB (RPS < 16u ? RPS : 16u)

// rs[r] = (mean_k x[t0+r,k]^2 + eps)^-1/2 for the subgroup's RPS rows, RB at
// a time: lane l sums k = l, l+32, ... (in 4-wide chunks with VEC8) for each
// row; the partial sums go through the scratch 8 rows at a time and 8 lanes
// add the 32 of one row in lane order.
void row_scales(uint s, uint lane, uint t0)
{
	uint scr = s * SCR;
	for (uint q = 0u; q < RPS; q += RB) {
		uint t = t0 + s * RPS + q;
		float sum[RB];
#pragma unroll
		for (uint i = 0u; i < RB; i++)
			sum[i] = 0.0f;
#if VEC8
		for (uint c = lane; c < K / 4u; c += SG)
#pragma unroll
			for (uint i = 0u; i < RB; i++)
				if (t + i < ROWS) {
					vec4 v = x4[(t + i) * (K / 4u) + c];
					sum[i] += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
				}
#else
		for (uint k = lane; k < K; k += SG)
#pragma unroll
			for (uint i = 0u; i < RB; i++)
				if (t + i < ROWS)
					sum[i] += x[(t + i) * K + k] * x[(t + i) * K + k];
#endif
#pragma unroll
		for (uint h = 0u; h < RB; h += 8u) {
#pragma unroll
			for (uint i = 0u; i < 8u; i++)
				stages[scr + lane * 2u + i / 4u][i % 4u] = floatBitsToUint(sum[h + i]);
			subgroupBarrier();
			if (lane < 8u) {
				float tot = 0.0f;
				for (uint l = 0u; l < SG; l++)
					tot += uintBitsToFloat(stages[scr + l * 2u + lane / 4u][lane % 4u]);
				rs[s * RPS + q + h + lane] = 1.0f / sqrt(tot / float(K) + PRO_EPS);
			}
			subgroupBarrier();
		}
	}
}
#endif

// Loads the step at k0 into registers; outside [0,T) x [0,K) and [0,N) x
// [0,K) the values are zeros, so ragged edges add nothing.
void fetch(uint t0, uint n0, uint k0)
{
	uint lid = gl_LocalInvocationID.x;
	vec4 zero = vec4{0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
	for (uint c = 0u; c < A_PER; c++) {
		uint idx = lid + c * LS_X, t = t0 + idx / CPR, k = k0 + (idx % CPR) * 8u;
		xr[2u * c] = zero;
		xr[2u * c + 1u] = zero;
#if PRO_NW
		nr[2u * c] = zero;
		nr[2u * c + 1u] = zero;
#endif
#if VEC8
		if (t < ROWS && k < K) {
			xr[2u * c] = x4[(t * K + k) / 4u];
			xr[2u * c + 1u] = x4[(t * K + k) / 4u + 1u];
#if PRO_NW
			nr[2u * c] = nw4[k / 4u];
			nr[2u * c + 1u] = nw4[k / 4u + 1u];
#endif
		}
#else
#pragma unroll
		for (uint e = 0u; e < 8u; e++)
			if (t < ROWS && k + e < K) {
				xr[2u * c + e / 4u][e % 4u] = x[t * K + k + e];
#if PRO_NW
				nr[2u * c + e / 4u][e % 4u] = nw[k + e];
#endif
			}
#endif
	}
#pragma unroll
	for (uint c = 0u; c < B_PER; c++) {
		uint idx = lid + c * LS_X, n = n0 + idx / CPR, k = k0 + (idx % CPR) * 8u;
		wr[c] = uvec4{0u, 0u, 0u, 0u};
#ifdef WQUANT
		// quantized weights (quant_weights.hip), dequantized in f32 and
		// rounded to f16 here
		if (n < N && k < K) {
			vec4 a, b;
			wq_load8(n, k, a, b);
			wr[c] = uvec4{packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw)};
		}
#elif VEC8
		if (n < N && k < K)
			wr[c] = w4[(n * K + k) / 8u];
#else
#pragma unroll
		for (uint e = 0u; e < 8u; e++)
			if (n < N && k + e < K) {
				uint i = n * K + k + e;
				uint h = (w_u32[i >> 1] >> ((i & 1u) * 16u)) & 0xffffu;
				wr[c][e / 2u] |= h << ((e % 2u) * 16u);
			}
#endif
	}
}

// Writes the registers of fetch() into the stage at `base` (uvec4 index):
// x' rounded to f16 (packHalf2x16), w as loaded.
void stash(uint base)
{
	uint lid = gl_LocalInvocationID.x;
#pragma unroll
	for (uint c = 0u; c < A_PER; c++) {
		uint idx = lid + c * LS_X, r = idx / CPR;
		vec4 lo = xr[2u * c], hi = xr[2u * c + 1u];
#if PRO_NW
		lo = lo * rs[r] * (nr[2u * c] + PRO_OFFSET);
		hi = hi * rs[r] * (nr[2u * c + 1u] + PRO_OFFSET);
#elif PRO_RMS
		lo = lo * rs[r];
		hi = hi * rs[r];
#endif
		stages[base + r * SROW + idx % CPR] =
			uvec4{packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw)};
	}
#pragma unroll
	for (uint c = 0u; c < B_PER; c++) {
		uint idx = lid + c * LS_X;
		stages[base + (BM + idx / CPR) * SROW + idx % CPR] = wr[c];
	}
}

#if defined(__AMDGCN__)
// The operand whose 16 rows start at uvec4 `row0` of a stage: this lane's
// row (A) or column (B = w^T, whose columns are the staged w rows), the two
// uvec4 of 16 halves at step kk (folded into row0 by the caller).
frag_in load_frag(uint row0)
{
	uint at = row0 + (gl_SubgroupInvocationID & 15u) * SROW;
	uvec8 h = __builtin_shufflevector(stages[at], stages[at + 1u], 0, 1, 2, 3, 4, 5, 6, 7);
	return __builtin_bit_cast(half16, h);
}

frag_acc mma(frag_in a, frag_in b, frag_acc c) { return __builtin_amdgcn_wmma_f32_16x16x16_f16_w32(a, b, c); }
#elif defined(__NVPTX__)
// The operand whose 16 rows start at uvec4 `row0` of a stage: this lane's
// pairs of halves (frag_in). The rows' skew keeps the 32 lanes' reads in
// distinct banks.
frag_in load_frag(uint row0)
{
	const uint *s32 = (const uint *)stages;
	uint lane = gl_SubgroupInvocationID, g = lane / 4u, c = lane % 4u;
	uint at = (row0 + g * SROW) * 4u + c, at8 = at + 8u * SROW * 4u;
	return uvec4{s32[at], s32[at8], s32[at + 4u], s32[at8 + 4u]};
}

// c += A B: columns 0-7 of the block (B's rows g of its first 8, operand
// pairs x and z), then 8-15 (its rows 8 + g: y and w).
frag_acc mma(frag_in a, frag_in b, frag_acc c)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.x), "r"(b.z));
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};"
		     : "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7])
		     : "r"(a.x), "r"(a.y), "r"(a.z), "r"(a.w), "r"(b.y), "r"(b.w));
	return c;
}
#else
frag_in load_frag(uint row0) { return row0; }

// The 16 halves at uvec4 `at` of the stages, as floats.
void unpack16(uint at, float (&v)[16])
{
#pragma unroll
	for (uint q = 0u; q < 8u; q++) {
		vec2 p = unpackHalf2x16(stages[at + q / 4u][q % 4u]);
		v[2u * q] = p.x;
		v[2u * q + 1u] = p.y;
	}
}

// c += A B over the operands' 16 k, one fma per k in increasing order, for
// this lane's elements of the WMMA layout.
frag_acc mma(frag_in a, frag_in b, frag_acc c)
{
	uint lane = gl_SubgroupInvocationID;
	float bv[16], av[16];
	unpack16(b + (lane & 15u) * SROW, bv);
#pragma unroll
	for (uint e = 0u; e < 8u; e++) {
		unpack16(a + (2u * e + lane / 16u) * SROW, av);
		float s = c[e];
#pragma unroll
		for (uint k = 0u; k < 16u; k++)
			s = fma(av[k], bv[k], s);
		c[e] = s;
	}
	return c;
}
#endif

void main()
{
	uint s = gl_SubgroupID, lane = gl_SubgroupInvocationID;
	uint n0 = gl_WorkGroupID.x * BN, t0 = gl_WorkGroupID.y * BM;
	uint rw = (s / SG_COLS) * WM, cw = (s % SG_COLS) * WN;
#if PRO_RMS
	row_scales(s, lane, t0);
	barrier();
#endif
	frag_acc acc[FM * FN];
#pragma unroll
	for (uint i = 0u; i < FM * FN; i++)
		acc[i] = frag_acc{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};

	fetch(t0, n0, 0u);
	stash(0u);
	barrier();
	// The K loop stays a loop: fully unrolled at a small K (NK = 8), the
	// steps' fragments were all kept live and spilled on gfx1151.
#pragma unroll 1
	for (uint kb = 0u; kb < NK; kb++) {
		uint cur = (kb & 1u) * STAGE;
		bool more = kb + 1u < NK;
		if (more)
			fetch(t0, n0, (kb + 1u) * BK);
#pragma unroll
		for (uint kk = 0u; kk < BK / 16u; kk++) {
			// A: x rows; B = w^T: the staged w rows are its columns.
			frag_in a[FM], b[FN];
#pragma unroll
			for (uint i = 0u; i < FM; i++)
				a[i] = load_frag(cur + (rw + i * 16u) * SROW + kk * 2u);
#pragma unroll
			for (uint j = 0u; j < FN; j++)
				b[j] = load_frag(cur + (BM + cw + j * 16u) * SROW + kk * 2u);
#pragma unroll
			for (uint i = 0u; i < FM; i++)
#pragma unroll
				for (uint j = 0u; j < FN; j++)
					acc[i * FN + j] = mma(a[i], b[j], acc[i * FN + j]);
		}
		if (more)
			stash(STAGE - cur);
		// The next step reads the stage just written; the one after
		// overwrites the stage just read.
		barrier();
	}

#pragma unroll
	for (uint i = 0u; i < FM; i++)
#pragma unroll
		for (uint j = 0u; j < FN; j++)
#pragma unroll
			for (uint e = 0u; e < 8u; e++) {
				uint t = t0 + rw + i * 16u + ACC_ROW(e, lane), n = n0 + cw + j * 16u + ACC_COL(e, lane);
				float v = acc[i * FN + j][e];
#if PAIR
#if defined(__NVPTX__)
				// column n ^ 1 of the same row is this lane's element e ^ 1
				float other = acc[i * FN + j][e ^ 1u];
#else
				// column n ^ 1 of the same row is lane ^ 1's; every lane
				// shuffles before any leaves
				float other = subgroupShuffleXor(v, 1u);
#endif
				if (t < ROWS && n < N && n % 2u == 0u)
					store_pair(t, n, v, other);
#else
				if (t < ROWS && n < N)
					store_y(t, n, v);
#endif
			}
}
