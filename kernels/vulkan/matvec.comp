// matvec, for steps of ROWS = RPT * T <= T_MAX <= 8 rows of x (RPT rows per token): y[t,n] = sum_k x'[t,k] w[n,k]
// (x' = x, or rms_norm(x) with the fused prologue), then the epilogue.
//
// Decode is bound by weight bytes, so each weight is read once for all T
// rows, in 16-byte loads (VEC8: 8 consecutive k per chunk), UNROLL of them in
// flight per lane and column before any is used.
//
// A workgroup of LS_X lanes is GROUPS = LS_X / SPLIT column groups. Group g
// owns nc consecutive columns from n0 = (wg * GROUPS + g) * nc and splits K
// over its SPLIT lanes: lane l sums the chunks j = l, l + SPLIT, ... in
// increasing order (UNROLL only changes how many loads are issued ahead, not
// that order). nc = NC at T = 1 and grows with T up to NC_MAX (x is re-read
// from cache once per chunk, row and column group: more columns per group
// keep those reads per weight byte bounded at larger T); columns per group
// never change a column's sums, so every T gives the same bits. The grid is
// sized for NC; workgroups with no columns at larger T return at once. The
// per-nc code is matvec_cols.glsl, instantiated once per nc value. The SPLIT partial sums are then combined in a fixed order:
// with SG_SHUFFLE a butterfly of subgroup shuffles within each subgroup
// (or within the group, when the group is narrower than a subgroup), then
// the per-subgroup sums in subgroup order through shared memory; without it
// a pairwise tree in shared memory. Nothing depends on T, so row t's result
// is bitwise the same for T = 1 as for T = m (batch invariance); variants
// with the same SPLIT and reduction kind give bitwise the same results.
//
// The fused rms_norm is factored out of the dot product: the group also sums
// x[t,k]^2 over its chunks, reduced the same way, and scales the result by
// (mean + eps)^-1/2 at the end, so x is read once, not once more per
// workgroup for the norm. With PRO_NW x is multiplied by the norm weight as
// it is read; without (a folded norm) the weights already carry it. Grid: x = ceil(N / (GROUPS * NC)).
//
// Quantized weights (WQUANT, quant_weights.glsl): a chunk is one load of QW
// 32-bit words (QW = 4: one 16-byte load, 16 weights of q8_0 or
// f8e4m3_b128 or one 32-weight sub-block of q4_k or block of mxfp4; QW = 1:
// 4 or 8 weights) plus its scales (the block's scale for q8_0, an f16,
// f8e4m3_b128, an f32, and mxfp4, an E8M0 byte; for q4_k its super-block's
// 16 scale bytes, one
// more 16-byte load that the neighbouring lanes share). A chunk never
// straddles a block. accumulate unpacks each word once for all rows, sums
// x * q over the chunk in f32 and scales the sum once per chunk and column:
// d * s (q8_0, f8e4m3_b128, mxfp4), (d*sc) * s - (dmin*m) * sum(x) (q4_k). With QW = 1 the
// lanes of a group read x in consecutive 16 or 32 bytes (a 16-byte chunk of
// q4_k spans 128 bytes of x per lane, 32 lanes then touch 32 lines of x per
// load); the sums per chunk, and so the bits, depend on QW.
//
// Groups (XGROUPS, defined only for a grouped matmul, docs/ops.md): x's
// rows are XGROUPS inputs of K and column n reads input n / GROUP_N. The
// builder keeps GROUP_N a multiple of the columns per group, so a column
// group reads one input, from x_base on in every row.

#if SG_SHUFFLE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif

layout(set = 0, binding = B_X) readonly buffer X { float x[]; };
#if VEC8
layout(set = 0, binding = B_X) readonly buffer X4 { vec4 x4[]; };
#endif
#if PRO_NW
layout(set = 0, binding = B_NW) readonly buffer NW { float nw[]; };
#if VEC8
layout(set = 0, binding = B_NW) readonly buffer NW4 { vec4 nw4[]; };
#endif
#endif

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

