/* Kernel choices in the manifest (format 5, docs/manifest.md): a small
 * manifest with a two-candidate choice and a one-candidate one parses with
 * every kernel's key, tile, needs and grid and every dispatch's choice; each
 * row of the table below breaks one rule and must be refused with a message
 * naming the field: the old format and its per-dispatch kernel, indices out
 * of range, a repeated candidate, candidates of another key or other
 * bindings or push size, a choice whose every candidate needs a device
 * feature, unknown feature names, a signature that is not key + tile, two
 * choices of one key, a dispatch whose operands its kernels do not bind,
 * kernel code outside its section, unaligned, or for a target the bundle
 * does not list, and a listed target that a choice has no code for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/device_features.h"
#include "runtime/manifest.h"
#include "tests/check.h"

#define KERNEL(sig, key, tile, needs, bindings, push)                                                           \
	"{\"name\":\"matvec\",\"signature\":\"" sig "\",\"key\":\"" key "\",\"tile\":\"" tile "\",\"needs\":[" needs \
	"],\"code\":{\"spirv\":[0,8]},\"push_size\":" push ",\"bindings\":" bindings                     \
	",\"local\":[64,1,1],\"groups\":[[0,9,4],[1,0,1],[0,1,1]]}"

static const char base[] =
	"{\"format\":5,\"model\":\"t\",\"targets\":[\"ref\",\"vulkan\"],\"vocab\":4,\"n_ctx\":8,\"state_bytes\":0,"
	"\"weights\":[],\"states\":[],\"kernels\":["
	KERNEL("k A tile=t0", "k A", "t0", "\"subgroup_shuffle\"", "3", "4") ","
	KERNEL("k A tile=t1", "k A", "t1", "", "3", "4") ","
	KERNEL("k B", "k B", "", "", "3", "4") "],"
	"\"choices\":[{\"key\":\"k A\",\"kernels\":[0,1]},{\"key\":\"k B\",\"kernels\":[2]}],"
	"\"entries\":[{\"name\":\"decode\",\"t_min\":1,\"t_max\":2,\"logits_all\":true,\"position\":\"session\","
	"\"act_bytes\":1024,"
	"\"input\":{\"name\":\"tokens\",\"space\":\"act\",\"offset\":0,\"dtype\":\"i32\",\"shape\":[[1,0]]},"
	"\"output\":{\"name\":\"logits\",\"space\":\"act\",\"offset\":256,\"dtype\":\"f32\",\"shape\":[[1,0],[0,4]]},"
	"\"dispatches\":[{\"node\":\"n0\",\"op\":9,\"attrs\":{},\"n_in\":1,\"n_extra\":0,\"n_out\":1,\"operands\":["
	"{\"space\":\"act\",\"offset\":0,\"dtype\":\"f32\",\"shape\":[[1,0],[0,4]]},"
	"{\"space\":\"act\",\"offset\":256,\"dtype\":\"f32\",\"shape\":[[1,0],[0,4]]}],"
	"\"fused\":[],\"choice\":0,\"barrier\":true},"
	"{\"node\":\"n1\",\"op\":9,\"attrs\":{},\"n_in\":1,\"n_extra\":0,\"n_out\":1,\"operands\":["
	"{\"space\":\"act\",\"offset\":256,\"dtype\":\"f32\",\"shape\":[[1,0],[0,4]]},"
	"{\"space\":\"act\",\"offset\":512,\"dtype\":\"f32\",\"shape\":[[1,0],[0,4]]}],"
	"\"fused\":[],\"choice\":1,\"barrier\":true}]}]}";

/* The kernel sections' sizes: spirv 64 bytes, hsaco-gfx1151 32, no ptx. */
static const uint64_t code_size[HALO_TARGET_COUNT] = {[HALO_TARGET_VULKAN] = 64, [HALO_TARGET_HIP_GFX1151] = 32};

