/* sink_attention against ref_sink_attention in its three forms: the
 * sliding window alone, the window plus every closed entry (HCA) and the
 * window plus selected entries (CSA, ids). At the tiny fixture's dims
 * (4 heads of 32, window 8, HCA 16, CSA 4 with 2 ids) and at V4-Flash's
 * (D = 512, window 128, CSA 4 with 512 ids of 1024 entries, HCA 128 over a
 * 4096-row cache; 8 heads, and all 64 for one decode step): prefill from
 * position 0 (rows whose window is not full and that see no entry yet) and
 * deep in the cache (T = 64), decode steps T = 1..5; batch invariance (T rows
 * in one dispatch equal T one-row dispatches, bitwise); ids padded with -1
 * in the middle of a row; caches that are rings (position j at row j mod N,
 * as models/deepseek_v4.yaml keeps them) read past their length; and ids
 * the reference rejects (not closed yet, past the entries, below -1),
 * which the kernel must skip: its result equals the reference's on the
 * same ids with those set to -1.
 *
 * Tolerance 2e-5 relative, floor 0.05 (lavapipe's worst: 6.9e-6).
 * Scores are dots of D <= 512 terms summed in f32 in a fixed order (the
 * reference's in f64), so a score is off by ~sqrt(D) f32 roundings of
 * |q||k|/sqrt(D) ~ 1e-6 at most here, which moves each softmax weight by as
 * much relatively; the output is a convex combination of keys in [-1, 1]
 * whose magnitude averages down to ~0.05 over hundreds of keys, hence the
 * floor: the error is ~1e-6 absolute. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL 2e-5
#define FLOOR 0.05

typedef struct {
	int64_t h, D;
	ref_sink_params p; /* scale, window, ratio, N, E (0: no entries), k (0: no ids) */
} sink_shape;

/* The variant a bundle has for steps of T: decode and verify (t_max 8) or prompt (64). */
static bool build(harness *hn, const sink_shape *s, int64_t T, hkernel *k)
{
	kv_desc d = {.op = IR_OP_SINK_ATTENTION, .t_max = T <= 8 ? 8 : 64, .wtype = HALO_F32};
	d.u.sink.h = s->h;
	d.u.sink.D = s->D;
	d.u.sink.N = s->p.N;
	d.u.sink.E = s->p.E;
	d.u.sink.k = s->p.k;
	d.u.sink.window = s->p.window;
	d.u.sink.ratio = s->p.ratio;
	d.u.sink.scale = s->p.scale;
	return hk_build(hn, &d, k);
}

typedef struct {
	float *q, *kv, *sinks, *ent, *y, *want;
	int32_t *ids;
} sink_data;

static uint32_t lcg(uint32_t *seed)
{
	*seed = *seed * 1664525u + 1013904223u;
	return *seed >> 8;
}

/* Row t's ids: min(k, closed) distinct closed entries in random order, the
 * -1s spread between them when `holes`, else after them. */
static void make_ids(const sink_shape *s, int32_t *ids, int64_t T, uint32_t pos, bool holes, uint32_t *seed)
{
	int64_t k = s->p.k, E = s->p.E, m = s->p.ratio;
	int32_t *perm = malloc((size_t)E * sizeof *perm);
	for (int64_t t = 0; t < T; t++) {
		int64_t closed = (pos + t + 1) / m < E ? (pos + t + 1) / m : E, kk = k < closed ? k : closed;
		for (int64_t e = 0; e < closed; e++)
			perm[e] = (int32_t)e;
		for (int64_t i = 0; i < kk; i++) { /* a partial Fisher-Yates shuffle */
			int64_t j = i + lcg(seed) % (closed - i);
			int32_t v = perm[i];
			perm[i] = perm[j];
			perm[j] = v;
		}
		int32_t *row = ids + t * k;
		for (int64_t i = 0; i < k; i++)
			row[i] = -1;
		for (int64_t i = 0, at = 0; i < kk; i++, at++) {
			if (holes && kk < k && lcg(seed) % 2)
				at = at + 1 < k - (kk - i - 1) ? at + 1 : at;
			row[at] = perm[i];
		}
	}
	free(perm);
}

/* q at amplitude 4 (scores of a few units, so the softmax is far from
 * uniform), keys and entries in [-1, 1], sinks in [-2, 2]. */
