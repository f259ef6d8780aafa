/* Lowering: a planned entry (passes/plan.h) becomes the runtime's dispatch
 * records (runtime/manifest.h) — operands as (space, offset, dtype, shape),
 * attributes, fused sub-ops — in kernel-ABI operand order. Kernels and
 * workgroup counts are filled in afterwards by codegen/select_kernels.c.
 *
 * Ownership: cg_lower_entry() fills a caller-owned halo_entry whose name,
 * io names, dispatch array and node names are malloc'd; release them with
 * cg_entry_free(). */
#ifndef HALO_CODEGEN_LOWER_H
#define HALO_CODEGEN_LOWER_H

#include "ir/ir.h"
#include "passes/plan.h"
#include "runtime/manifest.h"

/* Where module weight w lives in the bundle's weights section and the dtype
 * it is stored in (codegen/weights.h); state offsets come from the plan. */
typedef struct {
	const uint64_t *offset;
	const halo_dtype *dtype;
} cg_weight_layout;

bool cg_lower_entry(const ir_module *m, const plan_entry *pe, const cg_weight_layout *wl, halo_entry *out,
		    ir_error *err);
void cg_entry_free(halo_entry *e);

#endif
