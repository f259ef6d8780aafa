/* The tuning database (runtime/tuning_db.h): serialise/parse round trip,
 * records sorted whatever the insertion order (same records, same bytes),
 * merge replacing by (vendor, device, driver, key), two devices and two
 * drivers of one key side by side, one refusal per kind of corrupt input
 * and the format version, invalid records refused by put, reading a missing
 * or broken file, the write's atomicity (a reader racing a writer only ever
 * sees a whole file; a failed write leaves the target and no temporary file)
 * and the default path's XDG / HOME rules. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/tuning_db.h"
#include "tests/check.h"

static char work[4096];

static halo_tuning_record rec(uint32_t vendor, uint32_t device, uint32_t driver, const char *key, const char *tile,
			      double ns)
{
	return (halo_tuning_record){vendor, device, driver, "GPU", (char *)key, (char *)tile, ns, ns * 2};
}

static void put(halo_tuning_db *db, halo_tuning_record r)
{
	char err[256];
	CHECK(halo_tuning_db_put(db, &r, err, sizeof(err)), "put %s: %s", r.key, err);
}

static halo_tuning_db *parse(const char *json, char *err, size_t errlen)
{
	return halo_tuning_db_parse(json, strlen(json), "t.json", err, errlen);
}

static bool same_record(const halo_tuning_record *a, const halo_tuning_record *b)
{
	return a->vendor == b->vendor && a->device == b->device && a->driver == b->driver &&
	       !strcmp(a->device_name, b->device_name) && !strcmp(a->key, b->key) && !strcmp(a->tile, b->tile) &&
	       a->ns == b->ns && a->heuristic_ns == b->heuristic_ns;
}

static void check_round_trip(void)
{
	halo_tuning_db *a = halo_tuning_db_new(), *b = halo_tuning_db_new();
	halo_tuning_record r[] = {rec(4098, 5510, 7, "matvec K=64 N=96 w=f16 tmax=8", "ls128,sp32", 1234.5),
				  rec(4318, 8998, 123, "rms_norm R=2 D=16 tmax=64", "ls32", 99.0),
				  rec(4318, 8998, 123, "embed V=256 H=64 w=f32 tmax=8", "", 0.25)};
	for (int i = 0; i < 3; i++)
		put(a, r[i]);
	for (int i = 2; i >= 0; i--)
		put(b, r[i]);
	char *sa = halo_tuning_db_serialize(a), *sb = halo_tuning_db_serialize(b), err[512];
	CHECK(sa && sb && !strcmp(sa, sb), "insertion order changed the bytes");
	halo_tuning_db *c = parse(sa, err, sizeof(err));
	CHECK(c != NULL, "the serialised DB is refused: %s", err);
	CHECK(halo_tuning_db_count(c) == 3, "%d records after the round trip", halo_tuning_db_count(c));
	for (int i = 0; c && i < 3; i++) {
		const halo_tuning_record *got = halo_tuning_db_find(c, r[i].vendor, r[i].device, r[i].driver, r[i].key);
		CHECK(got && same_record(got, &r[i]), "record %d changed in the round trip", i);
	}
	const halo_tuning_record *first = halo_tuning_db_record(c, 0), *last = halo_tuning_db_record(c, 2);
	CHECK(first && first->vendor == 4098 && last && !strcmp(last->key, "rms_norm R=2 D=16 tmax=64"),
	      "records are not sorted by (vendor, device, driver, key)");
	char *sc = c ? halo_tuning_db_serialize(c) : NULL;
	CHECK(sc && !strcmp(sa, sc), "parse + serialise changed the bytes");
	free(sa);
	free(sb);
	free(sc);
	halo_tuning_db_free(a);
	halo_tuning_db_free(b);
	halo_tuning_db_free(c);
}

/* Two devices and two drivers of one key, and a merge that replaces one. */
static void check_merge(void)
{
	const char *key = "matvec K=4096 N=4096 w=f16 tmax=8";
	halo_tuning_db *db = halo_tuning_db_new(), *more = halo_tuning_db_new();
	put(db, rec(4098, 5510, 1, key, "ls128", 10));  /* gfx1151, driver 1 */
	put(db, rec(4318, 8998, 555, key, "ls256", 20)); /* an NVIDIA GPU */
	put(more, rec(4098, 5510, 1, key, "ls64", 8));   /* retuned: replaces */
	put(more, rec(4098, 5510, 2, key, "ls32", 9));   /* a new driver: added */
	char err[256];
	CHECK(halo_tuning_db_merge(db, more, err, sizeof(err)), "merge: %s", err);
	CHECK(halo_tuning_db_count(db) == 3, "%d records after the merge, want 3", halo_tuning_db_count(db));
	const halo_tuning_record *a = halo_tuning_db_find(db, 4098, 5510, 1, key);
	const halo_tuning_record *b = halo_tuning_db_find(db, 4318, 8998, 555, key);
	const halo_tuning_record *c = halo_tuning_db_find(db, 4098, 5510, 2, key);
	CHECK(a && !strcmp(a->tile, "ls64") && a->ns == 8, "the merged record did not replace the old one");
	CHECK(b && !strcmp(b->tile, "ls256"), "the other device's record is gone");
	CHECK(c && !strcmp(c->tile, "ls32"), "the other driver's record is missing");
	CHECK(!halo_tuning_db_find(db, 4098, 5510, 3, key) && !halo_tuning_db_find(db, 4098, 5510, 1, "other"),
	      "found a record that is not there");
	halo_tuning_db_free(db);
	halo_tuning_db_free(more);
}

