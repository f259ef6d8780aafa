// Block-quantized weights (WQUANT; runtime/drivers/ref/quant.h defines the bytes):
// q8_0 (WQ4K 0, WQF8 0, WQFP4 0), q4_k (WQ4K 1), f8e4m3_b128 (WQF8 1) and
// mxfp4 (WQFP4 1). q8_0 and f8e4m3_b128 hold a byte per weight and one
// scale per block (an f16 per 32, an f32 per 128) and share every path but
// the byte's decoding; q4_k and mxfp4 hold a nibble per weight, laid out
// alike (WQ_NIB), mxfp4 with one scale per block (an E8M0 byte per 32) as
// the byte formats. A tensor of WQ_ROWS rows of WQ_LEN
// elements is its values region (row r at r * WQ_LEN * bits / 8 bytes) then
// its scales region (row r's at WQ_ROWS * WQ_LEN * bits / 8 + r * the row's
// scale bytes); the binding starts at the tensor's first byte.
// codegen/kernel_variant.c places this between the prelude and the kernel.
//
// Quantized values become f32 without a conversion instruction (a quarter-
// rate one on NVIDIA) and with few integer operations (half-rate on the
// H100/H200; halving them made q4_k's matvec 3-6% faster there, q8_0's no
// faster: bench/results-quant.txt): a value's bits are masked where they lie in the word, at
// bit p, and ORed into the mantissa of 2^23, which makes the float
// 2^23 + v * 2^p, exact while v * 2^p < 2^23; then (2^23 + v * 2^p) * 2^-p - c
// is v minus the format's bias, exact (the product is a power-of-two scaling,
// the difference an integer below 2^24), fused or not. Values that reach
// bit 23 or above are shifted down first, one shift for several: q8_0's top
// two bytes, q4_k's top three nibbles. (Extracting each value to bit 0
// first took a shift and a mask per value.)

// The four signed bytes of u, in byte order: flipping each byte's sign bit
// makes it q + 128, which the subtraction's constant removes; bytes 0-1 in
// place, 2-3 from v >> 16 (byte 2 in place would reach bit 23).
vec4 q8_unpack(uint u)
{
	uint v = u ^ 0x80808080u, w = v >> 16u;
	vec4 f = uintBitsToFloat((uvec4(v, v, w, w) & uvec4(0xffu, 0xff00u, 0xffu, 0xff00u)) | 0x4b000000u);
	return fma(f, vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0), -vec4(8388736.0, 32896.0, 8388736.0, 32896.0));
}

// The four fp8 E4M3 codes of u, in byte order, by integer operations: a
// normal code's exponent and mantissa bits, moved to an f32's and rebiased
// by 127 - 7 = 120, are its value; a subnormal's (exponent 0) take exponent
// 1 instead, 2^-6 (1 + m/8), and subtracting 2^-6 leaves m * 2^-9, exact
// (no f32 subnormal is formed, so flushing them changes nothing). The NaN
// codes are never stored.
vec4 f8_unpack(uint u)
{
	uvec4 b = (uvec4(u) >> uvec4(0u, 8u, 16u, 24u)) & 0xffu, em = b & 0x7fu;
	uvec4 sub = uvec4(lessThan(em, uvec4(8u)));
	vec4 mag = uintBitsToFloat((em << 20u) + ((120u + sub) << 23u)) - vec4(sub) * 0.015625;
	return uintBitsToFloat(floatBitsToUint(mag) | ((b & 0x80u) << 24u));
}

// The four weights of a byte format's word, before their block's scale.
vec4 b8_unpack(uint u)
{
#if WQF8
	return f8_unpack(u);
#else
	return q8_unpack(u);
#endif
}

// The eight nibbles of u, in nibble order (elements 8w .. 8w + 7 of word w):
// nibbles 0-4 in place, 5-7 from u >> 20.
void q4_unpack(uint u, out vec4 lo, out vec4 hi)
{
	vec4 f = uintBitsToFloat((uvec4(u) & uvec4(0xfu, 0xf0u, 0xf00u, 0xf000u)) | 0x4b000000u);
	lo = fma(f, vec4(1.0, 1.0 / 16.0, 1.0 / 256.0, 1.0 / 4096.0), -vec4(8388608.0, 524288.0, 32768.0, 2048.0));
	uint w = u >> 20u;
	vec4 g = uintBitsToFloat((uvec4(u, w, w, w) & uvec4(0xf0000u, 0xfu, 0xf0u, 0xf00u)) | 0x4b000000u);
	hi = fma(g, vec4(1.0 / 65536.0, 1.0, 1.0 / 16.0, 1.0 / 256.0), -vec4(128.0, 8388608.0, 524288.0, 32768.0));
}

