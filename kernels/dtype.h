/* Element types shared by the compiler, the bundle and every backend.
 * The numeric values are part of the bundle format: append only. */
#ifndef HALO_DTYPE_H
#define HALO_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
	HALO_F32 = 0,
	HALO_F16 = 1,
	HALO_BF16 = 2,
	HALO_I32 = 3,
	HALO_I64 = 4,
	HALO_F8E4M3 = 5,
	/* Block-quantized weight formats (runtime/drivers/ref/quant.h says what their
	 * bytes mean): elements come in blocks along a row, never one alone. */
	HALO_Q8_0 = 6,
	HALO_Q4_K = 7,
	/* fp8 E4M3 values with an f32 scale per row and 128-block along K: the
	 * form of fp8 checkpoints (DeepSeek, Qwen FP8), kept as stored. Not
	 * HALO_F8E4M3, the plain element type a checkpoint's tensor has. */
	HALO_F8E4M3_B128 = 8,
	/* OCP MX FP4: E2M1 values with an E8M0 (power of two) scale per row and
	 * 32-block along K: the form of MXFP4 checkpoints (DeepSeek V4-Flash's
	 * routed experts), kept as stored. */
	HALO_MXFP4 = 9,
	HALO_DTYPE_COUNT
} halo_dtype;

/* Bytes per element of a plain type; 0 for block formats, whose elements
 * have no whole size of their own (use halo_dtype_bytes). */
size_t halo_dtype_size(halo_dtype t);
/* Elements per block, the granularity of a row's length: 1 for plain
 * types, 32 for q8_0, q4_k and mxfp4, 128 for f8e4m3_b128. (q4_k's scales
 * come per super-block of 256; a row's last super-block may hold fewer
 * sub-blocks of 32, runtime/drivers/ref/quant.h.) */
size_t halo_dtype_block(halo_dtype t);
/* Bytes of `rows` rows of k elements each (k a multiple of
 * halo_dtype_block(t)): rows * (the row's values + its scales); SIZE_MAX
 * when that does not fit a size_t (no real tensor's size). */
size_t halo_dtype_bytes(halo_dtype t, size_t rows, size_t k);
/* True for the block-quantized formats. */
bool halo_dtype_is_quant(halo_dtype t);
/* "f32", "f16", ...; NULL for out-of-range values. */
const char *halo_dtype_name(halo_dtype t);
/* Parses a name produced by halo_dtype_name(). */
bool halo_dtype_from_name(const char *name, halo_dtype *out);

#endif
