#include "runtime/drivers/ref/quant.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "runtime/drivers/ref/half.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

/* The bytes must not depend on the compiler: no multiply and add fused
 * into one rounding. GCC contracts nothing under ISO C (-std=c17, which
 * meson.build sets); clang contracts within an expression unless told. */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

enum {
	Q8_BLOCK = 32,
	Q4_SUPER = 256,
	Q4_SUB = 32,
	Q4_SUBS = Q4_SUPER / Q4_SUB,
	Q4_META = 16, /* scale bytes per super-block */
	F8_BLOCK = 128,
	MX_BLOCK = 32,
	MX_EMAX = 2,  /* E2M1's largest exponent: 6 = 1.5 * 2^2 */
	MX_EMIN = -127, /* the smallest E8M0 scale's exponent (byte 0) */
};

/* roundf(v) (halves away from zero) clamped to [lo, hi], without libm's
 * roundf call (the quantizer's inner loop): v is first clamped to
 * [lo - 1, hi + 1], which changes no result, then truncated, and the exact
 * remainder v - trunc(v) rounds it. */
static int clampi(float v, int lo, int hi)
{
	v = v < (float)(lo - 1) ? (float)(lo - 1) : (v > (float)(hi + 1) ? (float)(hi + 1) : v);
	int i = (int)v;
	float f = v - (float)i;
	i += (f >= 0.5f) - (f <= -0.5f);
	return i < lo ? lo : (i > hi ? hi : i);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The largest magnitude of x[0..n): the value a block's scale is made from. */
static float block_amax(const float *x, int n)
{
	float amax = 0.0f;
	for (int i = 0; i < n; i++)
		amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
	return amax;
}

/* ---- q8_0 ---- */

/* The scale is quantized first and q computed against the stored value, so
 * that dequantization multiplies by exactly the scale q was rounded for. A
 * block whose largest magnitude exceeds 127 * 65504 saturates. */
static void q8_row(const float *x, uint64_t k, uint8_t *values, uint8_t *scales)
{
	int8_t *q = (int8_t *)values;
	for (uint64_t b = 0; b < k / Q8_BLOCK; b++) {
		const float *xb = x + b * Q8_BLOCK;
		float amax = block_amax(xb, Q8_BLOCK);
		uint16_t dh = half_from_f32(fminf(amax / 127.0f, 65504.0f));
		float d = half_to_f32(dh), id = d > 0.0f ? 1.0f / d : 0.0f;
		for (int i = 0; i < Q8_BLOCK; i++)
			q[b * Q8_BLOCK + i] = (int8_t)clampi(xb[i] * id, -127, 127);
		scales[2 * b] = (uint8_t)dh;
		scales[2 * b + 1] = (uint8_t)(dh >> 8);
	}
}

static void q8_dequant_row(const uint8_t *values, const uint8_t *scales, uint64_t k, float *x)
{
	const int8_t *q = (const int8_t *)values;
	for (uint64_t b = 0; b < k / Q8_BLOCK; b++) {
		float d = half_to_f32((uint16_t)(scales[2 * b] | scales[2 * b + 1] << 8));
		for (int i = 0; i < Q8_BLOCK; i++)
			x[b * Q8_BLOCK + i] = d * (float)q[b * Q8_BLOCK + i];
	}
}

/* ---- q4_k ---- */

/* The search's inner loops in 4-wide vectors (GCC/Clang vector extensions:
 * SSE2 on baseline x86-64, NEON on arm64): every lane is computed as the
 * scalar code would, and the float sums are kept per lane and added in a
 * fixed order, so the bytes depend on nothing but the input. */
typedef float v4f __attribute__((vector_size(16)));
typedef int32_t v4i __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));
typedef double v4d __attribute__((vector_size(32)));

static v4f load4(const float *p)
{
	v4f v;
	memcpy(&v, p, sizeof v);
	return v;
}

static float sum4(v4f p)
{
	return (p[0] + p[1]) + (p[2] + p[3]);
}

/* The sums the least-squares refit needs over the codes
 * q[i] = round((x[i] - lo) * iscale) clamped to 0..15, in 4-wide vectors:
 * the argument is clamped to 16 first, truncated, and the exact remainder
 * rounds it as roundf would (x[i] >= lo, so it is not negative). The
 * definition the wider searches below match lane for lane. */
