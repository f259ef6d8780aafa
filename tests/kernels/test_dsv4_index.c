/* index_topk against ref_index_topk: the tiny fixture's indexer (2 heads of
 * 16, top 2, ratio 4) and V4-Flash's (64 heads of 128, top 512) over 1024
 * entries (a 4096-token context), prefill from position 0 (rows with fewer
 * visible keys than k, so -1s) and deep (T = 64), decode steps T = 1..5,
 * decode at a 32k context (8192 entries), and batch invariance (T rows in
 * one dispatch equal T one-row dispatches) of the decode variant (t_max 8,
 * 512 lanes) and the prompt variant (t_max 64, 256 lanes).
 *
 * The ids must equal the reference's exactly wherever the scores are exact
 * in f32: "grid" inputs (q and keys in multiples of 1/4 up to 2, w in
 * multiples of 1/4, scale 1/8) make every product, dot and head sum exact
 * in both (at most 22 significant bits), so the kernel ranks the very values
 * the reference ranks. Those inputs tie on purpose: keys repeat a few
 * patterns, one pattern is all zeros (a score of exactly 0), and most of a
 * head's dots are negative (relu zeros), so most scores equal others and the
 * order rests on ties to the lower index; one case has q = 0 (every score 0:
 * ids 0..k-1).
 * On random inputs the kernel's f32 scores differ from the reference's
 * (f64 sums) by ~1e-6 relative, so two keys closer than that may swap: there
 * the check is that the ids are distinct visible keys, -1 past min(k, n),
 * and that the i-th pick's reference score equals the reference's i-th
 * best within 1e-5 of the row's largest score (and the count of exact
 * mismatches is printed; at the tiny dims there are none).
 *
 * The split form (passes/split_attention.c: index_score over blocks of
 * keys, then index_select over the scores) in the same forms and checks,
 * at the blocks the pass picks (64 keys of V4-Flash's 1024 entries, 128 of
 * 8192 at a 32k context, 160 of 8448 at tools/gpu/bench-dsv4.sh's 33792)
 * and at blocks that are not a multiple of the lanes or leave a ragged last
 * one (the odd sizes); its ids must also equal the unsplit kernel's bitwise on
 * every input, random ones included: the scoring code and its order per
 * key, and the selection, are the unsplit kernel's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define SCORE_TOL 1e-5

typedef struct {
	int64_t h, d, E, k, m;
	float scale;
	int64_t block; /* 0: index_topk; else index_score over blocks of this many keys, then index_select */
} index_shape;

typedef enum { RANDOM, GRID, ZERO_Q } data_kind;

/* The kernels of one form: index_topk, or index_score and index_select. */
typedef struct {
	hkernel k, sel;
} index_kernels;

/* The variants a bundle has for steps of up to t_max tokens: decode and
 * verify (8: 512 lanes) or prompt (64: 256 lanes). */
static bool build(harness *hn, const index_shape *s, int64_t t_max, index_kernels *k)
{
	kv_desc d = {.op = s->block ? IR_OP_INDEX_SCORE : IR_OP_INDEX_TOPK, .t_max = t_max, .wtype = HALO_F32};
	d.u.index.h = s->h;
	d.u.index.d = s->d;
	d.u.index.E = s->E;
	d.u.index.k = s->block ? 0 : s->k;
	d.u.index.ratio = s->m;
	d.u.index.scale = s->scale;
	d.u.index.block = s->block;
	kv_desc c = {.op = IR_OP_INDEX_SELECT, .t_max = t_max, .wtype = HALO_F32};
	c.u.index.E = s->E;
	c.u.index.k = s->k;
	c.u.index.ratio = s->m;
	if (!hk_build(hn, &d, &k->k))
		return false;
	if (s->block && !hk_build(hn, &c, &k->sel)) {
		hk_free(hn, &k->k);
		return false;
	}
	return true;
}

static void kernels_free(harness *hn, const index_shape *s, index_kernels *k)
{
	hk_free(hn, &k->k);
	if (s->block)
		hk_free(hn, &k->sel);
}

