// matvec on the matrix units (VK_NV_cooperative_matrix), for steps of
// ROWS = RPT * T <= 8 rows with f16 weights: y[t,n] = sum_k x'[t,k] w[n,k]
// (x' = x, or rms_norm(x) with the fused prologue, factored out of the dot
// product as in matvec.comp), then the epilogue.
//
// Why: matvec.comp does T multiply-adds per weight on the vector units, so
// its time grows with T (verification's T = 5 took 1.4-1.9x a decode step's
// on the H200). Here every weight is read once into a 16x16 fragment and
// multiplied with all rows at once by the matrix units, whose throughput is
// far above what the weight bytes ask for: the time should stay the read's.
//
// x' is f32 and the matrix units multiply f16, so each row of x' is split in
// two f16 parts: hi = f16(x' * 2^s), lo = f16((x' * 2^s - hi) * 2^11), 22
// significant bits together (f32 has 24). s is a power of two chosen per row
// and per subgroup slice of K so that the slice's largest |x'| lands in
// [2^14, 2^15): no part overflows f16 and none loses bits to its subnormals
// beyond 2^-39 of the slice's largest value. Fragment A holds hi of row t in
// row t and lo in row 8 + t (rows past ROWS are zeros); B is 16 columns of w
// as stored (w's rows are B's columns: column-major, loaded from the weight
// buffer itself). Products of f16 are exact in the f32 accumulator, so the
// split costs only the 2^-22 of lo's rounding: y = 2^-s (C[t] + 2^-11 C[8+t]).
//
// A workgroup owns CW = 16 * CB columns and all of K; its NSG subgroups
// split K by steps of 16: subgroup g takes steps g, g + NSG, ... (the
// subgroups of a workgroup read neighbouring 32-byte pieces of the same
// rows at once), UNROLL steps' fragments loaded before any is used. Each
// output sums the subgroups' partial results in subgroup order at the end.
// Nothing depends on T: row t's A rows, its scale and every sum's order are
// the same for T = 1 as for T = 8, and the matrix units compute each output
// from its own row of A alone, so a verification row equals the single step
// bitwise (batch invariance). The order differs from matvec.comp's, so the
// two families' bits differ (they are different candidates of one choice).
//
// With the prologue the subgroup also sums x^2 over its slice (the row's
// four lanes in a fixed butterfly), the slices added in subgroup order.
// The builder requires K % 16 == 0, N % CW == 0 and (K / 16) % (NSG *
// UNROLL) == 0: no step or column is partial. Grid: x = N / CW.

#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require

layout(set = 0, binding = B_X) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = B_W) readonly buffer W8 { uvec4 w8[]; };
#if PRO_NW
layout(set = 0, binding = B_NW) readonly buffer NW4 { vec4 nw4[]; };
#endif

#define SG 32u
#define NSG (LS_X / SG)
#define CW (16u * CB)
// steps of 16 k per subgroup
#define STEPS (K / 16u / NSG)
// A fragments are staged per subgroup: 16 rows of 16 halves (2 uvec4) and a
// uvec4 of skew, so the 8 rows of 16 bytes a fragment load reads at once
// fall in different banks.
#define ASTR 3u
#define ATILE (16u * ASTR)
shared uvec4 atile[NSG * UNROLL * ATILE];
// Each subgroup's 16x16 results per column block (row-major), its scale
// exponent per row and, with the prologue, its sum of squares per row.
shared float part[NSG * CB * 256u];
shared int pexp[NSG * 8u];
#if PRO_RMS
shared float psq[NSG * 8u];
#endif

// x' of row r at k (4 values): x, times the norm weight with PRO_NW.
vec4 xrow(uint r, uint k)
{
	vec4 v = x4[(r * K + k) / 4u];
#if PRO_NW
	v *= nw4[k / 4u] + PRO_OFFSET;
#endif
	return v;
}

