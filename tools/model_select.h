/* Picks the model file for a checkpoint: the YAML in a models directory whose
 * `hf_model_types` lists the config's model_type. */
#ifndef HALO_TOOLS_MODEL_SELECT_H
#define HALO_TOOLS_MODEL_SELECT_H

#include <stdbool.h>
#include <stddef.h>

/* The models directory: $HALO_MODELS_DIR, else the source tree's models/
 * (compiled in). Static storage. */
const char *halo_models_dir(void);

/* Reads config.json's model_type (top level, else text_config.model_type)
 * into out. */
bool halo_config_model_type(const char *config_path, char *out, size_t outlen, char *err, size_t errlen);

/* Finds <dir>/<name>.yaml serving model_type; writes its path into out. Files
 * are scanned in sorted name order, so the choice never depends on readdir. */
bool halo_select_model(const char *dir, const char *model_type, char *out, size_t outlen, char *err,
		       size_t errlen);

#endif