static void check_invalid_puts(void)
{
	halo_tuning_db *db = halo_tuning_db_new();
	halo_tuning_record bad[] = {rec(1, 2, 3, "", "t", 1), rec(1, 2, 3, "k", "t", NAN), rec(1, 2, 3, "k", "t", -5),
				    rec(1, 2, 3, "k", NULL, 1)};
	char err[256];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK(!halo_tuning_db_put(db, &bad[i], err, sizeof(err)), "invalid record %zu accepted", i);
	CHECK(halo_tuning_db_count(db) == 0, "a refused put left a record");
	halo_tuning_db_free(db);
}

#define R(fields) "{\"format\":1,\"records\":[{" fields "}]}"
#define GOOD_FIELDS "\"vendor\":1,\"device\":2,\"driver\":3,\"device_name\":\"g\",\"key\":\"k\",\"tile\":\"t\","
#define GOOD R(GOOD_FIELDS "\"ns\":1.5,\"heuristic_ns\":2")

typedef struct {
	const char *what, *json, *message;
} corrupt;

static const corrupt corrupts[] = {
	{"empty file", "", "truncated"},
	{"cut short", "{\"format\":1,\"records\":[", "truncated"},
	{"not JSON", "tuning!", "not valid JSON"},
	{"an array", "[1,2]", "root: not a JSON object"},
	{"no format", "{\"records\":[]}", "missing integer 'format'"},
	{"format as text", "{\"format\":\"1\",\"records\":[]}", "missing integer 'format'"},
	{"another format", "{\"format\":2,\"records\":[]}", "format 2, this reader reads format 1"},
	{"no records", "{\"format\":1}", "missing array 'records'"},
	{"records as an object", "{\"format\":1,\"records\":{}}", "missing array 'records'"},
	{"a record that is a number", "{\"format\":1,\"records\":[7]}", "records[0]: a record must be an object"},
	{"no tile", R("\"vendor\":1,\"device\":2,\"driver\":3,\"device_name\":\"g\",\"key\":\"k\",\"ns\":1,"
		      "\"heuristic_ns\":2"), "records[0]: missing key 'tile'"},
	{"a negative vendor", R("\"vendor\":-1,\"device\":2,\"driver\":3,\"device_name\":\"g\",\"key\":\"k\","
				"\"tile\":\"t\",\"ns\":1,\"heuristic_ns\":2"), "'vendor' = -1 is not a 32-bit unsigned id"},
	{"a 33-bit driver", R("\"vendor\":1,\"device\":2,\"driver\":4294967296,\"device_name\":\"g\",\"key\":\"k\","
			      "\"tile\":\"t\",\"ns\":1,\"heuristic_ns\":2"), "'driver' = 4294967296"},
	{"an empty key", R("\"vendor\":1,\"device\":2,\"driver\":3,\"device_name\":\"g\",\"key\":\"\",\"tile\":\"t\","
			   "\"ns\":1,\"heuristic_ns\":2"), "the key must be a non-empty string"},
	{"a time as text", R(GOOD_FIELDS "\"ns\":\"fast\",\"heuristic_ns\":2"), "'ns' must be a number"},
	{"a negative time", R(GOOD_FIELDS "\"ns\":1,\"heuristic_ns\":-2"), "finite and not negative"},
	{"a tile that is a number", R("\"vendor\":1,\"device\":2,\"driver\":3,\"device_name\":\"g\",\"key\":\"k\","
				      "\"tile\":5,\"ns\":1,\"heuristic_ns\":2"), "'tile' must be a string"},
	{"bytes after the object", GOOD " x", "bytes after the JSON object"},
	{"two objects", GOOD GOOD, "bytes after the JSON object"},
};

