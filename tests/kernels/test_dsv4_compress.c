/* compress_kv against ref_compress_kv: DeepSeek V4's compressors at the
 * tiny fixture's dims (D = 32; CSA: 4 tokens a window with overlap, HCA: 16
 * without) and at V4-Flash's (D = 512; CSA 4, HCA 128) over caches of
 * 4096 rows and over rings (the last N positions at row q mod N, as
 * models/deepseek_v4.yaml keeps them: 519 and 639 rows at V4-Flash's dims)
 * read past their length: prefill from position 0 and deep (T = 64, so many
 * windows close in one step), decode steps T = 1..5 at positions that close
 * a window and that do not; and batch invariance (T rows in one dispatch
 * equal T one-row dispatches, bitwise).
 *
 * Tolerance 4e-6 relative, floor 0.1 (lavapipe's worst: 1.1e-6). An entry
 * is a convex combination of at most 2m cached values in [-1, 1]; the
 * kernel takes the softmax's exponentials in f32 and sums in f32 in slot
 * order (e^x within a few ulp), the reference sums in f64: the difference
 * is a few f32 roundings of magnitude <= max|c|, about 1e-7 absolute, and
 * the floor keeps an entry that cancels to near 0 from inflating the
 * relative error. Rows that close no window are 0 in both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL 4e-6
#define FLOOR 0.1

typedef struct {
	int64_t N, D, m;
	bool overlap;
} compress_shape;

static int64_t width(const compress_shape *s)
{
	return (s->overlap ? 2 : 1) * s->D;
}

/* The variant a bundle has for steps of T: decode and verify (t_max 8) or prompt (64). */
static bool build(harness *hn, const compress_shape *s, int64_t T, hkernel *k)
{
	kv_desc d = {.op = IR_OP_COMPRESS_KV, .t_max = T <= 8 ? 8 : 64, .wtype = HALO_F32};
	d.u.compress.N = s->N;
	d.u.compress.D = s->D;
	d.u.compress.ratio = s->m;
	d.u.compress.overlap = s->overlap;
	return hk_build(hn, &d, k);
}

typedef struct {
	float *c, *z, *bias, *y, *want;
} compress_data;

/* Caches of N rows: c in [-1, 1], gates z and bias in [-4, 4], so the
 * softmax weights spread over a range of e^16. */
static compress_data data_new(const compress_shape *s, int64_t T, uint32_t *seed)
{
	size_t nc = (size_t)(s->N * width(s)), nb = (size_t)(s->m * width(s)), ny = (size_t)(T * s->D);
	compress_data a = {alloc_floats(nc), alloc_floats(nc), alloc_floats(nb), alloc_floats(ny), alloc_floats(ny)};
	fill_random(a.c, nc, 1.0f, seed);
	fill_random(a.z, nc, 3.0f, seed);
	fill_random(a.bias, nb, 1.0f, seed);
	return a;
}

static void data_free(compress_data *a)
{
	free(a->c), free(a->z), free(a->bias), free(a->y), free(a->want);
}

static bool run(harness *hn, hkernel *k, const compress_shape *s, compress_data *a, float *y, int64_t T,
		uint32_t pos)
{
	size_t nc = (size_t)(s->N * width(s)) * 4;
	hop ops[4] = {
		{a->c, nc, false},
		{a->z, nc, false},
		{a->bias, (size_t)(s->m * width(s)) * 4, false},
		{y, (size_t)(T * s->D) * 4, true},
	};
	return hk_run(hn, k, ops, 4, (uint32_t)T, pos);
}

static bool compress_case(harness *hn, compress_shape s, int64_t T, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(hn, &s, T, &k))
		return false;
	compress_data a = data_new(&s, T, seed);
	ref_error err;
	bool ok = run(hn, &k, &s, &a, a.y, T, pos);
	if (ok && !ref_compress_kv(a.c, a.z, a.bias, a.want, T, s.N, s.D, s.m, s.overlap, pos, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		ok = false;
	}
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u", k.k.signature, (long long)T, pos);
		ok = check_close(what, a.y, a.want, (size_t)(T * s.D), TOL, FLOOR);
	}
	data_free(&a);
	hk_free(hn, &k);
	return ok;
}

static bool invariance(harness *hn, compress_shape s, int64_t T, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(hn, &s, T, &k))
		return false;
	compress_data a = data_new(&s, T, seed);
	bool ok = run(hn, &k, &s, &a, a.y, T, pos);
	for (int64_t t = 0; ok && t < T; t++)
		ok = run(hn, &k, &s, &a, a.want + t * s.D, 1, pos + (uint32_t)t);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld at pos %u vs single steps", k.k.signature,
		 (long long)T, pos);
	ok = ok && check_bitwise(what, a.y, a.want, (size_t)(T * s.D));
	data_free(&a);
	hk_free(hn, &k);
	return ok;
}

int main(void)
{
	harness *hn = harness_open();
	uint32_t seed = 4242;
	bool ok = true;
	/* {N, D, ratio, overlap}, then the positions the steps end at: the
	 * cache's length, or past it for rings (position q is row q mod N;
	 * N = 64 + (1 + overlap) * ratio - 1 holds a 64-token step's windows,
	 * V4-Flash's rings are 519 and 639 rows) */
	const struct {
		compress_shape s;
		uint32_t end;
	} shapes[] = {
		{{256, 32, 4, true}, 256},       /* the tiny fixture's CSA */
		{{256, 32, 16, false}, 256},     /* its HCA */
		{{4096, 512, 4, true}, 4096},    /* V4-Flash's CSA */
		{{4096, 512, 128, false}, 4096}, /* its HCA */
		{{71, 32, 4, true}, 4096},       /* rings */
		{{79, 32, 16, false}, 4096},
		{{519, 512, 4, true}, 8192},
		{{639, 512, 128, false}, 8192},
	};
	for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
		compress_shape s = shapes[i].s;
		uint32_t end = shapes[i].end, deep = end - 64; /* end: a multiple of every ratio, so pos + 63 closes */
		ok &= compress_case(hn, s, 64, 0, &seed);
		ok &= compress_case(hn, s, 64, deep, &seed);
		for (int64_t T = 1; T <= 5; T++) {
			/* the step's last row closes a window, then one past it */
			ok &= compress_case(hn, s, T, end - (uint32_t)T, &seed);
			ok &= compress_case(hn, s, T, (uint32_t)(2 * s.m - T + 1), &seed);
		}
		ok &= invariance(hn, s, 5, end - 5, &seed) && invariance(hn, s, 64, deep, &seed);
	}
	int rc = harness_close(hn);
	return ok && rc == 0 ? 0 : 1;
}
