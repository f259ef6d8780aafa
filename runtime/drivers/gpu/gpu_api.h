/* The GPU-module driver API the CUDA and HIP backends share: the few entry
 * points of the CUDA driver API (libcuda.so.1) and of HIP's module API
 * (libamdhip64.so) that halo calls, as one table of function pointers that
 * a driver fills by dlopen/dlsym (runtime/drivers/cuda, runtime/drivers/hip).
 * No vendor header is used: halo builds and runs without either toolkit.
 *
 * The two APIs have the same shapes for these calls (HIP's module API
 * mirrors CUDA's), so one table serves both: results are enums (int), a
 * device is an int ordinal, contexts, modules, functions, streams and events
 * are opaque pointers, and a device address is 64 bits (CUDA's CUdeviceptr
 * is unsigned long long, HIP's hipDeviceptr_t a void *; both travel in one
 * integer register on the 64-bit ABIs halo builds for). */
#ifndef HALO_RUNTIME_DRIVERS_GPU_API_H
#define HALO_RUNTIME_DRIVERS_GPU_API_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/gpu_target.h"

typedef uint64_t gpu_dptr;

typedef struct {
	int (*init)(unsigned flags);
	int (*device_count)(int *count);
	int (*device_get)(int *device, int ordinal);
	int (*device_name)(char *name, int len, int device);
	int (*primary_ctx_retain)(void **ctx, int device);
	int (*primary_ctx_release)(int device);
	int (*ctx_set_current)(void *ctx);
	int (*module_load_data)(void **module, const void *image);
	int (*module_unload)(void *module);
	int (*module_get_function)(void **function, void *module, const char *name);
	int (*mem_alloc)(gpu_dptr *ptr, size_t bytes);
	int (*mem_free)(gpu_dptr ptr);
	int (*memcpy_htod)(gpu_dptr dst, const void *src, size_t bytes);
	int (*memcpy_dtoh)(void *dst, gpu_dptr src, size_t bytes);
	int (*memcpy_dtod_async)(gpu_dptr dst, gpu_dptr src, size_t bytes, void *stream);
	int (*memset_d8_async)(gpu_dptr dst, unsigned char value, size_t bytes, void *stream);
	int (*launch_kernel)(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			     unsigned bz, unsigned shared_bytes, void *stream, void **params, void **extra);
	int (*stream_synchronize)(void *stream);
	int (*event_create)(void **event, unsigned flags);
	int (*event_destroy)(void *event);
	int (*event_record)(void *event, void *stream);
	int (*event_synchronize)(void *event);
	int (*event_elapsed_ms)(float *ms, void *start, void *end);
	/* The driver's error-string entry point, whose shape differs between
	 * the two APIs: only its driver's describe() calls it. */
	void (*error_string)(void);
} gpu_api;

/* One symbol of the library and the gpu_api field it fills. */
typedef struct {
	const char *symbol;
	size_t field; /* offsetof(gpu_api, ...) */
} gpu_symbol;

/* A driver: the library to open, the symbols to take from it, the bundle
 * target whose code it loads and how to name an error. A static table per
 * driver (cuda_driver.c, hip_driver.c). */
typedef struct {
	const char *backend;  /* the registry name: "cuda", "hip" */
	const char *library;  /* "libcuda.so.1", "libamdhip64.so" */
	halo_target target;
	uint32_t pci_vendor;  /* halo_device_id.vendor */
	const gpu_symbol *symbols;
	int n_symbols;
	/* A static string naming result rc (the library's own when it has one). */
	const char *(*describe)(const gpu_api *api, int rc);
} gpu_driver;

#endif
