/* attention against ref_attention: prefill (pos 0) and decode (pos > 0) over
 * the cache, GQA, odd head dims (the scalar path) and multiples of 4 (vec4),
 * and batch invariance: one dispatch of m tokens equals m single-token
 * dispatches bitwise. The same for split attention (attention_partial over
 * blocks of keys, then attention_combine), against the same unsplit
 * reference, with empty blocks past the last key: at t_max 8 (decode and
 * verify: attention.comp) and t_max 64 (prompt steps: attention_rows.comp,
 * 32 queries a workgroup, the heads of a kv group together where GQA allows,
 * ragged last tiles), whose rows equal single rows bitwise as well. And the
 * one-dispatch form passes/split_attention.c makes, attention_blocks (each
 * row's last block to finish merges the blocks): bitwise equal to the two
 * dispatches, whatever order the workgroups finish in, with its counters
 * zero again after every dispatch. And attention_rope
 * (passes/fuse_attention_rope.c: the queries and the step's keys normalised
 * and rotated in the kernel) against ref_rms_norm, ref_rope and
 * ref_attention, its stored keys against the reference's, its rows bitwise
 * equal to single steps that read the earlier rows' stored keys from the
 * cache (a decode after a verify step), with the cache's rows from pos
 * filled with garbage the kernel must not read.
 *
 * Tolerance: max |got - want| / max(|want|, 1e-2) <= 2e-5; attention_rope
 * 2e-4 + 1e-7 pos (its stored keys 1e-4 + 1e-7 pos, tests/kernels/
 * test_rope.c's 1e-4 near position 0): the angle is an f32 product where
 * the reference's is f64, off by up to pos * 2^-24 rad (2e-3 at a 32k
 * context; the kernel reduces it by 2 pi before cos and sin, whose error
 * would otherwise add about as much again: 4.95e-3 on an H100 before that),
 * which the scores carry into the softmax. Measured on lavapipe: 2.2e-3 at
 * 32763. Scores are f32
 * dots of D terms; the online softmax rescales partial sums pass by pass and
 * the combine rescales blocks (the reference normalises once in f64), adding
 * a few f32 roundings per pass to outputs that are convex combinations of
 * values in [-1, 1] (measured on lavapipe: at most 7e-6, for D = 128). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	int64_t hq, hk, D, dv, C;
} att_shape;

/* The descriptor of attention (or attention_partial) over shape s. */
static kv_desc att_desc(ir_op op, const att_shape *s)
{
	kv_desc d = {.op = op, .t_max = 64};
	d.u.attention.hq = s->hq;
	d.u.attention.hk = s->hk;
	d.u.attention.D = s->D;
	d.u.attention.dv = s->dv;
	d.u.attention.C = s->C;
	d.u.attention.scale = 1.0f / 4.0f;
	return d;
}

static bool build(harness *h, const att_shape *s, hkernel *k)
{
	kv_desc d = att_desc(IR_OP_ATTENTION, s);
	return hk_build(h, &d, k);
}

static bool run(harness *h, hkernel *k, const att_shape *s, float *q, float *kc, float *vc,
		float *y, int64_t T, uint32_t pos)
{
	hop ops[4] = {
		{q, (size_t)(T * s->hq * s->D) * 4, false},
		{kc, (size_t)(s->C * s->hk * s->D) * 4, false},
		{vc, (size_t)(s->C * s->hk * s->dv) * 4, false},
		{y, (size_t)(T * s->hq * s->dv) * 4, true},
	};
	return hk_run(h, k, ops, 4, (uint32_t)T, pos);
}

