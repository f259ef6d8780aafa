/* The model reader: a model YAML file (docs/ir.md) plus an HF config.json
 * into an ir_module. */
#ifndef HALO_IR_READ_MODEL_H
#define HALO_IR_READ_MODEL_H

#include "ir/ir.h"

typedef struct {
	/* Compile the target alone even when the config declares a draft head
	 * (halo compile --no-mtp): the draft: section is skipped. */
	bool no_draft;
	/* Read the draft: section whatever the config's layer count (a drafter
	 * sidecar declares the head the target's config does not). The model
	 * file must have one. */
	bool force_draft;
	/* > 0: the context length (halo compile --ctx) in place of the model
	 * file's `n_ctx` param, which every cache shape uses. The model file
	 * must declare `n_ctx`, and the config's max_position_embeddings, where
	 * it has one, bounds it. */
	int64_t n_ctx;
	/* > 0: the most drafts one speculative round verifies (halo compile
	 * --draft-max) in place of the model file's `draft_max` param, which
	 * sizes the verify entry and its state slots; 1..IR_DRAFT_MAX_LIMIT. */
	int64_t draft_max;
	/* > 0: the draft head's vocabulary (halo compile --draft-vocab) in
	 * place of the model file's `draft_vocab` param (whose default is the
	 * whole vocabulary): the head's logits cover token ids 0 .. N - 1, at
	 * most the vocabulary. */
	int64_t draft_vocab;
} ir_read_options;

/* At most 8 tokens per verify step: the decode kernels' batch-invariant
 * matvec family serves T <= 8 (KV_MATVEC_MAX_T), and decode takes the same
 * token range as verify. */
#define IR_DRAFT_MAX_LIMIT 7

/* Reads both files. Returns a module the caller frees with ir_module_free(),
 * or NULL with err filled ("file:line:col: what was expected"); nothing is
 * left allocated on failure. ir_read_model uses the default options. */
ir_module *ir_read_model(const char *model_path, const char *config_path, ir_error *err);
ir_module *ir_read_model_opts(const char *model_path, const char *config_path, const ir_read_options *opts,
			      ir_error *err);

/* The same from memory (the fuzzer's entry): model_name and config_name are
 * used in messages and locations; the buffers need not be NUL-terminated and
 * are not kept. opts may be NULL (defaults). A model read from memory may
 * not include files (`include:` is an error): only ir_read_model[_opts]
 * resolve includes, relative to the model file's directory. */
ir_module *ir_read_model_mem(const char *model_name, const char *yaml, size_t yaml_len, const char *config_name,
			     const char *config_json, size_t config_len, const ir_read_options *opts, ir_error *err);

#endif
