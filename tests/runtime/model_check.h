/* Helpers for the model tests: fixtures, compiling them to a temporary
 * bundle, and logits comparisons with the tolerance stated by the caller. */
#ifndef HALO_TESTS_RUNTIME_MODEL_CHECK_H
#define HALO_TESTS_RUNTIME_MODEL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/halo.h"

extern int mc_failures;

#define MC_CHECK(cond, ...)                                                 \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			mc_failures++;                                      \
		}                                                           \
	} while (0)

/* $HALO_SOURCE_ROOT/rel, in a static buffer (one at a time). */
const char *mc_source_path(const char *rel);
/* Reads a whole file; *n its size in bytes. Exits the test on failure. */
void *mc_read_file(const char *path, size_t *n);
/* Compiles models/<model> with the checkpoint dir into out_path; exits on failure. */
void mc_compile(const char *model_rel, const char *hf_rel, const char *out_path, bool f16);
/* Opens a model and a session; exits on failure. */
halo_model *mc_open(const char *bundle, halo_backend_kind backend);
halo_session *mc_session(halo_model *m);

/* Per row of `cols`: ||got - want|| / ||want|| <= tol; reports the worst row. */
bool mc_rows_close(const char *what, const float *got, const float *want, size_t rows, size_t cols, double tol);
bool mc_bitwise(const char *what, const float *a, const float *b, size_t n);

#endif
