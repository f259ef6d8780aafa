/* The bundle's `tokenizer_meta` section (docs/bundle.md, "Tokenizer
 * sections"): the checkpoint's bos and eos tokens, its chat template and
 * the ids generation stops at.
 *
 * Ownership: parse copies what it keeps; the JSON bytes may go as soon as
 * it returns. Everything in a halo_tokenizer_meta belongs to it and is
 * freed by halo_tokenizer_meta_free. */
#ifndef HALO_RUNTIME_TOKENIZER_META_H
#define HALO_RUNTIME_TOKENIZER_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A token the checkpoint names (e.g. eos_token); text NULL and id -1 when
 * it names none. */
typedef struct {
	char *text;
	int32_t id;
} halo_named_token;

typedef struct {
	halo_named_token bos, eos;
	/* The chat template source: the string, or from a list of named
	 * templates the one named "default". NULL when the checkpoint has
	 * none. */
	char *chat_template;
	size_t chat_template_len;
	/* Where generation stops: generation_config.json's eos_token_id(s)
	 * and the eos token, each id once, in that order. */
	int32_t *eos_ids;
	size_t n_eos_ids;
} halo_tokenizer_meta;

/* Parses the section's JSON (size bytes). label names it in messages
 * (e.g. "bundle x.halo: section 'tokenizer_meta'"). On failure returns
 * false with a message naming label and the key; *out is then empty (safe
 * to free). */
bool halo_tokenizer_meta_parse(const void *json, size_t size, const char *label, halo_tokenizer_meta *out,
			       char *err, size_t errlen);
void halo_tokenizer_meta_free(halo_tokenizer_meta *m);

#endif
