/* The tokenizer's insides, shared by its files (runtime/tokenizer*.c) and
 * nobody else:
 *   tokenizer_map.c   hash maps: string -> entry, id pair -> merge
 *   tokenizer_load.c  tokenizer.json -> struct halo_tokenizer, refusals
 *   tokenizer_text.c  UTF-8, normalizers, added-token split, pre-tokenizers
 *   tokenizer_bpe.c   the BPE model with its cache
 *   tokenizer.c       encode / decode pipelines and the public look-ups */
#ifndef HALO_RUNTIME_TOKENIZER_IMPL_H
#define HALO_RUNTIME_TOKENIZER_IMPL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/tokenizer.h"

#define TK_NONE UINT32_MAX

/* ---- tokenizer_map.c ---- */

/* Strings -> dense entry indices (0, 1, ... in insertion order); callers keep
 * values in arrays indexed by entry. The map owns copies of the keys. */
typedef struct {
	char *keys;
	size_t keys_len, keys_cap;
	uint32_t *key_off, *key_len;
	uint32_t n, entries_cap;
	uint32_t *slots; /* entry + 1, 0 when empty */
	uint32_t mask;
} tk_strmap;

uint32_t tk_strmap_find(const tk_strmap *m, const char *key, size_t len);
/* Adds key (or finds it) and returns its entry, TK_NONE when out of memory. */
uint32_t tk_strmap_add(tk_strmap *m, const char *key, size_t len);
static inline const char *tk_strmap_key(const tk_strmap *m, uint32_t e) { return m->keys + m->key_off[e]; }
void tk_strmap_clear(tk_strmap *m);
void tk_strmap_free(tk_strmap *m);

/* (left id, right id) -> (rank, merged id). */
typedef struct {
	uint64_t *keys; /* left << 32 | right, UINT64_MAX when empty */
	uint32_t *rank;
	int32_t *merged;
	uint32_t n, mask;
} tk_merges;

bool tk_merges_init(tk_merges *m, size_t n_expected);
/* A pair already present takes the new rank, as a later line of `tokenizers`'
 * merges overwrites an earlier one. */
void tk_merges_put(tk_merges *m, int32_t left, int32_t right, uint32_t rank, int32_t merged);
/* The slot of (left, right), or TK_NONE. */
uint32_t tk_merges_find(const tk_merges *m, int32_t left, int32_t right);
void tk_merges_free(tk_merges *m);

/* ---- the tokenizer ---- */

enum { TK_SPLIT_ISOLATED, TK_SPLIT_REMOVED };
enum { TK_PRE_SPLIT, TK_PRE_BYTE_LEVEL };

typedef struct {
	int kind;             /* TK_PRE_* */
	pcre2_code *re;       /* Split's pattern; ByteLevel's GPT-2 pattern when use_regex */
	int behavior;         /* TK_SPLIT_* */
	bool invert;          /* Split: the pieces between matches are the matches */
	bool add_prefix_space; /* ByteLevel */
} tk_pretok;

typedef struct {
	int32_t id;
	char *content;     /* as written in tokenizer.json */
	char *match;       /* what is matched: content, or content normalized when normalized */
	size_t match_len;
	bool special, lstrip, rstrip, single_word, normalized;
} tk_added;

/* Added tokens to match, bucketed by first byte, longest first within a
 * bucket: at one position the first that matches is the longest. */
typedef struct {
	uint32_t *order;     /* indices into added[] */
	uint32_t start[257]; /* bucket b is order[start[b] .. start[b + 1]) */
} tk_added_index;

enum { TK_CACHE_MAX_ENTRIES = 1u << 16 };

struct halo_tokenizer {
	char *label;
	/* normalizers: utf8proc option sets applied in order */
	int n_norm;
	int *norm;
	/* pre-tokenizers, applied in order */
	int n_pre;
	tk_pretok *pre;
	/* BPE model */
	tk_strmap vocab;
	int32_t *vocab_id; /* per vocab entry */
	int32_t id_end;    /* one past the largest id, added tokens included */
	uint32_t *id_entry; /* id -> vocab entry, TK_NONE for holes */
	tk_merges merges;
	int32_t char_id[512]; /* id of the one-character token U+0000..U+01FF, -1 if none */
	bool ignore_merges, fuse_unk;
	int32_t unk_id; /* -1: none */
	/* added tokens */
	int n_added;
	tk_added *added;
	int32_t *id_added; /* id -> index into added, -1 if not an added token */
	tk_added_index raw_index, norm_index;
	pcre2_code *word_char_re; /* Rust's char::is_alphanumeric, for single_word */
	/* decoder */
	bool byte_level_decoder;
	/* encode state: pre-token -> ids cache, PCRE2 match data */
	tk_strmap cache;
	uint32_t *cache_start, *cache_count, cache_vals_cap;
	int32_t *cache_ids;
	size_t cache_ids_len, cache_ids_cap;
	pcre2_match_data *md;
	pcre2_match_context *mctx; /* match limit, JIT stack */
	pcre2_jit_stack *jit_stack;
};

/* ---- tokenizer_text.c ---- */

/* A growable byte buffer plus a list of [start, end) pieces of it. */
typedef struct {
	size_t start, end;
	int32_t added; /* index into added[] for an added-token piece, else -1 */
} tk_span;

typedef struct {
	char *buf;
	size_t len, cap;
	tk_span *sp;
	size_t n, sp_cap;
} tk_pieces;

void tk_pieces_reset(tk_pieces *p);
void tk_pieces_free(tk_pieces *p);
bool tk_pieces_push(tk_pieces *p, const char *s, size_t len, int32_t added);

/* Offset of the first byte that is not valid UTF-8, or len. */
size_t tk_utf8_invalid_at(const char *s, size_t len);
/* Decodes the code point at s (valid UTF-8), its byte length in *n. */
int32_t tk_utf8_decode(const char *s, size_t *n);
size_t tk_utf8_encode(int32_t cp, char *out);
/* Appends bytes to out as Rust's String::from_utf8_lossy: every maximal
 * invalid subpart becomes U+FFFD. */
bool tk_utf8_lossy(const uint8_t *s, size_t len, char **out, size_t *out_len);
/* GPT-2's byte <-> character table of the ByteLevel components. */
int32_t tk_byte_char(uint8_t b);
int tk_char_byte(int32_t cp); /* -1 when cp is no byte's character */

/* Normalizers in order over s; *out malloc'd. */
bool tk_normalize(const halo_tokenizer *t, const char *s, size_t len, char **out, size_t *out_len);
/* Splits s at the added tokens of index (raw or normalized), as
 * `tokenizers`' AddedVocabulary does: leftmost-longest matches, single_word,
 * lstrip and rstrip. Pieces go to out, added ones tagged. */
bool tk_split_added(halo_tokenizer *t, const tk_added_index *index, const char *s, size_t len, tk_pieces *out);
/* Runs pre-tokenizer k over every piece of in into out. */
bool tk_pretokenize(halo_tokenizer *t, const tk_pretok *p, const tk_pieces *in, tk_pieces *out);

/* ---- tokenizer_bpe.c ---- */

/* Appends the ids of one pre-token (its characters as the vocabulary spells
 * them) to *ids, through the cache. */
bool tk_bpe(halo_tokenizer *t, const char *word, size_t len, int32_t **ids, size_t *n, size_t *cap);
void tk_bpe_cache_free(halo_tokenizer *t);

/* Appends n ids to a growable array. */
bool tk_ids_append(int32_t **ids, size_t *n, size_t *cap, const int32_t *src, size_t count);

#endif
