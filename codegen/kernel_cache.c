/* The kernel cache (kernel_cache.h). */
#include "codegen/kernel_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "runtime/cache_dir.h"

struct cg_kernel_cache {
	char dir[4096];
};

enum { HEADER = 40 }; /* magic 8, key hash 16, payload size 8, payload xxh3-64 8 */
static const char MAGIC[8] = "HALOKC01";

/* mkdir -p; true when dir exists as a directory afterwards. */
static bool make_dirs(const char *dir)
{
	struct stat st;
	return halo_make_dirs(dir) && stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

cg_kernel_cache *cg_kernel_cache_open(const char *dir)
{
	if (!dir || !dir[0] || strlen(dir) + 40 >= sizeof(((cg_kernel_cache *)0)->dir) || !make_dirs(dir))
		return NULL;
	cg_kernel_cache *c = malloc(sizeof *c);
	if (c)
		snprintf(c->dir, sizeof c->dir, "%s", dir);
	return c;
}

cg_kernel_cache *cg_kernel_cache_open_default(void)
{
	const char *env = getenv("HALO_KERNEL_CACHE");
	char dir[4096];
	if (env && env[0])
		return strcmp(env, "off") == 0 ? NULL : cg_kernel_cache_open(env);
	int n = halo_cache_dir(dir, sizeof dir);
	if (n < 0 || (size_t)n + sizeof "/kernels" > sizeof dir)
		return NULL;
	strcat(dir, "/kernels");
	return cg_kernel_cache_open(dir);
}

void cg_kernel_cache_close(cg_kernel_cache *c)
{
	free(c);
}

/* Each part with its length, so that no two keys hash the same bytes.
 * False when xxhash has no memory for its state: no key, so no entry is
 * read or written (a fallback hash would give every key the same entry). */
static bool key_hash(const cg_kernel_key *k, XXH128_hash_t *h)
{
	XXH3_state_t *st = XXH3_createState();
	bool ok = st && XXH3_128bits_reset(st) == XXH_OK;
	const char *parts[] = {k->compiler, k->options, k->source};
	for (size_t i = 0; ok && i < sizeof parts / sizeof parts[0]; i++) {
		uint64_t n = parts[i] ? strlen(parts[i]) : 0;
		ok = XXH3_128bits_update(st, &n, sizeof n) == XXH_OK &&
		     (!n || XXH3_128bits_update(st, parts[i], (size_t)n) == XXH_OK);
	}
	if (ok)
		*h = XXH3_128bits_digest(st);
	XXH3_freeState(st);
	return ok;
}

static void entry_path(const cg_kernel_cache *c, XXH128_hash_t h, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%016llx%016llx", c->dir, (unsigned long long)h.high64, (unsigned long long)h.low64);
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void make_header(uint8_t hdr[HEADER], XXH128_hash_t h, const uint8_t *data, size_t size)
{
	memcpy(hdr, MAGIC, 8);
	put_u64(hdr + 8, h.high64);
	put_u64(hdr + 16, h.low64);
	put_u64(hdr + 24, size);
	put_u64(hdr + 32, XXH3_64bits(data, size));
}

bool cg_kernel_cache_get(const cg_kernel_cache *c, const cg_kernel_key *k, uint8_t **out, size_t *size)
{
	*out = NULL;
	XXH128_hash_t h;
	if (!c || !key_hash(k, &h))
		return false;
	char path[4200];
	entry_path(c, h, path, sizeof path);
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	uint8_t hdr[HEADER];
	uint8_t *data = NULL;
	uint64_t n = 0;
	bool ok = fread(hdr, 1, HEADER, f) == HEADER && memcmp(hdr, MAGIC, 8) == 0 && get_u64(hdr + 8) == h.high64 &&
		  get_u64(hdr + 16) == h.low64 && (n = get_u64(hdr + 24)) > 0 && n < ((uint64_t)1 << 32) &&
		  (data = malloc((size_t)n + 1)) && fread(data, 1, (size_t)n, f) == n && fgetc(f) == EOF &&
		  XXH3_64bits(data, (size_t)n) == get_u64(hdr + 32);
	fclose(f);
	if (!ok) {
		free(data);
		return false;
	}
	data[n] = 0;
	*out = data;
	*size = (size_t)n;
	return true;
}

void cg_kernel_cache_put(const cg_kernel_cache *c, const cg_kernel_key *k, const uint8_t *data, size_t size)
{
	XXH128_hash_t h;
	if (!c || !size || !key_hash(k, &h))
		return;
	char path[4200], tmp[4200];
	entry_path(c, h, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", c->dir);
	int fd = mkstemp(tmp);
	if (fd < 0)
		return;
	FILE *f = fdopen(fd, "wb");
	if (!f) {
		close(fd);
		unlink(tmp);
		return;
	}
	uint8_t hdr[HEADER];
	make_header(hdr, h, data, size);
	bool ok = fwrite(hdr, 1, HEADER, f) == HEADER && fwrite(data, 1, size, f) == size;
	ok = fclose(f) == 0 && ok;
	/* mkstemp makes it 0600; an entry is as readable as the directory. */
	if (!ok || chmod(tmp, 0644) != 0 || rename(tmp, path) != 0)
		unlink(tmp);
}
