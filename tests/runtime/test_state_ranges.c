/* The ranges a checkpoint copies (manifest->recurrent, runtime/manifest.c):
 * recurrent states only (conv, ssm, ngram and unknown kinds; never kv,
 * indexer, hidden or slots), in offset order whatever the declaration order,
 * one range per run of recurrent states with no other state between them
 * (padding between them included, empty states ignored), packed back to back.
 * The per-token slots (manifest->slots) of states of kind "slots", and the
 * refusal of slots that do not fit the state they name. */
#include <stdio.h>
#include <string.h>

#include "runtime/manifest.h"
#include "tests/check.h"

static const uint64_t no_code[HALO_TARGET_COUNT]; /* a bundle without kernel sections */

#define HEAD "{\"format\":5,\"model\":\"t\",\"targets\":[\"ref\"],\"vocab\":4,\"n_ctx\":8,\"state_bytes\":2048," \
	     "\"weights\":[],\"kernels\":[],\"choices\":[],\"entries\":[],\"states\":["
#define SLOTS(name, of, shape, offset, size)                                                              \
	"{\"name\":\"" name "\",\"kind\":\"slots\",\"slots_of\":\"" of "\",\"dtype\":\"f32\",\"shape\":" shape \
	",\"offset\":" #offset ",\"size\":" #size "}"
#define STATE(name, kind, offset, size)                                                                      \
	"{\"name\":\"" name "\",\"kind\":\"" kind "\",\"dtype\":\"f32\",\"shape\":[],\"offset\":" #offset \
	",\"size\":" #size "}"

static halo_manifest *parse(const char *json)
{
	char err[512];
	halo_manifest *m = manifest_parse(json, strlen(json), 0, no_code, err, sizeof(err));
	CHECK(m != NULL, "%s", err);
	return m;
}

static void check_range(const halo_manifest *m, int i, uint64_t offset, uint64_t size, uint64_t packed)
{
	const halo_state_range *r = &m->recurrent[i];
	CHECK(r->offset == offset && r->size == size && r->packed == packed,
	      "range %d is [%llu, +%llu) at %llu, want [%llu, +%llu) at %llu", i, (unsigned long long)r->offset,
	      (unsigned long long)r->size, (unsigned long long)r->packed, (unsigned long long)offset,
	      (unsigned long long)size, (unsigned long long)packed);
}

static void check_runs(void)
{
	halo_manifest *m = parse(HEAD STATE("late_conv", "conv", 1536, 4) "," STATE("k", "kv", 512, 256) ","
					STATE("hist", "ngram", 768, 8) "," STATE("conv", "conv", 0, 100) ","
					STATE("h", "hidden", 1280, 256) "," STATE("odd", "mystery", 1024, 16) ","
					STATE("empty_idx", "indexer", 1040, 0) "," STATE("ssm", "ssm", 256, 200) "]}");
	if (!m)
		return;
	CHECK(m->n_recurrent == 3, "%d ranges, want 3", m->n_recurrent);
	if (m->n_recurrent == 3) {
		check_range(m, 0, 0, 456, 0);     /* conv + padding + ssm */
		check_range(m, 1, 768, 272, 456); /* ngram + padding + an unknown kind */
		check_range(m, 2, 1536, 4, 728);
	}
	CHECK(m->recurrent_bytes == 732, "recurrent_bytes %llu, want 732", (unsigned long long)m->recurrent_bytes);
	manifest_free(m);
}

static void check_positional_only(void)
{
	halo_manifest *m = parse(HEAD STATE("k", "kv", 0, 256) "," STATE("i", "indexer", 256, 256) ","
					STATE("h", "hidden", 512, 256) "]}");
	if (!m)
		return;
	CHECK(m->n_recurrent == 0 && m->recurrent_bytes == 0, "%d ranges of %llu bytes, want none", m->n_recurrent,
	      (unsigned long long)m->recurrent_bytes);
	manifest_free(m);
}

/* conv [2,4] f32 = 32 bytes, its 3 slots 96 bytes, between two recurrent
 * states: the slots split the run and are not copied by a checkpoint. */
static void check_slots(void)
{
	const char *conv = "{\"name\":\"conv\",\"kind\":\"conv\",\"dtype\":\"f32\",\"shape\":[2,4],\"offset\":0,"
			   "\"size\":32}";
	char json[1024];
	snprintf(json, sizeof json, "%s%s,%s,%s]}", HEAD, conv, SLOTS("conv.slots", "conv", "[3,2,4]", 256, 96),
		 STATE("ssm", "ssm", 512, 64));
	halo_manifest *m = parse(json);
	if (!m)
		return;
	CHECK(m->n_recurrent == 2 && m->recurrent_bytes == 96, "%d ranges of %llu bytes, want 2 of 96", m->n_recurrent,
	      (unsigned long long)m->recurrent_bytes);
	CHECK(m->n_slots == 1 && m->slots[0].state == 0 && m->slots[0].slots == 256 && m->slots[0].size == 32 &&
		      m->slots[0].n == 3,
	      "slots %d: state %llu, slots %llu, size %llu, n %lld; want 1: 0, 256, 32, 3", m->n_slots,
	      (unsigned long long)m->slots[0].state, (unsigned long long)m->slots[0].slots,
	      (unsigned long long)m->slots[0].size, (long long)m->slots[0].n);
	manifest_free(m);
	static const struct {
		const char *what, *slots, *want;
	} bad[] = {
		{"an unknown state", SLOTS("x.slots", "x", "[3,2,4]", 256, 96), "'x.slots' (kind slots) must be"},
		{"other trailing dims", SLOTS("c.slots", "conv", "[3,4,2]", 256, 96), "'c.slots' (kind slots) must be"},
		{"a positional state", SLOTS("k.slots", "k", "[3,2,4]", 256, 96), "'k.slots' (kind slots) must be"},
		{"too few bytes", SLOTS("c.slots", "conv", "[3,2,4]", 256, 64), "fewer than 3 slots of 'conv'"},
		{"slots_of on a conv state",
		 "{\"name\":\"c2\",\"kind\":\"conv\",\"slots_of\":\"conv\",\"dtype\":\"f32\",\"shape\":[2,4],"
		 "\"offset\":256,\"size\":32}",
		 "'slots_of' belongs to a state of kind 'slots' only"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char err[512] = "";
		snprintf(json, sizeof json, "%s%s,%s,%s]}", HEAD, conv, STATE("k", "kv", 1024, 32), bad[i].slots);
		halo_manifest *b = manifest_parse(json, strlen(json), 0, no_code, err, sizeof(err));
		CHECK(!b && strstr(err, bad[i].want), "%s: %s (want '%s')", bad[i].what, b ? "accepted" : err,
		      bad[i].want);
		manifest_free(b);
	}
}

int main(void)
{
	check_runs();
	check_positional_only();
	check_slots();
	if (check_failures)
		return 1;
	puts("state ranges: ok");
	return 0;
}
