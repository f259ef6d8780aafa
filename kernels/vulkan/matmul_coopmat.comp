// matmul on the matrix units (VK_NV_cooperative_matrix), for steps of more
// than 8 tokens with f16 weights: y[t,n] = sum_k x'[t,k] w[n,k] (x' = x, or
// rms_norm(x) with the fused prologue), then the epilogue. Quantized weights
// (WQUANT, quant_weights.glsl) are dequantized in f32 as a step is fetched
// and staged as f16, like x.
//
// A workgroup computes a BM x BN tile of y with NSG subgroups of 32 lanes
// (NVIDIA's subgroup size; only NVIDIA drivers expose the extension).
// Subgroup s owns the WM x WN block at rows (s / (BN/WN)) * WM, columns
// (s % (BN/WN)) * WN of the tile, held as (WM/16) x (WN/16) accumulators of
// 16x16 f32. K is walked in steps of BK: the workgroup stages the step's x
// rows (f32, times the norm scale with the prologue, rounded to f16) and w
// rows (f16 as stored) in shared memory, and each subgroup multiplies the
// 16x16 f16 fragments it needs from there. The stages are double buffered:
// step k+1 is loaded from global memory into registers before step k's
// products are issued and written to the other stage after them, so the
// loads' latency hides behind the matrix work and one barrier per step
// suffices. Every output sums k in increasing steps of BK, the same for any
// T (no split of K); inside a 16-wide fragment the hardware's own order.
//
// Staged rows are BK halves plus 16 bytes of skew, so the 8 rows of 16 bytes
// that a fragment load reads at once fall in different banks (rows 80 bytes
// apart for BK = 32 cover all eight 16-byte slots of a 128-byte line).
//
// With the prologue each subgroup first sums the squares of BM / NSG of the
// tile's rows (lanes across k, then the 32 partial sums in lane order), so x
// is rounded to f16 after normalisation: x' stays in f16's range even where
// a raw activation row is large, which factoring the scale out of the dot
// product (as matvec.comp does) would not guarantee.
//
// The shared stages are also the scratch of the prologue's partial sums and
// of the epilogue: after the last step each subgroup stores one accumulator
// at a time to its 256 floats of scratch, then each lane applies
// epilogue(v, i) to 8 of its elements and writes those inside [0,T) x [0,N).
// Grid: x = ceil(N / BN), y = ceil(ROWS / BM) (ROWS = RPT * T). VEC8 (K % 8 == 0): 16-byte loads
// of x, w and the norm weight; otherwise element loads with bounds checks.

#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
#if VEC8
layout(set = 0, binding = B_X) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = B_W) readonly buffer W4 { uvec4 w4[]; };
#endif
#if PRO_NW
layout(set = 0, binding = B_NW) readonly buffer NW { float nw[]; };
#if VEC8
layout(set = 0, binding = B_NW) readonly buffer NW4 { vec4 nw4[]; };
#endif
#endif

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
// Scratch per subgroup: a 16x16 f32 accumulator, 64 uvec4.
#define SCR 64u

shared uvec4 stages[2u * STAGE];
#if PRO_RMS
shared float rs[BM];
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
// flight per lane (one row at a time left the loop waiting on each load).
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
		[[unroll]] for (uint i = 0u; i < RB; i++)
			sum[i] = 0.0;
#if VEC8
		for (uint c = lane; c < K / 4u; c += SG)
			[[unroll]] for (uint i = 0u; i < RB; i++)
				if (t + i < ROWS) {
					vec4 v = x4[(t + i) * (K / 4u) + c];
					sum[i] += v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
				}
#else
		for (uint k = lane; k < K; k += SG)
			[[unroll]] for (uint i = 0u; i < RB; i++)
				if (t + i < ROWS)
					sum[i] += x[(t + i) * K + k] * x[(t + i) * K + k];
