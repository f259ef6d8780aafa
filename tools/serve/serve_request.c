/* Request bodies -> serve_request: one row per known field in `fields`,
 * each naming the routes it belongs to, the JSON type it must have and the
 * reader that checks its range and stores it. */
#include "tools/serve/serve_request.h"

#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Deep enough for any real request (messages -> content -> parts), shallow
 * enough that a hostile body cannot exhaust the stack of json-c's users. */
#define BODY_MAX_DEPTH 32

typedef bool (*field_reader)(json_object *v, serve_request *r, serve_error *e);

/* Which JSON values a field takes; T_ANY leaves the check to the reader
 * (fields of several forms, like prompt and stop). */
typedef enum { T_STRING, T_INT, T_NUMBER, T_BOOL, T_OBJECT, T_ARRAY, T_ANY } field_type;

enum { K_COMPLETION = 1 << SERVE_COMPLETION, K_CHAT = 1 << SERVE_CHAT, K_BOTH = K_COMPLETION | K_CHAT };

typedef struct {
	const char *name;
	unsigned kinds;
	field_type type;
	field_reader read;
} field_spec;

static const char *const type_names[] = {
	[T_STRING] = "a string", [T_INT] = "an integer", [T_NUMBER] = "a number",
	[T_BOOL] = "a boolean", [T_OBJECT] = "an object", [T_ARRAY] = "an array",
};

static bool has_type(json_object *v, field_type t)
{
	switch (t) {
	case T_STRING: return json_object_is_type(v, json_type_string);
	case T_INT: return json_object_is_type(v, json_type_int);
	case T_NUMBER: return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
	case T_BOOL: return json_object_is_type(v, json_type_boolean);
	case T_OBJECT: return json_object_is_type(v, json_type_object);
	case T_ARRAY: return json_object_is_type(v, json_type_array);
	case T_ANY: return true;
	}
	return false;
}

static bool bad(serve_error *e, const char *param, const char *what)
{
	return serve_fail(e, 400, "invalid_value", param, "'%s' %s", param, what);
}

static bool read_model(json_object *v, serve_request *r, serve_error *e)
{
	r->model = json_object_get_string(v);
	return true;
}

/* A prompt of token ids: integers in [0, INT32_MAX] (the vocabulary bound
 * is the model's, checked when the request is prepared). */
static bool read_prompt_ids(json_object *v, serve_request *r, serve_error *e)
{
	size_t n = json_object_array_length(v);
	if (n == 0)
		return bad(e, "prompt", "is empty");
	if (!(r->prompt_ids = malloc(n * sizeof *r->prompt_ids)))
		return serve_fail(e, 500, NULL, NULL, "out of memory");
	for (size_t i = 0; i < n; i++) {
		json_object *id = json_object_array_get_idx(v, i);
		int64_t x = json_object_get_int64(id);
		if (!json_object_is_type(id, json_type_int) || x < 0 || x > INT32_MAX)
			return bad(e, "prompt", "must be a string or a list of token ids (integers >= 0)");
		r->prompt_ids[i] = (int32_t)x;
	}
	r->n_prompt_ids = n;
	return true;
}

/* A string, a list of ids, or a batch of one of those (OpenAI's prompt is
 * a batch; this server generates one completion per request). */
static bool read_prompt(json_object *v, serve_request *r, serve_error *e)
{
	if (json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0) {
		json_object *first = json_object_array_get_idx(v, 0);
		bool nested = json_object_is_type(first, json_type_string) || json_object_is_type(first, json_type_array);
		if (nested && json_object_array_length(v) != 1)
			return bad(e, "prompt", "holds several prompts; this server takes one per request");
		if (nested)
			v = first;
	}
	if (json_object_is_type(v, json_type_string)) {
		r->prompt = json_object_get_string(v);
		r->prompt_len = (size_t)json_object_get_string_len(v);
		return r->prompt_len > 0 || bad(e, "prompt", "is empty");
	}
	if (json_object_is_type(v, json_type_array))
		return read_prompt_ids(v, r, e);
	return bad(e, "prompt", "must be a string or a list of token ids (integers >= 0)");
}

/* Content as text: a string, null (an assistant turn with tool calls only),
 * or a list of {"type": "text", "text": ...} parts joined by newlines, as
 * vLLM joins them for text-only templates. */
