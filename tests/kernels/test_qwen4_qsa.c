/* qsa_select against ref_qsa_select: prefill from position 0 (early tokens
 * have fewer complete blocks than top_blocks), decode deep in the cache, odd
 * head dims, block sizes and cache lengths, partial rope; and batch
 * invariance (T tokens in one dispatch equal T one-token dispatches,
 * bitwise). And ties: with q zero every score is 0 and the TOP blocks of
 * lowest index are kept (the selection's bytes all equal at every step).
 * Every case also as qsa_select_blocks (passes/split_attention.c's form: a
 * token's blocks over several workgroups, the last picking; the 4096- and
 * 33792-row caches take 4 and 33 of them), its counters zero after each
 * dispatch.
 *
 * The mask is 0/1 and must match exactly. The kernel scores blocks in f32
 * (the reference in f64), so two blocks whose scores differ by less than the
 * f32 error (~1e-6 relative) could swap ranks; with random inputs of order 1
 * the score gaps are far wider, and the test fails loudly, naming the
 * element, if that ever happens at these fixed seeds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	int64_t h, D, C;
	ref_qsa_params p;
	bool tied;   /* q zero: every block scores 0 */
	bool blocks; /* qsa_select_blocks */
} qsa_shape;

#define T_MAX 64

static bool build(harness *hn, const qsa_shape *s, hkernel *k)
{
	kv_desc d = {.op = s->blocks ? IR_OP_QSA_SELECT_BLOCKS : IR_OP_QSA_SELECT, .t_max = T_MAX, .wtype = HALO_F32};
	d.u.qsa.sync_rows = s->blocks ? T_MAX : 0;
	d.u.qsa.h = s->h;
	d.u.qsa.D = s->D;
	d.u.qsa.C = s->C;
	d.u.qsa.block = s->p.block;
	d.u.qsa.top = s->p.top_blocks;
	d.u.qsa.rot_dim = s->p.rot_dim;
	d.u.qsa.base = s->p.base;
	d.u.qsa.eps = s->p.eps;
	return hk_build(hn, &d, k);
}

static bool run(harness *hn, hkernel *k, const qsa_shape *s, float *q, float *keys, float *kw, float *mask,
		int64_t T, uint32_t pos)
{
	uint32_t sync[T_MAX] = {0};
	hop plain[4] = {
		{q, (size_t)(T * s->h * s->D) * 4, false},
		{keys, (size_t)(s->C * s->D) * 4, false},
		{kw, (size_t)s->D * 4, false},
		{mask, (size_t)(T * s->C) * 4, true},
	};
	hop split[5] = {plain[0], plain[1], plain[2], {sync, sizeof sync, true}, plain[3]};
	bool ok = s->blocks ? hk_run(hn, k, split, 5, (uint32_t)T, pos) : hk_run(hn, k, plain, 4, (uint32_t)T, pos);
	for (int i = 0; ok && i < T_MAX; i++)
		if (sync[i]) {
			fprintf(stderr, "FAIL: %s T=%lld pos=%u left counter %d at %u\n", k->k.signature, (long long)T, pos,
				i, sync[i]);
			ok = false;
		}
	return ok;
}

typedef struct {
	float *q, *keys, *kw, *mask, *want;
} qsa_data;

static qsa_data data_new(const qsa_shape *s, int64_t T, uint32_t *seed)
{
	size_t nq = (size_t)(T * s->h * s->D), nk = (size_t)(s->C * s->D), nm = (size_t)(T * s->C);
	qsa_data a = {alloc_floats(nq), alloc_floats(nk), alloc_floats((size_t)s->D), alloc_floats(nm),
		      alloc_floats(nm)};
	fill_random(a.q, nq, 1.0f, seed);
	if (s->tied)
		memset(a.q, 0, nq * sizeof *a.q);
	fill_random(a.keys, nk, 1.0f, seed);
	fill_random(a.kw, (size_t)s->D, 0.5f, seed);
	return a;
}

static void data_free(qsa_data *a)
{
	free(a->q), free(a->keys), free(a->kw), free(a->mask), free(a->want);
}

static bool qsa_case(harness *hn, qsa_shape s, int64_t T, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(hn, &s, &k))
		return false;
	qsa_data a = data_new(&s, T, seed);
	bool ok = run(hn, &k, &s, a.q, a.keys, a.kw, a.mask, T, pos);
	ref_error err;
	if (ok && !ref_qsa_select(&s.p, a.q, a.keys, a.kw, a.want, T, s.h, s.D, s.C, pos, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		ok = false;
	}
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld pos=%u", k.k.signature, (long long)T, pos);
		ok = check_bitwise(what, a.mask, a.want, (size_t)(T * s.C));
	}
	data_free(&a);
	hk_free(hn, &k);
	return ok;
}

static bool invariance(harness *hn, qsa_shape s, int64_t m, uint32_t pos, uint32_t *seed)
{
	hkernel k;
	if (!build(hn, &s, &k))
		return false;
	qsa_data a = data_new(&s, m, seed);
	int64_t rq = s.h * s.D;
	bool ok = run(hn, &k, &s, a.q, a.keys, a.kw, a.mask, m, pos);
	for (int64_t t = 0; ok && t < m; t++)
		ok = run(hn, &k, &s, a.q + t * rq, a.keys, a.kw, a.want + t * s.C, 1, pos + (uint32_t)t);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld at pos %u vs single steps", k.k.signature,
		 (long long)m, pos);
	ok = ok && check_bitwise(what, a.mask, a.want, (size_t)(m * s.C));
	data_free(&a);
	hk_free(hn, &k);
	return ok;
}

int main(void)
{
	harness *hn = harness_open();
	uint32_t seed = 5150;
	bool ok = true;
	/* h, D, C, {block, top_blocks, rot_dim, base, eps}, tied; T, pos */
	static const struct {
		qsa_shape s;
		int64_t T;
		uint32_t pos;
	} cases[] = {
		{{2, 16, 64, {4, 3, 16, 10000.0f, 1e-6f}, false, false}, 37, 0},   /* prefill */
		{{2, 16, 256, {4, 5, 8, 10000.0f, 1e-6f}, false, false}, 1, 200},  /* decode */
		{{3, 10, 47, {5, 2, 6, 500.0f, 1e-5f}, false, false}, 7, 30},      /* odd */
		{{4, 32, 300, {16, 4, 32, 1e6f, 1e-6f}, false, false}, 40, 250},   /* long */
		/* a 32k context of blocks of 4: 8448 blocks (scores and flags in
		 * shared memory were past its 32 KiB before they moved to the mask
		 * row and bits), two decode tokens, each lane owning two words of
		 * flags */
		{{4, 64, 33792, {4, 64, 32, 1e7f, 1e-6f}, false, false}, 2, 33700},
		{{2, 16, 4096, {4, 40, 16, 10000.0f, 1e-6f}, true, false}, 3, 3000}, /* ties */
	};
	for (int blocks = 0; blocks < 2; blocks++) {
		for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
			qsa_shape s = cases[i].s;
			s.blocks = blocks;
			ok &= qsa_case(hn, s, cases[i].T, cases[i].pos, &seed);
		}
		ok &= invariance(hn, (qsa_shape){2, 16, 128, {4, 3, 16, 10000.0f, 1e-6f}, false, blocks}, 9, 60, &seed);
	}
	int rc = harness_close(hn);
	return ok && rc == 0 ? 0 : 1;
}
