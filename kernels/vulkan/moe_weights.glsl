// Expert weights for moe_gate_up (A = gate, B = up) and moe_down (A = down),
// f32 or f16 (WTYPE_F16, read as 32-bit words, or 16-byte words with VEC8),
// or quantized (WQUANT, 8 weights at a time, dequantized in f32),
// and the fixed-order lane reduction both kernels share over RED_ROWS rows.
// codegen/kernel_variant.c places this between the prelude and the kernel.

uint expert(int id) { return id < 0 || id >= int(E) ? 0u : uint(id); }

#ifdef WQUANT
// Quantized experts (quant_weights.glsl): the tensor is WQ_ROWS = E * rows
// rows of WQ_LEN; chunk c is 8 weights of the flattened tensor (row
// c / (WQ_LEN / 8), weights 8 (c % (WQ_LEN / 8)) ..), dequantized.
layout(set = 0, binding = B_A) readonly buffer QA4 { uvec4 qa4[]; };
layout(set = 0, binding = B_A) readonly buffer QA1 { uint qa1[]; };
void load8_a(uint c, out vec4 a, out vec4 b)
{
	uint n = c / (WQ_LEN / 8u), k = (c % (WQ_LEN / 8u)) * 8u, i = wq_word_index(n, k);
#if WQ4K
	q4_deq8(qa4[wq_meta_index(n, k)], qa1[i], k, a, b);
#elif WQFP4
	uint si = wq_scale_index(n, k);
	fp4_deq8(wq_scale_of(qa1[wq_scale_word(si)], si), qa1[i], a, b);
#else
	uint si = wq_scale_index(n, k);
	b8_deq8(wq_scale_of(qa1[wq_scale_word(si)], si), qa1[i], qa1[i + 1u], a, b);
#endif
}
#ifdef B_B
layout(set = 0, binding = B_B) readonly buffer QB4 { uvec4 qb4[]; };
layout(set = 0, binding = B_B) readonly buffer QB1 { uint qb1[]; };
void load8_b(uint c, out vec4 a, out vec4 b)
{
	uint n = c / (WQ_LEN / 8u), k = (c % (WQ_LEN / 8u)) * 8u, i = wq_word_index(n, k);
#if WQ4K
	q4_deq8(qb4[wq_meta_index(n, k)], qb1[i], k, a, b);
#elif WQFP4
	uint si = wq_scale_index(n, k);
	fp4_deq8(wq_scale_of(qb1[wq_scale_word(si)], si), qb1[i], a, b);
#else
	uint si = wq_scale_index(n, k);
	b8_deq8(wq_scale_of(qb1[wq_scale_word(si)], si), qb1[i], qb1[i + 1u], a, b);
#endif
}
#endif
#elif VEC8
#if WTYPE_F16
layout(set = 0, binding = B_A) readonly buffer A8 { uvec4 a8[]; };
void unpack8(uvec4 u, out vec4 a, out vec4 b)
{
	a = vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y));
	b = vec4(unpackHalf2x16(u.z), unpackHalf2x16(u.w));
}
void load8_a(uint c, out vec4 a, out vec4 b) { unpack8(a8[c], a, b); }
#ifdef B_B
layout(set = 0, binding = B_B) readonly buffer B8 { uvec4 b8[]; };
void load8_b(uint c, out vec4 a, out vec4 b) { unpack8(b8[c], a, b); }
#endif
#else
layout(set = 0, binding = B_A) readonly buffer A4 { vec4 a4[]; };
void load8_a(uint c, out vec4 a, out vec4 b) { a = a4[2u * c]; b = a4[2u * c + 1u]; }
#ifdef B_B
layout(set = 0, binding = B_B) readonly buffer B4 { vec4 b4[]; };
void load8_b(uint c, out vec4 a, out vec4 b) { a = b4[2u * c]; b = b4[2u * c + 1u]; }
#endif
#endif
#else
#if WTYPE_F16
layout(set = 0, binding = B_A) readonly buffer A1 { uint a1[]; };
float half_at(uint word, uint i) { vec2 p = unpackHalf2x16(word); return (i & 1u) == 0u ? p.x : p.y; }
float load_a(uint i) { return half_at(a1[i >> 1], i); }
#ifdef B_B
layout(set = 0, binding = B_B) readonly buffer B1 { uint b1[]; };
float load_b(uint i) { return half_at(b1[i >> 1], i); }
#endif
#else
layout(set = 0, binding = B_A) readonly buffer A1 { float a1[]; };
float load_a(uint i) { return a1[i]; }
#ifdef B_B
layout(set = 0, binding = B_B) readonly buffer B1 { float b1[]; };
float load_b(uint i) { return b1[i]; }
#endif
#endif
#endif

#if defined(WQUANT) || VEC8
// A chunk as the kernels hold it between its load and its use: f16 stays 16
// packed bytes until then, half the registers of the 8 loads a lane has in
// flight (moe_down: 93 -> 59 registers in the cuda twin at F = 640, 256
// lanes: 4 workgroups an SM where 2 fitted); the other formats are held as
// floats.
#if !defined(WQUANT) && WTYPE_F16
#define W8 uvec4
W8 load8_raw_a(uint c) { return a8[c]; }
#ifdef B_B
W8 load8_raw_b(uint c) { return b8[c]; }
#endif
void unpack8_raw(W8 w, out vec4 a, out vec4 b) { unpack8(w, a, b); }
#else
struct W8 {
	vec4 a;
	vec4 b;
};
W8 load8_raw_a(uint c)
{
	W8 w;
	load8_a(c, w.a, w.b);
	return w;
}
#ifdef B_B
W8 load8_raw_b(uint c)
{
	W8 w;
	load8_b(c, w.a, w.b);
	return w;
}
#endif
void unpack8_raw(W8 w, out vec4 a, out vec4 b)
{
	a = w.a;
	b = w.b;
}
#endif
#endif

shared float red[RED_ROWS][LS_X];

// red[i][l] = the sum of red[i][l .. l + width) for rows i < rows and every
// group of `width` lanes (l % width == 0; width a power of two <= LS_X), in a
// fixed tree order: width LS_X leaves a row's sum over the workgroup in
// red[i][0].
void reduce_rows(uint l, uint rows, uint width)
{
	for (uint s = width / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l % width < s)
			for (uint i = 0u; i < rows; i++)
				red[i][l] += red[i][l + s];
	}
	barrier();
}