static json_object *content_text(json_object *c, serve_error *e)
{
	if (!c || json_object_is_type(c, json_type_null) || json_object_is_type(c, json_type_string))
		return json_object_get(c);
	if (!json_object_is_type(c, json_type_array))
		return bad(e, "messages", "content must be a string or a list of text parts"), NULL;
	size_t n = json_object_array_length(c), len = 0;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(c, i), *type, *text;
		if (!json_object_object_get_ex(p, "type", &type) || !json_object_is_type(type, json_type_string) ||
		    strcmp(json_object_get_string(type), "text") != 0 ||
		    !json_object_object_get_ex(p, "text", &text) || !json_object_is_type(text, json_type_string))
			return bad(e, "messages", "content parts must be {\"type\": \"text\", \"text\": STRING}; "
						  "this server reads text only"), NULL;
		len += (size_t)json_object_get_string_len(text) + 1;
	}
	char *buf = malloc(len + 1), *at = buf;
	if (!buf)
		return serve_fail(e, 500, NULL, NULL, "out of memory"), NULL;
	for (size_t i = 0; i < n; i++) {
		json_object *text = json_object_object_get(json_object_array_get_idx(c, i), "text");
		size_t l = (size_t)json_object_get_string_len(text);
		if (i)
			*at++ = '\n';
		memcpy(at, json_object_get_string(text), l);
		at += l;
	}
	json_object *s = json_object_new_string_len(buf, (int)(at - buf));
	free(buf);
	return s ? s : (serve_fail(e, 500, NULL, NULL, "out of memory"), NULL);
}

/* A copy of message m (its other keys shared, e.g. tool_calls or
 * reasoning_content, which templates may read) with content as text. */
static json_object *read_message(json_object *m, serve_error *e)
{
	json_object *role, *content = NULL;
	if (!json_object_is_type(m, json_type_object) || !json_object_object_get_ex(m, "role", &role) ||
	    !json_object_is_type(role, json_type_string) || json_object_get_string_len(role) == 0)
		return bad(e, "messages", "must be a list of objects with a string 'role'"), NULL;
	json_object_object_get_ex(m, "content", &content);
	json_object *text = content_text(content, e);
	if (!text && content && !json_object_is_type(content, json_type_null))
		return NULL;
	json_object *out = json_object_new_object();
	if (!out) {
		json_object_put(text);
		return serve_fail(e, 500, NULL, NULL, "out of memory"), NULL;
	}
	json_object_object_foreach(m, key, val)
		if (strcmp(key, "content") != 0)
			json_object_object_add(out, key, json_object_get(val));
	json_object_object_add(out, "content", text);
	return out;
}

/* The chat context's object, made on first use. */
static json_object *chat_context(serve_request *r, serve_error *e)
{
	if (!r->chat_context && !(r->chat_context = json_object_new_object()))
		serve_fail(e, 500, NULL, NULL, "out of memory");
	return r->chat_context;
}

static bool read_messages(json_object *v, serve_request *r, serve_error *e)
{
	size_t n = json_object_array_length(v);
	if (n == 0)
		return bad(e, "messages", "is empty");
	json_object *list = json_object_new_array_ext((int)n);
	if (!list || !chat_context(r, e)) {
		json_object_put(list);
		return serve_fail(e, 500, NULL, NULL, "out of memory");
	}
	json_object_object_add(r->chat_context, "messages", list);
	for (size_t i = 0; i < n; i++) {
		json_object *m = read_message(json_object_array_get_idx(v, i), e);
		if (!m)
			return false;
		json_object_array_add(list, m);
	}
	return true;
}

/* Extra template variables. As in vLLM they override the request's own
 * (add_generation_prompt), except the messages. */
static bool read_template_kwargs(json_object *v, serve_request *r, serve_error *e)
{
	if (!chat_context(r, e))
		return false;
	json_object_object_foreach(v, key, val)
		if (strcmp(key, "messages") != 0)
			json_object_object_add(r->chat_context, key, json_object_get(val));
	return true;
}

static bool read_add_generation_prompt(json_object *v, serve_request *r, serve_error *e)
{
	if (!chat_context(r, e))
		return false;
	json_object_object_add(r->chat_context, "add_generation_prompt", json_object_get(v));
	return true;
}

static bool read_max_tokens(json_object *v, serve_request *r, serve_error *e)
{
	r->max_tokens = json_object_get_int64(v);
	return r->max_tokens >= 1 || bad(e, "max_tokens", "must be at least 1");
}