typedef struct {
	float *q, *w, *keys;
	int32_t *ids, *want;
} index_data;

static uint32_t lcg(uint32_t *seed)
{
	*seed = *seed * 1664525u + 1013904223u;
	return *seed >> 8;
}

/* Multiples of 1/4 in [lo, hi] (quarters). */
static float quarter(uint32_t *seed, int lo, int hi)
{
	return (float)(lo + (int)(lcg(seed) % (uint32_t)(hi - lo + 1))) / 4.0f;
}

/* Grid data: q mostly negative against the keys' mostly positive channels
 * (relu zeros), w positive; the keys are 5 patterns (the last all zero). */
static void fill_grid(const index_shape *s, index_data *a, int64_t T, uint32_t *seed)
{
	for (int64_t i = 0; i < T * s->h * s->d; i++)
		a->q[i] = quarter(seed, -8, 3);
	for (int64_t i = 0; i < T * s->h; i++)
		a->w[i] = quarter(seed, 1, 8);
	float pattern[5][512];
	for (int p = 0; p < 5; p++)
		for (int64_t i = 0; i < s->d; i++)
			pattern[p][i] = p == 4 ? 0.0f : quarter(seed, -2, 8);
	for (int64_t e = 0; e < s->E; e++)
		memcpy(a->keys + e * s->d, pattern[lcg(seed) % 5], (size_t)s->d * sizeof(float));
}

static index_data data_new(const index_shape *s, int64_t T, data_kind kind, uint32_t *seed)
{
	size_t nq = (size_t)(T * s->h * s->d), nk = (size_t)(s->E * s->d), ni = (size_t)(T * s->k);
	index_data a = {alloc_floats(nq), alloc_floats((size_t)(T * s->h)), alloc_floats(nk),
			calloc(ni, sizeof(int32_t)), calloc(ni, sizeof(int32_t))};
	if (kind == GRID) {
		fill_grid(s, &a, T, seed);
		return a;
	}
	fill_random(a.q, nq, 1.0f, seed);
	fill_random(a.w, (size_t)(T * s->h), 0.2f, seed);
	fill_random(a.keys, nk, 1.0f, seed);
	if (kind == ZERO_Q)
		memset(a.q, 0, nq * sizeof(float));
	return a;
}

static void data_free(index_data *a)
{
	free(a->q), free(a->w), free(a->keys), free(a->ids), free(a->want);
}

/* One step of T rows (a dispatch, or the split's two through the scores). */
static bool run(harness *hn, index_kernels *k, const index_shape *s, index_data *a, float *q, float *w,
		int32_t *ids, int64_t T, uint32_t pos)
{
	size_t ns = (size_t)(T * s->E);
	float *scores = s->block ? alloc_floats(ns) : NULL;
	hop ops[4] = {
		{q, (size_t)(T * s->h * s->d) * 4, false},
		{w, (size_t)(T * s->h) * 4, false},
		{a->keys, (size_t)(s->E * s->d) * 4, false},
		scores ? (hop){scores, ns * 4, true} : (hop){ids, (size_t)(T * s->k) * 4, true},
	};
	hop sel[2] = {{scores, ns * 4, false}, {ids, (size_t)(T * s->k) * 4, true}};
	bool ok = hk_run(hn, &k->k, ops, 4, (uint32_t)T, pos) &&
		  (!scores || hk_run(hn, &k->sel, sel, 2, (uint32_t)T, pos));
	free(scores);
	return ok;
}

/* A split form's ids against the unsplit kernel's on the same rows: equal. */
static bool same_as_unsplit(harness *hn, index_shape s, index_data *a, int64_t T, uint32_t pos, char *why,
			    size_t len)
{
	index_shape whole = s;
	whole.block = 0;
	index_kernels k;
	if (!build(hn, &whole, T <= 8 ? 8 : 64, &k))
		return false;
	int32_t *ids = calloc((size_t)(T * s.k), sizeof *ids);
	bool ok = run(hn, &k, &whole, a, a->q, a->w, ids, T, pos);
	if (ok && memcmp(ids, a->ids, (size_t)(T * s.k) * sizeof *ids)) {
		snprintf(why, len, "ids differ from the unsplit kernel's");
		ok = false;
	}
	free(ids);
	kernels_free(hn, &whole, &k);
	return ok;
}

