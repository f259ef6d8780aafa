/* Can a decode step hide the fixed cost of its barriers by warming the next
 * matrix into L2 alongside the current one? A chain of streaming reads, one
 * dispatch a matrix with a compute barrier between each, the sizes of a
 * decode layer's matrices (qkv, o, gate/up, down of the Qwen3-8B shape in
 * the chosen format) over LAYERS layers of distinct bytes (far past any L2),
 * timed three ways in one process:
 *   barriers   read_i | read_i+1 | ...                 (how a step runs now)
 *   prefetch   read_i, warm_i+1 | read_i+1, warm_i+2 | ... (warm: a read of the
 *              next matrix's first F MiB by G workgroups, no barrier between
 *              it and read_i, so it runs beside read_i and into its drain)
 *   no barrier read_i, read_i+1, ...                    (the overlap's bound)
 * The reads are read_ceiling.h's streaming read. Each line: microseconds a
 * layer (median of 7 submissions of the chain), GB/s of the matrices'
 * bytes, and the ratio to the barrier chain.
 * usage: prefetch_bench [f16|q8_0|q4_k] [LAYERS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bench/read_ceiling.h"
#include "runtime/drivers/vulkan/vk_buffer.h"
#include "runtime/drivers/vulkan/vk_cmd.h"
#include "runtime/drivers/vulkan/vk_pipeline.h"

enum { READ_GROUPS = 132 * 8, MAX_WARM_GROUPS = 1024, REPS = 7, MATS = 4 };

typedef struct {
	vk_ctx *ctx;
	vk_pipeline p;
	VkDescriptorSet set;
	vk_cmd cmd;
	vk_timer timer;
	uint32_t mat_words[MATS]; /* a layer's matrices, in uvec4 */
	uint32_t layer_words;
	int layers;
} chain;

__attribute__((noreturn)) static void die(const char *what, const char *msg)
{
	bench_die("prefetch_bench", what, msg);
}

/* Records the chain: warm_mib 0 = no warm dispatches; barriers false = none. */
static double time_chain(chain *c, uint32_t warm_mib, uint32_t warm_groups, bool barriers)
{
	vk_error e;
	if (!vk_cmd_begin(c->ctx, &c->cmd, &e))
		die("record", e.msg);
	vk_cmd_timer_reset(&c->cmd, &c->timer);
	vk_cmd_timestamp(&c->cmd, &c->timer, 0);
	int total = c->layers * MATS;
	for (int k = 0; k < total; k++) {
		uint32_t off = (uint32_t)(k / MATS) * c->layer_words;
		for (int j = 0; j < k % MATS; j++)
			off += c->mat_words[j];
		read_stream_push pr = {off, c->mat_words[k % MATS], 0};
		if (barriers && k > 0)
			vk_cmd_barrier(&c->cmd);
		vk_cmd_dispatch(&c->cmd, &c->p, c->p.pipeline, c->set, &pr, READ_GROUPS, 1, 1);
		if (warm_mib && k + 1 < total) {
			uint32_t next = off + c->mat_words[k % MATS], want = warm_mib << 16;
			uint32_t n = c->mat_words[(k + 1) % MATS];
			read_stream_push pw = {next, n < want ? n : want, READ_GROUPS * 256};
			vk_cmd_dispatch(&c->cmd, &c->p, c->p.pipeline, c->set, &pw, warm_groups, 1, 1);
		}
	}
	vk_cmd_timestamp(&c->cmd, &c->timer, 1);
	if (!vk_cmd_end(&c->cmd, &e) || !vk_cmd_submit_wait(c->ctx, &c->cmd, &e))
		die("warm-up", e.msg);
	double us[REPS];
	for (int r = 0; r < REPS; r++) {
		double ns;
		if (!vk_cmd_submit_wait(c->ctx, &c->cmd, &e) ||
		    !vk_timer_elapsed_ns(c->ctx, &c->timer, 0, 1, &ns, &e))
			die("run", e.msg);
		us[r] = ns / 1e3 / c->layers;
	}
	return bench_median(us, REPS);
}

