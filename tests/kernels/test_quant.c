/* The quantized weight formats (runtime/drivers/ref/quant.h): the dequantizer on
 * blocks whose bytes and values were worked out by hand from the format's
 * description (fp8's codes both ways, by table; mxfp4's E2M1 and E8M0
 * codes, and a block's rounding ties and saturation), the quantizer's error
 * bounds on random rows, and its
 * independence from how rows are split across threads. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "runtime/drivers/ref/half.h"
#include "runtime/drivers/ref/quant.h"
#include "tests/check.h"

/* One q8_0 block of x_i = (i - 16) / 2: amax 8, d = 8 / 127 = 0.0629921
 * rounds to the f16 0x2c08 = 0.0625 * (1 + 8/1024) = 0.06298828125, and
 * q_i = round(x_i / d) = round((i - 16) * 7.93798...). */
#define Q4_PINNED 0xb9df49f3d3d7bcb9ull

static void q8_hand_block(void)
{
	float x[32], back[32];
	for (int i = 0; i < 32; i++)
		x[i] = (float)(i - 16) * 0.5f;
	uint8_t q[34];
	halo_quantize_rows(HALO_Q8_0, x, 1, 32, 0, 1, q);
	CHECK(q[32] == 0x08 && q[33] == 0x2c, "q8_0 scale bytes %02x %02x, expected 08 2c", q[32], q[33]);
	static const struct {
		int i, q;
	} want[] = {{0, -127}, {1, -119}, {15, -8}, {16, 0}, {17, 8}, {31, 119}};
	for (size_t n = 0; n < sizeof want / sizeof want[0]; n++)
		CHECK((int8_t)q[want[n].i] == want[n].q, "q8_0 q[%d] = %d, expected %d", want[n].i, (int8_t)q[want[n].i],
		      want[n].q);
	halo_dequantize_rows(HALO_Q8_0, q, 1, 32, 0, 1, back);
	CHECK(back[17] == 0.50390625f, "q8_0 x[17] dequantizes to %.9g, expected 8 * 0.06298828125", back[17]);
	CHECK(back[0] == -127.0f * 0.06298828125f, "q8_0 x[0] dequantizes to %.9g", back[0]);
}

/* Int8 activations by hand: x = 0.5 k (k = 1..32) has a = 16, and x * 127
 * / a = 127 k / 32: k = 1 gives 3.97 -> 4, k = 15 59.53 -> 60, k = 17
 * 67.47 -> 67, k = 32 127 (k = 16 gives 63.5 exactly in exact arithmetic:
 * the inverse's last bit decides it, so it is not listed). The second
 * block is the first negated, the third zeros (its values 0), the fourth
 * below HALO_X_Q8_MIN (zeros too). d = 16 * (1/127 in f32). And the
 * inverse every backend forms is within 2 ulp of 127 / a over a sweep of
 * a from 1e-30 to 1e30. */
static void xq_hand_block(void)
{
	float x[128], y[128];
	for (int k = 1; k <= 32; k++) {
		x[k - 1] = 0.5f * (float)k;
		x[31 + k] = -0.5f * (float)k;
		x[63 + k] = 0.0f;
		x[95 + k] = 1e-32f * (float)k;
	}
	halo_round_x_q8(x, y, 128);
	const float d = 16.0f * (1.0f / 127.0f);
	static const struct {
		int k, q;
	} want[] = {{1, 4}, {2, 8}, {4, 16}, {15, 60}, {17, 67}, {32, 127}};
	for (size_t n = 0; n < sizeof want / sizeof want[0]; n++) {
		int i = want[n].k - 1;
		CHECK(y[i] == d * (float)want[n].q, "xq x[%d] = %.9g rounds to %.9g, expected %d * d", i, x[i], y[i],
		      want[n].q);
		CHECK(y[32 + i] == -y[i], "xq: the negated block rounds to %.9g, expected %.9g", y[32 + i], -y[i]);
	}
	for (int i = 64; i < 128; i++)
		CHECK(y[i] == 0.0f, "xq: a zero or tiny block gives %.9g at %d", y[i], i);
	halo_round_x_q8(x, x, 128); /* in place */
	CHECK(memcmp(x, y, sizeof x) == 0, "xq in place differs");
	for (double a = 1e-30; a < 1e30; a *= 1.0137) {
		float af = (float)a, inv = halo_x_q8_inverse(af), want_inv = 127.0f / af;
		float ulp = nextafterf(want_inv, INFINITY) - want_inv;
		CHECK(fabsf(inv - want_inv) <= 2.0f * ulp, "xq inverse of %.9g: %.9g, 127 / a = %.9g", af, inv, want_inv);
	}
}