/* base with the first occurrence of `from` replaced by `to` (malloc'd). */
static char *edit(const char *from, const char *to)
{
	const char *at = strstr(base, from);
	size_t n = strlen(base) - strlen(from) + strlen(to);
	char *out = at ? malloc(n + 1) : NULL;
	if (!out) { /* a broken table row, not a parser failure */
		fprintf(stderr, "FAIL: the base manifest has no '%s' (or out of memory)\n", from);
		exit(1);
	}
	size_t head = (size_t)(at - base);
	memcpy(out, base, head);
	strcpy(out + head, to);
	strcat(out, at + strlen(from));
	return out;
}

static void check_valid(void)
{
	char err[512];
	halo_manifest *m = manifest_parse(base, strlen(base), 0, code_size, err, sizeof(err));
	CHECK(m != NULL, "the base manifest is refused: %s", err);
	if (!m)
		return;
	CHECK(m->n_kernels == 3 && m->n_choices == 2, "%d kernels, %d choices", m->n_kernels, m->n_choices);
	const halo_kernel *k = &m->kernels[0];
	CHECK(!strcmp(k->key, "k A") && !strcmp(k->tile, "t0") && k->needs == HALO_NEED_SUBGROUP_SHUFFLE,
	      "kernel 0: key '%s' tile '%s' needs 0x%x", k->key, k->tile, k->needs);
	CHECK(k->groups[0].a == 0 && k->groups[0].b == 9 && k->groups[0].d == 4 && k->groups[1].a == 1,
	      "kernel 0's grid");
	CHECK(m->kernels[1].needs == 0 && !strcmp(m->kernels[2].tile, ""), "kernels 1 and 2");
	const halo_choice *c = &m->choices[0];
	CHECK(!strcmp(c->key, "k A") && c->n == 2 && c->kernel[0] == 0 && c->kernel[1] == 1, "choice 0");
	CHECK(m->entries[0].dispatch[0].choice == 0 && m->entries[0].dispatch[1].choice == 1, "dispatch choices");
	manifest_free(m);
}

typedef struct {
	const char *what, *from, *to, *message;
} refusal;