#endif
		[[unroll]] for (uint h = 0u; h < RB; h += 8u) {
			[[unroll]] for (uint i = 0u; i < 8u; i++)
				stages[scr + lane * 2u + i / 4u][i % 4u] = floatBitsToUint(sum[h + i]);
			subgroupBarrier();
			if (lane < 8u) {
				float tot = 0.0;
				for (uint l = 0u; l < SG; l++)
					tot += uintBitsToFloat(stages[scr + l * 2u + lane / 4u][lane % 4u]);
				rs[s * RPS + q + h + lane] = 1.0 / sqrt(tot / float(K) + PRO_EPS);
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
	[[unroll]] for (uint c = 0u; c < A_PER; c++) {
		uint idx = lid + c * LS_X, t = t0 + idx / CPR, k = k0 + (idx % CPR) * 8u;
		xr[2u * c] = vec4(0.0);
		xr[2u * c + 1u] = vec4(0.0);
#if PRO_NW
		nr[2u * c] = vec4(0.0);
		nr[2u * c + 1u] = vec4(0.0);
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
		[[unroll]] for (uint e = 0u; e < 8u; e++)
			if (t < ROWS && k + e < K) {
				xr[2u * c + e / 4u][e % 4u] = x[t * K + k + e];
#if PRO_NW
				nr[2u * c + e / 4u][e % 4u] = nw[k + e];
#endif
			}
#endif
	}
	[[unroll]] for (uint c = 0u; c < B_PER; c++) {
		uint idx = lid + c * LS_X, n = n0 + idx / CPR, k = k0 + (idx % CPR) * 8u;
		wr[c] = uvec4(0u);
#ifdef WQUANT
		// quantized weights (quant_weights.glsl), dequantized in f32 and
		// rounded to f16 here
		if (n < N && k < K) {
			vec4 a, b;
			wq_load8(n, k, a, b);
			wr[c] = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
		}
#elif VEC8
		if (n < N && k < K)
			wr[c] = w4[(n * K + k) / 8u];
#else
		[[unroll]] for (uint e = 0u; e < 8u; e++)
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
	[[unroll]] for (uint c = 0u; c < A_PER; c++) {
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
			uvec4(packHalf2x16(lo.xy), packHalf2x16(lo.zw), packHalf2x16(hi.xy), packHalf2x16(hi.zw));
	}
	[[unroll]] for (uint c = 0u; c < B_PER; c++) {
		uint idx = lid + c * LS_X;
		stages[base + (BM + idx / CPR) * SROW + idx % CPR] = wr[c];
	}
}

void main()
{
	uint s = gl_SubgroupID, lane = gl_SubgroupInvocationID;
	uint n0 = gl_WorkGroupID.x * BN, t0 = gl_WorkGroupID.y * BM;
	uint rw = (s / SG_COLS) * WM, cw = (s % SG_COLS) * WN;
#if PRO_RMS
	row_scales(s, lane, t0);
	barrier();
#endif
	fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM * FN];
	[[unroll]] for (uint i = 0u; i < FM * FN; i++)
		acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

	fetch(t0, n0, 0u);
	stash(0u);
	barrier();
	for (uint kb = 0u; kb < NK; kb++) {
		uint cur = (kb & 1u) * STAGE;
		bool more = kb + 1u < NK;
		if (more)
			fetch(t0, n0, (kb + 1u) * BK);
		[[unroll]] for (uint kk = 0u; kk < BK / 16u; kk++) {
			// A: x rows, row-major; B = w^T: the staged w rows are its
			// columns, so column-major. Offsets and strides in uvec4.
			fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[FM];
			fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b[FN];
			[[unroll]] for (uint i = 0u; i < FM; i++)
				coopMatLoadNV(a[i], stages, cur + (rw + i * 16u) * SROW + kk * 2u, SROW, false);
			[[unroll]] for (uint j = 0u; j < FN; j++)
				coopMatLoadNV(b[j], stages, cur + (BM + cw + j * 16u) * SROW + kk * 2u, SROW, true);
			[[unroll]] for (uint i = 0u; i < FM; i++)
				[[unroll]] for (uint j = 0u; j < FN; j++)
					acc[i * FN + j] = coopMatMulAddNV(a[i], b[j], acc[i * FN + j]);
		}
		if (more)
			stash(STAGE - cur);
		// The next step reads the stage just written; the one after
		// overwrites the stage just read.
		barrier();
	}

	// The loop's last barrier has every subgroup done with the stages.
	uint scr = s * SCR;
	[[unroll]] for (uint i = 0u; i < FM; i++)
		[[unroll]] for (uint j = 0u; j < FN; j++) {
			coopMatStoreNV(acc[i * FN + j], stages, scr, 4u, false);
			subgroupBarrier();
			[[unroll]] for (uint e = 0u; e < 8u; e++) {
				uint idx = e * SG + lane;
				uint t = t0 + rw + i * 16u + idx / 16u, n = n0 + cw + j * 16u + idx % 16u;
				if (t >= ROWS || n >= N)
					continue;
				float v = uintBitsToFloat(stages[scr + idx / 4u][idx % 4u]);
#if PAIR
				// n even: the gate, whose up is the next element of the
				// fragment's row in the scratch (n odd: stored with it)
				if (n % 2u == 0u)
					store_pair(t, n, v, uintBitsToFloat(stages[scr + (idx + 1u) / 4u][(idx + 1u) % 4u]));
#else
				store_y(t, n, v);
#endif
			}
			subgroupBarrier();
		}
}
