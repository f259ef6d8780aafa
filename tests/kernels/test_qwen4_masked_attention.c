/* masked_attention against ref_masked_attention: prefill (pos 0) and decode
 * (pos > 0), GQA, odd head dims, masks that are random, block-sparse like
 * QSA's (whole 64-key chunks off, including the first) and a single key; mask
 * entries past pos+t are set too and must be ignored. Batch invariance: one
 * dispatch of m tokens equals m single-token dispatches bitwise.
 * masked_attention_blocks (passes/split_attention.c's form: key blocks in
 * workgroups of their own, the row's last to finish merging) likewise, with
 * blocks that have no key the mask keeps, and its sync counters zero after
 * every dispatch.
 *
 * Tolerance: max |got - want| / max(|want|, 1e-2) <= 2e-5, as for attention:
 * scores are f32 dots of D <= 40 terms; the online softmax rescales partial
 * sums chunk by chunk (the reference normalises once in f64), adding a few
 * f32 roundings per chunk to outputs that are convex combinations of values
 * in [-1, 1]. Masked keys contribute exactly nothing in both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	int64_t hq, hk, D, dv, C;
	int64_t block; /* masked_attention_blocks' keys a block; 0: masked_attention */
} matt_shape;

#define T_MAX 64

/* How a test fills the mask: each row always keeps its own key pos+t. */
typedef enum { MASK_RANDOM, MASK_BLOCKS, MASK_SINGLE } mask_kind;

static bool build(harness *h, const matt_shape *s, hkernel *k)
{
	kv_desc d = {.op = s->block ? IR_OP_MASKED_ATTENTION_BLOCKS : IR_OP_MASKED_ATTENTION, .t_max = T_MAX,
		     .wtype = HALO_F32};
	d.u.attention.block = s->block;
	d.u.attention.sync_rows = s->block ? T_MAX : 0;
	d.u.attention.hq = s->hq;
	d.u.attention.hk = s->hk;
	d.u.attention.D = s->D;
	d.u.attention.dv = s->dv;
	d.u.attention.C = s->C;
	d.u.attention.scale = 0.25f;
	return hk_build(h, &d, k);
}

static uint32_t next_u32(uint32_t *seed)
{
	*seed = *seed * 1664525u + 1013904223u;
	return *seed >> 8;
}

static void fill_mask(float *mask, const matt_shape *s, int64_t T, uint32_t pos, mask_kind kind, uint32_t *seed)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t j = 0; j < s->C; j++) {
			float on;
			switch (kind) {
			case MASK_RANDOM: on = (float)(next_u32(seed) & 1u); break;
			case MASK_BLOCKS: on = (j / 64 + t) % 3 == 1 ? 1.0f : 0.0f; break;
			default: on = 0.0f; break;
			}
			mask[t * s->C + j] = on;
		}
	for (int64_t t = 0; t < T; t++)
		mask[t * s->C + pos + t] = 1.0f;
}

/* One dispatch; the blocks form's sync counters start at zero and must be
 * left so. */
static bool run(harness *h, hkernel *k, const matt_shape *s, float *q, float *kc, float *vc, float *mask,
		float *y, int64_t T, uint32_t pos)
{
	int64_t blocks = s->block ? (s->C + s->block - 1) / s->block : 0;
	size_t np = (size_t)(T * s->hq * blocks * (s->dv + 2)), ns = (size_t)(T_MAX * s->hq);
	float *part = alloc_floats(np + 1);
	uint32_t *sync = calloc(ns, sizeof *sync);
	if (!sync)
		abort();
	hop plain[5] = {
		{q, (size_t)(T * s->hq * s->D) * 4, false},
		{kc, (size_t)(s->C * s->hk * s->D) * 4, false},
		{vc, (size_t)(s->C * s->hk * s->dv) * 4, false},
		{mask, (size_t)(T * s->C) * 4, false},
		{y, (size_t)(T * s->hq * s->dv) * 4, true},
	};
	hop split[7] = {plain[0], plain[1], plain[2], {sync, ns * 4, true}, plain[3], plain[4], {part, np * 4, true}};
	bool ok = s->block ? hk_run(h, k, split, 7, (uint32_t)T, pos) : hk_run(h, k, plain, 5, (uint32_t)T, pos);
	for (size_t i = 0; ok && s->block && i < ns; i++)
		if (sync[i]) {
			fprintf(stderr, "FAIL: %s T=%lld pos=%u left counter %zu at %u\n", k->k.signature, (long long)T,
				pos, i, sync[i]);
			ok = false;
		}
	free(part);
	free(sync);
	return ok;
}