static void check_corrupt(void)
{
	char err[512];
	halo_tuning_db *db = parse(GOOD "\n", err, sizeof(err));
	CHECK(db && halo_tuning_db_count(db) == 1, "the good file is refused: %s", err);
	halo_tuning_db_free(db);
	for (size_t i = 0; i < sizeof corrupts / sizeof corrupts[0]; i++) {
		const corrupt *c = &corrupts[i];
		err[0] = '\0';
		db = parse(c->json, err, sizeof(err));
		CHECK(db == NULL, "%s: accepted", c->what);
		halo_tuning_db_free(db);
		CHECK(strstr(err, "tuning DB t.json: ") == err && strstr(err, c->message), "%s: message '%s', want '%s'",
		      c->what, err, c->message);
	}
	/* A repeated identity: the later record wins, as in a merge. */
	db = parse("{\"format\":1,\"records\":[{" GOOD_FIELDS "\"ns\":1,\"heuristic_ns\":2},{" GOOD_FIELDS
		   "\"ns\":3,\"heuristic_ns\":4}]}", err, sizeof(err));
	const halo_tuning_record *r = db ? halo_tuning_db_find(db, 1, 2, 3, "k") : NULL;
	CHECK(db && halo_tuning_db_count(db) == 1 && r && r->ns == 3, "a repeated record did not replace the first");
	halo_tuning_db_free(db);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
}

static void check_read(void)
{
	char path[4200], err[512];
	bool missing = false;
	snprintf(path, sizeof(path), "%s/none.json", work);
	CHECK(!halo_tuning_db_read(path, &missing, err, sizeof(err)) && missing, "a missing file is not reported missing");
	CHECK(strstr(err, path) != NULL, "the missing file's message does not name it: %s", err);
	snprintf(path, sizeof(path), "%s/broken.json", work);
	write_text(path, "{\"format\":1,\"records\":[{\"vendor\":");
	CHECK(!halo_tuning_db_read(path, &missing, err, sizeof(err)) && !missing, "a broken file is accepted or missing");
	CHECK(strstr(err, path) && strstr(err, "truncated"), "the broken file's message: %s", err);
}

static halo_tuning_db *db_of(int n, const char *tile)
{
	halo_tuning_db *db = halo_tuning_db_new();
	for (int i = 0; i < n; i++) {
		char key[64];
		snprintf(key, sizeof(key), "matvec K=%d N=4096 w=f16 tmax=8", i);
		put(db, rec(4098, 5510, 1, key, tile, 1000 + i));
	}
	return db;
}

