#include "runtime/drivers/vulkan/vk_instance.h"

#include "kernels/device_features.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char validation_layer[] = "VK_LAYER_KHRONOS_validation";

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
						 VkDebugUtilsMessageTypeFlagsEXT types,
						 const VkDebugUtilsMessengerCallbackDataEXT *data,
						 void *user)
{
	vk_ctx *ctx = user;
	ctx->validation_messages++;
	const char *sev = severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning";
	fprintf(stderr, "[vulkan validation %s] %s\n", sev, data->pMessage);
	return VK_FALSE;
}

static void messenger_info(vk_ctx *ctx, VkDebugUtilsMessengerCreateInfoEXT *mi)
{
	*mi = (VkDebugUtilsMessengerCreateInfoEXT){
		.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
		.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
				   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
		.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
			       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
			       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
		.pfnUserCallback = on_message,
		.pUserData = ctx,
	};
}

static bool layer_present(const char *name)
{
	uint32_t n = 0;
	if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS)
		return false;
	VkLayerProperties *props = calloc(n ? n : 1, sizeof *props);
	bool found = false;
	if (props && vkEnumerateInstanceLayerProperties(&n, props) == VK_SUCCESS)
		for (uint32_t i = 0; i < n && !found; i++)
			found = strcmp(props[i].layerName, name) == 0;
	free(props);
	return found;
}

static uint32_t instance_api_version(void)
{
	uint32_t v = VK_API_VERSION_1_1;
	if (vkEnumerateInstanceVersion(&v) != VK_SUCCESS || v < VK_API_VERSION_1_1)
		return VK_API_VERSION_1_1;
	return v >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : v;
}

static bool create_messenger(vk_ctx *ctx, vk_error *err)
{
	PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)
		vkGetInstanceProcAddr(ctx->instance, "vkCreateDebugUtilsMessengerEXT");
	if (!create)
		return vk_failf(err, "vkGetInstanceProcAddr: vkCreateDebugUtilsMessengerEXT is missing");
	VkDebugUtilsMessengerCreateInfoEXT mi;
	messenger_info(ctx, &mi);
	VkResult r = create(ctx->instance, &mi, NULL, &ctx->messenger);
	return r == VK_SUCCESS || vk_fail(err, r, "vkCreateDebugUtilsMessengerEXT");
}

bool vk_instance_create(vk_ctx *ctx, vk_error *err)
{
	if (ctx->validation && !layer_present(validation_layer))
		return vk_failf(err, "validation requested but %s is not installed", validation_layer);
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "halo",
		.pEngineName = "halo",
		.apiVersion = instance_api_version(),
	};
	const char *layers[] = {validation_layer};
	const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
	/* Synchronisation validation also checks barriers between our copies and dispatches. */
	VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
	VkDebugUtilsMessengerCreateInfoEXT mi;
	messenger_info(ctx, &mi);
	VkValidationFeaturesEXT features = {
		.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
		.pNext = &mi, /* also reports problems during vkCreateInstance itself */
		.enabledValidationFeatureCount = 1,
		.pEnabledValidationFeatures = enables,
	};
	VkInstanceCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pNext = ctx->validation ? &features : NULL,
		.pApplicationInfo = &app,
		.enabledLayerCount = ctx->validation ? 1 : 0,
		.ppEnabledLayerNames = layers,
		.enabledExtensionCount = ctx->validation ? 1 : 0,
		.ppEnabledExtensionNames = exts,
	};
	VkResult r = vkCreateInstance(&ci, NULL, &ctx->instance);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkCreateInstance");
	return !ctx->validation || create_messenger(ctx, err);
}

void vk_instance_destroy(vk_ctx *ctx)
{
	if (ctx->messenger) {
		PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)
			vkGetInstanceProcAddr(ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
		if (destroy)
			destroy(ctx->instance, ctx->messenger, NULL);
		ctx->messenger = VK_NULL_HANDLE;
	}
	if (ctx->instance)
		vkDestroyInstance(ctx->instance, NULL);
	ctx->instance = VK_NULL_HANDLE;
}

