/* A checkpoint in DeepSeek V4-Flash's forms (docs/models.md 7.2, upstream
 * names) through halo compile (cg_compile, tests/models/dsv4_weights_tiny.yaml):
 *  - attention and shared-expert projections F8_E4M3 with 128x128 block
 *    scales (partial blocks at the edges): `wq_a.scale` and `wo_b.scale`
 *    F8_E8M0 (V4-Flash), the shared expert's `w1.scale` F32 (V4-Flash-Base),
 *    `w3.weight_scale_inv` F8_E8M0 (the HF name), `w2.scale` BF16;
 *  - routed experts MXFP4: `w1` stored I8 with an F8_E8M0 `.scale` (as
 *    V4-Flash ships them), `w3` F4 (safetensors' own 4-bit type, its shape
 *    counting values), `w2` U8 with U8 scales (E8M0 bytes);
 *  - the embedding, norms and head F32, the router BF16.
 * Every expected value is computed here from the bytes written, with this
 * file's own fp8, E2M1 and E8M0 decoders (not the reader's):
 * 1. --dtype f32: every stored weight is its expected f32 bit for bit (the
 *    experts stacked [E, rows, cols] in expert order); nothing of the
 *    checkpoint is left unread (the scales count as read).
 * 2. --dtype f16: every matrix is the f16 of its f32 value (the fp8 and FP4
 *    values scaled by powers of two are exact in f16 here).
 * 3. --quant f8e4m3: wo_b (K = 128) is kept as stored, its codes the
 *    checkpoint's and each row's scale 2^(e - 127) as f32, exactly.
 * 4. Malformed checkpoints fail naming the file, the tensor and what was
 *    expected, and leave no bundle: a scale of the wrong shape, an fp8
 *    tensor without a scale, an E8M0 NaN scale byte, a packed tensor of the
 *    wrong width, a packed tensor without a scale, an FP4 value past f32's
 *    range (6 * 2^127); the NaN scale and the FP4 overflow also under
 *    --quant mxfp4, where the experts are kept as stored.
 * 5. --quant mxfp4: the routed experts (I8, F4 and U8 bytes alike) are kept
 *    as stored, their values region the experts' packed bytes and their
 *    scales region the experts' E8M0 bytes, byte for byte; dequantized
 *    (halo_dequantize_rows) they are the f32 bundle's values bit for bit;
 *    every other matrix is f32 (mxfp4 is the experts' format alone). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/compile.h"
#include "runtime/bundle.h"
#include "runtime/manifest.h"
#include "runtime/drivers/ref/half.h"
#include "runtime/drivers/ref/quant.h"
#include "tests/runtime/model_check.h"

enum { H = 160, Q = 128, N_EXP = 4, FFN = 64, VOCAB = 64, MAX_T = 48 };

typedef struct {
	char name[96];
	const char *dtype; /* as the header says */
	int rank;
	int64_t shape[2];  /* as the header says (I8/U8 packed: bytes) */
	uint8_t *data;
	size_t bytes;
	float *want;       /* the values halo must read, [rows, cols]; NULL for a scale */
	size_t n_want;
	bool skip;         /* left out of the file (a malformed case) */
} tensor;

static tensor tensors[MAX_T];
static int n_tensors;
static uint32_t rng = 2024;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* OCP fp8 E4M3 ("fn"): bias 7, subnormals m * 2^-9; no NaN written here. */
static float fp8_value(uint8_t q)
{
	int e = q >> 3 & 15, m = q & 7;
	float v = e ? ldexpf(1.0f + (float)m / 8.0f, e - 7) : ldexpf((float)m, -9);
	return q & 0x80 ? -v : v;
}

/* E2M1 codes 0..15: bit 3 the sign. */
static const float e2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
			       -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

static float e8m0_value(uint8_t e)
{
	return ldexpf(1.0f, (int)e - 127);
}

static tensor *add(const char *name, const char *dtype, int rank, int64_t rows, int64_t cols, size_t bytes)
{
	tensor *t = &tensors[n_tensors++];
	*t = (tensor){.dtype = dtype, .rank = rank, .shape = {rows, cols}, .bytes = bytes};
	snprintf(t->name, sizeof t->name, "%s", name);
	t->data = malloc(bytes);
	return t;
}

