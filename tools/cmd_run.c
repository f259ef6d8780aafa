/* halo run: loads a bundle, feeds a prompt, generates. Generated ids go to
 * stdout as one line of space-separated integers; statistics to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/halo.h"
#include "runtime/sample.h"
#include "runtime/mtp_draft.h"
#include "runtime/spec.h"
#include "tools/cli_args.h"
#include "tools/cli_tuning.h"
#include "tools/commands.h"

static void run_usage(FILE *out)
{
	fputs("usage: halo run BUNDLE.halo --tokens ID,ID,... [--n-predict N] [--backend ref|vulkan]\n"
	      "                [--device N] [--temp T] [--top-k K] [--top-p P] [--seed S]\n"
	      "                [--logits-out FILE] [--validate] [--profile] [--spec none|mtp]\n"
	      "                [--draft-n K] [--draft-fixed] [--tuning FILE | --no-tuning]\n"
	      "\n"
	      "Runs the prompt through the bundle's prefill entry, then generates N tokens with\n"
	      "its decode entry. Prints the generated ids on stdout, statistics on stderr.\n"
	      "\n"
	      "options:\n"
	      "  --tokens LIST        prompt token ids, comma-separated (required)\n"
	      "  --n-predict N        tokens to generate (default 16)\n"
	      "  --backend NAME       ref (CPU reference, f32) or vulkan (default)\n"
	      "  --device N           Vulkan device index (see halo devices; default: first GPU)\n"
	      "  --temp T             sampling temperature; 0 = greedy (default 0)\n"
	      "  --top-k K            keep the K most likely tokens (default 0 = off)\n"
	      "  --top-p P            keep the smallest set with mass >= P (default 1 = off)\n"
	      "  --seed S             sampler seed (default 0); same seed, same output\n"
	      "  --logits-out FILE    write the logits of every prompt position: little-endian\n"
	      "                       f32 [prompt_len, vocab]\n"
	      "  --validate           Vulkan validation layer on; any message fails the run\n"
	      "  --profile            time every dispatch of the generated tokens; print the\n"
	      "                       ten costliest kernels on stderr\n"
	      "  --spec MODE          speculative decoding: none (default) or mtp (drafts from the\n"
	      "                       model's MTP head; the bundle needs its draft entry points)\n"
	      "  --draft-n K          the most drafts per round with --spec mtp, 1..7 and at most\n"
	      "                       what the bundle verifies (halo compile --draft-max; default\n"
	      "                       3). Each round drafts as many as the acceptance so far pays\n"
	      "                       for, none (plain decode, probing now and then) when drafts\n"
	      "                       are rarely right; the tokens never depend on it\n"
	      "  --draft-fixed        draft exactly K every round (benchmarks)\n"
	      "  --tuning FILE        the tuning DB (halo tune) Vulkan picks kernel tiles from\n"
	      "                       (default: $XDG_CACHE_HOME/halo/tuning.json when it exists;\n"
	      "                       a broken default is ignored with a warning, a broken FILE\n"
	      "                       fails the run)\n"
	      "  --no-tuning          no tuning DB: the compiler's heuristic tile everywhere\n"
	      "  -h, --help           this text\n",
	      out);
}

typedef struct {
	const char *bundle, *tokens, *n_predict, *backend, *device, *temp, *top_k, *top_p, *seed, *logits_out;
	const char *spec, *draft_n, *tuning;
	bool validate, profile, no_tuning, draft_fixed, help;
} run_args;

static int parse_args(int argc, char **argv, run_args *a)
{
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (strcmp(s, "--validate") == 0)
			a->validate = true;
		else if (strcmp(s, "--profile") == 0)
			a->profile = true;
		else if (strcmp(s, "--no-tuning") == 0)
			a->no_tuning = true;
		else if (strcmp(s, "--draft-fixed") == 0)
			a->draft_fixed = true;
		else if (cli_take_value("run", argc, argv, &i, "--tokens", &a->tokens, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--n-predict", &a->n_predict, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--backend", &a->backend, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--device", &a->device, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--temp", &a->temp, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--top-k", &a->top_k, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--top-p", &a->top_p, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--seed", &a->seed, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--logits-out", &a->logits_out, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--spec", &a->spec, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--draft-n", &a->draft_n, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--tuning", &a->tuning, &rc))
			continue;
		else if (s[0] == '-')
			rc = cli_usage_error("run", "unknown option '%s'", s);
		else if (a->bundle)
			rc = cli_usage_error("run", "more than one bundle given ('%s')", s);
		else
			a->bundle = s;
	}
	return rc;
}

/* "1,2,3" -> malloc'd ids; NULL (with a usage error printed) when malformed. */
static int32_t *parse_tokens(const char *s, int64_t *n)
{
	int64_t cap = 1;
	for (const char *p = s; *p; p++)
		cap += *p == ',';
	int32_t *ids = malloc((size_t)cap * sizeof(*ids));
	char *copy = strdup(s);
	*n = 0;
	bool ok = ids && copy && *s;
	for (char *save = NULL, *tok = ok ? strtok_r(copy, ",", &save) : NULL; ok && tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int64_t v;
		ok = cli_parse_i64(tok, 0, INT32_MAX, &v);
		if (ok)
			ids[(*n)++] = (int32_t)v;
	}
	free(copy);
	if (!ok || *n == 0 || *n != cap) {
		cli_usage_error("run", "--tokens wants comma-separated non-negative ids, got '%s'", s);
		free(ids);
		return NULL;
	}
	return ids;
}

