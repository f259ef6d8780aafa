/* Encode and decode, in the order `tokenizers` runs its pipeline:
 * added tokens that are not normalized are cut out of the raw text; the rest
 * is normalized and the normalized added tokens are cut out of it; what is
 * left goes through the pre-tokenizers and then BPE, one pre-token at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/tokenizer_impl.h"

typedef struct {
	tk_pieces raw, norm, a, b; /* a and b: the pre-tokenizers' ping-pong */
	int32_t *ids;
	size_t n, cap;
} encode_state;

static void encode_state_free(encode_state *e)
{
	tk_pieces_free(&e->raw);
	tk_pieces_free(&e->norm);
	tk_pieces_free(&e->a);
	tk_pieces_free(&e->b);
}

/* Pre-tokenizes one stretch of normalized text and runs BPE on each piece. */
static bool encode_plain(halo_tokenizer *t, encode_state *e, const char *s, size_t len)
{
	tk_pieces *in = &e->a, *out = &e->b;
	tk_pieces_reset(in);
	if (!tk_pieces_push(in, s, len, -1))
		return false;
	for (int k = 0; k < t->n_pre; k++) {
		if (!tk_pretokenize(t, &t->pre[k], in, out))
			return false;
		tk_pieces *swap = in;
		in = out;
		out = swap;
	}
	for (size_t i = 0; i < in->n; i++)
		if (!tk_bpe(t, in->buf + in->sp[i].start, in->sp[i].end - in->sp[i].start, &e->ids, &e->n, &e->cap))
			return false;
	return true;
}

static bool append_added(const halo_tokenizer *t, encode_state *e, int32_t k)
{
	return tk_ids_append(&e->ids, &e->n, &e->cap, &t->added[k].id, 1);
}

/* A stretch of raw text between raw added tokens. */
static bool encode_segment(halo_tokenizer *t, encode_state *e, const char *s, size_t len)
{
	char *norm;
	size_t norm_len;
	if (!tk_normalize(t, s, len, &norm, &norm_len))
		return false;
	tk_pieces_reset(&e->norm);
	bool ok = tk_split_added(t, &t->norm_index, norm, norm_len, &e->norm);
	for (size_t i = 0; ok && i < e->norm.n; i++) {
		const tk_span *sp = &e->norm.sp[i];
		ok = sp->added >= 0 ? append_added(t, e, sp->added)
				    : encode_plain(t, e, e->norm.buf + sp->start, sp->end - sp->start);
	}
	free(norm);
	return ok;
}

bool halo_tokenizer_encode(halo_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n_ids, char *err,
			   size_t errlen)
{
	*ids = NULL;
	*n_ids = 0;
	size_t bad = tk_utf8_invalid_at(text, len);
	if (bad < len) {
		snprintf(err, errlen, "the text is not valid UTF-8 (byte %zu, 0x%02x)", bad, (unsigned char)text[bad]);
		return false;
	}
	encode_state e = {0};
	bool ok = tk_split_added(t, &t->raw_index, text, len, &e.raw);
	for (size_t i = 0; ok && i < e.raw.n; i++) {
		const tk_span *sp = &e.raw.sp[i];
		ok = sp->added >= 0 ? append_added(t, &e, sp->added)
				    : encode_segment(t, &e, e.raw.buf + sp->start, sp->end - sp->start);
	}
	encode_state_free(&e);
	if (!ok) {
		free(e.ids);
		snprintf(err, errlen, "%s: encode failed: out of memory, or a pre-tokenizer pattern hit PCRE2's match limit",
			 t->label);
		return false;
	}
	*ids = e.ids;
	*n_ids = e.n;
	return true;
}

/* ---- decode ---- */

typedef struct {
	uint8_t *buf;
	size_t len, cap;
} bytes;

static bool bytes_put(bytes *b, const void *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 256;
		while (c < b->len + n + 1)
			c *= 2;
		uint8_t *q = realloc(b->buf, c);
		if (!q)
			return false;
		b->buf = q;
		b->cap = c;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	return true;
}

