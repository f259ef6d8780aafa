/* The read-bandwidth ceiling of a Vulkan device: a streaming read of a few
 * GB by a plain compute kernel (16-byte loads, grid-stride, one sum written
 * per lane so nothing is optimised away). Every bandwidth figure the
 * benchmarks report is set beside this one, measured in the same process. */
#ifndef HALO_BENCH_READ_CEILING_H
#define HALO_BENCH_READ_CEILING_H

#include <stddef.h>
#include <stdint.h>

#include "codegen/glsl_compile.h"
#include "runtime/drivers/vulkan/vk_device.h"

/* The streaming read: 256 lanes a workgroup, grid-stride over uvec4s
 * src[off, off + n) of binding 0, 4 independent 16-byte loads in flight per
 * lane and step, one word written per lane at dst[dst_off + lane] of
 * binding 1 (so nothing is optimised away). Push constants: read_stream_push. */
extern const char *const read_stream_src;
typedef struct {
	uint32_t off, n, dst_off;
} read_stream_push;

/* Median over `reps` timed reads of `bytes` bytes (rounded down to 16), in
 * GB/s (1e9 bytes per second); exits with a message on a Vulkan error. */
double read_ceiling_gbps(vk_ctx *ctx, glsl_compiler *cc, size_t bytes, int reps);

#endif
