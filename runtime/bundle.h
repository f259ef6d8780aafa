/* The bundle container (docs/bundle.md): one file holding named, aligned,
 * checksummed sections. This reader maps a bundle read-only, refuses it
 * unless every byte checks out, and hands out pointers into the mapping.
 * It does not interpret section contents (the manifest is JSON read by
 * runtime/manifest.c).
 *
 * The writer is codegen/bundle_write.h; the layout constants below are shared
 * with it and are part of the format. */
#ifndef HALO_RUNTIME_BUNDLE_H
#define HALO_RUNTIME_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/gpu_target.h"

/* ---- On-disk layout, format version 1 (all integers little-endian) ---- */
#define HALO_BUNDLE_MAGIC "HALOBNDL"
#define HALO_BUNDLE_MAGIC_LEN 8
#define HALO_BUNDLE_VERSION 1u
#define HALO_BUNDLE_HEADER_SIZE 64u
#define HALO_BUNDLE_ENTRY_SIZE 64u
/* A name is at most this many bytes, stored NUL-padded in a field one larger. */
#define HALO_BUNDLE_NAME_MAX 23u
#define HALO_BUNDLE_MAX_SECTIONS 4096u
/* Alignments are powers of two in [1, HALO_BUNDLE_ALIGN_MAX]. */
#define HALO_BUNDLE_ALIGN_MAX (1u << 20)
#define HALO_BUNDLE_ALIGN_DEFAULT 256u
/* Weights are aligned for mmap and direct upload. */
#define HALO_BUNDLE_ALIGN_WEIGHTS (64u << 10)
#define HALO_BUNDLE_XXH64_SEED 0u

/* Header field offsets. */
enum {
	HALO_BH_MAGIC = 0,
	HALO_BH_VERSION = 8,        /* u32 */
	HALO_BH_HEADER_SIZE = 12,   /* u32, HALO_BUNDLE_HEADER_SIZE */
	HALO_BH_SECTION_COUNT = 16, /* u32 */
	HALO_BH_FLAGS = 20,         /* u32, no flags are defined: must be 0 */
	HALO_BH_FILE_SIZE = 24,     /* u64, the whole file */
	HALO_BH_TABLE_XXH64 = 32,   /* u64, over the section table */
	HALO_BH_RESERVED = 40,      /* 16 zero bytes */
	HALO_BH_HEADER_XXH64 = 56,  /* u64, over header bytes [0, 56) */
};

/* Section table entry field offsets (the table follows the header). */
enum {
	HALO_BE_NAME = 0,      /* char[24], NUL-padded */
	HALO_BE_OFFSET = 24,   /* u64, from the start of the file */
	HALO_BE_SIZE = 32,     /* u64 */
	HALO_BE_ALIGN = 40,    /* u32 */
	HALO_BE_FLAGS = 44,    /* u32, must be 0 */
	HALO_BE_XXH64 = 48,    /* u64, over the section's bytes */
	HALO_BE_RESERVED = 56, /* 8 zero bytes */
};

/* ---- Reader ---- */
typedef struct halo_bundle halo_bundle;

/* Open flags. The default verifies every checksum. */
enum {
	/* Skip the checksum of weight sections ("weights" and "weights.*"):
	 * everything else, their bounds and alignment included, is still checked. */
	HALO_BUNDLE_SKIP_WEIGHTS_CHECKSUM = 1u << 0,
};

/* Maps `path` read-only and validates header, section table and every
 * checksum. On failure returns NULL and writes a message naming the file
 * and what is wrong into err (errlen bytes, always NUL-terminated). The
 * result owns the mapping; free it with halo_bundle_close(). */
halo_bundle *halo_bundle_open(const char *path, char *err, size_t errlen);
/* halo_bundle_open() with flags (HALO_BUNDLE_SKIP_*). */
halo_bundle *halo_bundle_open_flags(const char *path, unsigned flags, char *err, size_t errlen);
/* The same validation over bytes already in memory. `data` is borrowed and
 * must outlive the result; `label` names the bytes in messages and is copied. */
halo_bundle *halo_bundle_open_mem(const void *data, size_t size, const char *label, unsigned flags,
                                  char *err, size_t errlen);

/* Pointer to the named section's bytes inside the mapping (valid until
 * halo_bundle_close), its size in *size; NULL (and *size = 0) if absent. */
const void *halo_bundle_section(const halo_bundle *b, const char *name, size_t *size);
/* The size of each GPU target's kernel section (kernels/gpu_target.h), 0
 * where the bundle has none: what manifest_parse checks kernels against. */
void halo_bundle_code_sizes(const halo_bundle *b, uint64_t size[HALO_TARGET_COUNT]);
size_t halo_bundle_section_count(const halo_bundle *b);
/* Name of section i (file order), or NULL when i is out of range. */
const char *halo_bundle_section_name(const halo_bundle *b, size_t i);
/* Unmaps and frees; NULL is fine. */
void halo_bundle_close(halo_bundle *b);

#endif
