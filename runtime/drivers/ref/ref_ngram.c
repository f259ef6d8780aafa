/* ngram_embed: Qwen4-Exp's hashed n-gram embedding (models.md section 2.4).
 * Heads of order n = 2..N hash the last n tokens (windows restart after an
 * EOS) with per-layer odd multipliers into per-head prime-sized tables. */
#include "runtime/drivers/ref/ref_error.h"

#include <inttypes.h>
#include <stdlib.h>

#define GAMMA 0x9E3779B97F4A7C15ull
#define MAX_NGRAM 16

static uint64_t splitmix64(uint64_t v)
{
	v += GAMMA;
	v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
	v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
	return v ^ (v >> 31);
}

static bool is_prime(int64_t v)
{
	if (v < 2)
		return false;
	if (v % 2 == 0)
		return v == 2;
	for (int64_t d = 3; d <= v / d; d += 2)
		if (v % d == 0)
			return false;
	return true;
}

void ref_ngram_multipliers(const ref_ngram_params *p, int64_t *m)
{
	int64_t vocab = p->vocab > 1 ? p->vocab : 1;
	int64_t half = (INT64_MAX / vocab) / 2;
	if (half < 1)
		half = 1;
	uint64_t base = (uint64_t)p->seed + 10007ull * (uint64_t)p->layer_index;
	for (int64_t i = 0; i < p->ngram; i++)
		m[i] = 2 * (int64_t)(splitmix64(base + GAMMA * (uint64_t)(i + 1)) % (uint64_t)half) + 1;
}

void ref_ngram_tables(const ref_ngram_params *p, int64_t *size, int64_t *offset)
{
	int64_t heads = (p->ngram - 1) * p->heads_per_ngram, prime = p->table_base - 1, total = 0;
	/* head j takes the (layer_index * heads + j + 1)-th prime >= table_base */
	for (int64_t skip = 0; skip < p->layer_index * heads; skip++)
		for (prime++; !is_prime(prime); prime++)
			;
	for (int64_t j = 0; j < heads; j++) {
		for (prime++; !is_prime(prime); prime++)
			;
		size[j] = prime;
		offset[j] = total;
		total += prime;
	}
}

/* ctx_s at row i of seq: seq[i-s] unless an EOS lies in seq[i-s .. i-1]. */
static int64_t context(const int64_t *seq, int64_t i, int64_t s, int64_t eos)
{
	for (int64_t r = i - s; r < i; r++)
		if (seq[r] == eos)
			return eos;
	return seq[i - s];
}

static bool hash_rows(const ref_ngram_params *p, const int64_t *seq, int64_t T, int64_t rows, int64_t *row_ids,
		      ref_error *err)
{
	int64_t m[MAX_NGRAM], size[MAX_NGRAM * 64], off[MAX_NGRAM * 64], hpn = p->heads_per_ngram;
	ref_ngram_multipliers(p, m);
	ref_ngram_tables(p, size, off);
	int64_t heads = (p->ngram - 1) * hpn;
	if (off[heads - 1] + size[heads - 1] > rows)
		return ref_fail(err, "ngram_embed", "the tables need %" PRId64 " rows, the embedding has %" PRId64,
				off[heads - 1] + size[heads - 1], rows);
	for (int64_t t = 0; t < T; t++) {
		int64_t i = t + p->ngram - 1;
		uint64_t mix = (uint64_t)(context(seq, i, 0, p->eos) * m[0]);
		for (int64_t n = 2; n <= p->ngram; n++) {
			mix ^= (uint64_t)(context(seq, i, n - 1, p->eos) * m[n - 1]);
			for (int64_t h = 0; h < hpn; h++) {
				int64_t j = (n - 2) * hpn + h;
				row_ids[t * heads + j] = (int64_t)(mix % (uint64_t)size[j]) + off[j];
			}
		}
	}
	return true;
}

static bool check_params(const ref_ngram_params *p, ref_error *err)
{
	if (p->ngram < 2 || p->ngram > MAX_NGRAM || p->heads_per_ngram < 1 || p->heads_per_ngram > 64)
		return ref_fail(err, "ngram_embed", "ngram %" PRId64 " must be in [2, %d] and heads_per_ngram %" PRId64
				" in [1, 64]", p->ngram, MAX_NGRAM, p->heads_per_ngram);
	if (p->eos < 0 || p->eos >= p->vocab)
		return ref_fail(err, "ngram_embed", "eos %" PRId64 " outside the vocabulary of %" PRId64, p->eos,
				p->vocab);
	return true;
}

/* seq = [decoded history; ids]; false for an id outside the vocabulary. */
static bool build_seq(const ref_ngram_params *p, const int32_t *ids, const float *hist, int64_t T, int64_t *seq,
		      ref_error *err)
{
	int64_t h = p->ngram - 1;
	for (int64_t i = 0; i < h; i++)
		seq[i] = hist[i] == 0.0f ? p->eos : (int64_t)hist[i] - 1;
	for (int64_t t = 0; t < T; t++) {
		if (ids[t] < 0 || ids[t] >= p->vocab)
			return ref_fail(err, "ngram_embed", "token %" PRId32 " at row %" PRId64
					" outside the vocabulary of %" PRId64, ids[t], t, p->vocab);
		seq[h + t] = ids[t];
	}
	return true;
}

bool ref_ngram_embed(const ref_ngram_params *p, const float *table, const int32_t *ids, const float *hist,
		     float *y, float *new_hist, float *steps, int64_t T, int64_t rows, int64_t dp, ref_error *err)
{
	if (!check_params(p, err))
		return false;
	int64_t h = p->ngram - 1, heads = h * p->heads_per_ngram;
	int64_t *seq = malloc((size_t)(h + T + T * heads) * sizeof *seq);
	if (!seq)
		return ref_fail(err, "ngram_embed", "out of memory");
	int64_t *row_ids = seq + h + T;
	bool ok = build_seq(p, ids, hist, T, seq, err) && hash_rows(p, seq, T, rows, row_ids, err);
	for (int64_t t = 0; ok && t < T; t++)
		for (int64_t j = 0; j < heads; j++)
			for (int64_t k = 0; k < dp; k++)
				y[(t * heads + j) * dp + k] = table[row_ids[t * heads + j] * dp + k];
	for (int64_t t = 0; ok && steps && t < T; t++)
		for (int64_t i = 0; i < h; i++)
			steps[t * h + i] = (float)(seq[t + 1 + i] + 1);
	for (int64_t i = 0; ok && i < h; i++)
		new_hist[i] = (float)(seq[T + i] + 1);
	free(seq);
	return ok;
}
