/* The routed experts as the compiler dispatches them (passes/split_moe.c):
 * moe_gate_up into an activation buffer [T,k,F], then moe_down. Checked
 * against the reference: the activations against ref_moe_gate_up, the output
 * against ref_moe_experts (the whole FFN); f32 and f16 expert weights, odd H
 * and F (scalar loads) and multiples of 8 (16-byte loads), k = 1 and several
 * experts per token, an id outside [0,E) (the kernels read expert 0, so the
 * reference is given 0 there), and batch invariance: T tokens in one
 * dispatch pair equal T one-token pairs bitwise, and moe_gate_up's widths
 * with 16-byte chunks (one row split over a fixed number of lanes) equal
 * each other bitwise. Quantized experts (q8_0,
 * q4_k, f8e4m3_b128; runtime/drivers/ref/quant.h): the weights quantized with halo_quantize_rows
 * as E * F rows of H (gate, up) and E * H rows of F (down), the reference
 * given their dequantized values (halo_dequantize_rows); the kernels
 * dequantize 8 weights at a time to those values (bitwise for q8_0,
 * f8e4m3_b128 and mxfp4, one f32 product each; q4_k: up to one fma's
 * rounding of (d*sc)*q - dmin*m) and sum in f32 as for f32 weights, so the
 * same tolerance holds. DeepSeek V4's limit (moe_gate_up clamps g from
 * above and u on both sides before silu(g) * u) at a value that fires on
 * many activations: the clamps only choose, so the same tolerance holds.
 *
 * Tolerance: max |got - want| / max(|want|, 5e-2) <= 2e-5. Each output sums k
 * weighted f32 dots of F <= 40 terms over activations that are themselves f32
 * dots of H <= 300 terms through silu, all taken in order (the reference
 * accumulates in f64): a few ulps per term in the worst case. Weights are
 * scaled by 1/sqrt(fan-in) so activations and outputs are of order 1; terms
 * of either sign cancel, so outputs below 5e-2 are judged absolutely.
 * Measured on lavapipe: at most 3.2e-6. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/quant.h"
#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	int64_t H, F, E, k;
	halo_dtype wt;
	float limit; /* moe_gate_up's clamp, 0: none */
} moe_shape;

typedef struct {
	float *x, *wr, *gate, *up, *down, *y, *want;
	uint16_t *g16, *u16, *d16;
	int32_t *ids, *ref_ids;
	float *act, *act_want; /* [T,k,F] */
	uint8_t *gq, *uq, *dq; /* quantized weights (bytes), NULL otherwise */
} moe_data;

static void *alloc_or_die(size_t n)
{
	void *p = calloc(n ? n : 1, 1);
	if (!p) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	return p;
}

/* k distinct experts per token in random order; the last token's first slot
 * is out of range when bad_id. */
static void pick_ids(int32_t *ids, int64_t T, const moe_shape *s, bool bad_id, uint32_t *seed)
{
	for (int64_t t = 0; t < T; t++)
		for (int64_t j = 0; j < s->k; j++) {
			bool dup;
			do {
				*seed = *seed * 1664525u + 1013904223u;
				ids[t * s->k + j] = (int32_t)((*seed >> 8) % (uint32_t)s->E);
				dup = false;
				for (int64_t i = 0; i < j; i++)
					dup |= ids[t * s->k + i] == ids[t * s->k + j];
			} while (dup);
		}
	if (bad_id)
		ids[(T - 1) * s->k] = (int32_t)s->E;
}

