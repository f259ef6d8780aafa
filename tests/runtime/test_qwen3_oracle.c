/* Qwen3 against HF transformers (tests/fixtures/qwen3_tiny): prompt logits,
 * the 32-token greedy continuation, and the logits of every continuation
 * step, on the backend named by argv[1] (ref or vulkan, validation on); the
 * prompt through prefill_last too.
 *
 * Tolerance: per-row relative L2 error <= 1e-4. Both sides compute in f32;
 * what differs is summation order (BLAS blocking in PyTorch, fixed-order
 * reductions here), which moves logits by about 1e-6 relative at these dims.
 * A semantic slip (norm convention, rope base or layout, eps, GQA mapping)
 * moves them by 1e-2 or more, so 1e-4 separates the two by two orders of
 * magnitude either way. The greedy tokens must match exactly: the fixture's
 * smallest top-1/top-2 margin over the continuation is 0.025. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/sample.h"
#include "tests/runtime/model_check.h"

#define FIX "tests/fixtures/qwen3_tiny/"
enum { VOCAB = 256, N_PROMPT = 48, N_CONT = 32 };

static void check_prompt_and_continuation(halo_model *m, const int32_t *prompt, const float *want_logits,
					  const int32_t *want_cont, const float *want_cont_logits)
{
	char err[2048];
	halo_session *s = mc_session(m);
	float *logits = malloc(sizeof(float) * N_PROMPT * VOCAB);
	float *cont_logits = malloc(sizeof(float) * N_CONT * VOCAB);
	MC_CHECK(halo_session_prefill(s, prompt, N_PROMPT, logits, NULL, err, sizeof(err)), "prefill: %s", err);
	MC_CHECK(mc_rows_close("prompt logits", logits, want_logits, N_PROMPT, VOCAB, 1e-4), "prompt logits");

	int32_t tok = halo_argmax(logits + (N_PROMPT - 1) * VOCAB, VOCAB);
	for (int i = 0; i < N_CONT; i++) {
		MC_CHECK(tok == want_cont[i], "greedy token %d: got %d, transformers %d", i, tok, want_cont[i]);
		tok = want_cont[i]; /* stay on the reference path so later rows stay comparable */
		MC_CHECK(halo_session_step(s, "decode", &tok, 1, cont_logits + i * VOCAB, err, sizeof(err)),
			 "decode %d: %s", i, err);
		tok = halo_argmax(cont_logits + i * VOCAB, VOCAB);
	}
	MC_CHECK(mc_rows_close("continuation logits", cont_logits, want_cont_logits, N_CONT, VOCAB, 1e-4),
		 "continuation logits");
	free(logits);
	free(cont_logits);
	halo_session_free(s);
}

/* A prompt without every row's logits runs through prefill_last (larger
 * steps, the head on the last row only): its last row against
 * transformers' at the same tolerance, then the continuation's first step
 * from the state it left against the reference's. */
static void check_prefill_last(halo_model *m, const int32_t *prompt, const float *want_logits,
			       const int32_t *want_cont, const float *want_cont_logits)
{
	char err[2048];
	halo_entry_info info;
	MC_CHECK(halo_model_entry(m, "prefill_last", &info) && info.t_max >= N_PROMPT,
		 "no prefill_last entry taking the %d-token prompt in one step", N_PROMPT);
	halo_session *s = mc_session(m);
	float last[VOCAB], next[VOCAB];
	MC_CHECK(halo_session_prefill(s, prompt, N_PROMPT, NULL, last, err, sizeof(err)), "prefill: %s", err);
	MC_CHECK(mc_rows_close("prefill_last: last prompt row", last, want_logits + (N_PROMPT - 1) * VOCAB, 1,
			       VOCAB, 1e-4), "prefill_last logits");
	MC_CHECK(halo_session_step(s, "decode", &want_cont[0], 1, next, err, sizeof(err)), "decode: %s", err);
	MC_CHECK(mc_rows_close("decode after prefill_last", next, want_cont_logits, 1, VOCAB, 1e-4),
		 "decode after prefill_last");
	halo_session_free(s);
}

/* Two sessions over the same prompt give the same bits. */
static void check_repeatable(halo_model *m, const int32_t *prompt)
{
	char err[2048];
	float *a = malloc(sizeof(float) * N_PROMPT * VOCAB), *b = malloc(sizeof(float) * N_PROMPT * VOCAB);
	for (int run = 0; run < 2; run++) {
		halo_session *s = mc_session(m);
		MC_CHECK(halo_session_prefill(s, prompt, N_PROMPT, run ? b : a, NULL, err, sizeof(err)), "%s", err);
		halo_session_free(s);
	}
	MC_CHECK(mc_bitwise("run twice", a, b, N_PROMPT * VOCAB), "two runs differ");
	free(a);
	free(b);
}

