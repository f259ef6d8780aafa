/* The text side of the tokenizer: UTF-8, the ByteLevel byte <-> character
 * table, normalizers (utf8proc), the added-token split and the
 * pre-tokenizers (PCRE2), each as `tokenizers` defines it. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "runtime/tokenizer_impl.h"

/* ---- pieces ---- */

void tk_pieces_reset(tk_pieces *p)
{
	p->len = 0;
	p->n = 0;
}

void tk_pieces_free(tk_pieces *p)
{
	free(p->buf);
	free(p->sp);
	*p = (tk_pieces){0};
}

static bool grow(void **ptr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *q = realloc(*ptr, c * elem);
	if (!q)
		return false;
	*ptr = q;
	*cap = c;
	return true;
}

/* Opens a piece of up to max bytes at the end of the buffer; the caller
 * writes them and sets the span's end. */
static char *open_piece(tk_pieces *p, size_t max, int32_t added)
{
	if (!grow((void **)&p->buf, &p->cap, p->len + max, 1) ||
	    !grow((void **)&p->sp, &p->sp_cap, p->n + 1, sizeof(*p->sp)))
		return NULL;
	p->sp[p->n++] = (tk_span){p->len, p->len, added};
	return p->buf + p->len;
}

static void close_piece(tk_pieces *p, size_t written)
{
	p->len += written;
	p->sp[p->n - 1].end = p->len;
}

bool tk_pieces_push(tk_pieces *p, const char *s, size_t len, int32_t added)
{
	if (len == 0) /* `tokenizers` drops empty splits everywhere */
		return true;
	char *dst = open_piece(p, len, added);
	if (!dst)
		return false;
	memcpy(dst, s, len);
	close_piece(p, len);
	return true;
}

/* ---- UTF-8 ---- */

/* The length of the valid sequence at s[0..len), 0 if none: the lead byte
 * fixes the count and the range of the second byte (no overlongs, no
 * surrogates, nothing above U+10FFFF); *valid_prefix counts the bytes that
 * still fit a valid sequence, which is what one U+FFFD replaces. */
static size_t utf8_seq(const uint8_t *s, size_t len, size_t *valid_prefix)
{
	static const struct {
		uint8_t lo, hi, n, lo2, hi2;
	} lead[] = {
		{0x00, 0x7f, 1, 0, 0},       {0xc2, 0xdf, 2, 0x80, 0xbf}, {0xe0, 0xe0, 3, 0xa0, 0xbf},
		{0xe1, 0xec, 3, 0x80, 0xbf}, {0xed, 0xed, 3, 0x80, 0x9f}, {0xee, 0xef, 3, 0x80, 0xbf},
		{0xf0, 0xf0, 4, 0x90, 0xbf}, {0xf1, 0xf3, 4, 0x80, 0xbf}, {0xf4, 0xf4, 4, 0x80, 0x8f},
	};
	*valid_prefix = 0;
	for (size_t k = 0; k < sizeof lead / sizeof lead[0]; k++) {
		if (s[0] < lead[k].lo || s[0] > lead[k].hi)
			continue;
		size_t i = 1;
		for (; i < lead[k].n && i < len; i++) {
			uint8_t lo = i == 1 ? lead[k].lo2 : 0x80, hi = i == 1 ? lead[k].hi2 : 0xbf;
			if (s[i] < lo || s[i] > hi)
				break;
		}
		*valid_prefix = i;
		return i == lead[k].n ? i : 0;
	}
	return 0;
}

size_t tk_utf8_invalid_at(const char *s, size_t len)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t i = 0, prefix;
	while (i < len) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		size_t n = utf8_seq(u + i, len - i, &prefix);
		if (n == 0)
			return i;
		i += n;
	}
	return len;
}

