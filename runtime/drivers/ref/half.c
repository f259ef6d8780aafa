#include "runtime/drivers/ref/half.h"

/* Shifts a right by s bits rounding to nearest, ties to even. */
static uint32_t shift_rne(uint32_t a, unsigned s)
{
	if (s == 0)
		return a;
	if (s > 31)
		return 0;
	uint32_t q = a >> s;
	uint32_t rem = a & ((1u << s) - 1);
	uint32_t halfway = 1u << (s - 1);
	if (rem > halfway || (rem == halfway && (q & 1)))
		q++;
	return q;
}

uint16_t half_from_f32(float f)
{
	uint32_t u = f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t exp = (u >> 23) & 0xff;
	uint32_t man = u & 0x7fffff;
	if (exp == 0xff) /* inf or NaN (keep NaN quiet and non-zero) */
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		/* Subnormal half: value = man24 * 2^(exp-150); half unit 2^-24. */
		if (e < -10)
			return sign;
		uint32_t m = man | 0x800000;
		return (uint16_t)(sign | shift_rne(m, (unsigned)(14 - e)));
	}
	/* A carry out of the mantissa rolls into the exponent, which is exactly
	 * the right result (up to infinity). */
	uint32_t r = ((uint32_t)e << 10) + shift_rne(man, 13);
	return (uint16_t)(sign | r);
}

float half_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;
	if (exp == 0x1f)
		return f32_from_bits(sign | 0x7f800000 | (man << 13));
	if (exp == 0) {
		if (man == 0)
			return f32_from_bits(sign);
		/* Normalise the subnormal: shift until the implicit bit appears. */
		int e = -14;
		while (!(man & 0x400)) {
			man <<= 1;
			e--;
		}
		man &= 0x3ff;
		return f32_from_bits(sign | ((uint32_t)(e + 127) << 23) | (man << 13));
	}
	return f32_from_bits(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t bf16_from_f32(float f)
{
	uint32_t u = f32_bits(f);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x40);
	return (uint16_t)(shift_rne(u & 0x7fffffff, 16) | ((u >> 16) & 0x8000));
}

float bf16_to_f32(uint16_t h)
{
	return f32_from_bits((uint32_t)h << 16);
}

void half_from_f32_array(const float *src, uint16_t *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = half_from_f32(src[i]);
}

void half_to_f32_array(const uint16_t *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = half_to_f32(src[i]);
}

void bf16_to_f32_array(const uint16_t *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = bf16_to_f32(src[i]);
}
