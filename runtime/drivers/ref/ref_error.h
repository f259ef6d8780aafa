/* Formatting of ref_error messages (runtime/ref internal). */
#ifndef HALO_REF_ERROR_H
#define HALO_REF_ERROR_H

#include "runtime/drivers/ref/ref_ops.h"

/* Writes "op: message" into err (when err is not NULL); always returns false
 * so callers can `return ref_fail(...)`. */
bool ref_fail(ref_error *err, const char *op, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
