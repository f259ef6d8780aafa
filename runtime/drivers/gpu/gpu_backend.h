/* The backend over a GPU-module driver (gpu_api.h), shared by the cuda and
 * hip backends: each is this backend with its driver table
 * (GPU_BACKEND_OPS). What it owns and frees is what every backend does
 * (runtime/backend.h): a backend its library handle, context, modules and
 * weights; a session its arenas. */
#ifndef HALO_RUNTIME_DRIVERS_GPU_BACKEND_H
#define HALO_RUNTIME_DRIVERS_GPU_BACKEND_H

#include "runtime/backend.h"
#include "runtime/drivers/gpu/gpu_api.h"

/* In the error of a create or probe that failed for want of the library or
 * a device ("cuda backend unavailable here: cannot open libcuda.so.1 ..."). */
#define GPU_UNAVAILABLE "unavailable here"

/* Checks the bundle (every kernel choice has code for the driver's target)
 * before it opens the library and the device, so a bundle without that
 * target is refused on any machine. */
halo_backend *gpu_backend_create(const gpu_driver *driver, const halo_backend_load *load, char *err,
				 size_t errlen);
void gpu_backend_destroy(halo_backend *b);
halo_backend_session *gpu_session_create(halo_backend *b, char *err, size_t errlen);
void gpu_session_destroy(halo_backend_session *s);
bool gpu_state_clear(halo_backend_session *s, char *err, size_t errlen);
bool gpu_run(halo_backend_session *s, const halo_entry *e, int64_t T, int64_t pos, const int32_t *tokens,
	     const void **out, double *dispatch_ns, char *err, size_t errlen);
bool gpu_chain(halo_backend_session *s, const halo_entry *e, int64_t pos, int32_t first, int64_t k, int32_t *out,
	       char *err, size_t errlen);
int gpu_validation_messages(const halo_backend *b);
halo_backend_checkpoint *gpu_checkpoint_create(halo_backend_session *s, char *err, size_t errlen);
void gpu_checkpoint_destroy(halo_backend_checkpoint *c);
bool gpu_checkpoint_copy(halo_backend_checkpoint *c, bool save, char *err, size_t errlen);
bool gpu_keep_slot(halo_backend_session *s, int64_t slot, char *err, size_t errlen);
int gpu_picked(const halo_backend *b, int choice, halo_pick_source *source);
bool gpu_set_picks(halo_backend *b, const int *picks, char *err, size_t errlen);
/* Whether the bundle has this target's code for manifest kernel `kernel`. */
bool gpu_runs_kernel(const halo_backend *b, int kernel);
void gpu_device(const halo_backend *b, halo_device_id *out);
/* The driver's library opens and has device `device` (-1: 0); closes both. */
bool gpu_backend_probe(const gpu_driver *driver, int device, char *err, size_t errlen);
/* halo_backend_devices for the driver: opens its library, names its
 * devices, closes it. */
int gpu_backend_devices(const gpu_driver *driver, halo_device_name *out, int max, char *err, size_t errlen);

/* The ops of the backend named name whose create, probe and devices are
 * create_fn, probe_fn and devices_fn (functions calling gpu_backend_create,
 * gpu_backend_probe and gpu_backend_devices with its driver). */
#define GPU_BACKEND_OPS(backend_name, create_fn, probe_fn, devices_fn)                        \
	{                                                                                     \
		.name = backend_name, .create = create_fn, .destroy = gpu_backend_destroy,    \
		.session_create = gpu_session_create, .session_destroy = gpu_session_destroy, \
		.state_clear = gpu_state_clear, .run = gpu_run, .chain = gpu_chain,           \
		.validation_messages = gpu_validation_messages,                               \
		.checkpoint_create = gpu_checkpoint_create,                                   \
		.checkpoint_destroy = gpu_checkpoint_destroy,                                 \
		.checkpoint_copy = gpu_checkpoint_copy, .keep_slot = gpu_keep_slot,           \
		.picked = gpu_picked, .set_picks = gpu_set_picks,                             \
		.runs_kernel = gpu_runs_kernel, .device = gpu_device,                         \
		.probe = probe_fn, .devices = devices_fn,                                     \
	}

#endif
