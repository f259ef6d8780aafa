/* Device listing and selection, the logical device and its compute queue. */
#include "runtime/drivers/vulkan/vk_device.h"

#include "runtime/drivers/vulkan/vk_instance.h"
#include "kernels/device_features.h"

#include <stdlib.h>

bool vk_list_devices(vk_device_info **out, int *n, vk_error *err)
{
	vk_ctx tmp = {0};
	*out = NULL;
	*n = 0;
	if (!vk_instance_create(&tmp, err))
		return false;
	VkPhysicalDevice *devs = NULL;
	uint32_t count = 0;
	bool ok = vk_physical_list(tmp.instance, &devs, &count, err);
	vk_device_info *infos = ok ? calloc(count ? count : 1, sizeof *infos) : NULL;
	if (ok && !infos)
		ok = vk_failf(err, "vk_list_devices: out of memory");
	for (uint32_t i = 0; ok && i < count; i++) {
		uint32_t family;
		ok = vk_physical_describe(tmp.instance, devs[i], &infos[i], &family, err);
	}
	free(devs);
	vk_instance_destroy(&tmp);
	if (!ok) {
		free(infos);
		return false;
	}
	*out = infos;
	*n = (int)count;
	return true;
}

static int pick_device(const VkPhysicalDevice *devs, uint32_t n, int want)
{
	if (want >= 0)
		return (uint32_t)want < n ? want : -1;
	for (uint32_t i = 0; i < n; i++) {
		VkPhysicalDeviceProperties p;
		vkGetPhysicalDeviceProperties(devs[i], &p);
		if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)
			return (int)i;
	}
	return n > 0 ? 0 : -1;
}

static bool select_physical(vk_ctx *ctx, int want, vk_error *err)
{
	VkPhysicalDevice *devs = NULL;
	uint32_t n = 0;
	if (!vk_physical_list(ctx->instance, &devs, &n, err))
		return false;
	int idx = pick_device(devs, n, want);
	if (idx < 0) {
		free(devs);
		return vk_failf(err, "no Vulkan device %d (found %u device(s))", want, n);
	}
	ctx->phys = devs[idx];
	free(devs);
	vkGetPhysicalDeviceMemoryProperties(ctx->phys, &ctx->mem);
	return vk_physical_describe(ctx->instance, ctx->phys, &ctx->info, &ctx->queue_family, err);
}

static bool create_logical(vk_ctx *ctx, vk_error *err)
{
	float prio = 1.0f;
	VkDeviceQueueCreateInfo qi = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = ctx->queue_family,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	/* Cooperative matrices (with the f16 arithmetic and memory model their
	 * kernels use) and integer dot products are enabled where the device
	 * has them, so the kernel variants that need them can run
	 * (kernels/device_features.h). */
	const char *exts[3];
	uint32_t n_ext = 0;
	void *next = NULL;
	/* with the memory model on, a device-scope barrier (qsa_select.comp's
	 * memoryBarrierBuffer) needs its device scope too: VUID-RuntimeSpirv-
	 * vulkanMemoryModel-06265, which NVIDIA's validation run reported */
	VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
						 .shaderFloat16 = VK_TRUE,
						 .vulkanMemoryModel = VK_TRUE,
						 .vulkanMemoryModelDeviceScope = VK_TRUE};
	VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
		.pNext = &v12,
		.cooperativeMatrix = VK_TRUE};
	VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR int_dot = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR,
		.shaderIntegerDotProduct = VK_TRUE};
	if (ctx->info.features & HALO_NEED_COOPMAT_NV) {
		exts[n_ext++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
		next = &coopmat;
	}
	if (ctx->info.features & HALO_NEED_INT_DOT) {
		exts[n_ext++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
		int_dot.pNext = next;
		next = &int_dot;
	}
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR exec_info = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
		.pipelineExecutableInfo = VK_TRUE};
	if (ctx->pipeline_stats) {
		exts[n_ext++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
		exec_info.pNext = next;
		next = &exec_info;
	}
	VkDeviceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.pNext = next,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qi,
		.enabledExtensionCount = n_ext,
		.ppEnabledExtensionNames = n_ext ? exts : NULL,
	};
	VkResult r = vkCreateDevice(ctx->phys, &ci, NULL, &ctx->device);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkCreateDevice");
	vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
	return true;
}

bool vk_ctx_create(const vk_ctx_options *opt, vk_ctx **out, vk_error *err)
{
	*out = NULL;
	vk_ctx *ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return vk_failf(err, "vk_ctx_create: out of memory");
	pthread_mutex_init(&ctx->queue_lock, NULL);
	pthread_mutex_init(&ctx->pipeline_lock, NULL);
	ctx->validation = opt->validation || vk_env_flag("HALO_VK_VALIDATION");
	if (!vk_instance_create(ctx, err) || !select_physical(ctx, opt->device_index, err)) {
		vk_ctx_destroy(ctx);
		return false;
	}
	ctx->pipeline_stats =
	    opt->pipeline_stats && vk_has_device_extension(ctx->phys, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
	if (!create_logical(ctx, err)) {
		vk_ctx_destroy(ctx);
		return false;
	}
	*out = ctx;
	return true;
}

void vk_ctx_destroy(vk_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->device) {
		vkDeviceWaitIdle(ctx->device);
		vkDestroyDevice(ctx->device, NULL);
	}
	vk_instance_destroy(ctx);
	pthread_mutex_destroy(&ctx->queue_lock);
	pthread_mutex_destroy(&ctx->pipeline_lock);
	free(ctx);
}

int vk_ctx_memory_type(const vk_ctx *ctx, uint32_t type_bits, VkMemoryPropertyFlags want)
{
	for (uint32_t i = 0; i < ctx->mem.memoryTypeCount; i++)
		if ((type_bits & (1u << i)) && (ctx->mem.memoryTypes[i].propertyFlags & want) == want)
			return (int)i;
	return -1;
}
