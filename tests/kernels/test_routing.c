/* topk and moe_route against the reference, with ties (equal values must be
 * taken lower index first), rows shorter and longer than the workgroup, and
 * k = 1 and k = N; moe_route also in DeepSeek V4's forms: sigmoid and
 * sqrt(softplus) scores, a selection bias, a scaling.
 *
 * topk copies values, so ids and values must equal the reference exactly.
 * moe_route: ids exactly; weights within max |got - want| / |want| <= 2e-6.
 * Each probability is exp(x - max) / sum with the sum of <= 300 terms in f32
 * by a fixed tree (f64 in the reference) and GPU exp a few ulps off libm;
 * the renormalisation adds one f32 sum of k terms and a division. Weights are
 * in (0, 1] and never 0 here, so the error is purely relative. The logits are
 * spread (|x| <= 4 over >= 300 distinct values) so that no two selected
 * probabilities are within rounding of each other unless their logits are
 * equal (the planted ties). The other scorings are as many f32 operations (a
 * sigmoid, or an exp, a log and a square root) and a bias only moves the
 * ranking (random biases of |b| <= 0.5 leave no two candidates within
 * rounding), so the same bound holds.
 *
 * moe_route_hash (DeepSeek V4's hash layers) runs topk.comp's HASH form:
 * the experts from a random table (f32 and f16, entries exact in both) by
 * random tokens, ids exactly, the weights as moe_route's (the same scores
 * and renormalisation: the same bound). The kernel's clamps, which the
 * reference reports as errors instead, are checked against the reference
 * given the clamped inputs: a token outside [0, V) reads row 0, a table
 * entry outside [0, E) expert 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

/* Random logits with planted ties: a few elements copy an earlier one. */
static void fill_with_ties(float *x, int64_t T, int64_t N, uint32_t *seed)
{
	fill_random(x, (size_t)(T * N), 4.0f, seed);
	for (int64_t t = 0; t < T && N > 2; t++) {
		float *r = x + t * N;
		int64_t best = 0;
		for (int64_t n = 1; n < N; n++)
			if (r[n] > r[best])
				best = n;
		r[(best + N / 2) % N] = r[best]; /* a tie for first place */
		r[N - 1] = r[0];                  /* and one anywhere */
	}
}

static bool ids_equal(const char *what, const int32_t *a, const int32_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i]) {
			printf("FAIL %s: id %zu is %d, want %d\n", what, i, a[i], b[i]);
			return false;
		}
	printf("ok   %s: %zu ids equal\n", what, n);
	return true;
}

static bool route_variant(harness *h, const kv_desc *d, uint32_t *seed)
{
	bool route = d->op == IR_OP_MOE_ROUTE, biased = d->u.topk.bias;
	int64_t T = d->t_max, N = d->u.topk.N, kk = d->u.topk.k;
	hkernel k;
	if (!hk_build(h, d, &k))
		return false;
	if (!hk_supported(h, &k.k)) {
		printf("skip (the device lacks what it needs): %s\n", k.k.signature);
		hk_free(h, &k);
		return true;
	}
	size_t nx = (size_t)(T * N), ns = (size_t)(T * kk);
	float *x = alloc_floats(nx), *vals = alloc_floats(ns), *want = alloc_floats(ns), *bias = alloc_floats((size_t)N);
	int32_t *ids = calloc(ns, sizeof *ids), *want_ids = calloc(ns, sizeof *ids);
	if (!ids || !want_ids) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	fill_with_ties(x, T, N, seed);
	fill_random(bias, (size_t)N, 0.5f, seed);
	hop ops[4] = {{x, nx * 4, false}};
	int nops = 1;
	if (biased)
		ops[nops++] = (hop){bias, (size_t)N * 4, false};
	ops[nops++] = (hop){ids, ns * 4, true};
	ops[nops++] = (hop){vals, ns * 4, true};
	bool ok = hk_run(h, &k, ops, nops, (uint32_t)T, 0);
	if (ok) {
		static const ref_scoring scoring[] = {[KV_SCORE_SOFTMAX] = REF_SCORE_SOFTMAX,
						      [KV_SCORE_SIGMOID] = REF_SCORE_SIGMOID,
						      [KV_SCORE_SQRTSOFTPLUS] = REF_SCORE_SQRTSOFTPLUS};
		float scaling = d->u.topk.scaling;
		ref_route_params rp = {.k = kk, .norm_topk = d->u.topk.norm, .scoring = scoring[d->u.topk.scoring],
				       .scaling = scaling != 0.0f ? scaling : 1.0f};
		if (route)
			ref_moe_route(&rp, x, biased ? bias : NULL, want_ids, want, T, N);
		else
			ref_topk(x, want_ids, want, T, N, kk);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld ids", k.k.signature, (long long)T);
		ok = ids_equal(what, ids, want_ids, ns);
		snprintf(what, sizeof what, "%s T=%lld %s", k.k.signature, (long long)T,
			 route ? "weights" : "values");
		ok &= route ? check_close(what, vals, want, ns, 2e-6, 1e-30)
			    : check_bitwise(what, vals, want, ns);
	}
	free(x), free(vals), free(want), free(bias), free(ids), free(want_ids);
	hk_free(h, &k);
	return ok;
}

