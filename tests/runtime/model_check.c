#include "tests/runtime/model_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/compile.h"

int mc_failures;

const char *mc_source_path(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("HALO_SOURCE_ROOT");
	snprintf(buf, sizeof(buf), "%s/%s", root ? root : ".", rel);
	return buf;
}

void *mc_read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0) {
		fprintf(stderr, "FAIL: cannot read %s\n", path);
		exit(1);
	}
	long len = ftell(f);
	rewind(f);
	void *p = malloc((size_t)len + 1);
	if (!p || fread(p, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "FAIL: cannot read %s\n", path);
		exit(1);
	}
	fclose(f);
	*n = (size_t)len;
	return p;
}

void mc_compile(const char *model_rel, const char *hf_rel, const char *out_path, bool f16)
{
	mc_compile_for(model_rel, hf_rel, out_path, f16, "vulkan");
}

/* The last path component of rel (trailing slashes aside), less ext when
 * it ends with it. */
static void stem(const char *rel, const char *ext, char *out, size_t n)
{
	size_t end = strlen(rel);
	while (end > 1 && rel[end - 1] == '/')
		end--;
	size_t start = end;
	while (start > 0 && rel[start - 1] != '/')
		start--;
	size_t len = end - start, el = strlen(ext);
	if (len >= el && strncmp(rel + end - el, ext, el) == 0)
		len -= el;
	snprintf(out, n, "%.*s", (int)len, rel + start);
}

bool mc_use_prebuilt(const char *name, const char *backend, const char *out_path)
{
	const char *dir = getenv("HALO_TEST_BUNDLES");
	if (!dir || !*dir || halo_target_find(backend) <= HALO_TARGET_VULKAN)
		return false;
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.%s.halo", dir, name, backend);
	FILE *probe = fopen(path, "rb");
	if (!probe) {
		fprintf(stderr, "FAIL: no prebuilt bundle %s (HALO_TEST_BUNDLES; tools/gpu/pack.sh makes them)\n",
			path);
		exit(1);
	}
	fclose(probe);
	size_t n;
	void *bytes = mc_read_file(path, &n);
	FILE *f = fopen(out_path, "wb");
	if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "FAIL: cannot write %s\n", out_path);
		exit(1);
	}
	free(bytes);
	return true;
}

/* mc_compile_for, mc_compile_no_mtp and mc_compile_draft_vocab: the
 * prebuilt bundle <fixture>.<model>.<f32|f16><suffix>, else a compile for
 * the backend (draft_vocab 0: the model file's). */
static void compile_for(const char *model_rel, const char *hf_rel, const char *out_path, bool f16, bool no_mtp,
			int64_t draft_vocab, const char *backend)
{
	char fixture[256], stem_model[256], name[640], dv[32] = "";
	stem(hf_rel, "", fixture, sizeof(fixture));
	stem(model_rel, ".yaml", stem_model, sizeof(stem_model));
	if (draft_vocab)
		snprintf(dv, sizeof(dv), ".dv%lld", (long long)draft_vocab);
	snprintf(name, sizeof(name), "%s.%s.%s%s%s", fixture, stem_model, f16 ? "f16" : "f32", no_mtp ? ".nomtp" : "",
		 dv);
	if (mc_use_prebuilt(name, backend, out_path))
		return;
	int gpu = halo_target_find(backend);
	char model[4096], hf[4096], err[2048];
	snprintf(model, sizeof(model), "%s", mc_source_path(model_rel));
	snprintf(hf, sizeof(hf), "%s", mc_source_path(hf_rel));
	cg_compile_options o = {.model_path = model, .hf_dir = hf, .out_path = out_path,
				.matrix_dtype = f16 ? HALO_F16 : HALO_F32, .no_mtp = no_mtp, .draft_vocab = draft_vocab,
				.ref_only = strcmp(backend, "ref") == 0,
				.targets = gpu > HALO_TARGET_VULKAN ? 1u << HALO_TARGET_VULKAN | 1u << gpu : 0};
	if (!cg_compile(&o, NULL, err, sizeof(err))) {
		fprintf(stderr, "FAIL: compile %s: %s\n", model_rel, err);
		exit(1);
	}
}

void mc_compile_for(const char *model_rel, const char *hf_rel, const char *out_path, bool f16,
		    const char *backend)
{
	compile_for(model_rel, hf_rel, out_path, f16, false, 0, backend);
}

void mc_compile_no_mtp(const char *model_rel, const char *hf_rel, const char *out_path, const char *backend)
{
	compile_for(model_rel, hf_rel, out_path, false, true, 0, backend);
}