/* A q4_k super-block assembled by hand: d = 0.5 (f16 0x3800), dmin = 0.25
 * (0x3400), the sub-blocks' codes below, q_e = e % 16. The 12 code bytes
 * follow quant.h's layout: bytes 0-3 sc[j] | (sc[j+4] >> 4) << 6, bytes 4-7
 * m[j] | (m[j+4] >> 4) << 6, bytes 8-11 (sc[j+4] & 15) | (m[j+4] & 15) << 4. */
static void q4_hand_block(void)
{
	static const int sc[8] = {1, 2, 3, 63, 17, 33, 48, 5};
	static const int m[8] = {0, 7, 63, 1, 16, 31, 62, 9};
	uint8_t t[128 + 16] = {0};
	for (int e = 0; e < 256; e += 2)
		t[e / 2] = (uint8_t)((e % 16) | ((e + 1) % 16) << 4);
	static const uint8_t meta[16] = {0x00, 0x38, 0x00, 0x34, 65, 130, 195, 63, 64, 71, 255, 1, 1, 241, 224, 149};
	memcpy(t + 128, meta, sizeof meta);
	float x[256];
	halo_dequantize_rows(HALO_Q4_K, t, 1, 256, 0, 1, x);
	int bad = 0;
	for (int e = 0; e < 256; e++) {
		int j = e / 32;
		float want = 0.5f * (float)sc[j] * (float)(e % 16) - 0.25f * (float)m[j];
		if (x[e] != want && bad++ < 4)
			CHECK(0, "q4_k element %d (sub-block %d) dequantizes to %.9g, expected %.9g", e, j, x[e], want);
	}
	CHECK(bad == 0, "q4_k hand block: %d elements differ", bad);
	/* Quantizing the dequantized block must give back a block no worse
	 * than the hand one, which represents it exactly. */
	uint8_t again[144];
	float back[256], err = 0.0f, ref = 0.0f;
	halo_quantize_rows(HALO_Q4_K, x, 1, 256, 0, 1, again);
	halo_dequantize_rows(HALO_Q4_K, again, 1, 256, 0, 1, back);
	for (int e = 0; e < 256; e++) {
		err += (back[e] - x[e]) * (back[e] - x[e]);
		ref += x[e] * x[e];
	}
	CHECK(sqrtf(err / ref) < 0.02f, "q4_k re-quantized hand block: relative rms error %.4g", sqrtf(err / ref));
}

/* fp8 E4M3 codes and their values, worked out by hand from the format
 * (sign, exponent of bias 7, 3 mantissa bits; exponent 0 subnormal: m * 2^-9). */
static void f8_decode_table(void)
{
	static const struct {
		uint8_t q;
		float v;
	} want[] = {
		{0x00, 0.0f},          {0x01, 0x1p-9f},  /* smallest subnormal */
		{0x07, 7 * 0x1p-9f},  {0x08, 0x1p-6f},  /* largest subnormal, smallest normal */
		{0x0f, 1.875f * 0x1p-6f}, {0x38, 1.0f}, {0x39, 1.125f}, {0x3f, 1.875f}, {0x40, 2.0f},
		{0x2a, 0.3125f},       {0x77, 240.0f},   {0x7e, 448.0f},   /* the largest */
		{0x80, -0.0f},         {0x81, -0x1p-9f}, {0xb8, -1.0f},    {0xfe, -448.0f},
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		float v = halo_f8e4m3_to_f32(want[i].q);
		CHECK(v == want[i].v && signbit(v) == signbit(want[i].v), "fp8 0x%02x decodes to %.9g, expected %.9g",
		      want[i].q, v, want[i].v);
	}
	CHECK(isnan(halo_f8e4m3_to_f32(0x7f)) && isnan(halo_f8e4m3_to_f32(0xff)), "fp8 0x7f and 0xff are NaN");
}

