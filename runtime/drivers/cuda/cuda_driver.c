/* The cuda backend: the GPU-module backend (runtime/drivers/gpu) over the
 * CUDA driver API of libcuda.so.1 (the driver's library, not the toolkit's
 * runtime), running the bundle's sm_90 PTX ("ptx-sm90"), which the driver
 * compiles for the device at module load. The symbols are the ones cuda.h's
 * macros name: the _v2 entry points where the header maps a call to one
 * (64-bit device pointers and sizes). */
#include <stddef.h>

#include "runtime/drivers/gpu/gpu_backend.h"

static const gpu_symbol cuda_symbols[] = {
	{"cuInit", offsetof(gpu_api, init)},
	{"cuDeviceGetCount", offsetof(gpu_api, device_count)},
	{"cuDeviceGet", offsetof(gpu_api, device_get)},
	{"cuDeviceGetName", offsetof(gpu_api, device_name)},
	{"cuDevicePrimaryCtxRetain", offsetof(gpu_api, primary_ctx_retain)},
	{"cuDevicePrimaryCtxRelease_v2", offsetof(gpu_api, primary_ctx_release)},
	{"cuCtxSetCurrent", offsetof(gpu_api, ctx_set_current)},
	{"cuModuleLoadData", offsetof(gpu_api, module_load_data)},
	{"cuModuleUnload", offsetof(gpu_api, module_unload)},
	{"cuModuleGetFunction", offsetof(gpu_api, module_get_function)},
	{"cuMemAlloc_v2", offsetof(gpu_api, mem_alloc)},
	{"cuMemFree_v2", offsetof(gpu_api, mem_free)},
	{"cuMemcpyHtoD_v2", offsetof(gpu_api, memcpy_htod)},
	{"cuMemcpyDtoH_v2", offsetof(gpu_api, memcpy_dtoh)},
	{"cuMemcpyDtoDAsync_v2", offsetof(gpu_api, memcpy_dtod_async)},
	{"cuMemsetD8Async", offsetof(gpu_api, memset_d8_async)},
	{"cuLaunchKernel", offsetof(gpu_api, launch_kernel)},
	{"cuStreamSynchronize", offsetof(gpu_api, stream_synchronize)},
	{"cuEventCreate", offsetof(gpu_api, event_create)},
	{"cuEventDestroy_v2", offsetof(gpu_api, event_destroy)},
	{"cuEventRecord", offsetof(gpu_api, event_record)},
	{"cuEventSynchronize", offsetof(gpu_api, event_synchronize)},
	{"cuEventElapsedTime", offsetof(gpu_api, event_elapsed_ms)},
	{"cuGetErrorName", offsetof(gpu_api, error_string)},
};

/* CUresult cuGetErrorName(CUresult, const char **). */
static const char *cuda_describe(const gpu_api *api, int rc)
{
	const char *name = NULL;
	int (*get_name)(int, const char **) = (int (*)(int, const char **))api->error_string;
	return get_name && get_name(rc, &name) == 0 && name ? name : "unknown CUresult";
}

static const gpu_driver cuda_driver = {
	.backend = "cuda",
	.library = "libcuda.so.1",
	.target = HALO_TARGET_CUDA_SM90,
	.pci_vendor = 0x10de,
	.symbols = cuda_symbols,
	.n_symbols = (int)(sizeof(cuda_symbols) / sizeof(cuda_symbols[0])),
	.describe = cuda_describe,
};

static halo_backend *cuda_create(const halo_backend_load *load, char *err, size_t errlen)
{
	return gpu_backend_create(&cuda_driver, load, err, errlen);
}

static bool cuda_probe(int device, char *err, size_t errlen)
{
	return gpu_backend_probe(&cuda_driver, device, err, errlen);
}

static int cuda_devices(halo_device_name *out, int max, char *err, size_t errlen)
{
	return gpu_backend_devices(&cuda_driver, out, max, err, errlen);
}

const halo_backend_ops halo_cuda_backend = GPU_BACKEND_OPS("cuda", cuda_create, cuda_probe, cuda_devices);
