/* A directory of compiled kernels (SPIR-V, gfx1151 code objects, PTX) keyed
 * by everything that determines their bytes: the compiler's identity, its
 * options and the kernel's full source. glslang and clang take most of a
 * compile's time, and a model recompiled with other weights, another
 * quantization or a draft vocabulary instantiates mostly the same kernels
 * (Mesa's shader cache and ccache do the same for the same reason).
 *
 * Where: $HALO_KERNEL_CACHE (a directory, or "off": none), else
 * $XDG_CACHE_HOME/halo/kernels (absolute only, as the XDG spec says), else
 * $HOME/.cache/halo/kernels. Nothing is ever evicted; removing the directory
 * clears it.
 *
 * An entry is a file named by the 128-bit xxh3 of its key, holding a
 * header (magic, the key's hash again, the payload's size and xxh3-64) and
 * the payload; an entry that fails any check is a miss and is rewritten.
 * Entries are written to a temporary file and renamed, so processes that
 * compile at once never read half an entry. The cache only saves time: a
 * directory that cannot be made or written means compiling as without one,
 * so a bundle's bytes never depend on it (the compilers are deterministic:
 * tests/runtime/test_compile_determinism.c and tests/tools/gpu_targets_test.sh
 * compile with it off). */
#ifndef HALO_CODEGEN_KERNEL_CACHE_H
#define HALO_CODEGEN_KERNEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cg_kernel_cache cg_kernel_cache;

/* The cache the environment names (above); NULL when it is off, no
 * directory can be named, or it cannot be created. Free with
 * cg_kernel_cache_close. */
cg_kernel_cache *cg_kernel_cache_open_default(void);
/* The cache in dir (created when missing); NULL when it cannot be. */
cg_kernel_cache *cg_kernel_cache_open(const char *dir);
void cg_kernel_cache_close(cg_kernel_cache *c); /* NULL ok */

/* A key: the compiler's identity (its version and fixed flags), the
 * options of this compile, and the source. NULL-safe: a NULL cache misses
 * and stores nothing. */
typedef struct {
	const char *compiler, *options, *source;
} cg_kernel_key;

/* On a hit, *out (malloc'd, caller frees) holds *size bytes and a 0 after
 * them (PTX is text). */
bool cg_kernel_cache_get(const cg_kernel_cache *c, const cg_kernel_key *k, uint8_t **out, size_t *size);
/* Stores data under k; failures are silent (the cache only saves time). */
void cg_kernel_cache_put(const cg_kernel_cache *c, const cg_kernel_key *k, const uint8_t *data, size_t size);

#endif
