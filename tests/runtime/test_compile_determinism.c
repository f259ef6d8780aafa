/* Compiling the same inputs twice gives byte-identical bundles, for f32 and
 * f16 weights, for seeded random weights (and a different seed differs),
 * and quantized: q8_0 from the tiny checkpoint, q4_k and f8e4m3_b128 from
 * seeded random weights at K = 256 (tests/models/quant_k256/qwen3: the tiny
 * checkpoint's K = 64 would store every matrix q8_0), and mxfp4, the
 * experts of DeepSeek V4's tiny model from seeded random weights (the
 * quantizer's threads) and of its fp8/FP4 checkpoint (kept as stored),
 * kernels for the formats included.
 * Kernels compile on every core (codegen/select_kernels.c), so this also
 * shows that the threads do not reach the bytes. The f32 case compiles
 * without the kernel cache (codegen/kernel_cache.h), so glslang itself is
 * shown deterministic; the others use the environment's cache, as halo
 * compile does (what they vary is the weights and the kernels' choice, not
 * the compiler). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "tests/runtime/model_check.h"

typedef struct {
	const char *name, *model, *hf;
	bool f16, random;
	halo_dtype quant;
} det_case;

static void compile_to(const char *out, const det_case *c, uint64_t seed)
{
	char model[4096], hf[4096], err[2048];
	snprintf(model, sizeof(model), "%s", mc_source_path(c->model));
	snprintf(hf, sizeof(hf), "%s", mc_source_path(c->hf));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = out,
				.matrix_dtype = c->f16 ? HALO_F16 : HALO_F32, .random_weights = c->random, .seed = seed,
				.quant = c->quant};
	if (!cg_compile(&o, NULL, err, sizeof(err))) {
		fprintf(stderr, "FAIL: compile: %s\n", err);
		exit(1);
	}
}

static bool same_file(const char *a, const char *b)
{
	size_t na, nb;
	void *pa = mc_read_file(a, &na), *pb = mc_read_file(b, &nb);
	bool same = na == nb && memcmp(pa, pb, na) == 0;
	free(pa);
	free(pb);
	return same;
}

/* One case per run (meson runs them side by side); a random case's second
 * seed must give another bundle. */
int main(int argc, char **argv)
{
#define QWEN3 "models/qwen3.yaml"
#define DSV4 "models/deepseek_v4.yaml"
	static const det_case cases[] = {
	    {"f32", QWEN3, "tests/fixtures/qwen3_tiny", false, false, HALO_F32},
	    {"f16", QWEN3, "tests/fixtures/qwen3_tiny", true, false, HALO_F32},
	    {"random", QWEN3, "tests/fixtures/qwen3_tiny", true, true, HALO_F32},
	    {"q8_0", QWEN3, "tests/fixtures/qwen3_tiny", true, false, HALO_Q8_0},
	    {"q4_k", QWEN3, "tests/models/quant_k256/qwen3", true, true, HALO_Q4_K},
	    {"f8e4m3_b128", QWEN3, "tests/models/quant_k256/qwen3", true, true, HALO_F8E4M3_B128},
	    {"mxfp4", DSV4, "tests/fixtures/deepseek_v4_tiny", true, true, HALO_MXFP4},
	    {"mxfp4_kept", DSV4, "tests/fixtures/deepseek_v4_fp8", false, false, HALO_MXFP4},
	};
#undef QWEN3
#undef DSV4
	const det_case *c = NULL;
	for (size_t i = 0; argc == 2 && i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(argv[1], cases[i].name) == 0)
			c = &cases[i];
	if (!c) {
		fprintf(stderr, "usage: test_compile_determinism CASE (f32, f16, random, q8_0, q4_k, f8e4m3_b128, mxfp4, "
				"mxfp4_kept)\n");
		return 2;
	}
	if (strcmp(c->name, "f32") == 0)
		setenv("HALO_KERNEL_CACHE", "off", 1);
	char a[64], b[64];
	snprintf(a, sizeof(a), "det_a_%d.halo", (int)getpid());
	snprintf(b, sizeof(b), "det_b_%d.halo", (int)getpid());
	compile_to(a, c, 7);
	compile_to(b, c, 7);
	MC_CHECK(same_file(a, b), "%s: two compilations differ", c->name);
	if (c->random) {
		compile_to(b, c, 8);
		MC_CHECK(!same_file(a, b), "random weights with seeds 7 and 8 gave the same bundle");
	}
	remove(a);
	remove(b);
	if (mc_failures)
		return 1;
	printf("compile determinism (%s): ok\n", c->name);
	return 0;
}
