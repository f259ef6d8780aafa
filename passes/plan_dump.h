/* Text views of a plan for `halo inspect --format schedule|memory` and for
 * golden tests. Deterministic: names, indices and offsets only, never
 * pointers. Both write to out and own nothing. */
#ifndef HALO_PASSES_PLAN_DUMP_H
#define HALO_PASSES_PLAN_DUMP_H

#include <stdio.h>

#include "ir/ir.h"
#include "passes/plan.h"

/* One line per dispatch in order: index, '|' when a barrier precedes it,
 * op, node name, what it writes (state_write sinks name their state) and
 * what it reads, then its fused prologues/epilogues. */
void plan_dump_schedule(const ir_module *m, const plan_entry *e, FILE *out);

/* Region sizes, activation peak, then one line per buffer: region, offset,
 * size, live dispatch range (activations), name. */
void plan_dump_memory(const ir_module *m, const halo_plan *p, const plan_entry *e, FILE *out);

#endif
