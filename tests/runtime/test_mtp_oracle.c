/* The MTP draft head (the draft: section of models/<family>.yaml) against
 * the PyTorch reference of tools/oracle/make_fixtures.py (transformers has
 * no MTP module; the reference builds the head from transformers' own
 * decoder layer, norm and rotary classes): models/<family>.yaml compiled
 * with tests/fixtures/<family>_tiny, or with the checkpoint folder argv[3]
 * (models/trained/qwen4_exp_small, whose head was trained;
 * tests/fixtures/qwen4_exp_var, a bf16 head with 3 streams in the last shard
 * of a sharded checkpoint; tests/fixtures/qwen4_exp_hc5, 5 streams;
 * tests/fixtures/deepseek_v4_tiny and _b, vLLM's DeepSeek V4 MTP layer), on
 * the backend named by argv[1], from a bundle compiled for it.
 *
 * usage: test_mtp_oracle BACKEND FAMILY [CHECKPOINT_DIR]
 *
 * Checked, after the target consumed the prompt (88 tokens; 96 trained):
 * - head position p (the target's hidden state at p, token p+1; token 88 is
 *   the first greedy token) one at a time through draft_extend: every row
 *   against mtp_draft_logits.f32;
 * - the same positions in draft_extend's largest chunks (draft_max + 1
 *   tokens): the last rows are the bits of the one-at-a-time ones (the
 *   entry is batch invariant like the target's); and through draft_catchup
 *   (the prompt's chunks of 64 and 24 tokens), whose prefill-sized kernels
 *   sum in another order: within the tolerance;
 * - three chained drafts through `draft` (the head's own output as hidden
 *   state): argmax tokens equal mtp_chain_tokens.i32, logits within
 *   tolerance of mtp_chain_logits.f32;
 * - a bundle compiled with --no-mtp has no draft entry points and the
 *   same target logits: bit for bit on ref; within 1e-5 on Vulkan, where
 *   the hidden-state export gives the final norm a second reader, so it is
 *   no longer fused into the lm_head matmul's prologue (a different but
 *   equally valid summation order).
 * Tolerance: per-row relative L2 <= 1e-4, as the target oracle's (both
 * sides f32; the head reads the target's hidden state, which carries the
 * target's own ~5e-6 drift from HF's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/mtp_draft.h"
#include "runtime/sample.h"
#include "tests/runtime/model_check.h"

#define TOL 1e-4
#define CHAIN 3

typedef struct {
	int32_t *prompt, *cont, *chain_tokens;
	float *draft_logits, *chain_logits;
	size_t n, vocab;
} fixture;

static void *read_rel(const char *dir, const char *name, size_t *bytes)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return mc_read_file(mc_source_path(path), bytes);
}

static void read_fixture(const char *dir, fixture *fx)
{
	size_t np, nc, nd, nt, nl;
	fx->prompt = read_rel(dir, "prompt_tokens.i32", &np);
	fx->cont = read_rel(dir, "continuation_tokens.i32", &nc);
	fx->draft_logits = read_rel(dir, "mtp_draft_logits.f32", &nd);
	fx->chain_tokens = read_rel(dir, "mtp_chain_tokens.i32", &nt);
	fx->chain_logits = read_rel(dir, "mtp_chain_logits.f32", &nl);
	fx->n = np / sizeof(int32_t);
	fx->vocab = fx->n ? nd / sizeof(float) / fx->n : 0;
	if (!fx->n || !fx->vocab || nd != fx->n * fx->vocab * sizeof(float) || nt != CHAIN * sizeof(int32_t) ||
	    nl != CHAIN * fx->vocab * sizeof(float) || nc < sizeof(int32_t)) {
		fprintf(stderr, "FAIL: %s: MTP fixture files have unexpected sizes\n", dir);
		exit(1);
	}
}

static void free_fixture(fixture *fx)
{
	free(fx->prompt), free(fx->cont), free(fx->chain_tokens), free(fx->draft_logits), free(fx->chain_logits);
}

/* The head's token at position p: the target's token p+1. */
static int32_t next_token(const fixture *fx, size_t p)
{
	return p + 1 < fx->n ? fx->prompt[p + 1] : fx->cont[0];
}