void main()
{
	uint g = gl_SubgroupID, lane = gl_SubgroupInvocationID;
	uint n0 = gl_WorkGroupID.x * CW;
	// Lane's share of an A fragment: row r, k 4q .. 4q + 3 of the step.
	uint r = lane >> 2, q = lane & 3u;
	bool live = r < ROWS;

	// The slice's largest |x'| and sum of x^2 for row r.
	float mx = 0.0, sq = 0.0;
	if (live)
		for (uint i = 0u; i < STEPS; i++) {
			uint k = (g + i * NSG) * 16u + q * 4u;
#if PRO_RMS
			vec4 raw = x4[(r * K + k) / 4u];
			sq += dot(raw, raw);
#endif
			vec4 a = abs(xrow(r, k));
			mx = max(mx, max(max(a.x, a.y), max(a.z, a.w)));
		}
	// the row's four lanes, in a fixed butterfly
	for (uint o = 1u; o < 4u; o <<= 1) {
		mx = max(mx, subgroupShuffleXor(mx, o));
		sq += subgroupShuffleXor(sq, o);
	}
	int e;
	frexp(mx, e); // mx = m * 2^e, m in [0.5, 1): mx * 2^(15 - e) in [2^14, 2^15)
	int sh = 15 - e;

	uint abase = g * UNROLL * ATILE;
	for (uint i = lane; i < UNROLL * ATILE; i += SG)
		atile[abase + i] = uvec4(0u); // rows past ROWS stay zero
	subgroupBarrier(); // zeros land before other lanes' values
	fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[CB];
	[[unroll]] for (uint c = 0u; c < CB; c++)
		acc[c] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);

	for (uint i0 = 0u; i0 < STEPS; i0 += UNROLL) {
		fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> b[UNROLL * CB];
		[[unroll]] for (uint u = 0u; u < UNROLL; u++)
			[[unroll]] for (uint c = 0u; c < CB; c++)
				coopMatLoadNV(b[u * CB + c], w8, ((n0 + c * 16u) * K + (g + (i0 + u) * NSG) * 16u) / 8u,
					      K / 8u, true);
		if (live)
			[[unroll]] for (uint u = 0u; u < UNROLL; u++) {
				vec4 v = ldexp(xrow(r, (g + (i0 + u) * NSG) * 16u + q * 4u), ivec4(sh));
				vec2 h01 = unpackHalf2x16(packHalf2x16(v.xy)), h23 = unpackHalf2x16(packHalf2x16(v.zw));
				vec4 lo = (v - vec4(h01, h23)) * 2048.0;
				uint at = abase + u * ATILE + q / 2u, hw = (q % 2u) * 2u;
				atile[at + r * ASTR][hw] = packHalf2x16(v.xy);
				atile[at + r * ASTR][hw + 1u] = packHalf2x16(v.zw);
				atile[at + (8u + r) * ASTR][hw] = packHalf2x16(lo.xy);
				atile[at + (8u + r) * ASTR][hw + 1u] = packHalf2x16(lo.zw);
			}
		subgroupBarrier();
		[[unroll]] for (uint u = 0u; u < UNROLL; u++) {
			fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a;
			coopMatLoadNV(a, atile, abase + u * ATILE, ASTR, false);
			[[unroll]] for (uint c = 0u; c < CB; c++)
				acc[c] = coopMatMulAddNV(a, b[u * CB + c], acc[c]);
		}
		subgroupBarrier(); // every fragment read before the next steps' are written
	}

	[[unroll]] for (uint c = 0u; c < CB; c++)
		coopMatStoreNV(acc[c], part, (g * CB + c) * 256u, 16u, false);
	if (q == 0u && live) {
		pexp[g * 8u + r] = sh;
#if PRO_RMS
		psq[g * 8u + r] = sq;
#endif
	}
	barrier();

	// Output (t, column n0 + c): the subgroups' parts in subgroup order.
	for (uint o = gl_LocalInvocationID.x; o < 8u * CW; o += LS_X) {
		uint t = o / CW, c = o % CW, n = n0 + c;
		if (t >= ROWS)
			continue;
#if PAIR
		if (c % 2u == 1u)
			continue; // the up of column c - 1, stored with it
		float v1 = 0.0;
#endif
		float v = 0.0, s2 = 0.0;
		for (uint s = 0u; s < NSG; s++) {
			uint at = (s * CB + c / 16u) * 256u + t * 16u + c % 16u;
			int x2 = -pexp[s * 8u + t];
			v += ldexp(part[at] + part[at + 128u] * (1.0 / 2048.0), x2);
#if PAIR
			v1 += ldexp(part[at + 1u] + part[at + 129u] * (1.0 / 2048.0), x2);
#endif
#if PRO_RMS
			s2 += psq[s * 8u + t];
#endif
		}
		float scale = 1.0;
#if PRO_RMS
		scale = 1.0 / sqrt(s2 / float(K) + PRO_EPS);
#endif
#if PAIR
		store_pair(t, n, v * scale, v1 * scale);
#else
		store_y(t, n, v * scale);
#endif
	}
}
