/* libFuzzer target for the tuning DB reader (runtime/tuning_db.h): any bytes
 * must be refused with a message naming the file, or accepted as records
 * that pass the reader's own rules, stay sorted, and serialise to bytes the
 * reader takes back unchanged. */
#include "runtime/tuning_db.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_records(const halo_tuning_db *db)
{
	for (int i = 0; i < halo_tuning_db_count(db); i++) {
		const halo_tuning_record *r = halo_tuning_db_record(db, i);
		if (!r || !r->key || !r->key[0] || !r->tile || !r->device_name || !isfinite(r->ns) || r->ns < 0 ||
		    !isfinite(r->heuristic_ns) || r->heuristic_ns < 0)
			abort();
		if (halo_tuning_db_find(db, r->vendor, r->device, r->driver, r->key) != r)
			abort(); /* not sorted, or a repeated identity */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	halo_tuning_db *db = halo_tuning_db_parse((const char *)data, size, "fuzz.json", err, sizeof err);
	if (!db) {
		if (!memchr(err, '\0', sizeof err) || strncmp(err, "tuning DB fuzz.json: ", 21) != 0)
			abort(); /* a refusal must name the file and say why */
		return 0;
	}
	check_records(db);
	char *text = halo_tuning_db_serialize(db);
	halo_tuning_db *again = text ? halo_tuning_db_parse(text, strlen(text), "again", err, sizeof err) : NULL;
	char *text2 = again ? halo_tuning_db_serialize(again) : NULL;
	if (!text2 || strcmp(text, text2) != 0)
		abort(); /* what the writer writes, the reader reads back */
	free(text);
	free(text2);
	halo_tuning_db_free(again);
	halo_tuning_db_free(db);
	return 0;
}
