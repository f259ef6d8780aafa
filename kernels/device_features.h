/* Device features a kernel variant may need beyond Vulkan 1.1 compute, shared
 * by the compiler (which records them per kernel, codegen/kernel_variant.h)
 * and the runtime (which runs a variant only on a device that has them all,
 * runtime/vulkan/vk_device.h). The manifest names them (docs/manifest.md). */
#ifndef HALO_DEVICE_FEATURES_H
#define HALO_DEVICE_FEATURES_H

enum {
	HALO_NEED_SUBGROUP_SHUFFLE = 1u << 0, /* subgroupShuffleXor in compute shaders */
	HALO_NEED_COOPMAT_NV = 1u << 1,       /* VK_NV_cooperative_matrix with f16 A/B, f32 C, subgroup scope */
};

#endif
