#include "tools/serve/serve_prompt.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

/* Adds key = value to the template context unless the request set it. */
static void default_var(json_object *ctx, const char *key, const char *value)
{
	if (value && !json_object_object_get_ex(ctx, key, NULL))
		json_object_object_add(ctx, key, json_object_new_string(value));
}

/* Chat: the messages rendered by the bundle's template. */
static bool render(serve_prompter *p, serve_request *r, char **text, size_t *len, serve_error *e)
{
	char err[1024];
	if (!p->tmpl)
		return serve_fail(e, 400, "no_chat_template", NULL,
				  "this model has no chat template (its checkpoint had none): use /v1/completions");
	default_var(r->chat_context, "bos_token", p->bos_token);
	default_var(r->chat_context, "eos_token", p->eos_token);
	if (!halo_chat_template_render(p->tmpl, r->chat_context, text, len, err, sizeof err))
		return serve_fail(e, 400, "invalid_value", "messages", "the chat template refused the messages: %s",
				  err);
	return true;
}

static bool encode(serve_prompter *p, const char *text, size_t len, int32_t **ids, int64_t *n, serve_error *e)
{
	char err[512];
	size_t count = 0;
	pthread_mutex_lock(&p->tok_lock);
	bool ok = halo_tokenizer_encode(p->tok, text, len, ids, &count, err, sizeof err);
	pthread_mutex_unlock(&p->tok_lock);
	*n = (int64_t)count;
	return ok || serve_fail(e, 400, "invalid_value", "prompt", "the prompt cannot be tokenized: %s", err);
}

static bool copy_ids(const serve_request *r, int32_t **ids, int64_t *n, serve_error *e)
{
	if (!(*ids = malloc(r->n_prompt_ids * sizeof **ids)))
		return serve_fail(e, 500, NULL, NULL, "out of memory");
	memcpy(*ids, r->prompt_ids, r->n_prompt_ids * sizeof **ids);
	*n = (int64_t)r->n_prompt_ids;
	return true;
}

/* The ids name tokens of the model, and the context holds them with at
 * least one token to spare (generate.h's condition). */
static bool check_ids(const serve_prompter *p, const serve_request *r, const int32_t *ids, int64_t n,
		      serve_error *e)
{
	const char *param = r->kind == SERVE_CHAT ? "messages" : "prompt";
	if (n == 0)
		return serve_fail(e, 400, "invalid_value", param, "the prompt gives no tokens");
	for (int64_t i = 0; i < n; i++)
		if (ids[i] >= p->vocab)
			return serve_fail(e, 400, "invalid_value", param,
					  "token id %d is outside the vocabulary (%lld tokens)", ids[i],
					  (long long)p->vocab);
	if (n >= p->n_ctx)
		return serve_fail(e, 400, "context_length_exceeded", param,
				  "this model's maximum context length is %lld tokens; the prompt has %lld, "
				  "which leaves no room to generate",
				  (long long)p->n_ctx, (long long)n);
	return true;
}

bool serve_prompt(serve_prompter *p, serve_request *r, int32_t **ids, int64_t *n, serve_error *e)
{
	*ids = NULL;
	*n = 0;
	bool ok;
	if (r->kind == SERVE_CHAT) {
		char *text = NULL;
		size_t len = 0;
		ok = render(p, r, &text, &len, e) && encode(p, text, len, ids, n, e);
		free(text);
	} else if (r->prompt) {
		ok = encode(p, r->prompt, r->prompt_len, ids, n, e);
	} else {
		ok = copy_ids(r, ids, n, e);
	}
	if (ok && check_ids(p, r, *ids, *n, e))
		return true;
	free(*ids);
	*ids = NULL;
	return false;
}

int64_t serve_max_tokens(const serve_request *r, int64_t n_prompt, int64_t n_ctx)
{
	if (r->max_tokens > 0)
		return r->max_tokens;
	return r->kind == SERVE_COMPLETION ? 16 : n_ctx - n_prompt;
}
