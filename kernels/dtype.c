#include "kernels/dtype.h"

#include <string.h>

/* block: elements per block; bytes: bytes per block. */
static const struct {
	const char *name;
	size_t block, bytes;
} dtype_info[HALO_DTYPE_COUNT] = {
	[HALO_F32] = {"f32", 1, 4},        [HALO_F16] = {"f16", 1, 2},
	[HALO_BF16] = {"bf16", 1, 2},      [HALO_I32] = {"i32", 1, 4},
	[HALO_I64] = {"i64", 1, 8},        [HALO_F8E4M3] = {"f8e4m3", 1, 1},
	/* 32 int8 + an f16 scale; 256 4-bit values + 16 bytes of scales;
	 * 128 fp8 + an f32 scale; 32 E2M1 + an E8M0 byte */
	[HALO_Q8_0] = {"q8_0", 32, 34},    [HALO_Q4_K] = {"q4_k", 256, 144},
	[HALO_F8E4M3_B128] = {"f8e4m3_b128", 128, 132},
	[HALO_MXFP4] = {"mxfp4", 32, 17},
};

size_t halo_dtype_size(halo_dtype t)
{
	return (unsigned)t < HALO_DTYPE_COUNT && dtype_info[t].block == 1 ? dtype_info[t].bytes : 0;
}

size_t halo_dtype_block(halo_dtype t)
{
	return (unsigned)t < HALO_DTYPE_COUNT ? dtype_info[t].block : 0;
}

size_t halo_dtype_bytes(halo_dtype t, size_t n)
{
	return (unsigned)t < HALO_DTYPE_COUNT ? n / dtype_info[t].block * dtype_info[t].bytes : 0;
}

bool halo_dtype_is_quant(halo_dtype t)
{
	return (unsigned)t < HALO_DTYPE_COUNT && dtype_info[t].block > 1;
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
