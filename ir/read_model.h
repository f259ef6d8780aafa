/* The model reader: a model YAML file (docs/ir.md) plus an HF config.json
 * into an ir_module. */
#ifndef HALO_IR_READ_MODEL_H
#define HALO_IR_READ_MODEL_H

#include "ir/ir.h"

/* Reads both files. Returns a module the caller frees with ir_module_free(),
 * or NULL with err filled ("file:line:col: what was expected"); nothing is
 * left allocated on failure. */
ir_module *ir_read_model(const char *model_path, const char *config_path, ir_error *err);

/* The same from memory (the fuzzer's entry): model_name and config_name are
 * used in messages and locations; the buffers need not be NUL-terminated and
 * are not kept. */
ir_module *ir_read_model_mem(const char *model_name, const char *yaml, size_t yaml_len, const char *config_name,
			     const char *config_json, size_t config_len, ir_error *err);

#endif
