/* Bundle container: round trip, determinism, writer errors and every refusal
 * of the reader (docs/bundle.md). */
#include "codegen/bundle_write.h"
#include "runtime/bundle.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static int failures;

#define CHECK(cond, ...)                                                                                     \
	do {                                                                                                 \
		if (!(cond)) {                                                                               \
			failures++;                                                                          \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond);             \
			fprintf(stderr, __VA_ARGS__);                                                        \
			fputc('\n', stderr);                                                                 \
		}                                                                                            \
	} while (0)

static char dir[] = "/tmp/halo_bundle_test.XXXXXX";

static const char manifest[] = "{\"entries\": {\"prefill\": {}}}";
static uint8_t spirv[1000];
#define WEIGHTS_SIZE (3u * 65536u + 123u)

/* The weights pattern, produced on demand like a converter would. */
static uint8_t weight_byte(uint64_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

static int fill_weights(void *ctx, uint64_t offset, void *buf, size_t len, char *err, size_t errlen)
{
	uint64_t *calls = ctx;
	(*calls)++;
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = weight_byte(offset + i);
	return 0;
}

static int fill_fails(void *ctx, uint64_t offset, void *buf, size_t len, char *err, size_t errlen)
{
	snprintf(err, errlen, "tensor 'blk.0.w' could not be converted");
	return 1;
}

static char *path_of(const char *name)
{
	static char buf[8][512];
	static int k;
	char *p = buf[k++ % 8];
	snprintf(p, 512, "%s/%s", dir, name);
	return p;
}

/* manifest, spirv, weights (streamed), an empty section. */
static int write_sample(const char *path, char *err, size_t errlen)
{
	uint64_t calls = 0;
	halo_bundle_writer *w = halo_bundle_writer_new();
	int rc = halo_bundle_writer_add(w, "manifest", manifest, strlen(manifest), 0, err, errlen) ||
	         halo_bundle_writer_add(w, "spirv", spirv, sizeof spirv, 0, err, errlen) ||
	         halo_bundle_writer_add_stream(w, "weights", WEIGHTS_SIZE, 0, fill_weights, &calls, err, errlen) ||
	         halo_bundle_writer_add(w, "empty", NULL, 0, 16, err, errlen) ||
	         halo_bundle_writer_write(w, path, err, errlen);
	halo_bundle_writer_free(w);
	return rc;
}

static uint8_t *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*size = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(*size ? *size : 1);
	if (fread(buf, 1, *size, f) != *size) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static void write_bytes(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	fwrite(data, 1, size, f);
	fclose(f);
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void wr64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint8_t *entry_of(uint8_t *file, int i)
{
	return file + HALO_BUNDLE_HEADER_SIZE + (size_t)i * HALO_BUNDLE_ENTRY_SIZE;
}

/* Recomputes the table and header checksums after a deliberate edit, so the
 * reader's later checks (bounds, overlap, ...) are the ones exercised. */
static void reseal_header(uint8_t *file)
{
	wr64(file + HALO_BH_HEADER_XXH64, XXH64(file, HALO_BH_HEADER_XXH64, 0));
}

/* Table and header; the section count must fit the file. */
static void reseal(uint8_t *file)
{
	uint32_t n = file[HALO_BH_SECTION_COUNT] | file[HALO_BH_SECTION_COUNT + 1] << 8;
	wr64(file + HALO_BH_TABLE_XXH64, XXH64(file + HALO_BUNDLE_HEADER_SIZE, n * HALO_BUNDLE_ENTRY_SIZE, 0));
	reseal_header(file);
}

/* Opening `data` must fail with a message containing every given fragment. */
static void expect_refusal(const uint8_t *data, size_t size, unsigned flags, const char *what, const char *frag1,
                           const char *frag2)
{
	char err[512] = "";
	halo_bundle *b = halo_bundle_open_mem(data, size, "sample.halo", flags, err, sizeof err);
	CHECK(!b, "%s: accepted", what);
	halo_bundle_close(b);
	CHECK(strstr(err, "sample.halo") != NULL, "%s: message does not name the file: %s", what, err);
	CHECK(strstr(err, frag1) != NULL, "%s: message lacks '%s': %s", what, frag1, err);
	CHECK(!frag2 || strstr(err, frag2) != NULL, "%s: message lacks '%s': %s", what, frag2, err);
}

static void test_round_trip(void)
{
	char err[512];
	const char *path = path_of("a.halo");
	CHECK(write_sample(path, err, sizeof err) == 0, "write: %s", err);
	halo_bundle *b = halo_bundle_open(path, err, sizeof err);
	CHECK(b, "open: %s", err);
	if (!b)
		return;
	size_t size;
	const void *p = halo_bundle_section(b, "manifest", &size);
	CHECK(p && size == strlen(manifest) && memcmp(p, manifest, size) == 0, "manifest bytes differ");
	p = halo_bundle_section(b, "spirv", &size);
	CHECK(p && size == sizeof spirv && memcmp(p, spirv, size) == 0, "spirv bytes differ");
	const uint8_t *wts = halo_bundle_section(b, "weights", &size);
	CHECK(wts && size == WEIGHTS_SIZE, "weights size %zu", size);
	bool same = wts != NULL;
	for (size_t i = 0; same && i < size; i++)
		same = wts[i] == weight_byte(i);
	CHECK(same, "weights bytes differ");
	/* The mapping is page aligned and weights sit on a 64 KiB file offset. */
	CHECK(((uintptr_t)wts & 4095) == 0, "weights pointer %p not page aligned", (const void *)wts);
	p = halo_bundle_section(b, "empty", &size);
	CHECK(p && size == 0, "empty section");
	CHECK(!halo_bundle_section(b, "hsaco", &size) && size == 0, "absent section found");
	CHECK(halo_bundle_section_count(b) == 4, "count %zu", halo_bundle_section_count(b));
	CHECK(halo_bundle_section_name(b, 2) && strcmp(halo_bundle_section_name(b, 2), "weights") == 0, "order");
	CHECK(!halo_bundle_section_name(b, 4), "name out of range");
	halo_bundle_close(b);
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	CHECK(access(tmp, F_OK) != 0, "temporary file %s left behind", tmp);
}

static void test_determinism(void)
{
	char err[512];
	size_t n1 = 0, n2 = 0;
	CHECK(write_sample(path_of("d1.halo"), err, sizeof err) == 0, "%s", err);
	CHECK(write_sample(path_of("d2.halo"), err, sizeof err) == 0, "%s", err);
	uint8_t *a = read_all(path_of("d1.halo"), &n1), *b = read_all(path_of("d2.halo"), &n2);
	CHECK(a && b && n1 == n2 && memcmp(a, b, n1) == 0, "two writes differ");
	free(a);
	free(b);
}

static void test_writer_errors(void)
{
	char err[512];
	halo_bundle_writer *w = halo_bundle_writer_new();
	CHECK(halo_bundle_writer_add(w, "spirv", spirv, 4, 0, err, sizeof err) == 0, "%s", err);
	CHECK(halo_bundle_writer_add(w, "spirv", spirv, 4, 0, err, sizeof err) != 0 && strstr(err, "twice"),
	      "duplicate accepted: %s", err);
	CHECK(halo_bundle_writer_add(w, "bad name", spirv, 4, 0, err, sizeof err) != 0, "space in name accepted");
	CHECK(halo_bundle_writer_add(w, "", spirv, 4, 0, err, sizeof err) != 0, "empty name accepted");
	CHECK(halo_bundle_writer_add(w, "a_name_that_is_far_too_long", spirv, 4, 0, err, sizeof err) != 0,
	      "long name accepted");
	CHECK(halo_bundle_writer_add(w, "x", spirv, 4, 48, err, sizeof err) != 0 && strstr(err, "power of two"),
	      "alignment 48 accepted: %s", err);
	CHECK(halo_bundle_writer_add(w, "y", NULL, 4, 0, err, sizeof err) != 0, "NULL data accepted");

	/* A failing stream abandons the bundle: no temp file, the old file intact. */
	const char *path = path_of("w.halo");
	write_bytes(path, (const uint8_t *)"old", 3);
	CHECK(halo_bundle_writer_add_stream(w, "weights", 5000, 0, fill_fails, NULL, err, sizeof err) == 0, "%s",
	      err);
	CHECK(halo_bundle_writer_write(w, path, err, sizeof err) != 0, "failing fill accepted");
	CHECK(strstr(err, "weights") && strstr(err, "blk.0.w"), "message lacks section and cause: %s", err);
	size_t n = 0;
	uint8_t *old = read_all(path, &n);
	CHECK(old && n == 3 && memcmp(old, "old", 3) == 0, "target overwritten");
	free(old);
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	CHECK(access(tmp, F_OK) != 0, "temporary file %s left behind", tmp);
	CHECK(halo_bundle_writer_write(w, path_of("no/such/dir.halo"), err, sizeof err) != 0 &&
	          strstr(err, "no/such/dir.halo"),
	      "unwritable path: %s", err);
	halo_bundle_writer_free(w);
}

/* A stream many times the writer's ring of chunks (32 of 1 MiB, written by
 * a second thread as the fill produces them): the bytes, in order, and
 * the checksum the reader verifies; then a fill that fails long after the
 * ring has wrapped leaves no file. */
#define LONG_SIZE (70u * 1048576u + 77u)

static int fill_long(void *ctx, uint64_t offset, void *buf, size_t len, char *err, size_t errlen)
{
	uint64_t fail_at = *(const uint64_t *)ctx;
	if (offset + len > fail_at) {
		snprintf(err, errlen, "tensor 'blk.60.w' could not be converted");
		return 1;
	}
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = weight_byte(offset + i);
	return 0;
}

static int write_long(const char *path, uint64_t fail_at, char *err, size_t errlen)
{
	halo_bundle_writer *w = halo_bundle_writer_new();
	int rc = halo_bundle_writer_add(w, "manifest", manifest, strlen(manifest), 0, err, errlen) ||
	         halo_bundle_writer_add_stream(w, "weights", LONG_SIZE, 0, fill_long, &fail_at, err, errlen) ||
	         halo_bundle_writer_write(w, path, err, errlen);
	halo_bundle_writer_free(w);
	return rc;
}

static void test_long_stream(void)
{
	char err[512] = "";
	const char *path = path_of("long.halo");
	CHECK(write_long(path, UINT64_MAX, err, sizeof err) == 0, "long stream: %s", err);
	halo_bundle *b = halo_bundle_open(path, err, sizeof err);
	CHECK(b, "long stream's bundle refused: %s", err);
	size_t size = 0;
	const uint8_t *p = b ? halo_bundle_section(b, "weights", &size) : NULL;
	CHECK(p && size == LONG_SIZE, "weights section: %zu bytes", size);
	size_t bad = 0;
	for (size_t i = 0; p && i < size && !bad; i++)
		if (p[i] != weight_byte(i))
			bad = i + 1;
	CHECK(!bad, "long stream: byte %zu differs", bad - 1);
	halo_bundle_close(b);
	remove(path);

	const char *failing = path_of("long_fails.halo");
	CHECK(write_long(failing, 60u * 1048576u, err, sizeof err) != 0 && strstr(err, "blk.60.w") &&
	          strstr(err, "at byte 62914560"),
	      "fill failing at 60 MiB: %s", err);
	CHECK(access(failing, F_OK) != 0, "a failed write left %s", failing);
	char tmp[600];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", failing, (long)getpid());
	CHECK(access(tmp, F_OK) != 0, "temporary file %s left behind", tmp);
}

static void test_file_refusals(void)
{
	char err[512];
	halo_bundle *b = halo_bundle_open(path_of("missing.halo"), err, sizeof err);
	CHECK(!b && strstr(err, "missing.halo") && strstr(err, "cannot open"), "missing: %s", err);
	write_bytes(path_of("empty.halo"), (const uint8_t *)"", 0);
	b = halo_bundle_open(path_of("empty.halo"), err, sizeof err);
	CHECK(!b && strstr(err, "empty.halo") && strstr(err, "too short"), "empty: %s", err);
	b = halo_bundle_open(dir, err, sizeof err);
	CHECK(!b && strstr(err, "not a regular file"), "directory: %s", err);
}

static void test_truncation(const uint8_t *file, size_t size)
{
	const char *path = path_of("t.halo");
	size_t cuts[] = {0, 7, 8, 63, 64, 100, 64 + 4 * 64, 300, 1024, 65536, size / 2, size - 123, size - 1};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		char err[512] = "";
		write_bytes(path, file, cuts[i]);
		halo_bundle *b = halo_bundle_open(path, err, sizeof err);
		CHECK(!b, "truncated at %zu accepted", cuts[i]);
		halo_bundle_close(b);
		CHECK(strstr(err, "t.halo") && (strstr(err, "too short") || strstr(err, "truncated")),
		      "cut at %zu: %s", cuts[i], err);
	}
	uint8_t *longer = malloc(size + 1);
	memcpy(longer, file, size);
	longer[size] = 0;
	expect_refusal(longer, size + 1, 0, "trailing byte", "trailing", NULL);
	free(longer);
}

/* A flipped byte in the header, the table, each section and the padding. */
static void test_flips(uint8_t *file, size_t size)
{
	struct {
		const char *what;
		size_t at;
		const char *frag;
	} flips[] = {
		{"header", HALO_BH_FILE_SIZE, "header checksum"},
		{"header checksum", HALO_BH_HEADER_XXH64 + 3, "header checksum"},
		{"table", HALO_BUNDLE_HEADER_SIZE + HALO_BE_SIZE, "table checksum"},
		{"table name", HALO_BUNDLE_HEADER_SIZE + 2 * HALO_BUNDLE_ENTRY_SIZE, "table checksum"},
		{"padding", HALO_BUNDLE_HEADER_SIZE + 4 * HALO_BUNDLE_ENTRY_SIZE + 5, "padding"},
		{"padding before the empty last section", size - 1, "padding before section 'empty'"},
	};
	for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
		file[flips[i].at] ^= 0x20;
		expect_refusal(file, size, 0, flips[i].what, flips[i].frag, NULL);
		file[flips[i].at] ^= 0x20;
	}
	const char *names[] = {"manifest", "spirv", "weights"};
	for (int s = 0; s < 3; s++) {
		uint8_t *e = entry_of(file, s);
		size_t at = rd64(e + HALO_BE_OFFSET) + rd64(e + HALO_BE_SIZE) / 2;
		file[at] ^= 0x01;
		expect_refusal(file, size, 0, names[s], "checksum mismatch", names[s]);
		if (s == 2) {
			/* The explicit flag skips the weights checksum and nothing else. */
			char err[512];
			halo_bundle *b = halo_bundle_open_mem(file, size, "x", HALO_BUNDLE_SKIP_WEIGHTS_CHECKSUM, err,
			                                      sizeof err);
			CHECK(b, "skip-weights flag still refused: %s", err);
			halo_bundle_close(b);
		} else {
			expect_refusal(file, size, HALO_BUNDLE_SKIP_WEIGHTS_CHECKSUM, names[s], "checksum mismatch",
			               names[s]);
		}
		file[at] ^= 0x01;
	}
}