// The rows and the columns per group this pipeline runs: constants where T
// is specialised (T_SPEC), the largest otherwise. They size the reduction's
// shared memory for the one path the pipeline takes, so that a T = 1
// pipeline of a kernel whose columns grow with T holds as little as one
// whose columns do not (a larger array costs the H200 L1 capacity for x).
// Columns per group for a step of `rows` rows (before the NC_MAX cap).
#define NC_AT(rows) (NC * ((rows) <= 1u ? 1u : ((rows) <= 2u ? 2u : 4u)))
const uint ROWS_C = T_SPEC == 0u ? T_MAX : RPT * T_SPEC;
const uint NC_G = NC_AT(ROWS_C);
const uint NC_C = NC_G < NC_MAX ? NC_G : NC_MAX;
const uint NVAL_C = (NC_C + PRO_RMS) * ROWS_C;
#if SG_SHUFFLE
// Per-subgroup sums, one slot per subgroup of at least MIN_SG lanes.
#define MIN_SG 4u
shared float part[(LS_X / MIN_SG) * NVAL_C];
#else
shared float part[LS_X * NVAL_C];
#endif
// Live value v (matvec_cols.glsl) of slot i.
#define PART(i, v) part[(i) * NVAL_C + (v)]

// Where row t of the lane's x starts, in floats (XROW) and vec4s (X4ROW).
#ifdef XGROUPS
// The lane's input group's offset in a row: set once in main, before the
// column paths, so that accumulate's x reads need no extra argument.
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
layout(set = 0, binding = B_W) readonly buffer WQ2 { uvec2 wq2[]; };
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
struct WChunkQ { WQV v; uvec4 meta; };
WChunkQ load_chunk(uint n, uint j) { return WChunkQ(wq_words(n, j), wq_meta(n, j * QPC)); }
#else
struct WChunkQ { WQV v; float d; };
WChunkQ load_chunk(uint n, uint j) { return WChunkQ(wq_words(n, j), wq_scale(n, j * QPC)); }
#endif
#define WCHUNK WChunkQ
#elif VEC8
#if WTYPE_F16
layout(set = 0, binding = B_W) readonly buffer W8 { uvec4 w8[]; };
#define WCHUNK uvec4
WCHUNK load_chunk(uint n, uint j) { return w8[n * KC + j]; }
void unpack_chunk(WCHUNK u, out vec4 a, out vec4 b)
{
	a = vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
	b = vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
}
#else
layout(set = 0, binding = B_W) readonly buffer W8 { vec4 w4[]; };
#define WCHUNK mat2x4
WCHUNK load_chunk(uint n, uint j) { return mat2x4(w4[2u * (n * KC + j)], w4[2u * (n * KC + j) + 1u]); }
void unpack_chunk(WCHUNK u, out vec4 a, out vec4 b)
{
	a = u[0];
	b = u[1];
}
#endif
#else
#define WCHUNK float
WCHUNK load_chunk(uint n, uint j) { return load_w(n * K + j); }
#endif

#ifdef XQ8
// Int8 activations (xq = 8, docs/quantization.md): x's rows are rounded per
// block of 32 to codes q = round(v * inv), inv = 127 / a as q8_inverse
// forms it, with one scale d = a * (1 / 127) (a the block's largest |v|;
// v = x, times the norm weight with PRO_NW; halo_round_x_q8 in
// runtime/drivers/ref/quant.c, whose codes these are bit for bit),
// staged in shared memory by the whole workgroup a tile of XT columns of K
// at a time; each weight word then meets four x codes in one OpSDot, whose
// products and sum are exact in 32-bit integers, and the chunk's integer
// sum is scaled once per column and row. q4_k's nibbles take codes staged
// in their order: a word's low nibbles are its even elements, so each 8
// elements are staged as their even codes' word, then their odd codes'.
// With PRO_RMS the sum of squares of x is taken per block as it is staged
// and added by the lane that reads the block's first chunk. A lane's
// chunks are j = l, l + SPLIT, ... over all of K whatever the tiles, so
// the tile size (which depends on the rows, to fit) changes no sum.
// The sum of the products of a's and b's four signed bytes: OpSDot, or
// (XQ_SDOT 0, a device without it) the same exact sum in integer
// operations.
#if XQ_SDOT
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4(int a, int b, spirv_literal int packed_4x8);
int dot4(uint a, uint b) { return sdot4(int(a), int(b), 0); }
#else
int dot4(uint a, uint b)
{
	int s = 0;
	for (int i = 0; i < 32; i += 8)
		s += bitfieldExtract(int(a), i, 8) * bitfieldExtract(int(b), i, 8);
	return s;
}
#endif

