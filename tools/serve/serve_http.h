/* halo serve's HTTP side (libmicrohttpd): the routes of the OpenAI API,
 * request bodies read up to a bound, prompts prepared and queued as jobs,
 * and replies sent whole or streamed as server-sent events.
 *
 * Ownership: the prompter and queue are borrowed and must outlive the
 * server (serve_http_stop first). */
#ifndef HALO_TOOLS_SERVE_HTTP_H
#define HALO_TOOLS_SERVE_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "tools/serve/serve_prompt.h"
#include "tools/serve/serve_queue.h"

typedef struct {
	const char *model_name;
	size_t max_body; /* bytes; a larger body gets 413 */
	int64_t n_ctx;
	serve_prompter *prompter;
	serve_queue *queue;
} serve_http_config;

typedef struct serve_http serve_http;

/* Listens on host (a numeric IPv4 or IPv6 address or a name) and port (0:
 * any free port); NULL with a message when it cannot. */
serve_http *serve_http_start(const serve_http_config *c, const char *host, int port, char *err, size_t errlen);
/* The port it listens on (the one picked for port 0). */
int serve_http_port(const serve_http *h);
/* Stops listening, closes every connection (their threads are joined) and
 * frees h. Stop the queue first: a connection waits for its job to end. */
void serve_http_stop(serve_http *h);

#endif