/* The CLI's bound on drafts per round: what halo compile --draft-max allows. */
#define RUN_DRAFT_N_MAX 7

typedef struct {
	int64_t n_predict, device, top_k;
	bool spec_mtp, draft_fixed;
	int draft_n;
	uint64_t seed;
	halo_sampling sampling;
	halo_open_options open;
} run_config;

static int check_spec_args(const run_args *a, run_config *c)
{
	int64_t v;
	c->spec_mtp = a->spec && strcmp(a->spec, "mtp") == 0;
	c->draft_n = 3;
	c->draft_fixed = a->draft_fixed;
	if (a->spec && !c->spec_mtp && strcmp(a->spec, "none") != 0)
		return cli_usage_error("run", "--spec is none or mtp, not '%s'", a->spec);
	if ((a->draft_n || a->draft_fixed) && !c->spec_mtp)
		return cli_usage_error("run", "%s", "--draft-n and --draft-fixed need --spec mtp");
	if (a->draft_n && !cli_parse_i64(a->draft_n, 1, RUN_DRAFT_N_MAX, &v))
		return cli_usage_error("run", "--draft-n wants 1..7 drafts per round, got '%s'", a->draft_n);
	if (a->draft_n)
		c->draft_n = (int)v;
	return 0;
}

static int check_args(const run_args *a, run_config *c)
{
	int64_t v;
	c->n_predict = 16;
	c->device = -1;
	c->sampling = (halo_sampling){.temperature = 0, .top_k = 0, .top_p = 1.0f};
	c->open = (halo_open_options){.backend = HALO_BACKEND_VULKAN, .device = -1, .validation = a->validate};
	if (!a->bundle)
		return cli_usage_error("run", "%s", "no bundle given");
	if (!a->tokens)
		return cli_usage_error("run", "%s", "--tokens is required");
	if (a->n_predict && !cli_parse_i64(a->n_predict, 0, 1 << 24, &c->n_predict))
		return cli_usage_error("run", "--n-predict wants a count, got '%s'", a->n_predict);
	if (a->backend && strcmp(a->backend, "ref") == 0)
		c->open.backend = HALO_BACKEND_REF;
	else if (a->backend && strcmp(a->backend, "vulkan") != 0)
		return cli_usage_error("run", "--backend is ref or vulkan, not '%s'", a->backend);
	if (a->device && !cli_parse_i64(a->device, 0, 255, &v))
		return cli_usage_error("run", "--device wants an index, got '%s'", a->device);
	if (a->device)
		c->open.device = (int)v;
	if (a->temp && (!cli_parse_f32(a->temp, &c->sampling.temperature) || c->sampling.temperature < 0))
		return cli_usage_error("run", "--temp wants a number >= 0, got '%s'", a->temp);
	if (a->top_k && !cli_parse_i64(a->top_k, 0, INT32_MAX, &v))
		return cli_usage_error("run", "--top-k wants a count, got '%s'", a->top_k);
	if (a->top_k)
		c->sampling.top_k = (int)v;
	if (a->top_p && (!cli_parse_f32(a->top_p, &c->sampling.top_p) || c->sampling.top_p <= 0 ||
			 c->sampling.top_p > 1))
		return cli_usage_error("run", "--top-p wants a number in (0, 1], got '%s'", a->top_p);
	if (a->seed && !cli_parse_i64(a->seed, 0, INT64_MAX, &v))
		return cli_usage_error("run", "--seed wants a non-negative integer, got '%s'", a->seed);
	c->seed = a->seed ? (uint64_t)v : 0;
	if (a->tuning && a->no_tuning)
		return cli_usage_error("run", "%s", "--tuning and --no-tuning exclude each other");
	return check_spec_args(a, c);
}

