/* The HTTP glue. MHD runs one thread per connection
 * (MHD_USE_THREAD_PER_CONNECTION). Why that mode: a generation takes
 * seconds to minutes, and while it runs the connection has to notice a
 * client that hangs up, so its generation can be cancelled. MHD does not
 * watch suspended connections (the internal-select alternative) for a hang
 * up, but a connection's own thread can: it waits for its job in short
 * slices and polls its socket for POLLRDHUP between them. Threads are few
 * (a local server's clients) and mostly asleep; the connection limit below
 * bounds them.
 *
 * A request's life: the first call of the access handler picks the route
 * (404, 405, or 413 when Content-Length is over --max-body); the next ones
 * collect the body; the last one parses it, prepares the prompt and queues
 * the job (400 and 503 are answered here), then either waits for the job
 * and answers with the whole reply, or answers 200 with a callback response
 * that streams the job's events as the worker writes them. */
#include "tools/serve/serve_http.h"

#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/serve/serve_response.h"

/* How long a waiting connection sleeps between looks at its socket. */
#define WAIT_SLICE_MS 100
/* Connections at once (each a thread), and how long an idle keep-alive
 * connection is kept. */
#define CONNECTION_LIMIT 256
#define IDLE_TIMEOUT_S 300
#define STREAM_BLOCK 16384
/* How long a stopping server waits for the replies still going out. */
#define STOP_DRAIN_MS 5000

struct serve_http {
	serve_http_config cfg;
	struct MHD_Daemon *daemon;
	long long created;
	uint64_t seed_base;  /* for requests without a seed */
	atomic_ullong n_replies; /* numbers reply ids and seeds */
	atomic_int open;         /* requests begun and not yet completed (sent or dropped) */
};

/* The body as it arrives. */
typedef struct {
	const struct route *route;
	char *body;
	size_t len, cap;
	bool too_large;
} conn_state;

typedef enum MHD_Result (*route_fn)(serve_http *h, struct MHD_Connection *c, conn_state *s);

typedef struct route {
	const char *path, *method;
	route_fn handle;
} route;

static enum MHD_Result send_body(struct MHD_Connection *c, unsigned status, char *body, size_t len,
				 const char *type)
{
	if (!body)
		return MHD_NO; /* out of memory: drop the connection */
	struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, const serve_error *e)
{
	size_t len = 0;
	char *body = serve_error_json(e, &len);
	return send_body(c, (unsigned)e->status, body, len, "application/json");
}

static enum MHD_Result send_models(serve_http *h, struct MHD_Connection *c, conn_state *s)
{
	size_t len = 0;
	char *body = serve_models_json(h->cfg.model_name, h->created, h->cfg.n_ctx, &len);
	return send_body(c, MHD_HTTP_OK, body, len, "application/json");
}

/* Whether the client has closed its end (or the socket failed). */
static bool client_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static int connection_fd(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	return ci ? ci->connect_fd : -1;
}

/* A stream's response reads the job's events as the worker writes them. */
typedef struct {
	serve_job *job;
	int fd;
} stream_state;

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	stream_state *st = cls;
	for (;;) {
		bool end = false;
		size_t n = serve_job_take(st->job, buf, max, WAIT_SLICE_MS, &end);
		if (n)
			return (ssize_t)n;
		if (end)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (client_gone(st->fd)) {
			serve_job_cancel(st->job);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
}

/* MHD is done with the response: a stream cut short cancels its job. */
static void stream_free(void *cls)
{
	stream_state *st = cls;
	serve_job_cancel(st->job);
	serve_job_release(st->job);
	free(st);
}

static enum MHD_Result send_stream(struct MHD_Connection *c, serve_job *j)
{
	stream_state *st = malloc(sizeof *st);
	struct MHD_Response *r =
		st ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, st, stream_free) : NULL;
	if (!r) {
		free(st);
		serve_job_cancel(j);
		serve_job_release(j);
		return MHD_NO;
	}
	*st = (stream_state){.job = j, .fd = connection_fd(c)};
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r); /* the response (and st) live until MHD has sent it */
	return ok;
}

