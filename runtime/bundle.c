/* Bundle reader: maps a bundle and refuses it unless every byte checks out
 * (header and table checksums, bounds, order, alignment, zero padding,
 * section checksums), so later code can trust offsets and sizes. */
#include "runtime/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

typedef struct {
	char name[HALO_BUNDLE_NAME_MAX + 1];
	uint64_t offset, size, xxh64;
} section;

struct halo_bundle {
	const uint8_t *base;
	size_t size;
	bool mapped;
	size_t n;
	section *sec;
	char label[256];
};

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Every refusal goes through here so each message names the file. */
static bool fail(const halo_bundle *b, char *err, size_t errlen, const char *fmt, ...)
{
	if (!errlen)
		return false;
	int k = snprintf(err, errlen, "bundle %s: ", b->label);
	if (k >= 0 && (size_t)k < errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
		va_end(ap);
	}
	return false;
}

static bool check_header(const halo_bundle *b, char *err, size_t errlen)
{
	const uint8_t *h = b->base;
	if (b->size < HALO_BUNDLE_HEADER_SIZE)
		return fail(b, err, errlen, "too short: %zu bytes, a header needs %u", b->size,
		            HALO_BUNDLE_HEADER_SIZE);
	if (memcmp(h + HALO_BH_MAGIC, HALO_BUNDLE_MAGIC, HALO_BUNDLE_MAGIC_LEN) != 0)
		return fail(b, err, errlen, "wrong magic: not a halo bundle (expected \"%s\")", HALO_BUNDLE_MAGIC);
	uint32_t version = get32(h + HALO_BH_VERSION);
	if (version != HALO_BUNDLE_VERSION)
		return fail(b, err, errlen, "format version %u, this reader reads version %u only", version,
		            HALO_BUNDLE_VERSION);
	uint64_t stored = get64(h + HALO_BH_HEADER_XXH64);
	uint64_t actual = XXH64(h, HALO_BH_HEADER_XXH64, HALO_BUNDLE_XXH64_SEED);
	if (stored != actual)
		return fail(b, err, errlen, "header checksum mismatch (stored %016llx, computed %016llx)",
		            (unsigned long long)stored, (unsigned long long)actual);
	if (get32(h + HALO_BH_HEADER_SIZE) != HALO_BUNDLE_HEADER_SIZE)
		return fail(b, err, errlen, "header size %u, version %u has %u", get32(h + HALO_BH_HEADER_SIZE),
		            HALO_BUNDLE_VERSION, HALO_BUNDLE_HEADER_SIZE);
	if (get32(h + HALO_BH_FLAGS) != 0 || !all_zero(h + HALO_BH_RESERVED, HALO_BH_HEADER_XXH64 - HALO_BH_RESERVED))
		return fail(b, err, errlen, "header flags or reserved bytes are not zero");
	uint64_t file_size = get64(h + HALO_BH_FILE_SIZE);
	if (file_size > b->size)
		return fail(b, err, errlen, "truncated: %zu bytes, the header says %llu", b->size,
		            (unsigned long long)file_size);
	if (file_size < b->size)
		return fail(b, err, errlen, "%zu bytes, the header says %llu: trailing bytes", b->size,
		            (unsigned long long)file_size);
	uint32_t n = get32(h + HALO_BH_SECTION_COUNT);
	if (n > HALO_BUNDLE_MAX_SECTIONS)
		return fail(b, err, errlen, "%u sections, at most %u are allowed", n, HALO_BUNDLE_MAX_SECTIONS);
	if (HALO_BUNDLE_HEADER_SIZE + (uint64_t)n * HALO_BUNDLE_ENTRY_SIZE > b->size)
		return fail(b, err, errlen, "section table of %u entries runs past the end of the file (%zu bytes)",
		            n, b->size);
	return true;
}

static bool name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '.' || c == '-';
}

/* Copies entry i's name into out; the field must hold 1..NAME_MAX allowed
 * characters followed only by NULs. */
