/* Block-quantized weights in the manifest (docs/manifest.md): a small
 * ref-only manifest with a q8_0 and a q4_k weight and a matmul reading each
 * parses, with halo_tensor_bytes giving the formats' bytes; each row of the
 * table breaks one rule and must be refused with a message naming it: a
 * quantized state or activation, a K that is not a whole number of blocks, a
 * size that is not the format's, a weight read other than whole and as
 * stored (as f32, from inside it, with another K), a quantized operand where
 * no quantized weight is declared, weights out of offset order or one
 * overlapping a quantized weight. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/manifest.h"
#include "tests/check.h"

static const uint64_t no_code[HALO_TARGET_COUNT]; /* a bundle without kernel sections */

#define MATMUL(w_offset, w_dtype, w_shape, out)                                                               \
	"{\"node\":\"mm\",\"op\":9,\"attrs\":{},\"n_in\":2,\"n_extra\":0,\"n_out\":1,\"operands\":["           \
	"{\"space\":\"act\",\"offset\":0,\"dtype\":\"f32\",\"shape\":[[1,0],[0,256]]},"                          \
	"{\"space\":\"weight\",\"offset\":" w_offset ",\"dtype\":\"" w_dtype "\",\"shape\":" w_shape "},"      \
	"{\"space\":\"act\",\"offset\":" out ",\"dtype\":\"f32\",\"shape\":[[1,0],[0,4]]}],"                   \
	"\"fused\":[],\"choice\":-1,\"barrier\":true}"

/* w8: q8_0 [4, 256] = 4 * 8 blocks of 34 bytes; w4: q4_k [4, 256] = 4 super-blocks of 144 bytes */
static const char base[] =
	"{\"format\":5,\"model\":\"t\",\"targets\":[\"ref\"],\"vocab\":4,\"n_ctx\":8,\"state_bytes\":0,"
	"\"weights\":[{\"name\":\"w8\",\"dtype\":\"q8_0\",\"shape\":[4,256],\"offset\":0,\"size\":1088},"
	"{\"name\":\"w4\",\"dtype\":\"q4_k\",\"shape\":[4,256],\"offset\":1280,\"size\":576},"
	"{\"name\":\"n\",\"dtype\":\"f32\",\"shape\":[256],\"offset\":2048,\"size\":1024}],"
	"\"states\":[],\"kernels\":[],\"choices\":[],"
	"\"entries\":[{\"name\":\"decode\",\"t_min\":1,\"t_max\":2,\"logits_all\":true,\"position\":\"session\","
	"\"act_bytes\":4096,"
	"\"input\":{\"name\":\"tokens\",\"space\":\"act\",\"offset\":3072,\"dtype\":\"i32\",\"shape\":[[1,0]]},"
	"\"output\":{\"name\":\"logits\",\"space\":\"act\",\"offset\":2048,\"dtype\":\"f32\",\"shape\":[[1,0],[0,4]]},"
	"\"dispatches\":[" MATMUL("0", "q8_0", "[[0,4],[0,256]]", "2048") "," MATMUL("1280", "q4_k", "[[0,4],[0,256]]", "2560")
	"]}]}";

enum { WEIGHTS = 4096 };

/* base with the first occurrence of `from` replaced by `to` (malloc'd). */
static char *edit(const char *from, const char *to)
{
	const char *at = strstr(base, from);
	char *out = at ? malloc(strlen(base) - strlen(from) + strlen(to) + 1) : NULL;
	if (!out) {
		fprintf(stderr, "FAIL: the base manifest has no '%s' (or out of memory)\n", from);
		exit(1);
	}
	size_t head = (size_t)(at - base);
	memcpy(out, base, head);
	strcpy(out + head, to);
	strcat(out, at + strlen(from));
	return out;
}

typedef struct {
	const char *what, *from, *to, *message;
} refusal;

