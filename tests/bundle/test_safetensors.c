/* safetensors reader: files written here with every dtype, read back and
 * checked against hand-computed values; fp8 block dequantisation (F32 and
 * E8M0 scales, HF and upstream scale names); MXFP4 (packed I8, U8, F4);
 * malformed scales; sharded checkpoints; corrupt headers; the HF-written
 * qwen3_tiny fixture. */
#include "codegen/safetensors.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			failures++;                                                                          \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);             \
			fprintf(stderr, __VA_ARGS__);                                                        \
			fputc('\n', stderr);                                                                 \
		}                                                                                            \
	} while (0)

static char dir[] = "/tmp/halo_st_test.XXXXXX";

typedef struct {
	const char *name, *dtype, *shape; /* shape as JSON, e.g. "[2,3]" */
	const void *data;
	size_t bytes;
} spec;

static char *path_of(const char *name)
{
	static char buf[8][512];
	static int k;
	char *p = buf[k++ % 8];
	snprintf(p, 512, "%s/%s", dir, name);
	return p;
}

static void write_raw(const char *path, const char *header, const void *data, size_t bytes)
{
	FILE *f = fopen(path, "wb");
	uint64_t n = strlen(header);
	uint8_t len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(n >> (8 * i));
	fwrite(len, 1, 8, f);
	fwrite(header, 1, n, f);
	if (bytes)
		fwrite(data, 1, bytes, f);
	fclose(f);
}

/* Lays the tensors out back to back, as HF writers do. */
static void write_st(const char *path, const spec *s, int n)
{
	char header[8192] = "{\"__metadata__\":{\"format\":\"pt\"}";
	uint8_t *data = malloc(1 << 20);
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		size_t len = strlen(header);
		snprintf(header + len, sizeof header - len, ",\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}",
		         s[i].name, s[i].dtype, s[i].shape, off, off + s[i].bytes);
		if (s[i].bytes)
			memcpy(data + off, s[i].data, s[i].bytes);
		off += s[i].bytes;
	}
	strcat(header, "}   "); /* writers pad the header with spaces */
	write_raw(path, header, data, off);
	free(data);
}

