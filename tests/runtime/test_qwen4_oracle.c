/* models/qwen4_exp.yaml on the reference backend, from a bundle compiled
 * for it alone (tests/runtime/test_qwen4_vulkan.c holds Vulkan to ref).
 *
 * argv[1] = "self": seeded random weights at the dims of
 * tests/fixtures/qwen4_exp_tiny/config.json, an 88-token prompt with EOS at
 * several places (two in a row, one right after the 64-token prefill chunk).
 * Checked: the prompt as prefill chunks (64 + 24) gives the logits of the same
 * tokens fed one at a time through decode (per-row relative L2 <= 1e-6: the
 * math is the same, only the dispatch grouping differs), which exercises every
 * state carried across calls (GDN conv and SSM, PLE n-gram history and dilated
 * conv, KV and indexer keys); one decode call over m tokens gives the bits of
 * m single steps; two runs give the same bits.
 *
 * argv[1] = "oracle": the same model compiled with the transformers fixture
 * (tests/fixtures/qwen4_exp_tiny, tools/oracle/make_fixtures.py family
 * qwen4_exp_tiny): prompt logits and the 24-step greedy continuation's logits
 * within per-row relative L2 1e-4, greedy tokens exact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "runtime/sample.h"
#include "tests/runtime/model_check.h"

#define FIXTURE "tests/fixtures/qwen4_exp_tiny"
#define ORACLE_TOL 1e-4
#define SELF_TOL 1e-6
#define PROMPT_LEN 88
#define EOS 1

static void compile_ref(const char *bundle, bool random_weights)
{
	char model[4096], hf[4096], err[2048];
	snprintf(model, sizeof(model), "%s", mc_source_path("models/qwen4_exp.yaml"));
	snprintf(hf, sizeof(hf), "%s", mc_source_path(FIXTURE));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = bundle, .matrix_dtype = HALO_F32,
				.random_weights = random_weights, .seed = 7, .ref_only = true};
	if (!cg_compile(&o, err, sizeof(err))) {
		fprintf(stderr, "FAIL: compile models/qwen4_exp.yaml: %s\n", err);
		exit(1);
	}
}

static void self_prompt(int32_t *p)
{
	static const int eos_at[] = {9, 23, 41, 64, 69, 70, 83};
	uint32_t s = 12345;
	for (int i = 0; i < PROMPT_LEN; i++) {
		s = s * 1664525u + 1013904223u;
		p[i] = 2 + (int32_t)((s >> 8) % 254);
	}
	for (size_t i = 0; i < sizeof eos_at / sizeof eos_at[0]; i++)
		p[eos_at[i]] = EOS;
}

static void check_prefill_vs_steps(halo_model *m, const int32_t *prompt, size_t V)
{
	char err[2048];
	float *a = malloc(sizeof(float) * PROMPT_LEN * V), *b = malloc(sizeof(float) * PROMPT_LEN * V);
	halo_session *s = mc_session(m), *t = mc_session(m);
	MC_CHECK(halo_session_prefill(s, prompt, PROMPT_LEN, a, NULL, err, sizeof(err)), "prefill: %s", err);
	for (int i = 0; i < PROMPT_LEN; i++)
		MC_CHECK(halo_session_step(t, "decode", prompt + i, 1, b + (size_t)i * V, err, sizeof(err)), "step %d: %s",
			 i, err);
	MC_CHECK(mc_rows_close("prefill vs single steps", a, b, PROMPT_LEN, V, SELF_TOL), "prefill vs single steps");
	halo_session_free(s);
	halo_session_free(t);
	free(a);
	free(b);
}

/* One decode call over mt tokens against mt single steps from the same state. */
static void check_batch_invariance(halo_model *m, const int32_t *prompt, size_t V)
{
	enum { PRE = 37 };
	char err[2048];
	for (int mt = 2; mt <= 8; mt += 3) {
		float *batch = malloc(sizeof(float) * (size_t)mt * V), *single = malloc(sizeof(float) * (size_t)mt * V);
		halo_session *a = mc_session(m), *b = mc_session(m);
		MC_CHECK(halo_session_prefill(a, prompt, PRE, NULL, NULL, err, sizeof(err)), "%s", err);
		MC_CHECK(halo_session_prefill(b, prompt, PRE, NULL, NULL, err, sizeof(err)), "%s", err);
		MC_CHECK(halo_session_step(a, "decode", prompt + PRE, mt, batch, err, sizeof(err)), "%s", err);
		for (int i = 0; i < mt; i++)
			MC_CHECK(halo_session_step(b, "decode", prompt + PRE + i, 1, single + (size_t)i * V, err, sizeof(err)),
				 "%s", err);
		char what[64];
		snprintf(what, sizeof(what), "decode T=%d vs %d single steps", mt, mt);
		MC_CHECK(mc_bitwise(what, batch, single, (size_t)mt * V), "%s: not bitwise equal", what);
		halo_session_free(a);
		halo_session_free(b);
		free(batch);
		free(single);
	}
}

