/* halo's per-user cache directory, which the tuning DB (runtime/tuning_db.h)
 * and the kernel cache (codegen/kernel_cache.h) live under:
 * $XDG_CACHE_HOME/halo when XDG_CACHE_HOME is absolute (the XDG spec: a
 * relative one is invalid and ignored), else $HOME/.cache/halo. */
#ifndef HALO_RUNTIME_CACHE_DIR_H
#define HALO_RUNTIME_CACHE_DIR_H

#include <stdbool.h>
#include <stddef.h>

/* Writes the directory into out (outlen bytes); its length (out truncated
 * when it is >= outlen), or -1 when neither variable names one. */
int halo_cache_dir(char *out, size_t outlen);

/* mkdir -p of dir (mode 0755); false with errno set when a part cannot be
 * made. A part that exists, of any kind, counts as made. */
bool halo_make_dirs(const char *dir);

#endif