int main(int argc, char **argv)
{
	const char *fmt = argc > 1 ? argv[1] : "q4_k";
	int layers = argc > 2 ? atoi(argv[2]) : 8;
	/* bits per weight as stored: f16 16, q8_0 8.5, q4_k 4.5 */
	double bits = !strcmp(fmt, "f16") ? 16.0 : !strcmp(fmt, "q8_0") ? 8.5 : !strcmp(fmt, "q4_k") ? 4.5 : 0;
	if (bits == 0 || layers < 2 || layers > 64)
		die("usage", "prefetch_bench [f16|q8_0|q4_k] [LAYERS 2..64]");
	/* qkv 4096 x 6144, o 4096 x 4096, gate/up 4096 x 24576, down 12288 x 4096 */
	static const double elems[MATS] = {4096.0 * 6144, 4096.0 * 4096, 4096.0 * 24576, 12288.0 * 4096};
	chain c = {.layers = layers};
	for (int j = 0; j < MATS; j++) {
		c.mat_words[j] = (uint32_t)(elems[j] * bits / 8 / 16);
		c.layer_words += c.mat_words[j];
	}
	vk_ctx_options o = {.validation = false, .device_index = -1};
	vk_error e;
	if (!vk_ctx_create(&o, &c.ctx, &e))
		die("device", e.msg);
	glsl_compiler *cc = glsl_compiler_new();
	printf("%s: read ceiling %.0f GB/s\n", c.ctx->info.name, read_ceiling_gbps(c.ctx, cc, (size_t)2 << 30, 5));
	char err[1024];
	glsl_spirv spv;
	if (!glsl_compile(cc, read_stream_src, "prefetch_bench", true, &spv, err, sizeof err))
		die("compile", err);
	size_t bytes = (size_t)c.layer_words * 16 * (size_t)layers;
	vk_buffer src, dst;
	vk_descriptors pool;
	if (!vk_buffer_create(c.ctx, bytes, VK_BUFFER_DEVICE, &src, &e) ||
	    !vk_buffer_create(c.ctx, (VkDeviceSize)(READ_GROUPS + MAX_WARM_GROUPS) * 256 * 4, VK_BUFFER_DEVICE, &dst,
			      &e) ||
	    !vk_pipeline_create(c.ctx, spv.words, spv.n_words, 2, sizeof(read_stream_push), &c.p, &e) ||
	    !vk_descriptors_create(c.ctx, 1, 2, &pool, &e))
		die("setup", e.msg);
	vk_binding bind[2] = {{src.buffer, 0, bytes}, {dst.buffer, 0, dst.size}};
	if (!vk_descriptors_bind(c.ctx, &pool, &c.p, bind, &c.set, &e) || !vk_timer_create(c.ctx, 2, &c.timer, &e) ||
	    !vk_cmd_create(c.ctx, &c.cmd, &e))
		die("setup", e.msg);
	double layer_gb = (double)c.layer_words * 16 / 1e9;
	printf("%s, %d layers of %.1f MB (qkv %.1f, o %.1f, gate/up %.1f, down %.1f MB)\n", fmt, layers,
	       layer_gb * 1e3, c.mat_words[0] * 16e-6, c.mat_words[1] * 16e-6, c.mat_words[2] * 16e-6,
	       c.mat_words[3] * 16e-6);
	double base = time_chain(&c, 0, 0, true);
	printf("%-34s %8.1f us a layer  %6.0f GB/s  1.000\n", "barriers", base, layer_gb / base * 1e6);
	static const uint32_t mibs[] = {4, 8, 16, 24, 32, 48};
	static const uint32_t groups[] = {132, 264, 528, 1024};
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
		for (size_t m = 0; m < sizeof mibs / sizeof mibs[0]; m++) {
			double t = time_chain(&c, mibs[m], groups[g], true);
			char what[64];
			snprintf(what, sizeof what, "prefetch %2u MiB, %4u workgroups", mibs[m], groups[g]);
			printf("%-34s %8.1f us a layer  %6.0f GB/s  %.3f\n", what, t, layer_gb / t * 1e6, base / t);
		}
	double nb = time_chain(&c, 0, 0, false);
	printf("%-34s %8.1f us a layer  %6.0f GB/s  %.3f\n", "no barrier", nb, layer_gb / nb * 1e6, base / nb);
	vk_cmd_destroy(c.ctx, &c.cmd);
	vk_timer_destroy(c.ctx, &c.timer);
	vk_descriptors_destroy(c.ctx, &pool);
	vk_pipeline_destroy(c.ctx, &c.p);
	vk_buffer_destroy(c.ctx, &src);
	vk_buffer_destroy(c.ctx, &dst);
	glsl_spirv_free(&spv);
	glsl_compiler_free(cc);
	vk_ctx_destroy(c.ctx);
	return 0;
}
