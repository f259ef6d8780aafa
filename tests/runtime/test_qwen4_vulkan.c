/* models/qwen4_exp.yaml on Vulkan against the ref backend, from one bundle
 * compiled with seeded random weights at the dims of
 * tests/fixtures/qwen4_exp_tiny/config.json (no checkpoint needed).
 *
 * The prompt (88 tokens, EOS at several places: two in a row, one right after
 * the 64-token prefill chunk) runs as prefill chunks (64 + 24) and then 4
 * decode steps, on both backends; every row of logits must agree within
 * per-row relative L2 VK_TOL. Why 1e-4: the kernels accumulate in f32 where
 * the reference sums in f64, and the GDN prefill kernel regroups its sums
 * (kernels/vulkan/README.md); each op is tested to <= 2e-5 relative on its
 * own (tests/kernels), and the errors of 4 layers and the logit head add up
 * to a few 1e-5 on a row's L2. A rank swap of two QSA blocks or a different
 * greedy token would show as an error of order 1, far past it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "tests/runtime/model_check.h"

#define FIXTURE "tests/fixtures/qwen4_exp_tiny"
#define VK_TOL 1e-4
#define PROMPT_LEN 88
#define DECODE_STEPS 4
#define EOS 1
#define VOCAB 256

static void compile_both(const char *bundle)
{
	char model[4096], hf[4096], err[2048];
	snprintf(model, sizeof(model), "%s", mc_source_path("models/qwen4_exp.yaml"));
	snprintf(hf, sizeof(hf), "%s", mc_source_path(FIXTURE));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = bundle, .matrix_dtype = HALO_F32,
				.random_weights = true, .seed = 7};
	if (!cg_compile(&o, NULL, err, sizeof(err))) {
		fprintf(stderr, "FAIL: compile models/qwen4_exp.yaml for Vulkan: %s\n", err);
		exit(1);
	}
}

static void prompt_tokens(int32_t *p)
{
	static const int eos_at[] = {9, 23, 41, 64, 69, 70, 83};
	uint32_t s = 4321;
	for (int i = 0; i < PROMPT_LEN + DECODE_STEPS; i++) {
		s = s * 1664525u + 1013904223u;
		p[i] = 2 + (int32_t)((s >> 8) % (VOCAB - 2));
	}
	for (size_t i = 0; i < sizeof eos_at / sizeof eos_at[0]; i++)
		p[eos_at[i]] = EOS;
}

/* Prompt logits then DECODE_STEPS single-token steps, all rows into out. */
static void run_backend(const char *bundle, const char *kind, const int32_t *tokens, float *out)
{
	char err[2048];
	halo_model *m = mc_open(bundle, kind);
	halo_session *s = mc_session(m);
	MC_CHECK(halo_session_prefill(s, tokens, PROMPT_LEN, out, NULL, err, sizeof(err)), "prefill: %s", err);
	for (int i = 0; i < DECODE_STEPS; i++)
		MC_CHECK(halo_session_step(s, "decode", tokens + PROMPT_LEN + i, 1,
					   out + (size_t)(PROMPT_LEN + i) * VOCAB, err, sizeof(err)),
			 "decode step %d: %s", i, err);
	halo_session_free(s);
	halo_model_close(m);
}

int main(void)
{
	char bundle[128];
	snprintf(bundle, sizeof(bundle), "qwen4_vulkan_%d.halo", (int)getpid());
	compile_both(bundle);
	int32_t tokens[PROMPT_LEN + DECODE_STEPS];
	prompt_tokens(tokens);
	size_t rows = PROMPT_LEN + DECODE_STEPS;
	float *ref = calloc(rows * VOCAB, sizeof(float)), *vk = calloc(rows * VOCAB, sizeof(float));
	if (!ref || !vk) {
		fprintf(stderr, "FAIL: out of memory\n");
		return 1;
	}
	run_backend(bundle, "ref", tokens, ref);
	run_backend(bundle, "vulkan", tokens, vk);
	MC_CHECK(mc_rows_close("prompt logits, vulkan vs ref", vk, ref, PROMPT_LEN, VOCAB, VK_TOL), "prompt logits");
	MC_CHECK(mc_rows_close("decode logits, vulkan vs ref", vk + (size_t)PROMPT_LEN * VOCAB,
			       ref + (size_t)PROMPT_LEN * VOCAB, DECODE_STEPS, VOCAB, VK_TOL),
		 "decode logits");
	remove(bundle);
	free(ref), free(vk);
	if (mc_failures)
		return 1;
	printf("qwen4_exp vulkan vs ref: ok\n");
	return 0;
}