int32_t tk_utf8_decode(const char *s, size_t *n)
{
	const uint8_t *u = (const uint8_t *)s;
	if (u[0] < 0x80) {
		*n = 1;
		return u[0];
	}
	if (u[0] < 0xe0) {
		*n = 2;
		return (int32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
	}
	if (u[0] < 0xf0) {
		*n = 3;
		return (int32_t)(u[0] & 0x0f) << 12 | (int32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
	}
	*n = 4;
	return (int32_t)(u[0] & 0x07) << 18 | (int32_t)(u[1] & 0x3f) << 12 | (int32_t)(u[2] & 0x3f) << 6 |
	       (u[3] & 0x3f);
}

size_t tk_utf8_encode(int32_t cp, char *out)
{
	return (size_t)utf8proc_encode_char(cp, (utf8proc_uint8_t *)out);
}

bool tk_utf8_lossy(const uint8_t *s, size_t len, char **out, size_t *out_len)
{
	/* each invalid byte grows to at most 3 */
	char *o = malloc(len * 3 + 1);
	if (!o)
		return false;
	size_t i = 0, w = 0, prefix;
	while (i < len) {
		size_t n = utf8_seq(s + i, len - i, &prefix);
		if (n) {
			memcpy(o + w, s + i, n);
			w += n;
			i += n;
		} else {
			memcpy(o + w, "\xef\xbf\xbd", 3);
			w += 3;
			i += prefix ? prefix : 1;
		}
	}
	o[w] = '\0';
	*out = o;
	*out_len = w;
	return true;
}

/* GPT-2's bytes_to_unicode: the printable bytes 33..126, 161..172 and
 * 174..255 stand for themselves; the other 68, in order, become U+0100.. */
int32_t tk_byte_char(uint8_t b)
{
	if (b <= 32)
		return 256 + b;
	if (b >= 127 && b <= 160)
		return b + 162; /* 256 + 33 + (b - 127) */
	if (b == 173)
		return 323;
	return b;
}

int tk_char_byte(int32_t cp)
{
	if ((cp >= 33 && cp <= 126) || (cp >= 161 && cp <= 172) || (cp >= 174 && cp <= 255))
		return cp;
	if (cp >= 256 && cp <= 288)
		return cp - 256;
	if (cp >= 289 && cp <= 322)
		return cp - 162;
	return cp == 323 ? 173 : -1;
}

/* ---- normalizers ---- */

static bool all_ascii(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

bool tk_normalize(const halo_tokenizer *t, const char *s, size_t len, char **out, size_t *out_len)
{
	char *cur = malloc(len + 1);
	if (!cur)
		return false;
	memcpy(cur, s, len);
	size_t n = len;
	/* every Unicode normal form leaves ASCII as it is */
	for (int k = 0; k < t->n_norm && !all_ascii(cur, n); k++) {
		utf8proc_uint8_t *dst = NULL;
		utf8proc_ssize_t r =
			utf8proc_map((const utf8proc_uint8_t *)cur, (utf8proc_ssize_t)n, &dst, (utf8proc_option_t)t->norm[k]);
		free(cur);
		if (r < 0)
			return false; /* only out of memory: the text is valid UTF-8 */
		cur = (char *)dst;
		n = (size_t)r;
	}
	*out = cur;
	*out_len = n;
	return true;
}

/* ---- added tokens ---- */

static bool is_word_char(const halo_tokenizer *t, const char *s, size_t len)
{
	return pcre2_match(t->word_char_re, (PCRE2_SPTR)s, len, 0, PCRE2_ANCHORED | PCRE2_NO_UTF_CHECK, t->md,
			   t->mctx) >= 0;
}

/* Rust's char::is_whitespace: the White_Space property. */
static bool is_space(int32_t cp)
{
	if ((cp >= 9 && cp <= 13) || cp == 0x85)
		return true;
	utf8proc_category_t c = utf8proc_category(cp);
	return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

static size_t prev_char(const char *s, size_t at)
{
	do
		at--;
	while (at > 0 && ((unsigned char)s[at] & 0xc0) == 0x80);
	return at;
}

/* single_word: no word character right before or right after the match. */
static bool alone(const halo_tokenizer *t, const char *s, size_t len, size_t start, size_t stop)
{
	if (start > 0) {
		size_t p = prev_char(s, start);
		if (is_word_char(t, s + p, start - p))
			return false;
	}
	return stop == len || !is_word_char(t, s + stop, len - stop);
}

/* lstrip: back over the whitespace before start. */
static size_t strip_left(const char *s, size_t start)
{
	while (start > 0) {
		size_t p = prev_char(s, start), n;
		if (!is_space(tk_utf8_decode(s + p, &n)))
			break;
		start = p;
	}
	return start;
}

/* rstrip: on over the whitespace after stop. */
static size_t strip_right(const char *s, size_t len, size_t stop)
{
	size_t n;
	while (stop < len && is_space(tk_utf8_decode(s + stop, &n)))
		stop += n;
	return stop;
}

/* The leftmost, then longest, added token at or after *pos: its index in
 * added[] and start, or -1. */
static int32_t next_added(const halo_tokenizer *t, const tk_added_index *index, const char *s, size_t len,
			  size_t *pos)
{
	for (size_t i = *pos; i < len; i++) {
		uint8_t b = (uint8_t)s[i];
		for (uint32_t k = index->start[b]; k < index->start[b + 1]; k++) {
			const tk_added *a = &t->added[index->order[k]];
			if (a->match_len <= len - i && memcmp(s + i, a->match, a->match_len) == 0) {
				*pos = i;
				return (int32_t)index->order[k];
			}
		}
	}
	return -1;
}

bool tk_split_added(halo_tokenizer *t, const tk_added_index *index, const char *s, size_t len, tk_pieces *out)
{
	size_t done = 0, search = 0; /* text up to done is emitted; matching resumes at search */
	for (;;) {
		size_t start = search;
		int32_t k = next_added(t, index, s, len, &start);
		if (k < 0)
			break;
		const tk_added *a = &t->added[k];
		size_t stop = start + a->match_len;
		search = stop; /* the next match starts after this one, stripped or skipped */
		if (a->single_word && !alone(t, s, len, start, stop))
			continue;
		if (a->lstrip) {
			size_t left = strip_left(s, start);
			start = left > done ? left : done; /* whitespace a previous match took stays there */
		}
		if (a->rstrip)
			stop = strip_right(s, len, stop);
		if (done < start && !tk_pieces_push(out, s + done, start - done, -1))
			return false;
		if (!tk_pieces_push(out, s + start, stop - start, k))
			return false;
		done = stop;
	}
	return done >= len || tk_pieces_push(out, s + done, len - done, -1);
}

/* ---- pre-tokenizers ---- */

/* Appends s as a piece, through the ByteLevel table when byte_level. */
static bool push_mapped(tk_pieces *out, const char *s, size_t len, bool byte_level)
{
	if (!byte_level || len == 0)
		return tk_pieces_push(out, s, len, -1);
	char *dst = open_piece(out, len * 2, -1);
	if (!dst)
		return false;
	size_t w = 0;
	for (size_t i = 0; i < len; i++)
		w += tk_utf8_encode(tk_byte_char((uint8_t)s[i]), dst + w);
	close_piece(out, w);
	return true;
}

static bool push_part(tk_pieces *out, const char *s, size_t from, size_t to, bool is_match, const tk_pretok *p,
		      bool byte_level)
{
	if (p->invert)
		is_match = !is_match;
	if (p->behavior == TK_SPLIT_REMOVED && is_match)
		return true;
	return push_mapped(out, s + from, to - from, byte_level);
}

/* Matches of re over s in the order Oniguruma's find_iter gives them (the
 * engine `tokenizers` uses): an empty match right where the previous match
 * ended is skipped by moving on one character, so an empty match elsewhere
 * hides a longer one at the same position. */
static bool split_regex(halo_tokenizer *t, const tk_pretok *p, const char *s, size_t len, tk_pieces *out,
			bool byte_level)
{
	size_t from = 0, at = 0, last_end = SIZE_MAX;
	while (at <= len) {
		int rc = pcre2_match(p->re, (PCRE2_SPTR)s, len, at, PCRE2_NO_UTF_CHECK, t->md, t->mctx);
		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return false;
		const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
		size_t ms = ov[0], me = ov[1];
		if (me < ms) /* \K in a lookaround: no split `tokenizers` could give */
			return false;
		if (ms == me && last_end == me) {
			size_t n = 1;
			if (at < len)
				tk_utf8_decode(s + at, &n);
			at += n;
			continue;
		}
		at = last_end = me;
		if (!push_part(out, s, from, ms, false, p, byte_level) || !push_part(out, s, ms, me, true, p, byte_level))
			return false;
		from = me;
	}
	return push_part(out, s, from, len, false, p, byte_level);
}

static bool byte_level(halo_tokenizer *t, const tk_pretok *p, const char *s, size_t len, tk_pieces *out)
{
	char *prefixed = NULL;
	if (p->add_prefix_space && s[0] != ' ') {
		if (!(prefixed = malloc(len + 1)))
			return false;
		prefixed[0] = ' ';
		memcpy(prefixed + 1, s, len);
		s = prefixed;
		len++;
	}
	bool ok = p->re ? split_regex(t, p, s, len, out, true) : push_mapped(out, s, len, true);
	free(prefixed);
	return ok;
}

bool tk_pretokenize(halo_tokenizer *t, const tk_pretok *p, const tk_pieces *in, tk_pieces *out)
{
	tk_pieces_reset(out);
	for (size_t i = 0; i < in->n; i++) {
		const char *s = in->buf + in->sp[i].start;
		size_t len = in->sp[i].end - in->sp[i].start;
		bool ok = p->kind == TK_PRE_SPLIT ? split_regex(t, p, s, len, out, false) : byte_level(t, p, s, len, out);
		if (!ok)
			return false;
	}
	return true;
}
