#include "tests/kernels/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/glsl_compile.h"
#include "runtime/drivers/ref/half.h"
#include "runtime/drivers/ref/quant.h"
#include "runtime/drivers/ref/ref_ops.h"
#include "runtime/drivers/vulkan/vk_buffer.h"
#include "runtime/drivers/vulkan/vk_cmd.h"

struct harness {
	vk_ctx *ctx;
	glsl_compiler *cc;
	cg_kernel_cache *cache; /* the environment's, as halo compile's: the kernels' SPIR-V is not what these test */
};

harness *harness_open(void)
{
	harness *h = calloc(1, sizeof *h);
	vk_error err;
	vk_ctx_options opt = {.validation = true, .device_index = -1};
	if (!h || !vk_ctx_create(&opt, &h->ctx, &err)) {
		fprintf(stderr, "FAIL: device: %s\n", h ? err.msg : "out of memory");
		exit(1);
	}
	h->cc = glsl_compiler_new();
	if (!h->cc) {
		fprintf(stderr, "FAIL: shaderc did not start\n");
		exit(1);
	}
	h->cache = cg_kernel_cache_open_default();
	glsl_compiler_use_cache(h->cc, h->cache);
	printf("device: %s (%s), subgroup %u\n", h->ctx->info.name, h->ctx->info.driver_name,
	       h->ctx->info.subgroup_size);
	return h;
}

uint32_t harness_features(const harness *h)
{
	return h->ctx->info.features;
}

bool hk_supported(const harness *h, const kv_kernel *k)
{
	return (k->needs & ~h->ctx->info.features) == 0;
}

int harness_close(harness *h)
{
	uint64_t msgs = h->ctx->validation_messages;
	glsl_compiler_free(h->cc);
	cg_kernel_cache_close(h->cache);
	vk_ctx_destroy(h->ctx);
	free(h);
	if (msgs) {
		fprintf(stderr, "FAIL: %llu validation message(s)\n", (unsigned long long)msgs);
		return 1;
	}
	return 0;
}

bool hk_build(harness *h, const kv_desc *d, hkernel *out)
{
	memset(out, 0, sizeof *out);
	char err[2048];
	if (!kernel_variant_build(d, &out->k, err, sizeof err)) {
		fprintf(stderr, "FAIL: %s\n", err);
		return false;
	}
	glsl_spirv spv;
	if (!glsl_compile(h->cc, out->k.source, out->k.template_name, true, &spv, err, sizeof err)) {
		fprintf(stderr, "FAIL: %s\n%s\n", err, out->k.source);
		kv_kernel_free(&out->k);
		return false;
	}
	/* A kernel needing what the device lacks is compiled and validated but
	 * gets no pipeline: the device would refuse its SPIR-V capabilities
	 * (and the validation layer would say so). hk_supported() is false. */
	if (!hk_supported(h, &out->k)) {
		glsl_spirv_free(&spv);
		return true;
	}
	vk_error verr;
	bool ok = vk_pipeline_create(h->ctx, spv.words, spv.n_words, out->k.n_bindings,
				     out->k.push_size, &out->p, &verr);
	glsl_spirv_free(&spv);
	if (!ok) {
		fprintf(stderr, "FAIL: %s: %s\n", out->k.signature, verr.msg);
		kv_kernel_free(&out->k);
	}
	return ok;
}

void hk_free(harness *h, hkernel *k)
{
	vk_pipeline_destroy(h->ctx, &k->p);
	kv_kernel_free(&k->k);
}