static void check_repeatable(halo_model *m, const int32_t *prompt, size_t V)
{
	char err[2048];
	float *a = malloc(sizeof(float) * PROMPT_LEN * V), *b = malloc(sizeof(float) * PROMPT_LEN * V);
	for (int run = 0; run < 2; run++) {
		halo_session *s = mc_session(m);
		MC_CHECK(halo_session_prefill(s, prompt, PROMPT_LEN, run ? b : a, NULL, err, sizeof(err)), "%s", err);
		halo_session_free(s);
	}
	MC_CHECK(mc_bitwise("run twice", a, b, PROMPT_LEN * V), "two runs differ");
	free(a);
	free(b);
}

static int run_self(void)
{
	char bundle[128];
	snprintf(bundle, sizeof(bundle), "qwen4_self_%d.halo", (int)getpid());
	compile_ref(bundle, true);
	halo_model *m = mc_open(bundle, HALO_BACKEND_REF);
	int32_t prompt[PROMPT_LEN];
	self_prompt(prompt);
	size_t V = 256;
	check_prefill_vs_steps(m, prompt, V);
	check_batch_invariance(m, prompt, V);
	check_repeatable(m, prompt, V);
	halo_model_close(m);
	remove(bundle);
	return mc_failures ? 1 : 0;
}

static void *read_rel(const char *name, size_t *bytes)
{
	char path[256];
	snprintf(path, sizeof(path), FIXTURE "/%s", name);
	return mc_read_file(mc_source_path(path), bytes);
}

static int run_oracle(void)
{
	size_t np, nc, nl, ncl;
	int32_t *prompt = read_rel("prompt_tokens.i32", &np), *cont = read_rel("continuation_tokens.i32", &nc);
	float *want = read_rel("prompt_logits.f32", &nl), *want_cont = read_rel("continuation_logits.f32", &ncl);
	np /= sizeof(int32_t), nc /= sizeof(int32_t);
	size_t V = np ? nl / sizeof(float) / np : 0;
	if (!np || !nc || !V || nl != np * V * sizeof(float) || ncl != nc * V * sizeof(float)) {
		fprintf(stderr, "FAIL: " FIXTURE ": file sizes do not describe [prompt, vocab] and [continuation, vocab]\n");
		return 1;
	}
	char bundle[128], err[2048];
	snprintf(bundle, sizeof(bundle), "qwen4_oracle_%d.halo", (int)getpid());
	compile_ref(bundle, false);
	halo_model *m = mc_open(bundle, HALO_BACKEND_REF);
	halo_session *s = mc_session(m);
	float *got = malloc(sizeof(float) * np * V), *got_cont = malloc(sizeof(float) * nc * V);
	MC_CHECK(halo_session_prefill(s, prompt, (int64_t)np, got, NULL, err, sizeof(err)), "prefill: %s", err);
	MC_CHECK(mc_rows_close("prompt logits", got, want, np, V, ORACLE_TOL), "prompt logits");
	int32_t tok = halo_argmax(got + (np - 1) * V, (int64_t)V);
	for (size_t i = 0; i < nc; i++) {
		MC_CHECK(tok == cont[i], "greedy token %zu: got %d, transformers %d", i, tok, cont[i]);
		tok = cont[i]; /* stay on the reference path */
		MC_CHECK(halo_session_step(s, "decode", &tok, 1, got_cont + i * V, err, sizeof(err)), "decode %zu: %s", i,
			 err);
		tok = halo_argmax(got_cont + i * V, (int64_t)V);
	}
	MC_CHECK(mc_rows_close("continuation logits", got_cont, want_cont, nc, V, ORACLE_TOL), "continuation logits");
	halo_session_free(s);
	halo_model_close(m);
	remove(bundle);
	free(got), free(got_cont), free(prompt), free(cont), free(want), free(want_cont);
	return mc_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "self") != 0 && strcmp(argv[1], "oracle") != 0)) {
		fprintf(stderr, "usage: test_qwen4_oracle self|oracle\n");
		return 2;
	}
	int rc = strcmp(argv[1], "self") == 0 ? run_self() : run_oracle();
	if (rc == 0)
		printf("qwen4_exp %s (ref): ok\n", argv[1]);
	return rc;
}
