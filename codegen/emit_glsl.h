/* The GLSL emitter: renders a kernel plan (codegen/kernel_plan.h) as one
 * compute shader for Vulkan, from the kernels/vulkan templates: the
 * plan's constants as #defines (uint constants with a `u` suffix, floats
 * as literals that read back as the same f32, arrays as const tables),
 * the fused ops as an `epilogue(v, i)` function (and an elementwise
 * kernel's `main_op(i)`), the prelude, the template and matvec's
 * per-column-count paths. The plan decides; this file only spells. */
#ifndef HALO_EMIT_GLSL_H
#define HALO_EMIT_GLSL_H

#include <stdbool.h>
#include <stddef.h>

#include "codegen/kernel_plan.h"

/* The source of plan p for descriptor d, headed by a comment naming the
 * signature: malloc'd (caller frees), or NULL with a message in err when
 * a template is not embedded. *file receives the template's file name
 * (static storage, e.g. "matvec.comp"). */
char *kv_emit_glsl(const kv_desc *d, const kv_plan *p, const char *signature, const char **file, char *err,
		   size_t errlen);

#endif
