/* Open-addressing hash maps for the tokenizer: vocabulary and cache keys are
 * strings, merge ranks are keyed by id pairs. Linear probing at a load of at
 * most one half keeps look-ups to a probe or two. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "runtime/tokenizer_impl.h"

static uint32_t slot_of(uint64_t h, uint32_t mask) { return (uint32_t)(h ^ (h >> 32)) & mask; }

uint32_t tk_strmap_find(const tk_strmap *m, const char *key, size_t len)
{
	if (!m->slots)
		return TK_NONE;
	for (uint32_t s = slot_of(XXH3_64bits(key, len), m->mask);; s = (s + 1) & m->mask) {
		uint32_t e = m->slots[s];
		if (e == 0)
			return TK_NONE;
		e--;
		if (m->key_len[e] == len && memcmp(m->keys + m->key_off[e], key, len) == 0)
			return e;
	}
}

static bool grow_slots(tk_strmap *m)
{
	uint32_t cap = m->slots ? (m->mask + 1) * 2 : 64;
	uint32_t *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return false;
	for (uint32_t e = 0; e < m->n; e++) {
		uint32_t s = slot_of(XXH3_64bits(m->keys + m->key_off[e], m->key_len[e]), cap - 1);
		while (slots[s])
			s = (s + 1) & (cap - 1);
		slots[s] = e + 1;
	}
	free(m->slots);
	m->slots = slots;
	m->mask = cap - 1;
	return true;
}

static bool reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

uint32_t tk_strmap_add(tk_strmap *m, const char *key, size_t len)
{
	uint32_t e = tk_strmap_find(m, key, len);
	if (e != TK_NONE)
		return e;
	if (len >= UINT32_MAX || m->n >= UINT32_MAX / 4 || m->keys_len + len + 1 >= UINT32_MAX)
		return TK_NONE;
	if ((!m->slots || (m->n + 1) * 2 > m->mask + 1) && !grow_slots(m))
		return TK_NONE;
	size_t ecap = m->entries_cap, ecap2 = m->entries_cap;
	if (!reserve((void **)&m->key_off, &ecap, m->n + 1, sizeof(uint32_t)) ||
	    !reserve((void **)&m->key_len, &ecap2, m->n + 1, sizeof(uint32_t)) ||
	    !reserve((void **)&m->keys, &m->keys_cap, m->keys_len + len + 1, 1))
		return TK_NONE;
	m->entries_cap = (uint32_t)ecap;
	e = m->n++;
	m->key_off[e] = (uint32_t)m->keys_len;
	m->key_len[e] = (uint32_t)len;
	memcpy(m->keys + m->keys_len, key, len);
	m->keys[m->keys_len + len] = '\0'; /* keys read back as C strings */
	m->keys_len += len + 1;
	uint32_t s = slot_of(XXH3_64bits(key, len), m->mask);
	while (m->slots[s])
		s = (s + 1) & m->mask;
	m->slots[s] = e + 1;
	return e;
}

void tk_strmap_clear(tk_strmap *m)
{
	if (m->slots)
		memset(m->slots, 0, ((size_t)m->mask + 1) * sizeof(*m->slots));
	m->n = 0;
	m->keys_len = 0;
}

void tk_strmap_free(tk_strmap *m)
{
	free(m->keys);
	free(m->key_off);
	free(m->key_len);
	free(m->slots);
	*m = (tk_strmap){0};
}

static uint64_t pair_key(int32_t left, int32_t right) { return (uint64_t)(uint32_t)left << 32 | (uint32_t)right; }

bool tk_merges_init(tk_merges *m, size_t n_expected)
{
	size_t cap = 64;
	while (cap < n_expected * 2)
		cap *= 2;
	m->keys = malloc(cap * sizeof(*m->keys));
	m->rank = malloc(cap * sizeof(*m->rank));
	m->merged = malloc(cap * sizeof(*m->merged));
	m->mask = (uint32_t)(cap - 1);
	m->n = 0;
	if (!m->keys || !m->rank || !m->merged)
		return false;
	memset(m->keys, 0xff, cap * sizeof(*m->keys));
	return true;
}

static uint32_t probe(const tk_merges *m, uint64_t key)
{
	uint32_t s = slot_of(XXH3_64bits(&key, sizeof key), m->mask);
	while (m->keys[s] != UINT64_MAX && m->keys[s] != key)
		s = (s + 1) & m->mask;
	return s;
}

void tk_merges_put(tk_merges *m, int32_t left, int32_t right, uint32_t rank, int32_t merged)
{
	uint64_t key = pair_key(left, right);
	uint32_t s = probe(m, key);
	m->n += m->keys[s] == UINT64_MAX;
	m->keys[s] = key;
	m->rank[s] = rank;
	m->merged[s] = merged;
}

uint32_t tk_merges_find(const tk_merges *m, int32_t left, int32_t right)
{
	uint32_t s = probe(m, pair_key(left, right));
	return m->keys[s] == UINT64_MAX ? TK_NONE : s;
}

void tk_merges_free(tk_merges *m)
{
	free(m->keys);
	free(m->rank);
	free(m->merged);
	*m = (tk_merges){0};
}