/* The reference's score of key e for row t (ref_compress.c's formula). */
static float ref_score(const index_shape *s, const index_data *a, int64_t t, int64_t e)
{
	double total = 0.0;
	for (int64_t j = 0; j < s->h; j++) {
		double dot = 0.0;
		for (int64_t i = 0; i < s->d; i++)
			dot += (double)a->q[(t * s->h + j) * s->d + i] * (double)a->keys[e * s->d + i];
		float r = (float)dot > 0.0f ? (float)dot : 0.0f;
		total += (double)(a->w[t * s->h + j] * (r * s->scale));
	}
	return (float)total;
}

/* Row t's ids: distinct visible keys, then -1, each pick's score the
 * reference's pick's within tol; counts exact mismatches into *diff. */
static bool row_ok(const index_shape *s, const index_data *a, int64_t t, uint32_t pos, int64_t *diff, char *why,
		   size_t len)
{
	int64_t n = (pos + t + 1) / s->m < s->E ? (pos + t + 1) / s->m : s->E, kk = s->k < n ? s->k : n;
	const int32_t *got = a->ids + t * s->k, *want = a->want + t * s->k;
	double top = kk ? fabs((double)ref_score(s, a, t, want[0])) : 0.0;
	for (int64_t i = 0; i < s->k; i++) {
		*diff += got[i] != want[i];
		if (i >= kk ? got[i] != -1 : got[i] < 0 || got[i] >= n) {
			snprintf(why, len, "row %lld slot %lld: id %d (n = %lld visible)", (long long)t, (long long)i,
				 got[i], (long long)n);
			return false;
		}
		for (int64_t j = 0; j < i && i < kk; j++)
			if (got[j] == got[i]) {
				snprintf(why, len, "row %lld: id %d twice", (long long)t, got[i]);
				return false;
			}
		if (i < kk && fabs((double)ref_score(s, a, t, got[i]) - ref_score(s, a, t, want[i])) >
				      SCORE_TOL * fmax(top, 1e-30)) {
			snprintf(why, len, "row %lld slot %lld: id %d scores %.9g, the reference's %d %.9g", (long long)t,
				 (long long)i, got[i], (double)ref_score(s, a, t, got[i]), want[i],
				 (double)ref_score(s, a, t, want[i]));
			return false;
		}
	}
	return true;
}

static bool index_case(harness *hn, index_shape s, int64_t T, uint32_t pos, data_kind kind, uint32_t *seed)
{
	index_kernels k;
	if (!build(hn, &s, T <= 8 ? 8 : 64, &k))
		return false;
	index_data a = data_new(&s, T, kind, seed);
	bool ok = run(hn, &k, &s, &a, a.q, a.w, a.ids, T, pos);
	ref_index_topk(a.q, a.w, a.keys, a.want, T, s.h, s.d, s.E, s.k, s.m, s.scale, pos);
	static const char *const kinds[] = {"random", "grid (exact, ties)", "q = 0 (all tie)"};
	char why[256] = "";
	int64_t diff = 0;
	for (int64_t t = 0; ok && t < T; t++)
		ok = row_ok(&s, &a, t, pos, &diff, why, sizeof why);
	if (ok && kind != RANDOM && diff) {
		snprintf(why, sizeof why, "%lld ids differ from the reference's on exact scores", (long long)diff);
		ok = false;
	}
	if (ok && s.block)
		ok = same_as_unsplit(hn, s, &a, T, pos, why, sizeof why);
	printf("%s %s%s%s T=%lld pos=%u %s: %lld of %lld ids differ from the reference's%s%s\n", ok ? "ok  " : "FAIL",
	       k.k.k.signature, s.block ? " + " : "", s.block ? k.sel.k.signature : "", (long long)T, pos, kinds[kind],
	       (long long)diff, (long long)(T * s.k), ok ? "" : ": ", why);
	data_free(&a);
	kernels_free(hn, &s, &k);
	return ok;
}

