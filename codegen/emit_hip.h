/* The HIP-dialect emitter: renders a kernel plan (codegen/kernel_plan.h) as
 * one kernel for the hip-gfx1151 and cuda-sm90 targets, from the
 * kernels/hip templates (kernels/hip/README.md): the compatibility header,
 * the plan's constants as in GLSL, then a struct holding the launch's
 * arguments whose members are the prelude, the fused ops (emit_kernel.h),
 * the template and matvec's per-column-count paths, and the entry point
 * `halo_main` that runs the struct's main() (a matvec also `halo_main_t1`,
 * for steps of one token: kernels/gpu_target.h). */
#ifndef HALO_EMIT_HIP_H
#define HALO_EMIT_HIP_H

#include <stddef.h>

#include "codegen/kernel_plan.h"

/* The source of plan p for descriptor d, headed by a comment naming the
 * signature: malloc'd (caller frees), or NULL with a message in err when
 * the template has no HIP twin. */
char *kv_emit_hip(const kv_desc *d, const kv_plan *p, const char *signature, char *err, size_t errlen);

#endif
