/* Instance creation and physical device queries (runtime/vulkan internal). */
#ifndef HALO_VK_INSTANCE_H
#define HALO_VK_INSTANCE_H

#include "runtime/drivers/vulkan/vk_device.h"

/* Creates ctx->instance; with ctx->validation, also the validation layer and
 * ctx->messenger counting into ctx->validation_messages. */
bool vk_instance_create(vk_ctx *ctx, vk_error *err);
/* Destroys the messenger and the instance (either may be null). */
void vk_instance_destroy(vk_ctx *ctx);
/* Fills *info for dev; *queue_family gets a compute-capable family. */
bool vk_physical_describe(VkInstance inst, VkPhysicalDevice dev, vk_device_info *info, uint32_t *queue_family,
			  vk_error *err);
/* The instance's physical devices; *out malloc'd (caller frees). */
bool vk_physical_list(VkInstance inst, VkPhysicalDevice **out, uint32_t *n, vk_error *err);

/* Whether dev offers device extension name. */
bool vk_has_device_extension(VkPhysicalDevice dev, const char *name);

/* Whether environment variable name is set to "1" (HALO_VK_VALIDATION,
 * HALO_VK_DISABLE_COOPMAT). */
bool vk_env_flag(const char *name);

#endif
