// Block-quantized weights (WQUANT): q8_0 (WQ4K 0, WQF8 0, WQFP4 0), q4_k
// (WQ4K 1), f8e4m3_b128 (WQF8 1) and mxfp4 (WQFP4 1). The twin of kernels/vulkan/quant_weights.glsl, which
// gives the layout (runtime/drivers/ref/quant.h defines the bytes) and why values
// become f32 through the mantissa of 2^23, masked in place, rather than a
// conversion: the same integer operations here, so the same f32 values.
//
// Everything up to the reads of the weight binding is file scope (above
// `// @struct`): the templates' own file-scope parts, emitted after this
// one, test these macros (matvec.hip's QPW reads WQ_NIB), and the struct's
// members would come after them all (codegen/emit_hip.c).

// The four signed bytes of u, in byte order: each byte's sign bit flipped
// (q + 128), bytes 0-1 masked in place and 2-3 from v >> 16, each scaled
// down to bit 0 and unbiased by one fma.
static vec4 q8_unpack(uint u)
{
	uint v = u ^ 0x80808080u, src[4] = {v, v, v >> 16u, v >> 16u};
	vec4 r;
	for (uint e = 0u; e < 4u; e++) {
		uint sh = 8u * (e % 2u);
		float p = 1.0f / float(1u << sh);
		r[e] = fma(uintBitsToFloat((src[e] & (0xffu << sh)) | 0x4b000000u), p, -8388608.0f * p - 128.0f);
	}
	return r;
}

// The four fp8 E4M3 codes of u, in byte order, by integer operations
// (quant_weights.glsl: a normal code rebiased by 120, a subnormal's given
// exponent 1 and 2^-6 subtracted, both exact).
static vec4 f8_unpack(uint u)
{
	vec4 v;
	for (uint e = 0u; e < 4u; e++) {
		uint b = (u >> (8u * e)) & 0xffu, em = b & 0x7fu, sub = em < 8u ? 1u : 0u;
		float mag = uintBitsToFloat((em << 20u) + ((120u + sub) << 23u)) - float(sub) * 0.015625f;
		v[e] = uintBitsToFloat(floatBitsToUint(mag) | ((b & 0x80u) << 24u));
	}
	return v;
}

// The four weights of a byte format's word, before their block's scale.
static vec4 b8_unpack(uint u)
{
#if WQF8
	return f8_unpack(u);
#else
	return q8_unpack(u);
#endif
}

// The eight nibbles of u, in nibble order (elements 8w .. 8w + 7 of word w):
// nibbles 0-4 masked in place, 5-7 from u >> 20, each scaled down to bit 0
// and unbiased by one fma.
static void q4_unpack(uint u, vec4 &lo, vec4 &hi)
{
	const uint w = u >> 20u, src[8] = {u, u, u, u, u, w, w, w}, sh[8] = {0u, 4u, 8u, 12u, 16u, 0u, 4u, 8u};
	for (uint e = 0u; e < 8u; e++) {
		float p = 1.0f / float(1u << sh[e]);
		float v = fma(uintBitsToFloat((src[e] & (0xfu << sh[e])) | 0x4b000000u), p, -8388608.0f * p);
		if (e < 4u)
			lo[e] = v;
		else
			hi[e - 4u] = v;
	}
}

// Four E2M1 codes (nibbles) by integer operations alone (quant_weights.glsl:
// a code's exponent and mantissa bits rebiased by 126; codes 0 and 1 are
// 0 and 0.5's bits, em * 0x3f000000; no float operation, which NVIDIA's
// Vulkan compiler got wrong in one kernel).
static vec4 e2m1_of(uint u)
{
	vec4 v;
	for (uint e = 0u; e < 4u; e++) {
		uint q = (u >> (4u * e)) & 0xfu, em = q & 7u;
		uint bits = em >= 2u ? (em << 22u) + (126u << 23u) : em * 0x3f000000u;
		v[e] = uintBitsToFloat(bits | ((q & 8u) << 28u));
	}
	return v;
}

// The eight E2M1 values of u, in nibble order, before their block's scale.
static void fp4_unpack(uint u, vec4 &lo, vec4 &hi)
{
	lo = e2m1_of(u);
	hi = e2m1_of(u >> 16u);
}

// q4_k sub-block j (0..7) of the super-block whose 16 scale bytes are s:
// (d * sc, dmin * m), each one f32 product as the dequantizer forms it.
static vec2 q4_scales(uvec4 s, uint j)
{
	vec2 dm = unpackHalf2x16(s.x);
	uint sh = 8u * (j & 3u);
	uint lo_sc = (s.y >> sh) & 63u, lo_m = (s.z >> sh) & 63u;
	uint hi_sc = ((s.w >> sh) & 15u) | (((s.y >> sh) >> 6u) & 3u) << 4u;
	uint hi_m = ((s.w >> (sh + 4u)) & 15u) | (((s.z >> sh) >> 6u) & 3u) << 4u;
	return vec2{dm.x * float(j < 4u ? lo_sc : hi_sc), dm.y * float(j < 4u ? lo_m : hi_m)};
}

