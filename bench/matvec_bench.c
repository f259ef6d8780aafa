/* Decode matrix-vector kernels against the device's read ceiling: for each
 * weight shape (Qwen3-8B layers and head, the Qwen3.8 Flash cut's layers and
 * head) it times the built-in heuristic's variant and every choice of the
 * variant space (kv_variant_space, what a bundle carries for halo tune) at
 * T = 1, 2, 4, 5, 8 rows (the heuristic and the fastest at T = 1; every other
 * candidate at T = 1, 5 and 8: 5 is verification's with the default 4 drafts), and with --sweep a wider grid of tiles at T = 1,
 * then prints time, weight bandwidth and the fraction of the read ceiling
 * (bench/read_ceiling.h) measured in the same run.
 *
 * Weights are f16, or with --dtype any of f16, q8_0, q4_k (a comma-separated
 * list; runtime/drivers/ref/quant.h's formats, 8.5 and 4.5 bits per weight): GB/s
 * count the bytes a format stores (values and scales), so the fraction of the
 * ceiling compares formats on their own bytes. A shape whose K is not a
 * multiple of the format's block (q4_k: 256) is skipped for it.
 *
 * Each timed dispatch reads a different copy of the weights, so a matrix
 * smaller than the L2 cache is streamed from memory as in a real decode
 * step; times are the median of 7 recordings of `iters` dispatches.
 * With --only PREFIX the space's other candidates whose tile starts with
 * PREFIX are timed at every T, beside the heuristic, and nothing else (no
 * best). With --xq the quantized formats' kernels take int8 activations
 * (xq = 8, docs/quantization.md; the dtype column says q8_0x8, q4_kx8).
 * With --shape KxN (repeatable) only the shapes given are timed, K <= 12288
 * and N <= 248320 (the buffers' sizes): to see where a time steps with the
 * number of workgroups, or a model's own shapes.
 * With --tile LOCAL,SPLIT,COLS,UNROLL[,QW] (repeatable) those tiles are timed
 * at T = 1 beside the heuristic, and nothing else. --pro fuses the unfolded
 * rms_norm prologue (a norm weight of K, as under --quant) and --pair the
 * swiglu pair (rows are gate/up pairs, N / 2 results): the decode's fused
 * forms of the qkv and gate/up matvecs, whose cost beside the plain kernel
 * they show. --stats prints each timed pipeline's compile statistics after
 * its line (VK_KHR_pipeline_executable_properties where the driver has it:
 * NVIDIA's register count, RADV's VGPRs and waves per SIMD), which say
 * how many workgroups a multiprocessor holds.
 * usage: matvec_bench [--sweep] [--only PREFIX] [--dtype f16,q8_0,q4_k] [--xq] [--shape KxN]...
 *                     [--tile L,S,C,U[,W]]... [--pro] [--pair] [--stats] [ITERS]
 * (no validation layer: timings only) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bench/read_ceiling.h"
#include "codegen/glsl_compile.h"
#include "codegen/kernel_variant.h"
#include "runtime/drivers/vulkan/vk_buffer.h"
#include "runtime/drivers/vulkan/vk_cmd.h"
#include "runtime/drivers/vulkan/vk_pipeline.h"

/* Bytes of weight copies each shape rotates through: far past any L2. */
#define POOL_BYTES ((size_t)1536 << 20)
#define MAX_COPIES 16
#define REPS 7
/* The largest K and N the x, norm weight and y buffers hold (8 rows of x
 * and y): the largest of the built-in shapes, and --shape's bound. */
#define MAX_K 12288
#define MAX_N 248320

typedef struct {
	vk_ctx *ctx;
	glsl_compiler *cc;
	vk_buffer x, w, y, step, nw;
	size_t pool; /* bytes of w */
	int iters;
	double ceiling; /* GB/s */
	bool stats;      /* --stats */
	char stat[512];  /* the last timed pipeline's statistics ("" for none) */
	bool pro, pair;  /* --pro, --pair: the fused forms */
	kv_tiles tiles[8]; /* --tile: timed instead of the space */
	int n_tiles;
} bench;

__attribute__((noreturn)) static void die(const char *what, const char *msg)
{
	bench_die("matvec_bench", what, msg);
}

/* The bytes a K x N weight of type t stores (values and scales). */
static size_t weight_bytes(halo_dtype t, int64_t K, int64_t N)
{
	return halo_dtype_bytes(t, (size_t)N, (size_t)K);
}

