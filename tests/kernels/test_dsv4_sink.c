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
 * The split form (passes/split_attention.c: sink_attention_partial over
 * blocks of a row's key list, then attention_combine) against the same
 * unsplit reference, in the same forms and tolerance, at the blocks the pass
 * picks (64 keys: V4-Flash's 640-key CSA and 384-key HCA lists at a 32k
 * context) and at blocks smaller than a chunk on the tiny dims; prefill
 * from 0 leaves a row's later blocks empty. The reference's own split
 * (ref_sink_attention with a block, then ref_attention_combine) equals its
 * unsplit result within REF_TOL = 4e-6 relative (same floor): both sum in
 * f64, but the unsplit reference rounds each softmax weight to f32 and the
 * split each block's sums, max and denominator and the combine's
 * e^(m_b - M), a few f32 roundings apart (lavapipe run: at most 8.2e-7).
 *
 * Tolerance 2e-5 relative, floor 0.05 (lavapipe's worst: 6.9e-6).
 * Scores are dots of D <= 512 terms summed in f32 in a fixed order (the
 * reference's in f64), so a score is off by ~sqrt(D) f32 roundings of
 * |q||k|/sqrt(D) ~ 1e-6 at most here, which moves each softmax weight by as
 * much relatively; the output is a convex combination of keys in [-1, 1]
 * whose magnitude averages down to ~0.05 over hundreds of keys, hence the
 * floor: the error is ~1e-6 absolute. The split rescales each block's
 * sums once more in the combine: a few f32 roundings more (its worst on
 * lavapipe: 8.1e-6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

#define TOL 2e-5
#define FLOOR 0.05
#define REF_TOL 4e-6

typedef struct {
	int64_t h, D;
	/* scale, window, ratio, N, E (0: no entries), k (0: no ids), block (0:
	 * unsplit; else split, blocks set by sink_new) */
	ref_sink_params p;
} sink_shape;

/* The shape with p.blocks: the longest key list over the block, as the
 * shape rule of sink_attention_partial gives it. */
static sink_shape sink_new(int64_t h, int64_t D, ref_sink_params p)
{
	int64_t L = (p.window < p.N ? p.window : p.N) + (p.k ? p.k : p.E);
	p.blocks = p.block ? (L + p.block - 1) / p.block : 1;
	return (sink_shape){h, D, p};
}

/* The kernels of one form: sink_attention, or sink_attention_partial and
 * attention_combine. */
typedef struct {
	hkernel k, comb;
} sink_kernels;

/* The variants a bundle has for steps of T: decode and verify (t_max 8) or prompt (64). */
static bool build(harness *hn, const sink_shape *s, int64_t T, sink_kernels *k)
{
	kv_desc d = {.op = s->p.block ? IR_OP_SINK_ATTENTION_PARTIAL : IR_OP_SINK_ATTENTION,
		     .t_max = T <= 8 ? 8 : 64, .wtype = HALO_F32};
	d.u.sink.h = s->h;
	d.u.sink.D = s->D;
	d.u.sink.N = s->p.N;
	d.u.sink.E = s->p.E;
	d.u.sink.k = s->p.k;
	d.u.sink.window = s->p.window;
	d.u.sink.ratio = s->p.ratio;
	d.u.sink.scale = s->p.scale;
	d.u.sink.block = s->p.block;
	d.u.sink.blocks = s->p.blocks;
	kv_desc c = {.op = IR_OP_ATTENTION_COMBINE, .t_max = d.t_max};
	c.u.attention.hq = s->h;
	c.u.attention.dv = s->D;
	c.u.attention.blocks = s->p.blocks;
	if (!hk_build(hn, &d, &k->k))
		return false;
	if (s->p.block && !hk_build(hn, &c, &k->comb)) {
		hk_free(hn, &k->k);
		return false;
	}
	return true;
}

static void kernels_free(harness *hn, const sink_shape *s, sink_kernels *k)
{
	hk_free(hn, &k->k);
	if (s->p.block)
		hk_free(hn, &k->comb);
}

/* "partial + combine" or the kernel's signature, for messages. */
static const char *form_name(const sink_shape *s, const sink_kernels *k, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s%s", k->k.k.signature, s->p.block ? " + " : "", s->p.block ? k->comb.k.signature : "");
	return buf;
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

/* One step of T rows from pos (a dispatch, or the split's two): q, ids and
 * y at those rows. */
static bool run(harness *hn, sink_kernels *k, const sink_shape *s, sink_data *a, float *q, const int32_t *ids,
		float *y, int64_t T, uint32_t pos)
{
	size_t rq = (size_t)(s->h * s->D) * 4, np = (size_t)(T * s->h * s->p.blocks * (s->D + 2));
	float *part = s->p.block ? alloc_floats(np) : NULL;
	hop ops[6] = {{q, T * rq, false},
		      {a->kv, (size_t)(s->p.N * s->D) * 4, false},
		      {a->sinks, (size_t)s->h * 4, false}};
	int n = 3;
	if (s->p.E)
		ops[n++] = (hop){a->ent, (size_t)(s->p.E * s->D) * 4, false};
	if (s->p.k)
		ops[n++] = (hop){(void *)ids, (size_t)(T * s->p.k) * 4, false};
	ops[n++] = part ? (hop){part, np * 4, true} : (hop){y, T * rq, true};
	hop comb[2] = {{part, np * 4, false}, {y, T * rq, true}};
	bool ok = hk_run(hn, &k->k, ops, n, (uint32_t)T, pos) &&
		  (!part || hk_run(hn, &k->comb, comb, 2, (uint32_t)T, pos));
	free(part);
	return ok;
}

/* The unsplit reference; for a split shape also the reference's own split
 * (partial, then combine), which must agree with it within REF_TOL. */
static bool reference(const sink_shape *s, const sink_data *a, const int32_t *ids, float *want, int64_t T,
		      uint32_t pos)
{
	ref_error err;
	ref_sink_params whole = s->p;
	whole.block = 0;
	if (!ref_sink_attention(&whole, a->q, a->kv, a->sinks, s->p.E ? a->ent : NULL, s->p.k ? ids : NULL, want, T,
				s->h, s->D, pos, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		return false;
	}
	if (!s->p.block)
		return true;
	size_t rows = (size_t)(T * s->h), ny = rows * (size_t)s->D;
	float *part = alloc_floats(rows * (size_t)(s->p.blocks * (s->D + 2))), *y = alloc_floats(ny);
	bool ok = ref_sink_attention(&s->p, a->q, a->kv, a->sinks, s->p.E ? a->ent : NULL, s->p.k ? ids : NULL, part,
				     T, s->h, s->D, pos, &err);
	if (!ok)
		fprintf(stderr, "FAIL: %s\n", err.msg);
	else
		ref_attention_combine(part, y, (int64_t)rows, s->p.blocks, s->D);
	char what[128];
	snprintf(what, sizeof what, "reference split (block %lld) T=%lld pos=%u", (long long)s->p.block,
		 (long long)T, pos);
	ok = ok && check_close(what, y, want, ny, REF_TOL, FLOOR);
	free(part), free(y);
	return ok;
}

static bool sink_case(harness *hn, sink_shape s, int64_t T, uint32_t pos, bool holes, uint32_t *seed)
{
	sink_kernels k;
	if (!build(hn, &s, T, &k))
		return false;
	char name[384];
	sink_data a = data_new(&s, T, pos, holes, seed);
	bool ok = run(hn, &k, &s, &a, a.q, a.ids, a.y, T, pos) && reference(&s, &a, a.ids, a.want, T, pos);
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u%s", form_name(&s, &k, name, sizeof name), (long long)T, pos,
			 holes ? " (ids with holes)" : "");
		ok = check_close(what, a.y, a.want, (size_t)(T * s.h * s.D), TOL, FLOOR);
	}
	data_free(&a);
	kernels_free(hn, &s, &k);
	return ok;
}

/* Ids the reference rejects, in the -1 slots of each row: the kernel skips
 * them, so it matches the reference on the clean ids. */
static bool bad_ids(harness *hn, sink_shape s, int64_t T, uint32_t pos, uint32_t *seed)
{
	sink_kernels k;
	if (!build(hn, &s, T, &k))
		return false;
	char name[384];
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
		snprintf(what, sizeof what, "%s T=%lld pos=%u, rejected ids skipped", form_name(&s, &k, name, sizeof name),
			 (long long)T, pos);
		ok = check_close(what, a.y, a.want, (size_t)(T * s.h * s.D), TOL, FLOOR);
	}
	free(dirty);
	data_free(&a);
	kernels_free(hn, &s, &k);
	return ok;
}

static bool invariance(harness *hn, sink_shape s, int64_t T, uint32_t pos, uint32_t *seed)
{
	sink_kernels k;
	if (!build(hn, &s, T, &k))
		return false;
	char name[384];
	sink_data a = data_new(&s, T, pos, true, seed);
	int64_t rq = s.h * s.D;
	bool ok = run(hn, &k, &s, &a, a.q, a.ids, a.y, T, pos);
	for (int64_t t = 0; ok && t < T; t++)
		ok = run(hn, &k, &s, &a, a.q + t * rq, a.ids + t * s.p.k, a.want + t * rq, 1, pos + (uint32_t)t);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld at pos %u vs single steps",
		 form_name(&s, &k, name, sizeof name), (long long)T, pos);
	ok = ok && check_bitwise(what, a.y, a.want, (size_t)(T * rq));
	data_free(&a);
	kernels_free(hn, &s, &k);
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

/* A shape: h heads of D; scale, window, ratio, N, E, k as ref_sink_params;
 * block 0 for sink_attention, else the split over blocks of that many keys. */
#define SHAPE(h, D, scale, window, ratio, N, E, k, block) \
	sink_new(h, D, (ref_sink_params){scale, window, ratio, N, E, k, block, 0})

/* The split at the tiny dims (blocks of 4 and 12 keys: under a chunk, and
 * not a multiple of it) and at V4-Flash's, whose 640-key CSA and 384-key
 * HCA lists the pass cuts into blocks of 64; then a 32k context. */
static bool split_forms(harness *hn, float tiny, float flash, uint32_t *seed)
{
	bool ok = forms(hn, SHAPE(4, 32, tiny, 8, 0, 256, 0, 0, 4), 256, seed);  /* sliding */
	ok &= forms(hn, SHAPE(4, 32, tiny, 8, 16, 256, 16, 0, 12), 256, seed); /* HCA */
	ok &= forms(hn, SHAPE(4, 32, tiny, 8, 4, 71, 256, 2, 4), 1000, seed);  /* CSA, ring */
	ok &= forms(hn, SHAPE(8, 512, flash, 128, 4, 639, 1024, 512, 64), 4096, seed);
	ok &= forms(hn, SHAPE(8, 512, flash, 128, 128, 639, 32, 0, 64), 4096, seed);
	ok &= sink_case(hn, SHAPE(64, 512, flash, 128, 4, 4096, 1024, 512, 64), 1, 4095, false, seed);
	ok &= sink_case(hn, SHAPE(8, 512, flash, 128, 4, 639, 8192, 512, 64), 2, 32766, false, seed);
	ok &= sink_case(hn, SHAPE(8, 512, flash, 128, 128, 639, 256, 0, 64), 2, 32766, false, seed);
	return ok && invariance(hn, SHAPE(8, 512, flash, 128, 4, 639, 8192, 512, 64), 5, 32763, seed);
}

int main(void)
{
	harness *hn = harness_open();
	uint32_t seed = 777;
	bool ok = true;
	/* h, D, scale, window, ratio, N, E, k, block */
	float tiny = 0.1767767f, flash = 0.0441941738f; /* 1/sqrt(32), 1/sqrt(512) */
	ok &= forms(hn, SHAPE(4, 32, tiny, 8, 0, 256, 0, 0, 0), 256, &seed);   /* sliding */
	ok &= forms(hn, SHAPE(4, 32, tiny, 8, 16, 256, 16, 0, 0), 256, &seed); /* HCA */
	ok &= forms(hn, SHAPE(4, 32, tiny, 8, 4, 256, 64, 2, 0), 256, &seed);  /* CSA */
	ok &= forms(hn, SHAPE(8, 512, flash, 128, 4, 4096, 1024, 512, 0), 4096, &seed);
	ok &= forms(hn, SHAPE(8, 512, flash, 128, 128, 4096, 32, 0, 0), 4096, &seed);
	ok &= sink_case(hn, SHAPE(64, 512, flash, 128, 4, 4096, 1024, 512, 0), 1, 4095, false, &seed);
	/* rings (position j at row j mod N) read past their length: 64 + window - 1
	 * rows, and V4-Flash's 639 */
	ok &= forms(hn, SHAPE(4, 32, tiny, 8, 0, 71, 0, 0, 0), 1000, &seed);
	ok &= forms(hn, SHAPE(4, 32, tiny, 8, 16, 71, 64, 0, 0), 1000, &seed);
	ok &= forms(hn, SHAPE(4, 32, tiny, 8, 4, 71, 256, 2, 0), 1000, &seed);
	ok &= forms(hn, SHAPE(8, 512, flash, 128, 4, 639, 1024, 512, 0), 4096, &seed);
	ok &= forms(hn, SHAPE(8, 512, flash, 128, 128, 639, 32, 0, 0), 4096, &seed);
	/* a 32k context: 8192 CSA entries, 256 HCA entries, the window's ring */
	ok &= sink_case(hn, SHAPE(8, 512, flash, 128, 4, 639, 8192, 512, 0), 2, 32766, false, &seed);
	ok &= sink_case(hn, SHAPE(8, 512, flash, 128, 128, 639, 256, 0, 0), 2, 32766, false, &seed);
	ok &= split_forms(hn, tiny, flash, &seed);
	int rc = harness_close(hn);
	return ok && rc == 0 ? 0 : 1;
}