static void test_dtypes(void)
{
	static const float f32[6] = {1.5f, -2.25f, 0.0f, 3e-38f, 1e30f, -7.0f};
	static const uint16_t f16[6] = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x7c00, 0x3555};
	static const float f16_want[6] = {1.0f, -2.0f, 5.9604644775390625e-08f, 65504.0f, INFINITY, 0.333251953125f};
	static const uint16_t bf16[3] = {0x3f80, 0xc0a0, 0x4049};
	static const float bf16_want[3] = {1.0f, -5.0f, 3.140625f};
	static const uint8_t f8[6] = {0x38, 0x40, 0xb8, 0x01, 0x7e, 0x00};
	static const float f8_want[6] = {1.0f, 2.0f, -1.0f, 0.001953125f, 448.0f, 0.0f};
	static const float f8_scale[1] = {0.5f};
	static const int32_t i32[3] = {-7, 0, 123456};
	static const int64_t i64[2] = {-3, 1ll << 40};
	const spec s[] = {
		{"a.f32", "F32", "[2,3]", f32, sizeof f32},
		{"b.f16", "F16", "[6]", f16, sizeof f16},
		{"c.bf16", "BF16", "[3,1]", bf16, sizeof bf16},
		{"d.weight", "F8_E4M3", "[2,3]", f8, sizeof f8},
		{"d.weight_scale_inv", "F32", "[1,1]", f8_scale, sizeof f8_scale},
		{"e.i32", "I32", "[3]", i32, sizeof i32},
		{"f.i64", "I64", "[2]", i64, sizeof i64},
		{"g.empty", "F32", "[0,4]", NULL, 0},
	};
	write_st(path_of("all.safetensors"), s, 8);
	char err[512];
	halo_safetensors *st = halo_st_open_file(path_of("all.safetensors"), err, sizeof err);
	CHECK(st, "open: %s", err);
	if (!st)
		return;
	CHECK(halo_st_count(st) == 8, "count %zu", halo_st_count(st));
	const halo_st_tensor *t = halo_st_find(st, "c.bf16");
	CHECK(t && t->dtype == HALO_ST_BF16 && t->rank == 2 && t->shape[0] == 3 && t->shape[1] == 1 && t->numel == 3,
	      "c.bf16 metadata");
	CHECK(strcmp(halo_st_at(st, 0)->name, "a.f32") == 0 && !halo_st_at(st, 8), "sorted listing");
	float out[6];
	CHECK(halo_st_read_f32(st, "a.f32", out, 6, err, sizeof err) == 0 && memcmp(out, f32, sizeof f32) == 0,
	      "f32 %s", err);
	CHECK(halo_st_read_f32(st, "b.f16", out, 6, err, sizeof err) == 0, "%s", err);
	for (int i = 0; i < 6; i++)
		CHECK(out[i] == f16_want[i], "f16[%d] = %g, want %g", i, out[i], f16_want[i]);
	CHECK(halo_st_read_f32(st, "c.bf16", out, 3, err, sizeof err) == 0, "%s", err);
	for (int i = 0; i < 3; i++)
		CHECK(out[i] == bf16_want[i], "bf16[%d] = %g, want %g", i, out[i], bf16_want[i]);
	CHECK(halo_st_read_f32(st, "d.weight", out, 6, err, sizeof err) == 0, "%s", err);
	for (int i = 0; i < 6; i++)
		CHECK(out[i] == 0.5f * f8_want[i], "f8[%d] = %g, want %g", i, out[i], 0.5f * f8_want[i]);
	CHECK(halo_st_read_f32(st, "e.i32", out, 3, err, sizeof err) == 0 && out[0] == -7 && out[2] == 123456,
	      "i32 %s", err);
	CHECK(halo_st_read_f32(st, "f.i64", out, 2, err, sizeof err) == 0 && out[0] == -3 && out[1] == 0x1p40f,
	      "i64 %s", err);
	CHECK(halo_st_read_f32(st, "g.empty", out, 0, err, sizeof err) == 0, "empty: %s", err);
	CHECK(halo_st_read_f32(st, "a.f32", out, 5, err, sizeof err) != 0 && strstr(err, "a.f32") &&
	          strstr(err, "all.safetensors"),
	      "wrong element count: %s", err);
	CHECK(halo_st_read_f32(st, "nope", out, 1, err, sizeof err) != 0 && strstr(err, "nope"), "absent: %s", err);
	halo_st_close(st);
}

static void test_f16_output(void)
{
	static const float v[8] = {1.0f, -2.0f, 65504.0f, 65520.0f, 0.1f, 5.9604644775390625e-08f, 1e-9f, 6.1e-5f};
	static const uint16_t want[8] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x2e66, 0x0001, 0x0000, 0x03ff};
	const spec s[] = {{"x", "F32", "[8]", v, sizeof v}};
	write_st(path_of("h.safetensors"), s, 1);
	char err[512];
	halo_safetensors *st = halo_st_open_file(path_of("h.safetensors"), err, sizeof err);
	CHECK(st, "%s", err);
	if (!st)
		return;
	uint16_t out[8];
	CHECK(halo_st_read_f16(st, "x", out, 8, err, sizeof err) == 0, "%s", err);
	for (int i = 0; i < 8; i++)
		CHECK(out[i] == want[i], "f16(%g) = 0x%04x, want 0x%04x", v[i], out[i], want[i]);
	halo_st_close(st);
}

/* 130x260 fp8 (all 1.0 except a few 2.0) with a 2x3 scale: every element
 * must come out as its block's scale (times 2 for the marked ones). */
