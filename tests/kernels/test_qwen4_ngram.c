/* ngram_embed against ref_ngram_embed: orders 2..4, several heads per order,
 * odd row widths, f32 and f16 tables, q8_0 and q4_k tables (rows of whole
 * blocks; q4_k's of 160, a partial super-block, as the published model's),
 * T = 1 (decode) and prefill lengths,
 * histories with "before the sequence" zeros and real ids, EOS tokens inside
 * the window, a tiny vocabulary (multipliers near 2^62, so the high 32-bit
 * word of the hash matters) and primes near 2^20. The kernel's 64-bit hash
 * runs on 32-bit pairs; the outputs are gathered table rows and the history a
 * copy, so both must match bitwise (a quantized table's rows as the
 * reference dequantizes them; q4_k's within 1e-6 of max(|x|, 1): its kernel
 * may fuse (d*sc) * q - dmin*m into one fma). Batch invariance: T tokens in one
 * dispatch equal T one-token dispatches that carry the history, bitwise.
 * The kernel with steps (the history after each token, a verify step's
 * state slots): y, hist' and steps bitwise the reference's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/kernels/harness.h"

typedef struct {
	ref_ngram_params p;
	int64_t dp;
	halo_dtype wt;
} ng_shape;

static int64_t heads_of(const ng_shape *s)
{
	return (s->p.ngram - 1) * s->p.heads_per_ngram;
}

/* The table rows: the heads' primes summed, plus a few spare rows. */
static int64_t rows_of(const ng_shape *s)
{
	int64_t size[KV_NGRAM_MAX_HEADS], off[KV_NGRAM_MAX_HEADS], h = heads_of(s);
	ref_ngram_tables(&s->p, size, off);
	return off[h - 1] + size[h - 1] + 3;
}

static bool build(harness *h, const ng_shape *s, bool steps, hkernel *k)
{
	kv_desc d = {.op = IR_OP_NGRAM_EMBED, .t_max = 16, .wtype = s->wt, .steps = steps};
	int64_t m[KV_NGRAM_MAX], size[KV_NGRAM_MAX_HEADS], off[KV_NGRAM_MAX_HEADS];
	ref_ngram_multipliers(&s->p, m);
	ref_ngram_tables(&s->p, size, off);
	for (int64_t i = 0; i < s->p.ngram; i++)
		d.u.ngram.mult[i] = (uint64_t)m[i];
	for (int64_t j = 0; j < heads_of(s); j++)
		d.u.ngram.size[j] = (uint32_t)size[j];
	d.u.ngram.ngram = s->p.ngram;
	d.u.ngram.hpn = s->p.heads_per_ngram;
	d.u.ngram.eos = s->p.eos;
	d.u.ngram.vocab = s->p.vocab;
	d.u.ngram.rows = rows_of(s);
	d.u.ngram.dp = s->dp;
	return hk_build(h, &d, k);
}

typedef struct {
	float *table, *hist, *y, *nh, *want_y, *want_nh;
	void *stored; /* the table's bytes as the kernel reads them */
	size_t stored_bytes;
	int32_t *ids;
} ng_data;

/* Binds steps (the kernel's third output) when not NULL. */
static bool run(harness *h, hkernel *k, const ng_shape *s, const ng_data *a, int32_t *ids, float *hist,
		float *y, float *nh, float *steps, int64_t T)
{
	size_t hn = (size_t)(s->p.ngram - 1);
	hop ops[6] = {
		{a->stored, a->stored_bytes, false},
		{ids, (size_t)T * 4, false},
		{hist, hn * 4, false},
		{y, (size_t)(T * heads_of(s) * s->dp) * 4, true},
		{nh, hn * 4, true},
		{steps, (size_t)T * hn * 4, true},
	};
	return hk_run(h, k, ops, steps ? 6 : 5, (uint32_t)T, 0);
}

static uint32_t next_u32(uint32_t *seed)
{
	*seed = *seed * 1664525u + 1013904223u;
	return *seed >> 8;
}

/* Random ids with every fifth an EOS; history: oldest slot zero, the rest ids + 1. */
static ng_data data_new(const ng_shape *s, int64_t T, uint32_t *seed)
{
	size_t nt = (size_t)(rows_of(s) * s->dp), hn = (size_t)(s->p.ngram - 1);
	size_t ny = (size_t)(T * heads_of(s) * s->dp);
	ng_data a = {alloc_floats(nt), alloc_floats(hn), alloc_floats(ny), alloc_floats(hn), alloc_floats(ny),
		     alloc_floats(hn), NULL, 0, calloc((size_t)T, 4)};
	if (!a.ids) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	fill_random(a.table, nt, 1.0f, seed);
	a.stored = stored_table(s->wt, a.table, (size_t)rows_of(s), (size_t)s->dp, &a.stored_bytes);
	for (size_t i = 0; i < hn; i++)
		a.hist[i] = i == 0 ? 0.0f : (float)(next_u32(seed) % (uint32_t)s->p.vocab + 1);
	for (int64_t t = 0; t < T; t++)
		a.ids[t] = next_u32(seed) % 5 == 0 ? (int32_t)s->p.eos : (int32_t)(next_u32(seed) % (uint32_t)s->p.vocab);
	return a;
}

static void data_free(ng_data *a)
{
	if (a->stored != a->table)
		free(a->stored);
	free(a->table), free(a->hist), free(a->y), free(a->nh), free(a->want_y), free(a->want_nh);
	free(a->ids);
}

