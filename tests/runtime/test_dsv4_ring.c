/* models/deepseek_v4.yaml keeps its token-row caches (the sliding window's
 * KV, the compressors' projections and gates) as rings of the last
 * positions a step reads (state_write ring; compress_kv and sink_attention
 * read position q at row q mod rows). The rings hold the largest step plus
 * what it reads back, so with the default 512-token prompt steps they only
 * wrap past 519 positions, beyond the tiny fixture's 256; both bundles here
 * take 64-token prompt steps (prefill_chunk 64), which makes rings of 71 to
 * 79 rows. Checked: over 200 prompt tokens and 50 decode steps (every ring
 * wraps twice or more), the logits are bit for bit those of the same model
 * file with every such cache as long as the context: the rings change where
 * rows live, never what is computed. On the backend named by argv[1]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "runtime/sample.h"
#include "tests/runtime/model_check.h"

#define FIXTURE "tests/fixtures/deepseek_v4_tiny"
#define N_CTX 256
#define PROMPT 200
#define STEPS 50
#define VOCAB 256

/* The ring sizes' params, and the context length that replaces them. */
static const char *const ring_params[] = {
	"kv_rows:    {default: \"min(n_ctx, window + t_max - 1)\"}",
	"csa_rows:   {default: \"min(n_ctx, 2 * m_csa + t_max - 1)\"}",
	"hca_rows:   {default: \"min(n_ctx, m_hca + t_max - 1)\"}",
};

/* Overwrites `param` in text with `value` (no longer), blanks after it. */
static bool set_param(char *text, const char *param, const char *value)
{
	char *at = strstr(text, param);
	MC_CHECK(at, "models/deepseek_v4.yaml no longer declares '%s'", param);
	if (!at)
		return false;
	size_t key = strcspn(param, "{");
	memset(at + key, ' ', strlen(param) - key);
	memcpy(at + key, value, strlen(value));
	return true;
}

/* The model file with 64-token prompt steps and, when full, every ring as
 * long as the context, written to path. */
static void write_model(const char *path, bool full)
{
	size_t n;
	char *text = mc_read_file(mc_source_path("models/deepseek_v4.yaml"), &n);
	FILE *f = fopen(path, "w");
	MC_CHECK(text && f, "cannot write %s", path);
	if (!set_param(text, "prefill_chunk: {default: 512}", "{default: 64}"))
		exit(1);
	for (size_t i = 0; full && i < sizeof ring_params / sizeof ring_params[0]; i++) {
		if (!set_param(text, ring_params[i], "{default: n_ctx}"))
			exit(1);
	}
	fwrite(text, 1, n, f);
	fclose(f);
	free(text);
}

static void compile(const char *model, const char *bundle, bool ref_only)
{
	char hf[4096], err[2048];
	snprintf(hf, sizeof hf, "%s", mc_source_path(FIXTURE));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = bundle, .matrix_dtype = HALO_F32,
				.n_ctx = N_CTX, .ref_only = ref_only};
	if (!cg_compile(&o, NULL, err, sizeof err)) {
		fprintf(stderr, "FAIL: compile %s: %s\n", model, err);
		exit(1);
	}
}

/* Prompt logits (every row) and STEPS greedy decode steps' logits. */
static float *run(const char *bundle, const char *backend, const int32_t *prompt)
{
	char err[2048];
	halo_model *m = mc_open(bundle, backend);
	halo_session *s = mc_session(m);
	float *out = malloc(sizeof(float) * (PROMPT + STEPS) * VOCAB);
	MC_CHECK(halo_session_prefill(s, prompt, PROMPT, out, NULL, err, sizeof err), "prefill: %s", err);
	int32_t tok = halo_argmax(out + (PROMPT - 1) * VOCAB, VOCAB);
	for (int i = 0; i < STEPS; i++) {
		float *row = out + (size_t)(PROMPT + i) * VOCAB;
		MC_CHECK(halo_session_step(s, "decode", &tok, 1, row, err, sizeof err), "decode %d: %s", i, err);
		tok = halo_argmax(row, VOCAB);
	}
	halo_session_free(s);
	halo_model_close(m);
	return out;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "ref") != 0 && strcmp(argv[1], "vulkan") != 0)) {
		fprintf(stderr, "usage: test_dsv4_ring ref|vulkan\n");
		return 2;
	}
	char ring_model[64], full_model[64], ring_bundle[64], full_bundle[64];
	snprintf(ring_model, sizeof ring_model, "dsv4_ring_caches_%d.yaml", (int)getpid());
	snprintf(full_model, sizeof full_model, "dsv4_full_caches_%d.yaml", (int)getpid());
	snprintf(ring_bundle, sizeof ring_bundle, "dsv4_ring_%d.halo", (int)getpid());
	snprintf(full_bundle, sizeof full_bundle, "dsv4_full_%d.halo", (int)getpid());
	write_model(ring_model, false);
	write_model(full_model, true);
	bool ref_only = strcmp(argv[1], "ref") == 0;
	compile(ring_model, ring_bundle, ref_only);
	compile(full_model, full_bundle, ref_only);
	int32_t prompt[PROMPT];
	uint32_t seed = 2026;
	for (int i = 0; i < PROMPT; i++) {
		seed = seed * 1664525u + 1013904223u;
		prompt[i] = (int32_t)((seed >> 8) % VOCAB);
	}
	float *ring = run(ring_bundle, argv[1], prompt), *full = run(full_bundle, argv[1], prompt);
	MC_CHECK(mc_bitwise("rings vs context-long caches", ring, full, (size_t)(PROMPT + STEPS) * VOCAB),
		 "the rings changed the logits");
	free(ring), free(full);
	remove(ring_model), remove(full_model), remove(ring_bundle), remove(full_bundle);
	if (mc_failures)
		return 1;
	printf("deepseek_v4 rings (%s): ok\n", argv[1]);
	return 0;
}
