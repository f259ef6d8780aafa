/* The execution plan: what passes/plan_memory.c, place_barriers.c and
 * check_barriers.c produce from a scheduled module, and what codegen turns
 * into a bundle's dispatch list and memory plan.
 *
 * Memory model. Three regions, each a flat byte space starting at 0:
 *   PLAN_ACT     activations of one step; one arena per entry, sized for the
 *                entry's t_max, buffers 256-byte aligned and reused once
 *                their last reader has run. The graph inputs (token ids) live
 *                here too; the host writes them before the step.
 *   PLAN_STATE   per-sequence state (KV cache, conv, SSM, ...), one buffer
 *                per state, laid out in module order, never shared with
 *                anything else and identical for every entry.
 *   PLAN_WEIGHT  checkpoint tensors, one buffer per weight in module order,
 *                read-only, identical for every entry.
 * Aliases own no buffer: a reshape's result is its input's buffer, a
 * state_read's result is the state's buffer, a weight node's result is the
 * weight's buffer, and the value an in-place state_write writes is the
 * state's buffer at the step's rows (value_at_pos): its producer's write
 * range is then the whole state buffer, as for state_write.
 *
 * Dispatches. Every scheduled node that is not a view (weight, state_read,
 * reshape, in-place state_write) is one dispatch, in schedule order. Its
 * reads are the buffers of its operands and fused extras; its writes are
 * the buffers of its results, or for state_write the whole state buffer (a
 * write `at: pos` touches rows only known at run time, so the plan treats
 * it as touching all of them).
 * barrier == true means: before this dispatch starts, every earlier dispatch
 * of the step has finished and its writes are visible. Dispatch 0 always
 * carries a barrier: it orders the step after the previous step (whose
 * state writes it may read) and after the host's upload of the inputs.
 *
 * Ownership: a halo_plan owns all its memory (its own arena); plan_free()
 * releases it. Names point into the ir_module the plan was made from, so the
 * module must outlive the plan. Node and value ids refer to the entry's
 * graph function as scheduled; a later change to that function invalidates
 * the plan. */
#ifndef HALO_PASSES_PLAN_H
#define HALO_PASSES_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/arena.h"
#include "ir/ir.h"

#define PLAN_ALIGN 256 /* bytes; every activation buffer offset and size */

typedef enum { PLAN_ACT, PLAN_STATE, PLAN_WEIGHT } plan_region;

typedef struct {
	plan_region region;
	int64_t offset;   /* bytes from the region's start */
	int64_t size;     /* bytes (ACT: rounded up to PLAN_ALIGN) */
	const char *name; /* weight / state name, or the owning value's name */
	int ref;          /* STATE: module state id; WEIGHT: module weight id; ACT: value id */
	/* ACT only: dispatch index that writes the buffer (-1: a graph input,
	 * written by the host) and of its last reader (n_dispatch when it is a
	 * graph output, which stays live to the end of the step). */
	int first, last;
} plan_buffer;

typedef struct {
	int buffer;           /* index into plan_entry.buffers */
	plan_region region;   /* the buffer's region, repeated for hazard checks */
	int64_t offset, size; /* byte range within the region */
} plan_range;

typedef struct {
	int node; /* node id in the entry's graph function */
	int n_reads, n_writes;
	plan_range *reads, *writes;
	bool barrier; /* wait for all earlier dispatches before starting */
} plan_dispatch;

typedef struct {
	const char *name; /* entry name */
	int entry;        /* index into ir_module.entries */
	int func;         /* graph function id */
	int64_t t_max;    /* token count the activation arena is sized for */
	int n_dispatch;
	plan_dispatch *dispatch;
	int n_buffers;
	plan_buffer *buffers; /* weights, then states, then activations */
	int *value_buffer;    /* per value of func: its buffer (aliases share one) */
	/* per value: true when it lives in its (state) buffer at the rows of
	 * the step's positions, pos.. (the value of an in-place state_write,
	 * passes/fuse_state_store.c, and the reshapes between) */
	bool *value_at_pos;
	int64_t act_bytes;       /* activation arena size: the peak footprint */
	int64_t live_peak_bytes; /* most activation bytes live at one dispatch */
	int n_barriers;
} plan_entry;

typedef struct {
	ir_arena arena;
	int n_entries;
	plan_entry *entries; /* in module entry order */
	int64_t state_bytes;  /* size of the STATE region */
	int64_t weight_bytes; /* size of the WEIGHT region */
} halo_plan;

/* An empty plan; free it with plan_free(). */
halo_plan *plan_new(void);
void plan_free(halo_plan *p); /* NULL ok */

/* The plan of the entry named name, or NULL. */
const plan_entry *plan_find_entry(const halo_plan *p, const char *name);

/* True when the two byte ranges share a byte in the same region. */
bool plan_ranges_overlap(const plan_range *a, const plan_range *b);

const char *plan_region_name(plan_region r); /* "act", "state", "weight" */

#endif
