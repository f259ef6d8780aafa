/* The ranges a checkpoint copies (manifest->recurrent, runtime/manifest.c):
 * recurrent states only (conv, ssm, ngram and unknown kinds; never kv,
 * indexer or hidden), in offset order whatever the declaration order, one
 * range per run of recurrent states with no positional state between them
 * (padding between them included, empty states ignored), packed back to back. */
#include <stdio.h>
#include <string.h>

#include "runtime/manifest.h"
#include "tests/check.h"

#define HEAD "{\"format\":2,\"model\":\"t\",\"targets\":[\"ref\"],\"vocab\":4,\"n_ctx\":8,\"state_bytes\":2048," \
	     "\"weights\":[],\"kernels\":[],\"choices\":[],\"entries\":[],\"states\":["
#define STATE(name, kind, offset, size)                                                                      \
	"{\"name\":\"" name "\",\"kind\":\"" kind "\",\"dtype\":\"f32\",\"shape\":[],\"offset\":" #offset \
	",\"size\":" #size "}"

static halo_manifest *parse(const char *json)
{
	char err[512];
	halo_manifest *m = manifest_parse(json, strlen(json), 0, 0, err, sizeof(err));
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

int main(void)
{
	check_runs();
	check_positional_only();
	if (check_failures)
		return 1;
	puts("state ranges: ok");
	return 0;
}