static void q4_codes(const float *x, float lo, float iscale, int *sq, int *sqq, float *sxq)
{
	/* the code sums are small whole numbers, exact in float lanes */
	v4f a = {0}, aa = {0}, p = {0};
	const v4f sixteen = (v4f){0} + 16.0f, fifteen = (v4f){0} + 15.0f;
	for (int i = 0; i < Q4_SUB / 4; i++) {
		v4f xv = load4(x + 4 * i), v = (xv - lo) * iscale;
		v4i big = v > sixteen;
		v = (v4f)((big & (v4i)sixteen) | (~big & (v4i)v));
		v4i c = __builtin_convertvector(v, v4i);
		c -= v - __builtin_convertvector(c, v4f) >= 0.5f; /* a true lane is -1 */
		v4f cf = __builtin_convertvector(c, v4f);
		big = cf > fifteen;
		cf = (v4f)((big & (v4i)fifteen) | (~big & (v4i)cf));
		a += cf;
		aa += cf * cf;
		p += xv * cf;
	}
	*sq = (int)sum4(a);
	*sqq = (int)sum4(aa);
	*sxq = sum4(p);
}

/* The search's candidate steps: 1/iscale = (hi - lo) / (15 + 0.1 step),
 * step = -10..10, tried in that order. */
#define Q4_STEPS 21