static const refusal refusals[] = {
	{"a q8_0 activation", "\"space\":\"act\",\"offset\":0,\"dtype\":\"f32\"",
	 "\"space\":\"act\",\"offset\":0,\"dtype\":\"q8_0\"", "a q8_0 operand in space 'act'"},
	{"a q8_0 state", "\"states\":[]",
	 "\"states\":[{\"name\":\"s\",\"kind\":\"kv\",\"dtype\":\"q8_0\",\"shape\":[32],\"offset\":0,\"size\":34}]",
	 "state 's' has dtype q8_0"},
	{"a K that is not whole blocks", "\"shape\":[4,256],\"offset\":0,\"size\":1088",
	 "\"shape\":[64,16],\"offset\":0,\"size\":1088", "its last dim (K) 16 is not a multiple of the block of 32"},
	{"a q4_k K that is not whole sub-blocks", "\"dtype\":\"q4_k\",\"shape\":[4,256]",
	 "\"dtype\":\"q4_k\",\"shape\":[64,16]", "its last dim (K) 16 is not a multiple of the block of 32"},
	{"a q4_k row ending in a partial super-block, sized as whole ones", "\"dtype\":\"q4_k\",\"shape\":[4,256]",
	 "\"dtype\":\"q4_k\",\"shape\":[8,128]", "q4_k weight 'w4' of 1024 elements takes 640 bytes, not 576"},
	{"a size that is not the format's", "\"offset\":0,\"size\":1088", "\"offset\":0,\"size\":1024",
	 "q8_0 weight 'w8' of 1024 elements takes 1088 bytes, not 1024"},
	{"a bad dim", "\"shape\":[4,256],\"offset\":0", "\"shape\":[-4,256],\"offset\":0", "has a bad dim -4"},
	{"a quantized weight read as f32", MATMUL("0", "q8_0", "[[0,4],[0,256]]", "2048"),
	 MATMUL("0", "f32", "[[0,1],[0,256]]", "2048"), "reads q8_0 weight 'w8' other than as stored"},
	{"a quantized weight read from inside", MATMUL("0", "q8_0", "[[0,4],[0,256]]", "2048"),
	 MATMUL("256", "q8_0", "[[0,2],[0,256]]", "2048"), "reads q8_0 weight 'w8' other than as stored"},
	{"a quantized weight read with another K", MATMUL("0", "q8_0", "[[0,4],[0,256]]", "2048"),
	 MATMUL("0", "q8_0", "[[0,8],[0,128]]", "2048"), "reads q8_0 weight 'w8' other than as stored"},
	{"a quantized weight read as the other format", MATMUL("1280", "q4_k", "[[0,4],[0,256]]", "2560"),
	 MATMUL("1280", "q8_0", "[[0,4],[0,256]]", "2560"), "reads q4_k weight 'w4' other than as stored"},
	{"an f32 read running into a quantized weight", MATMUL("0", "q8_0", "[[0,4],[0,256]]", "2048"),
	 MATMUL("1024", "f32", "[[0,1],[0,256]]", "2048"), "reads q4_k weight 'w4' other than as stored"},
	{"a quantized operand on an f32 weight", MATMUL("0", "q8_0", "[[0,4],[0,256]]", "2048"),
	 MATMUL("2048", "q8_0", "[[0,1],[0,256]]", "2048"), "where no q8_0 weight is declared"},
	{"a quantized operand of partial blocks", MATMUL("0", "q8_0", "[[0,4],[0,256]]", "2048"),
	 MATMUL("0", "q8_0", "[[0,4],[0,48]]", "2048"), "last dim 48 is not a multiple of its block of 32"},
	{"a quantized operand growing with T", MATMUL("0", "q8_0", "[[0,4],[0,256]]", "2048"),
	 MATMUL("0", "q8_0", "[[1,0],[0,256]]", "2048"), "dims must be constant"},
	{"weights out of offset order", "\"offset\":2048,\"size\":1024", "\"offset\":1024,\"size\":4",
	 "'n' is out of offset order"},
	{"a weight overlapping a quantized one", "\"name\":\"n\",\"dtype\":\"f32\",\"shape\":[256],\"offset\":2048",
	 "\"name\":\"n\",\"dtype\":\"f32\",\"shape\":[256],\"offset\":1536", "'n' overlaps q4_k weight 'w4'"},
};

int main(void)
{
	char err[512];
	halo_manifest *m = manifest_parse(base, strlen(base), WEIGHTS, no_code, err, sizeof err);
	CHECK(m != NULL, "the base manifest is refused: %s", err);
	if (m) {
		const halo_tensor_ref *w8 = &m->entries[0].dispatch[0].operand[1], *w4 = &m->entries[0].dispatch[1].operand[1];
		CHECK(w8->dtype == HALO_Q8_0 && halo_tensor_bytes(w8, 1) == 1088, "q8_0 operand: %llu bytes",
		      (unsigned long long)halo_tensor_bytes(w8, 1));
		CHECK(w4->dtype == HALO_Q4_K && halo_tensor_bytes(w4, 1) == 576, "q4_k operand: %llu bytes",
		      (unsigned long long)halo_tensor_bytes(w4, 1));
		halo_tensor_ref part = *w8;
		part.dim[1].c = 16; /* 64 elements, 2 blocks, but rows of half a block: no bytes */
		CHECK(halo_tensor_bytes(&part, 1) == UINT64_MAX, "4 x 16 q8_0: %llu bytes",
		      (unsigned long long)halo_tensor_bytes(&part, 1));
		part = *w4;
		part.dim[0].c = 3;
		part.dim[1].c = 160; /* rows of one partial super-block: 80 bytes of values, 16 of scales */
		CHECK(halo_tensor_bytes(&part, 1) == 3 * 96, "3 x 160 q4_k: %llu bytes",
		      (unsigned long long)halo_tensor_bytes(&part, 1));
	}
	manifest_free(m);
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		const refusal *r = &refusals[i];
		char *json = edit(r->from, r->to);
		m = manifest_parse(json, strlen(json), WEIGHTS, no_code, err, sizeof err);
		CHECK(m == NULL, "%s: accepted", r->what);
		CHECK(m != NULL || strstr(err, r->message) != NULL, "%s: refused with '%s', want '%s'", r->what, err,
		      r->message);
		manifest_free(m);
		free(json);
	}
	if (check_failures)
		return 1;
	printf("manifest quant: ok (%zu refusals)\n", sizeof refusals / sizeof refusals[0]);
	return 0;
}
