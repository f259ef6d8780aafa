/* halo serve's errors in the shape OpenAI's API gives them:
 *   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
 * with the HTTP status that goes with them. Every layer of the server (the
 * request parser, the queue, the HTTP glue) reports through one of these, so
 * a client sees the same shape whatever refused its request; serve_response.h
 * writes the body. */
#ifndef HALO_TOOLS_SERVE_ERROR_H
#define HALO_TOOLS_SERVE_ERROR_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	int status;        /* HTTP status: 400, 404, 405, 413, 500, 503 */
	const char *type;  /* "invalid_request_error", "server_error" (static storage) */
	const char *code;  /* a machine-readable reason or NULL (static storage) */
	char param[64];    /* the request field at fault, "" when none (JSON null) */
	char message[512];
} serve_error;

/* Fills e: type follows from the status (5xx: "server_error", else
 * "invalid_request_error"); param may be NULL. Returns false, so a parser
 * can `return serve_fail(...)`. */
bool serve_fail(serve_error *e, int status, const char *code, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
