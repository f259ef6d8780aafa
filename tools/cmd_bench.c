/* halo bench: llama-bench's two tests on one loaded bundle, timed inside
 * one process. ppN: a prompt of N tokens through halo_session_prefill
 * (prefill_last where the bundle has it), from an empty session. tgN: N
 * single-token decode steps from an empty session. Each test runs once
 * untimed first: a GPU that has idled (the model load) runs its first
 * hundreds of milliseconds of work at a fraction of its clock, and a
 * process per repetition would time that ramp, not the kernels. The tokens
 * are fixed ids (nothing is sampled), as llama-bench's are. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/halo.h"
#include "tools/cli_args.h"
#include "tools/cli_gen.h"
#include "tools/commands.h"

static void bench_usage(FILE *out)
{
	fputs("usage: halo bench BUNDLE.halo [-p N] [-n N] [-d N] [-r N] [--output md|json]\n"
	      "                  [--backend NAME] [--device N] [--tuning FILE | --no-tuning]\n"
	      "                  [--validate]\n"
	      "\n"
	      "Times prompt processing (ppN: an N-token prompt from an empty context) and\n"
	      "generation (tgN: N decode steps of one token from an empty context) on one\n"
	      "loaded bundle, as llama-bench does: each test once untimed, then repeated.\n"
	      "With -d D both start from a context already holding D tokens (prefilled,\n"
	      "untimed, before every run: ppN @ dD, tgN @ dD), which times attention over\n"
	      "a long cache. Prints a table of tokens/s (mean and standard deviation over\n"
	      "the repetitions) on stdout.\n"
	      "\n"
	      "options:\n"
	      "  -p, --n-prompt N     prompt tokens of the pp test; 0 skips it (default 512)\n"
	      "  -n, --n-gen N        generated tokens of the tg test; 0 skips it (default 128)\n"
	      "  -d, --n-depth N      tokens already in the context when each test starts (default 0)\n"
	      "  -r, --repetitions N  timed runs of each test (default 5)\n"
	      "  -o, --output FMT     md (default) or json\n"
	      "  --backend NAME       ref, vulkan (default), cuda or hip\n"
	      "  --device N           Vulkan device index (halo devices), or the CUDA/HIP device ordinal\n"
	      "  --tuning FILE        the tuning DB to pick kernel tiles from (as halo run)\n"
	      "  --no-tuning          the compiler's heuristic tiles everywhere\n"
	      "  --validate           Vulkan validation layer on; any message fails the run\n"
	      "  -h, --help           this text\n",
	      out);
}

typedef struct {
	const char *bundle, *n_prompt, *n_gen, *depth, *reps, *output;
	bool help;
	cli_gen_args gen;
} bench_args;

/* The shared flags halo bench takes: the others (sampling, speculation)
 * have no meaning for fixed-token timing and are refused as unknown. */
static bool shared_flag(const char *s)
{
	static const char *const ok[] = {"--backend", "--device", "--tuning", "--no-tuning", "--validate"};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		size_t n = strlen(ok[i]);
		if (strncmp(s, ok[i], n) == 0 && (s[n] == 0 || s[n] == '='))
			return true;
	}
	return false;
}

static int parse_args(int argc, char **argv, bench_args *a)
{
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (cli_take_value("bench", argc, argv, &i, "-p", &a->n_prompt, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "--n-prompt", &a->n_prompt, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "-n", &a->n_gen, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "--n-gen", &a->n_gen, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "-d", &a->depth, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "--n-depth", &a->depth, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "-r", &a->reps, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "--repetitions", &a->reps, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "-o", &a->output, &rc) ||
			 cli_take_value("bench", argc, argv, &i, "--output", &a->output, &rc) ||
			 (shared_flag(s) && cli_gen_take("bench", argc, argv, &i, &a->gen, &rc)))
			continue;
		else if (s[0] == '-')
			rc = cli_usage_error("bench", "unknown option '%s'", s);
		else if (a->bundle)
			rc = cli_usage_error("bench", "more than one bundle given ('%s')", s);
		else
			a->bundle = s;
	}
	return rc;
}

typedef struct {
	int64_t n_prompt, n_gen, depth, reps;
	bool json;
} bench_config;

/* A count flag: absent keeps *out; otherwise a whole number in [lo, hi]. */
static int count_flag(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
	if (!v)
		return 0;
	if (!cli_parse_i64(v, lo, hi, out)) {
		char msg[96];
		snprintf(msg, sizeof msg, "%s wants a whole number in [%lld, %lld], got '%%s'", flag, (long long)lo,
			 (long long)hi);
		return cli_usage_error("bench", msg, v);
	}
	return 0;
}

