/* Graphs that a pass changes for some entries only: state_slots for the
 * `recurrent: slots` entries, entry_tokens for the `output: tokens` ones,
 * fuse_norm_matmul for the steps that take int8 activations.
 * Entries that share a graph with the others get a copy of it, so the
 * others run their graph unchanged. */
#ifndef HALO_PASSES_ENTRY_GRAPHS_H
#define HALO_PASSES_ENTRY_GRAPHS_H

#include <stdbool.h>

#include "ir/ir.h"

typedef bool (*entry_pred)(const ir_module *m, const ir_entry *e);

/* The graph to change for the entries that `marked` picks and that run
 * graph src: src itself when no other entry runs it, else a new copy named
 * "<src>.<suffix>", which those entries then run. -1 when none of them runs
 * src; else *first is the first of them (for messages). */
int entry_graph_for(ir_module *m, int src, entry_pred marked, const char *suffix, int *first);

#endif
