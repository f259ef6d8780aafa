/* Compute pipelines and their descriptor sets (kernels/vulkan/README.md, the
 * kernel ABI): set 0 holds n_bindings storage buffers, binding i = operand i;
 * one push-constant range of push_size bytes at offset 0.
 *
 * A vk_pipeline owns its shader module, pipeline, pipeline layout and set
 * layout; a vk_descriptors owns a descriptor pool and the sets allocated from
 * it. Destroy both before the ctx. */
#ifndef HALO_VK_PIPELINE_H
#define HALO_VK_PIPELINE_H

#include "runtime/drivers/vulkan/vk_device.h"

#include <stddef.h>

/* Steps of up to this many tokens (decode, speculative verification, a
 * draft head's steps) run pipelines specialised for their T: the kernels'
 * T_SPEC constant (kernels/vulkan/prelude.glsl). Larger steps (prefill, of
 * any T) share the generic pipeline. */
#define VK_PIPELINE_SPEC_T_MAX 8

typedef struct {
	VkShaderModule module;
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout layout;
	VkPipeline pipeline;                     /* generic: T from the push constant */
	VkPipeline by_t[VK_PIPELINE_SPEC_T_MAX]; /* by_t[T - 1]: specialised for T, made on first use */
	uint32_t n_bindings;
	uint32_t push_size;
} vk_pipeline;

/* spirv: n_words 32-bit words with entry point "main". Creates the generic
 * pipeline only. */
bool vk_pipeline_create(vk_ctx *ctx, const uint32_t *spirv, size_t n_words, uint32_t n_bindings,
			uint32_t push_size, vk_pipeline *out, vk_error *err);
/* The pipeline to dispatch for a step of T tokens: for 1 <= T <=
 * VK_PIPELINE_SPEC_T_MAX the one specialised for T (created now if it does
 * not exist yet, owned by p), else the generic one. Both run the same code
 * for that T and give the same bits; the specialised one compiles only that
 * T's paths. Thread-safe: the first use makes it under ctx's pipeline_lock. */
bool vk_pipeline_for_t(vk_ctx *ctx, vk_pipeline *p, uint32_t T, VkPipeline *out, vk_error *err);
void vk_pipeline_destroy(vk_ctx *ctx, vk_pipeline *p); /* zeroes *p; a zeroed one is ok */
/* The driver's compile statistics of pipeline (a ctx made with
 * vk_ctx_options.pipeline_stats on a device with
 * VK_KHR_pipeline_executable_properties), as "name value, name value, ..."
 * in out (NUL-terminated, cut at outlen): NVIDIA's include the register
 * count, RADV's the VGPRs, SGPRs and waves per SIMD. False, with out empty,
 * where there are none. */
bool vk_pipeline_statistics(vk_ctx *ctx, VkPipeline pipeline, char *out, size_t outlen);

typedef struct {
	VkDescriptorPool pool;
} vk_descriptors;

/* Room for max_sets sets with max_buffers storage-buffer descriptors in all. */
bool vk_descriptors_create(vk_ctx *ctx, uint32_t max_sets, uint32_t max_buffers,
			   vk_descriptors *out, vk_error *err);
void vk_descriptors_destroy(vk_ctx *ctx, vk_descriptors *d);

/* One operand binding: a range of a buffer (offset a multiple of the device's
 * minStorageBufferOffsetAlignment; the compiler plans 256-byte offsets). */
typedef struct {
	VkBuffer buffer;
	VkDeviceSize offset;
	VkDeviceSize range;
} vk_binding;

/* Allocates a set for p from d and points binding i at b[i], i < p->n_bindings. */
bool vk_descriptors_bind(vk_ctx *ctx, vk_descriptors *d, const vk_pipeline *p,
			 const vk_binding *b, VkDescriptorSet *out, vk_error *err);

#endif
