/* Prefill matmul kernels at Qwen3-8B shapes: for T = 512 rows and each
 * weight shape K x N (q/o 4096x4096, gate/up 4096x12288, down 12288x4096,
 * k/v 4096x1024) it times every choice of the prefill variant space
 * (kv_variant_space: the cooperative-matrix kernel's tiles, then the tiled
 * kernel) with f16 weights, plain and with the fused rms_norm prologue (the
 * q/k/v and gate/up projections carry it; down carries a residual add
 * epilogue instead), and prints time and TFLOP/s (2 T K N per dispatch).
 * A variant whose needs the device lacks (coopmat on lavapipe) is listed as
 * skipped. On a CPU device the shapes shrink to 64 rows of 512 x 512 so the
 * run stays short; its times say nothing about a GPU.
 *
 * Times are the median of 7 recordings of `iters` dispatches, barriers
 * between them. The weights are one copy, so a matrix under the L2 size
 * stays cached across dispatches; at T = 512 the kernels are bound by their
 * arithmetic and staging, not by the weight stream.
 * usage: matmul_bench [ITERS]   (no validation layer: timings only) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "codegen/glsl_compile.h"
#include "codegen/kernel_variant.h"
#include "runtime/drivers/vulkan/vk_buffer.h"
#include "runtime/drivers/vulkan/vk_cmd.h"
#include "runtime/drivers/vulkan/vk_pipeline.h"

#define REPS 7
#define MAX_K 12288
#define MAX_N 12288

typedef struct {
	vk_ctx *ctx;
	glsl_compiler *cc;
	vk_buffer x, w, nw, res, y, step;
	int iters;
} bench;

__attribute__((noreturn)) static void die(const char *what, const char *msg)
{
	bench_die("matmul_bench", what, msg);
}

/* Median ns per dispatch of variant d at T rows; -1 when the device lacks
 * what it needs (the tile string is written to tile either way). */
static double time_variant(bench *b, const kv_desc *d, int64_t T, char *tile, size_t len)
{
	int64_t K = d->u.matmul.K, N = d->u.matmul.N;
	kv_kernel k;
	char err[2048];
	if (!kernel_variant_build(d, &k, err, sizeof err))
		die("build", err);
	snprintf(tile, len, "%s", k.tile);
	if (k.needs & ~b->ctx->info.features) {
		kv_kernel_free(&k);
		return -1;
	}
	glsl_spirv spv;
	if (!glsl_compile(b->cc, k.source, k.template_name, true, &spv, err, sizeof err))
		die(k.signature, err);
	vk_pipeline p;
	vk_descriptors pool;
	vk_cmd cmd = {0};
	vk_timer timer;
	VkDescriptorSet set;
	vk_error e;
	if (!vk_pipeline_create(b->ctx, spv.words, spv.n_words, k.n_bindings, k.push_size, &p, &e) ||
	    !vk_descriptors_create(b->ctx, 1, k.n_bindings, &pool, &e))
		die(k.signature, e.msg);
	/* x, w, [norm weight], [residual], y, the step record */
	vk_binding bind[6];
	uint32_t n = 0;
	bind[n++] = (vk_binding){b->x.buffer, 0, (VkDeviceSize)(T * K * 4)};
	bind[n++] = (vk_binding){b->w.buffer, 0, (VkDeviceSize)(K * N * 2)};
	if (d->pro.on)
		bind[n++] = (vk_binding){b->nw.buffer, 0, (VkDeviceSize)(K * 4)};
	if (d->n_epi)
		bind[n++] = (vk_binding){b->res.buffer, 0, (VkDeviceSize)(T * N * 4)};
	bind[n++] = (vk_binding){b->y.buffer, 0, (VkDeviceSize)(T * N * 4)};
	bind[n++] = (vk_binding){b->step.buffer, 0, 16};
	if (n != k.n_bindings)
		die(k.signature, "unexpected binding count");
	if (!vk_descriptors_bind(b->ctx, &pool, &p, bind, &set, &e) || !vk_timer_create(b->ctx, 2, &timer, &e) ||
	    !vk_cmd_create(b->ctx, &cmd, &e) || !vk_cmd_begin(b->ctx, &cmd, &e))
		die(k.signature, e.msg);
	uint32_t push = (uint32_t)T;
	VkPipeline pipeline; /* specialised for T as the runtime's is */
	if (!vk_pipeline_for_t(b->ctx, &p, (uint32_t)T, &pipeline, &e))
		die(k.signature, e.msg);
	vk_cmd_timer_reset(&cmd, &timer);
	vk_cmd_timestamp(&cmd, &timer, 0);
	for (int i = 0; i < b->iters; i++) {
		vk_cmd_dispatch(&cmd, &p, pipeline, set, &push, kv_groups_eval(&k, 0, T), kv_groups_eval(&k, 1, T),
				kv_groups_eval(&k, 2, T));
		vk_cmd_barrier(&cmd);
	}
	vk_cmd_timestamp(&cmd, &timer, 1);
	if (!vk_cmd_end(&cmd, &e) || !vk_cmd_submit_wait(b->ctx, &cmd, &e)) /* warm-up */
		die(k.signature, e.msg);
	double ns[REPS];
	for (int r = 0; r < REPS; r++)
		if (!vk_cmd_submit_wait(b->ctx, &cmd, &e) || !vk_timer_elapsed_ns(b->ctx, &timer, 0, 1, &ns[r], &e))
			die(k.signature, e.msg);
	double median = bench_median(ns, REPS);
	vk_cmd_destroy(b->ctx, &cmd);
	vk_timer_destroy(b->ctx, &timer);
	vk_descriptors_destroy(b->ctx, &pool);
	vk_pipeline_destroy(b->ctx, &p);
	glsl_spirv_free(&spv);
	kv_kernel_free(&k);
	return median / b->iters;
}