/* The encoder: nearest code, ties to the even code (in the mantissa and at
 * the subnormal steps), saturation at +-448, and every finite code back to
 * itself. */
static void f8_encode_table(void)
{
	static const struct {
		float v;
		uint8_t q;
	} want[] = {
		{0.0f, 0x00},        {-0.0f, 0x80},         {1.0f, 0x38},        {0.3f, 0x2a}, /* 0.3: 1.25 * 2^-2 nearest */
		{1.0625f, 0x38},     /* tie between 1.0 and 1.125: the even 0x38 */
		{1.0625001f, 0x39}, {1.1875f, 0x3a},       /* tie between 0x39 and 0x3a: 0x3a */
		{1.9375f, 0x40},     /* tie between 1.875 and 2.0: the carry into the exponent */
		{0x1p-10f, 0x00},    /* half the smallest subnormal: to the even 0 */
		{3 * 0x1p-10f, 0x02}, {7.5f * 0x1p-9f, 0x08}, /* subnormal ties, the last one to 2^-6 */
		{1e-30f, 0x00},      {-1e-30f, 0x80},       {0x1p-6f, 0x08},
		{440.0f, 0x7e},      {447.9f, 0x7e},        {448.0f, 0x7e},      {449.0f, 0x7e},
		{464.0f, 0x7e},      {1e6f, 0x7e},          {-500.0f, 0xfe},     {3.4e38f, 0x7e},
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		uint8_t q = halo_f8e4m3_from_f32(want[i].v);
		CHECK(q == want[i].q, "fp8 encodes %.9g as 0x%02x, expected 0x%02x", want[i].v, q, want[i].q);
	}
	for (int c = 0; c < 256; c++)
		if ((c & 0x7f) != 0x7f)
			CHECK(halo_f8e4m3_from_f32(halo_f8e4m3_to_f32((uint8_t)c)) == c, "fp8 0x%02x does not round-trip", c);
}

/* One f8e4m3_b128 block of x_i = (i - 64) / 2: amax 32, s = 32 / 448 (f32),
 * x_i / s = 7 (i - 64) up to the quotient's rounding: i = 0 gives -448
 * (0xfe), i = 65 gives 7 = 1.75 * 2^2 (0x4e), i = 127 gives 441, nearest
 * 448 (0x7e). The scale is 4 little-endian bytes after the 128 codes. */
static void f8_hand_block(void)
{
	float x[128], back[128];
	for (int i = 0; i < 128; i++)
		x[i] = (float)(i - 64) * 0.5f;
	uint8_t q[132];
	halo_quantize_rows(HALO_F8E4M3_B128, x, 1, 128, 0, 1, q);
	float s = 32.0f / 448.0f, got;
	memcpy(&got, q + 128, 4);
	CHECK(got == s, "f8e4m3_b128 scale %.9g, expected 32/448 = %.9g", got, s);
	CHECK(q[0] == 0xfe && q[64] == 0x00 && q[65] == 0x4e && q[127] == 0x7e,
	      "f8e4m3_b128 codes %02x %02x %02x %02x, expected fe 00 4e 7e", q[0], q[64], q[65], q[127]);
	halo_dequantize_rows(HALO_F8E4M3_B128, q, 1, 128, 0, 1, back);
	CHECK(back[65] == s * 7.0f && back[127] == s * 448.0f && back[0] == s * -448.0f,
	      "f8e4m3_b128 dequantizes to %.9g %.9g %.9g", back[65], back[127], back[0]);
}

/* E2M1 codes (sign bit 3; magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}) and E8M0
 * scale bytes (2^(e - 127)), from the OCP MX spec's tables. */
