/* DeepSeek V4's compressed sparse attention (models.md 3.5-3.7):
 * compress_kv pools each closed window of per-token projections into one
 * entry, index_topk picks the entries a query attends (the Lightning
 * indexer), sink_attention attends the sliding window and the entries with
 * a learned sink logit per head. Everything is positional: a row depends on
 * its position and the cache rows up to it, never on how the sequence was
 * cut into steps, so prefill and decode agree bit for bit. */
#include "runtime/drivers/ref/ref_error.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- compress_kv ------------------------------------------------------------ */

/* One slot of a window's softmax: a cache row and the channel offset its
 * half of the row starts at; bias row r is the slot's place in its window. */
typedef struct {
	int64_t row, col, r;
} pool_slot;

/* The slots of window wi, in the contract's order: the previous window's
 * first halves (overlap, wi > 0), then this window's rows at offset o. */
static int64_t window_slots(int64_t wi, int64_t m, int64_t D, bool overlap, pool_slot *s)
{
	int64_t n = 0, b = wi * m;
	if (overlap && wi > 0)
		for (int64_t r = 0; r < m; r++)
			s[n++] = (pool_slot){b - m + r, 0, r};
	for (int64_t r = 0; r < m; r++)
		s[n++] = (pool_slot){b + r, overlap ? D : 0, r};
	return n;
}

/* Channel d of a window's entry: softmax of the slots' gates z + bias in f32
 * (f64 denominator), then the weighted sum of their c in f64. g: n floats. */
static float pool_channel(const float *c, const float *z, const float *bias, const pool_slot *s, int64_t n,
			  int64_t N, int64_t W, int64_t d, float *g)
{
	float mx = -INFINITY;
	for (int64_t j = 0; j < n; j++) {
		g[j] = z[s[j].row % N * W + s[j].col + d] + bias[s[j].r * W + s[j].col + d];
		mx = fmaxf(mx, g[j]);
	}
	double sum = 0.0;
	for (int64_t j = 0; j < n; j++)
		sum += g[j] = expf(g[j] - mx);
	float inv = (float)(1.0 / sum);
	double acc = 0.0;
	for (int64_t j = 0; j < n; j++)
		acc += (double)(g[j] * inv) * (double)c[s[j].row % N * W + s[j].col + d];
	return (float)acc;
}

bool ref_compress_kv(const float *c, const float *z, const float *bias, float *y, int64_t T, int64_t N, int64_t D,
		     int64_t m, bool overlap, int64_t pos, ref_error *err)
{
	if (m < 1)
		return ref_fail(err, "compress_kv", "ratio %" PRId64 " must be at least 1", m);
	/* position q is row q mod N: a cache shorter than the context is a ring,
	 * which must hold the step's rows and the windows they close */
	int64_t span = T + (overlap ? 2 : 1) * m - 1;
	if (pos < 0 || (pos + T > N && span > N))
		return ref_fail(err, "compress_kv", "positions [%" PRId64 ", %" PRId64 ") with their windows need %" PRId64
				" rows, the cache holds %" PRId64, pos, pos + T, span, N);
	int64_t W = (overlap ? 2 : 1) * D;
	pool_slot *slots = malloc((size_t)(2 * m) * sizeof *slots);
	float *g = malloc((size_t)(2 * m) * sizeof *g);
	if (!slots || !g) {
		free(slots), free(g);
		return ref_fail(err, "compress_kv", "out of memory");
	}
	for (int64_t t = 0; t < T; t++) {
		int64_t p = pos + t;
		float *row = y + t * D;
		if ((p + 1) % m) {
			memset(row, 0, (size_t)D * sizeof *row);
			continue;
		}
		int64_t n = window_slots((p + 1) / m - 1, m, D, overlap, slots);
		for (int64_t d = 0; d < D; d++)
			row[d] = pool_channel(c, z, bias, slots, n, N, W, d, g);
	}
	free(slots), free(g);
	return true;
}

/* ---- index_topk ------------------------------------------------------------- */

/* Key e's score for query row t: sum over heads of w * (relu(q . key) * scale). */
static float index_score(const float *q, const float *w, const float *key, int64_t h, int64_t d, float scale)
{
	double total = 0.0;
	for (int64_t j = 0; j < h; j++) {
		double dot = 0.0;
		for (int64_t i = 0; i < d; i++)
			dot += (double)q[j * d + i] * (double)key[i];
		float r = (float)dot > 0.0f ? (float)dot : 0.0f;
		total += (double)(w[j] * (r * scale));
	}
	return (float)total;
}

