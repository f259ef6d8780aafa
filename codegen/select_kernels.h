/* Builds the kernel candidates of every dispatch: the kernel variants
 * (codegen/kernel_variant.h) of the dispatch's op, operand shapes and fused
 * ops, one per tile choice of kv_variant_space (at most 8, the heuristic
 * first, at least one that needs no device feature), each compiled to
 * validated SPIR-V (codegen/glsl_compile.h). Dispatches whose kernels have
 * the same key share one choice (the runtime runs one candidate per choice);
 * variants with the same signature are compiled once and shared.
 *
 * Fills man->kernels and man->choices (malloc'd, owned by man, freed with
 * manifest_free or manifest_free_kernels) and each dispatch's choice;
 * *spirv (malloc'd, caller frees) receives the concatenated modules of the
 * "spirv" section. Deterministic: kernels and choices in first-use order,
 * whatever the number of cores the kernels are compiled on. */
#ifndef HALO_CODEGEN_SELECT_KERNELS_H
#define HALO_CODEGEN_SELECT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/manifest.h"

bool cg_select_kernels(halo_manifest *man, uint8_t **spirv, size_t *spirv_size, char *err, size_t errlen);

#endif
