/* The kernel cache (codegen/kernel_cache.h): a stored entry comes back byte
 * for byte; a key differing in any part (compiler, options, source, or
 * where one part ends and the next begins) misses; an entry damaged in any
 * way (truncated, a payload or header byte changed, bytes appended) misses
 * and is rewritten by the next store; the directory the environment names
 * (HALO_KERNEL_CACHE, "off", XDG_CACHE_HOME, HOME); a directory that cannot
 * be made gives no cache. Then through the compilers: a GLSL module and a
 * HIP twin (with clang-19) served from the cache equal the ones compiled
 * without it, and a damaged entry is compiled again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codegen/glsl_compile.h"
#include "codegen/hip_compile.h"
#include "codegen/kernel_cache.h"
#include "tests/check.h"

static char root[64];

/* The one entry file in dir (the test stores one at a time there). */
static bool only_entry(const char *dir, char *path, size_t len)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "ls %s", dir);
	FILE *p = popen(cmd, "r");
	char name[128];
	int n = 0;
	while (p && fgets(name, sizeof name, p)) {
		name[strcspn(name, "\n")] = 0;
		snprintf(path, len, "%s/%s", dir, name);
		n++;
	}
	if (p)
		pclose(p);
	return n == 1;
}

static bool hit_equals(const cg_kernel_cache *c, const cg_kernel_key *k, const void *want, size_t n)
{
	uint8_t *got = NULL;
	size_t size = 0;
	bool ok = cg_kernel_cache_get(c, k, &got, &size) && size == n && memcmp(got, want, n) == 0 && got[n] == 0;
	free(got);
	return ok;
}

static bool misses(const cg_kernel_cache *c, const cg_kernel_key *k)
{
	uint8_t *got = (uint8_t *)"not touched";
	size_t size;
	return !cg_kernel_cache_get(c, k, &got, &size) && got == NULL;
}

/* Rewrites byte `at` of file path (or truncates it to `at` bytes, or
 * appends one byte) to damage the entry. */
typedef enum { FLIP, TRUNCATE, APPEND } damage;

static void damage_entry(const char *path, long at, damage how)
{
	FILE *f = fopen(path, how == APPEND ? "ab" : "r+b");
	if (!f)
		return;
	if (how == FLIP) {
		fseek(f, at, SEEK_SET);
		int c = fgetc(f);
		fseek(f, at, SEEK_SET);
		fputc(c ^ 0x20, f);
	} else if (how == APPEND) {
		fputc('x', f);
	}
	fclose(f);
	if (how == TRUNCATE && truncate(path, at) != 0)
		CHECK(false, "truncate %s", path);
}

static void test_entries(void)
{
	char dir[128];
	snprintf(dir, sizeof dir, "%s/a/b/entries", root);
	cg_kernel_cache *c = cg_kernel_cache_open(dir);
	CHECK(c != NULL, "open %s (parents made)", dir);
	if (!c)
		return;
	const uint8_t data[] = "\x03\x02\x23\x07 some kernel bytes";
	const cg_kernel_key k = {"clang 19", "-O3", "source text"};
	CHECK(misses(c, &k), "an empty cache hits");
	cg_kernel_cache_put(c, &k, data, sizeof data);
	CHECK(hit_equals(c, &k, data, sizeof data), "a stored entry does not come back");

	const cg_kernel_key others[] = {
	    {"clang 18", "-O3", "source text"},	   {"clang 19", "-O2", "source text"},
	    {"clang 19", "-O3", "source text "},   {"clang 19", "-O3source", " text"},
	    {"clang 19-O3", "", "source text"},	   {"clang 19", "-O3", NULL},
	};
	for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
		CHECK(misses(c, &others[i]), "key %zu hits another key's entry", i);

	char path[256];
	CHECK(only_entry(dir, path, sizeof path), "one store, not one file in %s", dir);
	struct stat st;
	long size = stat(path, &st) == 0 ? (long)st.st_size : 0;
	const struct {
		long at;
		damage how;
		const char *what;
	} hurt[] = {
	    {size - 1, FLIP, "a payload byte"}, {0, FLIP, "the magic"},	     {12, FLIP, "the key hash"},
	    {24, FLIP, "the size"},		{36, FLIP, "the payload hash"}, {size - 1, TRUNCATE, "truncated"},
	    {20, TRUNCATE, "half a header"},	{0, APPEND, "a byte appended"},
	};
	for (size_t i = 0; i < sizeof hurt / sizeof hurt[0]; i++) {
		damage_entry(path, hurt[i].at, hurt[i].how);
		CHECK(misses(c, &k), "a damaged entry (%s) hits", hurt[i].what);
		cg_kernel_cache_put(c, &k, data, sizeof data);
		CHECK(hit_equals(c, &k, data, sizeof data), "a store after damage (%s) does not come back",
		      hurt[i].what);
	}
	CHECK(only_entry(dir, path, sizeof path), "stores left other files (temporaries) in %s", dir);

	/* NULL: a miss that touches nothing, a store that does nothing */
	CHECK(misses(NULL, &k), "the NULL cache hits");
	cg_kernel_cache_put(NULL, &k, data, sizeof data);
	cg_kernel_cache_close(c);
	cg_kernel_cache_close(NULL);
}

/* The directory the environment names: probes it with one store. */
static bool default_is(const char *want_dir)
{
	cg_kernel_cache *c = cg_kernel_cache_open_default();
	if (!c || !want_dir) {
		cg_kernel_cache_close(c);
		return !c && !want_dir;
	}
	const cg_kernel_key k = {"probe", "", want_dir};
	cg_kernel_cache_put(c, &k, (const uint8_t *)"x", 1);
	cg_kernel_cache_close(c);
	c = cg_kernel_cache_open(want_dir);
	bool ok = c && hit_equals(c, &k, "x", 1);
	cg_kernel_cache_close(c);
	return ok;
}