/* The keys position p sees: the closed windows, at most E. */
static int64_t visible_keys(int64_t p, int64_t m, int64_t E)
{
	return (p + 1) / m < E ? (p + 1) / m : E;
}

void ref_index_score(const float *q, const float *w, const float *keys, float *scores, int64_t T, int64_t h,
		     int64_t d, int64_t E, int64_t m, float scale, int64_t pos)
{
	for (int64_t t = 0; t < T; t++) {
		int64_t n = visible_keys(pos + t, m, E);
		for (int64_t e = 0; e < E; e++)
			scores[t * E + e] = e < n ? index_score(q + t * h * d, w + t * h, keys + e * d, h, d, scale) : 0.0f;
	}
}

void ref_index_select(const float *scores, int32_t *ids, int64_t T, int64_t E, int64_t k, int64_t m, int64_t pos)
{
	float *vals = malloc((size_t)(k + 1) * sizeof *vals);
	if (!vals)
		abort(); /* no error channel here, as ref_topk; k is a compile-time dim */
	for (int64_t t = 0; t < T; t++) {
		int64_t n = visible_keys(pos + t, m, E), kk = k < n ? k : n;
		ref_topk(scores + t * E, ids + t * k, vals, 1, n, kk);
		for (int64_t i = kk; i < k; i++)
			ids[t * k + i] = -1;
	}
	free(vals);
}

/* index_topk is its scores' selection, a row at a time (scores for E keys). */
void ref_index_topk(const float *q, const float *w, const float *keys, int32_t *ids, int64_t T, int64_t h,
		    int64_t d, int64_t E, int64_t k, int64_t m, float scale, int64_t pos)
{
	float *score = malloc((size_t)(E + 1) * sizeof *score);
	if (!score)
		abort(); /* as ref_index_select */
	for (int64_t t = 0; t < T; t++) {
		ref_index_score(q + t * h * d, w + t * h, keys, score, 1, h, d, E, m, scale, pos + t);
		ref_index_select(score, ids + t * k, 1, E, k, m, pos + t);
	}
	free(score);
}

/* ---- sink_attention ------------------------------------------------------------ */

/* Collects query position p's keys: its window's cache rows, then the
 * entries it attends. seen: E flags, for repeated ids. False (with the
 * error) for entries it cannot see. */
static bool gather_keys(const ref_sink_params *p, const float *kv, const float *entries, const int32_t *ids,
			int64_t pos, int64_t D, const float **keys, int64_t *n, bool *seen, ref_error *err)
{
	int64_t closed = p->ratio > 0 ? (pos + 1) / p->ratio : 0;
	*n = 0;
	for (int64_t r = pos - p->window + 1 > 0 ? pos - p->window + 1 : 0; r <= pos; r++)
		keys[(*n)++] = kv + r % p->N * D;
	if (!entries)
		return true;
	if (!ids) {
		if (closed > p->E)
			return ref_fail(err, "sink_attention", "position %" PRId64 " sees %" PRId64
					" closed entries, the entries hold %" PRId64, pos, closed, p->E);
		for (int64_t e = 0; e < closed; e++)
			keys[(*n)++] = entries + e * D;
		return true;
	}
	memset(seen, 0, (size_t)p->E * sizeof *seen);
	for (int64_t i = 0; i < p->k; i++) {
		int64_t e = ids[i];
		if (e < 0)
			continue;
		const char *bad = e >= closed ? "not a closed entry" : e >= p->E ? "past the entries' rows"
						  : seen[e] ? "repeated" : NULL;
		if (bad)
			return ref_fail(err, "sink_attention", "id %" PRId64 " at position %" PRId64 " is %s (%" PRId64
					" closed entries, %" PRId64 " rows)", e, pos, bad, closed, p->E);
		seen[e] = true;
		keys[(*n)++] = entries + e * D;
	}
	return true;
}

/* One head of one query over n keys (K = V) and the sink logit. s: n floats. */
static void attend_sink(const float *q, const float *const *keys, int64_t n, float sink, float scale, int64_t D,
			float *y, float *s)
{
	float mx = sink;
	for (int64_t j = 0; j < n; j++) {
		double dot = 0.0;
		for (int64_t i = 0; i < D; i++)
			dot += (double)q[i] * (double)keys[j][i];
		s[j] = (float)dot * scale;
		mx = fmaxf(mx, s[j]);
	}
	double sum = 0.0;
	for (int64_t j = 0; j < n; j++)
		sum += s[j] = expf(s[j] - mx);
	sum += expf(sink - mx);
	float inv = (float)(1.0 / sum);
	for (int64_t c = 0; c < D; c++) {
		double acc = 0.0;
		for (int64_t j = 0; j < n; j++)
			acc += (double)(s[j] * inv) * (double)keys[j][c];
		y[c] = (float)acc;
	}
}