static size_t align256(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

static bool dispatch(harness *h, hkernel *k, vk_buffer *buf, const size_t *off, hop *ops,
		     uint32_t T, uint32_t pos, vk_error *err)
{
	vk_binding b[64];
	for (uint32_t i = 0; i + 1 < k->k.n_bindings; i++)
		b[i] = (vk_binding){buf->buffer, off[i], align256(ops[i].bytes)};
	uint32_t step_at = k->k.n_bindings - 1; /* the step record {pos, T}, last */
	b[step_at] = (vk_binding){buf->buffer, off[step_at], 256};
	vk_descriptors pool;
	vk_cmd cmd = {0};
	VkDescriptorSet set;
	VkPipeline pipeline; /* specialised for T as the runtime's is */
	bool ok = vk_descriptors_create(h->ctx, 1, k->k.n_bindings, &pool, err);
	if (ok && vk_pipeline_for_t(h->ctx, &k->p, T, &pipeline, err) &&
	    vk_descriptors_bind(h->ctx, &pool, &k->p, b, &set, err) && vk_cmd_create(h->ctx, &cmd, err) &&
	    vk_cmd_begin(h->ctx, &cmd, err)) {
		uint32_t push[1] = {T};
		vk_cmd_dispatch(&cmd, &k->p, pipeline, set, push, kv_groups_eval(&k->k, 0, T),
				kv_groups_eval(&k->k, 1, T), kv_groups_eval(&k->k, 2, T));
		ok = vk_cmd_end(&cmd, err) && vk_cmd_submit_wait(h->ctx, &cmd, err);
	} else {
		ok = false;
	}
	vk_cmd_destroy(h->ctx, &cmd);
	vk_descriptors_destroy(h->ctx, &pool);
	return ok;
}

bool hk_run(harness *h, hkernel *k, hop *ops, int n_ops, uint32_t T, uint32_t pos)
{
	if (!k->p.pipeline) {
		fprintf(stderr, "FAIL: %s: no pipeline, the device lacks what it needs\n", k->k.signature);
		return false;
	}
	if ((uint32_t)n_ops + 1 != k->k.n_bindings || n_ops >= 64) {
		fprintf(stderr, "FAIL: %s: %d operands + the step record for %u bindings\n", k->k.signature,
			n_ops, k->k.n_bindings);
		return false;
	}
	size_t off[64], total = 0;
	for (int i = 0; i <= n_ops; i++) {
		off[i] = total;
		total += i < n_ops ? align256(ops[i].bytes) : 256;
	}
	uint32_t step[2] = {pos, T};
	vk_buffer buf;
	vk_error err;
	bool ok = vk_buffer_create(h->ctx, total, VK_BUFFER_DEVICE, &buf, &err);
	for (int i = 0; ok && i < n_ops; i++)
		ok = vk_buffer_upload(h->ctx, &buf, off[i], ops[i].data, ops[i].bytes, &err);
	ok = ok && vk_buffer_upload(h->ctx, &buf, off[n_ops], step, sizeof(step), &err);
	ok = ok && dispatch(h, k, &buf, off, ops, T, pos, &err);
	for (int i = 0; ok && i < n_ops; i++)
		if (ops[i].out)
			ok = vk_buffer_download(h->ctx, &buf, off[i], ops[i].data, ops[i].bytes, &err);
	if (!ok)
		fprintf(stderr, "FAIL: %s: %s\n", k->k.signature, err.msg);
	if (buf.buffer || buf.memory)
		vk_buffer_destroy(h->ctx, &buf);
	return ok;
}

void fill_random(float *x, size_t n, float amp, uint32_t *seed)
{
	for (size_t i = 0; i < n; i++) {
		*seed = *seed * 1664525u + 1013904223u; /* LCG: reproducible everywhere */
		float u = (float)(*seed >> 8) / 16777216.0f; /* [0, 1) */
		float mag = amp * (1.0f / 64.0f + (63.0f / 64.0f) * u);
		/* The sign from a second draw's top bit: an LCG's low bit only
		 * alternates, and alternating signs make dot products sum with no
		 * cancellation, which hides accuracy problems. */
		*seed = *seed * 1664525u + 1013904223u;
		x[i] = (*seed >> 31) ? mag : -mag;
	}
}

void round_f16(float *x, uint16_t *h16, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint16_t b = half_from_f32(x[i]);
		if (h16)
			h16[i] = b;
		x[i] = half_to_f32(b);
	}
}

void *stored_table(halo_dtype wt, float *x, size_t rows, size_t len, size_t *bytes)
{
	size_t n = rows * len;
	if (wt == HALO_F32) {
		*bytes = n * 4;
		return x;
	}
	*bytes = wt == HALO_F16 ? n * 2 : halo_dtype_bytes(wt, rows, len);
	void *p = malloc(*bytes ? *bytes : 1);
	if (!p) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	if (wt == HALO_F16) {
		round_f16(x, p, n);
	} else {
		halo_quantize_rows(wt, x, rows, len, 0, rows, p);
		halo_dequantize_rows(wt, p, rows, len, 0, rows, x);
	}
	return p;
}

bool check_close(const char *what, const float *got, const float *want, size_t n, double tol,
		 double floor)
{
	double worst = 0.0;
	size_t at = 0;
	for (size_t i = 0; i < n; i++) {
		double e = fabs((double)got[i] - (double)want[i]) / fmax(fabs((double)want[i]), floor);
		if (!(e <= worst)) { /* also catches NaN */
			worst = e;
			at = i;
			if (isnan(e))
				break;
		}
	}
	bool ok = worst <= tol;
	printf("%s %s: max rel err %.3g at %zu (got %.9g want %.9g), tol %.3g\n", ok ? "ok  " : "FAIL",
	       what, worst, at, n ? (double)got[at] : 0.0, n ? (double)want[at] : 0.0, tol);
	return ok;
}

bool check_bitwise(const char *what, const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(&a[i], &b[i], sizeof *a) != 0) {
			printf("FAIL %s: element %zu differs (%.9g vs %.9g)\n", what, i, (double)a[i],
			       (double)b[i]);
			return false;
		}
	printf("ok   %s: %zu elements bitwise equal\n", what, n);
	return true;
}

float *alloc_floats(size_t n)
{
	float *p = calloc(n ? n : 1, sizeof *p);
	if (!p) {
		fprintf(stderr, "FAIL: out of memory\n");
		exit(1);
	}
	return p;
}

void ref_apply_elem(const kv_elem_op *e, float *v, const float *extra, int64_t n)
{
	static const ref_bcast_kind kinds[] = {
		[KV_BCAST_FULL] = REF_BCAST_FULL,
		[KV_BCAST_TRAILING] = REF_BCAST_TRAILING,
		[KV_BCAST_LASTDIM] = REF_BCAST_LASTDIM,
	};
	ref_bcast bc = {kinds[e->bcast], e->bcast_n};
	const float *a = e->operand == 0 ? v : extra, *b = e->operand == 0 ? extra : v;
	if (!ref_elementwise((int)e->op, a, b, v, n, bc, e->value)) {
		fprintf(stderr, "FAIL: op %d is not elementwise\n", (int)e->op);
		exit(1);
	}
}