static void test_fp8_blocks(void)
{
	enum { R = 130, C = 260 };
	static uint8_t w[R * C];
	static const float scale[6] = {0.5f, 2.0f, 3.0f, -1.0f, 0.25f, 8.0f};
	memset(w, 0x38, sizeof w);
	w[0] = w[127 * C + 128] = w[129 * C + 259] = 0x40;
	const spec s[] = {
		{"m.weight", "F8_E4M3", "[130,260]", w, sizeof w},
		{"m.weight_scale_inv", "F32", "[2,3]", scale, sizeof scale},
		{"bad.weight", "F8_E4M3", "[2,2]", w, 4},
		{"shape.weight", "BF16", "[2,2]", w, 8},
		{"shape.weight_scale_inv", "F32", "[2,1]", scale, 8},
	};
	write_st(path_of("fp8.safetensors"), s, 5);
	char err[512];
	halo_safetensors *st = halo_st_open_file(path_of("fp8.safetensors"), err, sizeof err);
	CHECK(st, "%s", err);
	if (!st)
		return;
	float *out = malloc(sizeof(float) * R * C);
	uint16_t *h = malloc(sizeof(uint16_t) * R * C);
	CHECK(halo_st_read_f32(st, "m.weight", out, R * C, err, sizeof err) == 0, "%s", err);
	CHECK(halo_st_read_f16(st, "m.weight", h, R * C, err, sizeof err) == 0, "%s", err);
	int bad = 0;
	for (int r = 0; r < R; r++) {
		for (int c = 0; c < C; c++) {
			float want = scale[(r / 128) * 3 + c / 128] * (w[r * C + c] == 0x40 ? 2.0f : 1.0f);
			bad += out[r * C + c] != want;
		}
	}
	CHECK(bad == 0, "%d dequantised values differ", bad);
	CHECK(h[129 * C + 259] == 0x4c00 && h[0] == 0x3c00, "f16 dequant 0x%04x 0x%04x", h[129 * C + 259], h[0]);
	free(out);
	free(h);
	float small[4];
	CHECK(halo_st_read_f32(st, "bad.weight", small, 4, err, sizeof err) != 0 && strstr(err, "bad.weight") &&
	          strstr(err, "scale"),
	      "fp8 without scale: %s", err);
	CHECK(halo_st_read_f32(st, "shape.weight", small, 4, err, sizeof err) != 0 && strstr(err, "shape.weight"),
	      "scale of wrong shape: %s", err);
	halo_st_close(st);
}

/* DeepSeek's upstream names and E8M0 scales: an F8_E4M3 "m.weight" with
 * "m.scale" F8_E8M0 [2,3] (partial blocks both ways), and a kept-fp8 read
 * of "k.weight" whose HF-named "k.weight_scale_inv" is U8 (E8M0 bytes). */
static void test_fp8_e8m0(void)
{
	enum { R = 130, C = 260 };
	static uint8_t w[R * C], k[2 * 128];
	/* 0x7f = 2^0, 0x80 = 2^1, 0x7e = 2^-1, 0x00 = 2^-127, 0x85 = 2^6, 0x7c = 2^-3 */
	static const uint8_t e8m0[6] = {0x7f, 0x80, 0x7e, 0x00, 0x85, 0x7c};
	static const float scale[6] = {1.0f, 2.0f, 0.5f, 0x1p-127f, 64.0f, 0.125f};
	static const uint8_t k_scale[1] = {0x81}; /* 4 */
	memset(w, 0x38, sizeof w);            /* 1.0 */
	w[0] = w[127 * C + 128] = w[129 * C + 259] = 0x40; /* 2.0 */
	w[5] = 0xb0;                                       /* -0.5 */
	memset(k, 0x3c, sizeof k);                         /* 1.5 */
	const spec s[] = {
		{"m.weight", "F8_E4M3", "[130,260]", w, sizeof w},
		{"m.scale", "F8_E8M0", "[2,3]", e8m0, sizeof e8m0},
		{"k.weight", "F8_E4M3", "[2,128]", k, sizeof k},
		{"k.weight_scale_inv", "U8", "[1,1]", k_scale, 1},
	};
	write_st(path_of("e8m0.safetensors"), s, 4);
	char err[512];
	halo_safetensors *st = halo_st_open_file(path_of("e8m0.safetensors"), err, sizeof err);
	CHECK(st, "%s", err);
	if (!st)
		return;
	const halo_st_tensor *t = halo_st_find(st, "m.scale");
	CHECK(t && t->dtype == HALO_ST_F8_E8M0 && t->bytes == 6, "m.scale's dtype and size");
	float *out = malloc(sizeof(float) * R * C);
	CHECK(halo_st_read_f32(st, "m.weight", out, R * C, err, sizeof err) == 0, "%s", err);
	int bad = 0;
	for (int r = 0; r < R; r++)
		for (int c = 0; c < C; c++) {
			uint8_t q = w[r * C + c];
			float code = q == 0x40 ? 2.0f : q == 0xb0 ? -0.5f : 1.0f;
			bad += out[r * C + c] != code * scale[(r / 128) * 3 + c / 128];
		}
	CHECK(bad == 0, "%d E8M0-scaled values differ", bad);
	CHECK(out[128 * C] == 0x1p-127f && out[129 * C + 259] == 0.25f, "2^-127 kept exact, 2 * 2^-3");
	free(out);
	CHECK(halo_st_is_f8_blocks(st, "m.weight") && halo_st_is_f8_blocks(st, "k.weight"), "both names are fp8 blocks");
	uint8_t codes[2 * 128];
	float ks[2] = {0, 0};
	CHECK(halo_st_read_f8_blocks(st, "k.weight", codes, ks, err, sizeof err) == 0, "%s", err);
	CHECK(memcmp(codes, k, sizeof k) == 0 && ks[0] == 4.0f && ks[1] == 4.0f, "kept: codes and scales %g %g", ks[0],
	      ks[1]);
	halo_st_close(st);
	unlink(path_of("e8m0.safetensors"));
}

