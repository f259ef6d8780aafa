/* Prints the device's read-bandwidth ceiling (bench/read_ceiling.h), the
 * figure the decode benchmarks set their results beside.
 * usage: read_bw [DEVICE] [MiB]   (default: the first discrete GPU, 2048 MiB) */
#include <stdio.h>
#include <stdlib.h>

#include "bench/read_ceiling.h"

int main(int argc, char **argv)
{
	vk_ctx_options o = {.validation = false, .device_index = argc > 1 ? atoi(argv[1]) : -1};
	size_t mib = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 2048;
	vk_ctx *ctx;
	vk_error e;
	if (mib < 1 || !vk_ctx_create(&o, &ctx, &e)) {
		fprintf(stderr, "read_bw: %s\n", mib < 1 ? "usage: read_bw [DEVICE] [MiB >= 1]" : e.msg);
		return 1;
	}
	glsl_compiler *cc = glsl_compiler_new();
	double gbps = read_ceiling_gbps(ctx, cc, mib << 20, 9);
	printf("read ceiling: %.0f GB/s (%s, streaming read of %zu MiB, median of 9)\n", gbps, ctx->info.name, mib);
	glsl_compiler_free(cc);
	vk_ctx_destroy(ctx);
	return 0;
}