/* An F32 tensor: vectors 1 +- 0.1 (norms), matrices +-0.5. */
static void add_f32(const char *name, int rank, int64_t rows, int64_t cols)
{
	size_t n = (size_t)(rows * (rank == 2 ? cols : 1));
	tensor *t = add(name, "F32", rank, rows, cols, 4 * n);
	t->want = malloc(4 * n);
	t->n_want = n;
	for (size_t i = 0; i < n; i++)
		t->want[i] = rank == 1 ? 1.0f + (float)((int)(next() % 2001) - 1000) * 1e-4f
				       : (float)((int)(next() % 2001) - 1000) * 5e-4f;
	memcpy(t->data, t->want, 4 * n);
}

/* A BF16 matrix: random bits of magnitude below 1, the value those 16 bits. */
static void add_bf16(const char *name, int64_t rows, int64_t cols)
{
	size_t n = (size_t)(rows * cols);
	tensor *t = add(name, "BF16", 2, rows, cols, 2 * n);
	t->want = malloc(4 * n);
	t->n_want = n;
	for (size_t i = 0; i < n; i++) {
		uint16_t b = (uint16_t)(0x3a00 + next() % 0x400) | (uint16_t)(next() & 0x8000);
		memcpy(t->data + 2 * i, &b, 2);
		uint32_t u = (uint32_t)b << 16;
		memcpy(&t->want[i], &u, 4);
	}
}

/* An F8_E4M3 matrix with its [ceil(rows/128), ceil(cols/128)] scale named
 * `scale_name`, of dtype F8_E8M0 (bytes 0x7a..0x7d: 2^-5..2^-2), F32 (not
 * powers of two) or BF16. */
static void add_fp8(const char *name, int64_t rows, int64_t cols, const char *scale_name, const char *scale_dtype)
{
	size_t n = (size_t)(rows * cols), sr = (size_t)(rows + 127) / 128, sc = (size_t)(cols + 127) / 128;
	tensor *t = add(name, "F8_E4M3", 2, rows, cols, n);
	for (size_t i = 0; i < n; i++) /* 0x01..0x7e with either sign: subnormals to 448, never NaN */
		t->data[i] = (uint8_t)(1 + next() % 0x7e) | (uint8_t)(next() & 0x80);
	bool e8m0 = strcmp(scale_dtype, "F8_E8M0") == 0, bf16 = strcmp(scale_dtype, "BF16") == 0;
	tensor *s = add(scale_name, scale_dtype, 2, (int64_t)sr, (int64_t)sc, sr * sc * (e8m0 ? 1 : bf16 ? 2 : 4));
	float scale[4];
	for (size_t b = 0; b < sr * sc; b++) {
		if (e8m0) {
			s->data[b] = (uint8_t)(0x7a + next() % 4);
			scale[b] = e8m0_value(s->data[b]);
		} else if (bf16) {
			uint16_t v = (uint16_t)(0x3c00 + next() % 0x100); /* 2^-7 .. 2^-6 */
			memcpy(s->data + 2 * b, &v, 2);
			uint32_t u = (uint32_t)v << 16;
			memcpy(&scale[b], &u, 4);
		} else {
			scale[b] = (0.5f + (float)(next() % 1000) / 1000.0f) / 64.0f;
			memcpy(s->data + 4 * b, &scale[b], 4);
		}
	}
	t->want = malloc(4 * n);
	t->n_want = n;
	for (size_t i = 0; i < n; i++) /* f32 products, as the reader forms them */
		t->want[i] = fp8_value(t->data[i]) * scale[(i / (size_t)cols) / 128 * sc + (i % (size_t)cols) / 128];
}

/* An MXFP4 matrix of [rows, cols] values: packed bytes (I8 and U8 shaped
 * [rows, cols/2], F4 [rows, cols]), the even value in the low nibble, and
 * its `.scale` [rows, cols/32] of E8M0 bytes 0x78..0x7f (2^-7..2^0), as
 * F8_E8M0 or U8. */
