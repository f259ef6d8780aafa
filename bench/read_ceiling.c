#include "bench/read_ceiling.h"

#include "bench/bench_util.h"

#include <stdio.h>
#include <stdlib.h>

#include "runtime/drivers/vulkan/vk_buffer.h"
#include "runtime/drivers/vulkan/vk_cmd.h"
#include "runtime/drivers/vulkan/vk_pipeline.h"

const char *const read_stream_src =
	"#version 450\n"
	"layout(local_size_x = 256) in;\n"
	"layout(push_constant) uniform P { uint off, n, dst_off; } pc;\n"
	"layout(set = 0, binding = 0) readonly buffer S { uvec4 src[]; };\n"
	"layout(set = 0, binding = 1) writeonly buffer D { uint dst[]; };\n"
	"void main()\n"
	"{\n"
	"\tuint lanes = gl_NumWorkGroups.x * 256u, i = gl_GlobalInvocationID.x;\n"
	"\tuvec4 a = uvec4(0), b = uvec4(0), c = uvec4(0), d = uvec4(0);\n"
	"\tfor (; i + 3u * lanes < pc.n; i += 4u * lanes) {\n"
	"\t\ta ^= src[pc.off + i]; b ^= src[pc.off + i + lanes];\n"
	"\t\tc ^= src[pc.off + i + 2u * lanes]; d ^= src[pc.off + i + 3u * lanes];\n"
	"\t}\n"
	"\tfor (; i < pc.n; i += lanes) a ^= src[pc.off + i];\n"
	"\tuvec4 s = a ^ b ^ c ^ d;\n"
	"\tdst[pc.dst_off + gl_GlobalInvocationID.x] = s.x ^ s.y ^ s.z ^ s.w;\n"
	"}\n";

__attribute__((noreturn)) static void die(const char *what, const char *msg)
{
	bench_die("read ceiling", what, msg);
}

double read_ceiling_gbps(vk_ctx *ctx, glsl_compiler *cc, size_t bytes, int reps)
{
	enum { GROUPS = 132 * 16 }; /* a few thousand workgroups fill any GPU */
	char err[1024];
	glsl_spirv spv;
	if (!glsl_compile(cc, read_stream_src, "read_ceiling", true, &spv, err, sizeof err))
		die("compile", err);
	bytes &= ~(size_t)15;
	vk_buffer src, dst;
	vk_pipeline p;
	vk_descriptors pool;
	VkDescriptorSet set;
	vk_cmd cmd = {0};
	vk_timer timer;
	vk_error e;
	if (!vk_buffer_create(ctx, bytes, VK_BUFFER_DEVICE, &src, &e) ||
	    !vk_buffer_create(ctx, (VkDeviceSize)GROUPS * 256 * 4, VK_BUFFER_DEVICE, &dst, &e) ||
	    !vk_pipeline_create(ctx, spv.words, spv.n_words, 2, sizeof(read_stream_push), &p, &e) ||
	    !vk_descriptors_create(ctx, 1, 2, &pool, &e))
		die("setup", e.msg);
	vk_binding bind[2] = {{src.buffer, 0, bytes}, {dst.buffer, 0, dst.size}};
	if (!vk_descriptors_bind(ctx, &pool, &p, bind, &set, &e) || !vk_timer_create(ctx, 2, &timer, &e) ||
	    !vk_cmd_create(ctx, &cmd, &e) || !vk_cmd_begin(ctx, &cmd, &e))
		die("record", e.msg);
	read_stream_push push = {0, (uint32_t)(bytes / 16), 0};
	vk_cmd_timer_reset(&cmd, &timer);
	vk_cmd_timestamp(&cmd, &timer, 0);
	vk_cmd_dispatch(&cmd, &p, p.pipeline, set, &push, GROUPS, 1, 1);
	vk_cmd_timestamp(&cmd, &timer, 1);
	if (!vk_cmd_end(&cmd, &e) || !vk_cmd_submit_wait(ctx, &cmd, &e))
		die("warm-up", e.msg);
	double *gbps = calloc((size_t)reps, sizeof *gbps);
	for (int r = 0; r < reps; r++) {
		double ns;
		if (!vk_cmd_submit_wait(ctx, &cmd, &e) || !vk_timer_elapsed_ns(ctx, &timer, 0, 1, &ns, &e))
			die("run", e.msg);
		gbps[r] = (double)bytes / ns;
	}
	double median = bench_median(gbps, (size_t)reps);
	free(gbps);
	vk_cmd_destroy(ctx, &cmd);
	vk_timer_destroy(ctx, &timer);
	vk_descriptors_destroy(ctx, &pool);
	vk_pipeline_destroy(ctx, &p);
	vk_buffer_destroy(ctx, &src);
	vk_buffer_destroy(ctx, &dst);
	glsl_spirv_free(&spv);
	return median;
}
