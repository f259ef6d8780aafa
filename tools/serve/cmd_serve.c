/* halo serve: an OpenAI-compatible HTTP server over one bundle
 * (docs/serve.md). Loads the model, its tokenizer and chat template, starts
 * the worker sessions (serve_queue.h) and the HTTP server (serve_http.h),
 * then waits for SIGINT or SIGTERM and shuts down: waiting requests get a
 * 503, running ones are cancelled, everything is freed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat_template.h"
#include "runtime/halo.h"
#include "runtime/mtp_draft.h"
#include "runtime/spec.h"
#include "runtime/tokenizer.h"
#include "runtime/tokenizer_meta.h"
#include "tools/cli_args.h"
#include "tools/cli_tuning.h"
#include "tools/commands.h"
#include "tools/serve/serve_http.h"
#include "tools/serve/serve_prompt.h"
#include "tools/serve/serve_queue.h"

static void print_usage(FILE *out)
{
	fputs("usage: halo serve BUNDLE.halo [--backend NAME] [--device N] [--host ADDR] [--port N]\n"
	      "                  [--parallel N] [--queue N] [--max-body BYTES] [--spec none|mtp]\n"
	      "                  [--draft-n K] [--model-name NAME] [--tuning FILE | --no-tuning]\n"
	      "\n"
	      "Serves the bundle over an OpenAI-compatible HTTP API: GET /v1/models,\n"
	      "POST /v1/completions and POST /v1/chat/completions, streaming included\n"
	      "(docs/serve.md). Prints the URL on stderr once listening; SIGINT or SIGTERM\n"
	      "stop it (waiting requests get 503, running ones are cancelled).\n"
	      "\n"
	      "options:\n"
	      "  --backend NAME       ref (CPU reference, f32), vulkan (default), cuda or hip\n"
	      "  --device N           Vulkan device index (see halo devices; default: first GPU),\n"
	      "                       or the CUDA/HIP device ordinal\n"
	      "  --host ADDR          the address to listen on (default 127.0.0.1: this machine\n"
	      "                       only; 0.0.0.0 or :: for every interface)\n"
	      "  --port N             the TCP port (default 8080; 0 picks a free one)\n"
	      "  --parallel N         requests generated at once, each in its own session\n"
	      "                       (default 1)\n"
	      "  --queue N            requests that may wait for a session; more get 503\n"
	      "                       (default 64)\n"
	      "  --max-body BYTES     the largest request body; larger gets 413 (default 4194304)\n"
	      "  --spec MODE          speculative decoding for every request: none (default) or\n"
	      "                       mtp (the bundle's MTP head; see halo run --help)\n"
	      "  --draft-n K          the most drafts per round with --spec mtp, 1..7 (default 3)\n"
	      "  --model-name NAME    the model's id in the API (default: the bundle's file name\n"
	      "                       without .halo)\n"
	      "  --tuning FILE        the tuning DB Vulkan picks kernel tiles from (as halo run)\n"
	      "  --no-tuning          no tuning DB: the compiler's heuristic tile everywhere\n"
	      "  -h, --help           this text\n",
	      out);
}

typedef struct {
	const char *bundle, *backend, *device, *host, *port, *parallel, *queue, *max_body, *spec, *draft_n;
	const char *model_name, *tuning;
	bool no_tuning, help;
} serve_args;

static int parse_args(int argc, char **argv, serve_args *a)
{
	int rc = 0;
	const struct {
		const char *opt;
		const char **dst;
	} opts[] = {
		{"--backend", &a->backend}, {"--device", &a->device},     {"--host", &a->host},
		{"--port", &a->port},       {"--parallel", &a->parallel}, {"--queue", &a->queue},
		{"--max-body", &a->max_body}, {"--spec", &a->spec},       {"--draft-n", &a->draft_n},
		{"--model-name", &a->model_name}, {"--tuning", &a->tuning},
	};
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i];
		bool taken = false;
		for (size_t k = 0; k < sizeof opts / sizeof opts[0] && !taken; k++)
			taken = cli_take_value("serve", argc, argv, &i, opts[k].opt, opts[k].dst, &rc);
		if (taken)
			continue;
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (strcmp(s, "--no-tuning") == 0)
			a->no_tuning = true;
		else if (s[0] == '-')
			rc = cli_usage_error("serve", "unknown option '%s'", s);
		else if (a->bundle)
			rc = cli_usage_error("serve", "more than one bundle given ('%s')", s);
		else
			a->bundle = s;
	}
	return rc;
}

typedef struct {
	halo_open_options open;
	const char *host;
	int port, parallel, queue, draft_n;
	size_t max_body;
	bool spec_mtp;
	char model_name[256];
} serve_config;

/* A count option in [lo, hi], or its default. */
static bool take_count(const char *s, int64_t lo, int64_t hi, int64_t def, int64_t *out)
{
	*out = def;
	return !s || cli_parse_i64(s, lo, hi, out);
}