static bool att_case(harness *h, att_shape s, int64_t T, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, &k))
		return false;
	size_t nq = (size_t)(T * s.hq * s.D), ny = (size_t)(T * s.hq * s.dv);
	float *q = alloc_floats(nq), *kc = alloc_floats((size_t)(s.C * s.hk * s.D));
	float *vc = alloc_floats((size_t)(s.C * s.hk * s.dv));
	float *y = alloc_floats(ny), *want = alloc_floats(ny);
	fill_random(q, nq, 1.0f, seed);
	fill_random(kc, (size_t)(s.C * s.hk * s.D), 1.0f, seed);
	fill_random(vc, (size_t)(s.C * s.hk * s.dv), 1.0f, seed);
	bool ok = run(h, &k, &s, q, kc, vc, y, T, pos);
	ref_error err;
	if (ok && !ref_attention(q, kc, vc, want, T, s.hq, s.hk, s.D, s.dv, s.C, pos, 0.25f, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		ok = false;
	}
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u", k.k.signature, (long long)T, pos);
		ok = check_close(what, y, want, ny, 2e-5, 1e-2);
	}
	free(q), free(kc), free(vc), free(y), free(want);
	hk_free(h, &k);
	return ok;
}

static bool invariance(harness *h, att_shape s, int64_t m, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, &k))
		return false;
	int64_t rq = s.hq * s.D, ry = s.hq * s.dv;
	float *q = alloc_floats((size_t)(m * rq)), *kc = alloc_floats((size_t)(s.C * s.hk * s.D));
	float *vc = alloc_floats((size_t)(s.C * s.hk * s.dv));
	float *yb = alloc_floats((size_t)(m * ry)), *y1 = alloc_floats((size_t)(m * ry));
	fill_random(q, (size_t)(m * rq), 1.0f, seed);
	fill_random(kc, (size_t)(s.C * s.hk * s.D), 1.0f, seed);
	fill_random(vc, (size_t)(s.C * s.hk * s.dv), 1.0f, seed);
	bool ok = run(h, &k, &s, q, kc, vc, yb, m, pos);
	for (int64_t t = 0; ok && t < m; t++)
		ok = run(h, &k, &s, q + t * rq, kc, vc, y1 + t * ry, 1, pos + (uint32_t)t);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld at pos %u vs single steps",
		 k.k.signature, (long long)m, pos);
	ok = ok && check_bitwise(what, yb, y1, (size_t)(m * ry));
	free(q), free(kc), free(vc), free(yb), free(y1);
	hk_free(h, &k);
	return ok;
}

/* Split attention: the partial kernel over blocks of `block` keys, then the
 * combine kernel, on the host's buffers; and attention_blocks, both in one. */
typedef struct {
	hkernel part, comb, merged;
	int64_t blocks, t_max;
} split_kernels;

static bool build_split(harness *h, const att_shape *s, int64_t block, int64_t t_max, split_kernels *k)
{
	kv_desc d = att_desc(IR_OP_ATTENTION_PARTIAL, s);
	d.t_max = t_max;
	d.u.attention.block = block;
	k->blocks = (s->C + block - 1) / block;
	kv_desc c = {.op = IR_OP_ATTENTION_COMBINE, .t_max = 64};
	c.u.attention.hq = s->hq;
	c.u.attention.dv = s->dv;
	c.u.attention.blocks = k->blocks;
	kv_desc m = d;
	m.op = IR_OP_ATTENTION_BLOCKS;
	m.u.attention.sync_rows = t_max;
	k->t_max = t_max;
	if (!hk_build(h, &d, &k->part))
		return false;
	if (!hk_build(h, &c, &k->comb)) {
		hk_free(h, &k->part);
		return false;
	}
	if (!hk_build(h, &m, &k->merged)) {
		hk_free(h, &k->part);
		hk_free(h, &k->comb);
		return false;
	}
	return true;
}

/* attention_blocks on the host's buffers; false also when a counter is not
 * zero after the dispatch. */
static bool run_merged(harness *h, split_kernels *k, const att_shape *s, float *q, float *kc, float *vc, float *y,
		       int64_t T, uint32_t pos)
{
	size_t np = (size_t)(T * s->hq * k->blocks * (s->dv + 2)), ns = (size_t)(k->t_max * s->hq);
	float *part = alloc_floats(np);
	uint32_t *sync = calloc(ns, sizeof *sync);
	if (!sync)
		abort();
	hop ops[6] = {
		{q, (size_t)(T * s->hq * s->D) * 4, false},
		{kc, (size_t)(s->C * s->hk * s->D) * 4, false},
		{vc, (size_t)(s->C * s->hk * s->dv) * 4, false},
		{sync, ns * 4, true},
		{y, (size_t)(T * s->hq * s->dv) * 4, true},
		{part, np * 4, true},
	};
	bool ok = hk_run(h, &k->merged, ops, 6, (uint32_t)T, pos);
	for (size_t i = 0; ok && i < ns; i++)
		if (sync[i]) {
			fprintf(stderr, "FAIL: %s T=%lld pos=%u left counter %zu at %u\n", k->merged.k.signature,
				(long long)T, pos, i, sync[i]);
			ok = false;
		}
	free(part);
	free(sync);
	return ok;
}