/* A whole reply: waits for the job, cancelling it when the client leaves. */
static enum MHD_Result send_reply(struct MHD_Connection *c, serve_job *j)
{
	int fd = connection_fd(c);
	while (!serve_job_wait_done(j, WAIT_SLICE_MS))
		if (client_gone(fd)) {
			serve_job_cancel(j);
			serve_job_release(j);
			return MHD_NO;
		}
	enum MHD_Result ok;
	if (j->failed) {
		ok = send_error(c, &j->err);
	} else {
		size_t len = 0;
		serve_usage u = {j->res.prompt_tokens, j->res.completion_tokens};
		char *body = serve_reply_json(&j->head, j->out, j->out_len, halo_finish_reason_name(j->res.finish), &u,
					      &len);
		ok = send_body(c, MHD_HTTP_OK, body, len, "application/json");
	}
	serve_job_release(j);
	return ok;
}

/* The request as a job: parsed, its model checked, its prompt prepared. */
static serve_job *make_job(serve_http *h, serve_kind kind, const conn_state *s, serve_error *e)
{
	serve_request req;
	if (!serve_request_parse(kind, s->body ? s->body : "", s->len, &req, e))
		return NULL;
	int32_t *ids = NULL;
	int64_t n = 0;
	if (req.model && strcmp(req.model, h->cfg.model_name) != 0) {
		serve_fail(e, 404, "model_not_found", "model", "the model '%s' does not exist; this server runs '%s'",
			   req.model, h->cfg.model_name);
		serve_request_free(&req);
		return NULL;
	}
	if (!serve_prompt(h->cfg.prompter, &req, &ids, &n, e)) {
		serve_request_free(&req);
		return NULL;
	}
	uint64_t k = atomic_fetch_add(&h->n_replies, 1);
	serve_reply_head head = {.kind = kind, .created = (long long)time(NULL), .model = h->cfg.model_name};
	serve_reply_id(&head, h->seed_base ^ k);
	uint64_t seed = req.has_seed ? req.seed : h->seed_base + k * 0x9E3779B97F4A7C15ull;
	int64_t max_tokens = serve_max_tokens(&req, n, h->cfg.n_ctx);
	serve_job *j = serve_job_create(&req, ids, n, max_tokens, seed, &head);
	if (!j)
		serve_fail(e, 500, NULL, NULL, "out of memory");
	return j;
}

static enum MHD_Result generate(serve_http *h, struct MHD_Connection *c, conn_state *s, serve_kind kind)
{
	serve_error e;
	serve_job *j = make_job(h, kind, s, &e);
	if (!j)
		return send_error(c, &e);
	if (!serve_queue_push(h->cfg.queue, j, &e)) {
		serve_job_release(j);
		return send_error(c, &e);
	}
	return j->req.stream ? send_stream(c, j) : send_reply(c, j);
}

static enum MHD_Result handle_completions(serve_http *h, struct MHD_Connection *c, conn_state *s)
{
	return generate(h, c, s, SERVE_COMPLETION);
}

static enum MHD_Result handle_chat(serve_http *h, struct MHD_Connection *c, conn_state *s)
{
	return generate(h, c, s, SERVE_CHAT);
}

static const route routes[] = {
	{"/v1/models", MHD_HTTP_METHOD_GET, send_models},
	{"/v1/completions", MHD_HTTP_METHOD_POST, handle_completions},
	{"/v1/chat/completions", MHD_HTTP_METHOD_POST, handle_chat},
};

enum { N_ROUTES = sizeof routes / sizeof routes[0] };

/* The route for url and method, or the error that answers them. */
static const route *find_route(const char *url, const char *method, serve_error *e)
{
	const route *path_match = NULL;
	for (int i = 0; i < N_ROUTES; i++)
		if (strcmp(routes[i].path, url) == 0) {
			path_match = &routes[i];
			if (strcmp(routes[i].method, method) == 0)
				return path_match;
		}
	if (path_match)
		serve_fail(e, 405, "method_not_allowed", NULL, "%s takes %s, not %s", url, path_match->method, method);
	else
		serve_fail(e, 404, "not_found", NULL, "no route %s %s (see docs/serve.md)", method, url);
	return NULL;
}