static bool read_name(const halo_bundle *b, const uint8_t *e, size_t i, char *out, char *err, size_t errlen)
{
	size_t len = 0;
	while (len <= HALO_BUNDLE_NAME_MAX && e[HALO_BE_NAME + len])
		len++;
	if (len == 0 || len > HALO_BUNDLE_NAME_MAX ||
	    !all_zero(e + HALO_BE_NAME + len, HALO_BUNDLE_NAME_MAX + 1 - len))
		return fail(b, err, errlen, "section %zu: name is not 1..%u characters padded with NULs", i,
		            HALO_BUNDLE_NAME_MAX);
	for (size_t k = 0; k < len; k++)
		if (!name_char_ok((char)e[HALO_BE_NAME + k]))
			return fail(b, err, errlen, "section %zu: name has a byte 0x%02x outside [A-Za-z0-9_.-]", i,
			            e[HALO_BE_NAME + k]);
	memcpy(out, e + HALO_BE_NAME, len);
	out[len] = '\0';
	return true;
}

/* One entry, against the file and against the entry before it (sections
 * are stored in increasing offset order, so that alone rules out overlaps). */
static bool read_entry(halo_bundle *b, size_t i, uint64_t prev_end, char *err, size_t errlen)
{
	const uint8_t *e = b->base + HALO_BUNDLE_HEADER_SIZE + i * HALO_BUNDLE_ENTRY_SIZE;
	section *s = &b->sec[i];
	if (!read_name(b, e, i, s->name, err, errlen))
		return false;
	s->offset = get64(e + HALO_BE_OFFSET);
	s->size = get64(e + HALO_BE_SIZE);
	s->xxh64 = get64(e + HALO_BE_XXH64);
	uint32_t align = get32(e + HALO_BE_ALIGN);
	if (get32(e + HALO_BE_FLAGS) != 0 || !all_zero(e + HALO_BE_RESERVED, HALO_BUNDLE_ENTRY_SIZE - HALO_BE_RESERVED))
		return fail(b, err, errlen, "section '%s': flags or reserved bytes are not zero", s->name);
	if (align == 0 || align > HALO_BUNDLE_ALIGN_MAX || (align & (align - 1)))
		return fail(b, err, errlen, "section '%s': alignment %u is not a power of two up to %u", s->name,
		            align, HALO_BUNDLE_ALIGN_MAX);
	if (s->offset % align)
		return fail(b, err, errlen, "section '%s': offset %llu is not a multiple of its alignment %u",
		            s->name, (unsigned long long)s->offset, align);
	if (s->offset > b->size || s->size > b->size - s->offset)
		return fail(b, err, errlen, "section '%s' [%llu, +%llu) is out of bounds (file is %zu bytes)",
		            s->name, (unsigned long long)s->offset, (unsigned long long)s->size, b->size);
	if (s->offset < prev_end) {
		if (i == 0)
			return fail(b, err, errlen, "section '%s' at %llu overlaps the section table (ends at %llu)",
			            s->name, (unsigned long long)s->offset, (unsigned long long)prev_end);
		return fail(b, err, errlen, "section '%s' at %llu overlaps section '%s' (ends at %llu) or is out of order",
		            s->name, (unsigned long long)s->offset, b->sec[i - 1].name,
		            (unsigned long long)prev_end);
	}
	for (size_t k = 0; k < i; k++)
		if (strcmp(b->sec[k].name, s->name) == 0)
			return fail(b, err, errlen, "duplicate section name '%s' (entries %zu and %zu)", s->name, k, i);
	/* Padding is part of the format (zeros), so a flipped byte anywhere is caught. */
	if (!all_zero(b->base + prev_end, s->offset - prev_end))
		return fail(b, err, errlen, "nonzero padding before section '%s'", s->name);
	return true;
}

static bool check_table(halo_bundle *b, char *err, size_t errlen)
{
	size_t n = get32(b->base + HALO_BH_SECTION_COUNT);
	uint64_t table_end = HALO_BUNDLE_HEADER_SIZE + (uint64_t)n * HALO_BUNDLE_ENTRY_SIZE;
	uint64_t stored = get64(b->base + HALO_BH_TABLE_XXH64);
	uint64_t actual = XXH64(b->base + HALO_BUNDLE_HEADER_SIZE, n * HALO_BUNDLE_ENTRY_SIZE, HALO_BUNDLE_XXH64_SEED);
	if (stored != actual)
		return fail(b, err, errlen, "section table checksum mismatch (stored %016llx, computed %016llx)",
		            (unsigned long long)stored, (unsigned long long)actual);
	b->sec = calloc(n ? n : 1, sizeof *b->sec);
	if (!b->sec)
		return fail(b, err, errlen, "out of memory for %zu section entries", n);
	b->n = n;
	uint64_t end = table_end;
	for (size_t i = 0; i < n; i++) {
		if (!read_entry(b, i, end, err, errlen))
			return false;
		end = b->sec[i].offset + b->sec[i].size;
	}
	if (!all_zero(b->base + end, b->size - end))
		return fail(b, err, errlen, "nonzero bytes after the last section");
	return true;
}

