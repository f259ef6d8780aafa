/* gated_delta_rule against the reference: GQA (hv a multiple of hk), odd
 * dims, dv wider than a workgroup, decode (T = 1) and prefill lengths; and
 * batch invariance: T tokens in one dispatch equal T one-token dispatches
 * that carry the state, bitwise (o and the final state). The kernel with
 * steps (the state after each token, a verify step's state slots; the
 * recurrent kernel at any t_max): o, S' and steps against the reference,
 * slot T-1 bitwise S', and o and every slot bitwise what T one-token
 * dispatches of the decode kernel give and carry.
 *
 * Inputs as in a Gated DeltaNet layer: q and k l2-normalised, g < 0 (decay
 * in (0.3, 1)), beta in (0, 1), v and the initial state of order 1. Then each
 * step is a contraction (|k| = 1, beta < 1), so rounding errors do not grow
 * with T.
 * Tolerance: max |got - want| / max(|want|, 1e-2) <= 2e-5, for o and S'.
 * Every value comes from f32 dots of dk <= 40 terms taken in order (f64 in
 * the reference), GPU exp adds a few ulps to the decay, and each step mixes
 * the previous step's state back in; outputs below 1e-2 (values are of
 * order 1) are judged absolutely. Measured on lavapipe: o 2.2e-6, S' 4.5e-6,
 * steps 1.2e-5 (1.2e-7 absolute on a state below the floor, among 8x as many
 * states as S' has). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	int64_t hk, hv, dk, dv;
	uint32_t local; /* 0: the default */
} gdr_shape;

typedef struct {
	float *q, *k, *v, *g, *beta, *S, *o, *So, *want_o, *want_S;
} gdr_data;

static bool build(harness *h, const gdr_shape *s, int64_t t_max, bool steps, hkernel *k)
{
	kv_desc d = {.op = IR_OP_GATED_DELTA_RULE, .t_max = t_max, .steps = steps};
	d.u.gdr.hk = s->hk;
	d.u.gdr.hv = s->hv;
	d.u.gdr.dk = s->dk;
	d.u.gdr.dv = s->dv;
	d.u.gdr.scale = 1.0f / sqrtf((float)s->dk);
	d.tiles.local = s->local;
	return hk_build(h, &d, k);
}

static gdr_data data_new(const gdr_shape *s, int64_t T, uint32_t *seed)
{
	size_t nq = (size_t)(T * s->hk * s->dk), nv = (size_t)(T * s->hv * s->dv);
	size_t ng = (size_t)(T * s->hv), nS = (size_t)(s->hv * s->dk * s->dv);
	gdr_data a = {alloc_floats(nq), alloc_floats(nq), alloc_floats(nv), alloc_floats(ng),
		      alloc_floats(ng), alloc_floats(nS), alloc_floats(nv), alloc_floats(nS),
		      alloc_floats(nv), alloc_floats(nS)};
	fill_random(a.q, nq, 1.0f, seed);
	fill_random(a.k, nq, 1.0f, seed);
	ref_l2_norm(a.q, a.q, T * s->hk, s->dk, 1e-6f);
	ref_l2_norm(a.k, a.k, T * s->hk, s->dk, 1e-6f);
	fill_random(a.v, nv, 1.0f, seed);
	fill_random(a.g, ng, 1.0f, seed);
	fill_random(a.beta, ng, 3.0f, seed);
	for (size_t i = 0; i < ng; i++) {
		a.g[i] = -1.2f * fabsf(a.g[i]);   /* decay e^g in (0.3, 1) */
		a.beta[i] = ref_sigmoid_f(a.beta[i]);
	}
	fill_random(a.S, nS, 1.0f, seed);
	return a;
}

static void data_free(gdr_data *a)
{
	free(a->q), free(a->k), free(a->v), free(a->g), free(a->beta), free(a->S), free(a->o);
	free(a->So), free(a->want_o), free(a->want_S);
}

/* Token t0.. of a, T tokens, from state S into o (rows t0..) and So, and
 * into steps (the kernel's third output) when not NULL. */
static bool run(harness *h, hkernel *k, const gdr_shape *s, const gdr_data *a, int64_t t0,
		int64_t T, float *S, float *o, float *So, float *steps)
{
	int64_t rq = s->hk * s->dk, rv = s->hv * s->dv;
	size_t nS = (size_t)(s->hv * s->dk * s->dv);
	hop ops[9] = {
		{a->q + t0 * rq, (size_t)(T * rq) * 4, false},
		{a->k + t0 * rq, (size_t)(T * rq) * 4, false},
		{a->v + t0 * rv, (size_t)(T * rv) * 4, false},
		{a->g + t0 * s->hv, (size_t)(T * s->hv) * 4, false},
		{a->beta + t0 * s->hv, (size_t)(T * s->hv) * 4, false},
		{S, nS * 4, false},
		{o + t0 * rv, (size_t)(T * rv) * 4, true},
		{So, nS * 4, true},
		{steps, (size_t)T * nS * 4, true},
	};
	return hk_run(h, k, ops, steps ? 9 : 8, (uint32_t)T, 0);
}