static void prefill(halo_session *s, const fixture *fx)
{
	char err[2048];
	MC_CHECK(halo_session_reset(s, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_session_prefill(s, fx->prompt, (int64_t)fx->n, NULL, NULL, err, sizeof(err)), "prefill: %s",
		 err);
}

static void check_rows_and_chunks(halo_model *m, const fixture *fx)
{
	char err[2048];
	size_t n = fx->n, V = fx->vocab;
	float *rows = malloc(n * V * sizeof(float)), *chunk = malloc(V * sizeof(float));
	int32_t *toks = malloc(n * sizeof(int32_t));
	for (size_t p = 0; p < n; p++)
		toks[p] = next_token(fx, p);
	halo_session *s = mc_session(m);
	prefill(s, fx);
	for (size_t p = 0; p < n; p++)
		MC_CHECK(halo_session_step_at(s, HALO_MTP_EXTEND_ENTRY, (int64_t)p, &toks[p], 1, rows + p * V, err,
					      sizeof(err)),
			 "extend at %zu: %s", p, err);
	MC_CHECK(mc_rows_close("MTP draft logits", rows, fx->draft_logits, n, V, TOL), "MTP draft logits");
	/* the head has no recurrent state: re-extending in chunks needs no reset */
	halo_entry_info ext, cat;
	MC_CHECK(halo_model_entry(m, HALO_MTP_EXTEND_ENTRY, &ext) && halo_model_entry(m, HALO_MTP_CATCHUP_ENTRY, &cat),
		 "no %s or %s entry", HALO_MTP_EXTEND_ENTRY, HALO_MTP_CATCHUP_ENTRY);
	const struct {
		const char *entry;
		size_t most;
		bool bitwise;
	} runs[] = {{HALO_MTP_EXTEND_ENTRY, (size_t)ext.t_max, true}, {HALO_MTP_CATCHUP_ENTRY, (size_t)cat.t_max, false}};
	for (int r = 0; r < 2; r++)
		for (size_t at = 0; at < n; at += runs[r].most) {
			size_t len = n - at < runs[r].most ? n - at : runs[r].most;
			const float *want = rows + (at + len - 1) * V;
			MC_CHECK(halo_session_step_at(s, runs[r].entry, (int64_t)at, toks + at, (int64_t)len, chunk, err,
						      sizeof(err)),
				 "%s [%zu, %zu): %s", runs[r].entry, at, at + len, err);
			MC_CHECK(runs[r].bitwise ? mc_bitwise("chunked extension, last row", chunk, want, V)
						 : mc_rows_close("catch-up extension, last row", chunk, want, 1, V, TOL),
				 "a %zu-token %s differs from single positions", len, runs[r].entry);
		}
	/* chained drafts continue from the head's row n - 1 */
	int32_t tok = halo_argmax(rows + (n - 1) * V, (int64_t)V);
	for (int j = 0; j < CHAIN; j++) {
		MC_CHECK(tok == fx->chain_tokens[j], "chained draft %d: token %d, the reference %d", j, tok,
			 fx->chain_tokens[j]);
		tok = fx->chain_tokens[j]; /* stay on the reference path */
		MC_CHECK(halo_session_step_at(s, HALO_MTP_STEP_ENTRY, (int64_t)(n + (size_t)j), &tok, 1,
					      chunk, err, sizeof(err)),
			 "chained draft %d: %s", j, err);
		char what[64];
		snprintf(what, sizeof(what), "chained draft %d logits", j);
		MC_CHECK(mc_rows_close(what, chunk, fx->chain_logits + (size_t)j * V, 1, V, TOL), "%s", what);
		tok = halo_argmax(chunk, (int64_t)V);
	}
	halo_session_free(s);
	free(rows), free(chunk), free(toks);
}

/* --no-mtp: the same target without the head. */
static void check_no_mtp(halo_model *with, const char *model, const char *dir, const fixture *fx,
			 const char *backend)
{
	char bundle[64], err[2048];
	snprintf(bundle, sizeof(bundle), "mtp_off_%d.halo", (int)getpid());
	mc_compile_no_mtp(model, dir, bundle, backend);
	halo_model *without = mc_open(bundle, backend);
	halo_entry_info e;
	MC_CHECK(!halo_model_entry(without, HALO_MTP_STEP_ENTRY, &e) &&
			 !halo_model_entry(without, HALO_MTP_EXTEND_ENTRY, &e),
		 "a --no-mtp bundle has draft entry points");
	size_t V = fx->vocab;
	float *a = malloc(fx->n * V * sizeof(float)), *b = malloc(fx->n * V * sizeof(float));
	halo_session *sa = mc_session(with), *sb = mc_session(without);
	MC_CHECK(halo_session_prefill(sa, fx->prompt, (int64_t)fx->n, a, NULL, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_session_prefill(sb, fx->prompt, (int64_t)fx->n, b, NULL, err, sizeof(err)), "%s", err);
	if (strcmp(backend, "ref") == 0)
		MC_CHECK(mc_bitwise("target logits with and without the head", a, b, fx->n * V),
			 "compiling the head changed the target's logits");
	else
		MC_CHECK(mc_rows_close("target logits with and without the head", a, b, fx->n, V, 1e-5),
			 "compiling the head changed the target's logits");
	halo_session_free(sa);
	halo_session_free(sb);
	halo_model_close(without);
	remove(bundle);
	free(a), free(b);
}

int main(int argc, char **argv)
{
	if ((argc != 3 && argc != 4) || !halo_backend_check(argv[1], NULL, 0)) {
		fprintf(stderr, "usage: test_mtp_oracle BACKEND FAMILY [CHECKPOINT_DIR]\n");
		return 2;
	}
	const char *backend = argv[1];
	char model[128], dir[256], bundle[64];
	snprintf(model, sizeof(model), "models/%s.yaml", argv[2]);
	if (argc == 4)
		snprintf(dir, sizeof(dir), "%s", argv[3]);
	else
		snprintf(dir, sizeof(dir), "tests/fixtures/%s_tiny", argv[2]);
	snprintf(bundle, sizeof(bundle), "mtp_oracle_%d.halo", (int)getpid());
	fixture fx;
	read_fixture(dir, &fx);
	mc_compile_for(model, dir, bundle, false, backend);
	halo_model *m = mc_open(bundle, backend);
	check_rows_and_chunks(m, &fx);
	check_no_mtp(m, model, dir, &fx, backend);
	MC_CHECK(halo_model_validation_messages(m) == 0, "%d validation messages", halo_model_validation_messages(m));
	halo_model_close(m);
	remove(bundle);
	free_fixture(&fx);
	if (mc_failures)
		return 1;
	printf("%s MTP oracle (%s): ok\n", argv[2], argv[1]);
	return 0;
}