// Four E2M1 codes (nibbles) by integer operations alone, as f8_unpack does
// fp8's: a code's exponent and mantissa bits (e m, magnitude 2^(e-1) (1 +
// m/2) for e >= 1) moved to an f32's and rebiased by 127 - 1 = 126 are its
// value's bits; codes 0 and 1 (e = 0: 0 and 0.5) are 0 and 0.5's bits,
// em * 0x3f000000. No float operation: the earlier form (exponent 1 for
// e = 0, then 1.0 subtracted) decoded some codes half a unit off in
// matmul_coopmat.comp on NVIDIA's driver 580 (the same source was right in
// matmul.comp and matvec.comp), which integer selects cannot be.
vec4 e2m1_of(uvec4 q)
{
	uvec4 em = q & 7u, big = uvec4(greaterThanEqual(em, uvec4(2u)));
	uvec4 bits = big * ((em << 22u) + (126u << 23u)) + (1u - big) * em * 0x3f000000u;
	return uintBitsToFloat(bits | ((q & 8u) << 28u));
}

// The eight E2M1 values of u, in nibble order, before their block's scale.
void fp4_unpack(uint u, out vec4 lo, out vec4 hi)
{
	lo = e2m1_of((uvec4(u) >> uvec4(0u, 4u, 8u, 12u)) & 0xfu);
	hi = e2m1_of((uvec4(u) >> uvec4(16u, 20u, 24u, 28u)) & 0xfu);
}

// q4_k sub-block j (0..7) of the super-block whose 16 scale bytes are s:
// (d * sc, dmin * m), each one f32 product as the dequantizer forms it.
vec2 q4_scales(uvec4 s, uint j)
{
	vec2 dm = unpackHalf2x16(s.x);
	uint sh = 8u * (j & 3u);
	uint lo_sc = (s.y >> sh) & 63u, lo_m = (s.z >> sh) & 63u;
	uint hi_sc = ((s.w >> sh) & 15u) | (((s.y >> sh) >> 6u) & 3u) << 4u;
	uint hi_m = ((s.w >> (sh + 4u)) & 15u) | (((s.z >> sh) >> 6u) & 3u) << 4u;
	return vec2(dm.x * float(j < 4u ? lo_sc : hi_sc), dm.y * float(j < 4u ? lo_m : hi_m));
}

// The nibble formats: 8 weights a word, unpacked by WQ_NIB_UNPACK (u, lo,
// hi) into elements 8w .. 8w + 7, before their scales.
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
uint wq_word_index(uint n, uint k) { return n * (WQ_LEN / QPW_) + k / QPW_; }
// (a row's last q4_k super-block may be partial: ceil(WQ_LEN / 256) a row)
uint wq_meta_index(uint n, uint k) { return WQ_VALUE_WORDS / 4u + n * ((WQ_LEN + 255u) / 256u) + k / 256u; }
#if WQF8
uint wq_scale_index(uint n, uint k) { return WQ_VALUE_WORDS + n * (WQ_LEN / 128u) + k / 128u; }
uint wq_scale_word(uint i) { return i; }
float wq_scale_of(uint word, uint i) { return uintBitsToFloat(word); }
#elif WQFP4
uint wq_scale_index(uint n, uint k) { return 4u * WQ_VALUE_WORDS + n * (WQ_LEN / 32u) + k / 32u; }
uint wq_scale_word(uint i) { return i >> 2; }
// E8M0 byte e is 2^(e - 127): e in an f32's exponent field; byte 0, 2^-127,
// is the subnormal with the top mantissa bit (a GPU that flushes
// subnormals reads it, and its products, as 0). 0xff, NaN, is never stored.
float wq_scale_of(uint word, uint i)
{
	uint e = (word >> (8u * (i & 3u))) & 0xffu;
	return uintBitsToFloat(e == 0u ? 0x00400000u : e << 23u);
}
#else
uint wq_scale_index(uint n, uint k) { return 2u * WQ_VALUE_WORDS + n * (WQ_LEN / 32u) + k / 32u; }
uint wq_scale_word(uint i) { return i >> 1; }
float wq_scale_of(uint word, uint i)
{
	vec2 p = unpackHalf2x16(word);
	return (i & 1u) == 0u ? p.x : p.y;
}
#endif

// Weights k .. k + 7 (k a multiple of 8) from their words (w0, and w1 for
// the byte formats) and scales (meta for q4_k, d for the others),
// dequantized: the values
// halo_dequantize_rows gives, up to the contraction of q4_k's
// (d*sc) * q - (dmin*m) into one fma.
void q4_deq8(uvec4 meta, uint w0, uint k, out vec4 a, out vec4 b)
{
	vec2 so = q4_scales(meta, (k / 32u) % 8u);
	q4_unpack(w0, a, b);
	a = so.x * a - so.y;
	b = so.x * b - so.y;
}
void b8_deq8(float d, uint w0, uint w1, out vec4 a, out vec4 b)
{
	a = d * b8_unpack(w0);
	b = d * b8_unpack(w1);
}
void fp4_deq8(float d, uint w0, out vec4 a, out vec4 b)
{
	fp4_unpack(w0, a, b);
	a = d * a;
	b = d * b;
}

#ifdef B_W
layout(set = 0, binding = B_W) readonly buffer WQ4 { uvec4 wq4[]; };
layout(set = 0, binding = B_W) readonly buffer WQ1 { uint wq1[]; };

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
void wq_load8(uint n, uint k, out vec4 a, out vec4 b)
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
