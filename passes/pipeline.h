/* The pass pipeline: the one place that fixes which passes run and in what
 * order (`halo inspect --list-passes` prints it). In builds without NDEBUG,
 * pass_verify re-runs after every pass that changes the module, so the pass
 * that breaks an invariant is the one named. */
#ifndef HALO_PASSES_PIPELINE_H
#define HALO_PASSES_PIPELINE_H

#include <stdbool.h>

#include "ir/ir.h"
#include "passes/plan.h"

typedef struct {
	const char *name;    /* as accepted by --after */
	const char *summary; /* one line for --list-passes */
	bool (*run)(ir_module *m, halo_plan *plan, ir_error *err);
	bool needs_plan;     /* fills or reads the plan rather than the module */
} pipeline_pass;

int pipeline_n_passes(void);
const pipeline_pass *pipeline_pass_at(int i); /* 0 <= i < pipeline_n_passes() */
int pipeline_find(const char *name);          /* index, or -1 for an unknown name */

/* Runs passes first..last (inclusive) on m. plan may be NULL only when no
 * pass in the range needs one; it must be empty (plan_new()) when
 * plan_memory is in the range. On failure err names the pass. */
bool pipeline_run_range(ir_module *m, halo_plan *plan, int first, int last, ir_error *err);

/* The whole pipeline. */
bool pipeline_run(ir_module *m, halo_plan *plan, ir_error *err);

#endif
