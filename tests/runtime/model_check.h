/* Helpers for the model tests: fixtures, compiling them to a temporary
 * bundle, and logits comparisons with the tolerance stated by the caller. */
#ifndef HALO_TESTS_RUNTIME_MODEL_CHECK_H
#define HALO_TESTS_RUNTIME_MODEL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/bundle.h"
#include "runtime/halo.h"
#include "runtime/manifest.h"

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
/* The same for one backend (a registry name): for ref, a bundle without GPU
 * kernels (their compile is most of a sanitized test's time, and ref never
 * runs them); for cuda and hip, Vulkan's and that target's kernels, or the
 * prebuilt bundle <fixture>.<model>.<f32|f16> (mc_use_prebuilt). */
void mc_compile_for(const char *model_rel, const char *hf_rel, const char *out_path, bool f16,
		    const char *backend);
/* mc_compile_for at f32 with --no-mtp: the target without its draft head
 * (prebuilt: <fixture>.<model>.f32.nomtp). */
void mc_compile_no_mtp(const char *model_rel, const char *hf_rel, const char *out_path, const char *backend);
/* mc_compile_for at f32 with the draft head narrowed to token ids
 * 0 .. draft_vocab - 1 (halo compile --draft-vocab; prebuilt:
 * <fixture>.<model>.f32.dv<draft_vocab>). */
void mc_compile_draft_vocab(const char *model_rel, const char *hf_rel, const char *out_path, int64_t draft_vocab,
			    const char *backend);
/* With $HALO_TEST_BUNDLES set and a cuda or hip backend: copies the bundle
 * <dir>/<name>.<backend>.halo to out_path and returns true (a missing one
 * fails the test), since the GPU machine has no clang-19 to make those
 * targets' code and tools/gpu/pack.sh compiles them here; else false, and
 * the caller compiles. */
bool mc_use_prebuilt(const char *name, const char *backend, const char *out_path);
/* Opens a model on a backend (a registry name; validation on with vulkan);
 * exits on failure. */
halo_model *mc_open(const char *bundle, const char *backend);
/* Whether the backend is "vulkan" (tests turn validation on for it). */
bool mc_is_vulkan(const char *backend);
halo_session *mc_session(halo_model *m);
/* Opens bundle on backend and returns, malloc'd, [n_prompt + n_decode,
 * vocab] logits: every row of a prompt of token (37 i + 11) mod vocab
 * (halo_session_prefill), then n_decode single decode steps fed
 * (53 i + 5) mod vocab; checks no validation message was seen. The same
 * tokens for every bundle of one vocabulary, so runs compare row by row. */
float *mc_run_logits(const char *bundle, const char *backend, int64_t n_prompt, int64_t n_decode);

/* A bundle opened for inspection: its manifest parsed and its weights
 * section; mc_bundle_close releases both. */
typedef struct {
	halo_bundle *b;
	halo_manifest *m;
	const uint8_t *weights;
} mc_bundle;

/* Opens path and parses its manifest against its sections; exits on failure. */
mc_bundle mc_open_bundle(const char *path);
void mc_bundle_close(mc_bundle *o);
/* The weight declaration named `name`, or NULL. */
const halo_buffer_decl *mc_find_weight(const halo_manifest *m, const char *name);

/* Per row of `cols`: ||got - want|| / ||want|| <= tol; reports the worst row. */
bool mc_rows_close(const char *what, const float *got, const float *want, size_t rows, size_t cols, double tol);
bool mc_bitwise(const char *what, const float *a, const float *b, size_t n);

#endif