static void mx_decode_table(void)
{
	static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
	for (unsigned q = 0; q < 16; q++) {
		float v = halo_e2m1_to_f32(q), want = q & 8 ? -mag[q & 7] : mag[q & 7];
		CHECK(v == want && signbit(v) == signbit(want), "e2m1 0x%x decodes to %g, expected %g", q, v, want);
	}
	CHECK(halo_e8m0_to_f32(127) == 1.0f && halo_e8m0_to_f32(128) == 2.0f && halo_e8m0_to_f32(121) == 0x1p-6f,
	      "e8m0 127, 128, 121 are 1, 2, 2^-6");
	CHECK(halo_e8m0_to_f32(0) == 0x1p-127f && halo_e8m0_to_f32(254) == 0x1p127f, "e8m0 0 and 254 are 2^-127, 2^127");
	CHECK(isnan(halo_e8m0_to_f32(0xff)), "e8m0 0xff is NaN");
}

/* Four mxfp4 blocks worked out by hand (k = 128):
 *  0: x_i = (i - 16) / 4, amax 4: shared exponent floor(log2 4) - 2 = 0,
 *     byte 127; every tie of the grid met once, each to the even code:
 *     0.25 -> 0, 0.75 -> 1 (code 2), 1.25 -> 1 (2), 1.75 -> 2 (4),
 *     2.5 -> 2 (4), 3.5 -> 4 (6); -0.25 -> -0 (8); -4 -> 0xe;
 *  1: 7 (amax, exponent 0) saturates to 6 (code 7), -5 ties to -4 (0xe);
 *  2: amax 0.09375 = 1.5 * 2^-4: exponent -6 (byte 121), 0.09375 / 2^-6 =
 *     6 (code 7), 2^-8 / 2^-6 = 0.25 ties to 0;
 *  3: all zero: byte 0, codes 0. */
static void mx_hand_block(void)
{
	float x[128] = {0}, back[128];
	for (int i = 0; i < 32; i++)
		x[i] = (float)(i - 16) * 0.25f;
	x[32] = 7.0f;
	x[33] = -5.0f;
	x[34] = 0.001f;
	x[64] = 0.09375f;
	x[65] = 0x1p-8f;
	uint8_t q[68];
	halo_quantize_rows(HALO_MXFP4, x, 1, 128, 0, 1, q);
	static const struct {
		int at;
		uint8_t byte;
	} want[] = {{0, 0xee},  {7, 0x89},  {8, 0x00},  {9, 0x21},  {10, 0x22}, {11, 0x43}, {13, 0x54},
		    {15, 0x66}, {16, 0xe7}, {17, 0x00}, {32, 0x07}, {48, 0x00}, {64, 127},  {65, 127},
		    {66, 121},  {67, 0}};
	for (size_t n = 0; n < sizeof want / sizeof *want; n++)
		CHECK(q[want[n].at] == want[n].byte, "mxfp4 byte %d is 0x%02x, expected 0x%02x", want[n].at,
		      q[want[n].at], want[n].byte);
	halo_dequantize_rows(HALO_MXFP4, q, 1, 128, 0, 1, back);
	CHECK(back[19] == 1.0f && back[23] == 2.0f && back[0] == -4.0f && back[32] == 6.0f && back[33] == -4.0f &&
	      back[64] == 0.09375f && back[65] == 0.0f && back[127] == 0.0f,
	      "mxfp4 dequantizes to %g %g %g %g %g %g %g %g", back[19], back[23], back[0], back[32], back[33], back[64],
	      back[65], back[127]);
	CHECK(signbit(back[15]) && back[15] == 0.0f, "mxfp4: -0.25 rounds to -0, got %g", back[15]);
}

/* Normal(0, 1) values from a fixed xorshift stream, some rows scaled so
 * rows differ in range. */
static void random_rows(float *x, uint64_t rows, uint64_t k)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	for (uint64_t i = 0; i < rows * k; i++) {
		float u[2];
		for (int h = 0; h < 2; h++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			u[h] = ((float)(s >> 40) + 0.5f) / 16777216.0f;
		}
		x[i] = sqrtf(-2.0f * logf(u[0])) * cosf(6.2831853f * u[1]) * (1.0f + (float)((i / k) % 5));
	}
}