/* Every variant of d: the subgroup-shuffle combine and the shared-memory tree. */
static bool variants(harness *h, kv_desc d, uint32_t *seed)
{
	kv_tiles t[4];
	int n = kv_variant_space(&d, t, 4);
	bool ok = n == 2;
	for (int i = 0; i < n; i++) {
		d.tiles = t[i];
		ok &= route_variant(h, &d, seed);
	}
	return ok;
}

static bool route_case(harness *h, bool route, int64_t T, int64_t N, int64_t kk, bool norm, uint32_t *seed)
{
	kv_desc d = {.op = route ? IR_OP_MOE_ROUTE : IR_OP_TOPK, .t_max = T};
	d.u.topk.N = N;
	d.u.topk.k = kk;
	d.u.topk.norm = norm;
	return variants(h, d, seed);
}

/* DeepSeek V4's routers: a scoring, an optional bias, a scaling. */
static bool ds_route_case(harness *h, int64_t T, int64_t N, int64_t kk, bool norm, kv_scoring scoring, bool bias,
			  float scaling, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_MOE_ROUTE, .t_max = T};
	d.u.topk.N = N;
	d.u.topk.k = kk;
	d.u.topk.norm = norm;
	d.u.topk.scoring = scoring;
	d.u.topk.bias = bias;
	d.u.topk.scaling = scaling;
	return variants(h, d, seed);
}

typedef struct {
	int64_t T, E, V, k;
	bool norm, f16;
	kv_scoring scoring;
	float scaling;
} hash_case;

/* Random tokens, and a table of k distinct experts per row in [0, E),
 * rounded through f16 (exact for E <= 2048) with its bits in t16. */
static void hash_inputs(const hash_case *c, int32_t *tokens, float *table, uint16_t *t16, uint32_t *seed)
{
	for (int64_t t = 0; t < c->T; t++)
		tokens[t] = (int32_t)((*seed = *seed * 1664525u + 1013904223u) >> 8) % (int32_t)c->V;
	for (int64_t r = 0; r < c->V; r++) {
		int64_t first = (int64_t)((*seed = *seed * 1664525u + 1013904223u) >> 8) % c->E;
		for (int64_t j = 0; j < c->k; j++)
			table[r * c->k + j] = (float)((first + j * 7) % c->E);
	}
	round_f16(table, t16, (size_t)(c->V * c->k));
}

/* One dispatch of case c; with bad, token 0 is -1 and the table's row 0
 * entry 1 is E + 3, and the reference sees them clamped (token 0, expert 0). */