static int check_args(const bench_args *a, bench_config *b, cli_gen_config *c)
{
	if (!a->bundle)
		return cli_usage_error("bench", "%s", "no bundle given");
	*b = (bench_config){.n_prompt = 512, .n_gen = 128, .reps = 5};
	int rc = count_flag("-p", a->n_prompt, 0, INT32_MAX, &b->n_prompt);
	rc = rc ? rc : count_flag("-n", a->n_gen, 0, INT32_MAX, &b->n_gen);
	rc = rc ? rc : count_flag("-d", a->depth, 0, INT32_MAX, &b->depth);
	rc = rc ? rc : count_flag("-r", a->reps, 1, 1000, &b->reps);
	if (rc)
		return rc;
	if (a->output && strcmp(a->output, "md") != 0 && strcmp(a->output, "json") != 0)
		return cli_usage_error("bench", "--output wants md or json, got '%s'", a->output);
	b->json = a->output && strcmp(a->output, "json") == 0;
	if (b->n_prompt == 0 && b->n_gen == 0)
		return cli_usage_error("bench", "%s", "-p 0 and -n 0 leave nothing to time");
	c->n_predict = 1;
	return cli_gen_check("bench", &a->gen, c);
}

typedef struct {
	halo_model *model;
	halo_session *session;
	int32_t *tokens; /* the depth's tokens, then the test's */
	int64_t depth;
	cli_tuning tuning;
} bench_state;

/* Token i of both tests: fixed ids below the vocabulary. */
static int32_t token_at(int64_t i, int64_t vocab)
{
	int64_t span = vocab > 1001 ? 1000 : vocab - 1;
	return (int32_t)(1 + i % span);
}

/* An emptied session, then the depth's tokens prefilled (untimed). */
static bool start_at_depth(bench_state *st, char *err, size_t errlen)
{
	return halo_session_reset(st->session, err, errlen) &&
	       (!st->depth || halo_session_prefill(st->session, st->tokens, st->depth, NULL, NULL, err, errlen));
}

/* One run of a test from a session holding the depth; its seconds in *s. */
static bool run_pp(bench_state *st, int64_t n, double *s, char *err, size_t errlen)
{
	if (!start_at_depth(st, err, errlen))
		return false;
	double t0 = cli_now_s();
	bool ok = halo_session_prefill(st->session, st->tokens + st->depth, n, NULL, NULL, err, errlen);
	*s = cli_now_s() - t0;
	return ok;
}

static bool run_tg(bench_state *st, int64_t n, double *s, char *err, size_t errlen)
{
	if (!start_at_depth(st, err, errlen))
		return false;
	const int32_t *tok = st->tokens + st->depth;
	double t0 = cli_now_s();
	bool ok = true;
	for (int64_t i = 0; ok && i < n; i++)
		ok = halo_session_step(st->session, "decode", &tok[i], 1, NULL, err, errlen);
	*s = cli_now_s() - t0;
	return ok;
}

typedef bool (*bench_test_fn)(bench_state *st, int64_t n, double *s, char *err, size_t errlen);

typedef struct {
	char name[48];
	int64_t n, depth;
	double mean, sd; /* tokens/s over the repetitions */
	double *ts;      /* per repetition */
} bench_result;

/* One untimed run, then reps timed ones. */
static bool run_test(bench_state *st, bench_test_fn fn, int64_t n, int64_t reps, bench_result *r, char *err,
		     size_t errlen)
{
	double s;
	if (!fn(st, n, &s, err, errlen))
		return false;
	double sum = 0, sq = 0;
	for (int64_t i = 0; i < reps; i++) {
		if (!fn(st, n, &s, err, errlen))
			return false;
		r->ts[i] = (double)n / s;
		sum += r->ts[i];
	}
	r->mean = sum / (double)reps;
	for (int64_t i = 0; i < reps; i++)
		sq += (r->ts[i] - r->mean) * (r->ts[i] - r->mean);
	r->sd = reps > 1 ? sqrt(sq / (double)(reps - 1)) : 0.0;
	return true;
}

static void print_md(const char *bundle, const char *backend, const bench_result *r, int n)
{
	printf("| bundle | backend | test | t/s |\n|---|---|---|---:|\n");
	for (int i = 0; i < n; i++)
		printf("| %s | %s | %s | %.2f ± %.2f |\n", bundle, backend, r[i].name, r[i].mean, r[i].sd);
}

