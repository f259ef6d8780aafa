/* IEEE 754 binary16 and bfloat16 <-> binary32 conversions.
 * f32 -> f16/bf16 rounds to nearest, ties to even; overflow gives infinity,
 * NaN stays NaN (quiet). f16/bf16 -> f32 is exact. No allocation. */
#ifndef HALO_REF_HALF_H
#define HALO_REF_HALF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The bits of an f32 and the f32 of given bits (a type pun without
 * aliasing). */
static inline uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static inline float f32_from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

/* f32 -> f16 with each case's result formed and the right one selected:
 * the same steps as half_from_f32_array's 8-wide loop (half.c; GCC does
 * not vectorise a loop over this form by itself), which the converter
 * runs over every weight of a checkpoint. Normal halves round by
 * integer carry (the exponent rebiased by -112 << 23, then 0xfff plus the
 * kept mantissa's lowest bit added below bit 13: a carry out of the
 * mantissa rolls into the exponent, up to infinity); subnormal ones by an
 * f32 addition of 0.5, whose ulp 2^-24 is the half's subnormal step, so
 * the FPU rounds (to nearest even, the default mode); from 65520 on
 * (halfway past the largest half, ties to its odd mantissa's even
 * neighbour) infinity; NaN keeps its top payload bits and is made quiet. */
static inline uint16_t half_from_f32(float f)
{
	uint32_t u = f32_bits(f), a = u & 0x7fffffffu;
	uint32_t normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
	uint32_t subnormal = f32_bits(f32_from_bits(a) + 0.5f) - 0x3f000000u;
	uint32_t special = a > 0x7f800000u ? 0x7e00u | ((a >> 13) & 0x3ffu) : 0x7c00u;
	uint32_t r = a >= 0x477ff000u ? special : a < 0x38800000u ? subnormal : normal;
	return (uint16_t)(((u >> 16) & 0x8000u) | r);
}

/* f16 -> f32, exact: a subnormal m * 2^-24 is an exact f32 product. */
static inline float half_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
	if (e == 0)
		return f32_from_bits(sign | f32_bits((float)m * 0x1p-24f));
	return f32_from_bits(sign | (e == 0x1f ? 0x7f800000u : (e + 112u) << 23) | m << 13);
}
uint16_t bf16_from_f32(float f);
float bf16_to_f32(uint16_t h);

/* Array forms: n elements, caller-owned buffers. */
void half_from_f32_array(const float *src, uint16_t *dst, size_t n);
void half_to_f32_array(const uint16_t *src, float *dst, size_t n);
void bf16_to_f32_array(const uint16_t *src, float *dst, size_t n);
/* n bf16 values stored little-endian at src (any alignment: a checkpoint's
 * tensors start at any byte). */
void bf16_le_to_f32_array(const uint8_t *src, float *dst, size_t n);

#endif