/* E2M1 codes 0..15 in order: bit 3 the sign. */
static const float e2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                               -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

/* MXFP4 as DeepSeek V4 ships its experts: 2 rows of 64 values, packed 32
 * bytes a row (I8, U8; F4 counts values in its shape), one E8M0 scale per
 * 32 values. Byte j of a row holds code j % 16 low (value 2j) and 15 - j % 16
 * high (value 2j + 1). */
static void test_mxfp4(void)
{
	enum { R = 2, C = 64 };
	static uint8_t w[R * C / 2];
	static const uint8_t e8m0[4] = {0x7f, 0x80, 0x7d, 0x81}; /* 1, 2, 0.25, 4 */
	static const float scale[4] = {1.0f, 2.0f, 0.25f, 4.0f};
	for (int i = 0; i < R * C / 2; i++)
		w[i] = (uint8_t)((15 - i % 16) << 4 | i % 16);
	const spec s[] = {
		{"x.w1.weight", "I8", "[2,32]", w, sizeof w},   {"x.w1.scale", "F8_E8M0", "[2,2]", e8m0, 4},
		{"x.w2.weight", "U8", "[2,32]", w, sizeof w},   {"x.w2.weight_scale_inv", "U8", "[2,2]", e8m0, 4},
		{"x.w3.weight", "F4", "[2,64]", w, sizeof w},   {"x.w3.scale", "F8_E8M0", "[2,2]", e8m0, 4},
	};
	write_st(path_of("fp4.safetensors"), s, 6);
	char err[512];
	halo_safetensors *st = halo_st_open_file(path_of("fp4.safetensors"), err, sizeof err);
	CHECK(st, "%s", err);
	if (!st)
		return;
	static const char *const names[] = {"x.w1.weight", "x.w2.weight", "x.w3.weight"};
	for (int n = 0; n < 3; n++) {
		const halo_st_tensor *t = halo_st_find(st, names[n]);
		int64_t shape[HALO_ST_MAX_RANK];
		uint64_t numel = 0;
		CHECK(t && halo_st_values_shape(t, shape, &numel) == 2 && shape[0] == R && shape[1] == C && numel == R * C,
		      "%s: values [2, 64]", names[n]);
		CHECK(!halo_st_is_f8_blocks(st, names[n]), "%s is not fp8", names[n]);
		float out[R * C];
		CHECK(halo_st_read_f32(st, names[n], out, R * C, err, sizeof err) == 0, "%s", err);
		int bad = 0;
		for (int r = 0; r < R; r++)
			for (int c = 0; c < C; c++) {
				int j = (r * C + c) / 2, code = c % 2 ? 15 - j % 16 : j % 16;
				float want = e2m1[code] * scale[r * 2 + c / 32];
				bad += out[r * C + c] != want || signbit(out[r * C + c]) != signbit(want);
			}
		CHECK(bad == 0, "%s: %d FP4 values differ", names[n], bad);
	}
	halo_st_close(st);
	unlink(path_of("fp4.safetensors"));
}

