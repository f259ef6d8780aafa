// Block-quantized weights (WQUANT; runtime/ref/quant.h defines the bytes):
// q8_0 (WQ4K 0) and q4_k (WQ4K 1). A tensor of WQ_ROWS rows of WQ_LEN
// elements is its values region (row r at r * WQ_LEN * bits / 8 bytes) then
// its scales region (row r's at WQ_ROWS * WQ_LEN * bits / 8 + r * the row's
// scale bytes); the binding starts at the tensor's first byte.
// codegen/kernel_variant.c places this between the prelude and the kernel.
//
// Quantized values become f32 without a conversion instruction (a quarter-
// rate one on NVIDIA): the value v in 0..255 ORed into the mantissa of 2^23
// is the float 2^23 + v, exact, and one subtraction leaves v (for q8_0's
// signed bytes, v = q + 128 and the subtraction takes 2^23 + 128).

// The four signed bytes of u, in byte order.
vec4 q8_unpack(uint u)
{
	uvec4 b = (uvec4(u) >> uvec4(0u, 8u, 16u, 24u)) & 0xffu;
	return uintBitsToFloat((b ^ 0x80u) | 0x4b000000u) - 8388736.0;
}

// The eight nibbles of u, in nibble order (elements 8w .. 8w + 7 of word w).
void q4_unpack(uint u, out vec4 lo, out vec4 hi)
{
	lo = uintBitsToFloat(((uvec4(u) >> uvec4(0u, 4u, 8u, 12u)) & 0xfu) | 0x4b000000u) - 8388608.0;
	hi = uintBitsToFloat(((uvec4(u) >> uvec4(16u, 20u, 24u, 28u)) & 0xfu) | 0x4b000000u) - 8388608.0;
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

#if WQ4K
#define QPW_ 8u
#define WQ_VALUE_WORDS (WQ_ROWS * (WQ_LEN / 8u))
#else
#define QPW_ 4u
#define WQ_VALUE_WORDS (WQ_ROWS * (WQ_LEN / 4u))
#endif

// Where things are, for element k of row n: the 32-bit word of its value,
// the 16-byte word of its q4_k super-block's scales, the f16 (index in
// halves) of its q8_0 block's scale.
uint wq_word_index(uint n, uint k) { return n * (WQ_LEN / QPW_) + k / QPW_; }
uint wq_meta_index(uint n, uint k) { return WQ_VALUE_WORDS / 4u + n * (WQ_LEN / 256u) + k / 256u; }
uint wq_scale_index(uint n, uint k) { return 2u * WQ_VALUE_WORDS + n * (WQ_LEN / 32u) + k / 32u; }
float wq_half(uint word, uint i)
{
	vec2 p = unpackHalf2x16(word);
	return (i & 1u) == 0u ? p.x : p.y;
}

// Weights k .. k + 7 (k a multiple of 8) from their words (w0, and w1 for
// q8_0) and scales (meta for q4_k, d for q8_0), dequantized: the values
// halo_dequantize_rows gives, up to the contraction of q4_k's
// (d*sc) * q - (dmin*m) into one fma.
void q4_deq8(uvec4 meta, uint w0, uint k, out vec4 a, out vec4 b)
{
	vec2 so = q4_scales(meta, (k / 32u) % 8u);
	q4_unpack(w0, a, b);
	a = so.x * a - so.y;
	b = so.x * b - so.y;
}
void q8_deq8(float d, uint w0, uint w1, out vec4 a, out vec4 b)
{
	a = d * q8_unpack(w0);
	b = d * q8_unpack(w1);
}

#ifdef B_W
layout(set = 0, binding = B_W) readonly buffer WQ4 { uvec4 wq4[]; };
layout(set = 0, binding = B_W) readonly buffer WQ1 { uint wq1[]; };

#if WQ4K
// The 16 scale bytes of the super-block holding element k of row n.
uvec4 wq_meta(uint n, uint k) { return wq4[wq_meta_index(n, k)]; }
#else
// The f16 scale of the block holding element k of row n.
float wq_scale(uint n, uint k)
{
	uint i = wq_scale_index(n, k);
	return wq_half(wq1[i >> 1], i);
}
#endif

// Weights k .. k + 7 of row n (k a multiple of 8), dequantized.
void wq_load8(uint n, uint k, out vec4 a, out vec4 b)
{
	uint i = wq_word_index(n, k);
#if WQ4K
	q4_deq8(wq_meta(n, k), wq1[i], k, a, b);
#else
	q8_deq8(wq_scale(n, k), wq1[i], wq1[i + 1u], a, b);
#endif
}
#endif