static sink_data data_new(const sink_shape *s, int64_t T, uint32_t pos, bool holes, uint32_t *seed)
{
	size_t nq = (size_t)(T * s->h * s->D), nkv = (size_t)(s->p.N * s->D), ne = (size_t)(s->p.E * s->D);
	sink_data a = {alloc_floats(nq), alloc_floats(nkv), alloc_floats((size_t)s->h), alloc_floats(ne),
		       alloc_floats(nq), alloc_floats(nq), calloc((size_t)(T * s->p.k) + 1, sizeof(int32_t))};
	fill_random(a.q, nq, 4.0f, seed);
	fill_random(a.kv, nkv, 1.0f, seed);
	fill_random(a.sinks, (size_t)s->h, 2.0f, seed);
	fill_random(a.ent, ne, 1.0f, seed);
	if (s->p.k)
		make_ids(s, a.ids, T, pos, holes, seed);
	return a;
}

static void data_free(sink_data *a)
{
	free(a->q), free(a->kv), free(a->sinks), free(a->ent), free(a->y), free(a->want), free(a->ids);
}

/* One dispatch of T rows from pos: q, ids and y at those rows. */
static bool run(harness *hn, hkernel *k, const sink_shape *s, sink_data *a, float *q, const int32_t *ids, float *y,
		int64_t T, uint32_t pos)
{
	size_t rq = (size_t)(s->h * s->D) * 4;
	hop ops[6] = {{q, T * rq, false},
		      {a->kv, (size_t)(s->p.N * s->D) * 4, false},
		      {a->sinks, (size_t)s->h * 4, false}};
	int n = 3;
	if (s->p.E)
		ops[n++] = (hop){a->ent, (size_t)(s->p.E * s->D) * 4, false};
	if (s->p.k)
		ops[n++] = (hop){(void *)ids, (size_t)(T * s->p.k) * 4, false};
	ops[n++] = (hop){y, T * rq, true};
	return hk_run(hn, k, ops, n, (uint32_t)T, pos);
}

static bool reference(const sink_shape *s, const sink_data *a, const int32_t *ids, float *want, int64_t T,
		      uint32_t pos)
{
	ref_error err;
	if (ref_sink_attention(&s->p, a->q, a->kv, a->sinks, s->p.E ? a->ent : NULL, s->p.k ? ids : NULL, want, T,
			       s->h, s->D, pos, &err))
		return true;
	fprintf(stderr, "FAIL: %s\n", err.msg);
	return false;
}

static bool sink_case(harness *hn, sink_shape s, int64_t T, uint32_t pos, bool holes, uint32_t *seed)
{
	hkernel k;
	if (!build(hn, &s, T, &k))
		return false;
	sink_data a = data_new(&s, T, pos, holes, seed);
	bool ok = run(hn, &k, &s, &a, a.q, a.ids, a.y, T, pos) && reference(&s, &a, a.ids, a.want, T, pos);
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u%s", k.k.signature, (long long)T, pos,
			 holes ? " (ids with holes)" : "");
		ok = check_close(what, a.y, a.want, (size_t)(T * s.h * s.D), TOL, FLOOR);
	}
	data_free(&a);
	hk_free(hn, &k);
	return ok;
}

/* Ids the reference rejects, in the -1 slots of each row: the kernel skips
 * them, so it matches the reference on the clean ids. */
static bool bad_ids(harness *hn, sink_shape s, int64_t T, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(hn, &s, T, &k))
		return false;
	sink_data a = data_new(&s, T, pos, true, seed);
	int32_t *dirty = malloc((size_t)(T * s.p.k) * sizeof *dirty);
	memcpy(dirty, a.ids, (size_t)(T * s.p.k) * sizeof *dirty);
	for (int64_t t = 0; t < T; t++) {
		int64_t closed = (pos + t + 1) / s.p.ratio, bad[3] = {closed, s.p.E + 3, -7}, n = 0;
		for (int64_t i = 0; i < s.p.k; i++)
			if (dirty[t * s.p.k + i] < 0)
				dirty[t * s.p.k + i] = (int32_t)bad[n++ % 3];
	}
	bool ok = run(hn, &k, &s, &a, a.q, dirty, a.y, T, pos) && reference(&s, &a, a.ids, a.want, T, pos);
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u, rejected ids skipped", k.k.signature, (long long)T, pos);
		ok = check_close(what, a.y, a.want, (size_t)(T * s.h * s.D), TOL, FLOOR);
	}
	free(dirty);
	data_free(&a);
	hk_free(hn, &k);
	return ok;
}

