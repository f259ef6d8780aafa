/* An fp8 checkpoint (F8_E4M3 matrices with 128x128 `_scale_inv` block
 * scales, as DeepSeek's and Qwen's FP8 releases ship) through halo compile
 * --quant f8e4m3, on the backend named by argv[1].
 *
 * usage: test_fp8_checkpoint ref|vulkan
 *
 * The checkpoint: Qwen3 at the dims of tests/models/quant_k256/qwen3 (K =
 * 256 and 512; the head's 320 rows end in a partial block of 64), random
 * codes (no NaN, never all zero) and scales that are not powers of two, the
 * vectors and the embedding table F32. Three compiles of it:
 *   kept:   --dtype f32 --quant f8e4m3 --no-merge
 *   f32:    --dtype f32 --no-merge, no norm folded (the checkpoint reader
 *           dequantizes, x = code * scale in f32)
 *   merged: --dtype f32 --quant f8e4m3 (q, k, v and gate, up merged:
 *           passes/merge_matmuls.c)
 * 1. Every matrix of the kept bundle is f8e4m3_b128 whose values region is
 *    the checkpoint's codes byte for byte and whose scale for (row r,
 *    block b) is the checkpoint's scale [r / 128][b] bit for bit.
 * 2. Its dequantized values (halo_dequantize_rows) are the f32 bundle's
 *    bytes: the same f32 product.
 * 3. The merged matrices are f8e4m3_b128 too (their parts' codes and scales
 *    rearranged). Logits of a prompt and 8 decode steps: on ref, the kept
 *    and the merged bundles' are the f32 bundle's bitwise (the ref backend
 *    runs all three on the same f32 weights, a merged matrix's columns each
 *    their own row's sum). On Vulkan, the merged bundle's logits against
 *    ref's on the same bundle to 2e-4, as test_quant_model holds the other
 *    formats (only the order of f32 sums differs).
 * 4. A NaN code (0x7f) in a kept matrix: compile fails naming the file, the
 *    tensor and the element, and leaves no bundle. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "runtime/bundle.h"
#include "runtime/manifest.h"
#include "runtime/drivers/ref/quant.h"
#include "tests/runtime/model_check.h"

enum { H = 256, HEAD_DIM = 64, NQ = 4 * HEAD_DIM, NKV = 2 * HEAD_DIM, FFN = 512, VOCAB = 320, LAYERS = 2 };
enum { N_PROMPT = 24, N_DECODE = 8, MAX_T = 32 };

typedef struct {
	char name[96], bundle_name[64];
	const char *dtype; /* F32 or F8_E4M3 (with a scale companion) */
	int rank;
	int64_t shape[2];
	uint8_t *data;
	size_t bytes;
	float *scale; /* F8_E4M3: [ceil(rows/128), cols/128] */
} tensor;

static tensor tensors[MAX_T];
static int n_tensors;

static uint32_t rng = 12345;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static tensor *add(const char *name, const char *bundle_name, const char *dtype, int rank, int64_t rows,
		   int64_t cols)
{
	tensor *t = &tensors[n_tensors++];
	snprintf(t->name, sizeof t->name, "%s", name);
	snprintf(t->bundle_name, sizeof t->bundle_name, "%s", bundle_name);
	t->dtype = dtype;
	t->rank = rank;
	t->shape[0] = rows;
	t->shape[1] = cols;
	size_t n = (size_t)(rows * (rank == 2 ? cols : 1));
	bool fp8 = strcmp(dtype, "F8_E4M3") == 0;
	t->bytes = fp8 ? n : 4 * n;
	t->data = malloc(t->bytes);
	if (fp8) {
		/* codes 0x01..0x7e with either sign: subnormals to 448, no NaN */
		for (size_t i = 0; i < n; i++)
			t->data[i] = (uint8_t)(1 + next() % 0x7e) | (next() & 0x80);
		size_t nb = (size_t)((rows + 127) / 128 * (cols / 128));
		t->scale = malloc(nb * sizeof(float));
		for (size_t b = 0; b < nb; b++) /* about 1 / (448 sqrt(K)): weights of order 1/sqrt(K) */
			t->scale[b] = (0.5f + (float)(next() % 1000) / 1000.0f) / (448.0f * sqrtf((float)cols) / 8.0f);
		return t;
	}
	float *f = (float *)t->data;
	for (size_t i = 0; i < n; i++) /* vectors 1 +- 0.1 (norms), the table +-0.5 */
		f[i] = rank == 1 ? 1.0f + ((float)(next() % 2001) - 1000.0f) * 1e-4f
				 : ((float)(next() % 2001) - 1000.0f) * 5e-4f;
	return t;
}

