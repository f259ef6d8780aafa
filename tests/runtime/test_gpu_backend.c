/* The GPU-module backends (runtime/drivers: cuda, hip) on the models' tiny
 * fixtures, whose every kernel has a HIP twin.
 *
 * usage: test_gpu_backend refuse cuda|hip
 *        test_gpu_backend oracle cuda|hip FIXTURE
 *
 * FIXTURE is a directory name under tests/fixtures of the form FAMILY_tiny
 * (qwen3_tiny, qwen3_next_tiny, qwen3_5_moe_tiny, qwen4_exp_tiny), compiled
 * with models/FAMILY.yaml as test_gdn_oracle pairs them; its vocabulary is
 * the compiled model's (the fixture's config).
 *
 * refuse: a bundle compiled without the backend's target (--targets
 * ref,vulkan) is refused with an error naming the missing section, before
 * the backend looks for its library or a device: runs on any machine.
 *
 * oracle: the bundle compiled with --targets ref,vulkan,<target> runs a
 * short prefill (every row's logits) and decode steps on the backend and on
 * the ref backend, whose logits must agree per row within 1e-4 relative L2
 * (the qwen3_oracle tolerance: f32 on both sides, differing in summation
 * order only), with the same greedy tokens. Exits 77 (skipped) when the
 * backend's library cannot be opened or finds no device (halo_backend_probe,
 * before the compile) or clang-19 is missing, unless HALO_REQUIRE_GPU=1,
 * which makes that a failure (for the GPU machine). With $HALO_TEST_BUNDLES
 * the bundle is the one tools/gpu/pack.sh compiled here (mc_use_prebuilt:
 * the GPU machine has no clang-19), and clang-19 is not needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/sample.h"
#include "tests/runtime/model_check.h"

#define FIX "tests/fixtures/qwen3_tiny/"
enum { N_PREFILL = 12, N_DECODE = 8 };

static void check_refused(const char *backend)
{
	char bundle[64], err[2048] = "", want[128];
	snprintf(bundle, sizeof(bundle), "gpu_refuse_%s_%d.halo", backend, (int)getpid());
	mc_compile("models/qwen3.yaml", FIX, bundle, false); /* ref and vulkan */
	halo_open_options o = {.backend = backend, .device = -1};
	halo_model *m = halo_model_open(bundle, &o, err, sizeof(err));
	snprintf(want, sizeof(want), "%s backend: the bundle has no '%s' section", backend,
		 halo_targets[halo_target_find(backend)].section);
	MC_CHECK(!m && strstr(err, want), "open a bundle without %s code: want '%s', got '%s'", backend, want,
		 m ? "opened" : err);
	printf("refused: %s\n", err);
	halo_model_close(m);
	remove(bundle);
}

/* Prefill's rows then each decode step's (vocab logits a row), on one
 * session of m. */
static void run_steps(halo_model *m, const int32_t *prompt, size_t vocab, float *out)
{
	char err[2048];
	halo_session *s = mc_session(m);
	MC_CHECK(halo_session_prefill(s, prompt, N_PREFILL, out, NULL, err, sizeof(err)), "prefill: %s", err);
	for (int i = 0; i < N_DECODE; i++)
		MC_CHECK(halo_session_step(s, "decode", &prompt[N_PREFILL + i], 1, out + (N_PREFILL + i) * vocab, err,
					   sizeof(err)),
			 "decode %d: %s", i, err);
	halo_session_free(s);
}

/* Exits 77 with why, or 1 under HALO_REQUIRE_GPU=1. */
static void skip(const char *why)
{
	const char *require = getenv("HALO_REQUIRE_GPU");
	if (require && strcmp(require, "1") == 0) {
		fprintf(stderr, "FAIL (HALO_REQUIRE_GPU=1): %s\n", why);
		exit(1);
	}
	printf("SKIP: %s (HALO_REQUIRE_GPU=1 makes this a failure)\n", why);
	exit(77);
}

static halo_model *open_gpu(const char *bundle, const char *backend)
{
	char err[2048];
	halo_open_options o = {.backend = backend, .device = -1};
	halo_model *m = halo_model_open(bundle, &o, err, sizeof(err));
	if (m)
		return m;
	remove(bundle);
	fprintf(stderr, "FAIL: open %s on %s: %s\n", bundle, backend, err);
	exit(1);
}

