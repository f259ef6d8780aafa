/* Streaming detokenization: token ids in, text out as it becomes final.
 *
 * Two concerns, in this order:
 *   1. whole characters: a token may end inside a UTF-8 character (an emoji
 *      is often two or three byte-level tokens), so the stream decodes the
 *      ids it has not fully emitted yet and holds the text back while it
 *      ends in U+FFFD, the mark halo_tokenizer_decode leaves for an
 *      incomplete character. Text that does not end so can no longer change
 *      when more bytes follow, so what is emitted, piece after piece, is
 *      exactly halo_tokenizer_decode of the whole sequence (HF decode);
 *   2. stop strings: the text ends before the first occurrence of any stop
 *      string, even one split across tokens, so the stream holds back the
 *      longest tail of the text that is still the beginning of a stop
 *      string and releases it as soon as the text diverges.
 *
 * Ownership: create borrows the tokenizer (it must outlive the stream) and
 * copies the stop strings. A piece returned by push or finish points into
 * the stream and stays valid until its next call. */
#ifndef HALO_RUNTIME_TEXT_STREAM_H
#define HALO_RUNTIME_TEXT_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/tokenizer.h"

typedef struct halo_text_stream halo_text_stream;

/* stop[0..n_stop): NUL-terminated, non-empty. skip_special as for
 * halo_tokenizer_decode. Returns NULL with a message on bad arguments or
 * when memory runs out. */
halo_text_stream *halo_text_stream_create(const halo_tokenizer *tok, bool skip_special, const char *const *stop,
					  size_t n_stop, char *err, size_t errlen);
void halo_text_stream_free(halo_text_stream *ts); /* NULL is fine */

typedef enum {
	HALO_TEXT_ERROR, /* out of memory: err says so */
	HALO_TEXT_MORE,  /* go on */
	HALO_TEXT_STOP,  /* a stop string matched: the piece is the text before it; push no more */
} halo_text_status;

/* Adds token id. *piece / *len get the text that became final (possibly
 * nothing). */
halo_text_status halo_text_stream_push(halo_text_stream *ts, int32_t id, const char **piece, size_t *len, char *err,
				       size_t errlen);

/* The sequence ended (eos, length, not a stop string): releases what was
 * held back, an incomplete character as U+FFFD and a stop string's
 * beginning as the text it is, as decoding the whole sequence gives it.
 * Returns HALO_TEXT_STOP when that text still completes a stop string. */
halo_text_status halo_text_stream_finish(halo_text_stream *ts, const char **piece, size_t *len, char *err,
					 size_t errlen);

#endif