bool vk_physical_list(VkInstance inst, VkPhysicalDevice **out, uint32_t *n, vk_error *err)
{
	VkResult r = vkEnumeratePhysicalDevices(inst, n, NULL);
	if (r != VK_SUCCESS)
		return vk_fail(err, r, "vkEnumeratePhysicalDevices");
	*out = calloc(*n ? *n : 1, sizeof **out);
	if (!*out)
		return vk_failf(err, "vkEnumeratePhysicalDevices: out of memory");
	r = vkEnumeratePhysicalDevices(inst, n, *out);
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
		free(*out);
		*out = NULL;
		return vk_fail(err, r, "vkEnumeratePhysicalDevices");
	}
	return true;
}

static bool find_compute_family(VkPhysicalDevice dev, uint32_t *family, float *ts_period,
				float period)
{
	uint32_t n = 0;
	vkGetPhysicalDeviceQueueFamilyProperties(dev, &n, NULL);
	VkQueueFamilyProperties *q = calloc(n ? n : 1, sizeof *q);
	if (!q)
		return false;
	vkGetPhysicalDeviceQueueFamilyProperties(dev, &n, q);
	bool found = false;
	for (uint32_t i = 0; i < n && !found; i++)
		if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
			*family = i;
			*ts_period = q[i].timestampValidBits ? period : 0.0f;
			found = true;
		}
	free(q);
	return found;
}

bool vk_has_device_extension(VkPhysicalDevice dev, const char *name)
{
	uint32_t n = 0;
	if (vkEnumerateDeviceExtensionProperties(dev, NULL, &n, NULL) != VK_SUCCESS)
		return false;
	VkExtensionProperties *ext = calloc(n ? n : 1, sizeof *ext);
	bool found = false;
	if (ext && vkEnumerateDeviceExtensionProperties(dev, NULL, &n, ext) == VK_SUCCESS)
		for (uint32_t i = 0; i < n && !found; i++)
			found = strcmp(ext[i].extensionName, name) == 0;
	free(ext);
	return found;
}

/* VK_NV_cooperative_matrix with the one shape the kernels use: 16x16x16,
 * f16 A and B, f32 C and D, subgroup scope, the feature bit, and what the
 * kernels need beside it. */
