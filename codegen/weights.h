/* The weights section: where each module weight a node reads lives in the
 * bundle (a merged matrix's parts and folded norms are read, not stored) and how
 * its bytes are produced (from a checkpoint or from a seeded generator),
 * transformed and converted to the stored dtype.
 *
 * Ownership: cg_weights_new() returns a cg_weights that owns its layout and
 * its conversion buffers; it borrows the module and the source, which must
 * outlive it. cg_weights_free() releases it. */
#ifndef HALO_CODEGEN_WEIGHTS_H
#define HALO_CODEGEN_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ir/ir.h"

#define CG_WEIGHT_ALIGN 256 /* every tensor's offset: Vulkan's minStorageBufferOffsetAlignment bound */

/* Reads checkpoint tensor `name` of `numel` elements and shape `shape[rank]`,
 * converted to f32, into dst. Returns false with a message naming the
 * tensor when it is missing or mis-shaped. */
typedef bool (*cg_tensor_reader)(void *ctx, const char *name, const int64_t *shape, int rank, float *dst,
				 char *err, size_t errlen);
/* True when the checkpoint holds `name` (decides between hf and fallback). */
typedef bool (*cg_tensor_exists)(void *ctx, const char *name);
/* Dim 0 of checkpoint tensor `name` (its rows), -1 when it is missing or a
 * scalar: a stack_pad weight reads each piece at its own height. */
typedef int64_t (*cg_tensor_rows)(void *ctx, const char *name);

/* The block format checkpoint tensor `name` can be stored in as it is, its
 * codes and scales copied and no value rounded: HALO_F8E4M3_B128 for fp8
 * with block scales (--quant f8e4m3 keeps it), HALO_MXFP4 for packed FP4
 * with E8M0 scales (--quant mxfp4 keeps it); HALO_F32 for any other (its
 * values are read). */
typedef halo_dtype (*cg_tensor_stored_as)(void *ctx, const char *name);
/* Reads such a tensor of shape `shape[rank]` (its last dim a multiple of
 * t's block) in t's layout (runtime/drivers/ref/quant.h): its codes unchanged into
 * values, its scales into scales (f8e4m3_b128: each row's per-128 block
 * scales as f32; mxfp4: its E8M0 bytes unchanged). Returns false with a
 * message naming the tensor. */
typedef bool (*cg_tensor_read_stored)(void *ctx, const char *name, halo_dtype t, const int64_t *shape, int rank,
				      uint8_t *values, uint8_t *scales, char *err, size_t errlen);

typedef struct {
	cg_tensor_reader read;  /* NULL: seeded random weights */
	cg_tensor_exists exists;
	cg_tensor_rows rows;
	cg_tensor_stored_as stored_as; /* NULL: the source holds no tensor kept as stored */
	cg_tensor_read_stored read_stored;
	void *ctx;
	uint64_t seed;          /* random weights only */
	/* random weights only: each tensor's values repeat every `period` of
	 * them (even; 0: never), so that a benchmark bundle compresses to a few
	 * MB to travel; kernels' times do not depend on the values */
	uint64_t period;
	halo_dtype matrix_dtype; /* stored dtype of rank >= 2 weights (f32 or f16) */
	/* q8_0, q4_k, f8e4m3_b128 or mxfp4: the block format of linear-layer weights
	 * (--quant; codegen/quant_policy.h decides which); any other value:
	 * none. */
	halo_dtype quant;
} cg_weight_source;

typedef struct cg_weights cg_weights;

cg_weights *cg_weights_new(const ir_module *m, const cg_weight_source *src, char *err, size_t errlen);
void cg_weights_free(cg_weights *w);

/* Byte offset of each module weight in the section, indexed by weight id
 * (meaningful for stored weights only: cg_weights_stored). */
const uint64_t *cg_weights_offsets(const cg_weights *w);
/* Whether weight id has bytes of its own in the section: a live node reads
 * it. The others (a merged matrix's parts, norms folded into matrices) have
 * no offset and stay out of the manifest. */
bool cg_weights_stored(const cg_weights *w, int id);
/* Stored dtype of weight id. */
halo_dtype cg_weights_dtype(const cg_weights *w, int id);
/* Stored dtype of each module weight, indexed by weight id. */
const halo_dtype *cg_weights_dtypes(const cg_weights *w);
/* The weights --quant lowered from q4_k or f8e4m3_b128 to q8_0 because their
 * K is not a multiple of the format's block (256, 128): how many, and their names and shapes in buf (truncated
 * with "..." to fit). */
int cg_weights_quant_fallbacks(const cg_weights *w, char *buf, size_t len);
uint64_t cg_weights_size(const cg_weights *w);
/* Whether checkpoint tensor `name` is one the weights read: a resolved name,
 * an expert of a stacked one ("{e}" standing for a decimal index), or the
 * block-scale companion of either (name + "_scale_inv", or "B.scale" for
 * "B.weight": codegen/safetensors.h). */
bool cg_weights_reads(const cg_weights *w, const char *name);

/* The weight at `offset` must hold at least `rows` real rows (the rows an
 * n-gram table's hash reaches): a stack_pad weight whose pieces hold fewer
 * fails its conversion, naming it, instead of reading zeros. */
void cg_weights_need_rows(cg_weights *w, uint64_t offset, int64_t rows);

/* Called as the section is produced: bytes done so far of total. */
typedef void (*cg_progress_fn)(void *ctx, uint64_t done, uint64_t total);
void cg_weights_set_progress(cg_weights *w, cg_progress_fn fn, void *ctx);

/* A halo_bundle_fill_fn (codegen/bundle_write.h) producing the section. */
int cg_weights_fill(void *ctx, uint64_t offset, void *buf, size_t len, char *err, size_t errlen);

#endif