/* FIXTURE's directory and model yaml (FAMILY_tiny -> models/FAMILY.yaml),
 * relative to the source tree; exits 2 on a name of another form. */
static void fixture_paths(const char *fixture, char *dir, size_t ndir, char *model, size_t nmodel)
{
	static const char tiny[] = "_tiny";
	size_t n = strlen(fixture), nt = strlen(tiny);
	if (n <= nt || strcmp(fixture + n - nt, tiny) != 0 || strchr(fixture, '/')) {
		fprintf(stderr, "FIXTURE '%s' is not a tests/fixtures directory named FAMILY_tiny\n", fixture);
		exit(2);
	}
	snprintf(dir, ndir, "tests/fixtures/%s/", fixture);
	snprintf(model, nmodel, "models/%.*s.yaml", (int)(n - nt), fixture);
}

static void check_oracle(const char *backend, const char *fixture)
{
	char fix[512], model[512], path[1024];
	fixture_paths(fixture, fix, sizeof(fix), model, sizeof(model));
	snprintf(path, sizeof(path), "%sprompt_tokens.i32", fix);
	size_t n;
	int32_t *prompt = mc_read_file(mc_source_path(path), &n);
	MC_CHECK(n >= sizeof(int32_t) * (N_PREFILL + N_DECODE), "the fixture's prompt is too short");
	/* The driver and a device first: without them the compile is wasted. */
	char why[2048];
	if (!halo_backend_probe(backend, -1, why, sizeof(why)))
		skip(why);
	/* The HIP-dialect compiler (codegen/hip_compile.h), as gpu_targets_test.sh,
	 * unless the bundle is prebuilt. */
	const char *prebuilt = getenv("HALO_TEST_BUNDLES");
	if ((!prebuilt || !*prebuilt) && !getenv("HALO_CLANG") && system("command -v clang-19 >/dev/null 2>&1") != 0)
		skip("clang-19 is not installed (nor $HALO_CLANG set): no PTX or code objects to run");
	char bundle[1024];
	snprintf(bundle, sizeof(bundle), "gpu_oracle_%s_%s_%d.halo", fixture, backend, (int)getpid());
	mc_compile_for(model, fix, bundle, false, backend);
	halo_model *gpu = open_gpu(bundle, backend);
	halo_model *ref = mc_open(bundle, "ref");
	enum { ROWS = N_PREFILL + N_DECODE };
	size_t vocab = (size_t)halo_model_vocab(ref);
	float *got = calloc((size_t)ROWS * vocab, sizeof(float)), *want = calloc((size_t)ROWS * vocab, sizeof(float));
	run_steps(gpu, prompt, vocab, got);
	run_steps(ref, prompt, vocab, want);
	char what[128];
	snprintf(what, sizeof(what), "%s %s vs ref: prefill and decode logits", fixture, backend);
	MC_CHECK(mc_rows_close(what, got, want, ROWS, vocab, 1e-4), "%s", what);
	for (int r = 0; r < ROWS; r++)
		MC_CHECK(halo_argmax(got + r * vocab, (int64_t)vocab) == halo_argmax(want + r * vocab, (int64_t)vocab),
			 "row %d: greedy token %d on %s, %d on ref", r, halo_argmax(got + r * vocab, (int64_t)vocab),
			 backend, halo_argmax(want + r * vocab, (int64_t)vocab));
	free(got);
	free(want);
	halo_model_close(gpu);
	halo_model_close(ref);
	remove(bundle);
	free(prompt);
}

int main(int argc, char **argv)
{
	bool refuse = argc >= 2 && strcmp(argv[1], "refuse") == 0;
	if (argc < 3 || (refuse ? argc != 3 : argc != 4) || (!refuse && strcmp(argv[1], "oracle") != 0) ||
	    (strcmp(argv[2], "cuda") != 0 && strcmp(argv[2], "hip") != 0)) {
		fprintf(stderr, "usage: test_gpu_backend refuse cuda|hip\n"
				"       test_gpu_backend oracle cuda|hip FIXTURE\n");
		return 2;
	}
	if (refuse)
		check_refused(argv[2]);
	else
		check_oracle(argv[2], argv[3]);
	if (mc_failures)
		return 1;
	printf("gpu backend %s %s%s%s: ok\n", argv[1], argv[2], refuse ? "" : " ", refuse ? "" : argv[3]);
	return 0;
}