static void make_tensors(void)
{
	add("model.embed_tokens.weight", "tok_embd", "F32", 2, VOCAB, H);
	add("model.norm.weight", "out_norm", "F32", 1, H, 0);
	add("lm_head.weight", "lm_head", "F8_E4M3", 2, VOCAB, H);
	static const struct {
		const char *hf, *halo;
		int64_t rows, cols;
	} mats[] = {
		{"self_attn.q_proj", "wq", NQ, H},   {"self_attn.k_proj", "wk", NKV, H}, {"self_attn.v_proj", "wv", NKV, H},
		{"self_attn.o_proj", "wo", H, NQ},   {"mlp.gate_proj", "w_gate", FFN, H}, {"mlp.up_proj", "w_up", FFN, H},
		{"mlp.down_proj", "w_down", H, FFN},
	};
	for (int l = 0; l < LAYERS; l++) {
		char name[96], bname[64];
		for (size_t i = 0; i < sizeof mats / sizeof *mats; i++) {
			snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, mats[i].hf);
			snprintf(bname, sizeof bname, "layers.%d.decoder.%s", l, mats[i].halo);
			add(name, bname, "F8_E4M3", 2, mats[i].rows, mats[i].cols);
		}
		static const char *const vec[][2] = {{"input_layernorm", "attn_norm"},
						     {"post_attention_layernorm", "ffn_norm"},
						     {"self_attn.q_norm", "q_norm"},
						     {"self_attn.k_norm", "k_norm"}};
		for (int i = 0; i < 4; i++) {
			snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, vec[i][0]);
			snprintf(bname, sizeof bname, "layers.%d.decoder.%s", l, vec[i][1]);
			add(name, bname, "F32", 1, i < 2 ? H : HEAD_DIM, 0);
		}
	}
}

/* Tensor name + suffix's header entry. */
static void put_json_tensor(FILE *h, const char *name, const char *suffix, const char *dtype, int rank,
			    const int64_t *shape, size_t begin, size_t end, bool first)
{
	fprintf(h, "%s\"%s%s\": {\"dtype\": \"%s\", \"shape\": [%lld", first ? "" : ", ", name, suffix, dtype,
		(long long)shape[0]);
	if (rank == 2)
		fprintf(h, ", %lld", (long long)shape[1]);
	fprintf(h, "], \"data_offsets\": [%zu, %zu]}", begin, end);
}

/* dir/model.safetensors from the tensors (and dir/config.json copied). */
static void write_checkpoint(const char *dir)
{
	char path[512], header[16384];
	mkdir(dir, 0755);
	size_t n;
	void *cfg = mc_read_file(mc_source_path("tests/models/quant_k256/qwen3/config.json"), &n);
	snprintf(path, sizeof path, "%s/config.json", dir);
	FILE *f = fopen(path, "wb");
	MC_CHECK(f && fwrite(cfg, 1, n, f) == n && fclose(f) == 0, "write %s", path);
	free(cfg);
	FILE *h = fmemopen(header, sizeof header, "w");
	fputc('{', h);
	size_t at = 0;
	for (int i = 0; i < n_tensors; i++) {
		tensor *t = &tensors[i];
		put_json_tensor(h, t->name, "", t->dtype, t->rank, t->shape, at, at + t->bytes, i == 0);
		at += t->bytes;
		if (t->scale) {
			int64_t s[2] = {(t->shape[0] + 127) / 128, t->shape[1] / 128};
			put_json_tensor(h, t->name, "_scale_inv", "F32", 2, s, at, at + (size_t)(s[0] * s[1]) * 4, false);
			at += (size_t)(s[0] * s[1]) * 4;
		}
	}
	fputc('}', h);
	long len = ftell(h);
	while (len % 8) { /* the data starts 8-aligned */
		fputc(' ', h);
		len++;
	}
	fclose(h);
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	f = fopen(path, "wb");
	uint64_t hl = (uint64_t)len;
	bool ok = f && fwrite(&hl, 8, 1, f) == 1 && fwrite(header, 1, (size_t)len, f) == (size_t)len;
	for (int i = 0; ok && i < n_tensors; i++) {
		tensor *t = &tensors[i];
		ok = fwrite(t->data, 1, t->bytes, f) == t->bytes;
		size_t nb = (size_t)((t->shape[0] + 127) / 128 * (t->shape[1] / 128));
		if (ok && t->scale)
			ok = fwrite(t->scale, 4, nb, f) == nb;
	}
	MC_CHECK(ok && fclose(f) == 0, "write %s", path);
}

