/* The Vulkan backend's weight chunks (runtime/drivers/vulkan/vk_weight_chunks.h)
 * on synthetic weight lists: chunks as large as the device's buffer cap
 * allows (not a fixed 2 GiB: DeepSeek V4-Flash's fp8 expert stacks are 2 GiB
 * plus their scales), every weight inside one chunk, and a weight larger
 * than a binding or a buffer refused with its name and the limit. */
#include <stdint.h>
#include <string.h>

#include "runtime/drivers/vulkan/vk_weight_chunks.h"
#include "tests/check.h"

#define GIB ((uint64_t)1 << 30)
#define MAX_W 8

typedef struct {
	const char *what;
	uint64_t size[MAX_W]; /* weight sizes, packed back to back from offset 0 at 256-byte alignment; 0 ends */
	vk_weight_limits lim;
	int n_chunks;          /* -1: refused */
	int first[MAX_W];      /* chunk i starts at weight first[i] */
	const char *err_has;   /* refused: text the message contains */
} chunk_case;

static const chunk_case cases[] = {
	{"one chunk when everything fits", {100, 200, 300}, {1000, 1000}, 1, {0}, NULL},
	{"a new chunk when the next weight would pass the cap", {400, 400, 400}, {1000, 1000}, 2, {0, 2}, NULL},
	{"a weight exactly the cap", {1000, 10}, {1000, 1000}, 2, {0, 1}, NULL},
	{"V4-Flash fp8 experts on a 4 GiB device", {2 * GIB, 64 << 20, 2 * GIB, 64 << 20}, {4 * GIB - 1, 4 * GIB - 1},
	 2, {0, 2}, NULL},
	{"a binding cap smaller than the buffer cap", {300, 200}, {1000, 256}, -1, {0}, "'w0' is 300 bytes"},
	{"a weight over the buffer cap", {10, 2000}, {1000, 4000}, -1, {0}, "largest buffer"},
	{"the f16 V4-Flash expert stack", {4 * GIB}, {4 * GIB - 1, 4 * GIB - 1}, -1, {0}, "maxStorageBufferRange"},
};

static void run_case(const chunk_case *c)
{
	static char names[MAX_W][8];
	halo_buffer_decl w[MAX_W];
	int n = 0;
	uint64_t off = 0;
	for (; n < MAX_W && c->size[n]; n++) {
		snprintf(names[n], sizeof names[n], "w%d", n);
		memset(&w[n], 0, sizeof w[n]);
		w[n].name = names[n];
		w[n].offset = off;
		w[n].size = c->size[n];
		off = (off + c->size[n] + 255) / 256 * 256;
	}
	vk_chunk_range out[MAX_W];
	int n_out = -1;
	char err[256] = "";
	bool ok = vk_plan_weight_chunks(w, n, &c->lim, out, &n_out, err, sizeof err);
	if (c->n_chunks < 0) {
		CHECK(!ok, "%s: accepted", c->what);
		CHECK(!ok && strstr(err, c->err_has), "%s: message '%s' lacks '%s'", c->what, err, c->err_has);
		return;
	}
	CHECK(ok, "%s: refused: %s", c->what, err);
	if (!ok)
		return;
	CHECK(n_out == c->n_chunks, "%s: %d chunks, expected %d", c->what, n_out, c->n_chunks);
	for (int i = 0; i < n_out && i < c->n_chunks; i++) {
		int last = i + 1 < c->n_chunks ? c->first[i + 1] - 1 : n - 1;
		CHECK(out[i].start == w[c->first[i]].offset, "%s: chunk %d starts at %llu", c->what, i,
		      (unsigned long long)out[i].start);
		CHECK(out[i].end == w[last].offset + w[last].size, "%s: chunk %d ends at %llu", c->what, i,
		      (unsigned long long)out[i].end);
		CHECK(out[i].end - out[i].start <= c->lim.chunk, "%s: chunk %d over the cap", c->what, i);
	}
}

int main(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run_case(&cases[i]);
	return check_failures ? 1 : 0;
}