// The nibble formats: 8 weights a word, unpacked by WQ_NIB_UNPACK (u, lo,
// hi), before their scales.
#define WQ_NIB (WQ4K || WQFP4)
#if WQFP4
#define WQ_NIB_UNPACK fp4_unpack
#else
#define WQ_NIB_UNPACK q4_unpack
#endif
#if WQ_NIB
#define QPW_ 8u
#define WQ_VALUE_WORDS (WQ_ROWS * (WQ_LEN / 8u))
#else
#define QPW_ 4u
#define WQ_VALUE_WORDS (WQ_ROWS * (WQ_LEN / 4u))
#endif

// Where things are, for element k of row n: the 32-bit word of its value,
// the 16-byte word of its q4_k super-block's scales, the scale of its q8_0
// block (index i in halves: in word i >> 1), f8e4m3_b128 block (index i in
// words) or mxfp4 block (index i in bytes: in word i >> 2), and that scale
// from its word.
static uint wq_word_index(uint n, uint k) { return n * (WQ_LEN / QPW_) + k / QPW_; }
// (a row's last q4_k super-block may be partial: ceil(WQ_LEN / 256) a row)
static uint wq_meta_index(uint n, uint k) { return WQ_VALUE_WORDS / 4u + n * ((WQ_LEN + 255u) / 256u) + k / 256u; }
#if WQF8
static uint wq_scale_index(uint n, uint k) { return WQ_VALUE_WORDS + n * (WQ_LEN / 128u) + k / 128u; }
static uint wq_scale_word(uint i) { return i; }
static float wq_scale_of(uint word, uint) { return uintBitsToFloat(word); }
#elif WQFP4
static uint wq_scale_index(uint n, uint k) { return 4u * WQ_VALUE_WORDS + n * (WQ_LEN / 32u) + k / 32u; }
static uint wq_scale_word(uint i) { return i >> 2; }
// E8M0 byte e is 2^(e - 127); byte 0 the subnormal 2^-127 (quant_weights.glsl).
static float wq_scale_of(uint word, uint i)
{
	uint e = (word >> (8u * (i & 3u))) & 0xffu;
	return uintBitsToFloat(e == 0u ? 0x00400000u : e << 23u);
}
#else
static uint wq_scale_index(uint n, uint k) { return 2u * WQ_VALUE_WORDS + n * (WQ_LEN / 32u) + k / 32u; }
static uint wq_scale_word(uint i) { return i >> 1; }
static float wq_scale_of(uint word, uint i)
{
	vec2 p = unpackHalf2x16(word);
	return (i & 1u) == 0u ? p.x : p.y;
}
#endif

// Weights k .. k + 7 (k a multiple of 8) from their words (w0, and w1 for
// the byte formats) and scales (meta for q4_k, d for the others),
// dequantized as quant_weights.glsl does.
static void q4_deq8(uvec4 meta, uint w0, uint k, vec4 &a, vec4 &b)
{
	vec2 so = q4_scales(meta, (k / 32u) % 8u);
	q4_unpack(w0, a, b);
	a = so.x * a - so.y;
	b = so.x * b - so.y;
}
static void b8_deq8(float d, uint w0, uint w1, vec4 &a, vec4 &b)
{
	a = d * b8_unpack(w0);
	b = d * b8_unpack(w1);
}
static void fp4_deq8(float d, uint w0, vec4 &a, vec4 &b)
{
	fp4_unpack(w0, a, b);
	a = d * a;
	b = d * b;
}

// @struct
#ifdef B_W
const uvec4 *__restrict__ wq4 = (const uvec4 *)args.b[B_W];
const uint *__restrict__ wq1 = (const uint *)args.b[B_W];

#if WQ4K
// The 16 scale bytes of the super-block holding element k of row n.
uvec4 wq_meta(uint n, uint k) { return wq4[wq_meta_index(n, k)]; }
#else
// The scale of the block holding element k of row n.
float wq_scale(uint n, uint k)
{
	uint i = wq_scale_index(n, k);
	return wq_scale_of(wq1[wq_scale_word(i)], i);
}
#endif

// Weights k .. k + 7 of row n (k a multiple of 8), dequantized.
void wq_load8(uint n, uint k, vec4 &a, vec4 &b)
{
	uint i = wq_word_index(n, k);
#if WQ4K
	q4_deq8(wq_meta(n, k), wq1[i], k, a, b);
#elif WQFP4
	fp4_deq8(wq_scale(n, k), wq1[i], a, b);
#else
	b8_deq8(wq_scale(n, k), wq1[i], wq1[i + 1u], a, b);
#endif
}
#endif