static bool invariance(harness *hn, sink_shape s, int64_t T, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(hn, &s, T, &k))
		return false;
	sink_data a = data_new(&s, T, pos, true, seed);
	int64_t rq = s.h * s.D;
	bool ok = run(hn, &k, &s, &a, a.q, a.ids, a.y, T, pos);
	for (int64_t t = 0; ok && t < T; t++)
		ok = run(hn, &k, &s, &a, a.q + t * rq, a.ids + t * s.p.k, a.want + t * rq, 1, pos + (uint32_t)t);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld at pos %u vs single steps", k.k.signature,
		 (long long)T, pos);
	ok = ok && check_bitwise(what, a.y, a.want, (size_t)(T * rq));
	data_free(&a);
	hk_free(hn, &k);
	return ok;
}

/* The forms at one size: prefill from 0 and deep, decode T = 1..5 deep,
 * batch invariance; with ids also holes and rejected ids. */
static bool forms(harness *hn, sink_shape s, uint32_t deep, uint32_t *seed)
{
	bool ok = sink_case(hn, s, 64, 0, false, seed) && sink_case(hn, s, 64, deep - 64, false, seed);
	for (int64_t T = 1; T <= 5; T++)
		ok &= sink_case(hn, s, T, deep - (uint32_t)T, false, seed);
	if (s.p.k)
		ok &= sink_case(hn, s, 5, deep - 40, true, seed) && bad_ids(hn, s, 5, deep - 20, seed);
	return ok && invariance(hn, s, 5, deep - 5, seed) && invariance(hn, s, 16, deep - 16, seed);
}

int main(void)
{
	harness *hn = harness_open();
	uint32_t seed = 777;
	bool ok = true;
	/* h, D, {scale, window, ratio, N, E, k} */
	float tiny = 0.1767767f, flash = 0.0441941738f; /* 1/sqrt(32), 1/sqrt(512) */
	ok &= forms(hn, (sink_shape){4, 32, {tiny, 8, 0, 256, 0, 0}}, 256, &seed);      /* sliding */
	ok &= forms(hn, (sink_shape){4, 32, {tiny, 8, 16, 256, 16, 0}}, 256, &seed);    /* HCA */
	ok &= forms(hn, (sink_shape){4, 32, {tiny, 8, 4, 256, 64, 2}}, 256, &seed);     /* CSA */
	ok &= forms(hn, (sink_shape){8, 512, {flash, 128, 4, 4096, 1024, 512}}, 4096, &seed);
	ok &= forms(hn, (sink_shape){8, 512, {flash, 128, 128, 4096, 32, 0}}, 4096, &seed);
	ok &= sink_case(hn, (sink_shape){64, 512, {flash, 128, 4, 4096, 1024, 512}}, 1, 4095, false, &seed);
	/* rings (position j at row j mod N) read past their length: 64 + window - 1
	 * rows, and V4-Flash's 639 */
	ok &= forms(hn, (sink_shape){4, 32, {tiny, 8, 0, 71, 0, 0}}, 1000, &seed);
	ok &= forms(hn, (sink_shape){4, 32, {tiny, 8, 16, 71, 64, 0}}, 1000, &seed);
	ok &= forms(hn, (sink_shape){4, 32, {tiny, 8, 4, 71, 256, 2}}, 1000, &seed);
	ok &= forms(hn, (sink_shape){8, 512, {flash, 128, 4, 639, 1024, 512}}, 4096, &seed);
	ok &= forms(hn, (sink_shape){8, 512, {flash, 128, 128, 639, 32, 0}}, 4096, &seed);
	/* a 32k context: 8192 CSA entries, 256 HCA entries, the window's ring */
	ok &= sink_case(hn, (sink_shape){8, 512, {flash, 128, 4, 639, 8192, 512}}, 2, 32766, false, &seed);
	ok &= sink_case(hn, (sink_shape){8, 512, {flash, 128, 128, 639, 256, 0}}, 2, 32766, false, &seed);
	int rc = harness_close(hn);
	return ok && rc == 0 ? 0 : 1;
}
