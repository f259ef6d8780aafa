#include "tools/cli_chat.h"

#include <stdio.h>
#include <stdlib.h>

halo_chat_template *cli_chat_template(const cli_text *t, const char *bundle, char *err, size_t errlen)
{
	if (!t->meta.chat_template) {
		snprintf(err, errlen, "bundle %s has no chat template (its checkpoint's tokenizer_config.json has "
			 "none)", bundle);
		return NULL;
	}
	char label[600];
	snprintf(label, sizeof label, "bundle %s: tokenizer_meta chat_template", bundle);
	return halo_chat_template_parse(t->meta.chat_template, t->meta.chat_template_len, label, err, errlen);
}

bool cli_chat_render(const cli_text *t, const halo_chat_template *tpl, const halo_chat_message *msgs, size_t n,
		     int32_t **ids, size_t *n_ids, char *err, size_t errlen)
{
	halo_chat_options o = {.add_generation_prompt = true, .enable_thinking = -1, .bos_token = t->meta.bos.text,
			       .eos_token = t->meta.eos.text};
	char *text;
	size_t len;
	if (!halo_chat_template_apply(tpl, msgs, n, &o, &text, &len, err, errlen))
		return false;
	bool ok = halo_tokenizer_encode(t->tok, text, len, ids, n_ids, err, errlen);
	free(text);
	return ok;
}
