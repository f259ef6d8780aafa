/* The weight source over an HF safetensors checkpoint (codegen/weights.h's
 * reader callbacks), checking every tensor's shape against the model file. */
#ifndef HALO_CODEGEN_CHECKPOINT_H
#define HALO_CODEGEN_CHECKPOINT_H

#include "codegen/safetensors.h"
#include "codegen/weights.h"

/* Fills src's read/exists/ctx from st (borrowed: it must outlive src). */
void cg_checkpoint_source(halo_safetensors *st, cg_weight_source *src);

#endif
