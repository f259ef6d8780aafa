/* DeepSeek V4-Flash's MXFP4 routed experts kept as stored, end to end: the
 * fixture tests/fixtures/deepseek_v4_fp8 (the tiny model in V4-Flash's
 * checkpoint form: experts I8 packed FP4 with F8_E8M0 scales per 32, the
 * rest fp8, BF16 and F32) through halo compile --quant mxfp4, on the
 * backend named by argv[1].
 *
 * usage: test_mxfp4_experts ref|vulkan
 *
 * Two compiles, both --dtype f32 with no norm folded (as --quant sets it):
 *   kept: --quant mxfp4 (the experts mxfp4, every other weight f32)
 *   f32:  no --quant (the checkpoint reader dequantizes the experts,
 *         x = e2m1 * 2^(e - 127) in f32)
 * 1. Every expert stack (moe_gate_up's and moe_down's operands, the MTP
 *    head's included) is mxfp4, and nothing else is; dequantized
 *    (halo_dequantize_rows) each is the f32 bundle's weight bit for bit
 *    (test_dsv4_checkpoint checks the bytes are the checkpoint's).
 * 2. Logits of a prompt and 8 decode steps: on ref, the kept bundle's are
 *    the f32 bundle's bitwise (ref runs both on the same f32 weights). On
 *    Vulkan, the kept bundle's against ref's on the same bundle to 2e-4
 *    per row (relative), as test_quant_model and test_fp8_checkpoint hold
 *    the other formats: the kernels dequantize to the same values and only
 *    the order of f32 sums differs.
 * 3. (ref) Under --quant f8e4m3 the experts are still mxfp4, the kept
 *    bundle's bytes (codegen/weights.c, kept_format). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "runtime/drivers/ref/quant.h"
#include "tests/runtime/model_check.h"

enum { VOCAB = 256, N_PROMPT = 20, N_DECODE = 8, N_EXPERT_STACKS = 15 /* 4 layers and the MTP head, 3 each */ };

static bool compile(halo_dtype quant, bool vulkan, const char *out, char *err, size_t errlen)
{
	char model[4096], hf[4096];
	snprintf(model, sizeof model, "%s", mc_source_path("models/deepseek_v4.yaml"));
	snprintf(hf, sizeof hf, "%s", mc_source_path("tests/fixtures/deepseek_v4_fp8"));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = out, .matrix_dtype = HALO_F32,
				.quant = quant, .no_fold_norms = true, .ref_only = !vulkan, .no_tokenizer = true};
	return cg_compile(&o, NULL, err, errlen);
}

/* Part 1. */
static void check_experts(const char *kept_path, const char *f32_path)
{
	mc_bundle kept = mc_open_bundle(kept_path), f32 = mc_open_bundle(f32_path);
	int n = 0;
	for (int i = 0; i < kept.m->n_weights; i++) {
		const halo_buffer_decl *d = &kept.m->weights[i];
		bool expert = strstr(d->name, "_exp_gate") || strstr(d->name, "_exp_up") || strstr(d->name, "_exp_down");
		MC_CHECK(expert == (d->dtype == HALO_MXFP4), "weight '%s' is %s", d->name, halo_dtype_name(d->dtype));
		if (d->dtype != HALO_MXFP4)
			continue;
		n++;
		const halo_buffer_decl *a = mc_find_weight(f32.m, d->name);
		uint64_t k = (uint64_t)d->shape[d->rank - 1], rows = 1;
		for (int r = 0; r + 1 < d->rank; r++)
			rows *= (uint64_t)d->shape[r];
		float *x = malloc(rows * k * sizeof(float));
		halo_dequantize_rows(HALO_MXFP4, kept.weights + d->offset, rows, k, 0, rows, x);
		MC_CHECK(a && a->dtype == HALO_F32 && a->size == rows * k * 4 &&
				 memcmp(x, f32.weights + a->offset, a->size) == 0,
			 "weight '%s': dequantized, not the f32 bundle's values bit for bit", d->name);
		free(x);
	}
	MC_CHECK(n == N_EXPERT_STACKS, "%d mxfp4 weights, expected %d expert stacks", n, N_EXPERT_STACKS);
	printf("%d expert stacks kept as mxfp4\n", n);
	mc_bundle_close(&kept);
	mc_bundle_close(&f32);
}

