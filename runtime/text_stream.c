#include "runtime/text_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable byte or id buffer. */
typedef struct {
	char *p;
	size_t len, cap;
} buf;

struct halo_text_stream {
	const halo_tokenizer *tok;
	bool skip_special;
	char **stop;
	size_t *stop_len, n_stop;
	int32_t *ids; /* the ids whose text is not final yet (it ends inside a character) */
	size_t n_ids, cap_ids;
	buf held; /* final text not emitted: the beginning of a stop string */
	buf out;  /* the last piece */
};

static bool buf_append(buf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return false;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	return true;
}

halo_text_stream *halo_text_stream_create(const halo_tokenizer *tok, bool skip_special, const char *const *stop,
					  size_t n_stop, char *err, size_t errlen)
{
	for (size_t i = 0; i < n_stop; i++) {
		if (!stop[i] || !stop[i][0]) {
			snprintf(err, errlen, "stop string %zu is empty", i);
			return NULL;
		}
	}
	halo_text_stream *ts = calloc(1, sizeof(*ts));
	if (ts && n_stop) {
		ts->stop = calloc(n_stop, sizeof(*ts->stop));
		ts->stop_len = calloc(n_stop, sizeof(*ts->stop_len));
	}
	bool ok = ts && (!n_stop || (ts->stop && ts->stop_len));
	for (size_t i = 0; ok && i < n_stop; i++) {
		ts->stop[i] = strdup(stop[i]);
		ts->stop_len[i] = strlen(stop[i]);
		ts->n_stop = i + 1;
		ok = ts->stop[i] != NULL;
	}
	if (!ok) {
		halo_text_stream_free(ts);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ts->tok = tok;
	ts->skip_special = skip_special;
	return ts;
}

void halo_text_stream_free(halo_text_stream *ts)
{
	if (!ts)
		return;
	for (size_t i = 0; i < ts->n_stop; i++)
		free(ts->stop[i]);
	free(ts->stop);
	free(ts->stop_len);
	free(ts->ids);
	free(ts->held.p);
	free(ts->out.p);
	free(ts);
}

/* U+FFFD, what decode makes of a character cut short. */
static bool ends_replaced(const char *s, size_t n)
{
	return n >= 3 && memcmp(s + n - 3, "\xEF\xBF\xBD", 3) == 0;
}

/* Decodes the pending ids and moves their text to held, unless it ends in
 * U+FFFD and more bytes may still complete the character (final: they may
 * not). */
static bool settle_ids(halo_text_stream *ts, bool final, char *err, size_t errlen)
{
	char *text;
	size_t len;
	if (!ts->n_ids)
		return true;
	if (!halo_tokenizer_decode(ts->tok, ts->ids, ts->n_ids, ts->skip_special, &text, &len, err, errlen))
		return false;
	bool ok = true;
	if (final || !ends_replaced(text, len)) {
		ok = buf_append(&ts->held, text, len);
		ts->n_ids = 0;
	}
	free(text);
	if (!ok)
		snprintf(err, errlen, "out of memory");
	return ok;
}

/* Offset of the first stop string in held, or held.len when none occurs. */
static size_t first_stop(const halo_text_stream *ts)
{
	size_t at = ts->held.len;
	for (size_t i = 0; i < ts->n_stop; i++) {
		const char *hit = ts->held.len ? memmem(ts->held.p, ts->held.len, ts->stop[i], ts->stop_len[i]) : NULL;
		if (hit && (size_t)(hit - ts->held.p) < at)
			at = (size_t)(hit - ts->held.p);
	}
	return at;
}

/* Length of the longest tail of held that a stop string begins with (and
 * is not all of: a whole one is a match). */
static size_t stop_prefix_tail(const halo_text_stream *ts)
{
	size_t best = 0;
	for (size_t i = 0; i < ts->n_stop; i++) {
		size_t k = ts->stop_len[i] - 1;
		if (k > ts->held.len)
			k = ts->held.len;
		for (; k > best; k--) {
			if (memcmp(ts->held.p + ts->held.len - k, ts->stop[i], k) == 0) {
				best = k;
				break;
			}
		}
	}
	return best;
}

/* Moves held[0..n) to out, the piece handed back. */
static bool emit(halo_text_stream *ts, size_t n, const char **piece, size_t *len, char *err, size_t errlen)
{
	ts->out.len = 0;
	if (!buf_append(&ts->out, ts->held.p, n)) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	if (n < ts->held.len)
		memmove(ts->held.p, ts->held.p + n, ts->held.len - n);
	ts->held.len -= n;
	*piece = ts->out.p ? ts->out.p : "";
	*len = ts->out.len;
	return true;
}

/* Emits what held can release: everything before a stop string (then
 * STOP), else all but a stop string's beginning (all when final). */
static halo_text_status release(halo_text_stream *ts, bool final, const char **piece, size_t *len, char *err,
				size_t errlen)
{
	size_t stop = first_stop(ts);
	if (stop < ts->held.len)
		return emit(ts, stop, piece, len, err, errlen) ? HALO_TEXT_STOP : HALO_TEXT_ERROR;
	size_t keep = final ? 0 : stop_prefix_tail(ts);
	return emit(ts, ts->held.len - keep, piece, len, err, errlen) ? HALO_TEXT_MORE : HALO_TEXT_ERROR;
}

halo_text_status halo_text_stream_push(halo_text_stream *ts, int32_t id, const char **piece, size_t *len, char *err,
				       size_t errlen)
{
	*piece = "";
	*len = 0;
	if (ts->n_ids == ts->cap_ids) {
		size_t cap = ts->cap_ids ? 2 * ts->cap_ids : 16;
		int32_t *ids = realloc(ts->ids, cap * sizeof(*ids));
		if (!ids) {
			snprintf(err, errlen, "out of memory");
			return HALO_TEXT_ERROR;
		}
		ts->ids = ids;
		ts->cap_ids = cap;
	}
	ts->ids[ts->n_ids++] = id;
	if (!settle_ids(ts, false, err, errlen))
		return HALO_TEXT_ERROR;
	return release(ts, false, piece, len, err, errlen);
}

halo_text_status halo_text_stream_finish(halo_text_stream *ts, const char **piece, size_t *len, char *err,
					 size_t errlen)
{
	*piece = "";
	*len = 0;
	if (!settle_ids(ts, true, err, errlen))
		return HALO_TEXT_ERROR;
	return release(ts, true, piece, len, err, errlen);
}