static bool hash_run(harness *h, const hash_case *c, bool bad, uint32_t *seed)
{
	kv_desc d = {.op = IR_OP_MOE_ROUTE_HASH, .t_max = c->T, .wtype = c->f16 ? HALO_F16 : HALO_F32};
	d.u.topk.N = c->E;
	d.u.topk.k = c->k;
	d.u.topk.norm = c->norm;
	d.u.topk.scoring = c->scoring;
	d.u.topk.scaling = c->scaling;
	d.u.topk.V = c->V;
	hkernel k;
	if (!hk_build(h, &d, &k))
		return false;
	size_t nx = (size_t)(c->T * c->E), ns = (size_t)(c->T * c->k), nt = (size_t)(c->V * c->k);
	float *x = alloc_floats(nx), *table = alloc_floats(nt), *vals = alloc_floats(ns), *want = alloc_floats(ns);
	int32_t *tokens = calloc((size_t)c->T, 4), *ids = calloc(ns, 4), *want_ids = calloc(ns, 4);
	uint16_t *t16 = calloc(nt, 2);
	if (!tokens || !ids || !want_ids || !t16) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	fill_random(x, nx, 4.0f, seed);
	hash_inputs(c, tokens, table, t16, seed);
	if (bad) {
		tokens[0] = -1;
		table[1] = (float)(c->E + 3);
		round_f16(table + 1, t16 + 1, 1);
	}
	hop ops[5] = {{x, nx * 4, false},
		      c->f16 ? (hop){t16, nt * 2, false} : (hop){table, nt * 4, false},
		      {tokens, (size_t)c->T * 4, false},
		      {ids, ns * 4, true},
		      {vals, ns * 4, true}};
	bool ok = hk_run(h, &k, ops, 5, (uint32_t)c->T, 0);
	if (bad) { /* what the kernel reads instead */
		tokens[0] = 0;
		table[1] = 0.0f;
	}
	static const ref_scoring scoring[] = {[KV_SCORE_SOFTMAX] = REF_SCORE_SOFTMAX,
					      [KV_SCORE_SIGMOID] = REF_SCORE_SIGMOID,
					      [KV_SCORE_SQRTSOFTPLUS] = REF_SCORE_SQRTSOFTPLUS};
	ref_route_params rp = {.k = c->k, .norm_topk = c->norm, .scoring = scoring[c->scoring],
			       .scaling = c->scaling != 0.0f ? c->scaling : 1.0f};
	ref_error err;
	if (ok && !ref_moe_route_hash(&rp, x, table, tokens, want_ids, want, c->T, c->E, c->V, &err)) {
		printf("FAIL %s: the reference: %s\n", k.k.signature, err.msg);
		ok = false;
	}
	if (ok) {
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld%s ids", k.k.signature, (long long)c->T, bad ? " clamped" : "");
		ok = ids_equal(what, ids, want_ids, ns);
		snprintf(what, sizeof what, "%s T=%lld%s weights", k.k.signature, (long long)c->T, bad ? " clamped" : "");
		ok &= check_close(what, vals, want, ns, 2e-6, 1e-30);
	}
	free(x), free(table), free(vals), free(want), free(tokens), free(ids), free(want_ids), free(t16);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 4711;
	bool ok = true;
	ok &= route_case(h, false, 3, 300, 8, false, &seed);  /* N > lanes */
	ok &= route_case(h, false, 2, 7, 7, false, &seed);    /* k = N < lanes */
	ok &= route_case(h, false, 4, 1, 1, false, &seed);
	ok &= route_case(h, true, 5, 64, 8, true, &seed);     /* 64 experts, top 8 */
	ok &= route_case(h, true, 3, 37, 4, false, &seed);
	ok &= route_case(h, true, 2, 300, 1, true, &seed);
	ok &= route_case(h, true, 3, 512, 10, true, &seed);   /* Qwen3.8 Flash: 512 experts, top 10 */
	/* DeepSeek V4: 256 experts, top 6, sqrt(softplus) with the correction bias, scaled */
	ok &= ds_route_case(h, 3, 256, 6, true, KV_SCORE_SQRTSOFTPLUS, true, 1.5f, &seed);
	ok &= ds_route_case(h, 2, 37, 4, false, KV_SCORE_SQRTSOFTPLUS, false, 0.0f, &seed);
	ok &= ds_route_case(h, 4, 64, 8, true, KV_SCORE_SIGMOID, true, 2.5f, &seed);
	ok &= ds_route_case(h, 2, 300, 3, true, KV_SCORE_SIGMOID, false, 1.0f, &seed);
	ok &= ds_route_case(h, 3, 64, 8, true, KV_SCORE_SOFTMAX, true, 2.0f, &seed); /* softmax with a bias */
	/* DeepSeek V4's hash layers: 256 experts, top 6, sqrt(softplus), scaled */
	static const hash_case hashes[] = {
		{5, 256, 1000, 6, true, false, KV_SCORE_SQRTSOFTPLUS, 1.5f},
		{3, 256, 1000, 6, true, true, KV_SCORE_SQRTSOFTPLUS, 1.5f},
		{4, 37, 50, 4, false, true, KV_SCORE_SIGMOID, 0.0f},
		{2, 300, 77, 3, true, false, KV_SCORE_SOFTMAX, 2.0f}, /* logits wider than the workgroup */
	};
	for (size_t i = 0; i < sizeof hashes / sizeof *hashes; i++) {
		ok &= hash_run(h, &hashes[i], false, &seed);
		ok &= hash_run(h, &hashes[i], true, &seed);
	}
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
