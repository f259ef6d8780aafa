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

uint16_t half_from_f32(float f);
float half_to_f32(uint16_t h);
uint16_t bf16_from_f32(float f);
float bf16_to_f32(uint16_t h);

/* Array forms: n elements, caller-owned buffers. */
void half_from_f32_array(const float *src, uint16_t *dst, size_t n);
void half_to_f32_array(const uint16_t *src, float *dst, size_t n);
void bf16_to_f32_array(const uint16_t *src, float *dst, size_t n);

#endif
