/* Builds the kernel candidates of every dispatch: the kernel variants
 * (codegen/kernel_variant.h) of the dispatch's op, operand shapes and fused
 * ops, one per tile choice of kv_variant_space (at most 8, the heuristic
 * first, at least one that needs no device feature), each compiled to
 * validated SPIR-V (codegen/glsl_compile.h) and, for the hip and cuda
 * targets, to a gfx1151 code object and sm_90 PTX from its HIP-dialect twin
 * (codegen/hip_compile.h). Dispatches whose kernels have
 * the same key share one choice (the runtime runs one candidate per choice);
 * variants with the same signature are compiled once and shared.
 *
 * Fills man->kernels and man->choices (malloc'd, owned by man, freed with
 * manifest_free or manifest_free_kernels), each kernel's code ranges and
 * each dispatch's choice; out receives, per wanted target, its section:
 * the kernels' code concatenated in kernel order. Every choice must have a
 * candidate on every wanted target (an error names the template without a
 * twin otherwise). Deterministic: kernels and choices in first-use order,
 * whatever the number of cores the kernels are compiled on. */
#ifndef HALO_CODEGEN_SELECT_KERNELS_H
#define HALO_CODEGEN_SELECT_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/manifest.h"

/* The kernel sections, one per GPU target (data NULL where not wanted). */
typedef struct {
	uint8_t *data[HALO_TARGET_COUNT]; /* malloc'd */
	size_t size[HALO_TARGET_COUNT];
} cg_kernel_sections;

/* gpu_all: every candidate with a HIP twin gets code for the hip and cuda
 * targets, not only the one those backends pick (for tests that force the
 * others: cg_compile_options.gpu_all_variants). */
bool cg_select_kernels(halo_manifest *man, const bool want[HALO_TARGET_COUNT], bool gpu_all, cg_kernel_sections *out,
		       char *err, size_t errlen);
void cg_kernel_sections_free(cg_kernel_sections *s);

#endif
