/* Command streams: record dispatches and barriers once, submit and wait as
 * often as needed (the runtime replays recorded streams). Timestamp timers.
 *
 * A vk_cmd owns a command pool, one command buffer and a fence; a vk_timer
 * owns a timestamp query pool. Both are freed by their destroy function and
 * must be destroyed before their ctx. */
#ifndef HALO_VK_CMD_H
#define HALO_VK_CMD_H

#include "runtime/drivers/vulkan/vk_buffer.h"
#include "runtime/drivers/vulkan/vk_pipeline.h"

typedef struct {
	VkCommandPool pool;
	VkCommandBuffer cb;
	VkFence fence;
} vk_cmd;

bool vk_cmd_create(vk_ctx *ctx, vk_cmd *out, vk_error *err);
void vk_cmd_destroy(vk_ctx *ctx, vk_cmd *cmd); /* zeroes *cmd; a zeroed cmd is ok */

/* Starts a new recording, dropping the previous one. */
bool vk_cmd_begin(vk_ctx *ctx, vk_cmd *cmd, vk_error *err);
bool vk_cmd_end(vk_cmd *cmd, vk_error *err);

/* Binds pipeline (p's generic one or a specialisation of it,
 * vk_pipeline_for_t) and set, pushes push_size bytes (p's push range) and
 * dispatches groups_x * groups_y * groups_z workgroups. */
void vk_cmd_dispatch(vk_cmd *cmd, const vk_pipeline *p, VkPipeline pipeline, VkDescriptorSet set,
		     const void *push, uint32_t groups_x, uint32_t groups_y, uint32_t groups_z);
/* Compute -> compute: shader writes before it are visible to shader reads
 * and writes after it. The compiler decides where these go. */
void vk_cmd_barrier(vk_cmd *cmd);
/* Everything -> everything (transfers, dispatches, host reads). */
void vk_cmd_barrier_all(vk_cmd *cmd);

/* Records a copy of size bytes between two buffers; order it against
 * dispatches with vk_cmd_barrier_all(). */
void vk_cmd_copy(vk_cmd *cmd, const vk_buffer *src, VkDeviceSize src_offset, const vk_buffer *dst,
		 VkDeviceSize dst_offset, VkDeviceSize size);

/* Submits the ended recording to the ctx queue and waits for it. */
bool vk_cmd_submit_wait(vk_ctx *ctx, vk_cmd *cmd, vk_error *err);

typedef struct {
	VkQueryPool pool;
	uint32_t count;
	float period_ns;
} vk_timer;

/* count timestamp slots; fails when the compute queue has no timestamps. */
bool vk_timer_create(vk_ctx *ctx, uint32_t count, vk_timer *out, vk_error *err);
void vk_timer_destroy(vk_ctx *ctx, vk_timer *t);
/* Resets all slots; record it before the first vk_cmd_timestamp of a stream. */
void vk_cmd_timer_reset(vk_cmd *cmd, const vk_timer *t);
/* Writes slot `slot` after all earlier commands completed. */
void vk_cmd_timestamp(vk_cmd *cmd, const vk_timer *t, uint32_t slot);
/* Nanoseconds between two written slots of a finished submission. */
bool vk_timer_elapsed_ns(vk_ctx *ctx, const vk_timer *t, uint32_t first, uint32_t last,
			 double *ns, vk_error *err);

#endif
