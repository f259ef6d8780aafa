/* What can hide the fixed cost of a decode step's barriers (the drain of
 * one dispatch and the start of the next, a few microseconds each)? A chain
 * of streaming reads, one a matrix, each depending on the one before, the
 * sizes of a decode layer's matrices (qkv, o, gate/up, down of the Qwen3-8B
 * shape in the chosen format) over LAYERS layers of distinct bytes (far past
 * any L2), timed four ways in one process:
 *   barriers   read_i | read_i+1 | ...                 (how a step runs now)
 *   prefetch   read_i, warm_i+1 | read_i+1, warm_i+2 | ... (warm: a read of the
 *              next matrix's first F MiB by G workgroups, no barrier between
 *              it and read_i, so it runs beside read_i and into its drain)
 *   tickets    one dispatch of G workgroups that take the chain's chunks of C
 *              KiB in ticket order (a persistent kernel): a chunk of matrix i
 *              waits until every chunk of matrix i-1 is done, which only
 *              workgroups that took an earlier ticket hold, so a waiting
 *              workgroup never waits on one that has not started (Vulkan
 *              promises no more: no workgroup's forward progress beside
 *              another's that has not begun). "loads first": a chunk issues
 *              its first loads before it waits, as a matvec could issue its
 *              weights' loads before its input is ready.
 *   no barrier read_i, read_i+1, ...                    (the overlap's bound;
 *              not a legal step: nothing orders the reads)
 * The reads are read_ceiling.h's streaming read and, for the tickets, the
 * same loads. Each line: microseconds a layer (median of 7 submissions of
 * the chain), GB/s of the matrices' bytes, and the ratio to the barrier
 * chain. A ticket chain whose wait ran past its bound (a workgroup that
 * never saw its predecessors finish) says so and is not timed.
 * usage: barrier_bench [f16|q8_0|q4_k] [LAYERS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "bench/read_ceiling.h"
#include "runtime/drivers/vulkan/vk_buffer.h"
#include "runtime/drivers/vulkan/vk_cmd.h"
#include "runtime/drivers/vulkan/vk_pipeline.h"

enum { READ_GROUPS = 132 * 8, MAX_WARM_GROUPS = 1024, REPS = 7, MATS = 4, MAX_CHAIN = 64 * MATS };

/* The ticket chain's kernel (the header's "tickets"). Binding 2: the chain's
 * matrices, a uvec4 each: first ticket, first word, words, chunks. Binding
 * 3: the counters, zeroed before each run: the next ticket, a flag set when
 * a wait ran past its bound, then each matrix's finished chunks. A chunk is
 * chunk_words uvec4s, read as the streaming read reads (four 16-byte loads
 * a lane in flight). */
