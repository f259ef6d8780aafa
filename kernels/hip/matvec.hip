// matvec, for steps of ROWS = RPT * T <= T_MAX <= 8 rows of x: y[t,n] =
// sum_k x'[t,k] w[n,k] (x' = x, or rms_norm(x) with the fused prologue),
// then the epilogue. The twin of kernels/vulkan/matvec.comp, whose comment
// gives the scheme: GROUPS = LS_X / SPLIT column groups per workgroup, group
// g owns nc consecutive columns and splits K over its SPLIT lanes, lane l
// summing the chunks j = l, l + SPLIT, ... in increasing order; the SPLIT
// partial sums are combined in the same fixed order (subgroup butterfly then
// subgroup order with SG_SHUFFLE, a pairwise tree without). The per-nc code
// is matvec_cols.hip, instantiated once per nc value after this file.
// Groups (XGROUPS: a grouped matmul) as there: a column group reads one
// input group of x, from x_base on. Grid: x = ceil(N / (GROUPS * NC)).

#define GROUPS (LS_X / SPLIT)
#ifdef WQUANT
// Weights per 32-bit word (QPW) and per chunk of QW words (QPC).
#if WQ_NIB
#define QPW 8u
#else
#define QPW 4u
#endif
#define QPC (uint(QW) * QPW)
#define KC (K / QPC)
#elif VEC8
#define KC (K / 8u)
#else
#define KC K
#endif

// Columns per group for a step of `rows` rows (before the NC_MAX cap).
#define NC_AT(rows) (NC * ((rows) <= 1u ? 1u : ((rows) <= 2u ? 2u : 4u)))
// The reduction's values at the largest T: HIP has no specialisation
// constants (GLSL's ROWS_C is T_MAX whenever T_SPEC is 0, as it is here).
#define NC_C (NC_AT(T_MAX) < NC_MAX ? NC_AT(T_MAX) : NC_MAX)
#define NVAL_C ((NC_C + PRO_RMS) * T_MAX)
#if SG_SHUFFLE
// Per-subgroup sums, one slot per subgroup of at least MIN_SG lanes.
#define MIN_SG 4u
HALO_SHARED float part[(LS_X / MIN_SG) * NVAL_C];
#else
HALO_SHARED float part[LS_X * NVAL_C];
#endif
// Live value v (matvec_cols.hip) of slot i.
#define PART(i, v) part[(i) * NVAL_C + (v)]
#ifdef XQ8
// Int8 activations: a tile of x's codes for T_MAX rows, XT columns of K (a
// multiple of 32) within XQ_CODE_BYTES, as matvec.comp's XQ8 (HIP has no
// specialisation constants: the tile is sized for T_MAX rows, and the
// tiles never change a sum).
#define XT_R (XQ_CODE_BYTES / T_MAX / 32u * 32u)
#define XT (K < XT_R ? K : XT_R)
HALO_SHARED uint xq_code[T_MAX * (XT / 4u)];
HALO_SHARED float xq_d[T_MAX * (XT / 32u)];
#if PRO_RMS
HALO_SHARED float xq_ss[T_MAX * (XT / 32u)];
#endif
#endif
// @struct

const float *__restrict__ x = (const float *)args.b[B_X];
#if VEC8
const vec4 *__restrict__ x4 = (const vec4 *)args.b[B_X];
#endif
#if PRO_NW
const float *__restrict__ nw = (const float *)args.b[B_NW];
#if VEC8
const vec4 *__restrict__ nw4 = (const vec4 *)args.b[B_NW];
#endif
#endif

// Where row t of the lane's x starts, in floats (XROW) and vec4s (X4ROW).
#ifdef XGROUPS
// The lane's input group's offset in a row, set once in main.
uint x_base;
#define XROW(t) ((t) * (XGROUPS * K) + x_base)
#define X4ROW(t) ((t) * (XGROUPS * K / 4u) + x_base / 4u)
#else
#define XROW(t) ((t) * K)
#define X4ROW(t) ((t) * (K / 4u))
#endif

#ifdef WQUANT
#if QW == 4
#define WQV uvec4
WQV wq_words(uint n, uint j) { return wq4[n * KC + j]; }
#elif QW == 2
const uvec2 *__restrict__ wq2 = (const uvec2 *)args.b[B_W];
#define WQV uvec2
WQV wq_words(uint n, uint j) { return wq2[n * KC + j]; }
#else
#define WQV uint
WQV wq_words(uint n, uint j) { return wq1[n * KC + j]; }
#endif
#if QW == 1
#define WQ_WORD(v, q) (v)
#else
#define WQ_WORD(v, q) (v)[q]
#endif
#if WQ4K
struct WChunkQ {
	WQV v;
	uvec4 meta;
};
WChunkQ load_chunk(uint n, uint j) { return WChunkQ{wq_words(n, j), wq_meta(n, j * QPC)}; }
#else
struct WChunkQ {
	WQV v;
	float d;
};
WChunkQ load_chunk(uint n, uint j) { return WChunkQ{wq_words(n, j), wq_scale(n, j * QPC)}; }
#endif
#define WCHUNK WChunkQ
#elif VEC8
#if WTYPE_F16
const uvec4 *__restrict__ w8 = (const uvec4 *)args.b[B_W];
#define WCHUNK uvec4
WCHUNK load_chunk(uint n, uint j) { return w8[n * KC + j]; }
void unpack_chunk(WCHUNK u, vec4 &a, vec4 &b)
{
	vec2 p0 = unpackHalf2x16(u.x), p1 = unpackHalf2x16(u.y), p2 = unpackHalf2x16(u.z), p3 = unpackHalf2x16(u.w);
	a = vec4{p0.x, p0.y, p1.x, p1.y};
	b = vec4{p2.x, p2.y, p3.x, p3.y};
}
#else
// GLSL's mat2x4: two vec4 columns, the chunk's 8 weights.
struct WChunk8 {
	vec4 lo, hi;
};
const vec4 *__restrict__ w4 = (const vec4 *)args.b[B_W];
#define WCHUNK WChunk8
WCHUNK load_chunk(uint n, uint j) { return WChunk8{w4[2u * (n * KC + j)], w4[2u * (n * KC + j) + 1u]}; }
void unpack_chunk(WCHUNK u, vec4 &a, vec4 &b)
{
	a = u.lo;
	b = u.hi;
}
#endif
#else
#define WCHUNK float
WCHUNK load_chunk(uint n, uint j) { return load_w(n * K + j); }
#endif

