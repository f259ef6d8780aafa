/* Checkpoint and restore (recurrent state copied, positional caches rolled
 * back by position) on the backend named by argv[1], validation on:
 * - the hybrid test graph (GDN + attention + MoE), random weights: decoding
 *   after a restore repeats the bits of decoding after the save, also after
 *   the session went elsewhere in between;
 * - qwen3_next (GDN: conv and SSM state) and qwen3 (KV only: a checkpoint
 *   copies nothing), fixture weights: save, take a detour, restore, go on;
 *   the logits are the bits of a fresh session fed the same sequence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "tests/runtime/model_check.h"

enum { N_PROMPT = 11, N_DECODE = 6 };

/* The hybrid test graph with random weights (seed 11) for the backend;
 * tools/gpu/pack.sh compiles the same for cuda as hybrid_tiny.random11. */
static void compile_hybrid(const char *dir, const char *bundle, const char *backend)
{
	if (mc_use_prebuilt("hybrid_tiny.random11", backend, bundle))
		return;
	char path[4096], err[2048], model[4096];
	size_t n;
	void *cfg = mc_read_file(mc_source_path("tests/models/hybrid_tiny.config.json"), &n);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/config.json", dir);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(cfg, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "FAIL: cannot write %s\n", path);
		exit(1);
	}
	free(cfg);
	snprintf(model, sizeof(model), "%s", mc_source_path("tests/models/hybrid_tiny.yaml"));
	int gpu = halo_target_find(backend);
	cg_compile_options o = {.model_path = model, .hf_dir = dir, .out_path = bundle, .matrix_dtype = HALO_F32,
				.random_weights = true, .seed = 11,
				.targets = gpu > HALO_TARGET_VULKAN ? 1u << HALO_TARGET_VULKAN | 1u << gpu : 0};
	if (!cg_compile(&o, NULL, err, sizeof(err))) {
		fprintf(stderr, "FAIL: compile: %s\n", err);
		exit(1);
	}
	remove(path);
	rmdir(dir);
}

static void decode(halo_session *s, const int32_t *toks, int n, float *logits, int64_t vocab)
{
	char err[2048];
	for (int i = 0; i < n; i++)
		MC_CHECK(halo_session_step(s, "decode", &toks[i], 1, logits + i * vocab, err, sizeof(err)), "%s", err);
}

/* Context, detour and final lengths; K <= J, so the detour's rows fit a
 * buffer of the final's. */
enum { P = 24, K = 5, J = 6 };

/* The final sequence as a verify-sized step and single steps; rows [J, vocab]. */
static void feed_final(halo_session *s, const int32_t *toks, float *rows, int64_t vocab)
{
	char err[2048];
	MC_CHECK(halo_session_step(s, "decode", toks, J - 2, rows, err, sizeof(err)), "%s", err);
	decode(s, toks + J - 2, 2, rows + (J - 2) * vocab, vocab);
}

/* Tokens [0, P) of the fixture prompt as the context, [P, P + K) as a detour
 * (drafts that get rejected), [P + K, P + K + J) as the final sequence. */
