/* The GPU target table (gpu_target.h). */
#include "kernels/gpu_target.h"

#include <string.h>

/* SPIR-V is a stream of 32-bit words; code objects and PTX are byte strings
 * that the drivers copy, so they need no alignment of their own. */
const halo_target_info halo_targets[HALO_TARGET_COUNT] = {
	[HALO_TARGET_VULKAN] = {"vulkan", "vulkan", "spirv", 4},
	[HALO_TARGET_HIP_GFX1151] = {"hip-gfx1151", "hip", "hsaco-gfx1151", 1},
	[HALO_TARGET_CUDA_SM90] = {"cuda-sm90", "cuda", "ptx-sm90", 1},
};

int halo_target_find(const char *s)
{
	for (int t = 0; t < HALO_TARGET_COUNT; t++)
		if (strcmp(s, halo_targets[t].name) == 0 || strcmp(s, halo_targets[t].short_name) == 0)
			return t;
	return -1;
}
