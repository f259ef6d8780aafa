/* The checkpoint's tokenizer for the bundle (docs/bundle.md, "Tokenizer
 * sections"): tokenizer.json verbatim as section "tokenizer", and what a
 * chat front end needs around it as section "tokenizer_meta" (JSON): the
 * chat template and bos/eos/pad/unk tokens of tokenizer_config.json with
 * their ids, and generation_config.json's eos_token_id. */
#ifndef HALO_CODEGEN_TOKENIZER_SECTION_H
#define HALO_CODEGEN_TOKENIZER_SECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
	char *json; /* tokenizer.json's bytes, NULL when the checkpoint has none */
	size_t json_size;
	char *meta; /* the tokenizer_meta document, NUL-terminated */
} cg_tokenizer_sections;

/* Reads hf_dir's tokenizer files. A checkpoint without tokenizer.json gives
 * true and both NULL. Refused, with a message naming the file: a
 * tokenizer.json runtime/tokenizer.h refuses, one with ids at or above
 * vocab (the model's embedding rows), a tokenizer_config.json token that is
 * not in it, malformed config files. Free with cg_tokenizer_sections_free. */
bool cg_tokenizer_read(const char *hf_dir, int64_t vocab, cg_tokenizer_sections *out, char *err, size_t errlen);
void cg_tokenizer_sections_free(cg_tokenizer_sections *s);

#endif