/* JSON strings here are the bundle path: escape what JSON requires. */
static void put_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void print_json(const char *bundle, const char *backend, const bench_result *r, int n, int64_t reps)
{
	printf("[\n");
	for (int i = 0; i < n; i++) {
		printf(" {\"bundle\": ");
		put_json_str(bundle);
		printf(", \"backend\": \"%s\", \"test\": \"%s\", \"n\": %lld, \"n_depth\": %lld, \"avg_ts\": %.4f, "
		       "\"stddev_ts\": %.4f, \"samples_ts\": [",
		       backend, r[i].name, (long long)r[i].n, (long long)r[i].depth, r[i].mean, r[i].sd);
		for (int64_t k = 0; k < reps; k++)
			printf("%s%.4f", k ? ", " : "", r[i].ts[k]);
		printf("]}%s\n", i + 1 < n ? "," : "");
	}
	printf("]\n");
}

static void bench_free(bench_state *st)
{
	halo_session_free(st->session);
	halo_model_close(st->model);
	halo_tuning_db_free(st->tuning.db);
	free(st->tokens);
}

/* Opens the bundle and a session, and the fixed tokens of both tests. */
static bool bench_open(bench_state *st, const bench_args *a, cli_gen_config *c, const bench_config *b, char *err,
		       size_t errlen)
{
	st->model = cli_gen_open("bench", a->bundle, &a->gen, c, &st->tuning, err, errlen);
	st->session = st->model ? halo_session_create(st->model, err, errlen) : NULL;
	if (!st->session)
		return false;
	int64_t vocab = halo_model_vocab(st->model), n_ctx = halo_model_n_ctx(st->model);
	int64_t n = b->depth + (b->n_prompt > b->n_gen ? b->n_prompt : b->n_gen);
	if (n > n_ctx) {
		snprintf(err, errlen,
			 "%s: a test of %lld tokens at depth %lld does not fit the bundle's context of %lld tokens",
			 a->bundle, (long long)(n - b->depth), (long long)b->depth, (long long)n_ctx);
		return false;
	}
	st->depth = b->depth;
	st->tokens = malloc((size_t)n * sizeof *st->tokens + 1);
	if (!st->tokens) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	for (int64_t i = 0; i < n; i++)
		st->tokens[i] = token_at(i, vocab);
	return true;
}

int cmd_bench(int argc, char **argv)
{
	bench_args a = {0};
	int rc = parse_args(argc, argv, &a);
	if (rc || a.help) {
		bench_usage(rc ? stderr : stdout);
		return rc;
	}
	bench_config b;
	cli_gen_config c = {0};
	if ((rc = check_args(&a, &b, &c)))
		return rc;
	char err[1024] = "";
	bench_state st = {0};
	double *ts = calloc((size_t)(2 * b.reps), sizeof *ts);
	bench_result r[2] = {{.ts = ts}, {.ts = ts ? ts + b.reps : NULL}};
	int n = 0;
	bool ok = ts && bench_open(&st, &a, &c, &b, err, sizeof err);
	if (!ts)
		snprintf(err, sizeof err, "out of memory");
	static const struct {
		const char *kind;
		bench_test_fn fn;
	} tests[2] = {{"pp", run_pp}, {"tg", run_tg}};
	for (int i = 0; i < 2 && ok; i++) {
		int64_t count = i == 0 ? b.n_prompt : b.n_gen;
		if (!count)
			continue;
		/* llama-bench's names: tg128, tg128 @ d32768 */
		int len = snprintf(r[n].name, sizeof r[n].name, "%s%lld", tests[i].kind, (long long)count);
		if (b.depth)
			snprintf(r[n].name + len, sizeof r[n].name - (size_t)len, " @ d%lld", (long long)b.depth);
		r[n].n = count;
		r[n].depth = b.depth;
		ok = run_test(&st, tests[i].fn, count, b.reps, &r[n++], err, sizeof err);
	}
	if (ok && halo_model_validation_messages(st.model)) {
		snprintf(err, sizeof err, "the Vulkan validation layer reported %d messages",
			 halo_model_validation_messages(st.model));
		ok = false;
	}
	const char *backend = c.open.backend;
	if (ok && b.json)
		print_json(a.bundle, backend, r, n, b.reps);
	else if (ok)
		print_md(a.bundle, backend, r, n);
	else
		fprintf(stderr, "halo bench: %s\n", err);
	bench_free(&st);
	free(ts);
	return ok ? 0 : 1;
}