/* T rows in one dispatch against T one-row dispatches of the variant for
 * t_max: the same ids. */
static bool invariance(harness *hn, index_shape s, int64_t T, int64_t t_max, uint32_t pos, uint32_t *seed)
{
	index_kernels k;
	if (!build(hn, &s, t_max, &k))
		return false;
	index_data a = data_new(&s, T, RANDOM, seed);
	bool ok = run(hn, &k, &s, &a, a.q, a.w, a.ids, T, pos);
	for (int64_t t = 0; ok && t < T; t++)
		ok = run(hn, &k, &s, &a, a.q + t * s.h * s.d, a.w + t * s.h, a.want + t * s.k, 1, pos + (uint32_t)t);
	ok = ok && !memcmp(a.ids, a.want, (size_t)(T * s.k) * sizeof(int32_t));
	printf("%s batch invariance %s%s, T=%lld at pos %u vs single steps\n", ok ? "ok  " : "FAIL", k.k.k.signature,
	       s.block ? " + index_select" : "", (long long)T, pos);
	data_free(&a);
	kernels_free(hn, &s, &k);
	return ok;
}

/* Prefill from 0 and deep, decode T = 1..5, in each kind of data. */
static bool forms(harness *hn, index_shape s, uint32_t deep, uint32_t *seed)
{
	bool ok = true;
	for (data_kind kind = RANDOM; kind <= ZERO_Q; kind++) {
		ok &= index_case(hn, s, 64, 0, kind, seed) && index_case(hn, s, 64, deep - 64, kind, seed);
		for (int64_t T = 1; T <= 5; T++)
			ok &= index_case(hn, s, T, deep - (uint32_t)T, kind, seed);
	}
	return ok && invariance(hn, s, 5, 8, deep - 5, seed) && invariance(hn, s, 16, 64, deep - 16, seed);
}

int main(void)
{
	harness *hn = harness_open();
	uint32_t seed = 31337;
	bool ok = true;
	/* h, d, E, k, ratio, scale, block */
	ok &= forms(hn, (index_shape){2, 16, 64, 2, 4, 0.125f, 0}, 256, &seed);        /* the tiny fixture's */
	ok &= forms(hn, (index_shape){64, 128, 1024, 512, 4, 0.125f, 0}, 4096, &seed); /* V4-Flash's */
	ok &= forms(hn, (index_shape){3, 12, 300, 20, 3, 0.125f, 0}, 900, &seed);      /* odd sizes */
	/* V4-Flash's at a 32k context: 8192 entries */
	index_shape ctx32k = {64, 128, 8192, 512, 4, 0.125f, 0};
	for (data_kind kind = RANDOM; kind <= GRID; kind++)
		ok &= index_case(hn, ctx32k, 2, 32766, kind, &seed);
	/* split: 2 blocks of 32 at the tiny dims; blocks of 96 (64 lanes twice,
	 * the second time 32) with a last block of 12; V4-Flash's as the pass
	 * cuts it; a 32k context (64 blocks of 128), and the bench's 33792
	 * (blocks of 160 over its 8448 entries: 128 lanes twice) */
	ok &= forms(hn, (index_shape){2, 16, 64, 2, 4, 0.125f, 32}, 256, &seed);
	ok &= forms(hn, (index_shape){3, 12, 300, 20, 3, 0.125f, 96}, 900, &seed);
	ok &= forms(hn, (index_shape){64, 128, 1024, 512, 4, 0.125f, 64}, 4096, &seed);
	ctx32k.block = 128;
	for (data_kind kind = RANDOM; kind <= GRID; kind++)
		ok &= index_case(hn, ctx32k, 2, 32766, kind, &seed);
	ok &= invariance(hn, ctx32k, 5, 8, 32763, &seed);
	index_shape bench = {64, 128, 8448, 512, 4, 0.125f, 160};
	for (data_kind kind = RANDOM; kind <= GRID; kind++)
		ok &= index_case(hn, bench, 2, 33790, kind, &seed);
	int rc = harness_close(hn);
	return ok && rc == 0 ? 0 : 1;
}