/* Each checkpoint must open, and reading `read` must fail with a message
 * holding the fragments. */
static void test_scale_errors(void)
{
	static const uint8_t bytes[64] = {0x38, 0x38, 0x38, 0x38}, nan_scale[2] = {0x7f, 0xff}, big[1] = {0xfe};
	static const uint8_t f8_nan[4] = {0x38, 0x7f, 0x38, 0x38}, f8_max[4] = {0x7e, 0x38, 0x38, 0x38};
	static const int32_t i32[2] = {1, 1};
	struct {
		spec s[3];
		int n;
		const char *read, *frag1, *frag2;
	} cases[] = {
		{{{"p.weight", "I8", "[2,16]", bytes, 32}}, 1, "p.weight", "no 'p.weight_scale_inv' or 'p.scale'", "FP4"},
		{{{"p.weight", "U8", "[2,16]", bytes, 32}, {"p.scale", "F8_E8M0", "[2,2]", bytes, 4}},
		 2, "p.weight", "scale 'p.scale' of tensor 'p.weight' (U8, values [2, 32]) has shape [2, 2]", "expected [2, 1]"},
		{{{"p.weight", "I8", "[2,16]", bytes, 32}, {"p.scale", "F8_E8M0", "[2,1]", nan_scale, 2}},
		 2, "p.weight", "'p.scale': element 1", "E8M0 NaN code 0xff"},
		{{{"p.weight", "F8_E4M3", "[2,2]", bytes, 4}, {"p.scale", "F32", "[1,1]", bytes, 4},
		  {"p.weight_scale_inv", "F32", "[1,1]", bytes, 4}},
		 3, "p.weight", "two scale tensors", "'p.scale'"},
		{{{"p.weight", "F8_E4M3", "[2,2]", bytes, 4}, {"p.scale", "I32", "[1,1]", i32, 4}},
		 2, "p.weight", "'p.scale' (of 'p.weight') is I32", "F8_E8M0"},
		{{{"p.weight", "F8_E4M3", "[2,2]", f8_max, 4}, {"p.scale", "F8_E8M0", "[1,1]", big, 1}},
		 2, "p.weight", "element 0 (row 0, column 0) is 448 times its scale", "not finite"},
		{{{"p.weight", "F8_E4M3", "[2,2]", f8_nan, 4}, {"p.scale", "F8_E8M0", "[1,1]", bytes, 1}},
		 2, "p.weight", "element 1 (row 0, column 1)", "fp8 NaN code 0x7f"},
		{{{"p.weight", "F8_E4M3", "[2,2]", bytes, 4}, {"p.scale", "F32", "[1,1]", i32, 4}},
		 2, "p.weight", "'p.scale': element 0 is", "must be finite"},
	};
	/* the last case's scale: I32 1 read as F32 is 1.4e-45, finite; make it NaN */
	static const uint32_t f32_nan = 0x7fc00000u;
	cases[7].s[1].data = &f32_nan;
	char err[512];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		write_st(path_of("scale.safetensors"), cases[i].s, cases[i].n);
		halo_safetensors *st = halo_st_open_file(path_of("scale.safetensors"), err, sizeof err);
		CHECK(st, "case %zu: %s", i, err);
		if (!st)
			continue;
		const halo_st_tensor *t = halo_st_find(st, cases[i].read);
		uint64_t n = 0;
		int64_t shape[HALO_ST_MAX_RANK];
		halo_st_values_shape(t, shape, &n);
		float out[64];
		int rc = halo_st_read_f32(st, cases[i].read, out, n, err, sizeof err);
		CHECK(rc != 0 && strstr(err, "scale.safetensors") && strstr(err, cases[i].frag1) &&
		          strstr(err, cases[i].frag2),
		      "case %zu: %s", i, rc ? err : "accepted");
		printf("refused: %s\n", err);
		halo_st_close(st);
	}
	unlink(path_of("scale.safetensors"));
}