/* max_completion_tokens is chat's newer name for max_tokens. */
static bool read_max_completion_tokens(json_object *v, serve_request *r, serve_error *e)
{
	r->max_tokens = json_object_get_int64(v);
	return r->max_tokens >= 1 || bad(e, "max_completion_tokens", "must be at least 1");
}

static bool read_temperature(json_object *v, serve_request *r, serve_error *e)
{
	double t = json_object_get_double(v);
	r->sampling.temperature = (float)t;
	return (isfinite(t) && t >= 0 && t <= 2) || bad(e, "temperature", "must be in [0, 2]");
}

static bool read_top_p(json_object *v, serve_request *r, serve_error *e)
{
	double p = json_object_get_double(v);
	r->sampling.top_p = (float)p;
	return (isfinite(p) && p > 0 && p <= 1) || bad(e, "top_p", "must be in (0, 1]");
}

/* vLLM's extension: -1 or 0 turn it off. */
static bool read_top_k(json_object *v, serve_request *r, serve_error *e)
{
	int64_t k = json_object_get_int64(v);
	r->sampling.top_k = k > 0 && k <= INT32_MAX ? (int)k : 0;
	return (k >= -1 && k <= INT32_MAX) || bad(e, "top_k", "must be -1 (off) or a count");
}

/* Any integer: negative seeds name the same bits as their unsigned twins. */
static bool read_seed(json_object *v, serve_request *r, serve_error *e)
{
	r->has_seed = true;
	r->seed = (uint64_t)json_object_get_int64(v);
	return true;
}

static bool add_stop(json_object *s, serve_request *r, serve_error *e)
{
	if (!json_object_is_type(s, json_type_string))
		return bad(e, "stop", "must be a string or a list of strings");
	const char *text = json_object_get_string(s);
	if (!*text || strlen(text) != (size_t)json_object_get_string_len(s))
		return bad(e, "stop", "strings must be non-empty and hold no NUL character");
	if (r->n_stop == SERVE_MAX_STOP)
		return serve_fail(e, 400, "invalid_value", "stop", "'stop' takes at most %d strings", SERVE_MAX_STOP);
	r->stop[r->n_stop++] = text;
	return true;
}

static bool read_stop(json_object *v, serve_request *r, serve_error *e)
{
	if (!json_object_is_type(v, json_type_array))
		return add_stop(v, r, e);
	for (size_t i = 0; i < json_object_array_length(v); i++)
		if (!add_stop(json_object_array_get_idx(v, i), r, e))
			return false;
	return true;
}

static bool read_stream(json_object *v, serve_request *r, serve_error *e)
{
	r->stream = json_object_get_boolean(v);
	return true;
}

static bool read_stream_options(json_object *v, serve_request *r, serve_error *e)
{
	json_object *u;
	if (!json_object_object_get_ex(v, "include_usage", &u) || json_object_is_type(u, json_type_null))
		return true;
	if (!json_object_is_type(u, json_type_boolean))
		return serve_fail(e, 400, "invalid_type", "stream_options",
				  "'stream_options.include_usage' must be a boolean");
	r->include_usage = json_object_get_boolean(u);
	return true;
}

static bool read_n(json_object *v, serve_request *r, serve_error *e)
{
	return json_object_get_int64(v) == 1 || bad(e, "n", "must be 1: this server generates one choice per request");
}

/* Log probabilities are not computed: asking for them is refused rather
 * than answered without them. */
static bool read_logprobs_chat(json_object *v, serve_request *r, serve_error *e)
{
	return !json_object_get_boolean(v) || bad(e, "logprobs", "is not supported by this server");
}

static bool read_logprobs_completion(json_object *v, serve_request *r, serve_error *e)
{
	return bad(e, "logprobs", "is not supported by this server");
}

static bool read_top_logprobs(json_object *v, serve_request *r, serve_error *e)
{
	return json_object_get_int64(v) == 0 || bad(e, "top_logprobs", "is not supported by this server");
}

static bool read_echo(json_object *v, serve_request *r, serve_error *e)
{
	return !json_object_get_boolean(v) || bad(e, "echo", "is not supported by this server");
}