static bool compile(const char *dir, halo_dtype quant, bool vulkan, bool merge, const char *out, char *err,
		    size_t errlen)
{
	char model[4096];
	snprintf(model, sizeof model, "%s", mc_source_path("models/qwen3.yaml"));
	cg_compile_options o = {.model_path = model, .hf_dir = dir, .out_path = out, .matrix_dtype = HALO_F32,
				.quant = quant, .no_fold_norms = true, .ref_only = !vulkan, .no_tokenizer = true,
				.no_merge = !merge};
	return cg_compile(&o, NULL, err, errlen);
}

/* Parts 1 and 2, for one fp8 tensor. */
static void check_kept(const mc_bundle *kept, const mc_bundle *f32, const tensor *t)
{
	const halo_buffer_decl *d = mc_find_weight(kept->m, t->bundle_name), *a = mc_find_weight(f32->m, t->bundle_name);
	MC_CHECK(d && a && d->dtype == HALO_F8E4M3_B128 && a->dtype == HALO_F32, "weight '%s' is %s, expected %s",
		 t->bundle_name, d ? halo_dtype_name(d->dtype) : "missing", halo_dtype_name(HALO_F8E4M3_B128));
	if (!d || !a || d->dtype != HALO_F8E4M3_B128)
		return;
	uint64_t rows = (uint64_t)t->shape[0], k = (uint64_t)t->shape[1], blocks = k / 128;
	halo_quant_layout l = halo_quant_layout_of(HALO_F8E4M3_B128, rows, k);
	const uint8_t *w = kept->weights + d->offset;
	MC_CHECK(memcmp(w, t->data, t->bytes) == 0, "weight '%s': the stored codes are not the checkpoint's",
		 t->name);
	int bad = 0;
	for (uint64_t r = 0; r < rows; r++)
		for (uint64_t b = 0; b < blocks; b++)
			bad += memcmp(w + l.scales_offset + (r * blocks + b) * 4, &t->scale[r / 128 * blocks + b], 4) != 0;
	MC_CHECK(bad == 0, "weight '%s': %d (row, block) scales are not the checkpoint's block scale", t->name, bad);
	float *x = malloc(rows * k * sizeof(float));
	halo_dequantize_rows(HALO_F8E4M3_B128, w, rows, k, 0, rows, x);
	MC_CHECK(a->size == rows * k * 4 && memcmp(x, f32->weights + a->offset, a->size) == 0,
		 "weight '%s': dequantized, not the f32 bundle's values bit for bit", t->bundle_name);
	free(x);
}

/* Part 4: lm_head's element 5 made the NaN code. */
static void nan_code(const char *dir, const char *out)
{
	tensor *head = &tensors[2];
	uint8_t keep = head->data[5];
	head->data[5] = 0x7f;
	write_checkpoint(dir);
	head->data[5] = keep;
	char err[2048] = "";
	bool ok = compile(dir, HALO_F8E4M3_B128, false, false, out, err, sizeof err);
	MC_CHECK(!ok && strstr(err, "model.safetensors: tensor 'lm_head.weight': element 5 is the fp8 NaN code 0x7f"),
		 "a NaN code: compile %s (%s)", ok ? "succeeded" : "failed", err);
	MC_CHECK(access(out, F_OK) != 0, "the failed compile left %s", out);
	printf("NaN code refused: %s\n", err);
}