static void test_sharded(void)
{
	static const float a[2] = {1, 2}, b[3] = {3, 4, 5};
	mkdir(path_of("ckpt"), 0755);
	const spec s1[] = {{"a", "F32", "[2]", a, sizeof a}}, s2[] = {{"b", "BF16", "[1]", b, 2}, {"c", "F32", "[3]", b, sizeof b}};
	write_st(path_of("ckpt/m-1.safetensors"), s1, 1);
	write_st(path_of("ckpt/m-2.safetensors"), s2, 2);
	FILE *f = fopen(path_of("ckpt/model.safetensors.index.json"), "w");
	fputs("{\"metadata\":{},\"weight_map\":{\"a\":\"m-1.safetensors\",\"b\":\"m-2.safetensors\","
	      "\"c\":\"m-2.safetensors\"}}",
	      f);
	fclose(f);
	char err[512];
	halo_safetensors *st = halo_st_open_dir(path_of("ckpt"), err, sizeof err);
	CHECK(st, "%s", err);
	if (st) {
		float out[3];
		CHECK(halo_st_count(st) == 3, "count");
		CHECK(halo_st_read_f32(st, "c", out, 3, err, sizeof err) == 0 && out[2] == 5, "%s", err);
		CHECK(strstr(halo_st_find(st, "a")->file, "m-1.safetensors") != NULL, "file of a");
		halo_st_close(st);
	}
	f = fopen(path_of("ckpt/model.safetensors.index.json"), "w");
	fputs("{\"weight_map\":{\"a\":\"m-2.safetensors\",\"b\":\"m-2.safetensors\"}}", f);
	fclose(f);
	st = halo_st_open_dir(path_of("ckpt"), err, sizeof err);
	CHECK(!st && strstr(err, "'a'") && strstr(err, "m-2.safetensors"), "wrong shard: %s", err);
	halo_st_close(st);
	f = fopen(path_of("ckpt/model.safetensors.index.json"), "w");
	fputs("{\"weight_map\":{\"a\":\"m-3.safetensors\"}}", f);
	fclose(f);
	st = halo_st_open_dir(path_of("ckpt"), err, sizeof err);
	CHECK(!st && strstr(err, "m-3.safetensors") && strstr(err, "cannot open"), "missing shard: %s", err);
	halo_st_close(st);
	f = fopen(path_of("ckpt/model.safetensors.index.json"), "w");
	fputs("{\"weight_map\":{\"a\":\"../m-1.safetensors\"}}", f);
	fclose(f);
	st = halo_st_open_dir(path_of("ckpt"), err, sizeof err);
	CHECK(!st && strstr(err, "weight_map"), "shard outside the directory: %s", err);
	halo_st_close(st);
	st = halo_st_open_dir(dir, err, sizeof err);
	CHECK(!st && strstr(err, "no model.safetensors"), "empty dir: %s", err);
	halo_st_close(st);
	unlink(path_of("ckpt/m-1.safetensors"));
	unlink(path_of("ckpt/m-2.safetensors"));
	unlink(path_of("ckpt/model.safetensors.index.json"));
	rmdir(path_of("ckpt"));
}

