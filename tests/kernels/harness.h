/* Test harness for the Vulkan kernels: a validated device, kernel
 * instantiation + compilation + pipeline, one dispatch over operands that
 * live in a single buffer at 256-byte aligned offsets (as the runtime binds
 * them), and comparisons against the reference ops. Every failure prints
 * what failed and where; harness_close() fails on any validation message. */
#ifndef HALO_TESTS_KERNELS_HARNESS_H
#define HALO_TESTS_KERNELS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/kernel_variant.h"
#include "runtime/drivers/vulkan/vk_pipeline.h"

typedef struct harness harness;

/* Opens a device with validation on (exits with a message on failure). */
harness *harness_open(void);
/* The HALO_NEED_* bits (kernels/device_features.h) the device has. */
uint32_t harness_features(const harness *h);
/* Whether the device runs kernel k (it has every feature k needs). */
bool hk_supported(const harness *h, const kv_kernel *k);
/* Frees everything; returns 0 when no validation message was seen, else 1. */
int harness_close(harness *h);

typedef struct {
	kv_kernel k;
	vk_pipeline p;
} hkernel;

/* Instantiates, compiles (optimised), validates and creates the pipeline;
 * for a kernel the device cannot run (!hk_supported) it stops after the
 * validation, with no pipeline (hk_free still frees it). */
bool hk_build(harness *h, const kv_desc *d, hkernel *out);
void hk_free(harness *h, hkernel *k);

/* One operand in binding order: bytes uploaded from data before the dispatch;
 * when out, read back into data after it. */
typedef struct {
	void *data;
	size_t bytes;
	bool out;
} hop;

bool hk_run(harness *h, hkernel *k, hop *ops, int n_ops, uint32_t T, uint32_t pos);

/* ---- data and comparison ---- */

/* Uniform in [-amp, amp] without zero (|x| >= amp/64); deterministic per seed. */
void fill_random(float *x, size_t n, float amp, uint32_t *seed);
/* Rounds every element to f16 and back, so the reference sees the weights
 * the kernel sees; also writes the f16 bits to h16 (may be NULL). */
void round_f16(float *x, uint16_t *h16, size_t n);
/* A weight table of rows x len f32 values stored as wt (f32, f16 or a block
 * format, len whole blocks): x becomes the values wt holds (rounded to f16,
 * or quantized and dequantized by the reference, halo_dequantize_rows) and
 * the result is the bytes a kernel binds, *bytes long: x itself for f32,
 * else a new buffer the caller frees. Exits on out of memory. */
void *stored_table(halo_dtype wt, float *x, size_t rows, size_t len, size_t *bytes);
/* Max over i of |got - want| / max(|want|, floor); prints the worst element
 * and returns false when it exceeds tol. */
bool check_close(const char *what, const float *got, const float *want, size_t n, double tol,
		 double floor);
/* Bitwise equality of two float arrays. */
bool check_bitwise(const char *what, const float *a, const float *b, size_t n);
float *alloc_floats(size_t n); /* exits on out of memory */
/* Applies one chain op to v[0..n) with the reference ops (the kernels' oracle
 * for fused epilogues); extra is the op's other operand. */
void ref_apply_elem(const kv_elem_op *e, float *v, const float *extra, int64_t n);

#endif
