/* halo serve's request bodies: the JSON of POST /v1/completions and POST
 * /v1/chat/completions read into a typed request, or refused with the
 * OpenAI-shaped error (serve_error.h) that names the field at fault. Fields
 * this server does not know are ignored, as OpenAI clients send extras;
 * known fields of the wrong type or out of range are refused (400); null is
 * read as "not given", as the OpenAI clients send it for unset options.
 * docs/serve.md lists the fields.
 *
 * Ownership: the request owns the parsed body; every string in it points
 * into that body and lives until serve_request_free. Nothing is shared with
 * other requests, so a request may move to another thread (json-c's
 * reference counts are not atomic: the body and chat_context must be used
 * by one thread at a time). */
#ifndef HALO_TOOLS_SERVE_REQUEST_H
#define HALO_TOOLS_SERVE_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/sample.h"
#include "tools/serve/serve_error.h"

struct json_object;

typedef enum { SERVE_COMPLETION, SERVE_CHAT } serve_kind;

/* The most stop strings a request may give (OpenAI allows 4; vLLM more). */
#define SERVE_MAX_STOP 16

typedef struct {
	serve_kind kind;
	struct json_object *body; /* the parsed body */
	const char *model;        /* NULL when not given */
	/* Completions: the prompt as text (prompt != NULL, prompt_len bytes,
	 * may hold NUL) or as token ids (prompt_ids, malloc'd). */
	const char *prompt;
	size_t prompt_len;
	int32_t *prompt_ids;
	size_t n_prompt_ids;
	/* Chat: what apply_chat_template gets (runtime/chat_template.h):
	 * "messages" with each content as text, "add_generation_prompt", and
	 * chat_template_kwargs' keys (e.g. enable_thinking), as vLLM passes them. */
	struct json_object *chat_context;
	int64_t max_tokens; /* 0: not given (the server's default) */
	halo_sampling sampling;
	bool has_seed;
	uint64_t seed;
	const char *stop[SERVE_MAX_STOP]; /* NUL-terminated, non-empty */
	size_t n_stop;
	bool stream, include_usage;
} serve_request;

/* Parses body (len bytes, need not be NUL-terminated) for route kind into
 * *out. On failure returns false with e filled (status 400) and *out left
 * empty (serve_request_free on it is still fine). */
bool serve_request_parse(serve_kind kind, const char *body, size_t len, serve_request *out, serve_error *e);
void serve_request_free(serve_request *r);

#endif
