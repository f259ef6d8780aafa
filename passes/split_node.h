/* Splitting one dispatch node in two (passes/split_moe.c,
 * passes/split_attention.c): the split callback appends the first half as a
 * new node and turns node nid into the second half; split_nodes then moves
 * every new node right before the node it came from, so program order still
 * puts each definition before its reads. */
#ifndef HALO_PASSES_SPLIT_NODE_H
#define HALO_PASSES_SPLIT_NODE_H

#include <stdbool.h>

#include "ir/ir.h"

/* Returns the new node's id, SPLIT_KEEP to leave node nid whole, or -1 with
 * err set. */
enum { SPLIT_KEEP = -2 };
typedef int (*split_fn)(ir_module *m, ir_func *f, int nid, void *ctx, ir_error *err);

/* Runs split over the live nodes of every graph function (blocks are
 * expanded by then). */
bool split_nodes(ir_module *m, split_fn split, void *ctx, ir_error *err);

/* A value for output 0 of node nid, shaped by the op's own shape rule. */
int split_add_output(ir_module *m, ir_func *f, int nid, const char *name, ir_error *err);

#endif