/* With steps, the kernel's steps [T, N-1] are checked too. */
static bool ng_case(harness *h, ng_shape s, int64_t T, bool with_steps, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, with_steps, &k))
		return false;
	ng_data a = data_new(&s, T, seed);
	size_t hn = (size_t)(s.p.ngram - 1);
	float *steps = with_steps ? alloc_floats((size_t)T * hn) : NULL;
	float *want = with_steps ? alloc_floats((size_t)T * hn) : NULL;
	bool ok = run(h, &k, &s, &a, a.ids, a.hist, a.y, a.nh, steps, T);
	ref_error err;
	if (ok && !ref_ngram_embed(&s.p, a.table, a.ids, a.hist, a.want_y, a.want_nh, want, T, rows_of(&s), s.dp, &err)) {
		fprintf(stderr, "FAIL: %s\n", err.msg);
		ok = false;
	}
	if (ok) {
		char what[1024];
		snprintf(what, sizeof what, "%s T=%lld", k.k.signature, (long long)T);
		size_t ny = (size_t)(T * heads_of(&s) * s.dp);
		ok = s.wt == HALO_Q4_K ? check_close(what, a.y, a.want_y, ny, 1e-6, 1.0)
				       : check_bitwise(what, a.y, a.want_y, ny);
		snprintf(what, sizeof what, "%s T=%lld hist'", k.k.signature, (long long)T);
		ok &= check_bitwise(what, a.nh, a.want_nh, hn);
		snprintf(what, sizeof what, "%s T=%lld steps", k.k.signature, (long long)T);
		ok &= !with_steps || check_bitwise(what, steps, want, (size_t)T * hn);
	}
	free(steps), free(want);
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

static bool invariance(harness *h, ng_shape s, int64_t m, uint32_t *seed)
{
	hkernel k;
	if (!build(h, &s, false, &k))
		return false;
	ng_data a = data_new(&s, m, seed);
	size_t hn = (size_t)(s.p.ngram - 1), ry = (size_t)(heads_of(&s) * s.dp);
	float *hist = alloc_floats(hn), *next = alloc_floats(hn);
	bool ok = run(h, &k, &s, &a, a.ids, a.hist, a.y, a.nh, NULL, m);
	memcpy(hist, a.hist, hn * 4);
	for (int64_t t = 0; ok && t < m; t++) {
		ok = run(h, &k, &s, &a, a.ids + t, hist, a.want_y + (size_t)t * ry, next, NULL, 1);
		memcpy(hist, next, hn * 4);
	}
	char what[1024];
	snprintf(what, sizeof what, "batch invariance %s, T=%lld vs single steps", k.k.signature, (long long)m);
	ok = ok && check_bitwise(what, a.y, a.want_y, (size_t)m * ry);
	ok = ok && check_bitwise("  final hist", a.nh, hist, hn);
	free(hist), free(next);
	data_free(&a);
	hk_free(h, &k);
	return ok;
}

int main(void)
{
	harness *h = harness_open();
	uint32_t seed = 1729;
	bool ok = true;
	/* ngram, hpn, eos, vocab, seed, layer_index, table_base */
	ng_shape tiny = {{3, 8, 2, 1000, 1234, 0, 50}, 5, HALO_F32};
	ok &= ng_case(h, tiny, 1, false, &seed);
	ok &= ng_case(h, tiny, 13, false, &seed);
	ok &= ng_case(h, (ng_shape){{4, 3, 0, 5, 77, 2, 31}, 8, HALO_F16}, 9, false, &seed);   /* multipliers ~2^61 */
	ok &= ng_case(h, (ng_shape){{2, 1, 6, 7, 9, 1, 101}, 3, HALO_F16}, 2, false, &seed);   /* bigrams, T < N */
	ok &= ng_case(h, (ng_shape){{3, 1, 1, 50000, 5, 0, 1 << 20}, 2, HALO_F32}, 7, false, &seed); /* primes ~2^20 */
	ok &= invariance(h, (ng_shape){{4, 2, 2, 300, 42, 1, 40}, 3, HALO_F32}, 11, &seed);
	/* with steps: one token, a verify step, T < N-1 (the slots reach into hist), bigrams at t_max */
	ok &= ng_case(h, tiny, 1, true, &seed);
	ok &= ng_case(h, (ng_shape){{4, 3, 0, 5, 77, 2, 31}, 8, HALO_F16}, 8, true, &seed);
	ok &= ng_case(h, (ng_shape){{5, 1, 6, 7, 9, 1, 101}, 3, HALO_F32}, 2, true, &seed);
	ok &= ng_case(h, (ng_shape){{2, 1, 1, 50000, 5, 0, 1 << 20}, 2, HALO_F32}, 16, true, &seed);
	/* quantized tables (halo compile --quant stores them so) */
	ok &= ng_case(h, (ng_shape){{3, 2, 2, 1000, 1234, 0, 50}, 64, HALO_Q8_0}, 7, true, &seed);
	ok &= ng_case(h, (ng_shape){{3, 2, 2, 1000, 1234, 0, 50}, 160, HALO_Q4_K}, 5, false, &seed);
	ok &= ng_case(h, (ng_shape){{4, 1, 0, 500, 7, 1, 40}, 256, HALO_Q4_K}, 1, true, &seed);
	ok &= invariance(h, (ng_shape){{3, 2, 2, 300, 42, 1, 40}, 32, HALO_Q8_0}, 9, &seed);
	int rc = harness_close(h);
	return ok && rc == 0 ? 0 : 1;
}