static moe_data data_new(const moe_shape *s, int64_t T, bool bad_id, uint32_t *seed)
{
	size_t nx = (size_t)(T * s->H), ns = (size_t)(T * s->k), nw = (size_t)(s->E * s->F * s->H);
	moe_data a = {alloc_floats(nx), alloc_floats(ns), alloc_floats(nw), alloc_floats(nw),
		      alloc_floats(nw), alloc_floats(nx), alloc_floats(nx), alloc_or_die(nw * 2),
		      alloc_or_die(nw * 2), alloc_or_die(nw * 2), alloc_or_die(ns * 4),
		      alloc_or_die(ns * 4), alloc_floats(ns * (size_t)s->F), alloc_floats(ns * (size_t)s->F), NULL, NULL, NULL};
	fill_random(a.x, nx, 1.0f, seed);
	fill_random(a.wr, ns, 1.0f, seed);
	for (size_t i = 0; i < ns; i++)
		a.wr[i] = a.wr[i] < 0 ? -a.wr[i] : a.wr[i]; /* routing weights are positive */
	/* Weights scaled by 1/sqrt(fan-in) keep activations and outputs of order 1. */
	fill_random(a.gate, nw, 1.5f / sqrtf((float)s->H), seed);
	fill_random(a.up, nw, 1.5f / sqrtf((float)s->H), seed);
	fill_random(a.down, nw, 1.5f / sqrtf((float)s->F), seed);
	if (s->wt == HALO_F16) {
		round_f16(a.gate, a.g16, nw);
		round_f16(a.up, a.u16, nw);
		round_f16(a.down, a.d16, nw);
	}
	if (halo_dtype_is_quant(s->wt)) {
		/* gate and up: E*F rows of H; down: E*H rows of F */
		uint64_t ru = (uint64_t)(s->E * s->F), rd = (uint64_t)(s->E * s->H);
		a.gq = alloc_or_die(halo_dtype_bytes(s->wt, ru, (size_t)s->H));
		a.uq = alloc_or_die(halo_dtype_bytes(s->wt, ru, (size_t)s->H));
		a.dq = alloc_or_die(halo_dtype_bytes(s->wt, rd, (size_t)s->F));
		halo_quantize_rows(s->wt, a.gate, ru, (uint64_t)s->H, 0, ru, a.gq);
		halo_quantize_rows(s->wt, a.up, ru, (uint64_t)s->H, 0, ru, a.uq);
		halo_quantize_rows(s->wt, a.down, rd, (uint64_t)s->F, 0, rd, a.dq);
		halo_dequantize_rows(s->wt, a.gq, ru, (uint64_t)s->H, 0, ru, a.gate);
		halo_dequantize_rows(s->wt, a.uq, ru, (uint64_t)s->H, 0, ru, a.up);
		halo_dequantize_rows(s->wt, a.dq, rd, (uint64_t)s->F, 0, rd, a.down);
	}
	pick_ids(a.ids, T, s, bad_id, seed);
	for (size_t i = 0; i < ns; i++)
		a.ref_ids[i] = a.ids[i] < 0 || a.ids[i] >= s->E ? 0 : a.ids[i];
	return a;
}

static void data_free(moe_data *a)
{
	free(a->x), free(a->wr), free(a->gate), free(a->up), free(a->down), free(a->y);
	free(a->want), free(a->g16), free(a->u16), free(a->d16), free(a->ids), free(a->ref_ids);
	free(a->act), free(a->act_want);
	free(a->gq), free(a->uq), free(a->dq);
}

typedef struct {
	hkernel gate_up, down;
} moe_kernels;

/* Both halves with the same tiles (the i-th choice of moe_gate_up's space). */
static bool build(harness *h, const moe_shape *s, int64_t t_max, kv_tiles tiles, moe_kernels *k)
{
	kv_desc d = {.op = IR_OP_MOE_GATE_UP, .t_max = t_max, .wtype = s->wt, .tiles = tiles};
	d.u.moe.H = s->H;
	d.u.moe.F = s->F;
	d.u.moe.E = s->E;
	d.u.moe.k = s->k;
	d.u.moe.limit = s->limit;
	if (!hk_build(h, &d, &k->gate_up))
		return false;
	d.op = IR_OP_MOE_DOWN;
	d.u.moe.limit = 0.0f;
	if (hk_build(h, &d, &k->down))
		return true;
	hk_free(h, &k->gate_up);
	return false;
}

static void kernels_free(harness *h, moe_kernels *k)
{
	hk_free(h, &k->gate_up);
	hk_free(h, &k->down);
}

