/* OpenAI-shaped bodies, built with json-c (which escapes every string) and
 * written without the "\/" escape json-c adds by default. */
#include "tools/serve/serve_response.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const object_names[][2] = {
	/* whole reply, stream chunk */
	[SERVE_COMPLETION] = {"text_completion", "text_completion"},
	[SERVE_CHAT] = {"chat.completion", "chat.completion.chunk"},
};

void serve_reply_id(serve_reply_head *h, uint64_t unique)
{
	snprintf(h->id, sizeof h->id, "%s-%016llx", h->kind == SERVE_CHAT ? "chatcmpl" : "cmpl",
		 (unsigned long long)unique);
}

/* Serializes and frees v; prefix and suffix wrap the text (SSE framing). */
static char *finish_json(json_object *v, const char *prefix, const char *suffix, size_t *len)
{
	size_t jlen = 0;
	const char *s = v ? json_object_to_json_string_length(v, JSON_C_TO_STRING_PLAIN |
									 JSON_C_TO_STRING_NOSLASHESCAPE,
							 &jlen)
			  : NULL;
	size_t plen = strlen(prefix), slen = strlen(suffix);
	char *out = s ? malloc(plen + jlen + slen + 1) : NULL;
	if (out) {
		memcpy(out, prefix, plen);
		memcpy(out + plen, s, jlen);
		memcpy(out + plen + jlen, suffix, slen + 1);
		*len = plen + jlen + slen;
	}
	json_object_put(v);
	return out;
}

static json_object *error_object(const serve_error *e)
{
	json_object *inner = json_object_new_object(), *outer = json_object_new_object();
	json_object_object_add(inner, "message", json_object_new_string(e->message));
	json_object_object_add(inner, "type", json_object_new_string(e->type));
	json_object_object_add(inner, "param", e->param[0] ? json_object_new_string(e->param) : NULL);
	json_object_object_add(inner, "code", e->code ? json_object_new_string(e->code) : NULL);
	json_object_object_add(outer, "error", inner);
	return outer;
}

char *serve_error_json(const serve_error *e, size_t *len)
{
	return finish_json(error_object(e), "", "", len);
}

char *serve_error_sse(const serve_error *e, size_t *len)
{
	return finish_json(error_object(e), "data: ", "\n\n", len);
}

char *serve_models_json(const char *model, long long created, int64_t n_ctx, size_t *len)
{
	json_object *m = json_object_new_object(), *list = json_object_new_array(), *v = json_object_new_object();
	json_object_object_add(m, "id", json_object_new_string(model));
	json_object_object_add(m, "object", json_object_new_string("model"));
	json_object_object_add(m, "created", json_object_new_int64(created));
	json_object_object_add(m, "owned_by", json_object_new_string("halo"));
	json_object_object_add(m, "max_model_len", json_object_new_int64(n_ctx)); /* as vLLM reports it */
	json_object_array_add(list, m);
	json_object_object_add(v, "object", json_object_new_string("list"));
	json_object_object_add(v, "data", list);
	return finish_json(v, "", "", len);
}

static json_object *head_object(const serve_reply_head *h, bool chunk)
{
	json_object *v = json_object_new_object();
	json_object_object_add(v, "id", json_object_new_string(h->id));
	json_object_object_add(v, "object", json_object_new_string(object_names[h->kind][chunk]));
	json_object_object_add(v, "created", json_object_new_int64(h->created));
	json_object_object_add(v, "model", json_object_new_string(h->model));
	return v;
}

static json_object *usage_object(const serve_usage *u)
{
	json_object *v = json_object_new_object();
	json_object_object_add(v, "prompt_tokens", json_object_new_int64(u->prompt_tokens));
	json_object_object_add(v, "completion_tokens", json_object_new_int64(u->completion_tokens));
	json_object_object_add(v, "total_tokens", json_object_new_int64(u->prompt_tokens + u->completion_tokens));
	return v;
}

static json_object *text_value(const char *text, size_t len)
{
	return json_object_new_string_len(text ? text : "", (int)len);
}

/* choices[0] of a reply or chunk: chat puts the text under message (whole)
 * or delta (chunk), completions under text. */
static json_object *choice_object(const char *key, json_object *payload, const char *finish)
{
	json_object *c = json_object_new_object();
	json_object_object_add(c, "index", json_object_new_int(0));
	json_object_object_add(c, key, payload);
	json_object_object_add(c, "logprobs", NULL);
	json_object_object_add(c, "finish_reason", finish ? json_object_new_string(finish) : NULL);
	return c;
}

static json_object *chat_message(const char *role, const char *text, size_t len)
{
	json_object *m = json_object_new_object();
	if (role)
		json_object_object_add(m, "role", json_object_new_string(role));
	if (text)
		json_object_object_add(m, "content", text_value(text, len));
	return m;
}

char *serve_reply_json(const serve_reply_head *h, const char *text, size_t text_len, const char *finish,
		       const serve_usage *u, size_t *len)
{
	json_object *v = head_object(h, false), *choices = json_object_new_array();
	json_object *c = h->kind == SERVE_CHAT
				 ? choice_object("message", chat_message("assistant", text ? text : "", text_len), finish)
				 : choice_object("text", text_value(text, text_len), finish);
	json_object_array_add(choices, c);
	json_object_object_add(v, "choices", choices);
	json_object_object_add(v, "usage", usage_object(u));
	return finish_json(v, "", "", len);
}

/* The one choice of a role, text or finish chunk. */
static json_object *chunk_choice(const serve_reply_head *h, const serve_chunk *c)
{
	const char *text = c->kind == SERVE_CHUNK_TEXT ? c->text : c->kind == SERVE_CHUNK_ROLE ? "" : NULL;
	size_t len = c->kind == SERVE_CHUNK_TEXT ? c->text_len : 0;
	const char *finish = c->kind == SERVE_CHUNK_FINISH ? c->finish : NULL;
	if (h->kind == SERVE_COMPLETION)
		return choice_object("text", text_value(text, len), finish);
	return choice_object("delta", chat_message(c->kind == SERVE_CHUNK_ROLE ? "assistant" : NULL, text, len), finish);
}

char *serve_chunk_sse(const serve_reply_head *h, const serve_chunk *c, size_t *len)
{
	json_object *v = head_object(h, true), *choices = json_object_new_array();
	if (c->kind != SERVE_CHUNK_USAGE)
		json_object_array_add(choices, chunk_choice(h, c));
	json_object_object_add(v, "choices", choices);
	if (c->kind == SERVE_CHUNK_USAGE)
		json_object_object_add(v, "usage", usage_object(c->usage));
	else if (c->usage_field)
		json_object_object_add(v, "usage", NULL);
	return finish_json(v, "data: ", "\n\n", len);
}
