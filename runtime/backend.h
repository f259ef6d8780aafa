/* The interface every backend implements (runtime-internal).
 * A backend instance belongs to one model; a backend session to one sequence.
 * Both are created and destroyed through these pointers only. */
#ifndef HALO_RUNTIME_BACKEND_H
#define HALO_RUNTIME_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/manifest.h"
#include "runtime/tuning.h"
#include "runtime/tuning_db.h"

typedef struct halo_backend halo_backend;
typedef struct halo_backend_session halo_backend_session;
typedef struct halo_backend_checkpoint halo_backend_checkpoint;

/* What a backend gets at load: the manifest and the mapped sections, and
 * how to pick each kernel choice's candidate. The manifest and the sections
 * are borrowed for the backend's lifetime (the model owns them); tuning and
 * picks only during create. Backends that ignore kernels (ref) ignore the
 * last three. */
typedef struct {
	const halo_manifest *manifest;
	const void *weights;
	uint64_t weights_size;
	/* Each GPU target's kernel section (kernels/gpu_target.h), NULL and 0
	 * where the bundle has none. */
	const void *code[HALO_TARGET_COUNT];
	uint64_t code_size[HALO_TARGET_COUNT];
	int device;
	bool validation;
	/* Picks per choice for this device: a record's tile when the device has
	 * its needs, else the heuristic. NULL: the heuristic everywhere. */
	const halo_tuning_db *tuning;
	/* NULL, or one candidate position per choice (an index into the
	 * choice's kernel list), -1 for none: overrides the database and the
	 * heuristic. A position the device cannot run fails the load. */
	const int *picks;
	/* For halo tune: a pipeline for every candidate the device can run (not
	 * only the picked ones), set_picks allowed, and a barrier before every
	 * dispatch of a profiled recording so each is timed on its own. */
	bool tune;
} halo_backend_load;

typedef struct {
	const char *name;
	halo_backend *(*create)(const halo_backend_load *load, char *err, size_t errlen);
	void (*destroy)(halo_backend *b);
	halo_backend_session *(*session_create)(halo_backend *b, char *err, size_t errlen);
	void (*session_destroy)(halo_backend_session *s);
	/* Zeroes every state buffer. */
	bool (*state_clear)(halo_backend_session *s, char *err, size_t errlen);
	/* Runs one entry for T tokens at position pos; *out is then the entry's
	 * output (logits or token rows, e->output for T) in host memory the backend
	 * session owns (Vulkan's mapped staging buffer, ref's arena), valid
	 * until its next run: callers read it in place, with no copy a step.
	 * With dispatch_ns (profiling), adds each dispatch's time in
	 * nanoseconds to dispatch_ns[i]. */
	bool (*run)(halo_backend_session *s, const halo_entry *e, int64_t T, int64_t pos, const int32_t *tokens,
		    const void **out, double *dispatch_ns, char *err, size_t errlen);
	/* halo_session_chain_at for e (tokens_out, T = 1), k <= HALO_CHAIN_MAX,
	 * with each step's token passed to the next on the device; NULL in a
	 * backend that runs the steps one at a time through run. */
	bool (*chain)(halo_backend_session *s, const halo_entry *e, int64_t pos, int32_t first, int64_t k, int32_t *out,
		      char *err, size_t errlen);
	int (*validation_messages)(const halo_backend *b);
	/* A buffer the size of the session's recurrent state
	 * (manifest->recurrent_bytes), and copies of the recurrent ranges into
	 * and out of it that stay on the device. */
	halo_backend_checkpoint *(*checkpoint_create)(halo_backend_session *s, char *err, size_t errlen);
	void (*checkpoint_destroy)(halo_backend_checkpoint *c);
	bool (*checkpoint_copy)(halo_backend_checkpoint *c, bool save, char *err, size_t errlen);
	/* Makes every recurrent state that has per-token slots
	 * (manifest->slots) its slot `slot` (0 <= slot < the slots' count):
	 * one device-to-device copy per state, done when this returns. */
	bool (*keep_slot)(halo_backend_session *s, int64_t slot, char *err, size_t errlen);
	/* Kernel choices; NULL in a backend that runs no bundle kernels (ref).
	 * picked: the candidate position choice c runs and where it came from.
	 * set_picks: new positions (as halo_backend_load.picks) on a backend
	 * loaded with tune; sessions re-record their command buffers at their
	 * next step. device: the GPU the backend runs on. */
	int (*picked)(const halo_backend *b, int choice, halo_pick_source *source);
	bool (*set_picks)(halo_backend *b, const int *picks, char *err, size_t errlen);
	/* Whether the bundle holds code this backend runs for manifest kernel
	 * `kernel` (the cuda and hip targets carry code for the candidates
	 * they pick, unless compiled with every one); NULL: every kernel has
	 * it (Vulkan), and the device's features alone decide. */
	bool (*runs_kernel)(const halo_backend *b, int kernel);
	void (*device)(const halo_backend *b, halo_device_id *out);
	/* Whether the backend finds its driver and device `device` (-1: the
	 * default) here, without a bundle; NULL in a backend that needs
	 * neither (ref). Leaves nothing open. */
	bool (*probe)(int device, char *err, size_t errlen);
	/* halo_backend_devices for this backend; NULL in one without devices
	 * to choose from (ref). */
	int (*devices)(halo_device_name *out, int max, char *err, size_t errlen);
} halo_backend_ops;

extern const halo_backend_ops halo_ref_backend;
extern const halo_backend_ops halo_vulkan_backend;
extern const halo_backend_ops halo_cuda_backend; /* runtime/drivers/cuda */
extern const halo_backend_ops halo_hip_backend;  /* runtime/drivers/hip */

#endif
