#include "runtime/drivers/vulkan/vk_buffer.h"

#include "runtime/drivers/vulkan/vk_cmd.h"

#include <string.h>

static bool allocate_memory(vk_ctx *ctx, vk_buffer *b, vk_buffer_kind kind, vk_error *err)
{
	VkMemoryRequirements req;
	vkGetBufferMemoryRequirements(ctx->device, b->buffer, &req);
	VkMemoryPropertyFlags want = kind == VK_BUFFER_STAGING
		? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
		: VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	/* Host reads of results (logits every step) are far faster from cached
	 * memory than from write-combined memory; take it where it exists. */
	int type = kind == VK_BUFFER_STAGING
		? vk_ctx_memory_type(ctx, req.memoryTypeBits, want | VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
		: -1;
	if (type < 0)
		type = vk_ctx_memory_type(ctx, req.memoryTypeBits, want);
	if (type < 0)
		return vk_failf(err, "vkAllocateMemory: no memory type with flags 0x%x for a buffer",
				(unsigned)want);
	VkMemoryAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.allocationSize = req.size,
		.memoryTypeIndex = (uint32_t)type,
	};
	VkResult r = vkAllocateMemory(ctx->device, &ai, NULL, &b->memory);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkAllocateMemory");
	r = vkBindBufferMemory(ctx->device, b->buffer, b->memory, 0);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkBindBufferMemory");
	if (kind == VK_BUFFER_STAGING) {
		r = vkMapMemory(ctx->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped);
		if (r != VK_SUCCESS)
			return vk_fail(err, r, "vkMapMemory");
	}
	return true;
}

bool vk_buffer_create(vk_ctx *ctx, VkDeviceSize size, vk_buffer_kind kind, vk_buffer *out,
		      vk_error *err)
{
	memset(out, 0, sizeof *out);
	if (size == 0)
		return vk_failf(err, "vk_buffer_create: a buffer of 0 bytes was requested");
	VkBufferCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = size,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkResult r = vkCreateBuffer(ctx->device, &ci, NULL, &out->buffer);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkCreateBuffer");
	out->size = size;
	if (!allocate_memory(ctx, out, kind, err)) {
		vk_buffer_destroy(ctx, out);
		return false;
	}
	return true;
}

void vk_buffer_destroy(vk_ctx *ctx, vk_buffer *b)
{
	if (b->mapped)
		vkUnmapMemory(ctx->device, b->memory);
	if (b->buffer)
		vkDestroyBuffer(ctx->device, b->buffer, NULL);
	if (b->memory)
		vkFreeMemory(ctx->device, b->memory, NULL);
	memset(b, 0, sizeof *b);
}

static bool check_range(const vk_buffer *b, VkDeviceSize offset, size_t n, const char *what,
			vk_error *err)
{
	if (n == 0 || offset > b->size || n > b->size - offset)
		return vk_failf(err, "%s: %zu bytes at offset %llu do not fit a buffer of %llu bytes",
				what, n, (unsigned long long)offset, (unsigned long long)b->size);
	return true;
}

/* Records src -> dst copy between a barrier after all earlier transfer and
 * compute work and a barrier before later compute and host access. */
static bool copy_once(vk_ctx *ctx, VkBuffer src, VkDeviceSize src_off, VkBuffer dst,
		      VkDeviceSize dst_off, VkDeviceSize n, vk_error *err)
{
	vk_cmd cmd;
	if (!vk_cmd_create(ctx, &cmd, err))
		return false;
	bool ok = vk_cmd_begin(ctx, &cmd, err);
	if (ok) {
		vk_cmd_barrier_all(&cmd);
		VkBufferCopy region = {.srcOffset = src_off, .dstOffset = dst_off, .size = n};
		vkCmdCopyBuffer(cmd.cb, src, dst, 1, &region);
		vk_cmd_barrier_all(&cmd);
		ok = vk_cmd_end(&cmd, err) && vk_cmd_submit_wait(ctx, &cmd, err);
	}
	vk_cmd_destroy(ctx, &cmd);
	return ok;
}

bool vk_buffer_upload(vk_ctx *ctx, vk_buffer *dst, VkDeviceSize offset, const void *src, size_t n,
		      vk_error *err)
{
	if (!check_range(dst, offset, n, "vk_buffer_upload", err))
		return false;
	vk_buffer staging;
	if (!vk_buffer_create(ctx, n, VK_BUFFER_STAGING, &staging, err))
		return false;
	memcpy(staging.mapped, src, n);
	bool ok = copy_once(ctx, staging.buffer, 0, dst->buffer, offset, n, err);
	vk_buffer_destroy(ctx, &staging);
	return ok;
}

bool vk_buffer_download(vk_ctx *ctx, const vk_buffer *src, VkDeviceSize offset, void *dst,
			size_t n, vk_error *err)
{
	if (!check_range(src, offset, n, "vk_buffer_download", err))
		return false;
	vk_buffer staging;
	if (!vk_buffer_create(ctx, n, VK_BUFFER_STAGING, &staging, err))
		return false;
	bool ok = copy_once(ctx, src->buffer, offset, staging.buffer, 0, n, err);
	if (ok)
		memcpy(dst, staging.mapped, n);
	vk_buffer_destroy(ctx, &staging);
	return ok;
}
