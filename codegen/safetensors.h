/* Reader for HF safetensors checkpoints: a directory holding model.safetensors,
 * or model.safetensors.index.json and the shards it names. Files are mapped
 * read-only and every header is validated (dtype, shape, offsets against the
 * file) before any tensor is handed out.
 *
 * Tensors convert to f32 or f16 into the caller's buffer. A tensor `X` for
 * which a companion `X_scale_inv` exists is block-dequantised on the way
 * (128x128 blocks, as in DeepSeek/Qwen fp8 checkpoints): the companion's
 * presence decides, never the dtype. An F8_E4M3 tensor without a companion is
 * an error. */
#ifndef HALO_CODEGEN_SAFETENSORS_H
#define HALO_CODEGEN_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"

#define HALO_ST_MAX_RANK 8
#define HALO_ST_SCALE_SUFFIX "_scale_inv"
#define HALO_ST_SCALE_BLOCK 128

typedef struct {
	const char *name;
	halo_dtype dtype;
	int rank;
	int64_t shape[HALO_ST_MAX_RANK];
	uint64_t numel;
	const char *file; /* the file holding it, for messages */
	const uint8_t *data; /* numel * halo_dtype_size(dtype) bytes in the mapping */
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

/* Converts tensor `name` (dequantised if its scale companion exists) into
 * out, which holds `n` elements; n must equal the tensor's element count.
 * Returns 0, or -1 with a message naming the file and the tensor. */
int halo_st_read_f32(const halo_safetensors *st, const char *name, float *out, size_t n, char *err,
                     size_t errlen);
/* Same, to IEEE half bits (round to nearest even, overflow to infinity). */
int halo_st_read_f16(const halo_safetensors *st, const char *name, uint16_t *out, size_t n, char *err,
                     size_t errlen);

/* Whether tensor `name` is F8_E4M3 with its block-scale companion: the form
 * halo compile --quant f8e4m3 keeps as stored. */
bool halo_st_is_f8_blocks(const halo_safetensors *st, const char *name);
/* Such a tensor, 2-D [rows, cols] with cols a multiple of 128, in the
 * layout of f8e4m3_b128 (runtime/ref/quant.h): its codes unchanged into
 * values (rows * cols bytes), and its block scale, as f32, for each row's
 * 128-column blocks into scales (rows * cols / 128), so that scale * code is
 * the value halo_st_read_f32 gives. Returns 0, or -1 with a message naming
 * the file and the tensor (a NaN code or a scale that is not finite
 * included: the format stores finite weights). */
int halo_st_read_f8_blocks(const halo_safetensors *st, const char *name, uint8_t *values, float *scales, char *err,
                           size_t errlen);

#endif
