/* The tuning database: which kernel tile won on which GPU (docs/tuning.md).
 *
 * A JSON file, {"format": 1, "records": [...]}, one record per (vendor id,
 * device id, driver version, kernel key), so several GPUs and drivers share
 * one file. A record names the winning tile of the key's kernel choice and
 * the times measured for it and for the heuristic's tile. `halo tune`
 * writes records, `halo run` and the Vulkan backend read them.
 *
 * Everything read is untrusted: the parser checks every field and refuses a
 * file with a message naming it and the field. Records are kept sorted by
 * (vendor, device, driver, key), so the same records always serialise to
 * the same bytes.
 *
 * Ownership: a halo_tuning_db owns its records and their strings;
 * halo_tuning_db_free() releases them. Record pointers returned by find and
 * record stay valid until the next put, merge or free. */
#ifndef HALO_RUNTIME_TUNING_DB_H
#define HALO_RUNTIME_TUNING_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The format this reader reads and writes. */
#define HALO_TUNING_FORMAT 1

/* A GPU and driver build as the database knows it (runtime/vulkan's
 * vk_device_info ids), plus what a kernel choice needs to know about it. */
typedef struct {
	uint32_t vendor, device, driver;
	uint32_t features; /* HALO_NEED_* bits it has (kernels/device_features.h); not part of the DB key */
	char name[256];
} halo_device_id;

typedef struct {
	uint32_t vendor, device, driver;
	char *device_name; /* for people reading the file; not part of the key */
	char *key;         /* the kernel key (docs/manifest.md), never empty */
	char *tile;        /* the winning tile; "" for a kernel without tile parameters */
	double ns;         /* the winner's median time in the tuned workload, ns */
	double heuristic_ns; /* the heuristic tile's, same workload */
} halo_tuning_record;

typedef struct halo_tuning_db halo_tuning_db;

/* An empty database; NULL when out of memory. */
halo_tuning_db *halo_tuning_db_new(void);
void halo_tuning_db_free(halo_tuning_db *db); /* NULL ok */

/* Parses len bytes of JSON. `name` (the file, for messages) heads every
 * error: "tuning DB NAME: records[2]: missing key 'tile'". A record whose
 * (vendor, device, driver, key) repeats an earlier one replaces it, as a
 * merge would. NULL on failure. */
halo_tuning_db *halo_tuning_db_parse(const char *json, size_t len, const char *name, char *err, size_t errlen);

/* Reads and parses the file at path. A file that does not exist gives NULL
 * with *missing set (and a message in err); any other failure NULL with
 * *missing clear. */
halo_tuning_db *halo_tuning_db_read(const char *path, bool *missing, char *err, size_t errlen);

/* Adds a copy of r, replacing the record of the same (vendor, device,
 * driver, key). False (with a message) for an invalid record or when out of
 * memory; the database is unchanged then. */
bool halo_tuning_db_put(halo_tuning_db *db, const halo_tuning_record *r, char *err, size_t errlen);
/* Puts every record of src into dst: src's win where both have a record. */
bool halo_tuning_db_merge(halo_tuning_db *dst, const halo_tuning_db *src, char *err, size_t errlen);

/* The record of this device and key, or NULL. */
const halo_tuning_record *halo_tuning_db_find(const halo_tuning_db *db, uint32_t vendor, uint32_t device,
					      uint32_t driver, const char *key);
int halo_tuning_db_count(const halo_tuning_db *db);
/* Record i in sorted order, 0 <= i < count. */
const halo_tuning_record *halo_tuning_db_record(const halo_tuning_db *db, int i);

/* The file's bytes: pretty-printed JSON, records sorted, a final newline.
 * malloc'd (caller frees); NULL when out of memory. */
char *halo_tuning_db_serialize(const halo_tuning_db *db);
/* Writes the database to path through a temporary file in the same
 * directory (path.tmp.PID), synced and renamed over path: a reader sees the
 * old file or the new one, never part of one. On failure the temporary file
 * is removed and path left as it was. */
bool halo_tuning_db_write(const halo_tuning_db *db, const char *path, char *err, size_t errlen);

/* The default database: $XDG_CACHE_HOME/halo/tuning.json, or
 * $HOME/.cache/halo/tuning.json when XDG_CACHE_HOME is unset, empty or not
 * absolute. With create_dir, makes the directory (and its parents) if
 * missing. False (with a message) when neither variable is usable, the path
 * does not fit, or the directory cannot be made. */
bool halo_tuning_db_default_path(char *out, size_t outlen, bool create_dir, char *err, size_t errlen);

#endif
