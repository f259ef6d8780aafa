/* halo compile as a library call: model YAML + HF checkpoint (or seeded
 * random weights) -> bundle. The CLI (tools/cmd_compile.c) only parses flags. */
#ifndef HALO_CODEGEN_COMPILE_H
#define HALO_CODEGEN_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"

typedef struct {
	const char *model_path;   /* models/X.yaml */
	const char *hf_dir;       /* holds config.json and, unless random, *.safetensors */
	const char *out_path;     /* bundle to write (temp file + rename) */
	halo_dtype matrix_dtype;  /* f32 or f16 for rank >= 2 weights */
	bool random_weights;
	uint64_t seed;
	/* A bundle for the CPU reference backend only, without SPIR-V kernels:
	 * an op whose GPU kernel does not exist yet can still be run and tested.
	 * The Vulkan backend refuses such a bundle. */
	bool ref_only;
	/* The draft head (the model file's draft: section): no_mtp leaves it
	 * out even when the config declares one; mtp_dir (NULL: none) names a
	 * drafter sidecar whose mtp.* tensors and config complete a target
	 * checkpoint released without them (draft_sidecar.h). */
	bool no_mtp;
	const char *mtp_dir;
} cg_compile_options;

/* Returns false with a message naming the file and what was wrong; nothing
 * is left at out_path on failure. */
bool cg_compile(const cg_compile_options *o, char *err, size_t errlen);

#endif
