/* Entry position modes (the manifest's "position"): halo_session_step and
 * halo_session_prefill refuse an entry that runs at the caller's position,
 * halo_session_step_at one that runs at the session's, each naming the
 * function to use; step_at checks its position against the context, runs
 * there (the bits of a plain step at that position) and leaves the session's
 * position alone; the manifest reader refuses a missing or unknown position,
 * naming the entry. The caller entries come from rewriting the manifest of a
 * compiled qwen3 bundle, so that step_at runs decode's graph and its logits
 * can be held to a plain step's bits. Backend from argv[1] (ref or vulkan,
 * validation on). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/bundle_write.h"
#include "runtime/bundle.h"
#include "tests/runtime/model_check.h"

/* The context, and how far the session runs ahead of step_at's position. */
enum { P = 12, AHEAD = 3 };

static const char *backend;

static void die(const char *what, const char *err)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, err);
	exit(1);
}

/* A NUL-terminated copy of json whose entry `entry` has its position field
 * (`,"position":"session"`, as codegen/emit_manifest.c writes it) replaced by
 * `field`; "" drops it. */
static char *replace_position(const char *json, size_t n, const char *entry, const char *field)
{
	static const char old[] = ",\"position\":\"session\"";
	char *text = malloc(n + 1), key[96];
	if (!text)
		die("rewrite", "out of memory");
	memcpy(text, json, n);
	text[n] = '\0';
	snprintf(key, sizeof(key), "{\"name\":\"%s\",", entry);
	char *at = strstr(text, key);
	at = at ? strstr(at, old) : NULL;
	if (!at)
		die(entry, "no position field after the entry's name in the manifest");
	char *out = malloc(n + strlen(field) + 1);
	if (!out)
		die("rewrite", "out of memory");
	size_t head = (size_t)(at - text);
	memcpy(out, text, head);
	strcpy(out + head, field);
	strcat(out, at + strlen(old));
	free(text);
	return out;
}

/* Copies bundle src to dst with that replacement in its manifest. */
static void rewrite_position(const char *src, const char *dst, const char *entry, const char *field)
{
	char err[2048];
	halo_bundle *b = halo_bundle_open(src, err, sizeof(err));
	halo_bundle_writer *w = halo_bundle_writer_new();
	if (!b || !w)
		die(src, b ? "out of memory" : err);
	size_t n;
	const char *json = halo_bundle_section(b, "manifest", &n);
	char *manifest = replace_position(json, n, entry, field);
	for (size_t i = 0; i < halo_bundle_section_count(b); i++) {
		const char *name = halo_bundle_section_name(b, i);
		const void *data = halo_bundle_section(b, name, &n);
		if (strcmp(name, "manifest") == 0) {
			data = manifest;
			n = strlen(manifest);
		}
		if (halo_bundle_writer_add(w, name, data, n, 0, err, sizeof(err)) != 0)
			die(dst, err);
	}
	if (halo_bundle_writer_write(w, dst, err, sizeof(err)) != 0)
		die(dst, err);
	halo_bundle_writer_free(w);
	halo_bundle_close(b);
	free(manifest);
}

static bool has(const char *err, const char *want)
{
	return strstr(err, want) != NULL;
}

/* The compiled bundle: every entry runs at the session's position. Returns
 * the logits of decoding toks[P] after prefilling toks[0, P). */
