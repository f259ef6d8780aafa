/* VkResult names and error formatting for the device layer. */
#include "runtime/drivers/vulkan/vk_device.h"

#include <stdarg.h>
#include <stdio.h>

const char *vk_result_name(VkResult r)
{
	switch (r) {
#define NAME(x) \
	case x: \
		return #x;
		NAME(VK_SUCCESS)
		NAME(VK_NOT_READY)
		NAME(VK_TIMEOUT)
		NAME(VK_EVENT_SET)
		NAME(VK_EVENT_RESET)
		NAME(VK_INCOMPLETE)
		NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
		NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
		NAME(VK_ERROR_INITIALIZATION_FAILED)
		NAME(VK_ERROR_DEVICE_LOST)
		NAME(VK_ERROR_MEMORY_MAP_FAILED)
		NAME(VK_ERROR_LAYER_NOT_PRESENT)
		NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
		NAME(VK_ERROR_FEATURE_NOT_PRESENT)
		NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
		NAME(VK_ERROR_TOO_MANY_OBJECTS)
		NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
		NAME(VK_ERROR_FRAGMENTED_POOL)
		NAME(VK_ERROR_UNKNOWN)
		NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
		NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
		NAME(VK_ERROR_FRAGMENTATION)
		NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
		NAME(VK_PIPELINE_COMPILE_REQUIRED)
		NAME(VK_ERROR_VALIDATION_FAILED_EXT)
#undef NAME
	default:
		break;
	}
	static _Thread_local char buf[32];
	snprintf(buf, sizeof buf, "VK_RESULT_%d", (int)r);
	return buf;
}

bool vk_fail(vk_error *err, VkResult r, const char *what)
{
	if (err)
		snprintf(err->msg, sizeof err->msg, "%s: %s", what, vk_result_name(r));
	return false;
}

bool vk_failf(vk_error *err, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return false;
}

const char *vk_device_type_name(VkPhysicalDeviceType t)
{
	switch (t) {
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
		return "discrete";
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
		return "integrated";
	case VK_PHYSICAL_DEVICE_TYPE_CPU:
		return "cpu";
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
		return "virtual";
	default:
		return "other";
	}
}