/* Writes n*vocab floats via a temp file renamed at the end. */
static bool write_logits(const char *path, const float *logits, size_t count, char *err, size_t errlen)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "wb");
	bool ok = f && fwrite(logits, sizeof(float), count, f) == count;
	if (f && fclose(f) != 0)
		ok = false;
	if (ok && rename(tmp, path) != 0)
		ok = false;
	if (!ok) {
		remove(tmp);
		snprintf(err, errlen, "%s: cannot write the logits", path);
	}
	return ok;
}

typedef struct {
	halo_model *model;
	halo_session *session;
	float *logits, *probs;
	int32_t *scratch, *tokens;
	cli_tuning tuning;
} run_state;

static void run_free(run_state *r)
{
	halo_session_free(r->session);
	halo_model_close(r->model);
	halo_tuning_db_free(r->tuning.db);
	free(r->logits);
	free(r->probs);
	free(r->scratch);
	free(r->tokens);
}

/* Plain decoding: one `decode` step per token. */
static bool decode(run_state *r, const run_config *c, float *row, char *err, size_t errlen)
{
	int64_t vocab = halo_model_vocab(r->model);
	halo_rng rng;
	halo_rng_seed(&rng, c->seed);
	for (int64_t i = 0; i < c->n_predict; i++) {
		int32_t next = halo_sample(&c->sampling, row, vocab, &rng, r->probs, r->scratch);
		printf("%s%d", i ? " " : "", next);
		if (i + 1 < c->n_predict && !halo_session_step(r->session, "decode", &next, 1, row, err, errlen))
			return false;
	}
	printf("\n");
	return true;
}

/* --spec mtp: rounds of up to draft_n MTP drafts verified by one `verify` step. */
static bool speculate(run_state *r, const run_config *c, int64_t n_prompt, const float *row, char *err,
		      size_t errlen)
{
	halo_mtp_drafter *md = halo_mtp_drafter_create(r->model, r->session, &c->sampling, c->seed, err, errlen);
	int32_t *out = malloc((size_t)c->n_predict * sizeof(int32_t));
	if (!md || !out) {
		if (md)
			snprintf(err, errlen, "out of memory");
		halo_mtp_drafter_free(md);
		free(out);
		return false;
	}
	halo_drafter d = halo_mtp_drafter_iface(md);
	halo_spec_options o = {.k = c->draft_n, .adaptive = !c->draft_fixed, .sampling = c->sampling, .seed = c->seed};
	halo_spec_stats st;
	bool ok = halo_spec_generate(r->model, r->session, &d, &o, r->tokens, n_prompt, row, c->n_predict, out, &st,
				     err, errlen);
	for (int64_t i = 0; i < st.emitted; i++)
		printf("%s%d", i ? " " : "", out[i]);
	printf("\n");
	halo_spec_stats_print(&st, c->draft_n, stderr);
	halo_mtp_drafter_free(md);
	free(out);
	return ok;
}

