/* The effects on each state within one function, grouped per state in node
 * order, and the nodes that really read a state_read's result. Shared by
 * order_effects (which adds the edges) and check_effects (which checks
 * them), which otherwise share no logic. */
#ifndef HALO_PASSES_STATE_EFFECTS_H
#define HALO_PASSES_STATE_EFFECTS_H

#include "ir/ir.h"
#include "passes/graph_query.h"

typedef struct {
	int n_groups;
	int *start; /* n_groups + 1 offsets into node */
	int *node;  /* state_read / state_write node ids, grouped per state, node order within */
} state_effects;

/* Groups f's effect nodes by the state they touch (block-local and module
 * states are told apart). malloc'd; release with state_effects_free(). */
void state_effects_build(const ir_func *f, state_effects *se);
void state_effects_free(state_effects *se);

/* The dispatches that read state_read node r's buffer: the consumers of its
 * result, looking through reshapes (which alias it too). Writes their ids to
 * out (room for f->n_nodes) and returns how many. */
int state_read_readers(const ir_func *f, const func_uses *u, int r, int *out);

/* For an in-place state_write n (passes/fuse_state_store.c): the value its
 * producer made, above the reshapes to n's operand; -1 for any other node. */
int state_write_source(const ir_func *f, int n);

/* The node that performs effect node n: n itself, or for an in-place
 * state_write (passes/fuse_state_store.c) the producer of its value, found
 * through reshapes. */
int state_effect_writer(const ir_func *f, int n);

#endif
