/* HIP-dialect source -> a GPU binary, with clang-19 run as a subprocess
 * (no LLVM library is linked into halo, and neither ROCm nor the CUDA
 * toolkit is needed): a gfx1151 code object (an lld-linked .hsaco, ELF,
 * code object v5, wave32) or sm_90 PTX text for the CUDA driver.
 *
 * The source goes in on stdin, so no path can reach the output; the code
 * object gets no compilation-unit id (-fuse-cuid=none: clang derives one
 * from the output path, a random scratch name here); and the CUDA
 * installation clang would look for is pinned to an empty directory, so the
 * PTX version (7.8) does not depend on what the machine has installed: the
 * same source gives the same bytes everywhere. The compiler is `clang-19`
 * from PATH, or $HALO_CLANG. */
#ifndef HALO_HIP_COMPILE_H
#define HALO_HIP_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/kernel_cache.h"

typedef enum { CG_ARCH_GFX1151, CG_ARCH_SM90 } cg_gpu_arch;

/* Compiles source (labelled `name` in messages) for arch. On success *out
 * (malloc'd, caller frees) holds *size bytes. False with clang's message,
 * or why it could not run, in err (errlen bytes); *out is then NULL.
 * cache (NULL: none): the result comes from it when it holds one for this
 * source, these flags and this clang (its `--version` text), and goes to it
 * otherwise. */
bool cg_hip_compile(cg_gpu_arch arch, const char *source, const char *name, const cg_kernel_cache *cache,
		    uint8_t **out, size_t *size, char *err, size_t errlen);

#endif
