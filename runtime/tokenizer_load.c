/* tokenizer.json -> struct halo_tokenizer. Every component and option is
 * either understood or refused with the JSON path that names it: a key this
 * reader does not know is refused too, so no option is silently ignored. */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "runtime/tokenizer_impl.h"

/* Ids above this are refused: the id tables are dense. */
#define TK_ID_LIMIT (1 << 24)
/* A pattern that needs more backtracking than this on one piece fails the
 * encode instead of running for ever. */
#define TK_MATCH_LIMIT 10000000u
/* The JIT's stack grows up to this (its default, 32 KiB, is too small for
 * long runs of one character class). */
#define TK_JIT_STACK_MAX (8u << 20)

/* GPT-2's split, what ByteLevel's use_regex applies. */
static const char gpt2_pattern[] =
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

typedef struct {
	halo_tokenizer *t;
	const char *label;
	char *err;
	size_t errlen;
} load_ctx;

typedef char json_path[256];

static bool fail(load_ctx *c, const char *path, const char *fmt, ...)
{
	char msg[320];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(c->err, c->errlen, "%s: %s%s%s", c->label, path, *path ? ": " : "", msg);
	return false;
}

static bool oom(load_ctx *c) { return fail(c, "", "out of memory"); }

/* Paths longer than a json_path are cut short: messages stay readable. */
static void sub_key(json_path out, const char *path, const char *key)
{
	if (snprintf(out, sizeof(json_path), "%s%s%s", path, *path ? "." : "", key) < 0)
		out[0] = '\0';
}

static void sub_index(json_path out, const char *path, size_t i)
{
	if (snprintf(out, sizeof(json_path), "%s[%zu]", path, i) < 0)
		out[0] = '\0';
}

static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* Refuses keys outside allowed (NULL-terminated). */
static bool known_keys(load_ctx *c, json_object *o, const char *path, const char *const *allowed)
{
	json_object_object_foreach(o, key, val)
	{
		(void)val;
		size_t k = 0;
		while (allowed[k] && strcmp(allowed[k], key) != 0)
			k++;
		if (!allowed[k]) {
			json_path p;
			sub_key(p, path, key);
			return fail(c, p, "unknown key, not supported");
		}
	}
	return true;
}

static bool want(load_ctx *c, json_object *o, const char *path, json_type type)
{
	if (json_object_is_type(o, type))
		return true;
	return fail(c, path, "expected %s, found %s", json_type_to_name(type), json_type_to_name(json_object_get_type(o)));
}

/* A bool member: dflt when absent or null. */
static bool get_bool(load_ctx *c, json_object *o, const char *path, const char *key, bool dflt, bool *out)
{
	json_object *v = member(o, key);
	json_path p;
	sub_key(p, path, key);
	*out = v ? json_object_get_boolean(v) : dflt;
	return !v || want(c, v, p, json_type_boolean);
}

/* A string member: NULL when absent or null. */
static bool get_str(load_ctx *c, json_object *o, const char *path, const char *key, const char **out)
{
	json_object *v = member(o, key);
	json_path p;
	sub_key(p, path, key);
	*out = v ? json_object_get_string(v) : NULL;
	return !v || want(c, v, p, json_type_string);
}

/* A member that must be absent or null: what a non-null value asks for is
 * not implemented. */
static bool want_null(load_ctx *c, json_object *o, const char *path, const char *key)
{
	json_path p;
	sub_key(p, path, key);
	return !member(o, key) || fail(c, p, "only null is supported");
}

/* A member that must be absent, null or "". */
static bool want_empty_str(load_ctx *c, json_object *o, const char *path, const char *key)
{
	const char *s;
	json_path p;
	sub_key(p, path, key);
	return get_str(c, o, path, key, &s) && (!s || !*s || fail(c, p, "'%s' is not supported, only \"\"", s));
}

/* The component's "type", checked against the names a table knows. */
static bool get_type(load_ctx *c, json_object *o, const char *path, const char *const *names, int *which)
{
	json_path p;
	sub_key(p, path, "type");
	const char *type;
	if (!want(c, o, path, json_type_object) || !get_str(c, o, path, "type", &type))
		return false;
	if (!type)
		return fail(c, p, "missing");
	for (*which = 0; names[*which]; (*which)++)
		if (strcmp(names[*which], type) == 0)
			return true;
	return fail(c, p, "'%s' is not supported", type);
}

