/* attention against ref_attention: prefill (pos 0) and decode (pos > 0) over
 * the cache, GQA, odd head dims, and batch invariance: one dispatch of m
 * tokens equals m single-token dispatches bitwise.
 *
 * Tolerance: max |got - want| / max(|want|, 1e-2) <= 2e-5. Scores are f32 dots
 * of D <= 40 terms; the online softmax rescales partial sums chunk by chunk
 * (the reference normalises once in f64), adding a few f32 roundings per chunk
 * to outputs that are convex combinations of values in [-1, 1]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	int64_t hq, hk, D, dv, C;
} att_shape;

static bool build(harness *h, const att_shape *s, hkernel *k)
{
	kv_desc d = {.op = IR_OP_ATTENTION, .t_max = 64};
	d.u.attention.hq = s->hq;
	d.u.attention.hk = s->hk;
	d.u.attention.D = s->D;
	d.u.attention.dv = s->dv;
	d.u.attention.C = s->C;
	d.u.attention.scale = 1.0f / 4.0f;
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
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
