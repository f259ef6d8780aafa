#include "runtime/drivers/vulkan/vk_cmd.h"

#include "runtime/drivers/vulkan/vk_instance.h"

#include <string.h>
#include <time.h>

bool vk_cmd_create(vk_ctx *ctx, vk_cmd *out, vk_error *err)
{
	memset(out, 0, sizeof *out);
	VkCommandPoolCreateInfo pi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = ctx->queue_family,
	};
	VkResult r = vkCreateCommandPool(ctx->device, &pi, NULL, &out->pool);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkCreateCommandPool");
	VkCommandBufferAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = out->pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	r = vkAllocateCommandBuffers(ctx->device, &ai, &out->cb);
	if (r == VK_SUCCESS) {
		VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
		r = vkCreateFence(ctx->device, &fi, NULL, &out->fence);
		if (r != VK_SUCCESS) {
			vk_cmd_destroy(ctx, out);
			return vk_fail(err, r, "vkCreateFence");
		}
		return true;
	}
	vk_cmd_destroy(ctx, out);
	return vk_fail(err, r, "vkAllocateCommandBuffers");
}

void vk_cmd_destroy(vk_ctx *ctx, vk_cmd *cmd)
{
	if (cmd->fence)
		vkDestroyFence(ctx->device, cmd->fence, NULL);
	if (cmd->pool) /* frees cmd->cb with it */
		vkDestroyCommandPool(ctx->device, cmd->pool, NULL);
	memset(cmd, 0, sizeof *cmd);
}

bool vk_cmd_begin(vk_ctx *ctx, vk_cmd *cmd, vk_error *err)
{
	VkResult r = vkResetCommandBuffer(cmd->cb, 0);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkResetCommandBuffer");
	VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	r = vkBeginCommandBuffer(cmd->cb, &bi);
	return r == VK_SUCCESS || vk_fail(err, r, "vkBeginCommandBuffer");
}

bool vk_cmd_end(vk_cmd *cmd, vk_error *err)
{
	VkResult r = vkEndCommandBuffer(cmd->cb);
	return r == VK_SUCCESS || vk_fail(err, r, "vkEndCommandBuffer");
}

void vk_cmd_dispatch(vk_cmd *cmd, const vk_pipeline *p, VkPipeline pipeline, VkDescriptorSet set,
		     const void *push, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z)
{
	vkCmdBindPipeline(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
	vkCmdBindDescriptorSets(cmd->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set, 0,
				NULL);
	if (p->push_size)
		vkCmdPushConstants(cmd->cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p->push_size,
				   push);
	vkCmdDispatch(cmd->cb, groups_x, groups_y, groups_z);
}

static void memory_barrier(vk_cmd *cmd, VkPipelineStageFlags src, VkPipelineStageFlags dst,
			   VkAccessFlags src_access, VkAccessFlags dst_access)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = src_access,
		.dstAccessMask = dst_access,
	};
	vkCmdPipelineBarrier(cmd->cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vk_cmd_barrier(vk_cmd *cmd)
{
	memory_barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
		       VK_ACCESS_SHADER_WRITE_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
}

void vk_cmd_barrier_all(vk_cmd *cmd)
{
	memory_barrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
		       VK_ACCESS_MEMORY_WRITE_BIT,
		       VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT);
}

void vk_cmd_copy(vk_cmd *cmd, const vk_buffer *src, VkDeviceSize src_offset, const vk_buffer *dst,
		 VkDeviceSize dst_offset, VkDeviceSize size)
{
	VkBufferCopy region = {.srcOffset = src_offset, .dstOffset = dst_offset, .size = size};
	vkCmdCopyBuffer(cmd->cb, src->buffer, dst->buffer, 1, &region);
}

