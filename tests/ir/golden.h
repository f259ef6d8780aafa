/* Files for the IR tests: a whole file read into memory, and a dump
 * compared with its golden file (HALO_IR_REGEN=1 rewrites the golden file
 * instead). */
#ifndef HALO_TESTS_IR_GOLDEN_H
#define HALO_TESTS_IR_GOLDEN_H

#include <stdbool.h>
#include <stddef.h>

/* The file's bytes, NUL-terminated (malloc'd, caller frees), their count in
 * *len; NULL when it cannot be opened. */
char *golden_slurp(const char *path, size_t *len);

/* Whether text (len bytes) equals the file at path; with HALO_IR_REGEN=1,
 * writes text there instead and says whether that worked. On false, why
 * (whylen bytes) names the file and the first differing byte. */
bool golden_matches(const char *path, const char *text, size_t len, char *why, size_t whylen);

#endif