/* Each header must be refused with a message holding both fragments. */
static void test_corrupt(void)
{
	static const uint8_t data[64];
	struct {
		const char *header;
		size_t data_bytes;
		const char *frag1, *frag2;
	} cases[] = {
		{"{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "'t'", "run past"},
		{"{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "'t'", "need 12"},
		{"{\"t\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "'t'", "F64"},
		{"{\"t\":{\"dtype\":\"F4\",\"shape\":[2,3],\"data_offsets\":[0,3]}}", 8, "'t'", "must be even"},
		{"{\"t\":{\"dtype\":\"F4\",\"shape\":[2,4],\"data_offsets\":[0,8]}}", 8, "'t'", "need 4"},
		{"{\"t\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 8, "'t'", "shape[0]"},
		{"{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8, "'t'", "begin <= end"},
		{"{\"t\":{\"dtype\":\"F32\",\"shape\":[1]}}", 8, "'t'", "data_offsets"},
		{"{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		 "\"u\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
		 8, "overlap", "'t'"},
		{"{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 8, "not valid JSON", NULL},
		{"{\"t\":1} x", 8, "not valid JSON", NULL},
		{"[1,2]", 8, "not a JSON object", NULL},
	};
	char err[512];
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		write_raw(path_of("bad.safetensors"), cases[i].header, data, cases[i].data_bytes);
		halo_safetensors *st = halo_st_open_file(path_of("bad.safetensors"), err, sizeof err);
		CHECK(!st, "case %zu accepted", i);
		halo_st_close(st);
		CHECK(strstr(err, "bad.safetensors") && strstr(err, cases[i].frag1) &&
		          (!cases[i].frag2 || strstr(err, cases[i].frag2)),
		      "case %zu: %s", i, err);
	}
	/* Header length larger than the file, and a file too short for it. */
	FILE *f = fopen(path_of("bad.safetensors"), "wb");
	fwrite("\xff\xff\x00\x00\x00\x00\x00\x00{}", 1, 10, f);
	fclose(f);
	halo_safetensors *st = halo_st_open_file(path_of("bad.safetensors"), err, sizeof err);
	CHECK(!st && strstr(err, "header length"), "long header: %s", err);
	halo_st_close(st);
	write_raw(path_of("bad.safetensors"), "", NULL, 0);
	CHECK(truncate(path_of("bad.safetensors"), 5) == 0, "truncate");
	st = halo_st_open_file(path_of("bad.safetensors"), err, sizeof err);
	CHECK(!st && strstr(err, "too short"), "short file: %s", err);
	halo_st_close(st);
	st = halo_st_open_file(path_of("missing.safetensors"), err, sizeof err);
	CHECK(!st && strstr(err, "missing.safetensors"), "missing file: %s", err);
	halo_st_close(st);
	unlink(path_of("bad.safetensors"));
}

/* The checkpoint HF transformers wrote (tools/oracle): 25 f32 tensors, norms
 * randomised around 1, matrices around 0. */
static void test_fixture(void)
{
	const char *root = getenv("HALO_SOURCE_ROOT");
	char path[1024], err[512];
	snprintf(path, sizeof path, "%s/tests/fixtures/qwen3_tiny", root ? root : ".");
	halo_safetensors *st = halo_st_open_dir(path, err, sizeof err);
	CHECK(st, "%s", err);
	if (!st)
		return;
	CHECK(halo_st_count(st) == 25, "%zu tensors", halo_st_count(st));
	const halo_st_tensor *e = halo_st_find(st, "model.embed_tokens.weight");
	CHECK(e && e->dtype == HALO_ST_F32 && e->rank == 2 && e->shape[0] == 256 && e->shape[1] == 64, "embed");
	const halo_st_tensor *q = halo_st_find(st, "model.layers.1.self_attn.q_norm.weight");
	CHECK(q && q->rank == 1 && q->shape[0] == 16, "q_norm");
	CHECK(halo_st_find(st, "lm_head.weight") != NULL, "lm_head (untied)");
	float norm[64];
	double mean = 0;
	CHECK(halo_st_read_f32(st, "model.norm.weight", norm, 64, err, sizeof err) == 0, "%s", err);
	for (int i = 0; i < 64; i++)
		mean += norm[i] / 64.0;
	CHECK(mean > 0.95 && mean < 1.05 && norm[0] != 1.0f, "final norm mean %g", mean);
	halo_st_close(st);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_dtypes();
	test_f16_output();
	test_fp8_blocks();
	test_fp8_e8m0();
	test_mxfp4();
	test_scale_errors();
	test_sharded();
	test_corrupt();
	test_fixture();
	unlink(path_of("all.safetensors"));
	unlink(path_of("h.safetensors"));
	unlink(path_of("fp8.safetensors"));
	rmdir(dir);
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