/* A Sequence component: {"type": "Sequence", key: [...]}, each item read
 * by read_item at its own JSON path, in order. */
static bool read_sequence(load_ctx *c, json_object *o, const char *path, const char *key,
			  bool (*read_item)(load_ctx *c, json_object *o, const char *path))
{
	const char *const keys[] = {"type", key, NULL};
	json_path p;
	sub_key(p, path, key);
	json_object *list = member(o, key);
	if (!known_keys(c, o, path, keys))
		return false;
	if (!list)
		return fail(c, p, "missing");
	if (!want(c, list, p, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_path q;
		sub_index(q, p, i);
		if (!read_item(c, json_object_array_get_idx(list, i), q))
			return false;
	}
	return true;
}

/* ---- normalizer ---- */

static bool read_normalizer(load_ctx *c, json_object *o, const char *path)
{
	static const char *const names[] = {"NFC", "NFD", "NFKC", "NFKD", "Sequence", NULL};
	static const int options[] = {
		UTF8PROC_STABLE | UTF8PROC_COMPOSE,
		UTF8PROC_STABLE | UTF8PROC_DECOMPOSE,
		UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT,
		UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT,
	};
	static const char *const form_keys[] = {"type", NULL};
	int which;
	if (!get_type(c, o, path, names, &which))
		return false;
	if (strcmp(names[which], "Sequence") != 0) {
		int *n = realloc(c->t->norm, ((size_t)c->t->n_norm + 1) * sizeof(*n));
		if (!n)
			return oom(c);
		c->t->norm = n;
		n[c->t->n_norm++] = options[which];
		return known_keys(c, o, path, form_keys);
	}
	return read_sequence(c, o, path, "normalizers", read_normalizer);
}

/* ---- pre-tokenizers ---- */

static bool compile_regex(load_ctx *c, const char *path, const char *pattern, size_t len, uint32_t flags,
			  pcre2_code **out)
{
	int code;
	PCRE2_SIZE at;
	/* a literal takes no character-class option */
	uint32_t ucp = flags & PCRE2_LITERAL ? 0 : PCRE2_UCP;
	*out = pcre2_compile((PCRE2_SPTR)pattern, len, PCRE2_UTF | ucp | flags, &code, &at, NULL);
	if (!*out) {
		PCRE2_UCHAR msg[160];
		pcre2_get_error_message(code, msg, sizeof msg);
		return fail(c, path, "PCRE2 cannot compile the pattern (at offset %zu): %s", (size_t)at, (char *)msg);
	}
	/* The JIT is an optimization: without it (no JIT on this CPU) the
	 * interpreter gives the same matches. */
	pcre2_jit_compile(*out, PCRE2_JIT_COMPLETE);
	return true;
}

static tk_pretok *new_pretok(load_ctx *c)
{
	tk_pretok *p = realloc(c->t->pre, ((size_t)c->t->n_pre + 1) * sizeof(*p));
	if (!p)
		return NULL;
	c->t->pre = p;
	p += c->t->n_pre++;
	*p = (tk_pretok){.behavior = TK_SPLIT_ISOLATED};
	return p;
}

static bool read_split(load_ctx *c, json_object *o, const char *path, tk_pretok *p)
{
	static const char *const keys[] = {"type", "pattern", "behavior", "invert", NULL};
	static const char *const pattern_keys[] = {"Regex", "String", NULL};
	static const char *const behaviors[] = {"Isolated", "Removed", NULL};
	json_path pp, bp;
	sub_key(pp, path, "pattern");
	sub_key(bp, path, "behavior");
	json_object *pat = member(o, "pattern"), *beh = member(o, "behavior");
	if (!known_keys(c, o, path, keys) || !get_bool(c, o, path, "invert", false, &p->invert))
		return false;
	if (!pat || !beh)
		return fail(c, pat ? bp : pp, "missing");
	if (!want(c, pat, pp, json_type_object) || !known_keys(c, pat, pp, pattern_keys))
		return false;
	if (json_object_object_length(pat) != 1)
		return fail(c, pp, "wants one of Regex or String");
	const char *re, *lit;
	if (!get_str(c, pat, pp, "Regex", &re) || !get_str(c, pat, pp, "String", &lit) ||
	    !want(c, beh, bp, json_type_string))
		return false;
	p->behavior = -1;
	for (int k = 0; behaviors[k]; k++)
		if (strcmp(behaviors[k], json_object_get_string(beh)) == 0)
			p->behavior = k;
	if (p->behavior < 0)
		return fail(c, bp, "'%s' is not supported", json_object_get_string(beh));
	json_path rp;
	sub_key(rp, pp, re ? "Regex" : "String");
	json_object *s = member(pat, re ? "Regex" : "String");
	return compile_regex(c, rp, json_object_get_string(s), (size_t)json_object_get_string_len(s),
			     re ? 0 : PCRE2_LITERAL, &p->re);
}

/* ByteLevel's options as `tokenizers` defines them (all default true);
 * trim_offsets moves offsets only, never ids. */
static bool read_byte_level(load_ctx *c, json_object *o, const char *path, bool *add_prefix_space, bool *use_regex)
{
	static const char *const keys[] = {"type", "add_prefix_space", "trim_offsets", "use_regex", NULL};
	bool trim;
	return known_keys(c, o, path, keys) && get_bool(c, o, path, "add_prefix_space", true, add_prefix_space) &&
	       get_bool(c, o, path, "trim_offsets", true, &trim) && get_bool(c, o, path, "use_regex", true, use_regex);
}

static bool read_pre_tokenizer(load_ctx *c, json_object *o, const char *path)
{
	static const char *const names[] = {"Split", "ByteLevel", "Sequence", NULL};
	int which;
	if (!get_type(c, o, path, names, &which))
		return false;
	if (which == 2)
		return read_sequence(c, o, path, "pretokenizers", read_pre_tokenizer);
	tk_pretok *p = new_pretok(c);
	if (!p)
		return oom(c);
	if (which == 0) {
		p->kind = TK_PRE_SPLIT;
		return read_split(c, o, path, p);
	}
	p->kind = TK_PRE_BYTE_LEVEL;
	bool use_regex;
	return read_byte_level(c, o, path, &p->add_prefix_space, &use_regex) &&
	       (!use_regex || compile_regex(c, path, gpt2_pattern, sizeof gpt2_pattern - 1, 0, &p->re));
}

/* ---- model ---- */

static bool get_id(load_ctx *c, json_object *v, const char *path, int32_t *id)
{
	if (!want(c, v, path, json_type_int))
		return false;
	int64_t x = json_object_get_int64(v);
	if (x < 0 || x >= TK_ID_LIMIT)
		return fail(c, path, "id %lld is out of range [0, %d)", (long long)x, TK_ID_LIMIT);
	*id = (int32_t)x;
	if (*id >= c->t->id_end)
		c->t->id_end = *id + 1;
	return true;
}

static bool valid_text(load_ctx *c, const char *path, const char *s, size_t len)
{
	return tk_utf8_invalid_at(s, len) == len || fail(c, path, "not valid UTF-8");
}

static bool read_vocab(load_ctx *c, json_object *vocab, const char *path)
{
	halo_tokenizer *t = c->t;
	if (!want(c, vocab, path, json_type_object))
		return false;
	size_t n = (size_t)json_object_object_length(vocab);
	if (!(t->vocab_id = malloc((n + 1) * sizeof(*t->vocab_id))))
		return oom(c);
	json_object_object_foreach(vocab, key, val)
	{
		json_path p;
		sub_key(p, path, key);
		size_t len = strlen(key); /* json-c keys end at a NUL; tokens with one cannot be matched anyway */
		uint32_t e = tk_strmap_add(&t->vocab, key, len);
		if (e == TK_NONE)
			return oom(c);
		if (!valid_text(c, p, key, len) || !get_id(c, val, p, &t->vocab_id[e]))
			return false;
	}
	return true;
}

/* id -> vocab entry, refusing two tokens with one id (decode could not
 * tell which to give). */
static bool index_ids(load_ctx *c, const char *path)
{
	halo_tokenizer *t = c->t;
	if (!(t->id_entry = malloc(((size_t)t->id_end + 1) * sizeof(*t->id_entry))))
		return oom(c);
	memset(t->id_entry, 0xff, ((size_t)t->id_end + 1) * sizeof(*t->id_entry));
	for (uint32_t e = 0; e < t->vocab.n; e++) {
		uint32_t *slot = &t->id_entry[t->vocab_id[e]];
		if (*slot != TK_NONE)
			return fail(c, path, "'%s' and '%s' both have id %d", tk_strmap_key(&t->vocab, *slot),
				    tk_strmap_key(&t->vocab, e), t->vocab_id[e]);
		*slot = e;
	}
	for (int32_t cp = 0; cp < 512; cp++) {
		char u[4];
		uint32_t e = tk_strmap_find(&t->vocab, u, tk_utf8_encode(cp, u));
		t->char_id[cp] = e == TK_NONE ? -1 : t->vocab_id[e];
	}
	return true;
}

static int32_t vocab_lookup(const halo_tokenizer *t, const char *s, size_t len)
{
	uint32_t e = tk_strmap_find(&t->vocab, s, len);
	return e == TK_NONE ? -1 : t->vocab_id[e];
}

/* One merge: "a b" (exactly one space) or ["a", "b"]. */
static bool merge_parts(load_ctx *c, json_object *m, const char *path, const char **a, size_t *alen, const char **b,
			size_t *blen)
{
	*a = *b = "";
	*alen = *blen = 0;
	if (json_object_is_type(m, json_type_string)) {
		const char *s = json_object_get_string(m), *sp = strchr(s, ' ');
		if (!sp || strchr(sp + 1, ' '))
			return fail(c, path, "'%s' is not two tokens separated by one space", s);
		*a = s;
		*alen = (size_t)(sp - s);
		*b = sp + 1;
		*blen = strlen(sp + 1);
		return true;
	}
	if (!json_object_is_type(m, json_type_array) || json_object_array_length(m) != 2 ||
	    !json_object_is_type(json_object_array_get_idx(m, 0), json_type_string) ||
	    !json_object_is_type(json_object_array_get_idx(m, 1), json_type_string))
		return fail(c, path, "a merge is \"a b\" or [\"a\", \"b\"]");
	*a = json_object_get_string(json_object_array_get_idx(m, 0));
	*alen = (size_t)json_object_get_string_len(json_object_array_get_idx(m, 0));
	*b = json_object_get_string(json_object_array_get_idx(m, 1));
	*blen = (size_t)json_object_get_string_len(json_object_array_get_idx(m, 1));
	return true;
}

static bool read_merges(load_ctx *c, json_object *merges, const char *path)
{
	halo_tokenizer *t = c->t;
	if (!want(c, merges, path, json_type_array))
		return false;
	size_t n = json_object_array_length(merges);
	if (!tk_merges_init(&t->merges, n))
		return oom(c);
	char *joined = NULL;
	size_t joined_cap = 0;
	bool ok = true;
	for (size_t i = 0; ok && i < n; i++) {
		json_path p;
		sub_index(p, path, i);
		const char *a, *b;
		size_t alen, blen;
		if (!(ok = merge_parts(c, json_object_array_get_idx(merges, i), p, &a, &alen, &b, &blen)))
			break;
		if (alen + blen > joined_cap) {
			joined_cap = 2 * (alen + blen);
			char *j = realloc(joined, joined_cap);
			if (!(ok = j != NULL || oom(c)))
				break;
			joined = j;
		}
		memcpy(joined, a, alen);
		memcpy(joined + alen, b, blen);
		int32_t ia = vocab_lookup(t, a, alen), ib = vocab_lookup(t, b, blen),
			im = vocab_lookup(t, joined, alen + blen);
		if (ia < 0 || ib < 0 || im < 0)
			ok = fail(c, p, "'%.*s' is not in the vocab", (int)(ia < 0 ? alen : ib < 0 ? blen : alen + blen),
				  ia < 0 ? a : ib < 0 ? b : joined);
		else
			tk_merges_put(&t->merges, ia, ib, (uint32_t)i, im);
	}
	free(joined);
	return ok;
}

static bool read_model(load_ctx *c, json_object *o, const char *path)
{
	static const char *const names[] = {"BPE", NULL};
	static const char *const keys[] = {"type",	 "dropout",	 "unk_token",	  "continuing_subword_prefix",
					   "end_of_word_suffix", "fuse_unk", "byte_fallback", "ignore_merges",
					   "vocab",	 "merges",	 NULL};
	halo_tokenizer *t = c->t;
	int which;
	bool byte_fallback;
	const char *unk;
	json_object *vocab = member(o, "vocab"), *merges = member(o, "merges");
	json_path vp, mp, up;
	sub_key(vp, path, "vocab");
	sub_key(mp, path, "merges");
	sub_key(up, path, "unk_token");
	if (!get_type(c, o, path, names, &which) || !known_keys(c, o, path, keys) ||
	    !want_null(c, o, path, "dropout") || !want_empty_str(c, o, path, "continuing_subword_prefix") ||
	    !want_empty_str(c, o, path, "end_of_word_suffix") ||
	    !get_bool(c, o, path, "byte_fallback", false, &byte_fallback) ||
	    !get_bool(c, o, path, "fuse_unk", false, &t->fuse_unk) ||
	    !get_bool(c, o, path, "ignore_merges", false, &t->ignore_merges) || !get_str(c, o, path, "unk_token", &unk))
		return false;
	if (byte_fallback) {
		json_path p;
		sub_key(p, path, "byte_fallback");
		return fail(c, p, "true is not supported");
	}
	if (!vocab || !merges)
		return fail(c, vocab ? mp : vp, "missing");
	if (!read_vocab(c, vocab, vp) || !read_merges(c, merges, mp))
		return false;
	t->unk_id = unk ? vocab_lookup(t, unk, strlen(unk)) : -1;
	return !unk || t->unk_id >= 0 || fail(c, up, "'%s' is not in the vocab", unk);
}

/* ---- added tokens ---- */

static bool read_added_token(load_ctx *c, json_object *o, const char *path, tk_added *a)
{
	static const char *const keys[] = {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special",
					   NULL};
	json_path ip, cp;
	sub_key(ip, path, "id");
	sub_key(cp, path, "content");
	json_object *id = member(o, "id"), *content = member(o, "content");
	if (!want(c, o, path, json_type_object) || !known_keys(c, o, path, keys))
		return false;
	if (!id || !content)
		return fail(c, id ? cp : ip, "missing");
	if (!get_id(c, id, ip, &a->id) || !want(c, content, cp, json_type_string) ||
	    !get_bool(c, o, path, "special", false, &a->special) ||
	    !get_bool(c, o, path, "normalized", !a->special, &a->normalized) ||
	    !get_bool(c, o, path, "lstrip", false, &a->lstrip) || !get_bool(c, o, path, "rstrip", false, &a->rstrip) ||
	    !get_bool(c, o, path, "single_word", false, &a->single_word))
		return false;
	size_t len = (size_t)json_object_get_string_len(content);
	if (len == 0)
		return fail(c, cp, "empty");
	if (!valid_text(c, cp, json_object_get_string(content), len))
		return false;
	if (memchr(json_object_get_string(content), 0, len))
		return fail(c, cp, "contains a NUL character");
	if (!(a->content = malloc(len + 1)))
		return oom(c);
	memcpy(a->content, json_object_get_string(content), len + 1);
	/* a normalized token is looked for in normalized text, so in its
	 * normalized form */
	if (a->normalized)
		return tk_normalize(c->t, a->content, len, &a->match, &a->match_len) || oom(c);
	a->match = a->content;
	a->match_len = len;
	return true;
}

static int by_match_len_desc(const void *x, const void *y, void *added)
{
	const tk_added *a = added;
	size_t lx = a[*(const uint32_t *)x].match_len, ly = a[*(const uint32_t *)y].match_len;
	return (lx < ly) - (lx > ly);
}

static bool build_index(load_ctx *c, tk_added_index *ix, bool normalized)
{
	halo_tokenizer *t = c->t;
	if (!(ix->order = malloc(((size_t)t->n_added + 1) * sizeof(*ix->order))))
		return oom(c);
	uint32_t n = 0;
	memset(ix->start, 0, sizeof ix->start);
	for (int b = 0; b < 256; b++) {
		ix->start[b] = n;
		for (int k = 0; k < t->n_added; k++)
			if (t->added[k].normalized == normalized && (uint8_t)t->added[k].match[0] == b)
				ix->order[n++] = (uint32_t)k;
		qsort_r(ix->order + ix->start[b], n - ix->start[b], sizeof(*ix->order), by_match_len_desc, t->added);
	}
	ix->start[256] = n;
	return true;
}

/* `tokenizers` does not take an added token's id from the file: it gives
 * the vocab's id when the content is in the vocab, else the next id after
 * the vocab (counted in entries) and the added tokens before it; a content
 * seen before is dropped. A file that says otherwise would not decode the
 * same here and there, so it is refused. */
static bool check_added(load_ctx *c, const char *path, int k, int32_t *max_id)
{
	const halo_tokenizer *t = c->t;
	const tk_added *a = &t->added[k];
	json_path p;
	for (int j = 0; j < k; j++)
		if (strcmp(t->added[j].content, a->content) == 0) {
			sub_key(p, path, "content");
			return fail(c, p, "'%s' is also added_tokens[%d]'s", a->content, j);
		}
	int32_t vsize = (int32_t)t->vocab.n, want = vocab_lookup(t, a->content, strlen(a->content));
	if (want < 0)
		want = *max_id < 0 ? vsize : *max_id >= vsize || vsize == 0 ? *max_id + 1 : vsize;
	if (want > *max_id)
		*max_id = want;
	sub_key(p, path, "id");
	return a->id == want || fail(c, p, "%d, but tokenizers gives '%s' id %d", a->id, a->content, want);
}

static bool read_added_tokens(load_ctx *c, json_object *list, const char *path)
{
	halo_tokenizer *t = c->t;
	if (!list)
		return build_index(c, &t->raw_index, false) && build_index(c, &t->norm_index, true);
	if (!want(c, list, path, json_type_array))
		return false;
	size_t n = json_object_array_length(list);
	int32_t max_id = -1;
	if (!(t->added = calloc(n + 1, sizeof(*t->added))))
		return oom(c);
	for (size_t i = 0; i < n; i++) {
		json_path p;
		sub_index(p, path, i);
		t->n_added++; /* counted first: what a failed read allocated is freed */
		if (!read_added_token(c, json_object_array_get_idx(list, i), p, &t->added[i]) ||
		    !check_added(c, p, (int)i, &max_id))
			return false;
	}
	return build_index(c, &t->raw_index, false) && build_index(c, &t->norm_index, true);
}

/* id -> added token, after the model so that id_end covers both. */
static bool index_added(load_ctx *c, const char *path)
{
	halo_tokenizer *t = c->t;
	if (!(t->id_added = malloc(((size_t)t->id_end + 1) * sizeof(*t->id_added))))
		return oom(c);
	memset(t->id_added, 0xff, ((size_t)t->id_end + 1) * sizeof(*t->id_added));
	for (int k = 0; k < t->n_added; k++) {
		int32_t *slot = &t->id_added[t->added[k].id];
		if (*slot >= 0) {
			json_path p;
			sub_index(p, path, (size_t)k);
			return fail(c, p, "id %d is also added_tokens[%d]'s", t->added[k].id, *slot);
		}
		*slot = k;
	}
	return true;
}

/* ---- post-processor and decoder ---- */

/* ByteLevel as a post-processor only trims offsets: the ids stay. */
static bool read_post_processor(load_ctx *c, json_object *o, const char *path)
{
	static const char *const names[] = {"ByteLevel", NULL};
	int which;
	bool prefix, regex;
	return !o || (get_type(c, o, path, names, &which) && read_byte_level(c, o, path, &prefix, &regex));
}

/* ByteLevel as a decoder maps characters back to bytes whatever its options. */
static bool read_decoder(load_ctx *c, json_object *o, const char *path)
{
	static const char *const names[] = {"ByteLevel", NULL};
	int which;
	bool prefix, regex;
	c->t->byte_level_decoder = o != NULL;
	return !o || (get_type(c, o, path, names, &which) && read_byte_level(c, o, path, &prefix, &regex));
}

/* ---- the whole file ---- */

static bool read_root(load_ctx *c, json_object *root)
{
	static const char *const keys[] = {"version", "truncation", "padding", "added_tokens", "normalizer",
					   "pre_tokenizer", "post_processor", "decoder", "model", NULL};
	json_object *model = member(root, "model"), *norm = member(root, "normalizer"), *pre = member(root, "pre_tokenizer");
	if (!want(c, root, "(top level)", json_type_object) || !known_keys(c, root, "", keys) ||
	    !want_null(c, root, "", "truncation") || !want_null(c, root, "", "padding"))
		return false;
	if (!model)
		return fail(c, "model", "missing");
	/* added tokens are normalized with the normalizers, so those come first */
	return (!norm || read_normalizer(c, norm, "normalizer")) && (!pre || read_pre_tokenizer(c, pre, "pre_tokenizer")) &&
	       read_model(c, model, "model") && read_added_tokens(c, member(root, "added_tokens"), "added_tokens") &&
	       index_ids(c, "model.vocab") && index_added(c, "added_tokens") &&
	       read_post_processor(c, member(root, "post_processor"), "post_processor") &&
	       read_decoder(c, member(root, "decoder"), "decoder");
}

static json_object *parse_json(load_ctx *c, const char *s, size_t size)
{
	if (size > INT32_MAX) {
		fail(c, "", "%zu bytes is too large", size);
		return NULL;
	}
	json_tokener *tok = json_tokener_new_ex(64);
	if (!tok) {
		oom(c);
		return NULL;
	}
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	json_object *root = json_tokener_parse_ex(tok, s, (int)size);
	enum json_tokener_error e = json_tokener_get_error(tok);
	size_t at = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (root && at < size && strchr(" \t\r\n", s[at]) && s[at])
		at++;
	if (!root || e != json_tokener_success || at < size) {
		/* json-c calls a text that ends too early "continue" */
		const char *why = e == json_tokener_continue ? "unexpected end of data"
				  : e == json_tokener_success ? "trailing bytes"
							      : json_tokener_error_desc(e);
		fail(c, "", "malformed JSON at byte %zu: %s", at, why);
		json_object_put(root);
		return NULL;
	}
	return root;
}

/* What single_word calls a word character (Rust's char::is_alphanumeric),
 * and the limits every match runs under. */
static bool match_setup(load_ctx *c)
{
	static const char word_char[] = "[\\p{Alphabetic}\\p{N}]";
	halo_tokenizer *t = c->t;
	if (!compile_regex(c, "", word_char, sizeof word_char - 1, 0, &t->word_char_re))
		return false;
	t->md = pcre2_match_data_create(1, NULL);
	t->mctx = pcre2_match_context_create(NULL);
	t->jit_stack = pcre2_jit_stack_create(32 << 10, TK_JIT_STACK_MAX, NULL);
	if (!t->md || !t->mctx || !t->jit_stack)
		return oom(c);
	pcre2_set_match_limit(t->mctx, TK_MATCH_LIMIT);
	pcre2_jit_stack_assign(t->mctx, NULL, t->jit_stack);
	return true;
}

halo_tokenizer *halo_tokenizer_load_mem(const void *json, size_t size, const char *label, char *err, size_t errlen)
{
	halo_tokenizer *t = calloc(1, sizeof(*t));
	load_ctx c = {t, label, err, errlen};
	err[0] = '\0';
	if (!t || !(t->label = strdup(label))) {
		free(t);
		snprintf(err, errlen, "%s: out of memory", label);
		return NULL;
	}
	t->unk_id = -1;
	json_object *root = parse_json(&c, json, size);
	bool ok = root && read_root(&c, root) && match_setup(&c);
	json_object_put(root);
	if (!ok) {
		halo_tokenizer_free(t);
		return NULL;
	}
	return t;
}

halo_tokenizer *halo_tokenizer_load(const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	bool ok = true;
	while (ok) {
		if (len == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			char *b = realloc(buf, cap);
			if (!(ok = b != NULL))
				break;
			buf = b;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	ok = ok && !ferror(f);
	fclose(f);
	halo_tokenizer *t = NULL;
	if (ok)
		t = halo_tokenizer_load_mem(buf, len, path, err, errlen);
	else
		snprintf(err, errlen, "%s: cannot read: %s", path, buf ? strerror(errno) : "out of memory");
	free(buf);
	return t;
}