typedef struct {
	float *q, *kc, *vc, *mask, *y, *want;
} matt_data;

static matt_data data_new(const matt_shape *s, int64_t T, uint32_t pos, mask_kind kind, uint32_t *seed)
{
	size_t nq = (size_t)(T * s->hq * s->D), ny = (size_t)(T * s->hq * s->dv);
	size_t nk = (size_t)(s->C * s->hk * s->D), nv = (size_t)(s->C * s->hk * s->dv);
	matt_data a = {alloc_floats(nq), alloc_floats(nk), alloc_floats(nv), alloc_floats((size_t)(T * s->C)),
		       alloc_floats(ny), alloc_floats(ny)};
	fill_random(a.q, nq, 1.0f, seed);
	fill_random(a.kc, nk, 1.0f, seed);
	fill_random(a.vc, nv, 1.0f, seed);
	fill_mask(a.mask, s, T, pos, kind, seed);
	return a;
}

static void data_free(matt_data *a)
{
	free(a->q), free(a->kc), free(a->vc), free(a->mask), free(a->y), free(a->want);
}

static bool matt_case(harness *h, matt_shape s, int64_t T, uint32_t pos, mask_kind kind, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, &k))
		return false;
	matt_data a = data_new(&s, T, pos, kind, seed);
	bool ok = run(h, &k, &s, a.q, a.kc, a.vc, a.mask, a.y, T, pos);
	ref_error err;
	if (ok && !ref_masked_attention(a.q, a.kc, a.vc, a.mask, a.want, T, s.hq, s.hk, s.D, s.dv, s.C, pos,
					0.25f, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		ok = false;
	}
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u mask=%d", k.k.signature, (long long)T, pos, (int)kind);
		ok = check_close(what, a.y, a.want, (size_t)(T * s.hq * s.dv), 2e-5, 1e-2);
	}
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

static bool invariance(harness *h, matt_shape s, int64_t m, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, &k))
		return false;
	matt_data a = data_new(&s, m, pos, MASK_RANDOM, seed);
	int64_t rq = s.hq * s.D, ry = s.hq * s.dv;
	bool ok = run(h, &k, &s, a.q, a.kc, a.vc, a.mask, a.y, m, pos);
	for (int64_t t = 0; ok && t < m; t++)
		ok = run(h, &k, &s, a.q + t * rq, a.kc, a.vc, a.mask + t * s.C, a.want + t * ry, 1,
			 pos + (uint32_t)t);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld at pos %u vs single steps", k.k.signature,
		 (long long)m, pos);
	ok = ok && check_bitwise(what, a.y, a.want, (size_t)(m * ry));
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 1618;
	bool ok = true;
	for (int64_t block = 0; block <= 64; block += 32) {
		ok &= matt_case(h, (matt_shape){4, 2, 16, 16, 256, block}, 37, 0, MASK_RANDOM, &seed);  /* prefill, GQA */
		ok &= matt_case(h, (matt_shape){4, 2, 16, 16, 256, block}, 1, 200, MASK_BLOCKS, &seed); /* decode */
		/* chunks off: some blocks keep no key */
		ok &= matt_case(h, (matt_shape){4, 2, 16, 16, 256, block}, 50, 130, MASK_BLOCKS, &seed);
		ok &= matt_case(h, (matt_shape){3, 3, 7, 5, 130, block}, 8, 121, MASK_SINGLE, &seed);  /* odd dims, one key */
		ok &= matt_case(h, (matt_shape){8, 1, 40, 129, 70, block}, 5, 64, MASK_RANDOM, &seed); /* MQA, dv > lanes */
		ok &= invariance(h, (matt_shape){4, 2, 16, 16, 256, block}, 6, 130, &seed);
	}
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