static bool gdr_case(harness *h, gdr_shape s, int64_t T, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, T, false, &k))
		return false;
	gdr_data a = data_new(&s, T, seed);
	float scale = 1.0f / sqrtf((float)s.dk);
	bool ok = run(h, &k, &s, &a, 0, T, a.S, a.o, a.So, NULL);
	if (ok) {
		ref_gated_delta_rule(a.q, a.k, a.v, a.g, a.beta, a.S, a.want_o, a.want_S, NULL, T, s.hk, s.hv,
				     s.dk, s.dv, scale);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld o", k.k.signature, (long long)T);
		ok = check_close(what, a.o, a.want_o, (size_t)(T * s.hv * s.dv), 2e-5, 1e-2);
		snprintf(what, sizeof what, "%s T=%lld S'", k.k.signature, (long long)T);
		ok &= check_close(what, a.So, a.want_S, (size_t)(s.hv * s.dk * s.dv), 2e-5, 1e-2);
	}
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

static bool invariance(harness *h, gdr_shape s, int64_t m, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, m, false, &k))
		return false;
	gdr_data a = data_new(&s, m, seed);
	size_t nS = (size_t)(s.hv * s.dk * s.dv);
	float *st = alloc_floats(nS);
	bool ok = run(h, &k, &s, &a, 0, m, a.S, a.o, a.So, NULL);
	memcpy(st, a.S, nS * 4);
	for (int64_t t = 0; ok && t < m; t++) {
		ok = run(h, &k, &s, &a, t, 1, st, a.want_o, a.want_S, NULL);
		memcpy(st, a.want_S, nS * 4);
	}
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single steps", k.k.signature,
		 (long long)m);
	ok = ok && check_bitwise(what, a.o, a.want_o, (size_t)(m * s.hv * s.dv));
	ok = ok && check_bitwise("  final state", a.So, st, nS);
	free(st);
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

/* T one-token dispatches of the decode kernel (t_max 1) from a.S: o into o,
 * the state after token t into slot t of steps. */
static bool decode_steps(harness *h, const gdr_shape *s, const gdr_data *a, int64_t T, float *o, float *steps)
{
	hkernel k;
	if (!build(h, s, 1, false, &k))
		return false;
	size_t nS = (size_t)(s->hv * s->dk * s->dv);
	bool ok = true;
	for (int64_t t = 0; ok && t < T; t++)
		ok = run(h, &k, s, a, t, 1, t ? steps + (size_t)(t - 1) * nS : a->S, o, steps + (size_t)t * nS, NULL);
	hk_free(h, &k);
	return ok;
}

/* The kernel with steps at t_max = T: against the reference (o, S', steps),
 * slot T-1 bitwise S', and o and steps bitwise T decode dispatches. */
static bool steps_case(harness *h, gdr_shape s, int64_t T, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, T, true, &k))
		return false;
	gdr_data a = data_new(&s, T, seed);
	size_t nS = (size_t)(s.hv * s.dk * s.dv), no = (size_t)(T * s.hv * s.dv);
	float *steps = alloc_floats((size_t)T * nS), *want = alloc_floats((size_t)T * nS);
	bool ok = run(h, &k, &s, &a, 0, T, a.S, a.o, a.So, steps);
	char what[512];
	if (ok) {
		ref_gated_delta_rule(a.q, a.k, a.v, a.g, a.beta, a.S, a.want_o, a.want_S, want, T, s.hk, s.hv, s.dk,
				     s.dv, 1.0f / sqrtf((float)s.dk));
		snprintf(what, sizeof what, "%s T=%lld o", k.k.signature, (long long)T);
		ok = check_close(what, a.o, a.want_o, no, 2e-5, 1e-2);
		ok &= check_close("  S'", a.So, a.want_S, nS, 2e-5, 1e-2);
		ok &= check_close("  steps", steps, want, (size_t)T * nS, 2e-5, 1e-2);
		ok &= check_bitwise("  steps slot T-1 vs S'", steps + (size_t)(T - 1) * nS, a.So, nS);
	}
	ok = ok && decode_steps(h, &s, &a, T, a.want_o, want);
	ok = ok && check_bitwise("  o vs decode dispatches", a.o, a.want_o, no);
	ok = ok && check_bitwise("  steps vs the states decode carries", steps, want, (size_t)T * nS);
	free(steps), free(want);
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 2718;
	bool ok = true;
	ok &= gdr_case(h, (gdr_shape){2, 4, 16, 16, 0}, 1, &seed);   /* decode, GQA */
	ok &= gdr_case(h, (gdr_shape){2, 4, 16, 16, 0}, 8, &seed);
	ok &= gdr_case(h, (gdr_shape){1, 3, 7, 5, 0}, 37, &seed);    /* odd dims, prefill */
	ok &= gdr_case(h, (gdr_shape){2, 2, 40, 130, 32}, 3, &seed); /* dv over 5 workgroups */
	ok &= gdr_case(h, (gdr_shape){1, 1, 1, 1, 0}, 5, &seed);
	ok &= invariance(h, (gdr_shape){2, 4, 16, 24, 16}, 6, &seed);
	ok &= steps_case(h, (gdr_shape){2, 4, 16, 16, 0}, 1, &seed);    /* one token, GQA */
	ok &= steps_case(h, (gdr_shape){2, 6, 16, 24, 16}, 8, &seed);   /* a verify step, GQA 3:1 */
	ok &= steps_case(h, (gdr_shape){2, 2, 40, 130, 32}, 3, &seed);  /* dv over 5 workgroups */
	ok &= steps_case(h, (gdr_shape){1, 3, 7, 5, 0}, 37, &seed);     /* past KV_MATVEC_MAX_T: still recurrent */
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
