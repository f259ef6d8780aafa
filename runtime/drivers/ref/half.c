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

/* The array forms run 8 elements a step in GCC's vector extension (the
 * compilers leave the scalar loops' selects as branches and do not
 * vectorise them), then the scalar form for the tail: the same operations,
 * so the same bits (test_ref compares them). Comparisons
 * give -1 where true; PICK() picks by that mask. */
typedef uint32_t u32x8 __attribute__((vector_size(32)));
typedef int32_t i32x8 __attribute__((vector_size(32)));
typedef uint16_t u16x8 __attribute__((vector_size(16)));
typedef float f32x8 __attribute__((vector_size(32)));

/* (a macro: a function returning a 32-byte vector changes the ABI where
 * AVX is off) */
#define PICK(mask, a, b) (((u32x8)(mask) & (a)) | (~(u32x8)(mask) & (b)))

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* F16C's conversion, one instruction per 8: it rounds to nearest even (the
 * immediate, whatever MXCSR says), gives infinity past the largest half and
 * quiets a NaN keeping its top payload bits, as the steps below do, so the
 * same bits (test_ref compares the array form with half_from_f32); a third
 * of an f16 checkpoint conversion's time went to those steps. Returns the
 * elements converted (whole vectors of 8). */
__attribute__((target("avx,f16c"))) static size_t half_from_f32_f16c(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm_storeu_si128((__m128i *)(void *)(dst + i),
				 _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
	return i;
}
#endif

void half_from_f32_array(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (__builtin_cpu_supports("f16c"))
		i = half_from_f32_f16c(src, dst, n);
#endif
	for (; i + 8 <= n; i += 8) {
		u32x8 u;
		memcpy(&u, src + i, sizeof u);
		u32x8 a = u & 0x7fffffffu;
		i32x8 as = (i32x8)a; /* below 2^31: signed comparisons are exact */
		u32x8 normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
		u32x8 subnormal = (u32x8)((f32x8)a + 0.5f) - 0x3f000000u;
		u32x8 special = PICK(as > 0x7f800000, 0x7e00u | ((a >> 13) & 0x3ffu), (u32x8){0} + 0x7c00u);
		u32x8 r = PICK(as >= 0x477ff000, special, PICK(as < 0x38800000, subnormal, normal));
		u16x8 h = __builtin_convertvector(((u >> 16) & 0x8000u) | r, u16x8);
		memcpy(dst + i, &h, sizeof h);
	}
	for (; i < n; i++)
		dst[i] = half_from_f32(src[i]);
}

void half_to_f32_array(const uint16_t *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = half_to_f32(src[i]);
}

/* Eight bf16 values in host order at src (any alignment) to f32. */
static void bf16x8_to_f32(const void *src, float *dst)
{
	u16x8 h;
	memcpy(&h, src, sizeof h);
	u32x8 f = __builtin_convertvector(h, u32x8) << 16;
	memcpy(dst, &f, sizeof f);
}

void bf16_to_f32_array(const uint16_t *src, float *dst, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		bf16x8_to_f32(src + i, dst + i);
	for (; i < n; i++)
		dst[i] = bf16_to_f32(src[i]);
}

void bf16_le_to_f32_array(const uint8_t *src, float *dst, size_t n)
{
	size_t i = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	for (; i + 8 <= n; i += 8)
		bf16x8_to_f32(src + 2 * i, dst + i);
#endif
	for (; i < n; i++)
		dst[i] = bf16_to_f32((uint16_t)(src[2 * i] | src[2 * i + 1] << 8));
}
