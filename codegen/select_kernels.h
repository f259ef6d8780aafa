/* Picks and builds the kernel of every dispatch: a kernel variant
 * (codegen/kernel_variant.h) from the dispatch's op, operand shapes and fused
 * ops, compiled to validated SPIR-V (codegen/glsl_compile.h). Variants with
 * the same signature are compiled once and shared.
 *
 * Fills man->kernels (malloc'd, owned by man, freed with manifest_free) and
 * each dispatch's kernel and groups; *spirv (malloc'd, caller frees) receives
 * the concatenated modules of the "spirv" section. */
#ifndef HALO_CODEGEN_SELECT_KERNELS_H
#define HALO_CODEGEN_SELECT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/manifest.h"

bool cg_select_kernels(halo_manifest *man, uint8_t **spirv, size_t *spirv_size, char *err, size_t errlen);

#endif
