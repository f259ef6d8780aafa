/* Block-quantized weight formats: what their bytes mean (the dequantizer,
 * which every backend's kernels are held to) and how halo compile makes
 * them (the quantizer). No allocation; callers own every buffer.
 *
 * A quantized tensor is `rows` rows of `k` elements (k contiguous, a
 * multiple of the format's block; a 3-D expert tensor [E, N, K] is E * N
 * rows). Its bytes are two regions, so that a kernel reads each with
 * aligned vector loads:
 *
 *   values  rows * k * bits / 8 bytes at 0, row r at r * k * bits / 8
 *   scales  the per-group scales after the values, row r's at
 *           values_bytes + r * ceil(k / group) * scale_bytes
 * (the group is the block but for q4_k, whose scales come per super-block).
 *
 * q8_0 (8.5 bits per weight): blocks of 32. Value byte i of a row is the
 *   int8 q of element i; each block has an f16 scale d; x = d * q.
 * q4_k (4.5 bits per weight): super-blocks of 256 made of 8 sub-blocks of
 *   32; a row of k % 256 != 0 (k a multiple of 32) ends in a partial
 *   super-block of (k % 256) / 32 sub-blocks with all 16 bytes of scales,
 *   the absent sub-blocks' codes 0 (K = 640: 4.6 bits, 160: 4.8). Value byte i of a row holds element 2i in its low nibble and 2i + 1
 *   in its high nibble (so nibble p of 32-bit word w is element 8w + p),
 *   q in 0..15. Each super-block has 16 bytes of scales, as four
 *   little-endian 32-bit words:
 *     w0 = d | dmin << 16 (two f16)
 *     sub-block j < 4: sc = byte j of w1 & 63, m = byte j of w2 & 63
 *     sub-block j >= 4: sc = (byte j-4 of w3 & 15) | (byte j-4 of w1 >> 6) << 4
 *                       m  = (byte j-4 of w3 >> 4) | (byte j-4 of w2 >> 6) << 4
 *   and x = (d * sc) * q - (dmin * m), evaluated in f32 in that order.
 * The scale layout is llama.cpp's Q4_K one; the values are laid out
 * linearly instead of interleaved in pairs of sub-blocks, and the two
 * regions are split, for the kernels' loads.
 * f8e4m3_b128 (8.25 bits per weight): blocks of 128. Value byte i of a row
 *   is the fp8 E4M3 code of element i, OCP's "fn" form: sign, 4 exponent
 *   bits of bias 7, 3 mantissa bits; exponent 0 is subnormal (m * 2^-9),
 *   no infinities, S.1111.111 (0x7f, 0xff) NaN, which is never stored; the
 *   largest magnitude is 448 (0x7e). Each block has an f32 scale s (4
 *   little-endian bytes) and x = s * fp8(q), one f32 product. An fp8
 *   checkpoint's 128x128 block scale is written for each of its block's
 *   rows, so its codes are stored unchanged and x is bit for bit the value
 *   the checkpoint reader's dequantization gives.
 * mxfp4 (4.25 bits per weight; OCP MX FP4): blocks of 32. Value byte i of a
 *   row holds element 2i in its low nibble and 2i + 1 in its high nibble,
 *   as q4_k's, each the E2M1 code of its element: bit 3 the sign, bits 0-2
 *   the magnitude {0, 0.5, 1, 1.5, 2, 3, 4, 6}. Each block has one E8M0
 *   byte e, the scale 2^(e - 127) (0 is 2^-127, an f32 subnormal; 0xff is
 *   NaN, which is never stored), and x = 2^(e - 127) * e2m1(q), one f32
 *   product, exact unless it leaves f32's range. An MXFP4 checkpoint's
 *   codes and scale bytes are stored unchanged, so x is bit for bit the
 *   value the checkpoint reader's dequantization gives. */
#ifndef HALO_REF_QUANT_H
#define HALO_REF_QUANT_H

#include <stdint.h>

#include "kernels/dtype.h"

typedef struct {
	uint64_t values_row_bytes; /* a row's value bytes */
	uint64_t scales_offset;    /* where the scales region starts */
	uint64_t scales_row_bytes; /* a row's scale bytes */
} halo_quant_layout;

/* The layout of rows x k elements of quantized type t (k a multiple of its
 * block). */
halo_quant_layout halo_quant_layout_of(halo_dtype t, uint64_t rows, uint64_t k);

/* Quantizes rows [lo, hi) of src (rows x k floats, row-major) into the
 * tensor at dst (halo_dtype_bytes(t, rows, k) bytes). Each row depends
 * only on its own values, so any split of the rows across threads gives the
 * same bytes. Values must be finite. */
void halo_quantize_rows(halo_dtype t, const float *src, uint64_t rows, uint64_t k, uint64_t lo, uint64_t hi,
                        uint8_t *dst);

/* The value of an fp8 E4M3 ("fn") code: exact; NaN for 0x7f and 0xff. */
float halo_f8e4m3_to_f32(uint8_t q);
/* The code nearest v (ties to the even code), saturated to +-448 (finite v;
 * -0 and negative values that round to zero give 0x80). */
uint8_t halo_f8e4m3_from_f32(float v);

/* The value of an E2M1 code (its low 4 bits): exact. */
float halo_e2m1_to_f32(unsigned q);
/* The value of an E8M0 scale byte, 2^(e - 127): exact; NaN for 0xff. */
float halo_e8m0_to_f32(uint8_t e);

/* Dequantizes rows [lo, hi) of the tensor at src into dst (rows x k
 * floats, row-major; only rows [lo, hi) are written). */
void halo_dequantize_rows(halo_dtype t, const uint8_t *src, uint64_t rows, uint64_t k, uint64_t lo, uint64_t hi,
                          float *dst);

/* Int8 activations (a matmul's xq = 8, docs/quantization.md): rounds the n
 * values of x (n a multiple of 32) to what the kernels multiply, block by
 * block of 32: with a = the block's largest |x|, each x becomes d * q, d =
 * a * (1/127) and q the integer nearest x * halo_x_q8_inverse(a) (ties to
 * even), in -127..127; a block with a below HALO_X_Q8_MIN (zeros, or
 * values too small for the inverse) becomes zeros. Only f32 additions and
 * multiplications and one integer operation, each correctly rounded or
 * exact on every Vulkan device, so a kernel forms the same codes bit for
 * bit (a division and an fma are not: Vulkan allows 2.5 ulp for the one
 * and an unfused form of the other, and lavapipe's differed). out may be x. */
#define HALO_X_Q8_MIN 1e-30f
/* 127 / a for a >= HALO_X_Q8_MIN, as every backend computes it: the
 * integer guess 0x7ef311c7 - bits(a) for 1 / a, four Newton steps r (2 -
 * a r) each as three rounded operations, times 127. Within 2 ulp of
 * 127 / a. */
float halo_x_q8_inverse(float a);
void halo_round_x_q8(const float *x, float *out, uint64_t n);

#endif
