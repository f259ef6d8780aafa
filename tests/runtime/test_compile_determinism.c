/* Compiling the same inputs twice gives byte-identical bundles, for f32 and
 * f16 weights, for seeded random weights (and a different seed differs),
 * and quantized: q8_0 from the tiny checkpoint, q4_k and f8e4m3_b128 from
 * seeded random weights at K = 256 (tests/models/quant_k256/qwen3: the tiny
 * checkpoint's K = 64 would store every matrix q8_0), kernels for the
 * formats included.
 * Kernels compile on every core (codegen/select_kernels.c), so this also
 * shows that the threads do not reach the bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "tests/runtime/model_check.h"

static void compile_to(const char *out, bool f16, bool random, uint64_t seed, halo_dtype quant)
{
	char model[4096], hf[4096], err[2048];
	snprintf(model, sizeof(model), "%s", mc_source_path("models/qwen3.yaml"));
	snprintf(hf, sizeof(hf), "%s",
		 mc_source_path(quant == HALO_Q4_K || quant == HALO_F8E4M3_B128 ? "tests/models/quant_k256/qwen3"
										: "tests/fixtures/qwen3_tiny"));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = out,
				.matrix_dtype = f16 ? HALO_F16 : HALO_F32, .random_weights = random, .seed = seed,
				.quant = quant};
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

/* One case per run (meson runs them side by side): f32, f16, or random
 * (seeded f16 weights, and a second seed must differ). */
int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		bool f16, random;
		halo_dtype quant;
	} cases[] = {{"f32", false, false, HALO_F32}, {"f16", true, false, HALO_F32}, {"random", true, true, HALO_F32},
		     {"q8_0", true, false, HALO_Q8_0}, {"q4_k", true, true, HALO_Q4_K},
		     {"f8e4m3_b128", true, true, HALO_F8E4M3_B128}};
	int c = -1;
	for (int i = 0; argc == 2 && i < (int)(sizeof(cases) / sizeof(cases[0])); i++)
		if (strcmp(argv[1], cases[i].name) == 0)
			c = i;
	if (c < 0) {
		fprintf(stderr, "usage: test_compile_determinism f32|f16|random|q8_0|q4_k|f8e4m3_b128\n");
		return 2;
	}
	char a[64], b[64];
	snprintf(a, sizeof(a), "det_a_%d.halo", (int)getpid());
	snprintf(b, sizeof(b), "det_b_%d.halo", (int)getpid());
	compile_to(a, cases[c].f16, cases[c].random, 7, cases[c].quant);
	compile_to(b, cases[c].f16, cases[c].random, 7, cases[c].quant);
	MC_CHECK(same_file(a, b), "%s: two compilations differ", cases[c].name);
	if (cases[c].random) {
		compile_to(b, true, true, 8, cases[c].quant);
		MC_CHECK(!same_file(a, b), "random weights with seeds 7 and 8 gave the same bundle");
	}
	remove(a);
	remove(b);
	if (mc_failures)
		return 1;
	printf("compile determinism (%s): ok\n", cases[c].name);
	return 0;
}