static int copies_of(const bench *b, halo_dtype t, int64_t K, int64_t N)
{
	size_t per = (weight_bytes(t, K, N) + 255) / 256 * 256;
	size_t c = b->pool / per;
	return c < 1 ? 1 : c > MAX_COPIES ? MAX_COPIES : (int)c;
}

/* Whether variant d is legal and its tile starts with prefix (a build of
 * its source alone: nothing is compiled or timed). */
static bool tile_has_prefix(const kv_desc *d, const char *prefix)
{
	kv_kernel k;
	char err[1024];
	if (!kernel_variant_build(d, &k, err, sizeof(err)))
		return false;
	bool match = strncmp(k.tile, prefix, strlen(prefix)) == 0;
	kv_kernel_free(&k);
	return match;
}

/* Median ns per dispatch of variant d at T rows, or -1 if d is not a legal
 * variant or the device lacks what it needs. */
static double time_variant(bench *b, const kv_desc *d, int64_t T, char *sig, size_t siglen)
{
	int64_t K = d->u.matmul.K, N = d->u.matmul.N;
	kv_kernel k;
	char err[1024];
	if (!kernel_variant_build(d, &k, err, sizeof(err)))
		return -1;
	snprintf(sig, siglen, "%s", k.tile);
	if (k.needs & ~b->ctx->info.features) {
		kv_kernel_free(&k);
		return -1;
	}
	glsl_spirv spv;
	if (!glsl_compile(b->cc, k.source, k.template_name, true, &spv, err, sizeof(err)))
		die(k.signature, err);
	int copies = copies_of(b, d->wtype, K, N);
	size_t stride = (weight_bytes(d->wtype, K, N) + 255) / 256 * 256;
	vk_pipeline p;
	vk_descriptors pool;
	vk_cmd cmd = {0};
	vk_timer timer;
	VkDescriptorSet set[MAX_COPIES];
	vk_error e;
	if (!vk_pipeline_create(b->ctx, spv.words, spv.n_words, k.n_bindings, k.push_size, &p, &e) ||
	    !vk_descriptors_create(b->ctx, (uint32_t)copies, (uint32_t)copies * k.n_bindings, &pool, &e))
		die(k.signature, e.msg);
	for (int c = 0; c < copies; c++) {
		/* the inputs, the prologue's norm weight, the output, the step
		 * (kernel_variant.h's binding order) */
		vk_binding bind[5];
		uint32_t n_bind = 0;
		bind[n_bind++] = (vk_binding){b->x.buffer, 0, (VkDeviceSize)(T * K * 4)};
		bind[n_bind++] = (vk_binding){b->w.buffer, (VkDeviceSize)(c * stride),
					      (VkDeviceSize)weight_bytes(d->wtype, K, N)};
		if (d->pro.on)
			bind[n_bind++] = (vk_binding){b->nw.buffer, 0, (VkDeviceSize)(K * 4)};
		bind[n_bind++] = (vk_binding){b->y.buffer, 0, (VkDeviceSize)(T * N * 4)};
		bind[n_bind++] = (vk_binding){b->step.buffer, 0, 16};
		if (n_bind != k.n_bindings)
			die(k.signature, "the bench's bindings do not match the kernel's");
		if (!vk_descriptors_bind(b->ctx, &pool, &p, bind, &set[c], &e))
			die(k.signature, e.msg);
	}
	if (!vk_timer_create(b->ctx, 2, &timer, &e) || !vk_cmd_create(b->ctx, &cmd, &e) ||
	    !vk_cmd_begin(b->ctx, &cmd, &e))
		die(k.signature, e.msg);
	uint32_t push = (uint32_t)T;
	VkPipeline pipeline; /* specialised for T as the runtime's is */
	if (!vk_pipeline_for_t(b->ctx, &p, (uint32_t)T, &pipeline, &e))
		die(k.signature, e.msg);
	if (b->stats && !vk_pipeline_statistics(b->ctx, pipeline, b->stat, sizeof b->stat))
		snprintf(b->stat, sizeof b->stat, "(no statistics from this driver)");
	vk_cmd_timer_reset(&cmd, &timer);
	vk_cmd_timestamp(&cmd, &timer, 0);
	for (int i = 0; i < b->iters; i++) {
		vk_cmd_dispatch(&cmd, &p, pipeline, set[i % copies], &push, kv_groups_eval(&k, 0, T), kv_groups_eval(&k, 1, T),
				kv_groups_eval(&k, 2, T));
		vk_cmd_barrier(&cmd);
	}
	vk_cmd_timestamp(&cmd, &timer, 1);
	/* Warm-up long enough for the clocks to leave their idle state: the
	 * first recordings after a pause (a compile) ran up to 4x slower. */
	double warm = 0;
	if (!vk_cmd_end(&cmd, &e))
		die(k.signature, e.msg);
	for (int r = 0; r < 1000 && warm < 100e6; r++) {
		double ns1;
		if (!vk_cmd_submit_wait(b->ctx, &cmd, &e) || !vk_timer_elapsed_ns(b->ctx, &timer, 0, 1, &ns1, &e))
			die(k.signature, e.msg);
		warm += ns1;
	}
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

static void report(const bench *b, const kv_desc *d, int64_t T, const char *what, const char *tile, double ns)
{
	double gbs = (double)weight_bytes(d->wtype, d->u.matmul.K, d->u.matmul.N) / ns;
	printf("%6lld x %-7lld %-4s%-2s %2lld  %-10s %-26s %9.1f %7.0f %5.1f%%\n", (long long)d->u.matmul.K,
	       (long long)d->u.matmul.N, halo_dtype_name(d->wtype), d->u.matmul.xq ? "x8" : "", (long long)T, what,
	       tile, ns / 1e3, gbs, 100.0 * gbs / b->ceiling);
	if (b->stats)
		printf("      %s\n", b->stat);
}

/* A wider grid than the space, at T = 1: what the heuristic should pick. */
static kv_tiles sweep(bench *b, kv_desc d, double *best_ns)
{
	static const uint32_t splits[] = {16, 32, 64, 128, 256, 512, 1024}, mults[] = {1, 2, 4};
	static const uint32_t colss[] = {1, 2, 4}, unrolls[] = {1, 2, 4, 8}, qws[] = {1, 2, 4};
	size_t n_qw = halo_dtype_is_quant(d.wtype) ? 3 : 1;
	kv_tiles best = {0};
	*best_ns = 1e30;
	char tile[128];
	for (size_t s = 0; s < sizeof splits / sizeof *splits; s++)
		for (size_t m = 0; m < sizeof mults / sizeof *mults; m++)
			for (size_t c = 0; c < sizeof colss / sizeof *colss; c++)
				for (size_t u = 0; u < sizeof unrolls / sizeof *unrolls * n_qw; u++) {
					uint32_t local = splits[s] * mults[m] < 64 ? 64 : splits[s] * mults[m];
					if (mults[m] > 1 && local == splits[s] * mults[m - 1])
						continue; /* the same workgroup as the smaller multiple */
					size_t nu = sizeof unrolls / sizeof *unrolls;
					d.tiles = (kv_tiles){.local = local, .split = splits[s], .cols = colss[c],
							     .unroll = unrolls[u % nu], .qw = n_qw > 1 ? qws[u / nu] : 0};
					double ns = time_variant(b, &d, 1, tile, sizeof tile);
					if (ns > 0 && ns < *best_ns) {
						*best_ns = ns;
						best = d.tiles;
					}
				}
	return best;
}

static void bench_shape(bench *b, halo_dtype wt, int64_t K, int64_t N, bool do_sweep, const char *only, bool xq)
{
	kv_desc d = {.op = IR_OP_MATMUL, .t_max = KV_MATVEC_MAX_T, .wtype = wt};
	if (b->pro)
		d.pro = (kv_prologue){.on = true, .eps = 1e-6f};
	d.u.matmul.pair = b->pair;
	d.u.matmul.K = K;
	d.u.matmul.N = N;
	d.u.matmul.xq = xq && halo_dtype_is_quant(wt) ? 8 : 0;
	char tile[128];
	static const int64_t rows[] = {1, 2, 4, 5, 8};
	for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
		int64_t T = rows[r];
		d.tiles = (kv_tiles){0};
		double ns = time_variant(b, &d, T, tile, sizeof tile);
		report(b, &d, T, "heuristic", tile, ns);
	}
	for (int i = 0; i < b->n_tiles; i++) {
		d.tiles = b->tiles[i];
		if (!halo_dtype_is_quant(wt))
			d.tiles.qw = 0;
		double ns = time_variant(b, &d, 1, tile, sizeof tile);
		if (ns > 0)
			report(b, &d, 1, "given", tile, ns);
		else
			printf("%6lld x %-7lld tile %u,%u,%u,%u,%u: not a legal variant here\n", (long long)K, (long long)N,
			       d.tiles.local, d.tiles.split, d.tiles.cols, d.tiles.unroll, d.tiles.qw);
	}
	if (b->n_tiles)
		return;
	kv_tiles space[16];
	int n = kv_variant_space(&d, space, 16);
	double best = 1e30;
	kv_tiles best_t = space[0];
	for (int i = 1; i < n; i++) {
		d.tiles = space[i];
		if (only && !tile_has_prefix(&d, only))
			continue;
		double ns = time_variant(b, &d, 1, tile, sizeof tile);
		if (ns <= 0)
			continue;
		report(b, &d, 1, "space", tile, ns);
		/* T = 5 and 8 too (with --only every T of the heuristic's rows):
		 * speculative verification runs the same candidate. */
		for (size_t r = 1; r < sizeof rows / sizeof *rows; r++)
			if (only || rows[r] == 5 || rows[r] == 8)
				report(b, &d, rows[r], "space", tile, time_variant(b, &d, rows[r], tile, sizeof tile));
		if (ns < best) {
			best = ns;
			best_t = space[i];
		}
	}
	if (only)
		return; /* the chosen variants alone */
	if (do_sweep) {
		double sw;
		kv_tiles t = sweep(b, d, &sw);
		if (sw < best) {
			best = sw;
			best_t = t;
		}
	}
	for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
		int64_t T = rows[r];
		d.tiles = best_t;
		double ns = time_variant(b, &d, T, tile, sizeof tile);
		report(b, &d, T, "best", tile, ns);
	}
}