/* The "no key" max score of an empty block, as ref_attention_partial. */
#define NO_KEY_MAX (-3.0e38f)

/* Block b of one head's key list (keys lo..hi-1 of n) as sink_attention_partial
 * writes it: the sums, max and denominator, the sink in block 0 only. s:
 * block floats. */
static void attend_sink_block(const float *q, const float *const *keys, int64_t lo, int64_t hi, float sink,
			      bool with_sink, float scale, int64_t D, float *out, float *s)
{
	float mx = with_sink ? sink : NO_KEY_MAX;
	for (int64_t j = lo; j < hi; j++) {
		double dot = 0.0;
		for (int64_t i = 0; i < D; i++)
			dot += (double)q[i] * (double)keys[j][i];
		s[j - lo] = (float)dot * scale;
		mx = fmaxf(mx, s[j - lo]);
	}
	double sum = with_sink ? expf(sink - mx) : 0.0;
	for (int64_t j = lo; j < hi; j++)
		sum += s[j - lo] = expf(s[j - lo] - mx);
	for (int64_t c = 0; c < D; c++) {
		double acc = 0.0;
		for (int64_t j = lo; j < hi; j++)
			acc += (double)s[j - lo] * (double)keys[j][c];
		out[c] = (float)acc;
	}
	out[D] = mx;
	out[D + 1] = (float)sum;
}

/* One head of one query over its n keys: y [D] (sink_attention), or with
 * p->block its p->blocks blocks into y [blocks, D+2]. s: n floats. */
static void attend_head(const ref_sink_params *p, const float *q, const float *const *keys, int64_t n, float sink,
			int64_t D, float *y, float *s)
{
	if (!p->block) {
		attend_sink(q, keys, n, sink, p->scale, D, y, s);
		return;
	}
	for (int64_t b = 0; b < p->blocks; b++) {
		int64_t lo = b * p->block < n ? b * p->block : n, hi = lo + p->block < n ? lo + p->block : n;
		attend_sink_block(q, keys, lo, hi, sink, b == 0, p->scale, D, y + b * (D + 2), s);
	}
}

bool ref_sink_attention(const ref_sink_params *p, const float *q, const float *kv, const float *sinks,
			const float *entries, const int32_t *ids, float *y, int64_t T, int64_t h, int64_t D,
			int64_t pos, ref_error *err)
{
	const char *op = p->block ? "sink_attention_partial" : "sink_attention";
	/* position j is row j mod N: a cache shorter than the context is a
	 * ring, which must hold the step's rows and the window before them */
	if (pos < 0 || (pos + T > p->N && T + p->window - 1 > p->N))
		return ref_fail(err, op, "positions [%" PRId64 ", %" PRId64 ") and their window of %" PRId64
				" need %" PRId64 " rows, the cache holds %" PRId64, pos, pos + T, p->window,
				T + p->window - 1, p->N);
	if (p->window < 1 || (entries && p->ratio < 1) || p->block < 0)
		return ref_fail(err, op, "window %" PRId64 " and ratio %" PRId64 " must be at least 1, block %" PRId64
				" not negative", p->window, p->ratio, p->block);
	int64_t most = p->window + (ids ? p->k : p->E), row = p->block ? p->blocks * (D + 2) : D;
	int64_t longest = (p->window < p->N ? p->window : p->N) + (ids ? p->k : p->E);
	if (p->block && p->blocks * p->block < longest)
		return ref_fail(err, op, "%" PRId64 " blocks of %" PRId64 " keys hold fewer than the %" PRId64
				" keys a row can see", p->blocks, p->block, longest);
	const float **keys = malloc((size_t)most * sizeof *keys);
	float *s = malloc((size_t)most * sizeof *s);
	bool *seen = malloc((size_t)(p->E + 1) * sizeof *seen);
	bool ok = keys && s && seen;
	if (!ok)
		ref_fail(err, op, "out of memory");
	for (int64_t t = 0; ok && t < T; t++) {
		int64_t n;
		ok = gather_keys(p, kv, entries, ids ? ids + t * p->k : NULL, pos + t, D, keys, &n, seen, err);
		for (int64_t j = 0; ok && j < h; j++)
			attend_head(p, q + (t * h + j) * D, keys, n, sinks[j], D, y + (t * h + j) * row, s);
	}
	free(keys), free(s), free(seen);
	return ok;
}