static bool has_coopmat_nv(VkInstance inst, VkPhysicalDevice dev)
{
	if (!vk_has_device_extension(dev, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME))
		return false;
	/* The kernels also take f16 arithmetic and the Vulkan memory model
	 * (matmul_coopmat.comp) with its device scope (vk_device.c), core
	 * features of Vulkan 1.2. */
	VkPhysicalDeviceProperties base;
	vkGetPhysicalDeviceProperties(dev, &base);
	if (base.apiVersion < VK_API_VERSION_1_2)
		return false;
	VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
	VkPhysicalDeviceCooperativeMatrixFeaturesNV feat = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, .pNext = &v12};
	VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &feat};
	vkGetPhysicalDeviceFeatures2(dev, &f2);
	if (!v12.shaderFloat16 || !v12.vulkanMemoryModel || !v12.vulkanMemoryModelDeviceScope)
		return false;
	PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV list =
		(PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
			inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
	uint32_t n = 0;
	if (!feat.cooperativeMatrix || !list || list(dev, &n, NULL) != VK_SUCCESS || n == 0)
		return false;
	VkCooperativeMatrixPropertiesNV *p = calloc(n, sizeof *p);
	bool found = false;
	for (uint32_t i = 0; p && i < n; i++)
		p[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
	if (p && list(dev, &n, p) == VK_SUCCESS)
		for (uint32_t i = 0; i < n && !found; i++)
			found = p[i].MSize == 16 && p[i].NSize == 16 && p[i].KSize == 16 &&
				p[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV && p[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
				p[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV && p[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
				p[i].scope == VK_SCOPE_SUBGROUP_NV;
	free(p);
	return found;
}

/* VK_KHR_shader_integer_dot_product (core in Vulkan 1.3, where drivers
 * still list the extension) with its feature bit: OpSDot on four int8s
 * packed in 32 bits (matvec's int8 activations). */
static bool has_int_dot(VkPhysicalDevice dev)
{
	if (!vk_has_device_extension(dev, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME))
		return false;
	VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR feat = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR};
	VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &feat};
	vkGetPhysicalDeviceFeatures2(dev, &f2);
	return feat.shaderIntegerDotProduct;
}

bool vk_physical_describe(VkInstance inst, VkPhysicalDevice dev, vk_device_info *info, uint32_t *queue_family,
			  vk_error *err)
{
	VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
	VkPhysicalDeviceSubgroupProperties subgroup = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
	VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
						     .pNext = &subgroup};
	VkPhysicalDeviceMaintenance4Properties m4 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES,
						     .pNext = &m3};
	VkPhysicalDeviceProperties base;
	vkGetPhysicalDeviceProperties(dev, &base);
	/* Driver properties are core only from Vulkan 1.2, maintenance4's
	 * from 1.3. */
	if (base.apiVersion >= VK_API_VERSION_1_2)
		subgroup.pNext = &driver;
	bool has_m4 = base.apiVersion >= VK_API_VERSION_1_3;
	VkPhysicalDeviceProperties2 props = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
					     .pNext = has_m4 ? (void *)&m4 : (void *)&m3};
	vkGetPhysicalDeviceProperties2(dev, &props);
	VkPhysicalDeviceMemoryProperties mem;
	vkGetPhysicalDeviceMemoryProperties(dev, &mem);

	memset(info, 0, sizeof *info);
	snprintf(info->name, sizeof info->name, "%s", base.deviceName);
	snprintf(info->driver_name, sizeof info->driver_name, "%s", driver.driverName);
	snprintf(info->driver_info, sizeof info->driver_info, "%s", driver.driverInfo);
	info->type = base.deviceType;
	info->api_version = base.apiVersion;
	info->subgroup_size = subgroup.subgroupSize;
	info->vendor_id = base.vendorID;
	info->device_id = base.deviceID;
	info->driver_version = base.driverVersion;
	if ((subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
	    (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT))
		info->features |= HALO_NEED_SUBGROUP_SHUFFLE;
	/* HALO_VK_DISABLE_COOPMAT=1 hides the matrix units (as llama.cpp's
	 * GGML_VK_DISABLE_COOPMAT does): a choice then runs a candidate that
	 * needs none, to compare the two on one device. */
	if (has_coopmat_nv(inst, dev) && !vk_env_flag("HALO_VK_DISABLE_COOPMAT"))
		info->features |= HALO_NEED_COOPMAT_NV;
	if (has_int_dot(dev))
		info->features |= HALO_NEED_INT_DOT;
	info->max_shared_memory = base.limits.maxComputeSharedMemorySize;
	info->max_workgroup_invocations = base.limits.maxComputeWorkGroupInvocations;
	info->max_allocation = m3.maxMemoryAllocationSize;
	info->max_buffer = has_m4 ? m4.maxBufferSize : m3.maxMemoryAllocationSize;
	info->max_storage_range = base.limits.maxStorageBufferRange;
	for (uint32_t i = 0; i < mem.memoryHeapCount; i++)
		if (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
			info->device_local_bytes += mem.memoryHeaps[i].size;
	if (!find_compute_family(dev, queue_family, &info->timestamp_period_ns,
				 base.limits.timestampPeriod))
		return vk_failf(err, "%s: no compute queue family", info->name);
	return true;
}

bool vk_env_flag(const char *name)
{
	const char *v = getenv(name);
	return v && strcmp(v, "1") == 0;
}
