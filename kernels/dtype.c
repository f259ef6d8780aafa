#include "kernels/dtype.h"

#include <string.h>

static const struct {
	const char *name;
	size_t size;
} dtype_info[HALO_DTYPE_COUNT] = {
	[HALO_F32] = {"f32", 4},  [HALO_F16] = {"f16", 2},
	[HALO_BF16] = {"bf16", 2}, [HALO_I32] = {"i32", 4},
	[HALO_I64] = {"i64", 8},  [HALO_F8E4M3] = {"f8e4m3", 1},
};

size_t halo_dtype_size(halo_dtype t)
{
	return (unsigned)t < HALO_DTYPE_COUNT ? dtype_info[t].size : 0;
}

const char *halo_dtype_name(halo_dtype t)
{
	return (unsigned)t < HALO_DTYPE_COUNT ? dtype_info[t].name : NULL;
}

bool halo_dtype_from_name(const char *name, halo_dtype *out)
{
	for (int i = 0; i < HALO_DTYPE_COUNT; i++) {
		if (strcmp(name, dtype_info[i].name) == 0) {
			*out = (halo_dtype)i;
			return true;
		}
	}
	return false;
}