#ifdef XQ8
// Int8 activations, the twin of matvec.comp's XQ8 (which explains them):
// the codes are ref's halo_round_x_q8's bit for bit, and the products of
// four codes and four weight bytes are summed exactly by sdot4 (or, without
// XQ_SDOT, by integer operations: the same sums).
int dot4(uint a, uint b)
{
#if XQ_SDOT
	return sdot4(a, b);
#else
	return sdot4_int(a, b);
#endif
}

// Four codes, element 0 in the low byte.
uint pack_codes(int c0, int c1, int c2, int c3)
{
	return ((uint)c0 & 0xffu) | ((uint)c1 & 0xffu) << 8u | ((uint)c2 & 0xffu) << 16u | ((uint)c3 & 0xffu) << 24u;
}

// 127 / a as ref's halo_x_q8_inverse forms it, operation for operation:
// contraction off (clang contracts across statements in CUDA mode), as
// GLSL's precise.
float q8_inverse(float a)
{
#pragma clang fp contract(off)
	float r = uintBitsToFloat(0x7ef311c7u - floatBitsToUint(a));
	for (int i = 0; i < 4; i++)
		r = r * (2.0f - a * r);
	return 127.0f * r;
}

// The codes of v: the nearest integers to v * inv, ties to even, by the
// f32 addition's own rounding (matvec.comp's round_code).
ivec4 round_code(vec4 v, float inv)
{
#pragma clang fp contract(off)
	vec4 y = v * inv;
	vec4 r = (y + 12582912.0f) - 12582912.0f;
	return ivec4{(int)r.x, (int)r.y, (int)r.z, (int)r.w};
}

// Stages x's columns k0 .. k0 + kt - 1 (kt a multiple of 32) of every
// live row: one block of 32 per lane at a time.
void stage_x(uint k0, uint kt)
{
	uint nb = kt / 32u;
	for (uint i = gl_LocalInvocationID.x; i < ROWS * nb; i += LS_X) {
		uint t = i / nb, b = i % nb, xi = k0 / 4u + 8u * b;
		vec4 v[8];
		float a = 0.0f, ss = 0.0f;
#pragma unroll
		for (uint q = 0u; q < 8u; q++) {
			vec4 xv = x4[X4ROW(t) + xi + q];
#if PRO_RMS
			ss += dot(xv, xv);
#endif
#if PRO_NW
			xv *= nw4[xi + q] + PRO_OFFSET;
#endif
			v[q] = xv;
			a = max(a, max(max(abs(xv.x), abs(xv.y)), max(abs(xv.z), abs(xv.w))));
		}
		bool zero = !(a >= 1e-30f);
		float inv = zero ? 0.0f : q8_inverse(a), d = zero ? 0.0f : a * (1.0f / 127.0f);
		uint at = t * (XT / 4u) + 8u * b;
#pragma unroll
		for (uint q = 0u; q < 8u; q += 2u) {
			ivec4 c0 = round_code(v[q], inv), c1 = round_code(v[q + 1u], inv);
#if WQ4K
			xq_code[at + q] = pack_codes(c0.x, c0.z, c1.x, c1.z);
			xq_code[at + q + 1u] = pack_codes(c0.y, c0.w, c1.y, c1.w);
#else
			xq_code[at + q] = pack_codes(c0.x, c0.y, c0.z, c0.w);
			xq_code[at + q + 1u] = pack_codes(c1.x, c1.y, c1.z, c1.w);
#endif
		}
		xq_d[t * (XT / 32u) + b] = d;
#if PRO_RMS
		xq_ss[t * (XT / 32u) + b] = ss;
#endif
	}
}
#endif

#if SG_SHUFFLE
// Lanes are numbered by subgroup so that a column group is whole subgroups
// (or a run of lanes inside one).
uint lane_id() { return gl_SubgroupID * gl_SubgroupSize + gl_SubgroupInvocationID; }
#else
uint lane_id() { return gl_LocalInvocationID.x; }
#endif

// The per-nc paths (matvec_cols.hip) follow in the struct; a member
// function may call a later one, so MATVEC_PROTOTYPES (GLSL's forward
// declarations, which would redeclare members here) is not used.
void main()
{
	uint lane = lane_id(), g = lane / SPLIT, l = lane % SPLIT;
	// ROWS is the same for every lane: one path per dispatch.
	uint nc = min(NC_MAX, NC_AT(ROWS));
	if (gl_WorkGroupID.x * GROUPS * nc >= N)
		return;
	uint grp = gl_WorkGroupID.x * GROUPS + g;
#ifdef XGROUPS
	// a group past N reads column N - 1's input and writes nothing
	x_base = min(grp * nc, N - 1u) / GROUP_N * K;
#endif
	MATVEC_DISPATCH
}
