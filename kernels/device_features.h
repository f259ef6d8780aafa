/* Device features a kernel variant may need beyond Vulkan 1.1 compute, shared
 * by the compiler (which records them per kernel, codegen/kernel_variant.h)
 * and the runtime (which runs a variant only on a device that has them all,
 * runtime/drivers/vulkan/vk_device.h). The manifest names them (docs/manifest.md). */
#ifndef HALO_DEVICE_FEATURES_H
#define HALO_DEVICE_FEATURES_H

enum {
	HALO_NEED_SUBGROUP_SHUFFLE = 1u << 0, /* subgroupShuffleXor in compute shaders */
	HALO_NEED_COOPMAT_NV = 1u << 1,       /* VK_NV_cooperative_matrix with f16 A/B, f32 C, subgroup scope */
	HALO_NEED_INT_DOT = 1u << 2,          /* VK_KHR_shader_integer_dot_product: OpSDot on packed int8 */
};

#include <stdbool.h>
#include <stdint.h>

/* The manifest's name of one HALO_NEED_* bit ("subgroup_shuffle",
 * "coopmat_nv", "int_dot"; static storage), or NULL for a bit without a name. */
const char *halo_need_name(uint32_t bit);
/* The bit a manifest name stands for; false for an unknown name. */
bool halo_need_from_name(const char *name, uint32_t *bit);
/* Every bit that has a name. */
uint32_t halo_need_known(void);

#endif
