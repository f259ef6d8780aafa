/* The BPE model over one pre-token, as `tokenizers`' Word::merge_all does
 * it: the word starts as one symbol per character; a min-heap of adjacent
 * pairs keyed by (merge rank, position) picks the next merge, symbols form
 * a linked list so a merge is O(log n), and heap entries a merge made stale
 * are skipped when they surface. Results are cached per pre-token. */
#include <stdlib.h>
#include <string.h>

#include "runtime/tokenizer_impl.h"

/* `tokenizers` caches words of up to this many bytes. */
enum { CACHE_WORD_MAX = 256 };

bool tk_ids_append(int32_t **ids, size_t *n, size_t *cap, const int32_t *src, size_t count)
{
	if (*n + count > *cap) {
		size_t c = *cap ? *cap : 64;
		while (c < *n + count)
			c *= 2;
		int32_t *q = realloc(*ids, c * sizeof(*q));
		if (!q)
			return false;
		*ids = q;
		*cap = c;
	}
	if (count)
		memcpy(*ids + *n, src, count * sizeof(*src));
	*n += count;
	return true;
}

typedef struct {
	uint32_t rank, pos;
	int32_t merged;
} merge_cand;

static bool cand_less(const merge_cand *a, const merge_cand *b)
{
	return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

typedef struct {
	int32_t *id;
	int32_t *next, *prev; /* -1 at the ends */
	merge_cand *heap;
	size_t n_heap;
} word;

static void heap_push(word *w, merge_cand c)
{
	size_t i = w->n_heap++;
	while (i > 0 && cand_less(&c, &w->heap[(i - 1) / 2])) {
		w->heap[i] = w->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	w->heap[i] = c;
}

static merge_cand heap_pop(word *w)
{
	merge_cand top = w->heap[0], last = w->heap[--w->n_heap];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= w->n_heap)
			break;
		if (c + 1 < w->n_heap && cand_less(&w->heap[c + 1], &w->heap[c]))
			c++;
		if (!cand_less(&w->heap[c], &last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (w->n_heap)
		w->heap[i] = last;
	return top;
}

static void push_pair(const halo_tokenizer *t, word *w, int32_t pos)
{
	if (pos < 0 || w->next[pos] < 0)
		return;
	uint32_t s = tk_merges_find(&t->merges, w->id[pos], w->id[w->next[pos]]);
	if (s != TK_NONE)
		heap_push(w, (merge_cand){t->merges.rank[s], (uint32_t)pos, t->merges.merged[s]});
}

static void merge_all(const halo_tokenizer *t, word *w, int32_t n)
{
	for (int32_t i = 0; i + 1 < n; i++)
		push_pair(t, w, i);
	while (w->n_heap) {
		merge_cand c = heap_pop(w);
		int32_t pos = (int32_t)c.pos, right = w->next[pos];
		if (w->id[pos] < 0 || right < 0)
			continue;
		uint32_t s = tk_merges_find(&t->merges, w->id[pos], w->id[right]);
		if (s == TK_NONE || t->merges.merged[s] != c.merged)
			continue; /* the pair changed since this entry was pushed */
		w->id[pos] = c.merged;
		w->id[right] = -1;
		w->next[pos] = w->next[right];
		if (w->next[pos] >= 0)
			w->prev[w->next[pos]] = pos;
		push_pair(t, w, w->prev[pos]);
		push_pair(t, w, pos);
	}
}

/* The id of the one-character token at s, -1 if the vocabulary lacks it;
 * its byte length in *cl. */
static int32_t char_token(const halo_tokenizer *t, const char *s, size_t *cl)
{
	int32_t cp = tk_utf8_decode(s, cl);
	if (cp < 512)
		return t->char_id[cp];
	uint32_t e = tk_strmap_find(&t->vocab, s, *cl);
	return e == TK_NONE ? -1 : t->vocab_id[e];
}

/* One symbol per character; a character the vocabulary lacks becomes the
 * unknown token (consecutive ones fused into one with fuse_unk) or, without
 * one, nothing. Returns the symbol count. */
static int32_t initial_symbols(const halo_tokenizer *t, const char *s, size_t len, word *w)
{
	int32_t n = 0;
	bool last_unk = false;
	for (size_t i = 0, cl; i < len; i += cl) {
		int32_t id = char_token(t, s + i, &cl);
		bool unk = id < 0;
		if (unk && (t->unk_id < 0 || (t->fuse_unk && last_unk)))
			continue;
		last_unk = unk;
		w->id[n] = unk ? t->unk_id : id;
		w->prev[n] = n - 1;
		w->next[n] = n + 1;
		n++;
	}
	if (n)
		w->next[n - 1] = -1;
	return n;
}

static bool bpe_word(const halo_tokenizer *t, const char *s, size_t len, int32_t **ids, size_t *n_ids, size_t *cap)
{
	if (t->ignore_merges) {
		uint32_t e = tk_strmap_find(&t->vocab, s, len);
		if (e != TK_NONE)
			return tk_ids_append(ids, n_ids, cap, &t->vocab_id[e], 1);
	}
	/* at most one symbol per byte; the heap gets the initial pairs and two
	 * per merge */
	word w = {malloc(len * sizeof(int32_t)), malloc(len * sizeof(int32_t)), malloc(len * sizeof(int32_t)),
		  malloc(3 * len * sizeof(merge_cand)), 0};
	bool ok = w.id && w.next && w.prev && w.heap;
	if (ok) {
		int32_t n = initial_symbols(t, s, len, &w);
		merge_all(t, &w, n);
		for (int32_t i = 0; ok && i < n; i++)
			if (w.id[i] >= 0)
				ok = tk_ids_append(ids, n_ids, cap, &w.id[i], 1);
	}
	free(w.id);
	free(w.next);
	free(w.prev);
	free(w.heap);
	return ok;
}

/* Ids first, then room for the entry's values, then the key: a failure
 * leaves no entry pointing at nothing. */
static bool cache_put(halo_tokenizer *t, const char *s, size_t len, const int32_t *ids, size_t n)
{
	if (t->cache.n >= TK_CACHE_MAX_ENTRIES) {
		tk_strmap_clear(&t->cache);
		t->cache_ids_len = 0;
	}
	size_t at = t->cache_ids_len;
	if (!tk_ids_append(&t->cache_ids, &t->cache_ids_len, &t->cache_ids_cap, ids, n))
		return false;
	if (t->cache_vals_cap <= t->cache.n) {
		uint32_t c = t->cache_vals_cap ? t->cache_vals_cap * 2 : 1024;
		uint32_t *st = realloc(t->cache_start, c * sizeof(*st));
		if (st)
			t->cache_start = st;
		uint32_t *ct = st ? realloc(t->cache_count, c * sizeof(*ct)) : NULL;
		if (!ct)
			return false;
		t->cache_count = ct;
		t->cache_vals_cap = c;
	}
	uint32_t e = tk_strmap_add(&t->cache, s, len);
	if (e == TK_NONE)
		return false;
	t->cache_start[e] = (uint32_t)at;
	t->cache_count[e] = (uint32_t)n;
	return true;
}

bool tk_bpe(halo_tokenizer *t, const char *s, size_t len, int32_t **ids, size_t *n, size_t *cap)
{
	uint32_t e = len <= CACHE_WORD_MAX ? tk_strmap_find(&t->cache, s, len) : TK_NONE;
	if (e != TK_NONE)
		return tk_ids_append(ids, n, cap, t->cache_ids + t->cache_start[e], t->cache_count[e]);
	size_t first = *n;
	if (!bpe_word(t, s, len, ids, n, cap))
		return false;
	return len > CACHE_WORD_MAX || cache_put(t, s, len, *ids + first, *n - first);
}

void tk_bpe_cache_free(halo_tokenizer *t)
{
	tk_strmap_free(&t->cache);
	free(t->cache_start);
	free(t->cache_count);
	free(t->cache_ids);
}
