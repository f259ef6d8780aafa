/* halo serve's prompts: a parsed request's prompt as the token ids to
 * generate from. Chat messages go through the bundle's chat template
 * (runtime/chat_template.h) and the tokenizer; completion prompts through
 * the tokenizer, or are taken as ids. Either way the prompt must name
 * tokens of the model and leave room in its context.
 *
 * Threads: connections prepare their prompts concurrently; the tokenizer's
 * encode is not safe to share (runtime/tokenizer.h), so it runs under the
 * prompter's lock. Ownership: everything in the prompter is borrowed. */
#ifndef HALO_TOOLS_SERVE_PROMPT_H
#define HALO_TOOLS_SERVE_PROMPT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "runtime/chat_template.h"
#include "runtime/tokenizer.h"
#include "tools/serve/serve_error.h"
#include "tools/serve/serve_request.h"

typedef struct {
	halo_tokenizer *tok;
	pthread_mutex_t tok_lock;          /* held around encode */
	const halo_chat_template *tmpl;    /* NULL: the bundle has none; chat requests are refused */
	const char *bos_token, *eos_token; /* the template's variables; NULL: undefined */
	int64_t vocab, n_ctx;
} serve_prompter;

/* The prompt of r as *ids (malloc'd, *n >= 1 of them). r's chat context
 * gains bos_token and eos_token where the request did not set them. On
 * failure returns false with e filled: 400 for a prompt the model cannot
 * take (too long, an unknown id, a template that refuses the messages). */
bool serve_prompt(serve_prompter *p, serve_request *r, int32_t **ids, int64_t *n, serve_error *e);

/* The tokens to generate at most: the request's max_tokens, else OpenAI's
 * default for completions (16) and the rest of the context for chat. */
int64_t serve_max_tokens(const serve_request *r, int64_t n_prompt, int64_t n_ctx);

#endif