static void test_header_refusals(uint8_t *file, size_t size)
{
	file[0] = 'X';
	expect_refusal(file, size, 0, "magic", "wrong magic", NULL);
	file[0] = 'H';
	file[HALO_BH_VERSION] = 2;
	reseal(file);
	expect_refusal(file, size, 0, "version", "version 2", "version 1");
	file[HALO_BH_VERSION] = 1;
	file[HALO_BH_FLAGS] = 1;
	reseal(file);
	expect_refusal(file, size, 0, "flags", "flags", NULL);
	file[HALO_BH_FLAGS] = 0;
	file[HALO_BH_SECTION_COUNT + 1] = 0x10; /* 4100 sections */
	reseal_header(file);
	expect_refusal(file, size, 0, "section count", "sections", NULL);
	file[HALO_BH_SECTION_COUNT + 1] = 0;
	reseal(file);
}

/* Edits one u64 field of entry i, reseals, expects a refusal, restores. */
static void expect_entry_refusal(uint8_t *file, size_t size, int i, int field, uint64_t value, const char *frag1,
                                 const char *frag2)
{
	uint8_t *p = entry_of(file, i) + field;
	uint64_t old = rd64(p);
	wr64(p, value);
	reseal(file);
	expect_refusal(file, size, 0, frag1, frag1, frag2);
	wr64(p, old);
	reseal(file);
}