void mc_compile_draft_vocab(const char *model_rel, const char *hf_rel, const char *out_path, int64_t draft_vocab,
			    const char *backend)
{
	compile_for(model_rel, hf_rel, out_path, false, false, draft_vocab, backend);
}

bool mc_is_vulkan(const char *backend)
{
	return strcmp(backend, "vulkan") == 0;
}

halo_model *mc_open(const char *bundle, const char *backend)
{
	char err[2048];
	halo_open_options o = {.backend = backend, .device = -1, .validation = mc_is_vulkan(backend)};
	halo_model *m = halo_model_open(bundle, &o, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "FAIL: open %s: %s\n", bundle, err);
		exit(1);
	}
	return m;
}

float *mc_run_logits(const char *bundle, const char *backend, int64_t n_prompt, int64_t n_decode)
{
	char err[2048];
	halo_model *m = mc_open(bundle, backend);
	halo_session *s = mc_session(m);
	size_t vocab = (size_t)halo_model_vocab(m);
	float *l = malloc(sizeof(float) * (size_t)(n_prompt + n_decode) * vocab);
	int32_t *prompt = malloc(sizeof(int32_t) * (size_t)(n_prompt + n_decode)), *feed = prompt + n_prompt;
	if (!l || !prompt) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	for (int64_t i = 0; i < n_prompt; i++)
		prompt[i] = (int32_t)((i * 37 + 11) % (int64_t)vocab);
	for (int64_t i = 0; i < n_decode; i++)
		feed[i] = (int32_t)((i * 53 + 5) % (int64_t)vocab);
	MC_CHECK(halo_session_prefill(s, prompt, n_prompt, l, NULL, err, sizeof err), "prefill: %s", err);
	for (int64_t i = 0; i < n_decode; i++)
		MC_CHECK(halo_session_step(s, "decode", &feed[i], 1, l + (size_t)(n_prompt + i) * vocab, err, sizeof err),
			 "decode %lld: %s", (long long)i, err);
	MC_CHECK(halo_model_validation_messages(m) == 0, "%d validation messages", halo_model_validation_messages(m));
	halo_session_free(s);
	halo_model_close(m);
	free(prompt);
	return l;
}

halo_session *mc_session(halo_model *m)
{
	char err[2048];
	halo_session *s = halo_session_create(m, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "FAIL: session: %s\n", err);
		exit(1);
	}
	return s;
}

bool mc_rows_close(const char *what, const float *got, const float *want, size_t rows, size_t cols, double tol)
{
	double worst = 0;
	size_t worst_row = 0;
	for (size_t r = 0; r < rows; r++) {
		double num = 0, den = 0;
		for (size_t c = 0; c < cols; c++) {
			double d = (double)got[r * cols + c] - want[r * cols + c];
			num += d * d;
			den += (double)want[r * cols + c] * want[r * cols + c];
		}
		double rel = den > 0 ? sqrt(num / den) : sqrt(num);
		if (!(rel <= worst)) { /* NaN counts as worst */
			worst = isnan(rel) ? INFINITY : rel;
			worst_row = r;
		}
	}
	printf("%s: worst row %zu relative error %.3g (tolerance %.1g)\n", what, worst_row, worst, tol);
	return worst <= tol;
}

bool mc_bitwise(const char *what, const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (memcmp(&a[i], &b[i], sizeof(float)) != 0) {
			fprintf(stderr, "%s: element %zu differs: %.9g vs %.9g\n", what, i, (double)a[i], (double)b[i]);
			return false;
		}
	}
	return true;
}

mc_bundle mc_open_bundle(const char *path)
{
	char err[1024];
	mc_bundle o = {.b = halo_bundle_open(path, err, sizeof err)};
	size_t js = 0, ws = 0;
	const char *json = o.b ? halo_bundle_section(o.b, "manifest", &js) : NULL;
	o.weights = o.b ? halo_bundle_section(o.b, "weights", &ws) : NULL;
	uint64_t code_size[HALO_TARGET_COUNT] = {0};
	if (o.b)
		halo_bundle_code_sizes(o.b, code_size);
	o.m = json ? manifest_parse(json, js, ws, code_size, err, sizeof err) : NULL;
	if (!o.m) {
		fprintf(stderr, "FAIL: open %s: %s\n", path, err);
		exit(1);
	}
	return o;
}

void mc_bundle_close(mc_bundle *o)
{
	manifest_free(o->m);
	halo_bundle_close(o->b);
	*o = (mc_bundle){0};
}

const halo_buffer_decl *mc_find_weight(const halo_manifest *m, const char *name)
{
	for (int i = 0; i < m->n_weights; i++)
		if (strcmp(m->weights[i].name, name) == 0)
			return &m->weights[i];
	return NULL;
}
