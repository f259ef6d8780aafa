/* halo serve's response bodies in OpenAI's shapes: errors, the model list,
 * whole completions (text_completion, chat.completion) and the server-sent
 * events of a stream ("data: JSON\n\n" chunks, then "data: [DONE]\n\n").
 * Text is JSON-escaped here, so generated text of any bytes stays valid
 * JSON. Every function returns a malloc'd, NUL-terminated body (*len bytes)
 * that the caller frees, or NULL when memory runs out. */
#ifndef HALO_TOOLS_SERVE_RESPONSE_H
#define HALO_TOOLS_SERVE_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/serve/serve_error.h"
#include "tools/serve/serve_request.h"

/* What every body of one reply repeats. */
typedef struct {
	serve_kind kind;
	char id[48];       /* "cmpl-..." or "chatcmpl-..." (serve_reply_id) */
	long long created; /* Unix seconds */
	const char *model; /* borrowed */
} serve_reply_head;

typedef struct {
	int64_t prompt_tokens, completion_tokens;
} serve_usage;

/* Fills h->id from kind and a number unique to the reply. */
void serve_reply_id(serve_reply_head *h, uint64_t unique);

char *serve_error_json(const serve_error *e, size_t *len);
/* GET /v1/models: the one model this server runs. */
char *serve_models_json(const char *model, long long created, int64_t n_ctx, size_t *len);
/* A whole reply; finish is "stop" or "length". */
char *serve_reply_json(const serve_reply_head *h, const char *text, size_t text_len, const char *finish,
		       const serve_usage *u, size_t *len);

typedef enum {
	SERVE_CHUNK_ROLE,   /* chat's first chunk: delta {"role": "assistant", "content": ""} */
	SERVE_CHUNK_TEXT,   /* a piece of text */
	SERVE_CHUNK_FINISH, /* empty delta with the finish reason */
	SERVE_CHUNK_USAGE,  /* stream_options.include_usage: no choices, the usage */
} serve_chunk_kind;

typedef struct {
	serve_chunk_kind kind;
	const char *text; /* SERVE_CHUNK_TEXT */
	size_t text_len;
	const char *finish;       /* SERVE_CHUNK_FINISH */
	const serve_usage *usage; /* SERVE_CHUNK_USAGE */
	bool usage_field;         /* include_usage: other chunks carry "usage": null */
} serve_chunk;

/* One SSE event "data: {...}\n\n". */
char *serve_chunk_sse(const serve_reply_head *h, const serve_chunk *c, size_t *len);
/* An error inside a stream that has already answered 200: "data: {"error": ...}\n\n". */
char *serve_error_sse(const serve_error *e, size_t *len);

/* The event that ends every stream. */
#define SERVE_SSE_DONE "data: [DONE]\n\n"

#endif