static const field_spec fields[] = {
	{"model", K_BOTH, T_STRING, read_model},
	{"prompt", K_COMPLETION, T_ANY, read_prompt},
	{"messages", K_CHAT, T_ARRAY, read_messages},
	{"add_generation_prompt", K_CHAT, T_BOOL, read_add_generation_prompt},
	{"max_tokens", K_BOTH, T_INT, read_max_tokens},
	{"max_completion_tokens", K_BOTH, T_INT, read_max_completion_tokens},
	{"temperature", K_BOTH, T_NUMBER, read_temperature},
	{"top_p", K_BOTH, T_NUMBER, read_top_p},
	{"top_k", K_BOTH, T_INT, read_top_k},
	{"seed", K_BOTH, T_INT, read_seed},
	{"stop", K_BOTH, T_ANY, read_stop},
	{"stream", K_BOTH, T_BOOL, read_stream},
	{"stream_options", K_BOTH, T_OBJECT, read_stream_options},
	{"n", K_BOTH, T_INT, read_n},
	{"logprobs", K_CHAT, T_BOOL, read_logprobs_chat},
	{"logprobs", K_COMPLETION, T_INT, read_logprobs_completion},
	{"top_logprobs", K_CHAT, T_INT, read_top_logprobs},
	{"echo", K_COMPLETION, T_BOOL, read_echo},
	/* after add_generation_prompt, which it overrides */
	{"chat_template_kwargs", K_CHAT, T_OBJECT, read_template_kwargs},
};

enum { N_FIELDS = sizeof fields / sizeof fields[0] };

/* The whole body must be one JSON object, strictly formed UTF-8 JSON with
 * nothing but whitespace after it. */
static json_object *parse_body(const char *body, size_t len, serve_error *e)
{
	if (len > INT32_MAX)
		return serve_fail(e, 413, NULL, NULL, "the body is too large"), NULL;
	json_tokener *tok = json_tokener_new_ex(BODY_MAX_DEPTH);
	if (!tok)
		return serve_fail(e, 500, NULL, NULL, "out of memory"), NULL;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	json_object *v = json_tokener_parse_ex(tok, body, (int)len);
	enum json_tokener_error je = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (v && end < len && body[end] && strchr(" \t\r\n", body[end]))
		end++;
	if (!v || end != len) {
		json_object_put(v);
		return serve_fail(e, 400, "invalid_json", NULL, "the body is not valid JSON: %s",
				  v ? "text after the value" : je == json_tokener_continue ? "it ends early"
											: json_tokener_error_desc(je)),
		       NULL;
	}
	if (!json_object_is_type(v, json_type_object)) {
		json_object_put(v);
		return serve_fail(e, 400, "invalid_json", NULL, "the body must be a JSON object"), NULL;
	}
	return v;
}

static bool read_fields(serve_request *r, serve_error *e)
{
	for (int i = 0; i < N_FIELDS; i++) {
		const field_spec *f = &fields[i];
		json_object *v;
		if (!(f->kinds & (1u << r->kind)) || !json_object_object_get_ex(r->body, f->name, &v) ||
		    json_object_is_type(v, json_type_null))
			continue;
		if (!has_type(v, f->type))
			return serve_fail(e, 400, "invalid_type", f->name, "'%s' must be %s", f->name,
					  type_names[f->type]);
		if (!f->read(v, r, e))
			return false;
	}
	return true;
}

/* What every request needs: its prompt, and for chat the generation prompt
 * on unless the request turned it off. */
static bool complete(serve_request *r, serve_error *e)
{
	if (r->kind == SERVE_COMPLETION && !r->prompt && !r->prompt_ids)
		return serve_fail(e, 400, "missing_field", "prompt", "'prompt' is required");
	if (r->kind == SERVE_CHAT && !json_object_object_get_ex(r->chat_context, "messages", NULL))
		return serve_fail(e, 400, "missing_field", "messages", "'messages' is required");
	if (r->kind == SERVE_CHAT && !json_object_object_get_ex(r->chat_context, "add_generation_prompt", NULL))
		json_object_object_add(r->chat_context, "add_generation_prompt", json_object_new_boolean(1));
	return true;
}

bool serve_request_parse(serve_kind kind, const char *body, size_t len, serve_request *out, serve_error *e)
{
	*out = (serve_request){
		.kind = kind,
		/* OpenAI's defaults: temperature 1, top_p 1 */
		.sampling = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f},
	};
	if (!(out->body = parse_body(body, len, e)))
		return false;
	if (read_fields(out, e) && complete(out, e))
		return true;
	serve_request_free(out);
	return false;
}

void serve_request_free(serve_request *r)
{
	json_object_put(r->chat_context);
	json_object_put(r->body);
	free(r->prompt_ids);
	*r = (serve_request){0};
}
