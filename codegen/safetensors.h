/* Reader for HF safetensors checkpoints: a directory holding model.safetensors,
 * or model.safetensors.index.json and the shards it names. Files are mapped
 * read-only and every header is validated (dtype, shape, offsets against the
 * file) before any tensor is handed out.
 *
 * Tensors convert to f32 or f16 into the caller's buffer. A tensor `X` with
 * a block-scale companion is dequantised on the way: the companion is
 * `X_scale_inv` (HF and vLLM names) or, for `X` = `B.weight`, `B.scale`
 * (DeepSeek's upstream names, V3 and V4 alike); despite "inv", it
 * multiplies. Its presence decides, never the dtype, except that:
 *  - an F8_E4M3 tensor without a companion is an error;
 *  - a tensor stored I8, U8 or F4 is packed FP4 (E2M1, two values a byte,
 *    the even value in the low nibble: MXFP4 as DeepSeek V4 ships its routed
 *    experts) and needs its companion, one scale per 32 values of a row.
 * Every other companion holds one scale per 128x128 block (DeepSeek/Qwen fp8
 * checkpoints), partial blocks at the edges. A scale is F32, BF16, F16,
 * F8_E8M0 or U8 (E8M0 bytes: 2^(byte - 127)), and must be finite; a
 * dequantised value must be finite too. docs/quantization.md says more. */
#ifndef HALO_CODEGEN_SAFETENSORS_H
#define HALO_CODEGEN_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HALO_ST_MAX_RANK 8
#define HALO_ST_SCALE_SUFFIX "_scale_inv"   /* X -> X_scale_inv */
#define HALO_ST_UPSTREAM_SCALE_SUFFIX ".scale" /* B.weight -> B.scale */
#define HALO_ST_SCALE_BLOCK 128
#define HALO_ST_FP4_BLOCK 32 /* values of a row per MXFP4 scale */

/* A checkpoint tensor's element type, as safetensors names it. Not a
 * halo_dtype: several of these (E8M0 scales, packed FP4 bytes) exist only in
 * checkpoints and are converted before anything reaches a bundle. */
typedef enum {
	HALO_ST_F32,
	HALO_ST_F16,
	HALO_ST_BF16,
	HALO_ST_F8_E4M3,
	HALO_ST_F8_E8M0, /* a power of two 2^(byte - 127); 0xff is NaN */
	HALO_ST_I8,      /* bytes of packed FP4 (DeepSeek V4's experts) */
	HALO_ST_U8,      /* packed FP4 bytes, or E8M0 bytes as a scale */
	HALO_ST_F4,      /* E2M1, two a byte; the shape counts values */
	HALO_ST_I32,
	HALO_ST_I64,
} halo_st_dtype;

/* "F32", "F8_E8M0", ...: the safetensors name. */
const char *halo_st_dtype_name(halo_st_dtype t);

typedef struct {
	const char *name;
	halo_st_dtype dtype;
	int rank;
	int64_t shape[HALO_ST_MAX_RANK]; /* as the header says */
	uint64_t numel;   /* elements of shape (F4: values; I8, U8: bytes) */
	uint64_t bytes;   /* its data's size */
	const char *file; /* the file holding it, for messages */
	const uint8_t *data; /* `bytes` bytes in the mapping */
} halo_st_tensor;

typedef struct halo_safetensors halo_safetensors;

/* Opens a checkpoint directory (index + shards, or model.safetensors).
 * NULL on failure, with a message naming the file (and tensor) in err.
 * Free with halo_st_close(), which also unmaps every tensor's data. */
halo_safetensors *halo_st_open_dir(const char *dir, char *err, size_t errlen);
/* Opens one .safetensors file. Same ownership. */
halo_safetensors *halo_st_open_file(const char *path, char *err, size_t errlen);
void halo_st_close(halo_safetensors *st);

/* Tensors sorted by name; pointers stay valid until halo_st_close(). */
size_t halo_st_count(const halo_safetensors *st);
const halo_st_tensor *halo_st_at(const halo_safetensors *st, size_t i);
/* NULL when absent. */
const halo_st_tensor *halo_st_find(const halo_safetensors *st, const char *name);

/* The shape of t's values, the one a model file declares: t's shape, but a
 * tensor stored I8 or U8 (packed FP4, two values a byte) holds twice its
 * last dim. Returns the rank; *numel (when not NULL) gets the value count. */
int halo_st_values_shape(const halo_st_tensor *t, int64_t shape[HALO_ST_MAX_RANK], uint64_t *numel);

/* Converts tensor `name` (dequantised if its scale companion exists) into
 * out, which holds `n` elements; n must equal its value count
 * (halo_st_values_shape). Returns 0, or -1 with a message naming the file,
 * the tensor and what was expected. */
int halo_st_read_f32(const halo_safetensors *st, const char *name, float *out, size_t n, char *err,
                     size_t errlen);
/* Same, to IEEE half bits (round to nearest even, overflow to infinity). */
int halo_st_read_f16(const halo_safetensors *st, const char *name, uint16_t *out, size_t n, char *err,
                     size_t errlen);

/* Whether tensor `name` is F8_E4M3 with its block-scale companion (either
 * name, not both): the form halo compile --quant f8e4m3 keeps as stored. */
bool halo_st_is_f8_blocks(const halo_safetensors *st, const char *name);
/* Such a tensor, 2-D [rows, cols] with cols a multiple of 128, in the
 * layout of f8e4m3_b128 (runtime/drivers/ref/quant.h): its codes unchanged into
 * values (rows * cols bytes), and its block scale, as f32 (an E8M0 scale is
 * its power of two exactly), for each row's 128-column blocks into scales
 * (rows * cols / 128), so that scale * code is the value halo_st_read_f32
 * gives. Returns 0, or -1 with a message naming
 * the file and the tensor (a NaN code or a scale that is not finite
 * included: the format stores finite weights). */
int halo_st_read_f8_blocks(const halo_safetensors *st, const char *name, uint8_t *values, float *scales, char *err,
                           size_t errlen);

/* Whether tensor `name` is packed FP4 (I8, U8 or F4) with an E8M0 scale
 * companion (F8_E8M0 or U8): the form halo compile --quant mxfp4 keeps as
 * stored. One with F32/BF16/F16 scales is not (its values are read). */
bool halo_st_is_mxfp4(const halo_safetensors *st, const char *name);
/* Such a tensor, 2-D [rows, cols] values with cols a multiple of 32, in the
 * layout of mxfp4 (runtime/drivers/ref/quant.h): its bytes unchanged into values
 * (rows * cols / 2), its scale bytes unchanged into scales (rows * cols /
 * 32), so that each value dequantizes to what halo_st_read_f32 gives.
 * Returns 0, or -1 with a message naming the file and the tensor (the E8M0
 * NaN code 0xff, or a value whose product with its scale is not finite in
 * f32, included). */
int halo_st_read_mxfp4(const halo_safetensors *st, const char *name, uint8_t *values, uint8_t *scales, char *err,
                       size_t errlen);

#endif