/* ByteLevel's decoder: a token whose every character stands for a byte
 * gives those bytes; any other token (an added one such as "<｜end▁of▁
 * sentence｜>") gives its own UTF-8 bytes. */
static bool byte_level_token(bytes *out, const char *tok)
{
	size_t len = strlen(tok), at = out->len;
	for (size_t i = 0, n; i < len; i += n) {
		int b = tk_char_byte(tk_utf8_decode(tok + i, &n));
		if (b < 0) {
			out->len = at;
			return bytes_put(out, tok, len);
		}
		uint8_t byte = (uint8_t)b;
		if (!bytes_put(out, &byte, 1))
			return false;
	}
	return true;
}

bool halo_tokenizer_decode(const halo_tokenizer *t, const int32_t *ids, size_t n, bool skip_special, char **text,
			   size_t *len, char *err, size_t errlen)
{
	bytes out = {0};
	bool ok = bytes_put(&out, "", 0), first = true;
	for (size_t i = 0; ok && i < n; i++) {
		const char *tok = halo_tokenizer_token(t, ids[i]);
		if (!tok || (skip_special && halo_tokenizer_is_special(t, ids[i])))
			continue;
		/* without a decoder `tokenizers` joins the tokens with spaces */
		if (t->byte_level_decoder)
			ok = byte_level_token(&out, tok);
		else
			ok = (first || bytes_put(&out, " ", 1)) && bytes_put(&out, tok, strlen(tok));
		first = false;
	}
	if (ok && t->byte_level_decoder)
		ok = tk_utf8_lossy(out.buf, out.len, text, len);
	else if (ok) {
		out.buf[out.len] = '\0';
		*text = (char *)out.buf;
		*len = out.len;
		out.buf = NULL;
	}
	free(out.buf);
	if (!ok)
		snprintf(err, errlen, "%s: decode failed: out of memory", t->label);
	return ok;
}

/* ---- look-ups ---- */

int32_t halo_tokenizer_id_end(const halo_tokenizer *t) { return t->id_end; }

int32_t halo_tokenizer_token_id(const halo_tokenizer *t, const char *token)
{
	size_t len = strlen(token);
	for (int k = 0; k < t->n_added; k++)
		if (strcmp(t->added[k].content, token) == 0)
			return t->added[k].id;
	uint32_t e = tk_strmap_find(&t->vocab, token, len);
	return e == TK_NONE ? -1 : t->vocab_id[e];
}

const char *halo_tokenizer_token(const halo_tokenizer *t, int32_t id)
{
	if (id < 0 || id >= t->id_end)
		return NULL;
	if (t->id_added[id] >= 0)
		return t->added[t->id_added[id]].content;
	return t->id_entry[id] == TK_NONE ? NULL : tk_strmap_key(&t->vocab, t->id_entry[id]);
}

bool halo_tokenizer_is_special(const halo_tokenizer *t, int32_t id)
{
	return id >= 0 && id < t->id_end && t->id_added[id] >= 0 && t->added[t->id_added[id]].special;
}

void halo_tokenizer_free(halo_tokenizer *t)
{
	if (!t)
		return;
	for (int k = 0; k < t->n_pre; k++)
		pcre2_code_free(t->pre[k].re);
	for (int k = 0; k < t->n_added; k++) {
		if (t->added[k].match != t->added[k].content)
			free(t->added[k].match);
		free(t->added[k].content);
	}
	free(t->pre);
	free(t->norm);
	free(t->added);
	free(t->raw_index.order);
	free(t->norm_index.order);
	free(t->id_added);
	free(t->id_entry);
	free(t->vocab_id);
	tk_strmap_free(&t->vocab);
	tk_merges_free(&t->merges);
	tk_bpe_cache_free(t);
	pcre2_code_free(t->word_char_re);
	pcre2_match_data_free(t->md);
	pcre2_match_context_free(t->mctx);
	pcre2_jit_stack_free(t->jit_stack);
	free(t->label);
	free(t);
}