/* Tokens t0..t0+T-1 of a through both halves (act and y rows from t0). */
static bool run(harness *h, moe_kernels *k, const moe_shape *s, const moe_data *a, int64_t t0, int64_t T,
		float *act, float *y)
{
	size_t nw = (size_t)(s->E * s->F * s->H), kf = (size_t)(s->k * s->F);
	bool f16 = s->wt == HALO_F16, q = halo_dtype_is_quant(s->wt);
	/* gate and up: E*F rows of H; down: E*H rows of F (a q4_k row may end
	 * in a partial super-block, so the two differ) */
	size_t plain = nw * (f16 ? 2 : 4);
	size_t gbytes = q ? halo_dtype_bytes(s->wt, (size_t)(s->E * s->F), (size_t)s->H) : plain;
	size_t dbytes = q ? halo_dtype_bytes(s->wt, (size_t)(s->E * s->H), (size_t)s->F) : plain;
	void *gw = q ? (void *)a->gq : f16 ? (void *)a->g16 : (void *)a->gate;
	void *uw = q ? (void *)a->uq : f16 ? (void *)a->u16 : (void *)a->up;
	void *dw = q ? (void *)a->dq : f16 ? (void *)a->d16 : (void *)a->down;
	hop gu[5] = {
		{a->x + t0 * s->H, (size_t)(T * s->H) * 4, false},
		{a->ids + t0 * s->k, (size_t)(T * s->k) * 4, false},
		{gw, gbytes, false},
		{uw, gbytes, false},
		{act + (size_t)t0 * kf, (size_t)T * kf * 4, true},
	};
	hop dn[5] = {
		{act + (size_t)t0 * kf, (size_t)T * kf * 4, false},
		{a->ids + t0 * s->k, (size_t)(T * s->k) * 4, false},
		{a->wr + t0 * s->k, (size_t)(T * s->k) * 4, false},
		{dw, dbytes, false},
		{y + t0 * s->H, (size_t)(T * s->H) * 4, true},
	};
	return hk_run(h, &k->gate_up, gu, 5, (uint32_t)T, 0) && hk_run(h, &k->down, dn, 5, (uint32_t)T, 0);
}

/* Whether the limit changed some of the reference activations. */
static bool limit_fires(const moe_shape *s, int64_t T, const moe_data *a)
{
	size_t n = (size_t)(T * s->k * s->F);
	float *free_act = alloc_floats(n);
	ref_error err;
	bool fired = ref_moe_gate_up(a->x, a->ref_ids, a->gate, a->up, free_act, T, s->H, s->F, s->E, s->k, 0.0f, &err) &&
		     memcmp(free_act, a->act_want, n * sizeof(float)) != 0;
	free(free_act);
	return fired;
}

static bool moe_variant(harness *h, moe_shape s, int64_t T, bool bad_id, kv_tiles tiles, uint32_t *seed)
{
	moe_kernels k;
	if (!build(h, &s, T, tiles, &k))
		return false;
	moe_data a = data_new(&s, T, bad_id, seed);
	bool ok = run(h, &k, &s, &a, 0, T, a.act, a.y);
	ref_error err;
	if (ok && (!ref_moe_gate_up(a.x, a.ref_ids, a.gate, a.up, a.act_want, T, s.H, s.F, s.E, s.k, s.limit, &err) ||
		   !ref_moe_experts(a.x, a.ref_ids, a.wr, a.gate, a.up, a.down, a.want, T, s.H, s.F, s.E, s.k,
				    s.limit, &err))) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		ok = false;
	}
	if (ok && s.limit > 0.0f && !limit_fires(&s, T, &a)) {
		fprintf(stderr, "FAIL: limit %g changes no activation\n", (double)s.limit);
		ok = false;
	}
	char what[512];
	snprintf(what, sizeof what, "%s T=%lld%s", k.gate_up.k.signature, (long long)T,
		 bad_id ? " (an id out of range)" : "");
	ok = ok && check_close(what, a.act, a.act_want, (size_t)(T * s.k * s.F), 2e-5, 5e-2);
	snprintf(what, sizeof what, "%s T=%lld%s", k.down.k.signature, (long long)T,
		 bad_id ? " (an id out of range)" : "");
	ok = ok && check_close(what, a.y, a.want, (size_t)(T * s.H), 2e-5, 5e-2);
	data_free(&a);
	kernels_free(h, &k);
	return ok;
}

