/* The mechanics every fusion pass shares: when a producer may take an
 * epilogue, and how a node is folded into another's ir_fused list. The
 * passes (fuse_*.c) only decide which pairs to fold. */
#ifndef HALO_PASSES_FUSE_COMMON_H
#define HALO_PASSES_FUSE_COMMON_H

#include <stdbool.h>

#include "ir/ir.h"
#include "passes/graph_query.h"

/* The node that can take node e (with the epilogue e carries) as an
 * epilogue on value v, or -1. It must be a live single-result op whose
 * kernels take an epilogue (ir_op_takes_epilogue: never a view, a sink, a
 * copy or a recurrent op) whose result v is read exactly once (by e) and is
 * not a function output, so that folding leaves no reader of v behind; and
 * its chain must stay within HALO_MAX_EPILOGUE ops. */
int fuse_epilogue_host(const ir_func *f, const func_uses *u, int v, const ir_node *e);

/* True when every dim of s is independent of T (a per-channel bias or scale,
 * not a per-token activation). */
bool fuse_shape_is_static(const ir_shape *s);

/* Folds node e into the epilogue of node p, where p's result is e's operand
 * `running`: e's op (and any epilogues e already carried) are appended to
 * p's fused list, e's other operands become extras, and the combined node
 * (p's op and name) moves into e's slot, producing e's result; p's slot is
 * marked dead (the caller compacts) and ordering edges follow the move. */
void fuse_epilogue(ir_module *m, ir_func *f, int p, int e, int running);

/* Moves the ordering edges of node from (which is about to die) onto each
 * node of to: from's own after list is added to theirs, and every node that
 * had to wait for from waits for all of them. */
void fuse_move_edges(ir_module *m, ir_func *f, int from, const int *to, int n_to);

/* Runs fuse_node(m, f, uses, e) over every node e of every live function,
 * compacting a function after any fold. A fuse_node returns true when it
 * folded node e into another. */
typedef bool (*fuse_node_fn)(ir_module *m, ir_func *f, const func_uses *u, int e);
void fuse_each_node(ir_module *m, fuse_node_fn fuse_node);

#endif