static float q4_iscale(float lo, float hi, int c)
{
	return (15.0f + 0.1f * (float)(c - 10)) / (hi - lo);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* Several candidates at once: two in an 8-wide vector (AVX2), four in a
 * 16-wide one (AVX-512). Lane l of each candidate's four runs the 4-wide
 * code's lane l (elements l, l + 4, ... of the sub-block) with the same
 * operations: x - lo is computed once per sub-block instead of once per
 * candidate (the same value), and the clamps are min(16, v) and min(15,
 * c), which (MINPS returns its second operand unless the first is smaller)
 * give what the compare and select give, a NaN included. So the sums, and
 * the bytes, are the 4-wide code's (test_quant pins them). The products
 * x * q are added as a multiply and an add: ISO C (-std=c17) does not
 * contract them into one fused operation. About half the instructions per
 * candidate of the compare-and-select form, and most of q4_k's conversion
 * time is this search. */

/* Each candidate's sums from its four lanes (a_, aa_, p_: the vectors'
 * lanes stored), added as sum4 adds them. */
static inline __attribute__((always_inline)) void q4_lane_sums(const float *a_, const float *aa_, const float *p_, int n, int *sq, int *sqq, float *sxq)
{
	for (int h = 0; h < n; h++) {
		sq[h] = (int)((a_[4 * h] + a_[4 * h + 1]) + (a_[4 * h + 2] + a_[4 * h + 3]));
		sqq[h] = (int)((aa_[4 * h] + aa_[4 * h + 1]) + (aa_[4 * h + 2] + aa_[4 * h + 3]));
		sxq[h] = (p_[4 * h] + p_[4 * h + 1]) + (p_[4 * h + 2] + p_[4 * h + 3]);
	}
}

__attribute__((target("avx2"))) static int q4_candidates_avx2(const float *x, float lo, float hi, int *sq, int *sqq,
							     float *sxq)
{
	__m256 xv[Q4_SUB / 4], dv[Q4_SUB / 4];
	for (int i = 0; i < Q4_SUB / 4; i++) {
		__m128 x4 = _mm_loadu_ps(x + 4 * i);
		xv[i] = _mm256_set_m128(x4, x4);
		dv[i] = _mm256_sub_ps(xv[i], _mm256_set1_ps(lo));
	}
	const __m256 sixteen = _mm256_set1_ps(16.0f), fifteen = _mm256_set1_ps(15.0f), half = _mm256_set1_ps(0.5f);
	int c = 0;
	for (; c + 2 <= Q4_STEPS; c += 2) {
		float isc[8];
		for (int l = 0; l < 8; l++)
			isc[l] = q4_iscale(lo, hi, c + l / 4);
		__m256 is = _mm256_loadu_ps(isc);
		__m256 a = _mm256_setzero_ps(), aa = a, p = a;
		for (int i = 0; i < Q4_SUB / 4; i++) {
			__m256 v = _mm256_min_ps(sixteen, _mm256_mul_ps(dv[i], is));
			__m256i t = _mm256_cvttps_epi32(v);
			__m256 up = _mm256_cmp_ps(_mm256_sub_ps(v, _mm256_cvtepi32_ps(t)), half, _CMP_GE_OQ);
			__m256 cf = _mm256_min_ps(fifteen, _mm256_cvtepi32_ps(_mm256_sub_epi32(t, _mm256_castps_si256(up))));
			a = _mm256_add_ps(a, cf);
			aa = _mm256_add_ps(aa, _mm256_mul_ps(cf, cf));
			p = _mm256_add_ps(p, _mm256_mul_ps(xv[i], cf));
		}
		float la[8], laa[8], lp[8];
		_mm256_storeu_ps(la, a);
		_mm256_storeu_ps(laa, aa);
		_mm256_storeu_ps(lp, p);
		q4_lane_sums(la, laa, lp, 2, sq + c, sqq + c, sxq + c);
	}
	return c;
}

__attribute__((target("avx512f"))) static int q4_candidates_avx512(const float *x, float lo, float hi, int *sq,
								  int *sqq, float *sxq)
{
	__m512 xv[Q4_SUB / 4], dv[Q4_SUB / 4];
	for (int i = 0; i < Q4_SUB / 4; i++) {
		xv[i] = _mm512_broadcast_f32x4(_mm_loadu_ps(x + 4 * i));
		dv[i] = _mm512_sub_ps(xv[i], _mm512_set1_ps(lo));
	}
	const __m512 sixteen = _mm512_set1_ps(16.0f), fifteen = _mm512_set1_ps(15.0f), half = _mm512_set1_ps(0.5f);
	const __m512i one = _mm512_set1_epi32(1);
	int c = 0;
	for (; c + 4 <= Q4_STEPS; c += 4) {
		float isc[16];
		for (int l = 0; l < 16; l++)
			isc[l] = q4_iscale(lo, hi, c + l / 4);
		__m512 is = _mm512_loadu_ps(isc);
		__m512 a = _mm512_setzero_ps(), aa = a, p = a;
		for (int i = 0; i < Q4_SUB / 4; i++) {
			__m512 v = _mm512_min_ps(sixteen, _mm512_mul_ps(dv[i], is));
			__m512i t = _mm512_cvttps_epi32(v);
			__mmask16 up = _mm512_cmp_ps_mask(_mm512_sub_ps(v, _mm512_cvtepi32_ps(t)), half, _CMP_GE_OQ);
			__m512 cf = _mm512_min_ps(fifteen, _mm512_cvtepi32_ps(_mm512_mask_add_epi32(t, up, t, one)));
			a = _mm512_add_ps(a, cf);
			aa = _mm512_add_ps(aa, _mm512_mul_ps(cf, cf));
			p = _mm512_add_ps(p, _mm512_mul_ps(xv[i], cf));
		}
		float la[16], laa[16], lp[16];
		_mm512_storeu_ps(la, a);
		_mm512_storeu_ps(laa, aa);
		_mm512_storeu_ps(lp, p);
		q4_lane_sums(la, laa, lp, 4, sq + c, sqq + c, sxq + c);
	}
	return c;
}
#endif

/* Every candidate's code sums, in step order. */
static void q4_candidates(const float *x, float lo, float hi, int *sq, int *sqq, float *sxq)
{
	int c = 0;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (__builtin_cpu_supports("avx512f"))
		c = q4_candidates_avx512(x, lo, hi, sq, sqq, sxq);
	else if (__builtin_cpu_supports("avx2"))
		c = q4_candidates_avx2(x, lo, hi, sq, sqq, sxq);
#endif
	for (; c < Q4_STEPS; c++)
		q4_codes(x, lo, q4_iscale(lo, hi, c), sq + c, sqq + c, sxq + c);
}

/* Squared error of x ~ s * q + b over one sub-block from its sums (n = 32
 * elements): sum (s q + b - x)^2, expanded, in double. */
static double fit_error(float s, float b, int sq, int sqq, float sxq, float sx, float sxx)
{
	double S = s, B = b;
	return S * S * sqq + 2.0 * S * B * sq - 2.0 * S * sxq + (double)Q4_SUB * B * B - 2.0 * B * sx + sxx;
}

/* The candidates' arrays are padded to whole 8-wide vectors; a padding
 * lane's sums are zero, so its det is 0 and its fit invalid. */
#define Q4_STEPS_PAD 24

/* Every candidate's least-squares refit to its codes: scale cs and offset
 * cb (<= 0: where the fit wants a positive offset, the format cannot store
 * it, and s is refitted alone) and squared error ce, +inf where the fit is
 * invalid (det <= 0: every code alike; s <= 0), so that it never wins. In
 * 8-wide vectors (GCC/Clang vector extensions) with no branch on the data:
 * each lane computes what fit_error and the scalar expressions give, in the
 * same order; one definition for both builds below. */
static inline __attribute__((always_inline)) void q4_refits_body(const int *csq, const int *csqq, const float *csxq,
								 float sx, float sxx, float *cs, float *cb, double *ce)
{
	const v8f n = (v8f){0} + (float)Q4_SUB, zero = {0};
	for (int c = 0; c < Q4_STEPS_PAD; c += 8) {
		v8i isq, isqq;
		v8f sxq;
		memcpy(&isq, csq + c, sizeof isq);
		memcpy(&isqq, csqq + c, sizeof isqq);
		memcpy(&sxq, csxq + c, sizeof sxq);
		v8f sq = __builtin_convertvector(isq, v8f), sqq = __builtin_convertvector(isqq, v8f);
		v8f det = n * sqq - sq * sq;
		v8f s = (n * sxq - sq * sx) / det, b = (sqq * sx - sq * sxq) / det, s0 = sxq / sqq;
		v8i pos = b > zero;
		s = (v8f)((pos & (v8i)s0) | (~pos & (v8i)s));
		b = (v8f)(~pos & (v8i)b);
		v8i valid = (det > zero) & (s > zero);
		memcpy(cs + c, &s, sizeof s);
		memcpy(cb + c, &b, sizeof b);
		for (int h = 0; h < 8; h += 4) {
			v4f s4, b4, x4;
			v4i q4, qq4;
			memcpy(&s4, cs + c + h, sizeof s4);
			memcpy(&b4, cb + c + h, sizeof b4);
			memcpy(&x4, csxq + c + h, sizeof x4);
			memcpy(&q4, csq + c + h, sizeof q4);
			memcpy(&qq4, csqq + c + h, sizeof qq4);
			v4d S = __builtin_convertvector(s4, v4d), B = __builtin_convertvector(b4, v4d);
			v4d e = S * S * __builtin_convertvector(qq4, v4d) + 2.0 * S * B * __builtin_convertvector(q4, v4d) -
				2.0 * S * __builtin_convertvector(x4, v4d) + (double)Q4_SUB * B * B - 2.0 * B * (double)sx +
				(double)sxx;
			for (int l = 0; l < 4; l++)
				ce[c + h + l] = valid[h + l] ? e[l] : INFINITY;
		}
	}
}

static void q4_refits(const int *csq, const int *csqq, const float *csxq, float sx, float sxx, float *cs, float *cb,
		      double *ce)
{
	q4_refits_body(csq, csqq, csxq, sx, sxx, cs, cb, ce);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2"))) static void q4_refits_avx2(const int *csq, const int *csqq, const float *csxq,
							   float sx, float sxx, float *cs, float *cb, double *ce)
{
	q4_refits_body(csq, csqq, csxq, sx, sxx, cs, cb, ce);
}
#endif

/* The scale s >= 0 and offset m >= 0 of x ~ s * q - m (q in 0..15) for one
 * sub-block: q from a range of candidate step sizes around (max - min) / 15,
 * then s and m refitted to those q by least squares (m held at 0 where the
 * fit wants a positive offset, which the format cannot store). */
static void q4_fit_sub(const float *x, float *scale, float *offset)
{
	float lo = 0.0f, hi = x[0], sx = 0.0f, sxx = 0.0f;
	for (int i = 0; i < Q4_SUB; i++) {
		lo = x[i] < lo ? x[i] : lo;
		hi = x[i] > hi ? x[i] : hi;
		sx += x[i];
		sxx += x[i] * x[i];
	}
	*scale = (hi - lo) / 15.0f;
	*offset = -lo;
	if (hi <= lo)
		return;
	/* q4_candidates writes steps 0 .. Q4_STEPS - 1; only the padding is
	 * zeroed here (a whole-array initializer was a string store per
	 * sub-block, 4% of q4_k's conversion on one core) */
	int csq[Q4_STEPS_PAD], csqq[Q4_STEPS_PAD];
	float csxq[Q4_STEPS_PAD], cs[Q4_STEPS_PAD], cb[Q4_STEPS_PAD];
	double ce[Q4_STEPS_PAD];
	for (int c = Q4_STEPS; c < Q4_STEPS_PAD; c++) {
		csq[c] = csqq[c] = 0;
		csxq[c] = 0.0f;
	}
	q4_candidates(x, lo, hi, csq, csqq, csxq);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (__builtin_cpu_supports("avx2"))
		q4_refits_avx2(csq, csqq, csxq, sx, sxx, cs, cb, ce);
	else
#endif
		q4_refits(csq, csqq, csxq, sx, sxx, cs, cb, ce);
	/* the first smallest error below the start's, in step order; the
	 * start, (max - min) / 15, is candidate step 0's codes */
	double best = fit_error(*scale, lo, csq[10], csqq[10], csxq[10], sx, sxx);
	int pick = -1;
	for (int c = 0; c < Q4_STEPS; c++)
		if (ce[c] < best) {
			best = ce[c];
			pick = c;
		}
	if (pick >= 0) {
		*scale = cs[pick];
		*offset = -cb[pick];
	}
}

/* Six-bit codes of v / unit, unit = max / 63 rounded to f16. */
static uint16_t q4_units(const float *v, uint8_t *code)
{
	float max = 0.0f;
	for (int j = 0; j < Q4_SUBS; j++)
		max = v[j] > max ? v[j] : max;
	uint16_t uh = half_from_f32(max / 63.0f);
	float unit = half_to_f32(uh);
	for (int j = 0; j < Q4_SUBS; j++)
		code[j] = (uint8_t)(unit > 0.0f ? clampi(v[j] / unit, 0, 63) : 0);
	return uh;
}

static void q4_pack_meta(uint16_t d, uint16_t dmin, const uint8_t *sc, const uint8_t *m, uint8_t *meta)
{
	uint32_t w1 = 0, w2 = 0, w3 = 0;
	for (int j = 0; j < 4; j++) {
		w1 |= (uint32_t)(sc[j] | (sc[j + 4] >> 4) << 6) << (8 * j);
		w2 |= (uint32_t)(m[j] | (m[j + 4] >> 4) << 6) << (8 * j);
		w3 |= (uint32_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4) << (8 * j);
	}
	put_u32(meta, (uint32_t)d | (uint32_t)dmin << 16);
	put_u32(meta + 4, w1);
	put_u32(meta + 8, w2);
	put_u32(meta + 12, w3);
}

/* Sub-block j's codes from a super-block's scale words (the layout in
 * quant.h). */
static void q4_unpack_sub(const uint8_t *meta, int j, int *sc, int *m)
{
	uint32_t w1 = get_u32(meta + 4), w2 = get_u32(meta + 8), w3 = get_u32(meta + 12);
	int b = 8 * (j & 3);
	if (j < 4) {
		*sc = (int)(w1 >> b) & 63;
		*m = (int)(w2 >> b) & 63;
	} else {
		*sc = (int)((w3 >> b) & 15) | (int)((w1 >> (b + 6)) & 3) << 4;
		*m = (int)((w3 >> (b + 4)) & 15) | (int)((w2 >> (b + 6)) & 3) << 4;
	}
}

/* One sub-block's codes against its stored step and offset:
 * clampi((x + off) / step, 0, 15) per element, in 4-wide vectors (the same
 * operations per lane: IEEE division, clamp, truncation, the remainder's
 * rounding). */
static void q4_final_codes(const float *x, float off, float step, int *q)
{
	const v4f lo = {-1, -1, -1, -1}, hi = {16, 16, 16, 16}, half = {0.5f, 0.5f, 0.5f, 0.5f};
	const v4i zero = {0, 0, 0, 0}, fifteen = {15, 15, 15, 15};
	for (int i = 0; i < Q4_SUB; i += 4) {
		v4f v = (load4(x + i) + off) / step;
		v4i below = v < lo, above = v > hi;
		v = (v4f)((below & (v4i)lo) | (above & (v4i)hi) | (~(below | above) & (v4i)v));
		v4i c = __builtin_convertvector(v, v4i);
		v4f f = v - __builtin_convertvector(c, v4f);
		c = c - (f >= half) + (f <= -half); /* a true lane is -1 */
		c &= ~(c < zero);
		v4i over = c > fifteen;
		c = (over & fifteen) | (~over & c);
		memcpy(q + i, &c, sizeof c);
	}
}

/* Super-block s of a row: whole, or the row's last one of n < 256
 * elements (whole sub-blocks), which quantizes as if zero-padded to 256:
 * a zero sub-block fits step 0 and offset 0, which change neither unit, so
 * the present sub-blocks get what they would beside any zero padding, and
 * the absent ones' scale codes are 0. */
static void q4_super(const float *x, int n, uint8_t *values, uint8_t *meta)
{
	/* a whole super-block is read in place; a row's partial last one from
	 * a zero-padded copy */
	float pad[Q4_SUPER];
	const float *xs = x;
	if (n < Q4_SUPER) {
		memcpy(pad, x, (size_t)n * sizeof(float));
		memset(pad + n, 0, (size_t)(Q4_SUPER - n) * sizeof(float));
		xs = pad;
	}
	float scale[Q4_SUBS], offset[Q4_SUBS];
	for (int j = 0; j < Q4_SUBS; j++)
		q4_fit_sub(xs + j * Q4_SUB, &scale[j], &offset[j]);
	uint8_t sc[Q4_SUBS], m[Q4_SUBS];
	uint16_t dh = q4_units(scale, sc), mh = q4_units(offset, m);
	float d = half_to_f32(dh), dmin = half_to_f32(mh);
	q4_pack_meta(dh, mh, sc, m, meta);
	int q[Q4_SUPER];
	for (int j = 0; j < n / Q4_SUB; j++) {
		/* q against the stored scale and offset, as they dequantize */
		float step = d * (float)sc[j], off = dmin * (float)m[j];
		if (step > 0.0f)
			q4_final_codes(xs + j * Q4_SUB, off, step, q + j * Q4_SUB);
		else
			memset(q + j * Q4_SUB, 0, Q4_SUB * sizeof(int));
	}
	for (int i = 0; i < n; i += 2)
		values[i / 2] = (uint8_t)(q[i] | q[i + 1] << 4);
}

static void q4_row(const float *x, uint64_t k, uint8_t *values, uint8_t *scales)
{
	for (uint64_t s = 0; s * Q4_SUPER < k; s++) {
		uint64_t left = k - s * Q4_SUPER;
		q4_super(x + s * Q4_SUPER, left < Q4_SUPER ? (int)left : Q4_SUPER, values + s * Q4_SUPER / 2,
			 scales + s * Q4_META);
	}
}

static void q4_dequant_row(const uint8_t *values, const uint8_t *scales, uint64_t k, float *x)
{
	for (uint64_t s = 0; s * Q4_SUPER < k; s++) {
		const uint8_t *meta = scales + s * Q4_META;
		uint32_t w0 = get_u32(meta);
		float d = half_to_f32((uint16_t)w0), dmin = half_to_f32((uint16_t)(w0 >> 16));
		for (int j = 0; j < Q4_SUBS && s * Q4_SUPER + (uint64_t)(j * Q4_SUB) < k; j++) {
			int sc, m;
			q4_unpack_sub(meta, j, &sc, &m);
			float step = d * (float)sc, off = dmin * (float)m;
			for (int i = 0; i < Q4_SUB; i++) {
				uint64_t e = s * Q4_SUPER + (uint64_t)(j * Q4_SUB + i);
				int q = e & 1 ? values[e / 2] >> 4 : values[e / 2] & 15;
				x[e] = step * (float)q - off;
			}
		}
	}
}

/* ---- f8e4m3_b128 ---- */

/* Codes 0x01-0x07 are m * 2^-9 and 0x08 and up 2^(e-7) * (1 + m/8): a
 * normal code's 7 low bits are an f32's exponent and top mantissa bits,
 * shifted down 20 bits and rebiased by 127 - 7 = 120. */
float halo_f8e4m3_to_f32(uint8_t q)
{
	uint32_t em = q & 0x7fu;
	float mag = em == 0x7fu ? NAN : em < 8u ? (float)em * 0x1p-9f : f32_from_bits((em << 20) + (120u << 23));
	return q & 0x80u ? -mag : mag;
}

uint8_t halo_f8e4m3_from_f32(float v)
{
	uint32_t u = f32_bits(v), a = u & 0x7fffffffu, code;
	if (a >= 0x43e00000u) /* 448 and up (not NaN: callers pass finite values) */
		code = 0x7eu;
	else if (a < 0x3c800000u) /* below 2^-6, the smallest normal: a multiple of 2^-9, 8 being 2^-6 */
		code = (uint32_t)rintf(f32_from_bits(a) * 512.0f); /* the default rounding: to nearest even */
	else /* the 20 dropped mantissa bits rounded to nearest even; a carry steps the exponent */
		code = ((a + 0x7ffffu + ((a >> 20) & 1u)) >> 20) - (120u << 3);
	return (uint8_t)((u >> 24 & 0x80u) | code);
}

/* The scale s = amax / 448 maps the block's largest magnitude to fp8's;
 * each code is x / s rounded to the nearest fp8 value (a quotient one ulp
 * past 448 saturates to it). An all-zero block has s = 0 and codes 0. */
static void f8_row(const float *x, uint64_t k, uint8_t *q, uint8_t *scales)
{
	for (uint64_t b = 0; b < k / F8_BLOCK; b++) {
		const float *xb = x + b * F8_BLOCK;
		float amax = block_amax(xb, F8_BLOCK);
		float s = amax / 448.0f;
		for (int i = 0; i < F8_BLOCK; i++)
			q[b * F8_BLOCK + i] = s > 0.0f ? halo_f8e4m3_from_f32(xb[i] / s) : 0;
		put_u32(scales + 4 * b, f32_bits(s));
	}
}

static void f8_dequant_row(const uint8_t *q, const uint8_t *scales, uint64_t k, float *x)
{
	for (uint64_t b = 0; b < k / F8_BLOCK; b++) {
		float s = f32_from_bits(get_u32(scales + 4 * b));
		for (int i = 0; i < F8_BLOCK; i++)
			x[b * F8_BLOCK + i] = s * halo_f8e4m3_to_f32(q[b * F8_BLOCK + i]);
	}
}

/* ---- mxfp4 ---- */

float halo_e2m1_to_f32(unsigned q)
{
	static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
	return q & 8u ? -mag[q & 7u] : mag[q & 7u];
}

/* Byte 0 is 2^-127, an f32 subnormal (exponent field 0, top mantissa bit). */
float halo_e8m0_to_f32(uint8_t e)
{
	return e == 0xffu ? NAN : f32_from_bits(e ? (uint32_t)e << 23 : 0x00400000u);
}

/* The E2M1 code of v (the element over its scale, |v| < 8): the magnitude
 * rounded to the nearest of {0, .5, 1, 1.5, 2, 3, 4, 6}, a tie to the even
 * code, and above 6 saturated to 6; the sign from v's sign bit, so that a
 * negative value rounding to zero gives -0 (code 8), as fp8's does. The
 * midpoints between codes c and c + 1 round up only where c is odd. */
static uint8_t e2m1_from_f32(float v)
{
	static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
	float a = fabsf(v);
	unsigned code = 0;
	for (unsigned c = 0; c < 7; c++)
		code += c & 1u ? a >= mid[c] : a > mid[c];
	return (uint8_t)(signbit(v) ? code | 8u : code);
}

/* The OCP MX spec's (v1.0) shared scale: the shared exponent is
 * floor(log2(amax)) - 2, E2M1's largest exponent, so the largest magnitude
 * lands in [4, 8) and above 6 saturates; clamped to E8M0's range (an
 * all-zero block gets byte 0). x * 2^-X is exact in f32 for every X the
 * clamp leaves (2^-X is normal, the quotient below 8) but where it falls
 * under 2^-126, far below the codes' step of 0.5. */
static void mx_row(const float *x, uint64_t k, uint8_t *values, uint8_t *scales)
{
	for (uint64_t b = 0; b < k / MX_BLOCK; b++) {
		const float *xb = x + b * MX_BLOCK;
		float amax = block_amax(xb, MX_BLOCK);
		int e = MX_EMIN;
		if (amax > 0.0f) {
			frexpf(amax, &e); /* amax = m * 2^e, m in [0.5, 1): floor(log2(amax)) = e - 1 */
			e = e - 1 - MX_EMAX < MX_EMIN ? MX_EMIN : e - 1 - MX_EMAX;
		}
		scales[b] = (uint8_t)(e + 127);
		uint8_t *q = values + b * MX_BLOCK / 2;
		for (int i = 0; i < MX_BLOCK; i += 2)
			q[i / 2] = (uint8_t)(e2m1_from_f32(ldexpf(xb[i], -e)) | e2m1_from_f32(ldexpf(xb[i + 1], -e)) << 4);
	}
}

static void mx_dequant_row(const uint8_t *values, const uint8_t *scales, uint64_t k, float *x)
{
	for (uint64_t b = 0; b < k / MX_BLOCK; b++) {
		float s = halo_e8m0_to_f32(scales[b]);
		for (uint64_t i = b * MX_BLOCK; i < (b + 1) * MX_BLOCK; i++)
			x[i] = s * halo_e2m1_to_f32(i & 1 ? values[i / 2] >> 4 : values[i / 2] & 15u);
	}
}

/* ---- the formats ---- */

/* A row's bytes are kernels/dtype.c's (halo_dtype_bytes): its values, then
 * its scales. */
static const struct {
	unsigned bits; /* per value */
	void (*quantize)(const float *x, uint64_t k, uint8_t *values, uint8_t *scales);
	void (*dequantize)(const uint8_t *values, const uint8_t *scales, uint64_t k, float *x);
} formats[HALO_DTYPE_COUNT] = {
	[HALO_Q8_0] = {8, q8_row, q8_dequant_row},
	[HALO_Q4_K] = {4, q4_row, q4_dequant_row},
	[HALO_F8E4M3_B128] = {8, f8_row, f8_dequant_row},
	[HALO_MXFP4] = {4, mx_row, mx_dequant_row},
};

halo_quant_layout halo_quant_layout_of(halo_dtype t, uint64_t rows, uint64_t k)
{
	uint64_t row = k * formats[t].bits / 8;
	return (halo_quant_layout){.values_row_bytes = row, .scales_offset = rows * row,
	                           .scales_row_bytes = halo_dtype_bytes(t, 1, k) - row};
}

void halo_quantize_rows(halo_dtype t, const float *src, uint64_t rows, uint64_t k, uint64_t lo, uint64_t hi,
                        uint8_t *dst)
{
	halo_quant_layout l = halo_quant_layout_of(t, rows, k);
	for (uint64_t r = lo; r < hi; r++)
		formats[t].quantize(src + r * k, k, dst + r * l.values_row_bytes,
		                    dst + l.scales_offset + r * l.scales_row_bytes);
}

void halo_dequantize_rows(halo_dtype t, const uint8_t *src, uint64_t rows, uint64_t k, uint64_t lo, uint64_t hi,
                          float *dst)
{
	halo_quant_layout l = halo_quant_layout_of(t, rows, k);
	for (uint64_t r = lo; r < hi; r++)
		formats[t].dequantize(src + r * l.values_row_bytes, src + l.scales_offset + r * l.scales_row_bytes, k,
		                      dst + r * k);
}

float halo_x_q8_inverse(float a)
{
	union {
		float f;
		uint32_t u;
	} v = {.f = a};
	v.u = 0x7ef311c7u - v.u;
	float r = v.f;
	for (int i = 0; i < 4; i++) { /* one operation a statement: nothing fuses */
		float e = a * r;
		float f = 2.0f - e;
		r = r * f;
	}
	return 127.0f * r;
}

void halo_round_x_q8(const float *x, float *out, uint64_t n)
{
	for (uint64_t b = 0; b + 32 <= n; b += 32) {
		float a = 0.0f;
		for (int i = 0; i < 32; i++)
			a = fmaxf(a, fabsf(x[b + i]));
		bool zero = !(a >= HALO_X_Q8_MIN);
		float d = zero ? 0.0f : a * (1.0f / 127.0f), inv = zero ? 0.0f : halo_x_q8_inverse(a);
		for (int i = 0; i < 32; i++) {
			float y = x[b + i] * inv;
			out[b + i] = d * rintf(y);
		}
	}
}