static const refusal refusals[] = {
	{"format 1", "\"format\":5", "\"format\":1", "'format' is 1"},
	{"format 4", "\"format\":5", "\"format\":4", "'format' is 4; this reader reads format 5"},
	{"code outside its section", "\"code\":{\"spirv\":[0,8]}", "\"code\":{\"spirv\":[60,8]}",
	 "kernels[0]: kernel 'matvec' range [60, +8) is outside the spirv section or unaligned"},
	{"unaligned SPIR-V", "\"code\":{\"spirv\":[0,8]}", "\"code\":{\"spirv\":[2,8]}", "or unaligned"},
	{"code that is no pair", "\"code\":{\"spirv\":[0,8]}", "\"code\":{\"spirv\":[0]}",
	 "code 'spirv' must be [offset, size]"},
	{"no code object", "\"code\":{\"spirv\":[0,8]}", "\"code\":[]", "missing object 'code'"},
	{"code for a target not listed", "\"code\":{\"spirv\":[0,8]}",
	 "\"code\":{\"spirv\":[0,8],\"hsaco-gfx1151\":[0,5]}", "section 'hsaco-gfx1151', which is no target"},
	{"a listed target without code", "\"targets\":[\"ref\",\"vulkan\"]",
	 "\"targets\":[\"ref\",\"vulkan\",\"hip-gfx1151\"]", "no candidate of 'k A' has hip-gfx1151 code"},
	{"an unknown target", "\"targets\":[\"ref\",\"vulkan\"]", "\"targets\":[\"ref\",\"metal\"]",
	 "unknown target 'metal'"},
	{"a target listed twice", "\"targets\":[\"ref\",\"vulkan\"]", "\"targets\":[\"ref\",\"vulkan\",\"vulkan\"]",
	 "target 'vulkan' is listed twice"},
	{"a dispatch naming a kernel", "\"choice\":0,", "\"kernel\":0,\"choice\":0,", "'kernel' is manifest format 1"},
	{"a dispatch with a grid", "\"choice\":0,", "\"groups\":[],\"choice\":0,", "'groups' is manifest format 1"},
	{"no choice", "\"choice\":0,", "", "missing key 'choice'"},
	{"choice out of range", "\"choice\":1,", "\"choice\":2,", "'choice' = 2 is outside [0, 1]"},
	{"no choices", "\"choices\":[", "\"unused\":[", "missing key 'choices'"},
	{"kernel index out of range", "\"kernels\":[2]", "\"kernels\":[3]", "choices[1]: kernel index 3 is outside"},
	{"no candidates", "\"kernels\":[2]", "\"kernels\":[]", "choices[1]: a choice needs at least one kernel"},
	{"a repeated candidate", "\"kernels\":[0,1]", "\"kernels\":[1,1]", "choices[0]: kernel 1 is listed twice"},
	{"a candidate of another key", "\"kernels\":[0,1]", "\"kernels\":[0,2]", "kernel 2 computes 'k B'"},
	{"candidates of other bindings", KERNEL("k A tile=t1", "k A", "t1", "", "3", "4"),
	 KERNEL("k A tile=t1", "k A", "t1", "", "4", "4"), "must share bindings and push size"},
	{"candidates of other push sizes", KERNEL("k A tile=t1", "k A", "t1", "", "3", "4"),
	 KERNEL("k A tile=t1", "k A", "t1", "", "3", "8"), "must share bindings and push size"},
	{"only candidates with needs", "\"kernels\":[0,1]", "\"kernels\":[0]", "one must run everywhere"},
	{"an unknown feature", "\"subgroup_shuffle\"", "\"warp_magic\"", "kernels[0]: unknown device feature 'warp_magic'"},
	{"a feature that is not a name", "\"subgroup_shuffle\"", "7", "'needs' holds feature names"},
	{"a signature that is not key + tile", "\"signature\":\"k A tile=t0\"", "\"signature\":\"k A tile=t9\"",
	 "kernels[0]: signature 'k A tile=t9' is not key"},
	{"a kernel without a key", "\"key\":\"k B\",\"tile\"", "\"tile\"", "kernels[2]: missing key 'key'"},
	{"a kernel without a grid", ",\"groups\":[[0,9,4],[1,0,1],[0,1,1]]}]", "}]", "kernels[2]: missing key 'groups'"},
	{"two choices of one key", "{\"key\":\"k B\",\"kernels\":[2]}", "{\"key\":\"k A\",\"kernels\":[1]}",
	 "key 'k A' has two choices (0 and 1)"},
	{"operands the kernels do not bind", "\"n_in\":1,\"n_extra\":0,\"n_out\":1,\"operands\":[",
	 "\"n_in\":2,\"n_extra\":0,\"n_out\":1,\"operands\":[{\"space\":\"act\",\"offset\":0,\"dtype\":\"f32\","
	 "\"shape\":[[1,0]]},",
	 "choice 0's kernels bind 3 buffers, the dispatch has 3 operands"},
};

static void check_refusal(const refusal *r)
{
	char err[512];
	char *json = edit(r->from, r->to);
	halo_manifest *m = manifest_parse(json, strlen(json), 0, code_size, err, sizeof(err));
	CHECK(m == NULL, "%s: accepted", r->what);
	manifest_free(m);
	CHECK(m != NULL || strstr(err, r->message) != NULL, "%s: refused with '%s', want '%s'", r->what, err, r->message);
	free(json);
}

int main(void)
{
	check_valid();
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
		check_refusal(&refusals[i]);
	/* A bundle without GPU kernels: every dispatch's choice is -1 (its
	 * kernels' code would be refused first, so they have none here). */
	char *ref = edit("\"targets\":[\"ref\",\"vulkan\"]", "\"targets\":[\"ref\"]");
	for (char *at; (at = strstr(ref, "\"spirv\":[0,8]"));)
		memset(at, ' ', strlen("\"spirv\":[0,8]"));
	char err[512];
	halo_manifest *m = manifest_parse(ref, strlen(ref), 0, code_size, err, sizeof(err));
	CHECK(m == NULL && strstr(err, "'choice' = 0 is outside [-1, -1]"), "a ref-only bundle with a choice: %s",
	      m ? "accepted" : err);
	manifest_free(m);
	free(ref);
	if (check_failures)
		return 1;
	printf("manifest choices: ok (%zu refusals)\n", sizeof refusals / sizeof refusals[0]);
	return 0;
}