static void test_default(void)
{
	char env[128], xdg[128], home[128], want[160];
	snprintf(env, sizeof env, "%s/env", root);
	snprintf(xdg, sizeof xdg, "%s/xdg", root);
	snprintf(home, sizeof home, "%s/home", root);
	setenv("HALO_KERNEL_CACHE", env, 1);
	setenv("XDG_CACHE_HOME", xdg, 1);
	CHECK(default_is(env), "HALO_KERNEL_CACHE is not the cache");
	setenv("HALO_KERNEL_CACHE", "off", 1);
	CHECK(default_is(NULL), "HALO_KERNEL_CACHE=off gave a cache");
	unsetenv("HALO_KERNEL_CACHE");
	snprintf(want, sizeof want, "%s/halo/kernels", xdg);
	CHECK(default_is(want), "not under XDG_CACHE_HOME");
	setenv("XDG_CACHE_HOME", "relative/dir", 1); /* invalid by the XDG spec: ignored */
	setenv("HOME", home, 1);
	snprintf(want, sizeof want, "%s/.cache/halo/kernels", home);
	CHECK(default_is(want), "not under HOME with a relative XDG_CACHE_HOME");
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	CHECK(default_is(NULL), "a cache without HOME or XDG_CACHE_HOME");

	/* a directory that cannot be made: under a regular file */
	char file[128], under[160];
	snprintf(file, sizeof file, "%s/file", root);
	FILE *f = fopen(file, "w");
	if (f)
		fclose(f);
	snprintf(under, sizeof under, "%s/kernels", file);
	CHECK(cg_kernel_cache_open(under) == NULL, "a cache under a regular file");
	CHECK(cg_kernel_cache_open(file) == NULL, "a regular file as the cache");
	setenv("HALO_KERNEL_CACHE", under, 1);
	CHECK(default_is(NULL), "HALO_KERNEL_CACHE under a regular file gave a cache");
	unsetenv("HALO_KERNEL_CACHE");
}

static void test_glsl(void)
{
	static const char src[] = "#version 450\nlayout(local_size_x = 64) in;\n"
				  "layout(std430, binding = 0) buffer B { float v[]; };\n"
				  "void main() { v[gl_GlobalInvocationID.x] *= 2.0; }\n";
	char dir[128], err[1024], path[256];
	snprintf(dir, sizeof dir, "%s/glsl", root);
	cg_kernel_cache *c = cg_kernel_cache_open(dir);
	glsl_compiler *plain = glsl_compiler_new(), *cached = glsl_compiler_new();
	CHECK(c && plain && cached, "cache or shaderc did not start");
	if (!c || !plain || !cached)
		goto out;
	glsl_compiler_use_cache(cached, c);
	glsl_spirv want = {0}, got = {0};
	CHECK(glsl_compile(plain, src, "t.comp", true, &want, err, sizeof err), "%s", err);
	for (int round = 0; round < 3; round++) {
		/* 0: compiled and stored; 1: a hit; 2: a damaged entry, compiled again */
		if (round == 2 && only_entry(dir, path, sizeof path))
			damage_entry(path, 50, FLIP);
		CHECK(glsl_compile(cached, src, "t.comp", true, &got, err, sizeof err), "round %d: %s", round, err);
		CHECK(got.n_words == want.n_words && memcmp(got.words, want.words, want.n_words * 4) == 0,
		      "round %d: SPIR-V through the cache differs from a compile without it", round);
		glsl_spirv_free(&got);
		CHECK(only_entry(dir, path, sizeof path), "round %d: not one entry", round);
	}
	glsl_spirv_free(&want);
out:
	glsl_compiler_free(plain);
	glsl_compiler_free(cached);
	cg_kernel_cache_close(c);
}

static void test_hip(void)
{
	if (system("clang-19 --version >/dev/null 2>&1") != 0) {
		printf("skip: clang-19 is not installed (no HIP check)\n");
		return;
	}
	/* -nogpuinc: no __global__ macro, no threadIdx */
	static const char src[] = "extern \"C\" __attribute__((global)) void halo_main(float *v) { v[0] *= 2.0f; }\n";
	char dir[128], err[2048], path[256];
	for (int arch = CG_ARCH_GFX1151; arch <= CG_ARCH_SM90; arch++) {
		snprintf(dir, sizeof dir, "%s/hip%d", root, arch);
		cg_kernel_cache *c = cg_kernel_cache_open(dir);
		uint8_t *want = NULL, *got = NULL;
		size_t nw = 0, ng = 0;
		CHECK(cg_hip_compile(arch, src, "t", NULL, &want, &nw, err, sizeof err), "%s", err);
		for (int round = 0; want && round < 2; round++) {
			CHECK(cg_hip_compile(arch, src, "t", c, &got, &ng, err, sizeof err), "%s", err);
			CHECK(got && ng == nw && memcmp(got, want, nw) == 0,
			      "arch %d round %d: the code through the cache differs from a compile without it", arch,
			      round);
			free(got);
			got = NULL;
			CHECK(only_entry(dir, path, sizeof path), "arch %d round %d: not one entry", arch, round);
		}
		free(want);
		cg_kernel_cache_close(c);
	}
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/halo-kcache-XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_entries();
	test_glsl();
	test_hip();
	test_default(); /* last: it changes HOME */
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", root);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", root);
	if (check_failures)
		return 1;
	printf("kernel cache: ok\n");
	return 0;
}
