/* Compiling the same inputs twice gives byte-identical bundles, for f32 and
 * f16 weights and for seeded random weights (and a different seed differs).
 * Kernels compile on every core (codegen/select_kernels.c), so this also
 * shows that the threads do not reach the bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "tests/runtime/model_check.h"

static void compile_to(const char *out, bool f16, bool random, uint64_t seed)
{
	char model[4096], hf[4096], err[2048];
	snprintf(model, sizeof(model), "%s", mc_source_path("models/qwen3.yaml"));
	snprintf(hf, sizeof(hf), "%s", mc_source_path("tests/fixtures/qwen3_tiny"));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = out,
				.matrix_dtype = f16 ? HALO_F16 : HALO_F32, .random_weights = random, .seed = seed};
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
	} cases[] = {{"f32", false, false}, {"f16", true, false}, {"random", true, true}};
	int c = -1;
	for (int i = 0; argc == 2 && i < (int)(sizeof(cases) / sizeof(cases[0])); i++)
		if (strcmp(argv[1], cases[i].name) == 0)
			c = i;
	if (c < 0) {
		fprintf(stderr, "usage: test_compile_determinism f32|f16|random\n");
		return 2;
	}
	char a[64], b[64];
	snprintf(a, sizeof(a), "det_a_%d.halo", (int)getpid());
	snprintf(b, sizeof(b), "det_b_%d.halo", (int)getpid());
	compile_to(a, cases[c].f16, cases[c].random, 7);
	compile_to(b, cases[c].f16, cases[c].random, 7);
	MC_CHECK(same_file(a, b), "%s: two compilations differ", cases[c].name);
	if (cases[c].random) {
		compile_to(b, true, true, 8);
		MC_CHECK(!same_file(a, b), "random weights with seeds 7 and 8 gave the same bundle");
	}
	remove(a);
	remove(b);
	if (mc_failures)
		return 1;
	printf("compile determinism (%s): ok\n", cases[c].name);
	return 0;
}
