// Expert weights for moe_gate_up (A = gate, B = up) and moe_down (A = down),
// f32 or f16 (WTYPE_F16, read as 32-bit words, or 16-byte words with VEC8),
// or quantized (WQUANT, 8 weights at a time, quant_weights.hip), and the
// fixed-order lane reduction both kernels share over RED_ROWS rows. The twin
// of kernels/vulkan/moe_weights.glsl.

HALO_SHARED float red[RED_ROWS][LS_X];
// @struct

static uint expert(int id) { return id < 0 || id >= int(E) ? 0u : uint(id); }

#ifdef WQUANT
// Chunk c is 8 weights of the flattened tensor of WQ_ROWS = E * rows rows of
// WQ_LEN (row c / (WQ_LEN / 8), weights 8 (c % (WQ_LEN / 8)) ..), dequantized.
const uvec4 *__restrict__ qa4 = (const uvec4 *)args.b[B_A];
const uint *__restrict__ qa1 = (const uint *)args.b[B_A];
void load8_a(uint c, vec4 &a, vec4 &b)
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
const uvec4 *__restrict__ qb4 = (const uvec4 *)args.b[B_B];
const uint *__restrict__ qb1 = (const uint *)args.b[B_B];
void load8_b(uint c, vec4 &a, vec4 &b)
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
const uvec4 *__restrict__ a8 = (const uvec4 *)args.b[B_A];
static void unpack8(uvec4 u, vec4 &a, vec4 &b)
{
	vec2 p0 = unpackHalf2x16(u.x), p1 = unpackHalf2x16(u.y), p2 = unpackHalf2x16(u.z), p3 = unpackHalf2x16(u.w);
	a = vec4{p0.x, p0.y, p1.x, p1.y};
	b = vec4{p2.x, p2.y, p3.x, p3.y};
}
void load8_a(uint c, vec4 &a, vec4 &b) { unpack8(a8[c], a, b); }
#ifdef B_B
const uvec4 *__restrict__ b8 = (const uvec4 *)args.b[B_B];
void load8_b(uint c, vec4 &a, vec4 &b) { unpack8(b8[c], a, b); }
#endif
#else
const vec4 *__restrict__ a4 = (const vec4 *)args.b[B_A];
void load8_a(uint c, vec4 &a, vec4 &b) { a = a4[2u * c]; b = a4[2u * c + 1u]; }
#ifdef B_B
const vec4 *__restrict__ b4 = (const vec4 *)args.b[B_B];
void load8_b(uint c, vec4 &a, vec4 &b) { a = b4[2u * c]; b = b4[2u * c + 1u]; }
#endif
#endif
#else
#if WTYPE_F16
const uint *__restrict__ a1 = (const uint *)args.b[B_A];
static float half_at(uint word, uint i) { vec2 p = unpackHalf2x16(word); return (i & 1u) == 0u ? p.x : p.y; }
float load_a(uint i) { return half_at(a1[i >> 1], i); }
#ifdef B_B
const uint *__restrict__ b1 = (const uint *)args.b[B_B];
float load_b(uint i) { return half_at(b1[i >> 1], i); }
#endif
#else
const float *__restrict__ a1 = (const float *)args.b[B_A];
float load_a(uint i) { return a1[i]; }
#ifdef B_B
const float *__restrict__ b1 = (const float *)args.b[B_B];
float load_b(uint i) { return b1[i]; }
#endif
#endif
#endif

#if defined(WQUANT) || VEC8
// A chunk as the kernels hold it between its load and its use: f16 stays 16
// packed bytes until then (moe_weights.glsl says why); the other formats are
// held as floats.
#if !defined(WQUANT) && WTYPE_F16
typedef uvec4 W8;
W8 load8_raw_a(uint c) { return a8[c]; }
#ifdef B_B
W8 load8_raw_b(uint c) { return b8[c]; }
#endif
static void unpack8_raw(W8 w, vec4 &a, vec4 &b) { unpack8(w, a, b); }
#else
struct W8 {
	vec4 a, b;
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
static void unpack8_raw(W8 w, vec4 &a, vec4 &b)
{
	a = w.a;
	b = w.b;
}
#endif
#endif

// red[i][l] = the sum of red[i][l .. l + width) for rows i < rows and every
// group of `width` lanes (l % width == 0; width a power of two <= LS_X), in a
// fixed tree order: width LS_X leaves a row's sum over the workgroup in
// red[i][0].
static void reduce_rows(uint l, uint rows, uint width)
{
	for (uint s = width / 2u; s > 0u; s >>= 1) {
		barrier();
		if (l % width < s)
			for (uint i = 0u; i < rows; i++)
				red[i][l] += red[i][l + s];
	}
	barrier();
}
