/* Element types shared by the compiler, the bundle and every backend.
 * The numeric values are part of the bundle format: append only. */
#ifndef HALO_DTYPE_H
#define HALO_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
	HALO_F32 = 0,
	HALO_F16 = 1,
	HALO_BF16 = 2,
	HALO_I32 = 3,
	HALO_I64 = 4,
	HALO_F8E4M3 = 5,
	HALO_DTYPE_COUNT
} halo_dtype;

/* Bytes per element. */
size_t halo_dtype_size(halo_dtype t);
/* "f32", "f16", ...; NULL for out-of-range values. */
const char *halo_dtype_name(halo_dtype t);
/* Parses a name produced by halo_dtype_name(). */
bool halo_dtype_from_name(const char *name, halo_dtype *out);

#endif