/* Batch invariance: a verify step over m tokens gives, row for row, the
 * bits of m single-token decode steps from the same state (what exact
 * speculative decoding rests on). */
static void check_batch_invariance(halo_model *m, const int32_t *prompt)
{
	char err[2048];
	enum { PRE = 37 };
	halo_entry_info verify;
	MC_CHECK(halo_model_entry(m, "verify", &verify), "no verify entry");
	for (int mt = 2; mt <= verify.t_max; mt += 3) {
		float *batch = malloc(sizeof(float) * (size_t)mt * VOCAB), *single = malloc(sizeof(float) * (size_t)mt * VOCAB);
		halo_session *a = mc_session(m), *b = mc_session(m);
		MC_CHECK(halo_session_prefill(a, prompt, PRE, NULL, NULL, err, sizeof(err)), "%s", err);
		MC_CHECK(halo_session_prefill(b, prompt, PRE, NULL, NULL, err, sizeof(err)), "%s", err);
		MC_CHECK(halo_session_step(a, "verify", prompt + PRE, mt, batch, err, sizeof(err)), "%s", err);
		for (int i = 0; i < mt; i++)
			MC_CHECK(halo_session_step(b, "decode", prompt + PRE + i, 1, single + i * VOCAB, err, sizeof(err)),
				 "%s", err);
		char what[64];
		snprintf(what, sizeof(what), "verify T=%d vs %d single decode steps", mt, mt);
		MC_CHECK(mc_bitwise(what, batch, single, (size_t)mt * VOCAB), "%s: not bitwise equal", what);
		halo_session_free(a);
		halo_session_free(b);
		free(batch);
		free(single);
	}
}

/* f16 matrix weights: each weight carries a rounding of up to 2^-11
 * relative, which moves these logits by about 1.6e-3 relative (measured);
 * 5e-3 leaves room for that and still catches a wrong weight dtype or layout
 * (an f16 tensor read as f32 gives garbage, relative error near 1). */
static void check_f16(const char *backend, const int32_t *prompt, const float *want_logits)
{
	char bundle[64], err[2048];
	snprintf(bundle, sizeof(bundle), "qwen3_tiny_f16_%d.halo", (int)getpid());
	mc_compile("models/qwen3.yaml", FIX, bundle, true);
	halo_model *m = mc_open(bundle, backend);
	halo_session *s = mc_session(m);
	float *logits = malloc(sizeof(float) * N_PROMPT * VOCAB);
	MC_CHECK(halo_session_prefill(s, prompt, N_PROMPT, logits, NULL, err, sizeof(err)), "prefill: %s", err);
	MC_CHECK(mc_rows_close("prompt logits, f16 weights", logits, want_logits, N_PROMPT, VOCAB, 5e-3),
		 "f16 prompt logits");
	free(logits);
	halo_session_free(s);
	halo_model_close(m);
	remove(bundle);
}

int main(int argc, char **argv)
{
	const char *backend = argc > 1 ? argv[1] : "ref";
	size_t n;
	int32_t *prompt = mc_read_file(mc_source_path(FIX "prompt_tokens.i32"), &n);
	float *logits = mc_read_file(mc_source_path(FIX "prompt_logits.f32"), &n);
	int32_t *cont = mc_read_file(mc_source_path(FIX "continuation_tokens.i32"), &n);
	float *cont_logits = mc_read_file(mc_source_path(FIX "continuation_logits.f32"), &n);

	char bundle[64];
	snprintf(bundle, sizeof(bundle), "qwen3_tiny_oracle_%d.halo", (int)getpid());
	mc_compile("models/qwen3.yaml", FIX, bundle, false);
	halo_model *m = mc_open(bundle, backend);
	check_prompt_and_continuation(m, prompt, logits, cont, cont_logits);
	check_prefill_last(m, prompt, logits, cont, cont_logits);
	check_repeatable(m, prompt);
	check_batch_invariance(m, prompt);
	MC_CHECK(halo_model_validation_messages(m) == 0, "%d validation messages", halo_model_validation_messages(m));
	halo_model_close(m);
	remove(bundle);
	check_f16(backend, prompt, logits);
	free(prompt);
	free(logits);
	free(cont);
	free(cont_logits);
	if (mc_failures)
		return 1;
	puts("qwen3 oracle: ok");
	return 0;
}