static bool is_weights(const char *name)
{
	return strcmp(name, "weights") == 0 || strncmp(name, "weights.", 8) == 0;
}

static bool check_sections(const halo_bundle *b, unsigned flags, char *err, size_t errlen)
{
	for (size_t i = 0; i < b->n; i++) {
		const section *s = &b->sec[i];
		if ((flags & HALO_BUNDLE_SKIP_WEIGHTS_CHECKSUM) && is_weights(s->name))
			continue;
		uint64_t actual = XXH64(b->base + s->offset, s->size, HALO_BUNDLE_XXH64_SEED);
		if (actual != s->xxh64)
			return fail(b, err, errlen, "checksum mismatch in section '%s' (stored %016llx, computed %016llx)",
			            s->name, (unsigned long long)s->xxh64, (unsigned long long)actual);
	}
	return true;
}

static halo_bundle *new_bundle(const char *label)
{
	halo_bundle *b = calloc(1, sizeof *b);
	if (b)
		snprintf(b->label, sizeof b->label, "%s", label ? label : "(memory)");
	return b;
}

static halo_bundle *validate(halo_bundle *b, unsigned flags, char *err, size_t errlen)
{
	if (check_header(b, err, errlen) && check_table(b, err, errlen) && check_sections(b, flags, err, errlen))
		return b;
	halo_bundle_close(b);
	return NULL;
}

halo_bundle *halo_bundle_open_mem(const void *data, size_t size, const char *label, unsigned flags,
                                  char *err, size_t errlen)
{
	halo_bundle *b = new_bundle(label);
	if (!b) {
		snprintf(err, errlen, "bundle %s: out of memory", label ? label : "(memory)");
		return NULL;
	}
	b->base = data;
	b->size = size;
	return validate(b, flags, err, errlen);
}

/* Maps the file; b->base stays NULL for an empty file (mmap refuses length 0). */
static bool map_file(halo_bundle *b, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail(b, err, errlen, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(b, err, errlen, "not a regular file");
	}
	b->size = (size_t)st.st_size;
	if (b->size >= HALO_BUNDLE_HEADER_SIZE) {
		void *p = mmap(NULL, b->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED) {
			int e = errno;
			close(fd);
			return fail(b, err, errlen, "mmap of %zu bytes failed: %s", b->size, strerror(e));
		}
		b->base = p;
		b->mapped = true;
	}
	close(fd);
	return true;
}

halo_bundle *halo_bundle_open_flags(const char *path, unsigned flags, char *err, size_t errlen)
{
	halo_bundle *b = new_bundle(path);
	if (!b) {
		snprintf(err, errlen, "bundle %s: out of memory", path);
		return NULL;
	}
	if (!map_file(b, path, err, errlen)) {
		halo_bundle_close(b);
		return NULL;
	}
	return validate(b, flags, err, errlen);
}

halo_bundle *halo_bundle_open(const char *path, char *err, size_t errlen)
{
	return halo_bundle_open_flags(path, 0, err, errlen);
}

const void *halo_bundle_section(const halo_bundle *b, const char *name, size_t *size)
{
	for (size_t i = 0; i < b->n; i++) {
		if (strcmp(b->sec[i].name, name) == 0) {
			*size = (size_t)b->sec[i].size;
			return b->base + b->sec[i].offset;
		}
	}
	*size = 0;
	return NULL;
}

void halo_bundle_code_sizes(const halo_bundle *b, uint64_t size[HALO_TARGET_COUNT])
{
	for (int t = 0; t < HALO_TARGET_COUNT; t++) {
		size_t n;
		halo_bundle_section(b, halo_targets[t].section, &n);
		size[t] = n;
	}
}

size_t halo_bundle_section_count(const halo_bundle *b)
{
	return b->n;
}

const char *halo_bundle_section_name(const halo_bundle *b, size_t i)
{
	return i < b->n ? b->sec[i].name : NULL;
}

void halo_bundle_close(halo_bundle *b)
{
	if (!b)
		return;
	if (b->mapped)
		munmap((void *)b->base, b->size);
	free(b->sec);
	free(b);
}