/* q4_k's bytes pinned: its step search runs in 4-wide vectors, or two
 * candidates at once in 8-wide ones where the CPU has AVX2, and either
 * must give the bytes the scalar definition does. Inputs from integer
 * operations alone (no libm), uniform in [-1, 1) times 1..5 per row, every
 * fourth row shifted positive (the fit's zero-offset branch); the FNV-1a
 * hash of the bytes was taken from the 4-wide search before the 8-wide
 * one existed. */
static void q4_bytes_pinned(void)
{
	enum { ROWS = 64, K = 512 };
	static float x[ROWS * K];
	static uint8_t q[ROWS * K];
	uint64_t s = 0x2545f4914f6cdd1dull;
	for (int i = 0; i < ROWS * K; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		float u = (float)(int32_t)(uint32_t)(s >> 32) * 0x1p-31f;
		int r = i / K;
		x[i] = (r % 4 == 3 ? u + 1.5f : u) * (float)(1 + r % 5);
	}
	size_t bytes = halo_dtype_bytes(HALO_Q4_K, ROWS, K);
	halo_quantize_rows(HALO_Q4_K, x, ROWS, K, 0, ROWS, q);
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < bytes; i++)
		h = (h ^ q[i]) * 0x100000001b3ull;
	CHECK(h == Q4_PINNED, "q4_k bytes changed: FNV-1a %016llx", (unsigned long long)h);
}

/* q4_k rows ending in a partial super-block (quant.h): a row of 96 (one
 * super-block of 3 sub-blocks) dequantizes as the hand block's first 96
 * elements with its 16 bytes of scales after the 48 of values; a row of 640
 * quantizes to the bytes of the same row zero-padded to 768 (values and
 * scales; the absent sub-blocks' codes 0). */
static void q4_partial_super(void)
{
	static const uint8_t meta[16] = {0x00, 0x38, 0x00, 0x34, 65, 130, 195, 63, 64, 71, 255, 1, 1, 241, 224, 149};
	static const int sc[3] = {1, 2, 3}, m[3] = {0, 7, 63};
	uint8_t t[48 + 16];
	for (int e = 0; e < 96; e += 2)
		t[e / 2] = (uint8_t)((e % 16) | ((e + 1) % 16) << 4);
	memcpy(t + 48, meta, sizeof meta);
	float x[96];
	halo_dequantize_rows(HALO_Q4_K, t, 1, 96, 0, 1, x);
	int bad = 0;
	for (int e = 0; e < 96; e++)
		bad += x[e] != 0.5f * (float)sc[e / 32] * (float)(e % 16) - 0.25f * (float)m[e / 32];
	CHECK(bad == 0, "q4_k row of 96: %d elements differ from the hand block's", bad);

	enum { R = 3, K = 640, KP = 768 };
	float *row = calloc(R * KP, sizeof(float)), *part = malloc(R * K * sizeof(float));
	random_rows(part, R, K);
	for (int r = 0; r < R; r++)
		memcpy(row + r * KP, part + r * K, K * sizeof(float));
	uint8_t *qp = malloc(halo_dtype_bytes(HALO_Q4_K, R, K)), *qf = malloc(halo_dtype_bytes(HALO_Q4_K, R, KP));
	halo_quantize_rows(HALO_Q4_K, part, R, K, 0, R, qp);
	halo_quantize_rows(HALO_Q4_K, row, R, KP, 0, R, qf);
	halo_quant_layout lp = halo_quant_layout_of(HALO_Q4_K, R, K), lf = halo_quant_layout_of(HALO_Q4_K, R, KP);
	CHECK(lp.scales_row_bytes == 48 && lf.scales_row_bytes == 48, "q4_k: 3 super-blocks of scales a row");
	for (int r = 0; r < R; r++) {
		CHECK(memcmp(qp + r * lp.values_row_bytes, qf + r * lf.values_row_bytes, K / 2) == 0,
		      "q4_k row %d of 640: values differ from the zero-padded row's", r);
		CHECK(memcmp(qp + lp.scales_offset + r * 48, qf + lf.scales_offset + r * 48, 48) == 0,
		      "q4_k row %d of 640: scales differ from the zero-padded row's", r);
	}
	free(row), free(part), free(qp), free(qf);
}

