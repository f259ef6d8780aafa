/* A checkpoint's tokenizer: Hugging Face tokenizer.json (the `tokenizers`
 * library's format) for byte-level BPE checkpoints such as Qwen's and
 * DeepSeek's. Text goes in as UTF-8 and comes out as the ids `tokenizers`
 * gives (Tokenizer.encode with add_special_tokens), ids go back to the bytes
 * its decode gives. docs/tokenizer.md lists what is read and what is refused.
 *
 * Supported: normalizer NFC/NFD/NFKC/NFKD or a Sequence of them; pre-tokenizer
 * Split (Regex or String pattern, behavior Isolated or Removed, invert) and
 * ByteLevel (add_prefix_space, trim_offsets, use_regex), alone or in a
 * Sequence; model BPE (merges as "a b" strings or [a, b] pairs, ignore_merges,
 * unk_token, fuse_unk); added tokens (special or not, lstrip, rstrip,
 * normalized, single_word); post-processor ByteLevel; decoder ByteLevel or
 * none. Anything else is refused at load with the JSON path that names it.
 *
 * Ownership: the loader copies what it needs; the JSON bytes may be freed as
 * soon as it returns. Results of encode and decode are malloc'd and belong
 * to the caller (free()). A tokenizer is not safe to share between threads
 * while encoding (encode fills a per-tokenizer cache); decode and the
 * look-ups only read it. */
#ifndef HALO_RUNTIME_TOKENIZER_H
#define HALO_RUNTIME_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct halo_tokenizer halo_tokenizer;

/* Reads a tokenizer.json. On failure returns NULL with a message that names
 * the file (and the JSON path of a refused component) in err (always
 * NUL-terminated). Free the result with halo_tokenizer_free(). */
halo_tokenizer *halo_tokenizer_load(const char *path, char *err, size_t errlen);
/* The same over JSON bytes in memory (borrowed for the call only); label
 * names them in messages (e.g. "bundle x.halo: section 'tokenizer'"). */
halo_tokenizer *halo_tokenizer_load_mem(const void *json, size_t size, const char *label, char *err,
					size_t errlen);
void halo_tokenizer_free(halo_tokenizer *t); /* NULL is fine */

/* text (len bytes of UTF-8, NUL not needed) -> *ids (malloc'd, *n_ids of
 * them; an empty text gives *ids == NULL and *n_ids == 0). Returns false with
 * a message when the text is not valid UTF-8 or memory runs out. */
bool halo_tokenizer_encode(halo_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n_ids,
			   char *err, size_t errlen);

/* ids -> *text (malloc'd, *len bytes, NUL-terminated as well), as `tokenizers`
 * decodes: ids that name no token are skipped, invalid UTF-8 that the bytes
 * of the tokens form becomes U+FFFD. skip_special leaves out the special
 * added tokens. Returns false only when memory runs out. */
bool halo_tokenizer_decode(const halo_tokenizer *t, const int32_t *ids, size_t n, bool skip_special, char **text,
			   size_t *len, char *err, size_t errlen);

/* One past the largest id a token has. */
int32_t halo_tokenizer_id_end(const halo_tokenizer *t);
/* The token's id (added tokens first, then the model's vocabulary), -1 if
 * none; token is NUL-terminated. */
int32_t halo_tokenizer_token_id(const halo_tokenizer *t, const char *token);
/* The token with this id, NUL-terminated, owned by the tokenizer; NULL if
 * no token has it. */
const char *halo_tokenizer_token(const halo_tokenizer *t, int32_t id);
/* Whether id is a special added token (<|im_start|>, <|endoftext|>, ...). */
bool halo_tokenizer_is_special(const halo_tokenizer *t, int32_t id);

#endif