/* The bundle's file name without its directory and .halo. */
static void default_model_name(const char *bundle, char *out, size_t len)
{
	const char *base = strrchr(bundle, '/') ? strrchr(bundle, '/') + 1 : bundle;
	size_t n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".halo") == 0)
		n -= 5;
	snprintf(out, len, "%.*s", (int)n, base);
}

static int check_args(const serve_args *a, serve_config *c)
{
	int64_t port, parallel, queue, max_body, device, draft_n;
	char why[256];
	c->open = (halo_open_options){.backend = a->backend ? a->backend : "vulkan", .device = -1};
	if (!a->bundle)
		return cli_usage_error("serve", "%s", "no bundle given");
	if (!halo_backend_check(c->open.backend, why, sizeof(why)))
		return cli_usage_error("serve", "--backend: %s", why);
	if (!take_count(a->device, 0, 255, -1, &device))
		return cli_usage_error("serve", "--device wants an index, got '%s'", a->device);
	if (!take_count(a->port, 0, 65535, 8080, &port))
		return cli_usage_error("serve", "--port wants 0..65535, got '%s'", a->port);
	if (!take_count(a->parallel, 1, 64, 1, &parallel))
		return cli_usage_error("serve", "--parallel wants 1..64 sessions, got '%s'", a->parallel);
	if (!take_count(a->queue, 0, 4096, 64, &queue))
		return cli_usage_error("serve", "--queue wants 0..4096 requests, got '%s'", a->queue);
	if (!take_count(a->max_body, 1024, (int64_t)1 << 30, 4 << 20, &max_body))
		return cli_usage_error("serve", "--max-body wants 1024..1073741824 bytes, got '%s'", a->max_body);
	c->spec_mtp = a->spec && strcmp(a->spec, "mtp") == 0;
	if (a->spec && !c->spec_mtp && strcmp(a->spec, "none") != 0)
		return cli_usage_error("serve", "--spec is none or mtp, not '%s'", a->spec);
	if (a->draft_n && !c->spec_mtp)
		return cli_usage_error("serve", "%s", "--draft-n needs --spec mtp");
	if (!take_count(a->draft_n, 1, 7, 3, &draft_n))
		return cli_usage_error("serve", "--draft-n wants 1..7 drafts per round, got '%s'", a->draft_n);
	if (a->tuning && a->no_tuning)
		return cli_usage_error("serve", "%s", "--tuning and --no-tuning exclude each other");
	if (a->model_name && !*a->model_name)
		return cli_usage_error("serve", "%s", "--model-name wants a name");
	c->open.device = (int)device;
	c->host = a->host ? a->host : "127.0.0.1";
	c->port = (int)port;
	c->parallel = (int)parallel;
	c->queue = (int)queue;
	c->max_body = (size_t)max_body;
	c->draft_n = (int)draft_n;
	if (a->model_name)
		snprintf(c->model_name, sizeof c->model_name, "%s", a->model_name);
	else
		default_model_name(a->bundle, c->model_name, sizeof c->model_name);
	return 0;
}

/* Everything the server runs on; serve_free releases what was made. */
typedef struct {
	cli_tuning tuning;
	halo_model *model;
	halo_tokenizer *tok;
	halo_tokenizer_meta meta;
	halo_chat_template *tmpl;
	serve_prompter prompter;
	bool prompter_ready;
	serve_queue *queue;
	serve_http *http;
} server;

static void serve_free(server *s)
{
	serve_http_stop(s->http);
	serve_queue_free(s->queue);
	if (s->prompter_ready)
		pthread_mutex_destroy(&s->prompter.tok_lock);
	halo_chat_template_free(s->tmpl);
	halo_tokenizer_meta_free(&s->meta);
	halo_tokenizer_free(s->tok);
	halo_model_close(s->model);
	halo_tuning_db_free(s->tuning.db);
}

