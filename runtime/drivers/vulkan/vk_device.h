/* The Vulkan device layer: instance, validation, device selection, the
 * logical device and its compute queue.
 *
 * A vk_ctx owns the instance, the optional debug messenger and the logical
 * device; vk_ctx_destroy() frees them all. Objects made from a ctx (buffers, pipelines, descriptor pools,
 * command streams, timers; vk_buffer.h, vk_pipeline.h, vk_cmd.h) must be
 * destroyed before it. Every failing call fills a vk_error whose message
 * names the Vulkan call and its VkResult (e.g. "vkCreateBuffer:
 * VK_ERROR_OUT_OF_DEVICE_MEMORY").
 */
#ifndef HALO_VK_DEVICE_H
#define HALO_VK_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <vulkan/vulkan.h>

typedef struct {
	char msg[512];
} vk_error;

/* "VK_ERROR_DEVICE_LOST", ...; "VK_RESULT_<n>" for unknown values (static storage). */
const char *vk_result_name(VkResult r);
/* Fills err with "what: <VkResult name>"; returns false for `return vk_fail(...)`. */
bool vk_fail(vk_error *err, VkResult r, const char *what);
/* Fills err with a formatted message; returns false. */
bool vk_failf(vk_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct {
	char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
	VkPhysicalDeviceType type;
	char driver_name[VK_MAX_DRIVER_NAME_SIZE];
	char driver_info[VK_MAX_DRIVER_INFO_SIZE];
	uint32_t api_version;
	uint32_t subgroup_size;
	uint32_t max_shared_memory;       /* maxComputeSharedMemorySize, bytes */
	uint32_t max_workgroup_invocations;
	uint64_t device_local_bytes;      /* sum of device-local heaps */
	/* The largest allocation (maxMemoryAllocationSize), buffer
	 * (maxBufferSize; the allocation's cap before Vulkan 1.3) and storage
	 * binding (maxStorageBufferRange), bytes. */
	uint64_t max_allocation, max_buffer, max_storage_range;
	float timestamp_period_ns;        /* 0 when the compute queue has no timestamps */
	/* Identity for a tuning database: the same three numbers name the same
	 * GPU and driver build. */
	uint32_t vendor_id, device_id, driver_version;
	uint32_t features;                /* HALO_NEED_* bits (kernels/device_features.h) the device has */
} vk_device_info;

/* "discrete", "integrated", "cpu", "virtual", "other" (static storage). */
const char *vk_device_type_name(VkPhysicalDeviceType t);

typedef struct {
	/* Enables VK_LAYER_KHRONOS_validation (with synchronisation validation)
	 * and a debug-utils messenger that prints and counts every warning and
	 * error. Also enabled by the environment variable HALO_VK_VALIDATION=1. */
	bool validation;
	/* Index into the physical device list; -1 picks the first discrete GPU,
	 * else the first device. */
	int device_index;
	/* Asks the driver to keep each pipeline's compile statistics
	 * (VK_KHR_pipeline_executable_properties, where the device has it:
	 * registers, shared memory, ...) for vk_pipeline_statistics. A
	 * benchmark's aid: drivers may skip their pipeline caches for it. */
	bool pipeline_stats;
} vk_ctx_options;

typedef struct vk_ctx {
	VkInstance instance;
	VkDebugUtilsMessengerEXT messenger; /* VK_NULL_HANDLE without validation */
	VkPhysicalDevice phys;
	VkDevice device;
	VkQueue queue;
	/* Held around vkQueueSubmit: Vulkan wants submissions to one queue
	 * externally synchronized, and sessions of one model may step on
	 * several threads (runtime/halo.h). Waiting on a fence needs no lock. */
	pthread_mutex_t queue_lock;
	/* Held while a pipeline specialisation is made on first use
	 * (vk_pipeline_for_t): sessions record on several threads. */
	pthread_mutex_t pipeline_lock;
	uint32_t queue_family;
	VkPhysicalDeviceMemoryProperties mem;
	vk_device_info info;
	bool validation;
	bool pipeline_stats; /* asked for and the device has the extension: pipelines capture statistics */
	_Atomic uint64_t validation_messages; /* warnings + errors seen by the messenger, from any thread */
} vk_ctx;

/* Lists the physical devices: *out is malloc'd (caller frees), *n its length.
 * Creates and destroys its own instance. */
bool vk_list_devices(vk_device_info **out, int *n, vk_error *err);

/* Creates a ctx on the chosen device; *out is owned by the caller
 * (vk_ctx_destroy). On failure nothing is left allocated. */
bool vk_ctx_create(const vk_ctx_options *opt, vk_ctx **out, vk_error *err);
void vk_ctx_destroy(vk_ctx *ctx); /* NULL ok; waits for the device to idle */

/* Index of a memory type with all `want` flags among `type_bits`, or -1. */
int vk_ctx_memory_type(const vk_ctx *ctx, uint32_t type_bits, VkMemoryPropertyFlags want);

#endif
