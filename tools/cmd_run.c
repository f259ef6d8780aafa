/* halo run: loads a bundle, feeds a prompt, generates. With --tokens the
 * generated ids go to stdout as one line of space-separated integers; with
 * --prompt or --prompt-file the prompt is text, encoded with the bundle's
 * tokenizer, and the generated text streams to stdout as it is accepted
 * (runtime/generate.h). Statistics go to stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/generate.h"
#include "runtime/halo.h"
#include "runtime/sample.h"
#include "runtime/mtp_draft.h"
#include "runtime/spec.h"
#include "tools/cli_args.h"
#include "tools/cli_chat.h"
#include "tools/cli_gen.h"
#include "tools/cli_tuning.h"
#include "tools/commands.h"

static void run_usage(FILE *out)
{
	fputs("usage: halo run BUNDLE.halo (--tokens ID,ID,... | --prompt TEXT | --prompt-file F)\n"
	      "                [--chat] [--system S] [--n-predict N] [--backend NAME]\n"
	      "                [--device N] [--temp T] [--top-k K] [--top-p P] [--seed S]\n"
	      "                [--logits-out FILE [--prompt-entry NAME]] [--validate] [--profile]\n"
	      "                [--spec none|mtp]\n"
	      "                [--draft-n K] [--draft-fixed] [--tuning FILE | --no-tuning]\n"
	      "\n"
	      "Runs the prompt through the bundle's prefill entry, then generates up to N tokens\n"
	      "with its decode entry. With --tokens, prints the generated ids on stdout; with\n"
	      "--prompt, encodes the text with the bundle's tokenizer and streams the generated\n"
	      "text to stdout, stopping at the model's end-of-sequence tokens. Statistics go to\n"
	      "stderr.\n"
	      "\n"
	      "options:\n"
	      "  --tokens LIST        prompt token ids, comma-separated\n"
	      "  --prompt TEXT        the prompt as text (the bundle needs a tokenizer)\n"
	      "  --prompt-file F      the prompt text from file F\n"
	      "  --chat               render the prompt as one user turn with the bundle's chat\n"
	      "                       template (and the assistant's generation prompt)\n"
	      "  --system S           with --chat: a system message before the user turn\n"
	      "  --n-predict N        the most tokens to generate (default 16)\n"
	      "  --backend NAME       ref (CPU reference, f32), vulkan (default), cuda or hip\n"
	      "  --device N           Vulkan device index (see halo devices; default: first GPU),\n"
	      "                       or the CUDA/HIP device ordinal\n"
	      "  --temp T             sampling temperature (also --temperature); 0 = greedy\n"
	      "                       (default 0)\n"
	      "  --top-k K            keep the K most likely tokens (default 0 = off)\n"
	      "  --top-p P            keep the smallest set with mass >= P (default 1 = off)\n"
	      "  --seed S             sampler seed (default 0); same seed, same output\n"
	      "  --logits-out FILE    with --tokens: write the logits of every prompt position:\n"
	      "                       little-endian f32 [prompt_len, vocab]\n"
	      "  --prompt-entry NAME  with --logits-out: run the prompt through entry NAME (decode,\n"
	      "                       verify) in steps of its token count instead of prefill: the\n"
	      "                       logits generation computes, where its kernels differ (int8\n"
	      "                       activations: docs/quantization.md)\n"
	      "  --validate           Vulkan validation layer on; any message fails the run\n"
	      "  --profile            with --tokens: time every dispatch; print the ten costliest\n"
	      "                       kernels of the prompt and of the generated tokens on stderr\n"
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
	const char *bundle, *tokens, *prompt, *prompt_file, *system, *logits_out, *prompt_entry;
	bool chat, profile, help;
	cli_gen_args gen;
} run_args;

static int parse_args(int argc, char **argv, run_args *a)
{
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (strcmp(s, "--profile") == 0)
			a->profile = true;
		else if (strcmp(s, "--chat") == 0)
			a->chat = true;
		else if (cli_take_value("run", argc, argv, &i, "--tokens", &a->tokens, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--prompt", &a->prompt, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--prompt-file", &a->prompt_file, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--system", &a->system, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--logits-out", &a->logits_out, &rc) ||
			 cli_take_value("run", argc, argv, &i, "--prompt-entry", &a->prompt_entry, &rc) ||
			 cli_gen_take("run", argc, argv, &i, &a->gen, &rc))
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

/* The prompt's form: ids, or text with the flags that go with it. */
static int check_args(const run_args *a, cli_gen_config *c)
{
	int given = !!a->tokens + !!a->prompt + !!a->prompt_file;
	if (!a->bundle)
		return cli_usage_error("run", "%s", "no bundle given");
	if (given != 1)
		return cli_usage_error("run", "%s", given ? "--tokens, --prompt and --prompt-file exclude each other"
							  : "give the prompt: --tokens, --prompt or --prompt-file");
	if (a->tokens && a->chat)
		return cli_usage_error("run", "%s", "--chat renders text: use --prompt or --prompt-file");
	if (a->system && !a->chat)
		return cli_usage_error("run", "%s", "--system needs --chat");
	if (a->prompt_entry && !a->logits_out)
		return cli_usage_error("run", "%s", "--prompt-entry goes with --logits-out");
	if (!a->tokens && (a->logits_out || a->profile))
		return cli_usage_error("run", "%s", a->profile ? "--profile goes with --tokens" : "--logits-out goes with --tokens");
	c->n_predict = 16;
	return cli_gen_check("run", &a->gen, c);
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
static bool decode(run_state *r, const cli_gen_config *c, const float *row, char *err, size_t errlen)
{
	int64_t vocab = halo_model_vocab(r->model);
	halo_rng rng;
	halo_rng_seed(&rng, c->seed);
	for (int64_t i = 0; i < c->n_predict; i++) {
		int32_t next = halo_sample(&c->sampling, row, vocab, &rng, r->probs, r->scratch);
		printf("%s%d", i ? " " : "", next);
		if (i + 1 < c->n_predict && !halo_session_step(r->session, "decode", &next, 1, NULL, err, errlen))
			return false;
		row = halo_session_logits(r->session, NULL);
	}
	printf("\n");
	return true;
}

/* --spec mtp: rounds of up to draft_n MTP drafts verified by one `verify` step. */
static bool speculate(run_state *r, const cli_gen_config *c, int64_t n_prompt, const float *row, char *err,
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

static bool check_validation(const run_state *r, const cli_gen_config *c, char *err, size_t errlen)
{
	if (c->open.validation && halo_model_validation_messages(r->model)) {
		snprintf(err, errlen, "%d Vulkan validation message(s)", halo_model_validation_messages(r->model));
		return false;
	}
	return true;
}

/* --tokens: ids in, ids out. */
static bool generate_ids(run_state *r, const cli_gen_config *c, const run_args *a, char *err, size_t errlen)
{
	int64_t n_prompt;
	if (!(r->tokens = parse_tokens(a->tokens, &n_prompt)))
		return false;
	size_t vocab = (size_t)halo_model_vocab(r->model);
	r->logits = malloc((size_t)n_prompt * vocab * sizeof(float));
	r->probs = malloc(vocab * sizeof(float));
	r->scratch = malloc(vocab * sizeof(int32_t));
	if (!r->logits || !r->probs || !r->scratch) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	float *row = r->logits + (size_t)(n_prompt - 1) * vocab;
	/* The prompt's dispatches are profiled and reported apart from the
	 * generated tokens' (profiled steps run their own recordings, so the
	 * stats line's prompt time then includes the timestamps' cost). */
	if (a->profile && !halo_session_set_profiling(r->session, true, err, errlen))
		return false;
	double t0 = cli_now_s();
	/* All rows only when asked for: a bundle may return just the last one. */
	if (a->prompt_entry ? !halo_session_prefill_entry(r->session, a->prompt_entry, r->tokens, n_prompt, r->logits,
							   row, err, errlen)
			    : !halo_session_prefill(r->session, r->tokens, n_prompt, a->logits_out ? r->logits : NULL, row,
						    err, errlen))
		return false;
	double t1 = cli_now_s();
	if (a->profile) {
		fprintf(stderr, "halo run: the prompt's %lld tokens:\n", (long long)n_prompt);
		halo_session_profile_report(r->session, stderr, 10);
		halo_session_profile_clear(r->session);
	}
	if (a->logits_out && !write_logits(a->logits_out, r->logits, (size_t)n_prompt * vocab, err, errlen))
		return false;
	if (c->spec_mtp ? !speculate(r, c, n_prompt, row, err, errlen) : !decode(r, c, row, err, errlen))
		return false;
	double t2 = cli_now_s();
	fprintf(stderr, "halo run: prompt %lld tokens in %.3f s (%.1f t/s), generated %lld in %.3f s (%.2f t/s)\n",
		(long long)n_prompt, t1 - t0, (double)n_prompt / (t1 - t0), (long long)c->n_predict, t2 - t1,
		(double)c->n_predict / (t2 - t1));
	if (a->profile)
		halo_session_profile_report(r->session, stderr, 10);
	return check_validation(r, c, err, errlen);
}

/* The whole of path, malloc'd and NUL-terminated. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;
	*len = 0;
	bool ok = f != NULL;
	while (ok) {
		if (*len + 1 >= cap) {
			char *b = realloc(buf, cap = cap ? 2 * cap : 1 << 16);
			if (!(ok = b != NULL))
				break;
			buf = b;
		}
		size_t got = fread(buf + *len, 1, cap - *len - 1, f);
		*len += got;
		if (!got)
			break;
	}
	if (ok && ferror(f))
		ok = false;
	if (!ok)
		snprintf(err, errlen, "--prompt-file %s: cannot read: %s", path, f ? "read error" : strerror(errno));
	if (f)
		fclose(f);
	if (!ok) {
		free(buf);
		return NULL;
	}
	buf[*len] = '\0';
	return buf;
}

/* --chat: one user turn (after the --system message) through the template. */
static bool chat_ids(const run_args *a, const cli_text *t, const char *text, int32_t **ids, size_t *n, char *err,
		     size_t errlen)
{
	halo_chat_template *tpl = cli_chat_template(t, a->bundle, err, errlen);
	halo_chat_message msgs[2] = {{"system", a->system}, {"user", text}};
	bool ok = tpl && cli_chat_render(t, tpl, a->system ? msgs : msgs + 1, a->system ? 2 : 1, ids, n, err, errlen);
	halo_chat_template_free(tpl);
	return ok;
}

/* The prompt's ids: the text as it is, or rendered as one chat turn. */
static bool prompt_ids(const run_args *a, const cli_text *t, int32_t **ids, size_t *n, char *err, size_t errlen)
{
	size_t len = a->prompt ? strlen(a->prompt) : 0;
	char *file = a->prompt_file ? read_file(a->prompt_file, &len, err, errlen) : NULL;
	const char *text = a->prompt ? a->prompt : file;
	bool ok = text != NULL;
	if (ok && a->chat) {
		ok = chat_ids(a, t, text, ids, n, err, errlen);
	} else if (ok) {
		ok = halo_tokenizer_encode(t->tok, text, len, ids, n, err, errlen);
	}
	free(file);
	if (ok && *n == 0) {
		snprintf(err, errlen, "the prompt is empty: it encodes to no tokens");
		ok = false;
	}
	return ok;
}

/* halo_gen_text_fn: the text to stdout as it comes. */
static bool print_piece(void *user, const char *text, size_t len)
{
	(void)user;
	fwrite(text, 1, len, stdout);
	fflush(stdout);
	return true;
}

/* --prompt / --prompt-file: text in, text out (runtime/generate.h). */
static bool generate_text(run_state *r, const cli_gen_config *c, const run_args *a, char *err, size_t errlen)
{
	cli_text t;
	int32_t *ids = NULL;
	size_t n = 0;
	bool ok = cli_text_open(&t, r->model, a->bundle, err, errlen) && prompt_ids(a, &t, &ids, &n, err, errlen);
	halo_gen_options o = {.sampling = c->sampling, .seed = c->seed, .max_tokens = c->n_predict,
			      .eos_ids = t.meta.eos_ids, .n_eos = t.meta.n_eos_ids, .spec_mtp = c->spec_mtp,
			      .draft_n = c->draft_n, .draft_fixed = c->draft_fixed};
	halo_gen_result res;
	if (ok && c->n_predict == 0)
		snprintf(err, errlen, "--n-predict 0 generates nothing from a text prompt");
	ok = ok && c->n_predict > 0 &&
	     halo_generate(r->model, r->session, t.tok, ids, (int64_t)n, &o, print_piece, NULL, &res, err, errlen);
	if (ok) {
		fprintf(stderr, "\nhalo run: prompt %lld tokens in %.3f s (%.1f t/s), generated %lld in %.3f s "
			"(%.2f t/s), finish: %s\n", (long long)res.prompt_tokens, res.prefill_s,
			(double)res.prompt_tokens / res.prefill_s, (long long)res.completion_tokens, res.decode_s,
			(double)res.completion_tokens / res.decode_s, halo_finish_reason_name(res.finish));
		if (c->spec_mtp)
			halo_spec_stats_print(&res.spec, c->draft_n, stderr);
	}
	free(ids);
	cli_text_close(&t);
	return ok && check_validation(r, c, err, errlen);
}

int cmd_run(int argc, char **argv)
{
	run_args a = {0};
	cli_gen_config c;
	int rc = parse_args(argc, argv, &a);
	if (rc || a.help) {
		if (a.help)
			run_usage(stdout);
		return rc;
	}
	if ((rc = check_args(&a, &c)))
		return rc;
	/* malformed ids are a usage error, found before the model loads */
	int64_t n_ids;
	int32_t *ids = a.tokens ? parse_tokens(a.tokens, &n_ids) : NULL;
	if (a.tokens && !ids)
		return 2;
	free(ids);
	run_state r = {0};
	char err[2048];
	rc = 1;
	r.model = cli_gen_open("run", a.bundle, &a.gen, &c, &r.tuning, err, sizeof(err));
	if (r.model)
		r.session = halo_session_create(r.model, err, sizeof(err));
	if (r.session && (a.tokens ? generate_ids(&r, &c, &a, err, sizeof(err))
				   : generate_text(&r, &c, &a, err, sizeof(err))))
		rc = 0;
	if (rc)
		fprintf(stderr, "halo run: %s\n", err);
	run_free(&r);
	return rc;
}