static void test_table_refusals(uint8_t *file, size_t size)
{
	uint64_t spirv_off = rd64(entry_of(file, 1) + HALO_BE_OFFSET);
	uint64_t man_off = rd64(entry_of(file, 0) + HALO_BE_OFFSET);
	expect_entry_refusal(file, size, 2, HALO_BE_SIZE, size, "out of bounds", "weights");
	expect_entry_refusal(file, size, 2, HALO_BE_SIZE, UINT64_MAX - 100, "out of bounds", "weights");
	expect_entry_refusal(file, size, 1, HALO_BE_OFFSET, man_off, "overlaps", "spirv");
	expect_entry_refusal(file, size, 0, HALO_BE_OFFSET, 0, "overlaps the section table", "manifest");
	expect_entry_refusal(file, size, 1, HALO_BE_OFFSET, spirv_off + 8, "not a multiple of its alignment", "spirv");
	uint8_t *align = entry_of(file, 1) + HALO_BE_ALIGN;
	align[0] = 48;
	reseal(file);
	expect_refusal(file, size, 0, "alignment", "power of two", "spirv");
	align[0] = 0;
	align[1] = 1; /* back to 256 */
	reseal(file);
	uint8_t saved[HALO_BUNDLE_NAME_MAX + 1];
	uint8_t *name = entry_of(file, 1) + HALO_BE_NAME;
	memcpy(saved, name, sizeof saved);
	memset(name, 0, sizeof saved);
	memcpy(name, "manifest", 8);
	reseal(file);
	expect_refusal(file, size, 0, "duplicate", "duplicate section name", "manifest");
	memset(name, 0, sizeof saved);
	memcpy(name, "sp rv", 5);
	reseal(file);
	expect_refusal(file, size, 0, "name charset", "outside", NULL);
	memset(name, 'a', sizeof saved);
	reseal(file);
	expect_refusal(file, size, 0, "unterminated name", "name is not", NULL);
	memcpy(name, saved, sizeof saved);
	reseal(file);
	char err[512];
	halo_bundle *b = halo_bundle_open_mem(file, size, "x", 0, err, sizeof err);
	CHECK(b, "restored file refused: %s", err);
	halo_bundle_close(b);
}

static void test_refusals(void)
{
	char err[512];
	const char *path = path_of("r.halo");
	CHECK(write_sample(path, err, sizeof err) == 0, "%s", err);
	size_t size = 0;
	uint8_t *file = read_all(path, &size);
	if (!file)
		return;
	test_truncation(file, size);
	test_flips(file, size);
	test_header_refusals(file, size);
	test_table_refusals(file, size);
	free(file);
}

static void remove_dir(void)
{
	const char *names[] = {"a.halo", "d1.halo", "d2.halo", "w.halo", "empty.halo", "t.halo", "r.halo"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		unlink(path_of(names[i]));
	rmdir(dir);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	for (size_t i = 0; i < sizeof spirv; i++)
		spirv[i] = (uint8_t)(i * 7 + 3);
	test_round_trip();
	test_determinism();
	test_writer_errors();
	test_long_stream();
	test_file_refusals();
	test_refusals();
	remove_dir();
	if (failures)
		fprintf(stderr, "%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
