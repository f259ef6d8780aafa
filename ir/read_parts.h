/* Internal to the model reader: the parts of ir_read_model_mem, one file
 * each. Each returns false with rd->err set on the first error. */
#ifndef HALO_IR_READ_PARTS_H
#define HALO_IR_READ_PARTS_H

#include "ir/read_yaml.h"

/* The largest dim (and row index) a model file may give: keeps element
 * counts and byte sizes far from int64 overflow. */
#define RD_MAX_DIM ((int64_t)1 << 32)

/* read_values.c: scalars as expressions of the params read so far. */
bool rd_int(rd_ctx *rd, const yaml_node_t *n, const char *what, int64_t *out);
bool rd_float(rd_ctx *rd, const yaml_node_t *n, const char *what, double *out);
/* A list of 1..IR_MAX_RANK dims; T is allowed when allow_T. Dims must be >= 1. */
bool rd_shape(rd_ctx *rd, const yaml_node_t *n, bool allow_T, const char *what, ir_shape *out);
bool rd_dtype(rd_ctx *rd, const yaml_node_t *n, halo_dtype *out);
/* A scalar that must be one of choices (NULL-terminated); returns the static choice. */
const char *rd_choice(rd_ctx *rd, const yaml_node_t *n, const char *what, const char *const *choices);

/* read_params.c: the params mapping, bound from the config. */
bool rd_params(rd_ctx *rd, const yaml_node_t *map);

/* read_decls.c: weights / state mappings into arena arrays. */
bool rd_weights(rd_ctx *rd, const yaml_node_t *map, ir_weight **out, int *n_out);
bool rd_states(rd_ctx *rd, const yaml_node_t *map, ir_state **out, int *n_out);

/* read_layers.c: the top-level `layers` mapping into m->layer_block / layer_then. */
bool rd_layers(rd_ctx *rd, const yaml_node_t *map);

/* read_body.c: a function's body list and its outputs list (inputs are
 * already in f). Resolves names, weights, states, after: edges; checks for
 * cycles and, for blocks, unused block weights. */
bool rd_body(rd_ctx *rd, int func, const yaml_node_t *body, const yaml_node_t *outputs);
/* Checks that name (at node n) may name a new value or op of f: not a value,
 * op or weight visible in f already. */
bool rd_name_free(rd_ctx *rd, const ir_func *f, const yaml_node_t *n, const char *name);
/* The index of the block-local weight of f named name, or -1. */
int rd_local_weight(const ir_func *f, const char *name);

/* read_graphs.c: blocks, graphs and draft graphs (nullable) into m->funcs,
 * in that order. */
bool rd_funcs(rd_ctx *rd, const yaml_node_t *blocks, const yaml_node_t *graphs, const yaml_node_t *draft_graphs,
	      const yaml_node_t *layers);

/* read_draft.c: the `draft:` section. rd_draft_wanted checks its shape and
 * sets *on when its layer count is 1 (draft may be NULL: off). The others
 * run only when on: the section's states join the module table (before the
 * graphs are read), its exports become state_write sinks at the end of the
 * named target graphs (after). */
bool rd_draft_wanted(rd_ctx *rd, const yaml_node_t *draft, bool *on);
bool rd_draft_states(rd_ctx *rd, const yaml_node_t *draft);
bool rd_draft_exports(rd_ctx *rd, const yaml_node_t *draft);

#endif