/* Relative rms error of the format over random rows, the per-element bound
 * of q8_0 (half its block's step), and that quantizing the rows in two
 * parts writes the same bytes as in one. Returns the relative error. */
static float roundtrip(halo_dtype t, uint64_t rows, uint64_t k)
{
	size_t bytes = halo_dtype_bytes(t, rows, k);
	float *x = malloc(rows * k * sizeof(float)), *back = malloc(rows * k * sizeof(float));
	uint8_t *a = malloc(bytes), *b = malloc(bytes);
	random_rows(x, rows, k);
	halo_quantize_rows(t, x, rows, k, 0, rows, a);
	halo_quantize_rows(t, x, rows, k, rows / 3, rows, b);
	halo_quantize_rows(t, x, rows, k, 0, rows / 3, b);
	CHECK(memcmp(a, b, bytes) == 0, "%s: quantizing in two parts changed the bytes", halo_dtype_name(t));
	halo_dequantize_rows(t, a, rows, k, 0, rows, back);
	double err = 0, ref = 0;
	halo_quant_layout l = halo_quant_layout_of(t, rows, k);
	for (uint64_t i = 0; i < rows * k; i++) {
		err += (double)(back[i] - x[i]) * (back[i] - x[i]);
		ref += (double)x[i] * x[i];
		if (t == HALO_F8E4M3_B128) {
			/* half a step: 2^-4 of the value (3 mantissa bits), or half
			 * the subnormal step s * 2^-10 */
			uint64_t r = i / k, blk = (i % k) / 128;
			float sc;
			memcpy(&sc, a + l.scales_offset + r * l.scales_row_bytes + 4 * blk, 4);
			if (fabsf(back[i] - x[i]) > fmaxf(fabsf(x[i]) * 0x1p-4f, sc * 0x1p-10f) * 1.0001f)
				CHECK(0, "f8e4m3_b128 element %llu off by %g, more than half a step (scale %g)",
				      (unsigned long long)i, fabsf(back[i] - x[i]), sc);
		}
		if (t == HALO_MXFP4) {
			/* half a step: 0.25 s below 2 s (step 0.5), else at most a
			 * quarter of the value (steps 1 and 2 above 2 s and 4 s;
			 * saturation above 6 s: the value is below 8 s) */
			uint64_t r = i / k, blk = (i % k) / 32;
			float sc = halo_e8m0_to_f32(a[l.scales_offset + r * l.scales_row_bytes + blk]);
			if (fabsf(back[i] - x[i]) > fmaxf(fabsf(x[i]) * 0.25f, sc * 0.25f) * 1.0001f)
				CHECK(0, "mxfp4 element %llu off by %g, more than half a step (scale %g)",
				      (unsigned long long)i, fabsf(back[i] - x[i]), sc);
		}
		if (t == HALO_Q8_0) {
			uint64_t r = i / k, blk = (i % k) / 32;
			const uint8_t *s = a + l.scales_offset + r * l.scales_row_bytes + 2 * blk;
			float d = half_to_f32((uint16_t)(s[0] | s[1] << 8));
			if (fabsf(back[i] - x[i]) > 0.5f * d * 1.0001f)
				CHECK(0,
				      "q8_0 element %llu off by %g, more than half the step %g", (unsigned long long)i,
				      fabsf(back[i] - x[i]), fabsf(d));
		}
	}
	free(x);
	free(back);
	free(a);
	free(b);
	return (float)sqrt(err / ref);
}