/* The tokenizer and its metadata (eos ids, chat template) from the bundle. */
static bool load_text(server *s, const char *bundle, char *err, size_t errlen)
{
	char label[4200];
	size_t size = 0;
	const void *json = halo_model_section(s->model, "tokenizer", &size);
	if (!json) {
		snprintf(err, errlen, "bundle %s has no tokenizer (its checkpoint had no tokenizer.json)", bundle);
		return false;
	}
	snprintf(label, sizeof label, "bundle %s: section 'tokenizer'", bundle);
	if (!(s->tok = halo_tokenizer_load_mem(json, size, label, err, errlen)))
		return false;
	json = halo_model_section(s->model, "tokenizer_meta", &size);
	snprintf(label, sizeof label, "bundle %s: section 'tokenizer_meta'", bundle);
	if (json && !halo_tokenizer_meta_parse(json, size, label, &s->meta, err, errlen))
		return false;
	snprintf(label, sizeof label, "bundle %s: tokenizer_meta chat_template", bundle);
	if (s->meta.chat_template && !(s->tmpl = halo_chat_template_parse(s->meta.chat_template,
									   s->meta.chat_template_len, label, err,
									   errlen)))
		return false;
	if (!s->meta.n_eos_ids)
		fprintf(stderr, "halo serve: warning: bundle %s names no eos token: replies end at max_tokens\n",
			bundle);
	return true;
}

/* A drafter that does not fit the bundle is refused before serving. */
static bool check_drafter(const serve_config *c, const halo_model *m, const char *bundle, char *err,
			  size_t errlen)
{
	char why[1536];
	if (!c->spec_mtp || (halo_spec_check_model(m, HALO_MTP_STEP_ENTRY, c->draft_n, why, sizeof why) &&
			     halo_mtp_check_model(m, why, sizeof why)))
		return true;
	snprintf(err, errlen, "--spec mtp refused: %s: %s", bundle, why);
	return false;
}

static bool start(server *s, const serve_args *a, const serve_config *c, char *err, size_t errlen)
{
	halo_open_options open = c->open;
	bool want_db = !a->no_tuning && (a->tuning || strcmp(open.backend, "vulkan") == 0);
	if (want_db && !cli_tuning_open("serve", a->tuning, false, &s->tuning, err, errlen))
		return false;
	open.tuning = s->tuning.db;
	if (!(s->model = halo_model_open(a->bundle, &open, err, errlen)) ||
	    !check_drafter(c, s->model, a->bundle, err, errlen) || !load_text(s, a->bundle, err, errlen))
		return false;
	s->prompter = (serve_prompter){
		.tok = s->tok, .tmpl = s->tmpl, .bos_token = s->meta.bos.text, .eos_token = s->meta.eos.text,
		.vocab = halo_model_vocab(s->model), .n_ctx = halo_model_n_ctx(s->model),
	};
	pthread_mutex_init(&s->prompter.tok_lock, NULL);
	s->prompter_ready = true;
	serve_queue_config qc = {
		.model = s->model, .tok = s->tok, .eos_ids = s->meta.eos_ids, .n_eos = s->meta.n_eos_ids,
		.spec_mtp = c->spec_mtp, .draft_n = c->draft_n, .parallel = c->parallel, .capacity = c->queue,
	};
	if (!(s->queue = serve_queue_create(&qc, err, errlen)))
		return false;
	serve_http_config hc = {
		.model_name = c->model_name, .max_body = c->max_body, .n_ctx = halo_model_n_ctx(s->model),
		.prompter = &s->prompter, .queue = s->queue,
	};
	return (s->http = serve_http_start(&hc, c->host, c->port, err, errlen)) != NULL;
}

/* Blocks until SIGINT or SIGTERM. They are blocked in every thread (the
 * workers and MHD's inherit the mask), so only this wait receives them. */
static void wait_for_stop(const sigset_t *set)
{
	int sig = 0;
	sigwait(set, &sig);
	fprintf(stderr, "halo serve: %s, stopping\n", sig == SIGINT ? "interrupted" : "terminated");
}

int cmd_serve(int argc, char **argv)
{
	serve_args a = {0};
	serve_config c;
	int rc = parse_args(argc, argv, &a);
	if (rc || a.help) {
		if (a.help)
			print_usage(stdout);
		return rc;
	}
	if ((rc = check_args(&a, &c)))
		return rc;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client that leaves must not end the server */
	server s = {0};
	char err[4096];
	if (!start(&s, &a, &c, err, sizeof err)) {
		fprintf(stderr, "halo serve: %s\n", err);
		serve_free(&s);
		return 1;
	}
	bool v6 = strchr(c.host, ':') != NULL;
	fprintf(stderr, "halo serve: listening on http://%s%s%s:%d (model '%s', %d session(s), queue %d)\n",
		v6 ? "[" : "", c.host, v6 ? "]" : "", serve_http_port(s.http), c.model_name, c.parallel, c.queue);
	wait_for_stop(&set);
	/* the queue first: connections wait for their jobs to end */
	serve_queue_stop(s.queue);
	serve_free(&s);
	return 0;
}