/* How long a wait polls its fence before it blocks. A decode step takes a
 * fraction of a millisecond on a large GPU, and a blocking wait adds the
 * thread's wake-up to each, which on a loaded host is long and uneven (on
 * the lent H100s Vulkan's decode spread 20-35% between repetitions where
 * cuda's, whose synchronisation spins by default, stayed within 1%;
 * polling measured 1.09-1.13x the blocking wait's tokens a second on an
 * H100, 1.6k a second, with a steadier rate: bench/results-quant.txt,
 * 2026-12-06). Longer work (a prefill, an upload) blocks
 * after this much polling. A CPU device (lavapipe) never polls: its work
 * runs on the host's cores, which polling would take from it.
 * HALO_VK_NO_SPIN=1 blocks at once, to compare the two on one device. */
#define SPIN_NS 2000000

static int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static bool wait_fence(vk_ctx *ctx, VkFence fence, vk_error *err)
{
	int64_t spin = ctx->info.type == VK_PHYSICAL_DEVICE_TYPE_CPU || vk_env_flag("HALO_VK_NO_SPIN") ? 0 : SPIN_NS;
	for (int64_t start = now_ns(); now_ns() - start < spin;) {
		VkResult r = vkGetFenceStatus(ctx->device, fence);
		if (r == VK_SUCCESS)
			return true;
		if (r != VK_NOT_READY)
			return vk_fail(err, r, "vkGetFenceStatus");
	}
	VkResult r = vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, UINT64_MAX);
	return r == VK_SUCCESS || vk_fail(err, r, "vkWaitForFences");
}

bool vk_cmd_submit_wait(vk_ctx *ctx, vk_cmd *cmd, vk_error *err)
{
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cmd->cb,
	};
	pthread_mutex_lock(&ctx->queue_lock);
	VkResult r = vkQueueSubmit(ctx->queue, 1, &si, cmd->fence);
	pthread_mutex_unlock(&ctx->queue_lock);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkQueueSubmit");
	if (!wait_fence(ctx, cmd->fence, err))
		return false;
	r = vkResetFences(ctx->device, 1, &cmd->fence);
	return r == VK_SUCCESS || vk_fail(err, r, "vkResetFences");
}

bool vk_timer_create(vk_ctx *ctx, uint32_t count, vk_timer *out, vk_error *err)
{
	memset(out, 0, sizeof *out);
	if (ctx->info.timestamp_period_ns <= 0.0f)
		return vk_failf(err, "%s: the compute queue has no timestamps", ctx->info.name);
	VkQueryPoolCreateInfo qi = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = count,
	};
	VkResult r = vkCreateQueryPool(ctx->device, &qi, NULL, &out->pool);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkCreateQueryPool");
	out->count = count;
	out->period_ns = ctx->info.timestamp_period_ns;
	return true;
}

void vk_timer_destroy(vk_ctx *ctx, vk_timer *t)
{
	if (t->pool)
		vkDestroyQueryPool(ctx->device, t->pool, NULL);
	memset(t, 0, sizeof *t);
}

void vk_cmd_timer_reset(vk_cmd *cmd, const vk_timer *t)
{
	vkCmdResetQueryPool(cmd->cb, t->pool, 0, t->count);
}

void vk_cmd_timestamp(vk_cmd *cmd, const vk_timer *t, uint32_t slot)
{
	vkCmdWriteTimestamp(cmd->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, t->pool, slot);
}

bool vk_timer_elapsed_ns(vk_ctx *ctx, const vk_timer *t, uint32_t first, uint32_t last,
			 double *ns, vk_error *err)
{
	if (first >= t->count || last >= t->count)
		return vk_failf(err, "vk_timer_elapsed_ns: slot %u or %u out of %u", first, last,
				t->count);
	uint64_t a, b;
	VkResult r = vkGetQueryPoolResults(ctx->device, t->pool, first, 1, sizeof a, &a, sizeof a,
					   VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
	if (r == VK_SUCCESS)
		r = vkGetQueryPoolResults(ctx->device, t->pool, last, 1, sizeof b, &b, sizeof b,
					  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkGetQueryPoolResults");
	*ns = (double)(b - a) * t->period_ns;
	return true;
}
