/* Decode matrix-vector kernel sweep: times the matvec variant (f16 weights)
 * over tile choices at Qwen3-8B layer shapes and prints the achieved weight
 * bandwidth. The seed of a per-GPU tuning table (halo tune): run it on the
 * target GPU, pick the defaults from its table.
 * usage: matvec_bench [ITERS]   (no validation layer: timings only) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/glsl_compile.h"
#include "codegen/kernel_variant.h"
#include "runtime/vulkan/vk_buffer.h"
#include "runtime/vulkan/vk_cmd.h"
#include "runtime/vulkan/vk_pipeline.h"

typedef struct {
	vk_ctx *ctx;
	glsl_compiler *cc;
	vk_buffer x, w, y, step;
	int iters;
} bench;

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "matvec_bench: %s: %s\n", what, msg);
	exit(1);
}

/* Median-free but repeatable: one timed recording of `iters` dispatches
 * separated by barriers, after a warm-up run of the same recording. */
static double time_variant(bench *b, int64_t K, int64_t N, int64_t T, uint32_t local, uint32_t cols)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = 8, .wtype = HALO_F16};
	d.u.matmul.K = K;
	d.u.matmul.N = N;
	d.tiles.local = local;
	d.tiles.cols = cols;
	kv_kernel k;
	char err[1024];
	if (!kernel_variant_build(&d, &k, err, sizeof(err)))
		return -1; /* tile not allowed for this shape */
	glsl_spirv spv;
	if (!glsl_compile(b->cc, k.source, k.template_name, true, &spv, err, sizeof(err)))
		die(k.signature, err);
	vk_pipeline p;
	vk_descriptors pool;
	vk_cmd cmd = {0};
	vk_timer timer;
	VkDescriptorSet set;
	vk_error e;
	vk_binding bind[4] = {{b->x.buffer, 0, (VkDeviceSize)(T * K * 4)},
			      {b->w.buffer, 0, (VkDeviceSize)(N * K * 2)},
			      {b->y.buffer, 0, (VkDeviceSize)(T * N * 4)},
			      {b->step.buffer, 0, 16}};
	if (!vk_pipeline_create(b->ctx, spv.words, spv.n_words, k.n_bindings, k.push_size, &p, &e) ||
	    !vk_descriptors_create(b->ctx, 1, k.n_bindings, &pool, &e) ||
	    !vk_descriptors_bind(b->ctx, &pool, &p, bind, &set, &e) || !vk_timer_create(b->ctx, 2, &timer, &e) ||
	    !vk_cmd_create(b->ctx, &cmd, &e) || !vk_cmd_begin(b->ctx, &cmd, &e))
		die(k.signature, e.msg);
	uint32_t push = (uint32_t)T;
	vk_cmd_timer_reset(&cmd, &timer);
	vk_cmd_timestamp(&cmd, &timer, 0);
	for (int i = 0; i < b->iters; i++) {
		vk_cmd_dispatch(&cmd, &p, set, &push, kv_groups_eval(&k, 0, T), kv_groups_eval(&k, 1, T),
				kv_groups_eval(&k, 2, T));
		vk_cmd_barrier(&cmd);
	}
	vk_cmd_timestamp(&cmd, &timer, 1);
	double ns = 0;
	if (!vk_cmd_end(&cmd, &e) || !vk_cmd_submit_wait(b->ctx, &cmd, &e) || !vk_cmd_submit_wait(b->ctx, &cmd, &e) ||
	    !vk_timer_elapsed_ns(b->ctx, &timer, 0, 1, &ns, &e))
		die(k.signature, e.msg);
	vk_cmd_destroy(b->ctx, &cmd);
	vk_timer_destroy(b->ctx, &timer);
	vk_descriptors_destroy(b->ctx, &pool);
	vk_pipeline_destroy(b->ctx, &p);
	glsl_spirv_free(&spv);
	kv_kernel_free(&k);
	return ns / b->iters;
}

static void fill(bench *b, vk_buffer *buf, size_t bytes)
{
	uint16_t *h = malloc(bytes);
	for (size_t i = 0; i < bytes / 2; i++)
		h[i] = (uint16_t)(0x3000 + (i * 2654435761u >> 22)); /* finite halves near 0.1..1 */
	vk_error e;
	if (!vk_buffer_upload(b->ctx, buf, 0, h, bytes, &e))
		die("upload", e.msg);
	free(h);
}

int main(int argc, char **argv)
{
	bench b = {.iters = argc > 1 ? atoi(argv[1]) : 50};
	vk_ctx_options o = {.validation = false, .device_index = -1};
	vk_error e;
	if (!vk_ctx_create(&o, &b.ctx, &e))
		die("device", e.msg);
	b.cc = glsl_compiler_new();
	const size_t maxw = (size_t)151936 * 4096 * 2;
	if (!vk_buffer_create(b.ctx, 8 * 12288 * 4, VK_BUFFER_DEVICE, &b.x, &e) ||
	    !vk_buffer_create(b.ctx, maxw, VK_BUFFER_DEVICE, &b.w, &e) ||
	    !vk_buffer_create(b.ctx, (size_t)8 * 151936 * 4, VK_BUFFER_DEVICE, &b.y, &e) ||
	    !vk_buffer_create(b.ctx, 256, VK_BUFFER_DEVICE, &b.step, &e))
		die("buffers", e.msg);
	fill(&b, &b.x, 8 * 12288 * 4);
	fill(&b, &b.w, maxw);
	printf("%s\n%-22s %5s %5s %5s %10s %9s\n", b.ctx->info.name, "shape K x N", "T", "local", "cols", "us",
	       "GB/s");
	const int64_t shapes[][2] = {{4096, 4096}, {4096, 12288}, {12288, 4096}, {4096, 151936}};
	const uint32_t locals[] = {32, 64, 128, 256}, colss[] = {1, 2, 4, 8};
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		for (int64_t T = 1; T <= 4; T += 3)
			for (size_t l = 0; l < 4; l++)
				for (size_t c = 0; c < 4; c++) {
					double ns = time_variant(&b, shapes[s][0], shapes[s][1], T, locals[l], colss[c]);
					if (ns <= 0)
						continue;
					double bytes = (double)shapes[s][0] * (double)shapes[s][1] * 2;
					printf("%6lld x %-13lld %5lld %5u %5u %10.1f %9.0f\n", (long long)shapes[s][0],
					       (long long)shapes[s][1], (long long)T, locals[l], colss[c], ns / 1e3,
					       bytes / ns);
				}
	vk_buffer_destroy(b.ctx, &b.x);
	vk_buffer_destroy(b.ctx, &b.w);
	vk_buffer_destroy(b.ctx, &b.y);
	vk_buffer_destroy(b.ctx, &b.step);
	glsl_compiler_free(b.cc);
	vk_ctx_destroy(b.ctx);
	return 0;
}