static bool invariance_variant(harness *h, moe_shape s, int64_t m, kv_tiles tiles, uint32_t *seed)
{
	moe_kernels k;
	if (!build(h, &s, m, tiles, &k))
		return false;
	moe_data a = data_new(&s, m, false, seed);
	bool ok = run(h, &k, &s, &a, 0, m, a.act, a.y);
	for (int64_t t = 0; ok && t < m; t++)
		ok = run(h, &k, &s, &a, t, 1, a.act_want, a.want);
	char what[512];
	snprintf(what, sizeof what, "batch invariance %s + moe_down, T=%lld vs single steps", k.gate_up.k.signature,
		 (long long)m);
	ok = ok && check_bitwise(what, a.y, a.want, (size_t)(m * s.H));
	data_free(&a);
	kernels_free(h, &k);
	return ok;
}

/* The variant space of moe_gate_up at this shape (moe_down's is the same
 * widths). */
static int space(const moe_shape *s, int64_t t_max, kv_tiles *t, int max)
{
	kv_desc d = {.op = IR_OP_MOE_GATE_UP, .t_max = t_max, .wtype = s->wt};
	d.u.moe.H = s->H;
	d.u.moe.F = s->F;
	d.u.moe.E = s->E;
	d.u.moe.k = s->k;
	return kv_variant_space(&d, t, max);
}

static bool moe_case(harness *h, moe_shape s, int64_t T, bool bad_id, uint32_t *seed)
{
	kv_tiles t[16];
	int n = space(&s, T, t, 16);
	bool ok = n > 1;
	for (int i = 0; i < n; i++)
		ok &= moe_variant(h, s, T, bad_id, t[i], seed);
	return ok;
}

static bool invariance(harness *h, moe_shape s, int64_t m, uint32_t *seed)
{
	kv_tiles t[16];
	int n = space(&s, m, t, 16);
	bool ok = n > 1;
	for (int i = 0; i < n; i++)
		ok &= invariance_variant(h, s, m, t[i], seed);
	return ok;
}

/* moe_gate_up with 16-byte chunks splits a row over a fixed number of lanes
 * whatever the width, so every width of its space gives the same bits (halo
 * tune may pick any); the first (the heuristic's) is the reference. */
