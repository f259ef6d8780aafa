/* The hip backend: the GPU-module backend (runtime/drivers/gpu) over HIP's
 * module API in libamdhip64.so (ROCm), running the bundle's gfx1151 code
 * objects ("hsaco-gfx1151"). Each symbol is the HIP call with the shape of
 * the CUDA one (hipEventCreateWithFlags for cuEventCreate), and the
 * primary-context calls are the ones ROCm keeps for CUDA's driver API. */
#include <stddef.h>

#include "runtime/drivers/gpu/gpu_backend.h"

static const gpu_symbol hip_symbols[] = {
	{"hipInit", offsetof(gpu_api, init)},
	{"hipGetDeviceCount", offsetof(gpu_api, device_count)},
	{"hipDeviceGet", offsetof(gpu_api, device_get)},
	{"hipDeviceGetName", offsetof(gpu_api, device_name)},
	{"hipDevicePrimaryCtxRetain", offsetof(gpu_api, primary_ctx_retain)},
	{"hipDevicePrimaryCtxRelease", offsetof(gpu_api, primary_ctx_release)},
	{"hipCtxSetCurrent", offsetof(gpu_api, ctx_set_current)},
	{"hipModuleLoadData", offsetof(gpu_api, module_load_data)},
	{"hipModuleUnload", offsetof(gpu_api, module_unload)},
	{"hipModuleGetFunction", offsetof(gpu_api, module_get_function)},
	{"hipMalloc", offsetof(gpu_api, mem_alloc)},
	{"hipFree", offsetof(gpu_api, mem_free)},
	{"hipMemcpyHtoD", offsetof(gpu_api, memcpy_htod)},
	{"hipMemcpyDtoH", offsetof(gpu_api, memcpy_dtoh)},
	{"hipMemcpyDtoDAsync", offsetof(gpu_api, memcpy_dtod_async)},
	{"hipMemsetD8Async", offsetof(gpu_api, memset_d8_async)},
	{"hipModuleLaunchKernel", offsetof(gpu_api, launch_kernel)},
	{"hipStreamSynchronize", offsetof(gpu_api, stream_synchronize)},
	{"hipEventCreateWithFlags", offsetof(gpu_api, event_create)},
	{"hipEventDestroy", offsetof(gpu_api, event_destroy)},
	{"hipEventRecord", offsetof(gpu_api, event_record)},
	{"hipEventSynchronize", offsetof(gpu_api, event_synchronize)},
	{"hipEventElapsedTime", offsetof(gpu_api, event_elapsed_ms)},
	{"hipGetErrorName", offsetof(gpu_api, error_string)},
};

/* const char *hipGetErrorName(hipError_t). */
static const char *hip_describe(const gpu_api *api, int rc)
{
	const char *(*get_name)(int) = (const char *(*)(int))api->error_string;
	const char *name = get_name ? get_name(rc) : NULL;
	return name ? name : "unknown hipError_t";
}

static const gpu_driver hip_driver = {
	.backend = "hip",
	.library = "libamdhip64.so",
	.target = HALO_TARGET_HIP_GFX1151,
	.pci_vendor = 0x1002,
	.symbols = hip_symbols,
	.n_symbols = (int)(sizeof(hip_symbols) / sizeof(hip_symbols[0])),
	.describe = hip_describe,
};

static halo_backend *hip_create(const halo_backend_load *load, char *err, size_t errlen)
{
	return gpu_backend_create(&hip_driver, load, err, errlen);
}

static bool hip_probe(int device, char *err, size_t errlen)
{
	return gpu_backend_probe(&hip_driver, device, err, errlen);
}

static int hip_devices(halo_device_name *out, int max, char *err, size_t errlen)
{
	return gpu_backend_devices(&hip_driver, out, max, err, errlen);
}

const halo_backend_ops halo_hip_backend = GPU_BACKEND_OPS("hip", hip_create, hip_probe, hip_devices);