static bool generate(run_state *r, const run_config *c, const run_args *a, int64_t n_prompt, char *err,
		     size_t errlen)
{
	int64_t vocab = halo_model_vocab(r->model);
	float *row = r->logits + (size_t)(n_prompt - 1) * (size_t)vocab;
	double t0 = cli_now_s();
	/* All rows only when asked for: a bundle may return just the last one. */
	if (!halo_session_prefill(r->session, r->tokens, n_prompt, a->logits_out ? r->logits : NULL, row, err,
				  errlen))
		return false;
	double t1 = cli_now_s();
	if (a->logits_out && !write_logits(a->logits_out, r->logits, (size_t)(n_prompt * vocab), err, errlen))
		return false;
	/* Decode only: the prompt's own timing is in the stats line. */
	if (a->profile && !halo_session_set_profiling(r->session, true, err, errlen))
		return false;
	if (c->spec_mtp ? !speculate(r, c, n_prompt, row, err, errlen) : !decode(r, c, row, err, errlen))
		return false;
	double t2 = cli_now_s();
	fprintf(stderr, "halo run: prompt %lld tokens in %.3f s (%.1f t/s), generated %lld in %.3f s (%.2f t/s)\n",
		(long long)n_prompt, t1 - t0, (double)n_prompt / (t1 - t0), (long long)c->n_predict, t2 - t1,
		(double)c->n_predict / (t2 - t1));
	if (a->profile)
		halo_session_profile_report(r->session, stderr, 10);
	if (c->open.validation && halo_model_validation_messages(r->model)) {
		snprintf(err, errlen, "%d Vulkan validation message(s)", halo_model_validation_messages(r->model));
		return false;
	}
	return true;
}

/* A drafter that does not fit the bundle is refused here, before anything
 * runs: run anyway, it would only waste time at 0% acceptance. */
static bool check_drafter(const run_args *a, const run_config *c, const halo_model *m, char *err, size_t errlen)
{
	if (!c->spec_mtp)
		return true;
	char why[1536];
	if (halo_spec_check_model(m, HALO_MTP_STEP_ENTRY, c->draft_n, why, sizeof(why)) &&
	    halo_mtp_check_model(m, why, sizeof(why)))
		return true;
	snprintf(err, errlen, "--spec mtp refused: %s: %s", a->bundle, why);
	return false;
}

int cmd_run(int argc, char **argv)
{
	run_args a = {0};
	run_config c;
	int rc = parse_args(argc, argv, &a);
	if (rc || a.help) {
		if (a.help)
			run_usage(stdout);
		return rc;
	}
	if ((rc = check_args(&a, &c)))
		return rc;
	run_state r = {0};
	int64_t n_prompt;
	if (!(r.tokens = parse_tokens(a.tokens, &n_prompt)))
		return 2;
	char err[2048];
	rc = 1;
	/* Only Vulkan picks kernels; a named DB is checked on any backend. */
	bool want_db = !a.no_tuning && (a.tuning || c.open.backend == HALO_BACKEND_VULKAN);
	if (want_db && !cli_tuning_open("run", a.tuning, false, &r.tuning, err, sizeof(err))) {
		fprintf(stderr, "halo run: %s\n", err);
		run_free(&r);
		return 1;
	}
	c.open.tuning = r.tuning.db;
	r.model = halo_model_open(a.bundle, &c.open, err, sizeof(err));
	if (r.model && check_drafter(&a, &c, r.model, err, sizeof(err)))
		r.session = halo_session_create(r.model, err, sizeof(err));
	if (r.session) {
		size_t vocab = (size_t)halo_model_vocab(r.model);
		r.logits = malloc((size_t)n_prompt * vocab * sizeof(float));
		r.probs = malloc(vocab * sizeof(float));
		r.scratch = malloc(vocab * sizeof(int32_t));
		if (!r.logits || !r.probs || !r.scratch)
			snprintf(err, sizeof(err), "out of memory");
		else if (generate(&r, &c, &a, n_prompt, err, sizeof(err)))
			rc = 0;
	}
	if (rc)
		fprintf(stderr, "halo run: %s\n", err);
	run_free(&r);
	return rc;
}