static void add_fp4(const char *name, int64_t rows, int64_t cols, const char *dtype, const char *scale_dtype)
{
	size_t n = (size_t)(rows * cols), sc = (size_t)cols / 32;
	bool f4 = strcmp(dtype, "F4") == 0;
	tensor *t = add(name, dtype, 2, rows, f4 ? cols : cols / 2, n / 2);
	for (size_t i = 0; i < n / 2; i++)
		t->data[i] = (uint8_t)next();
	char sname[96];
	snprintf(sname, sizeof sname, "%.*s.scale", (int)(strlen(name) - strlen(".weight")), name);
	tensor *s = add(sname, scale_dtype, 2, rows, (int64_t)sc, (size_t)rows * sc);
	for (size_t b = 0; b < (size_t)rows * sc; b++)
		s->data[b] = (uint8_t)(0x78 + next() % 8);
	t->want = malloc(4 * n);
	t->n_want = n;
	for (size_t i = 0; i < n; i++) {
		size_t r = i / (size_t)cols, c = i % (size_t)cols;
		uint8_t byte = t->data[i / 2];
		t->want[i] = e2m1[c % 2 ? byte >> 4 : byte & 15] * e8m0_value(s->data[r * sc + c / 32]);
	}
}

static void make_tensors(void)
{
	add_f32("embed.weight", 2, VOCAB, H);
	add_f32("norm.weight", 1, H, 0);
	add_f32("head.weight", 2, VOCAB, H);
	add_f32("layers.0.attn_norm.weight", 1, H, 0);
	add_f32("layers.0.ffn_norm.weight", 1, H, 0);
	add_fp8("layers.0.attn.wq_a.weight", Q, H, "layers.0.attn.wq_a.scale", "F8_E8M0");
	add_fp8("layers.0.attn.wo_b.weight", H, Q, "layers.0.attn.wo_b.scale", "F8_E8M0");
	add_bf16("layers.0.ffn.gate.weight", N_EXP, H);
	add_fp8("layers.0.ffn.shared_experts.w1.weight", FFN, H, "layers.0.ffn.shared_experts.w1.scale", "F32");
	add_fp8("layers.0.ffn.shared_experts.w3.weight", FFN, H, "layers.0.ffn.shared_experts.w3.weight_scale_inv",
		"F8_E8M0");
	add_fp8("layers.0.ffn.shared_experts.w2.weight", H, FFN, "layers.0.ffn.shared_experts.w2.scale", "BF16");
	char name[96];
	for (int e = 0; e < N_EXP; e++) {
		snprintf(name, sizeof name, "layers.0.ffn.experts.%d.w1.weight", e);
		add_fp4(name, FFN, H, "I8", "F8_E8M0");
		snprintf(name, sizeof name, "layers.0.ffn.experts.%d.w3.weight", e);
		add_fp4(name, FFN, H, "F4", "F8_E8M0");
		snprintf(name, sizeof name, "layers.0.ffn.experts.%d.w2.weight", e);
		add_fp4(name, H, FFN, "U8", "U8");
	}
}

static tensor *find(const char *name)
{
	for (int i = 0; i < n_tensors; i++)
		if (strcmp(tensors[i].name, name) == 0)
			return &tensors[i];
	fprintf(stderr, "FAIL: no tensor %s\n", name);
	exit(1);
}

