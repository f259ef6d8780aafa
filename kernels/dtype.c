#include "kernels/dtype.h"

#include <stdint.h>
#include <string.h>

/* block: elements per block (a row is whole blocks); bits: per element;
 * group: elements per scale group (0: none), group_bytes: its scale bytes.
 * A row of k elements takes k * bits / 8 bytes of values and
 * ceil(k / group) * group_bytes of scales. */
static const struct {
	const char *name;
	size_t block, bits, group, group_bytes;
} dtype_info[HALO_DTYPE_COUNT] = {
	[HALO_F32] = {"f32", 1, 32, 0, 0},       [HALO_F16] = {"f16", 1, 16, 0, 0},
	[HALO_BF16] = {"bf16", 1, 16, 0, 0},     [HALO_I32] = {"i32", 1, 32, 0, 0},
	[HALO_I64] = {"i64", 1, 64, 0, 0},       [HALO_F8E4M3] = {"f8e4m3", 1, 8, 0, 0},
	/* int8 + an f16 scale per 32; 4-bit values + 16 bytes of scales per
	 * super-block of 256 (the last one of a row may be partial); fp8 + an
	 * f32 scale per 128; E2M1 + an E8M0 byte per 32 */
	[HALO_Q8_0] = {"q8_0", 32, 8, 32, 2},    [HALO_Q4_K] = {"q4_k", 32, 4, 256, 16},
	[HALO_F8E4M3_B128] = {"f8e4m3_b128", 128, 8, 128, 4},
	[HALO_MXFP4] = {"mxfp4", 32, 4, 32, 1},
};

size_t halo_dtype_size(halo_dtype t)
{
	return (unsigned)t < HALO_DTYPE_COUNT && dtype_info[t].block == 1 ? dtype_info[t].bits / 8 : 0;
}

size_t halo_dtype_block(halo_dtype t)
{
	return (unsigned)t < HALO_DTYPE_COUNT ? dtype_info[t].block : 0;
}

size_t halo_dtype_bytes(halo_dtype t, size_t rows, size_t k)
{
	if ((unsigned)t >= HALO_DTYPE_COUNT)
		return 0;
	size_t g = dtype_info[t].group, scales = g ? (k + g - 1) / g * dtype_info[t].group_bytes : 0, row, n;
	if (k > SIZE_MAX / 64 || __builtin_mul_overflow(rows, row = k * dtype_info[t].bits / 8 + scales, &n))
		return SIZE_MAX;
	return n;
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