static void fill(bench *b, vk_buffer *buf, size_t bytes)
{
	enum { PIECE = 64 << 20 };
	uint16_t *h = malloc(PIECE);
	for (size_t i = 0; i < PIECE / 2; i++)
		h[i] = (uint16_t)(0x3000 + (i * 2654435761u >> 22)); /* finite halves near 0.1..1 */
	vk_error e;
	for (size_t off = 0; off < bytes; off += PIECE)
		if (!vk_buffer_upload(b->ctx, buf, off, h, bytes - off < PIECE ? bytes - off : PIECE, &e))
			die("upload", e.msg);
	free(h);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* a run cut short keeps its finished lines */
	bool do_sweep = false, xq = false;
	const char *only = NULL;
	halo_dtype types[3] = {HALO_F16};
	int n_types = 1;
	bench b = {.iters = 50};
	int64_t given[16][2];
	size_t n_given = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--sweep") == 0) {
			do_sweep = true;
		} else if (strcmp(argv[i], "--stats") == 0) {
			b.stats = true;
		} else if (strcmp(argv[i], "--pro") == 0) {
			b.pro = true;
		} else if (strcmp(argv[i], "--pair") == 0) {
			b.pair = true;
		} else if (strcmp(argv[i], "--xq") == 0) {
			xq = true;
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			only = argv[++i];
		} else if (strcmp(argv[i], "--shape") == 0 && i + 1 < argc) {
			long long k, n;
			char end;
			if (n_given == 16 || sscanf(argv[++i], "%lldx%lld%c", &k, &n, &end) != 2 || k < 1 || k > MAX_K ||
			    n < 1 || n > MAX_N) {
				char msg[96];
				snprintf(msg, sizeof msg, "takes KxN with K <= %d and N <= %d, at most 16 times", MAX_K, MAX_N);
				die("--shape", msg);
			}
			given[n_given][0] = k;
			given[n_given++][1] = n;
		} else if (strcmp(argv[i], "--tile") == 0 && i + 1 < argc) {
			unsigned v[5] = {0, 0, 0, 0, 4};
			int got = sscanf(argv[++i], "%u,%u,%u,%u,%u", &v[0], &v[1], &v[2], &v[3], &v[4]);
			if (b.n_tiles == 8 || got < 4)
				die("--tile", "takes LOCAL,SPLIT,COLS,UNROLL[,QW], at most 8 times");
			b.tiles[b.n_tiles++] =
			    (kv_tiles){.local = v[0], .split = v[1], .cols = v[2], .unroll = v[3], .qw = v[4]};
		} else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
			char list[64];
			snprintf(list, sizeof list, "%s", argv[++i]);
			n_types = 0;
			for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
				halo_dtype t;
				if (n_types == 3 || !halo_dtype_from_name(tok, &t) ||
				    (t != HALO_F16 && t != HALO_Q8_0 && t != HALO_Q4_K))
					die("--dtype", "takes a list of f16, q8_0, q4_k");
				types[n_types++] = t;
			}
		} else {
			b.iters = atoi(argv[i]);
			if (b.iters < 1)
				die("usage", "matvec_bench [--sweep] [--only PREFIX] [--dtype f16,q8_0,q4_k] [--xq] [--shape KxN]... "
					     "[--tile L,S,C,U[,W]]... [--pro] [--pair] [--stats] "
					     "[ITERS >= 1]");
		}
	}
	vk_ctx_options o = {.validation = false, .device_index = -1, .pipeline_stats = b.stats};
	vk_error e;
	if (!vk_ctx_create(&o, &b.ctx, &e))
		die("device", e.msg);
	b.cc = glsl_compiler_new();
	bool small = b.ctx->info.type == VK_PHYSICAL_DEVICE_TYPE_CPU;
	size_t pool = small ? (size_t)64 << 20 : POOL_BYTES;
	b.pool = pool;
	if (!vk_buffer_create(b.ctx, 8 * MAX_K * 4, VK_BUFFER_DEVICE, &b.x, &e) ||
	    !vk_buffer_create(b.ctx, pool, VK_BUFFER_DEVICE, &b.w, &e) ||
	    !vk_buffer_create(b.ctx, (size_t)8 * MAX_N * 4, VK_BUFFER_DEVICE, &b.y, &e) ||
	    !vk_buffer_create(b.ctx, 256, VK_BUFFER_DEVICE, &b.step, &e) ||
	    !vk_buffer_create(b.ctx, MAX_K * 4, VK_BUFFER_DEVICE, &b.nw, &e))
		die("buffers", e.msg);
	fill(&b, &b.x, 8 * MAX_K * 4);
	fill(&b, &b.nw, MAX_K * 4);
	fill(&b, &b.w, pool);
	b.ceiling = read_ceiling_gbps(b.ctx, b.cc, small ? (size_t)64 << 20 : (size_t)2 << 30, 9);
	printf("%s, driver %s\nread ceiling: %.0f GB/s (streaming read of %s, median of 9)\n", b.ctx->info.name,
	       b.ctx->info.driver_info, b.ceiling, small ? "64 MiB" : "2 GiB");
	if (b.pro || b.pair)
		printf("fused:%s%s\n", b.pro ? " rms_norm prologue (norm weight of K)" : "",
		       b.pair ? " swiglu pair (N / 2 results)" : "");
	printf("%-16s %-4s %2s  %-10s %-26s %9s %7s %6s\n", "K x N", "w", "T", "variant", "tile", "us", "GB/s", "ceil");
	/* Qwen3-8B: q/o, k/v, gate/up, down, the head; Qwen3.8 Flash cut: the
	 * HC mixer pair, its 4-wide gate, a GDN projection, the head. */
	static const int64_t full[][2] = {{4096, 4096},  {4096, 1024},  {4096, 12288}, {12288, 4096},
					  {4096, 151936}, {10240, 320}, {320, 10240},  {10240, 4},
					  {2560, 10240}, {6144, 2560},  {2560, 248320}};
	static const int64_t tiny[][2] = {{1024, 1024}, {1024, 4}};
	const int64_t(*shapes)[2] = n_given ? (const int64_t(*)[2])given : small ? tiny : full;
	size_t n = n_given ? n_given : small ? sizeof tiny / sizeof *tiny : sizeof full / sizeof *full;
	for (int t = 0; t < n_types; t++)
		for (size_t s = 0; s < n; s++)
			if (weight_bytes(types[t], shapes[s][0], shapes[s][1]) <= pool &&
			    shapes[s][0] % (int64_t)halo_dtype_block(types[t]) == 0)
				bench_shape(&b, types[t], shapes[s][0], shapes[s][1], do_sweep && !small, only, xq);
	vk_buffer_destroy(b.ctx, &b.x);
	vk_buffer_destroy(b.ctx, &b.w);
	vk_buffer_destroy(b.ctx, &b.y);
	vk_buffer_destroy(b.ctx, &b.step);
	vk_buffer_destroy(b.ctx, &b.nw);
	glsl_compiler_free(b.cc);
	vk_ctx_destroy(b.ctx);
	return 0;
}