static bool widths_agree(harness *h, moe_shape s, int64_t T, uint32_t *seed)
{
	kv_tiles t[16];
	int n = space(&s, T, t, 16);
	moe_data a = data_new(&s, T, false, seed);
	size_t na = (size_t)(T * s.k * s.F);
	float *first = alloc_floats(na);
	bool ok = n > 1;
	for (int i = 0; ok && i < n; i++) {
		moe_kernels k;
		ok = build(h, &s, T, t[i], &k);
		if (!ok)
			break;
		ok = run(h, &k, &s, &a, 0, T, a.act, a.y);
		char what[512];
		snprintf(what, sizeof what, "%s T=%lld against the heuristic's width", k.gate_up.k.signature,
			 (long long)T);
		if (i == 0)
			memcpy(first, a.act, na * sizeof(float));
		else
			ok = ok && check_bitwise(what, a.act, first, na);
		kernels_free(h, &k);
	}
	free(first);
	data_free(&a);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 1618;
	bool ok = true;
	ok &= moe_case(h, (moe_shape){24, 10, 5, 2, HALO_F32, 0}, 3, false, &seed);
	ok &= moe_case(h, (moe_shape){33, 17, 7, 3, HALO_F16, 0}, 5, true, &seed);   /* odd, f16 */
	ok &= moe_case(h, (moe_shape){72, 40, 4, 1, HALO_F32, 0}, 1, false, &seed);  /* decode, k = 1 */
	ok &= moe_case(h, (moe_shape){300, 9, 6, 4, HALO_F16, 0}, 2, false, &seed);  /* H > lanes */
	ok &= moe_case(h, (moe_shape){64, 32, 8, 2, HALO_F16, 0}, 4, true, &seed);   /* 16-byte loads, f16 */
	ok &= moe_case(h, (moe_shape){1024, 40, 6, 3, HALO_F32, 0}, 2, false, &seed); /* 16-byte loads, f32 */
	ok &= moe_case(h, (moe_shape){344, 24, 6, 3, HALO_F16, 0}, 3, false, &seed); /* a partial round */
	ok &= widths_agree(h, (moe_shape){344, 24, 6, 3, HALO_F16, 0}, 3, &seed);
	ok &= widths_agree(h, (moe_shape){256, 96, 3, 1, HALO_Q8_0, 0}, 2, &seed);
	ok &= invariance(h, (moe_shape){40, 24, 8, 4, HALO_F16, 0}, 5, &seed);
	ok &= invariance(h, (moe_shape){64, 16, 8, 2, HALO_F16, 0}, 8, &seed);
	/* quantized experts: H and F whole blocks (f8e4m3_b128: 128, the others
	 * 32; q4_k rows of 96, 160 and 640 end in a partial super-block: the
	 * published Qwen3.8 Flash's experts are 2560 x 640) */
	ok &= moe_case(h, (moe_shape){96, 64, 5, 2, HALO_Q8_0, 0}, 3, true, &seed);
	ok &= moe_case(h, (moe_shape){512, 256, 4, 2, HALO_Q4_K, 0}, 2, false, &seed);
	ok &= moe_case(h, (moe_shape){256, 512, 6, 3, HALO_Q4_K, 0}, 1, true, &seed);
	ok &= moe_case(h, (moe_shape){256, 96, 3, 1, HALO_Q8_0, 0}, 5, false, &seed);
	ok &= invariance(h, (moe_shape){256, 256, 5, 2, HALO_Q4_K, 0}, 6, &seed);
	ok &= moe_case(h, (moe_shape){256, 640, 4, 2, HALO_Q4_K, 0}, 3, true, &seed);
	ok &= moe_case(h, (moe_shape){160, 96, 5, 3, HALO_Q4_K, 0}, 2, false, &seed);
	ok &= invariance(h, (moe_shape){96, 160, 5, 2, HALO_Q4_K, 0}, 6, &seed);
	ok &= invariance(h, (moe_shape){64, 32, 6, 3, HALO_Q8_0, 0}, 8, &seed);
	ok &= moe_case(h, (moe_shape){256, 128, 4, 2, HALO_F8E4M3_B128, 0}, 3, true, &seed);
	ok &= moe_case(h, (moe_shape){128, 384, 3, 1, HALO_F8E4M3_B128, 0}, 2, false, &seed);
	ok &= invariance(h, (moe_shape){128, 128, 5, 2, HALO_F8E4M3_B128, 0}, 6, &seed);
	/* mxfp4: blocks of 32, as DeepSeek V4-Flash's experts */
	ok &= moe_case(h, (moe_shape){96, 64, 5, 2, HALO_MXFP4, 0}, 3, true, &seed);
	ok &= moe_case(h, (moe_shape){256, 96, 3, 1, HALO_MXFP4, 0}, 5, false, &seed);
	ok &= invariance(h, (moe_shape){64, 32, 6, 3, HALO_MXFP4, 0}, 8, &seed);
	/* DeepSeek V4's clamped SwiGLU: limits that fire on activations of order 1 */
	ok &= moe_case(h, (moe_shape){24, 10, 5, 2, HALO_F32, 0.5f}, 3, false, &seed);
	ok &= moe_case(h, (moe_shape){64, 32, 8, 2, HALO_F16, 0.75f}, 4, true, &seed);
	ok &= moe_case(h, (moe_shape){96, 64, 5, 2, HALO_Q8_0, 0.5f}, 2, false, &seed);
	ok &= moe_case(h, (moe_shape){64, 32, 8, 2, HALO_MXFP4, 0.5f}, 4, false, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
