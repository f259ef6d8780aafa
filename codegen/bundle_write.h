/* Bundle writer (format: docs/bundle.md, constants: runtime/bundle.h).
 *
 * Collect named sections, then write them in one go. Sections are laid out in
 * the order they were added; the same sections always give the same bytes.
 * Large sections (weights) can be streamed through a fill callback so their
 * bytes are never held twice in memory. The file is written to
 * "<path>.tmp.<pid>" and renamed over <path> only once complete; on any error
 * the temporary file is removed and <path> is left as it was. */
#ifndef HALO_CODEGEN_BUNDLE_WRITE_H
#define HALO_CODEGEN_BUNDLE_WRITE_H

#include <stddef.h>
#include <stdint.h>

typedef struct halo_bundle_writer halo_bundle_writer;

/* Produces bytes [offset, offset + len) of a streamed section into buf.
 * Called with increasing offsets that cover the section exactly once.
 * Returns 0 on success; otherwise writes a message into err and returns
 * nonzero, which abandons the bundle. */
typedef int (*halo_bundle_fill_fn)(void *ctx, uint64_t offset, void *buf, size_t len, char *err,
                                   size_t errlen);

/* NULL when out of memory. Free with halo_bundle_writer_free(). */
halo_bundle_writer *halo_bundle_writer_new(void);
void halo_bundle_writer_free(halo_bundle_writer *w);

/* Adds a section whose bytes are `data` (borrowed: it must stay valid until
 * halo_bundle_writer_write returns). `align` is a power of two up to
 * HALO_BUNDLE_ALIGN_MAX, or 0 for the default: HALO_BUNDLE_ALIGN_WEIGHTS for
 * "weights" and "weights.*", HALO_BUNDLE_ALIGN_DEFAULT otherwise.
 * Returns 0, or -1 with a message (bad or duplicate name, bad alignment,
 * too many sections, out of memory). */
int halo_bundle_writer_add(halo_bundle_writer *w, const char *name, const void *data, size_t size,
                           uint32_t align, char *err, size_t errlen);
/* Adds a section of `size` bytes produced by `fill(ctx, ...)` at write time
 * (ctx is borrowed likewise). Same rules and result as halo_bundle_writer_add. */
int halo_bundle_writer_add_stream(halo_bundle_writer *w, const char *name, uint64_t size, uint32_t align,
                                  halo_bundle_fill_fn fill, void *ctx, char *err, size_t errlen);

/* Writes the bundle to `path` (temporary file, then rename). Returns 0, or -1
 * with a message naming the file and what failed. The writer can be written
 * again or freed afterwards. */
int halo_bundle_writer_write(halo_bundle_writer *w, const char *path, char *err, size_t errlen);

#endif