/* Part 3: under --quant f8e4m3 the experts stay the checkpoint's mxfp4
 * bytes (fewer than fp8's, and exact), the kept bundle's byte for byte. */
static void check_f8_keeps_mxfp4(const char *kept_path, const char *f8_path)
{
	mc_bundle kept = mc_open_bundle(kept_path), f8 = mc_open_bundle(f8_path);
	int n = 0;
	for (int i = 0; i < f8.m->n_weights; i++) {
		const halo_buffer_decl *d = &f8.m->weights[i];
		if (d->dtype != HALO_MXFP4)
			continue;
		n++;
		const halo_buffer_decl *a = mc_find_weight(kept.m, d->name);
		MC_CHECK(a && a->dtype == HALO_MXFP4 && a->size == d->size &&
				 memcmp(kept.weights + a->offset, f8.weights + d->offset, d->size) == 0,
			 "weight '%s': under --quant f8e4m3, not the --quant mxfp4 bundle's bytes", d->name);
	}
	MC_CHECK(n == N_EXPERT_STACKS, "--quant f8e4m3: %d mxfp4 weights, expected the %d expert stacks", n,
		 N_EXPERT_STACKS);
	printf("--quant f8e4m3 keeps the %d expert stacks mxfp4\n", n);
	mc_bundle_close(&kept);
	mc_bundle_close(&f8);
}

int main(int argc, char **argv)
{
	bool vulkan = argc == 2 && strcmp(argv[1], "vulkan") == 0;
	if (argc != 2 || (!vulkan && strcmp(argv[1], "ref") != 0)) {
		fprintf(stderr, "usage: test_mxfp4_experts ref|vulkan\n");
		return 2;
	}
	char kept_path[64], f32_path[64], err[2048];
	snprintf(kept_path, sizeof kept_path, "mxfp4_kept_%d.halo", (int)getpid());
	snprintf(f32_path, sizeof f32_path, "mxfp4_f32_%d.halo", (int)getpid());
	if (!compile(HALO_MXFP4, vulkan, kept_path, err, sizeof err) ||
	    !compile(HALO_F32, false, f32_path, err, sizeof err)) {
		fprintf(stderr, "FAIL: compile: %s\n", err);
		return 1;
	}
	check_experts(kept_path, f32_path);
	if (!vulkan) {
		char f8_path[64];
		snprintf(f8_path, sizeof f8_path, "mxfp4_f8_%d.halo", (int)getpid());
		if (!compile(HALO_F8E4M3_B128, false, f8_path, err, sizeof err)) {
			fprintf(stderr, "FAIL: compile --quant f8e4m3: %s\n", err);
			return 1;
		}
		check_f8_keeps_mxfp4(kept_path, f8_path);
		remove(f8_path);
	}

	size_t n = (size_t)(N_PROMPT + N_DECODE) * VOCAB;
	float *ref = mc_run_logits(kept_path, "ref", N_PROMPT, N_DECODE);
	if (vulkan) {
		float *got = mc_run_logits(kept_path, "vulkan", N_PROMPT, N_DECODE);
		MC_CHECK(mc_rows_close("vulkan vs ref, the mxfp4 bundle", got, ref, N_PROMPT + N_DECODE, VOCAB, 2e-4),
			 "vulkan's logits differ from ref's");
		free(got);
	} else {
		float *want = mc_run_logits(f32_path, "ref", N_PROMPT, N_DECODE);
		MC_CHECK(mc_bitwise("ref: kept mxfp4 vs dequantized f32", ref, want, n), "the logits differ");
		free(want);
	}
	free(ref);
	remove(kept_path);
	remove(f32_path);
	if (mc_failures)
		return 1;
	printf("mxfp4 experts on %s: ok\n", argv[1]);
	return 0;
}