static void check_rollback(const char *family, const char *backend)
{
	char model[128], dir[128], prompt[160], bundle[128], err[2048];
	snprintf(model, sizeof(model), "models/%s.yaml", family);
	snprintf(dir, sizeof(dir), "tests/fixtures/%s_tiny", family);
	snprintf(prompt, sizeof(prompt), "%s/prompt_tokens.i32", dir);
	snprintf(bundle, sizeof(bundle), "ckpt_%s_%d.halo", family, (int)getpid());
	size_t bytes;
	int32_t *toks = mc_read_file(mc_source_path(prompt), &bytes);
	if (bytes < (P + K + J) * sizeof(int32_t)) {
		fprintf(stderr, "FAIL: %s holds fewer than %d tokens\n", prompt, P + K + J);
		exit(1);
	}
	mc_compile_for(model, dir, bundle, false, backend);
	halo_model *m = mc_open(bundle, backend);
	int64_t vocab = halo_model_vocab(m);
	size_t n = (size_t)J * (size_t)vocab;
	float *rolled = malloc(sizeof(float) * n), *fresh = malloc(sizeof(float) * n);
	float *detour = malloc(sizeof(float) * n);

	halo_session *s = mc_session(m);
	halo_checkpoint *c = halo_checkpoint_create(s, err, sizeof(err));
	MC_CHECK(c != NULL, "%s", err);
	MC_CHECK(halo_session_prefill(s, toks, P, NULL, NULL, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_session_save(s, c, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_session_step(s, "decode", toks + P, K, detour, err, sizeof(err)), "%s", err);
	feed_final(s, toks + P + K, detour, vocab); /* no restore: the detour shows in the logits */
	MC_CHECK(halo_session_restore(s, c, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_session_pos(s) == P, "position after restore is %lld", (long long)halo_session_pos(s));
	feed_final(s, toks + P + K, rolled, vocab);

	halo_session *f = mc_session(m);
	MC_CHECK(halo_session_prefill(f, toks, P, NULL, NULL, err, sizeof(err)), "%s", err);
	feed_final(f, toks + P + K, fresh, vocab);
	MC_CHECK(!mc_bitwise("detour kept", detour, fresh, n), "%s: the detour did not change the logits", family);
	MC_CHECK(mc_bitwise("restored", rolled, fresh, n), "%s: logits after restore differ from a fresh session",
		 family);
	MC_CHECK(halo_model_validation_messages(m) == 0, "%s: %d validation messages", family,
		 halo_model_validation_messages(m));

	halo_checkpoint_free(c);
	halo_session_free(f);
	halo_session_free(s);
	halo_model_close(m);
	remove(bundle);
	free(toks);
	free(rolled);
	free(fresh);
	free(detour);
}

int main(int argc, char **argv)
{
	const char *backend = argc > 1 ? argv[1] : "ref";
	char dir[64], bundle[64], err[2048];
	snprintf(dir, sizeof(dir), "ckpt_cfg_%d", (int)getpid());
	snprintf(bundle, sizeof(bundle), "ckpt_%d.halo", (int)getpid());
	compile_hybrid(dir, bundle, backend);
	halo_model *m = mc_open(bundle, backend);
	halo_session *s = mc_session(m);
	int64_t vocab = halo_model_vocab(m);
	int32_t prompt[N_PROMPT] = {3, 17, 5, 99, 42, 7, 64, 1, 120, 33, 8};
	int32_t next[N_DECODE] = {12, 45, 78, 101, 2, 66}, other[N_DECODE] = {9, 9, 9, 9, 9, 9};
	float *a = malloc(sizeof(float) * N_DECODE * (size_t)vocab), *b = malloc(sizeof(float) * N_DECODE * (size_t)vocab);
	float *scratch = malloc(sizeof(float) * N_DECODE * (size_t)vocab);

	MC_CHECK(halo_session_prefill(s, prompt, N_PROMPT, NULL, NULL, err, sizeof(err)), "%s", err);
	halo_checkpoint *c = halo_checkpoint_create(s, err, sizeof(err));
	MC_CHECK(c != NULL, "%s", err);
	MC_CHECK(!halo_session_restore(s, c, err, sizeof(err)), "restore before any save must fail");
	MC_CHECK(halo_session_save(s, c, err, sizeof(err)), "%s", err);
	decode(s, next, N_DECODE, a, vocab);

	MC_CHECK(halo_session_restore(s, c, err, sizeof(err)), "%s", err);
	MC_CHECK(halo_session_pos(s) == N_PROMPT, "position after restore is %lld", (long long)halo_session_pos(s));
	decode(s, other, N_DECODE, scratch, vocab); /* go elsewhere: the state changes */
	MC_CHECK(!mc_bitwise("a different path", a, scratch, N_DECODE * (size_t)vocab),
		 "different tokens gave the same logits: the test cannot see the state");
	MC_CHECK(halo_session_restore(s, c, err, sizeof(err)), "%s", err);
	decode(s, next, N_DECODE, b, vocab);
	MC_CHECK(mc_bitwise("after restore", a, b, N_DECODE * (size_t)vocab), "decode after restore differs");
	MC_CHECK(halo_model_validation_messages(m) == 0, "validation messages");

	halo_checkpoint_free(c);
	halo_session_free(s);
	halo_model_close(m);
	remove(bundle);
	free(a);
	free(b);
	free(scratch);
	check_rollback("qwen3_next", backend);
	check_rollback("qwen3", backend);
	if (mc_failures)
		return 1;
	puts("checkpoint: ok");
	return 0;
}
