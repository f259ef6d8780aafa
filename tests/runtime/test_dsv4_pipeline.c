/* DeepSeek V4's attention ops through the whole compiler and the ref
 * backend (tests/models/dsv4_attention.yaml, random weights): the logits of
 * a sequence are the same bit for bit whether it runs as one prompt step
 * and decode steps, one token at a time, or in uneven chunks: the
 * compressors' entries stored every closed window, the indexer's picks and
 * the three forms of sink_attention are positional, so prefill and decode
 * agree. A bundle with Vulkan kernels is refused with the op named. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "tests/runtime/model_check.h"

enum { N = 28, VOCAB = 64 };

/* A checkpoint directory holding only the config (the weights are random). */
static void write_config(const char *dir)
{
	char path[4096];
	size_t n;
	void *cfg = mc_read_file(mc_source_path("tests/models/dsv4_attention.config.json"), &n);
	mkdir(dir, 0755);
	snprintf(path, sizeof(path), "%s/config.json", dir);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(cfg, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "FAIL: cannot write %s\n", path);
		exit(1);
	}
	free(cfg);
}

static bool compile(const char *dir, const char *bundle, bool ref_only, char *err, size_t errlen)
{
	char model[4096];
	snprintf(model, sizeof(model), "%s", mc_source_path("tests/models/dsv4_attention.yaml"));
	cg_compile_options o = {.model_path = model, .hf_dir = dir, .out_path = bundle, .matrix_dtype = HALO_F32,
				.random_weights = true, .seed = 4, .ref_only = ref_only};
	return cg_compile(&o, NULL, err, errlen);
}

/* The N tokens' logits, fed in steps of cut[i] tokens (summing to N) with
 * the prefill entry, single tokens with the decode entry. */
static void run(halo_model *m, const int32_t *toks, const int *cut, float *logits)
{
	char err[2048];
	halo_session *s = mc_session(m);
	for (int pos = 0, i = 0; pos < N; pos += cut[i++])
		MC_CHECK(halo_session_step(s, cut[i] == 1 ? "decode" : "prefill", toks + pos, cut[i],
					   logits + (size_t)pos * VOCAB, err, sizeof(err)),
			 "step of %d at %d: %s", cut[i], pos, err);
	halo_session_free(s);
}

int main(void)
{
	char dir[64], bundle[64], err[2048];
	snprintf(dir, sizeof(dir), "dsv4_ckpt_%d", (int)getpid());
	snprintf(bundle, sizeof(bundle), "dsv4_%d.halo", (int)getpid());
	write_config(dir);
	MC_CHECK(!compile(dir, bundle, false, err, sizeof(err)) && strstr(err, "no Vulkan kernel for op '") &&
			 strstr(err, "--targets ref"),
		 "a Vulkan bundle: %s", err);
	if (!compile(dir, bundle, true, err, sizeof(err))) {
		fprintf(stderr, "FAIL: compile: %s\n", err);
		return 1;
	}
	int32_t toks[N];
	for (int i = 0; i < N; i++)
		toks[i] = (int32_t)((i * 37 + 11) % VOCAB);
	int ones[N];
	for (int i = 0; i < N; i++)
		ones[i] = 1;
	static const int prompt[] = {23, 1, 1, 1, 1, 1}, uneven[] = {5, 1, 9, 3, 10};
	static float a[N * VOCAB], b[N * VOCAB], c[N * VOCAB];
	halo_model *m = mc_open(bundle, "ref");
	run(m, toks, prompt, a);
	run(m, toks, ones, b);
	run(m, toks, uneven, c);
	halo_model_close(m);
	bool finite = true;
	for (int i = 0; i < N * VOCAB; i++)
		finite &= isfinite(a[i]) != 0;
	MC_CHECK(finite, "the logits are finite");
	MC_CHECK(mc_bitwise("a prompt step then decode vs one token at a time", a, b, N * VOCAB), "prefill = decode");
	MC_CHECK(mc_bitwise("a prompt step then decode vs uneven chunks", a, c, N * VOCAB), "prefill = chunks");
	remove(bundle);
	char path[4096];
	snprintf(path, sizeof(path), "%s/config.json", dir);
	remove(path);
	rmdir(dir);
	if (mc_failures)
		return 1;
	printf("dsv4 attention pipeline: ok\n");
	return 0;
}