// A tile's codes take at most XQ_CODE_BYTES (the builder's, which counts
// it in the shared memory a variant may use): XT columns of K (a multiple
// of 32) for each row the pipeline runs.
const uint XT_R = XQ_CODE_BYTES / ROWS_C / 32u * 32u;
const uint XT = K < XT_R ? K : XT_R;
shared uint xq_code[ROWS_C * (XT / 4u)];
shared float xq_d[ROWS_C * (XT / 32u)];
#if PRO_RMS
shared float xq_ss[ROWS_C * (XT / 32u)];
#endif

// Four codes, element 0 in the low byte.
uint pack_codes(ivec4 c)
{
	uvec4 u = uvec4(c) & 0xffu;
	return u.x | (u.y << 8u) | (u.z << 16u) | (u.w << 24u);
}

// 127 / a as ref's halo_x_q8_inverse forms it, operation for operation
// (precise: no fma, no reordering), so the codes are ref's bit for bit.
float q8_inverse(float a)
{
	precise float r = uintBitsToFloat(0x7ef311c7u - floatBitsToUint(a));
	for (int i = 0; i < 4; i++) {
		precise float e = a * r;
		precise float f = 2.0 - e;
		r = r * f;
	}
	precise float inv = 127.0 * r;
	return inv;
}

// The codes of v: the nearest integers to y = v * inv (|y| <= 127.5),
// ties to even, by the f32 addition's own rounding (1.5 * 2^23 + y has no
// fraction bits). roundEven is not used: lavapipe rounded some exact
// halves away from zero. precise keeps the product and the sums apart (no
// fma) and in order.
ivec4 round_code(vec4 v, float inv)
{
	precise vec4 y = v * inv;
	precise vec4 r = (y + 12582912.0) - 12582912.0;
	return ivec4(r);
}

// Stages x's columns k0 .. k0 + kt - 1 (kt a multiple of 32) of every
// live row: one block of 32 per lane at a time.
void stage_x(uint k0, uint kt)
{
	uint nb = kt / 32u;
	for (uint i = gl_LocalInvocationID.x; i < ROWS * nb; i += LS_X) {
		uint t = i / nb, b = i % nb, xi = k0 / 4u + 8u * b;
		vec4 v[8];
		float a = 0.0, ss = 0.0;
		for (uint q = 0u; q < 8u; q++) {
			vec4 xv = x4[X4ROW(t) + xi + q];
#if PRO_RMS
			ss += dot(xv, xv);
#endif
#if PRO_NW
			xv *= nw4[xi + q] + PRO_OFFSET;
#endif
			v[q] = xv;
			vec4 m = abs(xv);
			a = max(a, max(max(m.x, m.y), max(m.z, m.w)));
		}
		bool zero = !(a >= 1e-30);
		float inv = zero ? 0.0 : q8_inverse(a), d = zero ? 0.0 : a * (1.0 / 127.0);
		uint at = t * (XT / 4u) + 8u * b;
		for (uint q = 0u; q < 8u; q += 2u) {
			ivec4 c0 = round_code(v[q], inv), c1 = round_code(v[q + 1u], inv);
#if WQ4K
			xq_code[at + q] = pack_codes(ivec4(c0.x, c0.z, c1.x, c1.z));
			xq_code[at + q + 1u] = pack_codes(ivec4(c0.y, c0.w, c1.y, c1.w));
#else
			xq_code[at + q] = pack_codes(c0);
			xq_code[at + q + 1u] = pack_codes(c1);
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

// The per-nc paths (matvec_cols.glsl), written after main by the builder.
MATVEC_PROTOTYPES

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
