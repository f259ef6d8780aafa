/* qsa_select and masked_attention: Qwen4-Exp's sparse attention. The indexer
 * scores mean-pooled key blocks, keeps the best ones and always the tail of
 * incomplete blocks; attention then runs over the kept tokens only. */
#include "runtime/drivers/ref/ref_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Block key b (scratch: 2*d floats): mean of rows [b*c, b*c+c) in f64, (1+w) rms norm, rope at b*c. */
static void block_key(const float *keys, const float *w, float *out, float *scratch, int64_t b, int64_t c,
		      int64_t d, const ref_qsa_params *p)
{
	float *pooled = scratch, *normed = scratch + d;
	for (int64_t i = 0; i < d; i++) {
		double acc = 0.0;
		for (int64_t r = 0; r < c; r++)
			acc += (double)keys[(b * c + r) * d + i];
		pooled[i] = (float)(acc / (double)c);
	}
	ref_rms_norm(pooled, w, normed, 1, d, 0, p->eps, 1);
	ref_rope(&(ref_rope_params){.rot_dim = p->rot_dim, .base = p->base}, normed, out, 1, 1, d, b * c);
}

/* Score of block key kb for query q [h,d]: sum over heads of relu(q_h . kb) / sqrt(d). */
static double block_score(const float *q, const float *kb, int64_t h, int64_t d)
{
	double total = 0.0;
	for (int64_t j = 0; j < h; j++) {
		double dot = 0.0;
		for (int64_t i = 0; i < d; i++)
			dot += (double)q[j * d + i] * (double)kb[i];
		total += dot > 0.0 ? dot : 0.0;
	}
	return total / sqrt((double)d);
}

/* Marks the top-k blocks by score in row (ties to the lower index). */
static void mark_top_blocks(const double *score, bool *taken, int64_t nb, int64_t k, float *row, int64_t c)
{
	for (int64_t b = 0; b < nb; b++)
		taken[b] = false;
	for (int64_t n = 0; n < k; n++) {
		int64_t best = -1;
		for (int64_t b = 0; b < nb; b++)
			if (!taken[b] && (best < 0 || score[b] > score[best]))
				best = b;
		taken[best] = true;
		for (int64_t r = 0; r < c; r++)
			row[best * c + r] = 1.0f;
	}
}

bool ref_qsa_select(const ref_qsa_params *p, const float *q, const float *keys, const float *k_norm, float *mask,
		    int64_t T, int64_t h, int64_t d, int64_t C, int64_t pos, ref_error *err)
{
	int64_t c = p->block;
	if (pos < 0 || pos + T > C)
		return ref_fail(err, "qsa_select", "positions [%" PRId64 ", %" PRId64 ") exceed the %" PRId64
				" cached keys", pos, pos + T, C);
	int64_t nb_max = (pos + T) / c;
	/* the block keys, then 2*d floats of scratch */
	float *kb = malloc((size_t)((nb_max + 2) * d) * sizeof *kb);
	double *score = malloc((size_t)(nb_max + 1) * sizeof *score);
	bool *taken = malloc((size_t)(nb_max + 1) * sizeof *taken);
	if (!kb || !score || !taken) {
		free(kb), free(score), free(taken);
		return ref_fail(err, "qsa_select", "out of memory");
	}
	for (int64_t b = 0; b < nb_max; b++)
		block_key(keys, k_norm, kb + b * d, kb + nb_max * d, b, c, d, p);
	for (int64_t t = 0; t < T; t++) {
		float *row = mask + t * C;
		int64_t last = pos + t, nb = (last + 1) / c;
		memset(row, 0, (size_t)C * sizeof *row);
		for (int64_t b = 0; b < nb; b++)
			score[b] = block_score(q + t * h * d, kb + b * d, h, d);
		mark_top_blocks(score, taken, nb, nb < p->top_blocks ? nb : p->top_blocks, row, c);
		for (int64_t j = nb * c; j <= last; j++)
			row[j] = 1.0f;
	}
	free(kb), free(score), free(taken);
	return true;
}

/* One query row of one head over the keys whose mask entry is non-zero. */
static void attend_masked(const float *q, const float *k, const float *v, const float *mrow, float *y, float *s,
			  int64_t n, int64_t hk, int64_t d, int64_t dv, int64_t kv, float scale)
{
	float m = -INFINITY;
	for (int64_t j = 0; j < n; j++) {
		if (mrow[j] == 0.0f)
			continue;
		const float *kj = k + (j * hk + kv) * d;
		double dot = 0.0;
		for (int64_t i = 0; i < d; i++)
			dot += (double)q[i] * (double)kj[i];
		s[j] = (float)dot * scale;
		m = fmaxf(m, s[j]);
	}
	double sum = 0.0;
	for (int64_t j = 0; j < n; j++)
		if (mrow[j] != 0.0f)
			sum += s[j] = expf(s[j] - m);
	float inv = (float)(1.0 / sum);
	for (int64_t c = 0; c < dv; c++) {
		double acc = 0.0;
		for (int64_t j = 0; j < n; j++)
			if (mrow[j] != 0.0f)
				acc += (double)(s[j] * inv) * (double)v[(j * hk + kv) * dv + c];
		y[c] = (float)acc;
	}
}

bool ref_masked_attention(const float *q, const float *k, const float *v, const float *mask, float *y, int64_t T,
			  int64_t hq, int64_t hk, int64_t d, int64_t dv, int64_t C, int64_t pos, float scale,
			  ref_error *err)
{
	if (pos < 0 || pos + T > C)
		return ref_fail(err, "masked_attention", "positions [%" PRId64 ", %" PRId64
				") exceed the cache of %" PRId64 " rows", pos, pos + T, C);
	if (hk <= 0 || hq % hk != 0)
		return ref_fail(err, "masked_attention", "%" PRId64 " query heads are not a multiple of %" PRId64
				" kv heads", hq, hk);
	int64_t empty = ref_mask_empty_row(mask, T, C, pos);
	if (empty >= 0)
		return ref_fail(err, "masked_attention", "query row %" PRId64 " sees no key", empty);
	float *s = malloc((size_t)(pos + T) * sizeof *s);
	if (!s)
		return ref_fail(err, "masked_attention", "out of memory");
	for (int64_t t = 0; t < T; t++)
		for (int64_t j = 0; j < hq; j++)
			attend_masked(q + (t * hq + j) * d, k, v, mask + t * C, y + (t * hq + j) * dv, s, pos + t + 1,
				      hk, d, dv, j / (hq / hk), scale);
	free(s);
	return true;
}
