/* Checkpoint and restore of a whole session state (KV cache, conv and SSM
 * state) on the hybrid test graph (GDN + attention + MoE), random weights:
 * decoding after a restore repeats the bits of decoding after the save, also
 * after the session went elsewhere in between. Backend from argv[1]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "tests/runtime/model_check.h"

enum { N_PROMPT = 11, N_DECODE = 6 };

static void compile_hybrid(const char *dir, const char *bundle)
{
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
	cg_compile_options o = {.model_path = model, .hf_dir = dir, .out_path = bundle, .matrix_dtype = HALO_F32,
				.random_weights = true, .seed = 11};
	if (!cg_compile(&o, err, sizeof(err))) {
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

int main(int argc, char **argv)
{
	halo_backend_kind backend = argc > 1 && strcmp(argv[1], "vulkan") == 0 ? HALO_BACKEND_VULKAN : HALO_BACKEND_REF;
	char dir[64], bundle[64], err[2048];
	snprintf(dir, sizeof(dir), "ckpt_cfg_%d", (int)getpid());
	snprintf(bundle, sizeof(bundle), "ckpt_%d.halo", (int)getpid());
	compile_hybrid(dir, bundle);
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
	if (mc_failures)
		return 1;
	puts("checkpoint: ok");
	return 0;
}