int main(int argc, char **argv)
{
	bool vulkan = argc == 2 && strcmp(argv[1], "vulkan") == 0;
	if (argc != 2 || (!vulkan && strcmp(argv[1], "ref") != 0)) {
		fprintf(stderr, "usage: test_fp8_checkpoint ref|vulkan\n");
		return 2;
	}
	char dir[64], kept_path[64], f32_path[64], merged_path[64], err[2048];
	snprintf(dir, sizeof dir, "fp8_ckpt_%d", (int)getpid());
	snprintf(kept_path, sizeof kept_path, "fp8_kept_%d.halo", (int)getpid());
	snprintf(f32_path, sizeof f32_path, "fp8_f32_%d.halo", (int)getpid());
	snprintf(merged_path, sizeof merged_path, "fp8_merged_%d.halo", (int)getpid());
	make_tensors();
	write_checkpoint(dir);
	if (!compile(dir, HALO_F8E4M3_B128, false, false, kept_path, err, sizeof err) ||
	    !compile(dir, HALO_F32, false, false, f32_path, err, sizeof err) ||
	    !compile(dir, HALO_F8E4M3_B128, vulkan, true, merged_path, err, sizeof err)) {
		fprintf(stderr, "FAIL: compile: %s\n", err);
		return 1;
	}
	mc_bundle kept = mc_open_bundle(kept_path), f32 = mc_open_bundle(f32_path);
	int n_fp8 = 0;
	for (int i = 0; i < n_tensors; i++)
		if (tensors[i].scale) {
			check_kept(&kept, &f32, &tensors[i]);
			n_fp8++;
		}
	printf("%d fp8 matrices kept as stored\n", n_fp8);
	mc_bundle_close(&kept);
	mc_bundle_close(&f32);
	mc_bundle merged = mc_open_bundle(merged_path);
	static const char *const merged_names[] = {"layers.0.decoder.wk+wq+wv", "layers.1.decoder.w_gate+w_up"};
	for (int i = 0; i < 2; i++) {
		const halo_buffer_decl *d = mc_find_weight(merged.m, merged_names[i]);
		MC_CHECK(d && d->dtype == HALO_F8E4M3_B128, "merged weight '%s' is %s, expected f8e4m3_b128",
			 merged_names[i], d ? halo_dtype_name(d->dtype) : "missing");
	}
	mc_bundle_close(&merged);

	size_t n = (size_t)(N_PROMPT + N_DECODE) * VOCAB;
	float *ref = mc_run_logits(merged_path, "ref", N_PROMPT, N_DECODE);
	if (vulkan) {
		float *got = mc_run_logits(merged_path, "vulkan", N_PROMPT, N_DECODE);
		MC_CHECK(mc_rows_close("vulkan vs ref, the merged fp8 bundle", got, ref, N_PROMPT + N_DECODE, VOCAB,
				       2e-4),
			 "vulkan's logits differ from ref's");
		free(got);
	} else {
		float *want = mc_run_logits(f32_path, "ref", N_PROMPT, N_DECODE);
		float *unmerged = mc_run_logits(kept_path, "ref", N_PROMPT, N_DECODE);
		MC_CHECK(mc_bitwise("ref: merged fp8 vs dequantized f32", ref, want, n), "the logits differ");
		MC_CHECK(mc_bitwise("ref: kept fp8 vs dequantized f32", unmerged, want, n), "the logits differ");
		free(want);
		free(unmerged);
		remove(kept_path);
		nan_code(dir, kept_path);
	}
	free(ref);
	remove(kept_path);
	remove(f32_path);
	remove(merged_path);
	char path[128];
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	remove(path);
	snprintf(path, sizeof path, "%s/config.json", dir);
	remove(path);
	rmdir(dir);
	for (int i = 0; i < n_tensors; i++) {
		free(tensors[i].data);
		free(tensors[i].scale);
	}
	if (mc_failures)
		return 1;
	printf("fp8 checkpoint on %s: ok\n", argv[1]);
	return 0;
}