static int temp_files(void)
{
	int n = 0;
	DIR *d = opendir(work);
	for (struct dirent *e; d && (e = readdir(d));)
		n += strstr(e->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	return n;
}

/* A child rewrites the file between two databases of different sizes as fast
 * as it can while the parent reads it: every read must be one of them whole. */
static void check_atomic(void)
{
	enum { A = 400, B = 1500, WRITES = 150 };
	char path[4200], err[512];
	snprintf(path, sizeof(path), "%s/race.json", work);
	halo_tuning_db *a = db_of(A, "ls128"), *b = db_of(B, "ls64");
	CHECK(halo_tuning_db_write(a, path, err, sizeof(err)), "write: %s", err);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < WRITES; i++)
			if (!halo_tuning_db_write(i % 2 ? a : b, path, err, sizeof(err)))
				_exit(1);
		_exit(0);
	}
	int reads = 0, bad = 0, status = 0;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		bool missing;
		halo_tuning_db *got = halo_tuning_db_read(path, &missing, err, sizeof(err));
		int n = halo_tuning_db_count(got);
		if (!got || (n != A && n != B)) {
			bad++;
			fprintf(stderr, "read %d: %s\n", reads, got ? "a record count of neither file" : err);
		}
		halo_tuning_db_free(got);
		reads++;
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the writer failed");
	CHECK(bad == 0, "%d of %d reads racing the writer saw a partial file", bad, reads);
	CHECK(temp_files() == 0, "temporary files left after the writes");
	printf("atomicity: %d reads raced %d writes, all whole\n", reads, WRITES);
	halo_tuning_db_free(a);
	halo_tuning_db_free(b);
}

/* A write that cannot finish leaves the target as it was and no temporary file. */
static void check_failed_write(void)
{
	char path[4200], err[512];
	halo_tuning_db *db = db_of(3, "ls32");
	snprintf(path, sizeof(path), "%s/target_dir", work);
	CHECK(mkdir(path, 0755) == 0, "mkdir %s", path);
	CHECK(!halo_tuning_db_write(db, path, err, sizeof(err)), "a write over a directory succeeded");
	CHECK(strstr(err, path) != NULL, "the failed write's message does not name the file: %s", err);
	struct stat st;
	CHECK(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "the failed write changed the target");
	CHECK(temp_files() == 0, "a failed write left its temporary file");
	snprintf(path, sizeof(path), "%s/no/such/dir/t.json", work);
	CHECK(!halo_tuning_db_write(db, path, err, sizeof(err)) && strstr(err, path), "a write into a missing directory");
	halo_tuning_db_free(db);
}

static void expect_default(const char *xdg, const char *home, const char *want)
{
	char path[4200], err[512];
	if (xdg)
		setenv("XDG_CACHE_HOME", xdg, 1);
	else
		unsetenv("XDG_CACHE_HOME");
	if (home)
		setenv("HOME", home, 1);
	else
		unsetenv("HOME");
	bool ok = halo_tuning_db_default_path(path, sizeof(path), true, err, sizeof(err));
	if (!want) {
		CHECK(!ok && strstr(err, "HOME"), "XDG %s HOME %s: a default path without either", xdg ? xdg : "-",
		      home ? home : "-");
		return;
	}
	CHECK(ok && !strcmp(path, want), "XDG %s HOME %s: '%s', want '%s' (%s)", xdg ? xdg : "-", home ? home : "-",
	      ok ? path : "", want, ok ? "" : err);
	char dir[4200];
	snprintf(dir, sizeof(dir), "%s", want);
	*strrchr(dir, '/') = '\0';
	struct stat st;
	CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "the default DB's directory %s was not made", dir);
}

static void check_default_path(void)
{
	char xdg[4200], home[4200], want[4300];
	snprintf(xdg, sizeof(xdg), "%s/xdg/cache", work);
	snprintf(home, sizeof(home), "%s/home", work);
	CHECK(mkdir(home, 0755) == 0, "mkdir %s", home);
	snprintf(want, sizeof(want), "%s/halo/tuning.json", xdg);
	expect_default(xdg, home, want);
	snprintf(want, sizeof(want), "%s/.cache/halo/tuning.json", home);
	expect_default(NULL, home, want);
	expect_default("", home, want);
	expect_default("relative/cache", home, want); /* the XDG spec: relative paths are ignored */
	expect_default(NULL, NULL, NULL);
}

int main(void)
{
	snprintf(work, sizeof(work), "/tmp/halo_tuning_db_XXXXXX");
	if (!mkdtemp(work)) {
		perror("mkdtemp");
		return 1;
	}
	check_round_trip();
	check_merge();
	check_invalid_puts();
	check_corrupt();
	check_read();
	check_atomic();
	check_failed_write();
	check_default_path();
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", work);
	if (check_failures)
		return 1;
	printf("tuning db: ok (%zu corrupt inputs refused)\n", sizeof corrupts / sizeof corrupts[0]);
	return 0;
}