/* The first call: the route, and a body bound checked against the
 * declared length before any of the body is read. */
static enum MHD_Result start_request(serve_http *h, struct MHD_Connection *c, const char *url, const char *method,
				     void **con_cls)
{
	serve_error e;
	const route *r = find_route(url, method, &e);
	if (!r)
		return send_error(c, &e);
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > h->cfg.max_body) {
		serve_fail(&e, 413, "body_too_large", NULL, "the body is %s bytes, more than --max-body %zu", cl,
			   h->cfg.max_body);
		return send_error(c, &e);
	}
	conn_state *s = calloc(1, sizeof *s);
	if (!s)
		return MHD_NO;
	s->route = r;
	*con_cls = s;
	atomic_fetch_add(&h->open, 1);
	return MHD_YES;
}

/* A piece of the body: kept up to max_body, the rest discarded (a chunked
 * body has no declared length to refuse early). */
static bool take_body(serve_http *h, conn_state *s, const char *data, size_t n)
{
	if (s->too_large || s->len + n > h->cfg.max_body) {
		s->too_large = true;
		return true;
	}
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		while (cap < s->len + n + 1)
			cap *= 2;
		char *p = realloc(s->body, cap);
		if (!p)
			return false;
		s->body = p;
		s->cap = cap;
	}
	memcpy(s->body + s->len, data, n);
	s->len += n;
	return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	serve_http *h = cls;
	conn_state *s = *con_cls;
	if (!s)
		return start_request(h, c, url, method, con_cls);
	if (*upload_data_size) {
		bool ok = take_body(h, s, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return ok ? MHD_YES : MHD_NO;
	}
	if (s->too_large) {
		serve_error e;
		serve_fail(&e, 413, "body_too_large", NULL, "the body is more than --max-body %zu bytes", h->cfg.max_body);
		return send_error(c, &e);
	}
	return s->route->handle(h, c, s);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	serve_http *h = cls;
	conn_state *s = *con_cls;
	if (s) {
		free(s->body);
		atomic_fetch_sub(&h->open, 1);
	}
	free(s);
	*con_cls = NULL;
}

/* host and port as a socket address (the first one a name resolves to). */
static struct addrinfo *resolve(const char *host, int port, char *err, size_t errlen)
{
	char service[16];
	snprintf(service, sizeof service, "%d", port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai = NULL;
	int rc = getaddrinfo(host, service, &hints, &ai);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve --host '%s': %s", host, gai_strerror(rc));
		return NULL;
	}
	return ai;
}

serve_http *serve_http_start(const serve_http_config *c, const char *host, int port, char *err, size_t errlen)
{
	serve_http *h = calloc(1, sizeof *h);
	struct addrinfo *ai = h ? resolve(host, port, err, errlen) : NULL;
	if (!h || !ai) {
		if (!h)
			snprintf(err, errlen, "out of memory");
		free(h);
		return NULL;
	}
	h->cfg = *c;
	h->created = (long long)time(NULL);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	h->seed_base = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
			 (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
	h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
				     MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_CONNECTION_LIMIT,
				     (unsigned)CONNECTION_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S,
				     MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!h->daemon) {
		snprintf(err, errlen, "cannot listen on %s port %d (in use, or not an address of this machine?)", host,
			 port);
		free(h);
		return NULL;
	}
	return h;
}

int serve_http_port(const serve_http *h)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
	return di ? di->port : -1;
}

void serve_http_stop(serve_http *h)
{
	if (!h)
		return;
	/* Stopping the daemon shuts every socket down, replies not yet sent
	 * included: the requests the stopped queue ended (503 shutting_down)
	 * get their replies out first, for a few seconds at most. */
	for (int i = 0; i < STOP_DRAIN_MS / 10 && atomic_load(&h->open) > 0; i++)
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	MHD_stop_daemon(h->daemon);
	free(h);
}