static bool run_split(harness *h, split_kernels *k, const att_shape *s, float *q, float *kc, float *vc, float *y,
		      int64_t T, uint32_t pos)
{
	size_t np = (size_t)(T * s->hq * k->blocks * (s->dv + 2));
	float *part = alloc_floats(np);
	hop ops[4] = {
		{q, (size_t)(T * s->hq * s->D) * 4, false},
		{kc, (size_t)(s->C * s->hk * s->D) * 4, false},
		{vc, (size_t)(s->C * s->hk * s->dv) * 4, false},
		{part, np * 4, true},
	};
	hop comb[2] = {{part, np * 4, false}, {y, (size_t)(T * s->hq * s->dv) * 4, true}};
	bool ok = hk_run(h, &k->part, ops, 4, (uint32_t)T, pos) && hk_run(h, &k->comb, comb, 2, (uint32_t)T, pos);
	free(part);
	return ok;
}

/* Split attention against the unsplit reference, then its batch invariance
 * (m rows at once against m single rows). */
static bool split_case(harness *h, att_shape s, int64_t block, int64_t t_max, int64_t T, uint32_t pos, double tol,
		       uint32_t *seed)
{
	split_kernels k;
	if (!build_split(h, &s, block, t_max, &k))
		return false;
	int64_t rq = s.hq * s.D, ry = s.hq * s.dv;
	size_t nk = (size_t)(s.C * s.hk * s.D), nv = (size_t)(s.C * s.hk * s.dv);
	float *q = alloc_floats((size_t)(T * rq)), *kc = alloc_floats(nk), *vc = alloc_floats(nv);
	float *y = alloc_floats((size_t)(T * ry)), *want = alloc_floats((size_t)(T * ry));
	float *y1 = alloc_floats((size_t)(T * ry));
	fill_random(q, (size_t)(T * rq), 1.0f, seed);
	fill_random(kc, nk, 1.0f, seed);
	fill_random(vc, nv, 1.0f, seed);
	bool ok = run_split(h, &k, &s, q, kc, vc, y, T, pos);
	ref_error err;
	if (ok && !ref_attention(q, kc, vc, want, T, s.hq, s.hk, s.D, s.dv, s.C, pos, 0.25f, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		ok = false;
	}
	char what[512];
	snprintf(what, sizeof what, "%s + %s T=%lld pos=%u", k.part.k.signature, k.comb.k.signature, (long long)T,
		 pos);
	ok = ok && check_close(what, y, want, (size_t)(T * ry), tol, 1e-2);
	for (int64_t t = 0; ok && t < T; t++)
		ok = run_split(h, &k, &s, q + t * rq, kc, vc, y1 + t * ry, 1, pos + (uint32_t)t);
	snprintf(what, sizeof what, "batch invariance of split attention (block %lld), T=%lld at pos %u",
		 (long long)block, (long long)T, pos);
	ok = ok && check_bitwise(what, y, y1, (size_t)(T * ry));
	/* one dispatch: the two's bits, for m rows and for each alone */
	ok = ok && run_merged(h, &k, &s, q, kc, vc, y1, T, pos);
	snprintf(what, sizeof what, "%s T=%lld pos=%u against partial + combine", k.merged.k.signature, (long long)T,
		 pos);
	ok = ok && check_bitwise(what, y, y1, (size_t)(T * ry));
	for (int64_t t = 0; ok && t < T; t++)
		ok = run_merged(h, &k, &s, q + t * rq, kc, vc, y1 + t * ry, 1, pos + (uint32_t)t);
	snprintf(what, sizeof what, "batch invariance of attention_blocks (block %lld), T=%lld at pos %u",
		 (long long)block, (long long)T, pos);
	ok = ok && check_bitwise(what, y, y1, (size_t)(T * ry));
	free(q), free(kc), free(vc), free(y), free(want), free(y1);
	hk_free(h, &k.part);
	hk_free(h, &k.comb);
	hk_free(h, &k.merged);
	return ok;
}

/* attention_rope over shape s: the kernel, its buffers and the reference's
 * normalised, rotated queries and keys. */
typedef struct {
	hkernel k;
	att_shape s;
	int64_t block, blocks, T;
	uint32_t pos;
	float *q, *kc, *vc, *kn, *qw, *kw; /* inputs (kc's rows from pos: garbage) */
	float *qr, *kr;                    /* the reference's q and k_new, normalised and rotated */
} rope_att;

static const ref_rope_params rope_att_params = {.rot_dim = 0, .base = 1000000.0f};

static bool rope_att_open(harness *h, rope_att *r, att_shape s, int64_t block, int64_t T, uint32_t pos, uint32_t *seed)
{
	*r = (rope_att){.s = s, .block = block, .blocks = (s.C + block - 1) / block, .T = T, .pos = pos};
	kv_desc d = att_desc(IR_OP_ATTENTION_ROPE, &s);
	d.t_max = 8;
	d.u.attention.block = block;
	d.u.attention.sync_rows = 8;
	d.u.attention.rope = rope_att_params;
	d.u.attention.rope.rot_dim = s.D;
	d.u.attention.norm_eps = 1e-6f;
	d.u.attention.norm_offset = 1;
	d.out_at_pos = 4; /* k_out: the cache's rows from pos */
	if (!hk_build(h, &d, &r->k))
		return false;
	size_t nq = (size_t)(T * s.hq * s.D), nk = (size_t)(s.C * s.hk * s.D), nn = (size_t)(T * s.hk * s.D);
	r->q = alloc_floats(nq), r->kc = alloc_floats(nk), r->vc = alloc_floats((size_t)(s.C * s.hk * s.dv));
	r->kn = alloc_floats(nn), r->qw = alloc_floats((size_t)s.D), r->kw = alloc_floats((size_t)s.D);
	r->qr = alloc_floats(nq), r->kr = alloc_floats(nn);
	fill_random(r->q, nq, 3.0f, seed);
	fill_random(r->kc, nk, 1.0f, seed);
	for (size_t i = (size_t)pos * (size_t)(s.hk * s.D); i < nk; i++)
		r->kc[i] = 1e6f;
	fill_random(r->vc, (size_t)(s.C * s.hk * s.dv), 1.0f, seed);
	fill_random(r->kn, nn, 3.0f, seed);
	fill_random(r->qw, (size_t)s.D, 0.5f, seed);
	fill_random(r->kw, (size_t)s.D, 0.5f, seed);
	ref_rope_params p = d.u.attention.rope;
	float *tmp = alloc_floats(nq > nn ? nq : nn);
	ref_rms_norm(r->q, r->qw, tmp, T * s.hq, s.D, 0, 1e-6f, 1);
	ref_rope(&p, tmp, r->qr, T, s.hq, s.D, pos);
	ref_rms_norm(r->kn, r->kw, tmp, T * s.hk, s.D, 0, 1e-6f, 1);
	ref_rope(&p, tmp, r->kr, T, s.hk, s.D, pos);
	free(tmp);
	return true;
}

static void rope_att_close(harness *h, rope_att *r)
{
	free(r->q), free(r->kc), free(r->vc), free(r->kn), free(r->qw), free(r->kw), free(r->qr), free(r->kr);
	hk_free(h, &r->k);
}

/* T rows of queries q and keys kn from pos on a cache kc (garbage from pos)
 * into y and k_out (a cache's rows, whose rows from pos it writes); false
 * also when a counter is not zero after the dispatch. */
static bool rope_att_run(harness *h, rope_att *r, const float *q, float *kc, const float *kn, float *y, float *k_out,
			 int64_t T, uint32_t pos)
{
	const att_shape *s = &r->s;
	size_t np = (size_t)(T * s->hq * r->blocks * (s->dv + 2)), ns = (size_t)(8 * s->hq);
	float *part = alloc_floats(np);
	uint32_t *sync = calloc(ns, sizeof *sync);
	if (!sync)
		abort();
	hop ops[10] = {
		{(void *)q, (size_t)(T * s->hq * s->D) * 4, false},
		{kc, (size_t)(s->C * s->hk * s->D) * 4, false},
		{r->vc, (size_t)(s->C * s->hk * s->dv) * 4, false},
		{sync, ns * 4, true},
		{(void *)kn, (size_t)(T * s->hk * s->D) * 4, false},
		{r->qw, (size_t)s->D * 4, false},
		{r->kw, (size_t)s->D * 4, false},
		{y, (size_t)(T * s->hq * s->dv) * 4, true},
		{part, np * 4, true},
		{k_out, (size_t)(s->C * s->hk * s->D) * 4, true},
	};
	bool ok = hk_run(h, &r->k, ops, 10, (uint32_t)T, pos);
	for (size_t i = 0; ok && i < ns; i++)
		if (sync[i]) {
			fprintf(stderr, "FAIL: %s left counter %zu at %u\n", r->k.k.signature, i, sync[i]);
			ok = false;
		}
	free(part);
	free(sync);
	return ok;
}

/* attention_rope against the reference, then its rows against single steps
 * that read the earlier rows' keys from the cache. */
static bool rope_case(harness *h, att_shape s, int64_t block, int64_t T, uint32_t pos, uint32_t *seed)
{
	rope_att r;
	if (!rope_att_open(h, &r, s, block, T, pos, seed))
		return false;
	int64_t rq = s.hq * s.D, ry = s.hq * s.dv, rk = s.hk * s.D;
	size_t nk = (size_t)(s.C * rk);
	float *y = alloc_floats((size_t)(T * ry)), *want = alloc_floats((size_t)(T * ry));
	float *k_out = alloc_floats(nk), *cache = alloc_floats(nk), *y1 = alloc_floats((size_t)(T * ry));
	memcpy(k_out, r.kc, nk * 4);
	bool ok = rope_att_run(h, &r, r.q, r.kc, r.kn, y, k_out, T, pos);
	/* the reference reads the rotated keys from the cache */
	memcpy(cache, r.kc, nk * 4);
	memcpy(cache + pos * rk, r.kr, (size_t)(T * rk) * 4);
	ref_error err;
	if (ok && !ref_attention(r.qr, cache, r.vc, want, T, s.hq, s.hk, s.D, s.dv, s.C, pos, 0.25f, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		ok = false;
	}
	char what[512];
	snprintf(what, sizeof what, "%s T=%lld pos=%u", r.k.k.signature, (long long)T, pos);
	ok = ok && check_close(what, y, want, (size_t)(T * ry), 2e-4 + 1e-7 * pos, 1e-2);
	snprintf(what, sizeof what, "%s T=%lld pos=%u: stored keys", r.k.k.signature, (long long)T, pos);
	ok = ok && check_close(what, k_out + pos * rk, r.kr, (size_t)(T * rk), 1e-4 + 1e-7 * pos, 1.0);
	ok = ok && check_bitwise("attention_rope: the cache below pos untouched", k_out, r.kc, (size_t)(pos * rk));
	/* single steps: row t's earlier rows' keys come from the cache, as
	 * the batch stored them */
	memcpy(cache, r.kc, nk * 4);
	for (int64_t t = 0; ok && t < T; t++) {
		if (t > 0)
			memcpy(cache + (pos + t - 1) * rk, k_out + (pos + t - 1) * rk, (size_t)rk * 4);
		float *k1 = alloc_floats(nk);
		memcpy(k1, cache, nk * 4);
		ok = rope_att_run(h, &r, r.q + t * rq, cache, r.kn + t * rk, y1 + t * ry, k1, 1, pos + (uint32_t)t) &&
		     check_bitwise("attention_rope: a single step's stored key against the batch's",
				   k1 + (pos + t) * rk, k_out + (pos + t) * rk, (size_t)rk);
		free(k1);
	}
	snprintf(what, sizeof what, "batch invariance of attention_rope (block %lld), T=%lld at pos %u", (long long)block,
		 (long long)T, pos);
	ok = ok && check_bitwise(what, y, y1, (size_t)(T * ry));
	free(y), free(want), free(k_out), free(cache), free(y1);
	rope_att_close(h, &r);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 4242;
	bool ok = true;
	ok &= att_case(h, (att_shape){4, 2, 16, 16, 256}, 37, 0, &seed);    /* prefill, GQA */
	ok &= att_case(h, (att_shape){4, 2, 16, 16, 256}, 1, 200, &seed);   /* decode */
	ok &= att_case(h, (att_shape){3, 3, 7, 5, 130}, 8, 121, &seed);     /* odd dims, MHA */
	ok &= att_case(h, (att_shape){8, 1, 40, 129, 70}, 5, 64, &seed);   /* MQA, dv > lanes */
	ok &= att_case(h, (att_shape){2, 1, 1, 1, 9}, 9, 0, &seed);
	ok &= invariance(h, (att_shape){4, 2, 16, 16, 256}, 6, 130, &seed);
	ok &= att_case(h, (att_shape){8, 2, 128, 128, 512}, 3, 400, &seed); /* Qwen3's head, vec4 */
	/* split: decode across blocks, a verify step, a prefill chunk whose
	 * early rows leave later blocks empty, odd dims */
	ok &= split_case(h, (att_shape){8, 2, 128, 128, 1024}, 128, 8, 1, 900, 2e-5, &seed);
	ok &= split_case(h, (att_shape){4, 2, 16, 16, 512}, 128, 8, 5, 300, 2e-5, &seed);
	ok &= split_case(h, (att_shape){4, 2, 16, 16, 512}, 128, 64, 40, 100, 2e-5, &seed);
	ok &= split_case(h, (att_shape){3, 3, 7, 5, 300}, 64, 64, 8, 250, 2e-5, &seed);
	/* prompt steps on Qwen3's head (attention_rows): from position 0 (the
	 * tiles' later blocks empty), a ragged tile mid-cache, one row */
	ok &= split_case(h, (att_shape){8, 2, 128, 128, 1024}, 64, 64, 40, 0, 2e-5, &seed);
	ok &= split_case(h, (att_shape){8, 2, 128, 128, 1024}, 64, 64, 37, 500, 2e-5, &seed);
	ok &= split_case(h, (att_shape){8, 2, 128, 128, 1024}, 64, 64, 1, 900, 2e-5, &seed);
	ok &= split_case(h, (att_shape){4, 2, 32, 32, 512}, 64, 64, 21, 30, 2e-5, &seed); /* MHA-sized GQA, D 32 */
	/* a 32k context as passes/split_attention.c splits it (63 blocks of 544
	 * keys): decode at its last rows, and a verify step of 5 */
	ok &= split_case(h, (att_shape){8, 2, 128, 128, 33792}, 544, 8, 1, 33791, 2e-5, &seed);
	ok &= split_case(h, (att_shape){8, 2, 128, 128, 33792}, 544, 8, 5, 32763, 2e-5, &seed);
	/* attention_rope: decode and verify steps on Qwen3's head, a step
	 * whose keys straddle two blocks, odd dims (scalar loads), and at a 32k
	 * context's last rows */
	ok &= rope_case(h, (att_shape){8, 2, 128, 128, 1024}, 128, 1, 900, &seed);
	ok &= rope_case(h, (att_shape){8, 2, 128, 128, 1024}, 128, 5, 300, &seed);
	ok &= rope_case(h, (att_shape){4, 2, 16, 16, 512}, 64, 5, 126, &seed);
	ok &= rope_case(h, (att_shape){3, 3, 6, 5, 300}, 64, 8, 0, &seed);
	ok &= rope_case(h, (att_shape){8, 2, 128, 128, 33792}, 544, 5, 32763, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