static float *check_session_entries(const char *bundle, const int32_t *toks)
{
	char err[2048];
	halo_model *m = mc_open(bundle, backend);
	halo_session *s = mc_session(m);
	halo_entry_info info;
	MC_CHECK(halo_model_entry(m, "decode", &info) && !info.caller_position, "decode must run at the session's");
	float *want = malloc(sizeof(float) * (size_t)halo_model_vocab(m));
	MC_CHECK(halo_session_prefill(s, toks, P, NULL, NULL, err, sizeof(err)), "%s", err);
	MC_CHECK(!halo_session_step_at(s, "decode", P, toks + P, 1, want, err, sizeof(err)), "step_at ran decode");
	MC_CHECK(has(err, "entry 'decode'") && has(err, "use halo_session_step or halo_session_prefill"),
		 "step_at on decode: '%s'", err);
	MC_CHECK(!halo_session_step_at(s, "nope", 0, toks, 1, want, err, sizeof(err)) && has(err, "no entry point"),
		 "step_at on a missing entry: '%s'", err);
	MC_CHECK(halo_session_step(s, "decode", toks + P, 1, want, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_model_validation_messages(m) == 0, "%d validation messages", halo_model_validation_messages(m));
	halo_session_free(s);
	halo_model_close(m);
	return want;
}

/* decode rewritten to run at the caller's position. The session runs AHEAD
 * tokens past P, and step_at at P must still give the bits of a plain step
 * at P: decode reads KV rows [0, P] only, and writes row P first. */
static void check_caller_decode(const char *bundle, const int32_t *toks, const float *want)
{
	char err[2048];
	halo_model *m = mc_open(bundle, backend);
	halo_session *s = mc_session(m);
	int64_t vocab = halo_model_vocab(m), n_ctx = halo_model_n_ctx(m);
	halo_entry_info info;
	MC_CHECK(halo_model_entry(m, "decode", &info) && info.caller_position, "decode must run at the caller's");
	float *got = malloc(sizeof(float) * 2 * (size_t)vocab);
	MC_CHECK(halo_session_prefill(s, toks, P, NULL, NULL, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_session_prefill(s, toks + P, AHEAD, NULL, NULL, err, sizeof(err)), "%s", err);
	MC_CHECK(!halo_session_step(s, "decode", toks + P, 1, got, err, sizeof(err)), "step ran a caller entry");
	MC_CHECK(has(err, "entry 'decode'") && has(err, "use halo_session_step_at"), "step on decode: '%s'", err);

	MC_CHECK(halo_session_step_at(s, "decode", P, toks + P, 1, got, err, sizeof(err)), "%s", err);
	MC_CHECK(mc_bitwise("step_at vs step", got, want, (size_t)vocab), "step_at differs from a step there");
	MC_CHECK(halo_session_pos(s) == P + AHEAD, "step_at moved the position to %lld",
		 (long long)halo_session_pos(s));

	int32_t bad = (int32_t)vocab;
	const struct {
		int64_t pos, n;
		const int32_t *toks;
		const char *want;
	} refused[] = {
		{-1, 1, toks, "outside the context"},
		{n_ctx, 1, toks, "outside the context"},
		{n_ctx - 1, 2, toks, "outside the context"},
		{INT64_MAX, 1, toks, "outside the context"},
		{0, 0, toks, "tokens per step"},
		{0, 1, &bad, "outside the vocabulary"},
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		bool ran = halo_session_step_at(s, "decode", refused[i].pos, refused[i].toks, refused[i].n, got, err,
						sizeof(err));
		MC_CHECK(!ran && has(err, refused[i].want), "step_at at %lld with %lld tokens: '%s', want '%s'",
			 (long long)refused[i].pos, (long long)refused[i].n, ran ? "ran" : err, refused[i].want);
	}
	MC_CHECK(halo_session_step_at(s, "decode", n_ctx - 2, toks, 2, got, err, sizeof(err)), "last rows: %s", err);
	MC_CHECK(halo_session_pos(s) == P + AHEAD, "step_at moved the position to %lld",
		 (long long)halo_session_pos(s));
	MC_CHECK(halo_model_validation_messages(m) == 0, "%d validation messages", halo_model_validation_messages(m));
	free(got);
	halo_session_free(s);
	halo_model_close(m);
}

/* prefill rewritten to run at the caller's position (asked for every row's
 * logits, which only `prefill` gives: without them prefill_last runs). */
static void check_caller_prefill(const char *bundle, const int32_t *toks)
{
	char err[2048] = "";
	halo_model *m = mc_open(bundle, backend);
	halo_session *s = mc_session(m);
	float *rows = malloc((size_t)P * (size_t)halo_model_vocab(m) * sizeof(float));
	MC_CHECK(!halo_session_prefill(s, toks, P, rows, NULL, err, sizeof(err)), "prefill ran a caller entry");
	free(rows);
	MC_CHECK(has(err, "entry 'prefill'") && has(err, "use halo_session_step_at"), "prefill: '%s'", err);
	MC_CHECK(halo_session_pos(s) == 0, "a refused prefill moved the position");
	MC_CHECK(halo_model_validation_messages(m) == 0, "%d validation messages", halo_model_validation_messages(m));
	halo_session_free(s);
	halo_model_close(m);
}

static void check_refused_manifest(const char *bundle, const char *want)
{
	char err[2048];
	halo_open_options o = {.backend = backend, .device = -1, .validation = mc_is_vulkan(backend)};
	halo_model *m = halo_model_open(bundle, &o, err, sizeof(err));
	MC_CHECK(!m && has(err, "entry 'decode'") && has(err, want), "open: '%s', want '%s'", m ? "opened" : err,
		 want);
	halo_model_close(m);
}

int main(int argc, char **argv)
{
	backend = argc > 1 ? argv[1] : "ref";
	char bundle[64], edited[64];
	snprintf(bundle, sizeof(bundle), "position_%d.halo", (int)getpid());
	snprintf(edited, sizeof(edited), "position_edit_%d.halo", (int)getpid());
	size_t bytes;
	int32_t *toks = mc_read_file(mc_source_path("tests/fixtures/qwen3_tiny/prompt_tokens.i32"), &bytes);
	if (bytes < (P + AHEAD) * sizeof(int32_t))
		die("tests/fixtures/qwen3_tiny/prompt_tokens.i32", "too few tokens");
	mc_compile("models/qwen3.yaml", "tests/fixtures/qwen3_tiny", bundle, false);

	float *want = check_session_entries(bundle, toks);
	rewrite_position(bundle, edited, "decode", ",\"position\":\"caller\"");
	check_caller_decode(edited, toks, want);
	rewrite_position(bundle, edited, "prefill", ",\"position\":\"caller\"");
	check_caller_prefill(edited, toks);
	rewrite_position(bundle, edited, "decode", ",\"position\":\"sideways\"");
	check_refused_manifest(edited, "unknown position 'sideways' (session or caller)");
	rewrite_position(bundle, edited, "decode", "");
	check_refused_manifest(edited, "missing key 'position'");

	remove(bundle);
	remove(edited);
	free(want);
	free(toks);
	if (mc_failures)
		return 1;
	puts("entry position: ok");
	return 0;
}
