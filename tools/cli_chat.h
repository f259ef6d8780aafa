/* The bundle's chat template as halo run --chat and halo chat render it:
 * messages -> text (runtime/chat_template.h, with the assistant's
 * generation prompt and the checkpoint's bos/eos tokens) -> ids. */
#ifndef HALO_TOOLS_CLI_CHAT_H
#define HALO_TOOLS_CLI_CHAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/chat_template.h"
#include "tools/cli_gen.h"

/* Parses the chat template of t (the bundle's tokenizer_meta; bundle names
 * it in messages); refuses a bundle without one. Free the result with
 * halo_chat_template_free. */
halo_chat_template *cli_chat_template(const cli_text *t, const char *bundle, char *err, size_t errlen);

/* Renders msgs[0..n) with add_generation_prompt and encodes the text:
 * *ids (malloc'd, *n_ids of them; the caller frees it). */
bool cli_chat_render(const cli_text *t, const halo_chat_template *tpl, const halo_chat_message *msgs, size_t n,
		     int32_t **ids, size_t *n_ids, char *err, size_t errlen);

#endif
