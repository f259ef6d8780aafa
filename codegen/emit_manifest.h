/* Serialises a manifest (runtime/manifest.h) as the JSON of docs/manifest.md.
 * Deterministic: keys in a fixed order, numbers printed the same way on every
 * run. Returns a malloc'd NUL-terminated string (caller frees), or NULL when
 * out of memory. */
#ifndef HALO_CODEGEN_EMIT_MANIFEST_H
#define HALO_CODEGEN_EMIT_MANIFEST_H

#include "runtime/manifest.h"

char *cg_emit_manifest(const halo_manifest *m);

#endif
