/* A checkpoint's chat template: the Jinja `chat_template` of its
 * tokenizer_config.json (or chat_template.jinja), rendered for a list of
 * messages exactly as transformers' apply_chat_template renders it (Jinja2
 * with trim_blocks and lstrip_blocks, loop controls, raise_exception,
 * tojson as transformers defines it). The interpreter covers the subset the
 * Qwen3, Qwen3-Next, Qwen3.5 and DeepSeek templates use; docs/chat_template.md
 * lists it. Anything else is refused when the template is parsed, with the
 * template line and the construct named, so `halo compile` refuses a
 * checkpoint whose template would fail at run time.
 *
 * Ownership: parse copies the source; the template is immutable afterwards
 * and may be shared by threads that render concurrently. Rendered text is
 * malloc'd and belongs to the caller (free()). The render context is
 * borrowed for the call only. */
#ifndef HALO_RUNTIME_CHAT_TEMPLATE_H
#define HALO_RUNTIME_CHAT_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>

struct json_object;

typedef struct halo_chat_template halo_chat_template;

/* Parses template source (len bytes of UTF-8). label names the source in
 * messages (e.g. "bundle x.halo: tokenizer_meta chat_template"). On failure
 * returns NULL with "label:LINE: what was expected" in err (always
 * NUL-terminated). Free with halo_chat_template_free. */
halo_chat_template *halo_chat_template_parse(const char *src, size_t len, const char *label, char *err,
					     size_t errlen);
void halo_chat_template_free(halo_chat_template *t); /* NULL is fine */

/* Renders with the variables of context, a JSON object as
 * apply_chat_template builds it: "messages" (a list of objects with "role",
 * "content" and whatever else the caller's messages carry, e.g.
 * "reasoning_content" or "tool_calls"), "add_generation_prompt", and any
 * extra keyword such as "enable_thinking", "tools", "bos_token",
 * "eos_token". *out gets the text (malloc'd, NUL-terminated, *len bytes).
 * Returns false with a message naming the template line on a run-time
 * error (raise_exception, a type error, output over 64 MiB). */
bool halo_chat_template_render(const halo_chat_template *t, const struct json_object *context, char **out,
			       size_t *len, char *err, size_t errlen);

/* Convenience for the common case: messages given as role/content pairs. */
typedef struct {
	const char *role;
	const char *content;
} halo_chat_message;

typedef struct {
	bool add_generation_prompt;
	int enable_thinking; /* -1: leave undefined (the template's default), 0: false, 1: true */
	const char *bos_token, *eos_token; /* NULL: undefined */
} halo_chat_options;

/* Builds the context from msgs[0..n) and o and renders it. */
bool halo_chat_template_apply(const halo_chat_template *t, const halo_chat_message *msgs, size_t n,
			      const halo_chat_options *o, char **out, size_t *len, char *err, size_t errlen);

#endif
