/* The GPU targets a bundle carries kernels for, shared by codegen (which
 * compiles them) and the runtime (whose backends load them). Each target's
 * kernels live in one bundle section; a manifest kernel names its range in
 * each target's section ("code", docs/manifest.md). Append only: the order
 * is the order of the manifest's "targets" list. */
#ifndef HALO_GPU_TARGET_H
#define HALO_GPU_TARGET_H

#include <stdint.h>

typedef enum {
	HALO_TARGET_VULKAN,      /* SPIR-V from the GLSL templates */
	HALO_TARGET_HIP_GFX1151, /* AMD code objects (.hsaco) from the HIP templates */
	HALO_TARGET_CUDA_SM90,   /* NVIDIA PTX from the same HIP templates */
	HALO_TARGET_COUNT
} halo_target;

typedef struct {
	const char *name;    /* in the manifest's "targets": "vulkan", "hip-gfx1151", "cuda-sm90" */
	const char *short_name; /* halo compile --targets: "vulkan", "hip", "cuda" */
	const char *section; /* the bundle section of its kernels: "spirv", "hsaco-gfx1151", "ptx-sm90" */
	uint32_t code_align; /* a kernel's code offset and size are multiples of it */
} halo_target_info;

extern const halo_target_info halo_targets[HALO_TARGET_COUNT];

/* The entry points of a hip or cuda kernel (kernels/hip/README.md): every
 * kernel has HALO_ENTRY (the launch's T); a matvec also HALO_ENTRY_T1, the
 * same kernel compiled for steps of one token, which a backend launches
 * when T = 1 (both give the same bits: the matvec is batch-invariant). */
#define HALO_ENTRY "halo_main"
#define HALO_ENTRY_T1 "halo_main_t1"

/* The target whose name or short name is s, or -1. */
int halo_target_find(const char *s);

#endif