/* dir/config.json and dir/model.safetensors (tensors not skipped). */
static void write_checkpoint(const char *dir)
{
	char path[512], header[16384];
	mkdir(dir, 0755);
	snprintf(path, sizeof path, "%s/config.json", dir);
	FILE *f = fopen(path, "w");
	MC_CHECK(f, "write %s", path);
	fprintf(f, "{\"model_type\": \"dsv4_weights_tiny\", \"hidden_size\": %d, \"num_hidden_layers\": 1, "
		   "\"vocab_size\": %d, \"q_lora_rank\": %d, \"n_routed_experts\": %d, \"num_experts_per_tok\": 2, "
		   "\"moe_intermediate_size\": %d, \"rms_norm_eps\": 1e-6}\n",
		H, VOCAB, Q, N_EXP, FFN);
	fclose(f);
	FILE *h = fmemopen(header, sizeof header, "w");
	fputc('{', h);
	size_t at = 0;
	bool first = true;
	for (int i = 0; i < n_tensors; i++) {
		tensor *t = &tensors[i];
		if (t->skip)
			continue;
		fprintf(h, "%s\"%s\": {\"dtype\": \"%s\", \"shape\": [%lld", first ? "" : ", ", t->name, t->dtype,
			(long long)t->shape[0]);
		if (t->rank == 2)
			fprintf(h, ", %lld", (long long)t->shape[1]);
		fprintf(h, "], \"data_offsets\": [%zu, %zu]}", at, at + t->bytes);
		at += t->bytes;
		first = false;
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
	for (int i = 0; ok && i < n_tensors; i++)
		ok = tensors[i].skip || fwrite(tensors[i].data, 1, tensors[i].bytes, f) == tensors[i].bytes;
	MC_CHECK(ok && fclose(f) == 0, "write %s", path);
}

static bool compile(const char *dir, halo_dtype dtype, halo_dtype quant, const char *out, cg_compile_stats *stats,
		    char *err, size_t errlen)
{
	char model[4096];
	snprintf(model, sizeof model, "%s", mc_source_path("tests/models/dsv4_weights_tiny.yaml"));
	cg_compile_options o = {.model_path = model, .hf_dir = dir, .out_path = out, .matrix_dtype = dtype,
				.quant = quant, .no_fold_norms = true, .no_merge = true, .ref_only = true,
				.no_tokenizer = true};
	return cg_compile(&o, stats, err, errlen);
}

/* The bundle weight `bundle_name`'s expected values: the tensor's, or for a
 * stack ("{e}" in hf) its experts' one after another. Malloc'd. */
static float *expected(const char *hf, size_t *n)
{
	const char *slot = strstr(hf, "{e}");
	if (!slot) {
		tensor *t = find(hf);
		*n = t->n_want;
		float *v = malloc(4 * *n);
		memcpy(v, t->want, 4 * *n);
		return v;
	}
	float *v = NULL;
	*n = 0;
	for (int e = 0; e < N_EXP; e++) {
		char name[96];
		snprintf(name, sizeof name, "%.*s%d%s", (int)(slot - hf), hf, e, slot + 3);
		tensor *t = find(name);
		v = realloc(v, 4 * (*n + t->n_want));
		memcpy(v + *n, t->want, 4 * t->n_want);
		*n += t->n_want;
	}
	return v;
}

static const struct {
	const char *bundle, *hf;
} weights[] = {
	{"tok_embd", "embed.weight"},
	{"out_norm", "norm.weight"},
	{"lm_head", "head.weight"},
	{"layers.0.layer.attn_norm", "layers.0.attn_norm.weight"},
	{"layers.0.layer.ffn_norm", "layers.0.ffn_norm.weight"},
	{"layers.0.layer.wq_a", "layers.0.attn.wq_a.weight"},
	{"layers.0.layer.wo_b", "layers.0.attn.wo_b.weight"},
	{"layers.0.layer.router", "layers.0.ffn.gate.weight"},
	{"layers.0.layer.sh_gate", "layers.0.ffn.shared_experts.w1.weight"},
	{"layers.0.layer.sh_up", "layers.0.ffn.shared_experts.w3.weight"},
	{"layers.0.layer.sh_down", "layers.0.ffn.shared_experts.w2.weight"},
	{"layers.0.layer.exp_gate", "layers.0.ffn.experts.{e}.w1.weight"},
	{"layers.0.layer.exp_up", "layers.0.ffn.experts.{e}.w3.weight"},
	{"layers.0.layer.exp_down", "layers.0.ffn.experts.{e}.w2.weight"},
};
enum { N_WEIGHTS = sizeof weights / sizeof weights[0] };

/* Parts 1 and 2: each weight's bytes against its expected values, as f32
 * or (matrices under f16) as their f16. */
static void check_values(const char *path, bool f16)
{
	mc_bundle b = mc_open_bundle(path);
	for (int i = 0; i < N_WEIGHTS; i++) {
		const halo_buffer_decl *d = mc_find_weight(b.m, weights[i].bundle);
		size_t n;
		float *want = expected(weights[i].hf, &n);
		bool matrix = strstr(weights[i].hf, "{e}") || find(weights[i].hf)->rank == 2;
		halo_dtype dt = f16 && matrix ? HALO_F16 : HALO_F32;
		MC_CHECK(d && d->dtype == dt && d->size == n * halo_dtype_size(dt), "weight '%s': %s of %llu bytes, "
			 "expected %s of %zu", weights[i].bundle, d ? halo_dtype_name(d->dtype) : "missing",
			 d ? (unsigned long long)d->size : 0ull, halo_dtype_name(dt), n * halo_dtype_size(dt));
		if (!d || d->dtype != dt || d->size != n * halo_dtype_size(dt)) {
			free(want);
			continue;
		}
		size_t bad = 0, first = 0;
		for (size_t k = 0; k < n; k++) {
			const uint8_t *p = b.weights + d->offset + k * halo_dtype_size(dt);
			uint32_t got32, want32 = f32_bits(want[k]);
			uint16_t got16;
			bool same;
			if (dt == HALO_F16) {
				memcpy(&got16, p, 2);
				same = got16 == half_from_f32(want[k]);
			} else {
				memcpy(&got32, p, 4);
				same = got32 == want32;
			}
			if (!same && !bad++)
				first = k;
		}
		MC_CHECK(bad == 0, "weight '%s' (%s): %zu of %zu values differ, the first %zu (want %g)",
			 weights[i].bundle, weights[i].hf, bad, n, first, bad ? (double)want[first] : 0.0);
		free(want);
	}
	mc_bundle_close(&b);
}

/* The fp8 and MXFP4 values above are an fp8 or E2M1 value times a power of
 * two from 2^-7 to 2^0: exact in f16, so part 2 holds them bit for bit. */
static void check_f16_exact(void)
{
	static const char *const exact[] = {"layers.0.attn.wq_a.weight", "layers.0.attn.wo_b.weight",
					    "layers.0.ffn.experts.{e}.w1.weight", "layers.0.ffn.experts.{e}.w3.weight",
					    "layers.0.ffn.experts.{e}.w2.weight"};
	for (size_t i = 0; i < sizeof exact / sizeof *exact; i++) {
		size_t n, bad = 0;
		float *v = expected(exact[i], &n);
		for (size_t k = 0; k < n; k++)
			bad += half_to_f32(half_from_f32(v[k])) != v[k];
		MC_CHECK(bad == 0, "%s: %zu values not exact in f16", exact[i], bad);
		free(v);
	}
}

/* Part 3: wo_b kept as stored, its E8M0 scales as their f32 powers of two. */
static void check_kept(const char *path)
{
	mc_bundle b = mc_open_bundle(path);
	const halo_buffer_decl *d = mc_find_weight(b.m, "layers.0.layer.wo_b");
	tensor *t = find("layers.0.attn.wo_b.weight"), *s = find("layers.0.attn.wo_b.scale");
	MC_CHECK(d && d->dtype == HALO_F8E4M3_B128, "wo_b is %s, expected f8e4m3_b128",
		 d ? halo_dtype_name(d->dtype) : "missing");
	if (d && d->dtype == HALO_F8E4M3_B128) {
		halo_quant_layout l = halo_quant_layout_of(HALO_F8E4M3_B128, H, Q);
		const uint8_t *w = b.weights + d->offset;
		MC_CHECK(memcmp(w, t->data, t->bytes) == 0, "wo_b: the stored codes are not the checkpoint's");
		int bad = 0;
		for (int r = 0; r < H; r++) {
			float got;
			memcpy(&got, w + l.scales_offset + (size_t)r * 4, 4);
			bad += f32_bits(got) != f32_bits(ldexpf(1.0f, (int)s->data[r / 128] - 127));
		}
		MC_CHECK(bad == 0, "wo_b: %d row scales are not 2^(e - 127)", bad);
	}
	mc_bundle_close(&b);
}

/* Part 5: the experts kept mxfp4, the rest f32. */
static void check_mxfp4(const char *path, const char *f32_path)
{
	mc_bundle b = mc_open_bundle(path), f = mc_open_bundle(f32_path);
	for (int i = 0; i < N_WEIGHTS; i++) {
		const char *slot = strstr(weights[i].hf, "{e}");
		const halo_buffer_decl *d = mc_find_weight(b.m, weights[i].bundle), *a = mc_find_weight(f.m, weights[i].bundle);
		bool matrix = slot || find(weights[i].hf)->rank == 2;
		halo_dtype want = slot ? HALO_MXFP4 : HALO_F32;
		MC_CHECK(d && a && d->dtype == want, "--quant mxfp4: weight '%s' is %s, expected %s", weights[i].bundle,
			 d ? halo_dtype_name(d->dtype) : "missing", halo_dtype_name(want));
		if (!slot || !matrix || !d || !a || d->dtype != want)
			continue;
		const uint8_t *w = b.weights + d->offset;
		uint64_t rows = 0, k = 0;
		size_t at = 0, sat = 0;
		int bad = 0;
		halo_quant_layout l = {0};
		for (int e = 0; e < N_EXP; e++) {
			char name[96], sname[96];
			snprintf(name, sizeof name, "%.*s%d%s", (int)(slot - weights[i].hf), weights[i].hf, e, slot + 3);
			tensor *t = find(name);
			snprintf(sname, sizeof sname, "%.*s.scale", (int)(strlen(name) - strlen(".weight")), name);
			tensor *s = find(sname);
			k = t->n_want / (uint64_t)t->shape[0]; /* values per row, whatever the dtype counts */
			rows = (uint64_t)N_EXP * (uint64_t)t->shape[0];
			l = halo_quant_layout_of(HALO_MXFP4, rows, k);
			bad += memcmp(w + at, t->data, t->bytes) != 0;
			bad += memcmp(w + l.scales_offset + sat, s->data, s->bytes) != 0;
			at += t->bytes;
			sat += s->bytes;
		}
		MC_CHECK(bad == 0 && d->size == halo_dtype_bytes(HALO_MXFP4, rows, k),
			 "'%s': %d experts' codes or scales are not the checkpoint's bytes", weights[i].bundle, bad);
		float *x = malloc(rows * k * sizeof(float));
		halo_dequantize_rows(HALO_MXFP4, w, rows, k, 0, rows, x);
		MC_CHECK(a->size == rows * k * 4 && memcmp(x, f.weights + a->offset, a->size) == 0,
			 "'%s': dequantized, not the f32 bundle's values bit for bit", weights[i].bundle);
		free(x);
	}
	mc_bundle_close(&b);
	mc_bundle_close(&f);
}

/* Part 4: one malformed checkpoint, compiled under --quant `quant`. `change`
 * alters it, `undo` restores it. */
static void refuse(const char *dir, const char *out, const char *what, halo_dtype quant, void (*change)(bool undo),
		   const char *frag1, const char *frag2)
{
	change(false);
	write_checkpoint(dir);
	change(true);
	char err[2048] = "";
	bool ok = compile(dir, HALO_F32, quant, out, NULL, err, sizeof err);
	MC_CHECK(!ok && strstr(err, "model.safetensors") && strstr(err, frag1) && strstr(err, frag2),
		 "%s: compile %s (%s)", what, ok ? "succeeded" : "failed", err);
	MC_CHECK(access(out, F_OK) != 0, "%s: the failed compile left %s", what, out);
	printf("%s refused: %s\n", what, err);
	remove(out);
}

static void wrong_scale_shape(bool undo)
{
	tensor *s = find("layers.0.attn.wq_a.scale");
	s->shape[1] = undo ? 2 : 1;
	s->bytes = undo ? 2 : 1;
}

static void no_fp8_scale(bool undo)
{
	find("layers.0.attn.wo_b.scale")->skip = !undo;
}

static void e8m0_nan(bool undo)
{
	static uint8_t keep;
	tensor *s = find("layers.0.ffn.experts.2.w1.scale");
	if (!undo)
		keep = s->data[7];
	s->data[7] = undo ? keep : 0xff;
}

static void packed_too_wide(bool undo)
{
	tensor *t = find("layers.0.ffn.experts.1.w2.weight");
	t->shape[1] = undo ? FFN / 2 : FFN / 2 + 2;
	t->bytes = (size_t)(t->shape[0] * (undo ? FFN / 2 : FFN / 2 + 2));
	if (!undo)
		t->data = realloc(t->data, t->bytes);
}

static void no_fp4_scale(bool undo)
{
	find("layers.0.ffn.experts.3.w1.scale")->skip = !undo;
}

/* Expert 1's w3 (F4): row 0's first block given the scale 2^127 (byte
 * 254) and the codes 0 but element 6's, 7 (6): 6 * 2^127 passes f32's
 * 2^128, and no earlier element does. */
static void fp4_overflow(bool undo)
{
	static uint8_t keep_v[16], keep_s;
	tensor *t = find("layers.0.ffn.experts.1.w3.weight"), *s = find("layers.0.ffn.experts.1.w3.scale");
	if (undo) {
		memcpy(t->data, keep_v, 16);
		s->data[0] = keep_s;
		return;
	}
	memcpy(keep_v, t->data, 16);
	keep_s = s->data[0];
	memset(t->data, 0, 16);
	t->data[3] = 7;
	s->data[0] = 254;
}

int main(void)
{
	char dir[64], f32_path[64], f16_path[64], kept_path[64], mx_path[64], bad_path[64], err[2048];
	snprintf(dir, sizeof dir, "dsv4_ckpt_%d", (int)getpid());
	snprintf(f32_path, sizeof f32_path, "dsv4_f32_%d.halo", (int)getpid());
	snprintf(f16_path, sizeof f16_path, "dsv4_f16_%d.halo", (int)getpid());
	snprintf(kept_path, sizeof kept_path, "dsv4_kept_%d.halo", (int)getpid());
	snprintf(mx_path, sizeof mx_path, "dsv4_mx_%d.halo", (int)getpid());
	snprintf(bad_path, sizeof bad_path, "dsv4_bad_%d.halo", (int)getpid());
	make_tensors();
	write_checkpoint(dir);
	cg_compile_stats st;
	if (!compile(dir, HALO_F32, HALO_F32, f32_path, &st, err, sizeof err) ||
	    !compile(dir, HALO_F16, HALO_F32, f16_path, NULL, err, sizeof err) ||
	    !compile(dir, HALO_F32, HALO_F8E4M3_B128, kept_path, NULL, err, sizeof err) ||
	    !compile(dir, HALO_F32, HALO_MXFP4, mx_path, NULL, err, sizeof err)) {
		fprintf(stderr, "FAIL: compile: %s\n", err);
		return 1;
	}
	size_t data = 0;
	for (int i = 0; i < n_tensors; i++)
		data += tensors[i].bytes;
	MC_CHECK(st.unused_tensors == 0 && st.source_bytes == data, "%d tensors unread (%s), %llu of %zu bytes read",
		 st.unused_tensors, st.unused, (unsigned long long)st.source_bytes, data);
	check_values(f32_path, false);
	check_values(f16_path, true);
	check_f16_exact();
	check_kept(kept_path);
	check_mxfp4(mx_path, f32_path);
	printf("%d weights converted exactly (f32, f16), wo_b kept as fp8, the experts as mxfp4\n", N_WEIGHTS);

	refuse(dir, bad_path, "wrong scale shape", HALO_F32, wrong_scale_shape, "scale 'layers.0.attn.wq_a.scale' of tensor "
	       "'layers.0.attn.wq_a.weight'", "expected [1, 2]");
	refuse(dir, bad_path, "fp8 without scale", HALO_F32, no_fp8_scale, "'layers.0.attn.wo_b.weight' is F8_E4M3 but has no",
	       "'layers.0.attn.wo_b.scale'");
	for (int q = 0; q < 2; q++) {
		halo_dtype quant = q ? HALO_MXFP4 : HALO_F32;
		refuse(dir, bad_path, q ? "E8M0 NaN scale (mxfp4)" : "E8M0 NaN scale", quant, e8m0_nan,
		       "'layers.0.ffn.experts.2.w1.scale': element 7", "E8M0 NaN code 0xff");
		refuse(dir, bad_path, q ? "FP4 overflow (mxfp4)" : "FP4 overflow", quant, fp4_overflow,
		       "'layers.0.ffn.experts.1.w3.weight': element 6 (row 0, column 6) is 6 times its scale",
		       "not finite in f32");
	}
	refuse(dir, bad_path, "packed shape", HALO_F32, packed_too_wide, "'layers.0.ffn.experts.1.w2.weight' has shape [160, 34]",
	       "[160, 68] values), the model file expects [160, 64]");
	refuse(dir, bad_path, "FP4 without scale", HALO_F32, no_fp4_scale, "'layers.0.ffn.experts.3.w1.weight' is I8, read as "
	       "packed FP4", "'layers.0.ffn.experts.3.w1.scale'");

	remove(f32_path);
	remove(f16_path);
	remove(kept_path);
	remove(mx_path);
	char path[128];
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	remove(path);
	snprintf(path, sizeof path, "%s/config.json", dir);
	remove(path);
	rmdir(dir);
	for (int i = 0; i < n_tensors; i++) {
		free(tensors[i].data);
		free(tensors[i].want);
	}
	if (mc_failures)
		return 1;
	printf("dsv4 checkpoint: ok\n");
	return 0;
}