static const char *const ticket_src =
	"#version 450\n"
	"layout(local_size_x = 256) in;\n"
	"layout(push_constant) uniform P { uint mats, tickets, chunk_words, loads_first; } pc;\n"
	"layout(set = 0, binding = 0) readonly buffer S { uvec4 src[]; };\n"
	"layout(set = 0, binding = 1) writeonly buffer D { uint dst[]; };\n"
	"layout(set = 0, binding = 2) readonly buffer M { uvec4 mat[]; };\n"
	"layout(set = 0, binding = 3) coherent volatile buffer C { uint next_ticket, stuck, done[]; };\n"
	"shared uint ticket;\n"
	/* About a second of spinning: far past any legal wait, short of a hung call. */
	"const uint SPIN_BOUND = 1u << 22;\n"
	"void wait_done(uint m)\n"
	"{\n"
	"\tif (gl_LocalInvocationID.x == 0u) {\n"
	"\t\tuint spins = 0u;\n"
	"\t\twhile (done[m] < mat[m].w && spins < SPIN_BOUND) spins++;\n"
	"\t\tif (spins == SPIN_BOUND) atomicOr(stuck, 1u);\n"
	"\t}\n"
	"\tbarrier();\n"
	"\tmemoryBarrierBuffer();\n"
	"}\n"
	"void main()\n"
	"{\n"
	"\tuint lane = gl_LocalInvocationID.x;\n"
	"\tuvec4 acc = uvec4(0);\n"
	"\tfor (;;) {\n"
	"\t\tif (lane == 0u) ticket = atomicAdd(next_ticket, 1u);\n"
	"\t\tbarrier();\n"
	"\t\tuint t = ticket;\n"
	"\t\tbarrier();\n"
	"\t\tif (t >= pc.tickets) break;\n"
	"\t\tuint lo = 0u, hi = pc.mats;\n" /* the last matrix whose first ticket <= t */
	"\t\twhile (hi - lo > 1u) { uint mid = (lo + hi) / 2u; if (mat[mid].x <= t) lo = mid; else hi = mid; }\n"
	"\t\tuvec4 m = mat[lo];\n"
	"\t\tuint i = m.y + (t - m.x) * pc.chunk_words + lane;\n"
	"\t\tuint end = min(m.y + m.z, m.y + (t - m.x + 1u) * pc.chunk_words);\n"
	"\t\tuvec4 a = uvec4(0), b = uvec4(0), c = uvec4(0), d = uvec4(0);\n"
	"\t\tif (pc.loads_first != 0u && i + 768u < end) {\n"
	"\t\t\ta = src[i]; b = src[i + 256u]; c = src[i + 512u]; d = src[i + 768u];\n"
	"\t\t\ti += 1024u;\n"
	"\t\t}\n"
	"\t\tif (lo > 0u) wait_done(lo - 1u);\n"
	"\t\tfor (; i + 768u < end; i += 1024u) {\n"
	"\t\t\ta ^= src[i]; b ^= src[i + 256u]; c ^= src[i + 512u]; d ^= src[i + 768u];\n"
	"\t\t}\n"
	"\t\tfor (; i < end; i += 256u) a ^= src[i];\n"
	"\t\tacc ^= a ^ b ^ c ^ d;\n"
	"\t\tmemoryBarrierBuffer();\n"
	"\t\tbarrier();\n"
	"\t\tif (lane == 0u) atomicAdd(done[lo], 1u);\n"
	"\t}\n"
	"\tdst[gl_GlobalInvocationID.x] = acc.x ^ acc.y ^ acc.z ^ acc.w;\n"
	"}\n";

typedef struct {
	uint32_t mats, tickets, chunk_words, loads_first;
} ticket_push;

typedef struct {
	vk_ctx *ctx;
	vk_pipeline p, tp;       /* the streaming read; the ticket chain */
	VkDescriptorSet set, ts; /* src, dst; src, dst, mats, counters */
	vk_buffer mats, counters;
	vk_cmd cmd;
	vk_timer timer;
	uint32_t mat_words[MATS]; /* a layer's matrices, in uvec4 */
	uint32_t layer_words;
	int layers;
} chain;

__attribute__((noreturn)) static void die(const char *what, const char *msg)
{
	bench_die("barrier_bench", what, msg);
}

/* The first word of chain matrix k (layer k / MATS, matrix k % MATS). */
static uint32_t chain_offset(const chain *c, int k)
{
	uint32_t off = (uint32_t)(k / MATS) * c->layer_words;
	for (int j = 0; j < k % MATS; j++)
		off += c->mat_words[j];
	return off;
}

/* Submits the recorded chain once to warm up, then REPS times: the median
 * microseconds a layer. `stuck`: reads the ticket chain's flag after each. */
static double time_recorded(chain *c, bool *stuck)
{
	vk_error e;
	if (!vk_cmd_end(&c->cmd, &e) || !vk_cmd_submit_wait(c->ctx, &c->cmd, &e))
		die("warm-up", e.msg);
	double us[REPS];
	for (int r = 0; r < REPS; r++) {
		double ns;
		if (!vk_cmd_submit_wait(c->ctx, &c->cmd, &e) ||
		    !vk_timer_elapsed_ns(c->ctx, &c->timer, 0, 1, &ns, &e))
			die("run", e.msg);
		us[r] = ns / 1e3 / c->layers;
		uint32_t flag = 0;
		if (stuck && !vk_buffer_download(c->ctx, &c->counters, 4, &flag, 4, &e))
			die("run", e.msg);
		if (flag)
			*stuck = true;
	}
	return bench_median(us, REPS);
}

