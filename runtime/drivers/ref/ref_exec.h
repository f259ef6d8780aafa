/* Executes one dispatch's recorded semantics with the reference ops.
 * resolve(ctx, t) returns the host address of a tensor operand (f32 for float
 * tensors, i32 for ids). The dispatch's prologue, main op and epilogue chain
 * run in that order, exactly as docs/ops.md defines them. */
#ifndef HALO_RUNTIME_REF_EXEC_H
#define HALO_RUNTIME_REF_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/manifest.h"

typedef void *(*ref_resolve_fn)(void *ctx, const halo_tensor_ref *t);

bool ref_exec_dispatch(const halo_dispatch *d, int64_t T, int64_t pos, ref_resolve_fn resolve, void *ctx,
		       char *err, size_t errlen);

#endif