static void bench_shape(bench *b, int64_t T, int64_t K, int64_t N, bool pro, bool residual)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = T, .wtype = HALO_F16, .pro = {.on = pro, .eps = 1e-6f, .offset = 1}};
	d.u.matmul.K = K;
	d.u.matmul.N = N;
	if (residual) {
		d.n_epi = 1;
		d.epi[0] = (kv_elem_op){.op = IR_OP_ADD, .operand = 0, .bcast = KV_BCAST_FULL};
	}
	kv_tiles space[16];
	int n = kv_variant_space(&d, space, 16);
	for (int i = 0; i < n; i++) {
		char tile[128];
		d.tiles = space[i];
		double ns = time_variant(b, &d, T, tile, sizeof tile);
		const char *fused = pro ? "rms_norm" : residual ? "+residual" : "-";
		if (ns < 0)
			printf("%4lld %6lld x %-6lld %-9s %-30s %10s %9s  skipped: the device lacks what it needs\n",
			       (long long)T, (long long)K, (long long)N, fused, tile, "-", "-");
		else
			printf("%4lld %6lld x %-6lld %-9s %-30s %10.1f %9.4f\n", (long long)T, (long long)K,
			       (long long)N, fused, tile, ns / 1e3, 2.0 * (double)T * (double)K * (double)N / ns / 1e3);
		fflush(stdout);
	}
}

/* Finite values: x f32 in +-[0.1, 1]; w f16 bits, halves in +-[0.09, 0.19]. */
static void fill(bench *b, vk_buffer *buf, size_t bytes, bool half)
{
	enum { PIECE = 16 << 20 };
	uint32_t *h = malloc(PIECE);
	for (size_t i = 0; i < PIECE / 4; i++) {
		uint32_t r = (uint32_t)(i * 2654435761u);
		if (half)
			h[i] = (0x2e00u + (r >> 22)) | (((0x2e00u + ((r >> 12) & 0x3ff)) | 0x8000u) << 16);
		else {
			float f = (0.1f + (float)(r >> 8) / 18641351.0f) * ((r & 1) ? -1.0f : 1.0f);
			memcpy(&h[i], &f, 4);
		}
	}
	vk_error e;
	for (size_t off = 0; off < bytes; off += PIECE)
		if (!vk_buffer_upload(b->ctx, buf, off, h, bytes - off < PIECE ? bytes - off : PIECE, &e))
			die("upload", e.msg);
	free(h);
}

int main(int argc, char **argv)
{
	bench b = {.iters = argc > 1 ? atoi(argv[1]) : 20};
	if (b.iters < 1)
		die("usage", "matmul_bench [ITERS >= 1]");
	vk_ctx_options o = {.validation = false, .device_index = -1};
	vk_error e;
	if (!vk_ctx_create(&o, &b.ctx, &e))
		die("device", e.msg);
	b.cc = glsl_compiler_new();
	if (!b.cc)
		die("shaderc", "did not start");
	bool small = b.ctx->info.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
	int64_t T = small ? 64 : 512;
	size_t xb = (size_t)T * MAX_K * 4, wb = (size_t)MAX_K * MAX_N * 2, yb = (size_t)T * MAX_N * 4;
	if (!vk_buffer_create(b.ctx, xb, VK_BUFFER_DEVICE, &b.x, &e) ||
	    !vk_buffer_create(b.ctx, wb, VK_BUFFER_DEVICE, &b.w, &e) ||
	    !vk_buffer_create(b.ctx, (size_t)MAX_K * 4, VK_BUFFER_DEVICE, &b.nw, &e) ||
	    !vk_buffer_create(b.ctx, yb, VK_BUFFER_DEVICE, &b.res, &e) ||
	    !vk_buffer_create(b.ctx, yb, VK_BUFFER_DEVICE, &b.y, &e) ||
	    !vk_buffer_create(b.ctx, 256, VK_BUFFER_DEVICE, &b.step, &e))
		die("buffers", e.msg);
	fill(&b, &b.x, xb, false);
	fill(&b, &b.w, wb, true);
	fill(&b, &b.nw, (size_t)MAX_K * 4, false);
	fill(&b, &b.res, yb, false);
	printf("%s, driver %s; coopmat (HALO_NEED_COOPMAT_NV): %s; %d dispatches per timing\n", b.ctx->info.name,
	       b.ctx->info.driver_info, b.ctx->info.features & HALO_NEED_COOPMAT_NV ? "yes" : "no", b.iters);
	printf("%4s %-15s %-9s %-30s %10s %9s\n", "T", "K x N", "fused", "tile", "us", "TFLOP/s");
	/* q/o, gate/up, down, k/v */
	static const int64_t full[][3] = {{4096, 4096, 1}, {4096, 12288, 1}, {12288, 4096, 0}, {4096, 1024, 1}};
	static const int64_t tiny[][3] = {{512, 512, 1}};
	const int64_t(*shapes)[3] = small ? tiny : full;
	size_t n = small ? sizeof tiny / sizeof *tiny : sizeof full / sizeof *full;
	for (size_t s = 0; s < n; s++) {
		bench_shape(&b, T, shapes[s][0], shapes[s][1], false, false);
		if (shapes[s][2])
			bench_shape(&b, T, shapes[s][0], shapes[s][1], true, false);
		else
			bench_shape(&b, T, shapes[s][0], shapes[s][1], false, true);
	}
	vk_buffer *bufs[] = {&b.x, &b.w, &b.nw, &b.res, &b.y, &b.step};
	for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
		vk_buffer_destroy(b.ctx, bufs[i]);
	glsl_compiler_free(b.cc);
	vk_ctx_destroy(b.ctx);
	return 0;
}
