/* GLSL -> SPIR-V for the Vulkan kernels: shaderc (static) targeting Vulkan 1.1
 * / SPIR-V 1.3; every module returned has passed the SPIR-V validator
 * (spvValidate).
 *
 * A glsl_compiler owns a shaderc compiler and a SPIRV-Tools context; reuse
 * one for many kernels (the first compile initialises glslang). A
 * glsl_spirv owns its words (glsl_spirv_free). One compiler serves one thread
 * at a time; threads that compile at once each make their own. */
#ifndef HALO_GLSL_COMPILE_H
#define HALO_GLSL_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codegen/kernel_cache.h"

typedef struct glsl_compiler glsl_compiler;

typedef struct {
	uint32_t *words;
	size_t n_words;
} glsl_spirv;

/* NULL when shaderc cannot start. */
glsl_compiler *glsl_compiler_new(void);
void glsl_compiler_free(glsl_compiler *c); /* NULL ok */
/* Modules come from and go to cache (not owned; NULL: none, the default).
 * Only validated modules are stored, so a hit is returned as it is. A
 * build whose GLSL toolchain dpkg could not name (codegen/meson.build)
 * caches nothing: an entry's key must name the compiler that made it. */
void glsl_compiler_use_cache(glsl_compiler *c, const cg_kernel_cache *cache);

/* Compiles a compute shader. `name` labels messages ("<name>:<line>: error").
 * With optimize, shaderc's performance passes (spirv-opt -O) run too. The
 * result is validated; when an optimised module fails, the unoptimised one
 * is validated as well, so the message says whether the template or the
 * optimiser made the invalid module. False with the compiler's or
 * validator's message in err (errlen bytes); *out then holds nothing. */
bool glsl_compile(glsl_compiler *c, const char *source, const char *name, bool optimize,
		  glsl_spirv *out, char *err, size_t errlen);
void glsl_spirv_free(glsl_spirv *s);

#endif
