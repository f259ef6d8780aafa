/* Storage buffers: device-local working buffers and host-visible staging
 * buffers, and upload/download through a temporary staging buffer.
 * A vk_buffer owns its VkBuffer and VkDeviceMemory; vk_buffer_destroy frees
 * both. Host-visible buffers stay mapped for their whole life (`mapped`). */
#ifndef HALO_VK_BUFFER_H
#define HALO_VK_BUFFER_H

#include "runtime/drivers/vulkan/vk_device.h"

#include <stddef.h>

typedef struct {
	VkBuffer buffer;
	VkDeviceMemory memory;
	VkDeviceSize size;
	void *mapped; /* non-NULL for host-visible buffers */
} vk_buffer;

typedef enum {
	VK_BUFFER_DEVICE,  /* device-local: the buffers kernels work on */
	VK_BUFFER_STAGING, /* host-visible and coherent: uploads, downloads */
} vk_buffer_kind;

/* Usable as storage buffer and as transfer source and destination. */
bool vk_buffer_create(vk_ctx *ctx, VkDeviceSize size, vk_buffer_kind kind, vk_buffer *out,
		      vk_error *err);
void vk_buffer_destroy(vk_ctx *ctx, vk_buffer *b); /* zeroes *b; a zeroed buffer is ok */

/* Copies n bytes host -> dst at offset (and dst at offset -> host) through a
 * staging buffer, with barriers ordering the copy after earlier device work
 * and before later dispatches; waits for completion. */
bool vk_buffer_upload(vk_ctx *ctx, vk_buffer *dst, VkDeviceSize offset, const void *src, size_t n,
		      vk_error *err);
bool vk_buffer_download(vk_ctx *ctx, const vk_buffer *src, VkDeviceSize offset, void *dst,
			size_t n, vk_error *err);

#endif
