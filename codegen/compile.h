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
	/* q8_0, q4_k, f8e4m3_b128 or mxfp4: linear-layer weights (mxfp4: the
	 * MoE experts alone) in that block format (halo compile --quant;
	 * docs/quantization.md); any other value
	 * (HALO_F32, the zero value): none. */
	halo_dtype quant;
	/* Int8 activations (halo compile --act-quant q8): the decode and
	 * verify steps' matvecs on q8_0 and q4_k weights round x to int8 per
	 * block of 32 and multiply integers (docs/quantization.md). */
	bool int8_activations;
	/* Keep every norm weight out of the matrices (set by quant anyway;
	 * passes/fuse_norm_matmul.c): the stored matrices are the checkpoint's
	 * values, for comparing bundles weight by weight. */
	bool no_fold_norms;
	/* Keep sibling matmuls apart (passes/merge_matmuls.c; halo compile
	 * --no-merge): one dispatch per projection, for comparing kernels. */
	bool no_merge;
	/* Keep KV-cache writes as copy dispatches (passes/fuse_state_store.c;
	 * halo compile --no-store-fusion), for comparing schedules. */
	bool no_store_fusion;
	/* Keep the q/k norm-and-rope a dispatch before the attention
	 * (passes/fuse_attention_rope.c; halo compile --no-rope-fusion), for
	 * comparing schedules. */
	bool no_rope_fusion;
	bool random_weights;
	uint64_t seed;
	uint64_t random_period; /* cg_weight_source.period */
	/* A bundle for the CPU reference backend only, without GPU kernels:
	 * an op whose GPU kernel does not exist yet can still be run and tested.
	 * The GPU backends refuse such a bundle. */
	bool ref_only;
	/* The GPU targets to build kernels for, as bits 1u << halo_target
	 * (kernels/gpu_target.h); 0: Vulkan alone. Ignored with ref_only. */
	uint32_t targets;
	/* hip and cuda targets: code for every candidate of each kernel choice,
	 * not only the first, which those backends run unless a test forces
	 * another (halo_open_options.tune; tests/ops/backend_ops sweeps them). */
	bool gpu_all_variants;
	/* The draft head (the model file's draft: section): no_mtp leaves it
	 * out even when the config declares one; mtp_dir (NULL: none) names a
	 * drafter sidecar whose mtp.* tensors and config complete a target
	 * checkpoint released without them (draft_sidecar.h). */
	bool no_mtp;
	const char *mtp_dir;
	/* > 0: the context length the caches are sized for (halo compile --ctx),
	 * at most the config's max_position_embeddings; 0: the model file's
	 * n_ctx default. */
	int64_t n_ctx;
	/* > 0: the most drafts a speculative round verifies (halo compile
	 * --draft-max, 1..IR_DRAFT_MAX_LIMIT); 0: the model file's draft_max. */
	int64_t draft_max;
	/* > 0: the draft head's vocabulary (halo compile --draft-vocab): its
	 * logits cover token ids 0 .. draft_vocab - 1 (ir_read_options); 0: the
	 * model file's draft_vocab, the whole vocabulary. */
	int64_t draft_vocab;
	/* Leave the checkpoint's tokenizer.json out of the bundle (it is
	 * embedded by default, when present; codegen/tokenizer_section.h). */
	bool no_tokenizer;
	/* Plan only (halo compile --plan-only): the pass pipeline, the memory
	 * plan and the weights' stored dtypes and sizes, then the stats;
	 * nothing is lowered, converted or written (out_path is not used).
	 * A checkpoint's headers are read (the formats it stores), not its
	 * data: a missing tensor is found when the weights are converted, not
	 * here. With random_weights config.json alone. */
	bool plan_only;
	/* Called as the weights are converted and written (may be NULL). */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
} cg_compile_options;

/* What a compilation produced, for the CLI's summary. */
typedef struct {
	int64_t n_ctx;          /* the context length the caches hold */
	uint64_t state_bytes;   /* one session's state: caches and recurrent states */
	uint64_t cache_bytes;   /* of which positional caches (KV, indexer keys, hidden rows) */
	uint64_t slot_bytes;    /* of which per-token state slots (a verify entry's, --draft-max) */
	uint64_t act_bytes;     /* the largest entry's activation arena (a session holds one) */
	uint64_t weight_bytes;  /* the weights section */
	uint64_t weight_params; /* elements of the weights stored (an alias counted once) */
	uint64_t source_bytes;  /* bytes of the checkpoint tensors read (0: random weights) */
	double weights_s;       /* seconds converting and writing the weights */
	/* Bytes of the weights section per stored dtype (alignment padding
	 * not counted), indexed by halo_dtype. */
	uint64_t dtype_bytes[HALO_DTYPE_COUNT];
	uint64_t dtype_params[HALO_DTYPE_COUNT]; /* and their elements */
	/* Weights --quant q4_k or f8e4m3 stored q8_0 (K not a multiple of the
	 * format's block): how many, and their names and shapes (truncated to
	 * fit). */
	int quant_fallbacks;
	char fallback[512];
	/* Dispatches given int8 activations (int8_activations), over all entries. */
	int int8_dispatches;
	/* Checkpoint tensors the graph does not read (a vision tower's, an MTP
	 * head left out), and a summary by their first two name components,
	 * e.g. "model.visual.* 21, mtp.layers.* 40" (truncated to fit). */
	int unused_tensors;
	char unused[256];
} cg_compile_stats;

/* Returns false with a message naming the file and what was wrong; nothing
 * is left at out_path on failure. stats (may be NULL) is filled on success. */
bool cg_compile(const cg_compile_options *o, cg_compile_stats *stats, char *err, size_t errlen);

#endif