static void begin(chain *c)
{
	vk_error e;
	if (!vk_cmd_begin(c->ctx, &c->cmd, &e))
		die("record", e.msg);
	vk_cmd_timer_reset(&c->cmd, &c->timer);
}

/* The chain of streaming reads: warm_mib 0 = no warm dispatches; barriers
 * false = none. */
static double time_chain(chain *c, uint32_t warm_mib, uint32_t warm_groups, bool barriers)
{
	begin(c);
	vk_cmd_timestamp(&c->cmd, &c->timer, 0);
	int total = c->layers * MATS;
	for (int k = 0; k < total; k++) {
		uint32_t off = chain_offset(c, k);
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
	return time_recorded(c, NULL);
}

/* The ticket chain in one dispatch of `groups` workgroups, chunks of
 * chunk_kib KiB; *stuck set when a wait ran past its bound. */
static double time_tickets(chain *c, uint32_t groups, uint32_t chunk_kib, bool loads_first, bool *stuck)
{
	uint32_t chunk_words = chunk_kib * 64, table[MAX_CHAIN][4], tickets = 0;
	int total = c->layers * MATS;
	for (int k = 0; k < total; k++) {
		uint32_t words = c->mat_words[k % MATS], chunks = (words + chunk_words - 1) / chunk_words;
		table[k][0] = tickets;
		table[k][1] = chain_offset(c, k);
		table[k][2] = words;
		table[k][3] = chunks;
		tickets += chunks;
	}
	vk_error e;
	if (!vk_buffer_upload(c->ctx, &c->mats, 0, table, sizeof table[0] * (size_t)total, &e))
		die("setup", e.msg);
	begin(c);
	vkCmdFillBuffer(c->cmd.cb, c->counters.buffer, 0, VK_WHOLE_SIZE, 0);
	vk_cmd_barrier_all(&c->cmd);
	vk_cmd_timestamp(&c->cmd, &c->timer, 0);
	ticket_push push = {(uint32_t)total, tickets, chunk_words, loads_first};
	vk_cmd_dispatch(&c->cmd, &c->tp, c->tp.pipeline, c->ts, &push, groups, 1, 1);
	vk_cmd_timestamp(&c->cmd, &c->timer, 1);
	*stuck = false;
	return time_recorded(c, stuck);
}

static void pipeline(chain *c, glsl_compiler *cc, const char *src, uint32_t bindings, uint32_t push_size,
		     vk_pipeline *out)
{
	char err[1024];
	glsl_spirv spv;
	vk_error e;
	if (!glsl_compile(cc, src, "barrier_bench", true, &spv, err, sizeof err))
		die("compile", err);
	if (!vk_pipeline_create(c->ctx, spv.words, spv.n_words, bindings, push_size, out, &e))
		die("setup", e.msg);
	glsl_spirv_free(&spv);
}

static void report(const char *what, double t, double base, double layer_gb)
{
	printf("%-44s %8.1f us a layer  %6.0f GB/s  %.3f\n", what, t, layer_gb / t * 1e6, base / t);
}

int main(int argc, char **argv)
{
	const char *fmt = argc > 1 ? argv[1] : "q4_k";
	int layers = argc > 2 ? atoi(argv[2]) : 8;
	/* bits per weight as stored: f16 16, q8_0 8.5, q4_k 4.5 */
	double bits = !strcmp(fmt, "f16") ? 16.0 : !strcmp(fmt, "q8_0") ? 8.5 : !strcmp(fmt, "q4_k") ? 4.5 : 0;
	if (bits == 0 || layers < 2 || layers > MAX_CHAIN / MATS)
		die("usage", "barrier_bench [f16|q8_0|q4_k] [LAYERS 2..64]");
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
	pipeline(&c, cc, read_stream_src, 2, sizeof(read_stream_push), &c.p);
	pipeline(&c, cc, ticket_src, 4, sizeof(ticket_push), &c.tp);
	size_t bytes = (size_t)c.layer_words * 16 * (size_t)layers;
	vk_buffer src, dst;
	vk_descriptors pool;
	if (!vk_buffer_create(c.ctx, bytes, VK_BUFFER_DEVICE, &src, &e) ||
	    !vk_buffer_create(c.ctx, (VkDeviceSize)(READ_GROUPS + MAX_WARM_GROUPS) * 256 * 4, VK_BUFFER_DEVICE, &dst,
			      &e) ||
	    !vk_buffer_create(c.ctx, MAX_CHAIN * 16, VK_BUFFER_DEVICE, &c.mats, &e) ||
	    !vk_buffer_create(c.ctx, (2 + MAX_CHAIN) * 4, VK_BUFFER_DEVICE, &c.counters, &e) ||
	    !vk_descriptors_create(c.ctx, 2, 6, &pool, &e))
		die("setup", e.msg);
	vk_binding bind[4] = {{src.buffer, 0, bytes},
			      {dst.buffer, 0, dst.size},
			      {c.mats.buffer, 0, c.mats.size},
			      {c.counters.buffer, 0, c.counters.size}};
	if (!vk_descriptors_bind(c.ctx, &pool, &c.p, bind, &c.set, &e) ||
	    !vk_descriptors_bind(c.ctx, &pool, &c.tp, bind, &c.ts, &e) || !vk_timer_create(c.ctx, 2, &c.timer, &e) ||
	    !vk_cmd_create(c.ctx, &c.cmd, &e))
		die("setup", e.msg);
	double layer_gb = (double)c.layer_words * 16 / 1e9;
	printf("%s, %d layers of %.1f MB (qkv %.1f, o %.1f, gate/up %.1f, down %.1f MB)\n", fmt, layers,
	       layer_gb * 1e3, c.mat_words[0] * 16e-6, c.mat_words[1] * 16e-6, c.mat_words[2] * 16e-6,
	       c.mat_words[3] * 16e-6);
	double base = time_chain(&c, 0, 0, true);
	report("barriers", base, base, layer_gb);
	static const uint32_t mibs[] = {4, 8, 16, 24, 32, 48};
	static const uint32_t groups[] = {132, 264, 528, 1024};
	char what[64];
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
		for (size_t m = 0; m < sizeof mibs / sizeof mibs[0]; m++) {
			snprintf(what, sizeof what, "prefetch %2u MiB, %4u workgroups", mibs[m], groups[g]);
			report(what, time_chain(&c, mibs[m], groups[g], true), base, layer_gb);
		}
	static const uint32_t ticket_kib[] = {64, 256};
	for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
		for (size_t k = 0; k < sizeof ticket_kib / sizeof ticket_kib[0]; k++)
			for (int first = 0; first < 2; first++) {
				bool stuck;
				double t = time_tickets(&c, groups[g], ticket_kib[k], first, &stuck);
				snprintf(what, sizeof what, "tickets %3u KiB, %4u workgroups%s", ticket_kib[k], groups[g],
					 first ? ", loads first" : "");
				if (stuck)
					printf("%-44s a wait ran past its bound: no progress, not timed\n", what);
				else
					report(what, t, base, layer_gb);
			}
	report("no barrier", time_chain(&c, 0, 0, false), base, layer_gb);
	vk_cmd_destroy(c.ctx, &c.cmd);
	vk_timer_destroy(c.ctx, &c.timer);
	vk_descriptors_destroy(c.ctx, &pool);
	vk_pipeline_destroy(c.ctx, &c.p);
	vk_pipeline_destroy(c.ctx, &c.tp);
	vk_buffer_destroy(c.ctx, &src);
	vk_buffer_destroy(c.ctx, &dst);
	vk_buffer_destroy(c.ctx, &c.mats);
	vk_buffer_destroy(c.ctx, &c.counters);
	glsl_compiler_free(cc);
	vk_ctx_destroy(c.ctx);
	return 0;
}
