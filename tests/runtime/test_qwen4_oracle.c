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
 * Transformers parity is test_gdn_oracle's (family qwen4_exp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "tests/runtime/model_check.h"

#define FIXTURE "tests/fixtures/qwen4_exp_tiny"
#define SELF_TOL 1e-6
#define PROMPT_LEN 88
#define EOS 1

static void compile_ref(const char *bundle)
{
	char model[4096], hf[4096], err[2048];
	snprintf(model, sizeof(model), "%s", mc_source_path("models/qwen4_exp.yaml"));
	snprintf(hf, sizeof(hf), "%s", mc_source_path(FIXTURE));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = bundle, .matrix_dtype = HALO_F32,
				.random_weights = true, .seed = 7, .ref_only = true};
	if (!cg_compile(&o, NULL, err, sizeof(err))) {
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

/* One verify step over mt tokens against mt single decode steps from the same state. */
static void check_batch_invariance(halo_model *m, const int32_t *prompt, size_t V)
{
	enum { PRE = 37 };
	char err[2048];
	halo_entry_info verify;
	MC_CHECK(halo_model_entry(m, "verify", &verify), "no verify entry");
	for (int mt = 2; mt <= verify.t_max; mt += 3) {
		float *batch = malloc(sizeof(float) * (size_t)mt * V), *single = malloc(sizeof(float) * (size_t)mt * V);
		halo_session *a = mc_session(m), *b = mc_session(m);
		MC_CHECK(halo_session_prefill(a, prompt, PRE, NULL, NULL, err, sizeof(err)), "%s", err);
		MC_CHECK(halo_session_prefill(b, prompt, PRE, NULL, NULL, err, sizeof(err)), "%s", err);
		MC_CHECK(halo_session_step(a, "verify", prompt + PRE, mt, batch, err, sizeof(err)), "%s", err);
		for (int i = 0; i < mt; i++)
			MC_CHECK(halo_session_step(b, "decode", prompt + PRE + i, 1, single + (size_t)i * V, err, sizeof(err)),
				 "%s", err);
		char what[64];
		snprintf(what, sizeof(what), "verify T=%d vs %d single decode steps", mt, mt);
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
	compile_ref(bundle);
	halo_model *m = mc_open(bundle, "ref");
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

int main(int argc, char **argv)
{
	if (argc != 2 || strcmp(argv[1], "self") != 0) {
		fprintf(stderr, "usage: test_qwen4_oracle self\n");
		return 2;
	}
	int rc = run_self();
	if (rc == 0)
		printf("qwen4_exp %s (ref): ok\n", argv[1]);
	return rc;
}