int main(void)
{
	q4_bytes_pinned();
	CHECK(halo_dtype_bytes(HALO_Q8_0, 1, 64) == 68 && halo_dtype_bytes(HALO_Q4_K, 1, 512) == 288 &&
		      halo_dtype_bytes(HALO_Q4_K, 3, 512) == 3 * 288,
	      "block sizes: q8_0 34 bytes per 32, q4_k 144 per 256");
	/* a row's last q4_k super-block may be partial, with all 16 bytes of
	 * scales: K = 640 is 2 whole + 4 sub-blocks, 160 one of 5 */
	CHECK(halo_dtype_block(HALO_Q4_K) == 32 && halo_dtype_bytes(HALO_Q4_K, 1, 640) == 320 + 48 &&
		      halo_dtype_bytes(HALO_Q4_K, 2, 160) == 2 * (80 + 16),
	      "q4_k rows of whole 32-blocks: values + 16 bytes per started super-block");
	CHECK(halo_dtype_bytes(HALO_Q8_0, SIZE_MAX / 32, 1024) == SIZE_MAX &&
		      halo_dtype_bytes(HALO_F32, 2, SIZE_MAX / 4) == SIZE_MAX,
	      "a size past size_t is SIZE_MAX, not a wrapped count");
	CHECK(halo_dtype_size(HALO_Q8_0) == 0 && halo_dtype_is_quant(HALO_Q4_K) && !halo_dtype_is_quant(HALO_F16),
	      "block formats have no element size");
	CHECK(halo_dtype_bytes(HALO_F8E4M3_B128, 1, 256) == 264 && halo_dtype_block(HALO_F8E4M3_B128) == 128,
	      "f8e4m3_b128: 132 bytes per 128");
	CHECK(halo_dtype_bytes(HALO_MXFP4, 1, 64) == 34 && halo_dtype_block(HALO_MXFP4) == 32, "mxfp4: 17 bytes per 32");
	q8_hand_block();
	q4_hand_block();
	q4_partial_super();
	xq_hand_block();
	f8_decode_table();
	f8_encode_table();
	f8_hand_block();
	mx_decode_table();
	mx_hand_block();
	/* Bounds on Gaussian rows: a 32-block's step is about 2.3 sigma / 127,
	 * so uniform rounding gives 0.0052 relative rms (measured 0.0054); the
	 * q4_k fit measures 0.0714, where a plain min/max fit of the same
	 * format (no search over steps, no least-squares refit) gives 0.0784:
	 * the bound admits the first and not the second. fp8's 3 mantissa bits
	 * step by 2^-3 .. 2^-4 of a value: uniform rounding gives about
	 * 0.025 relative rms (measured 0.0257). mxfp4 has one mantissa bit
	 * and a power-of-two scale that puts a block's amax anywhere in
	 * [4, 8) of the E2M1 grid, saturating above 6: measured 0.1166. */
	float e8 = roundtrip(HALO_Q8_0, 37, 512), e4 = roundtrip(HALO_Q4_K, 37, 512);
	float ef = roundtrip(HALO_F8E4M3_B128, 37, 512), em = roundtrip(HALO_MXFP4, 37, 512);
	/* q4_k rows of 640 and 160 (partial super-blocks): the same fit */
	float e4p = roundtrip(HALO_Q4_K, 37, 640), e4s = roundtrip(HALO_Q4_K, 41, 160);
	printf("q4_k relative rms error at K = 640: %.5f, K = 160: %.5f\n", e4p, e4s);
	CHECK(e4p < 0.0750f && e4s < 0.0750f, "q4_k relative rms error %.5f (K = 640), %.5f (K = 160)", e4p, e4s);
	printf("relative rms error: q8_0 %.5f, q4_k %.5f, f8e4m3_b128 %.5f, mxfp4 %.5f\n", e8, e4, ef, em);
	CHECK(e8 < 0.0060f, "q8_0 relative rms error %.5f", e8);
	CHECK(e4 < 0.0750f, "q4_k relative rms error %.5f", e4);
	CHECK(ef < 0.0300f, "f8e4m3_b128 relative rms error %.5f", ef);
	CHECK(em < 0.1250f, "mxfp4 relative rms error %.5f", em);
	return check_failures ? 1 : 0;
}
