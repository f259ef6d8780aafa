/* Internal to the model reader: a loaded libyaml document plus the checks
 * and accessors every part of the reader shares. Every error names
 * file:line:column (from the node's start mark) and what was expected. */
#ifndef HALO_IR_READ_YAML_H
#define HALO_IR_READ_YAML_H

#include <yaml.h>

#include "ir/config.h"
#include "ir/ir.h"

typedef struct rd_ctx rd_ctx;
struct rd_ctx {
	ir_module *m;
	yaml_document_t doc;
	bool doc_loaded;
	const char *path;        /* the file doc was read from (arena: locations keep it) */
	/* Per node id of doc: the included file its node was copied from (arena
	 * strings), NULL for path's own; malloc'd, n_node_file long. */
	const char **node_file;
	int n_node_file;
	const char *include_dir; /* what include paths are relative to; NULL: include refused */
	char *canon;             /* realpath of path (malloc'd), NULL when read from memory */
	const rd_ctx *parent;    /* the file that included this one, NULL at the top */
	ir_config *cfg;
	ir_error *err;
	bool *module_weight_used; /* per m->weights entry, malloc'd */
	bool no_draft, force_draft; /* ir_read_options */
	int64_t n_ctx;              /* ir_read_options; 0: the model file's */
	int64_t draft_max;          /* ir_read_options; 0: the model file's */
	int64_t draft_vocab;        /* ir_read_options; 0: the model file's */
};

/* Loads one YAML document from yaml[0..len) into rd->doc and checks the
 * tree: every mapping key is a scalar and unique, no node is reached twice
 * (anchors/aliases are not part of the format) and nesting is bounded. */
bool rd_load(rd_ctx *rd, const char *yaml, size_t len);
void rd_unload(rd_ctx *rd);
/* The top-level `include:` list of the loaded document (docs/ir.md,
 * "Sharing sections between files"): each file is loaded (its own includes
 * first) and its sections are merged into rd->doc after the including
 * file's own entries; its nodes keep their file for locations. */
bool rd_includes(rd_ctx *rd);
/* The directory part of path ("." when it has none), in the arena. */
const char *rd_dir_of(ir_arena *a, const char *path);
/* Whole file into a malloc'd buffer; NULL with err set on failure. */
char *rd_slurp(const char *path, size_t *len, ir_error *err);

yaml_node_t *rd_root(rd_ctx *rd);
ir_loc rd_loc(const rd_ctx *rd, const yaml_node_t *n);
/* Error at node n: "file:line:col: <fmt>". Always returns false. */
bool rd_fail(rd_ctx *rd, const yaml_node_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Type checks with an error naming what was expected ("what" describes the
 * node, e.g. "params", "the shape of weight 'w'"). */
bool rd_want_map(rd_ctx *rd, const yaml_node_t *n, const char *what);
bool rd_want_seq(rd_ctx *rd, const yaml_node_t *n, const char *what);
/* The scalar's text, or NULL (error set) when n is not a scalar. */
const char *rd_scalar(rd_ctx *rd, const yaml_node_t *n, const char *what);

int rd_map_len(const yaml_node_t *map);
yaml_node_t *rd_map_key(rd_ctx *rd, const yaml_node_t *map, int i);
yaml_node_t *rd_map_val(rd_ctx *rd, const yaml_node_t *map, int i);
const char *rd_map_key_str(rd_ctx *rd, const yaml_node_t *map, int i);
/* The value of key in map, or NULL when absent. */
yaml_node_t *rd_get(rd_ctx *rd, const yaml_node_t *map, const char *key);
/* Like rd_get, but a missing key is an error naming the mapping's location. */
yaml_node_t *rd_need(rd_ctx *rd, const yaml_node_t *map, const char *key, const char *what);
/* Fails on the first key of map not in allowed (NULL-terminated). */
bool rd_check_keys(rd_ctx *rd, const yaml_node_t *map, const char *const *allowed, const char *what);

int rd_seq_len(const yaml_node_t *seq);
yaml_node_t *rd_seq_item(rd_ctx *rd, const yaml_node_t *seq, int i);

/* The location where a scalar's text starts (after an opening quote), so
 * expression errors point at the offending character. */
ir_loc rd_text_loc(const rd_ctx *rd, const yaml_node_t *scalar);
/* Arena copy of a scalar's text (NULL and error if not a scalar). */
const char *rd_str(rd_ctx *rd, const yaml_node_t *n, const char *what);

#endif
