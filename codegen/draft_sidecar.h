/* A drafter sidecar: a checkpoint folder (config.json + *.safetensors)
 * holding only a draft head's tensors (mtp.*), attached to a target
 * checkpoint at compile time (halo compile --mtp-from DIR). */
#ifndef HALO_CODEGEN_DRAFT_SIDECAR_H
#define HALO_CODEGEN_DRAFT_SIDECAR_H

#include <stdbool.h>
#include <stddef.h>

#include "codegen/safetensors.h"
#include "codegen/weights.h"

/* Refuses a drafter whose config does not fit the target's: a different
 * model_type, any differing dimension the head shares with the target
 * (hidden size, vocabulary, attention and expert shapes, norm eps, hyper-
 * connection streams), or no MTP layer declared. The message names the two
 * files and every key that differs with both values. A mismatch here is
 * what would otherwise surface as a silent 0% acceptance. */
bool cg_check_drafter_config(const char *target_config, const char *drafter_config, char *err, size_t errlen);

/* Routes tensors by name: "mtp." ones come from drafter, the rest from
 * target (both borrowed; they must outlive src). */
typedef struct {
	halo_safetensors *target, *drafter;
} cg_split_checkpoint;

void cg_split_checkpoint_source(cg_split_checkpoint *split, cg_weight_source *src);

#endif
