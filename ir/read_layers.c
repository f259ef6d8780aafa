/* The top-level `layers` mapping: which block each layer runs. */
#include "ir/read_parts.h"

#include <string.h>

enum { MAX_LAYERS = 4096 };

static const char *const layer_keys[] = {"count", "pattern", "types_from", "map", "then", NULL};

static int block_id(rd_ctx *rd, const yaml_node_t *n, const char *what)
{
	const char *name = rd_scalar(rd, n, what);
	if (!name)
		return -1;
	int id = ir_module_func(rd->m, name);
	if (id < 0 || !rd->m->funcs[id].is_block) {
		rd_fail(rd, n, "%s: unknown block '%s'", what, name);
		return -1;
	}
	return id;
}

static bool from_pattern(rd_ctx *rd, const yaml_node_t *pattern)
{
	if (!rd_want_seq(rd, pattern, "layers.pattern"))
		return false;
	int n = rd_seq_len(pattern);
	if (n == 0)
		return rd_fail(rd, pattern, "layers.pattern: expected at least one block name");
	for (int i = 0; i < rd->m->n_layers; i++) {
		int id = block_id(rd, rd_seq_item(rd, pattern, i % n), "layers.pattern");
		if (id < 0)
			return false;
		rd->m->layer_block[i] = id;
	}
	return true;
}

static bool from_config(rd_ctx *rd, const yaml_node_t *types_from, const yaml_node_t *map)
{
	const char *key = rd_scalar(rd, types_from, "layers.types_from");
	if (!key)
		return false;
	if (!map)
		return rd_fail(rd, types_from, "layers.types_from needs a 'map' from layer type to block");
	if (!rd_want_map(rd, map, "layers.map"))
		return false;
	const char **types;
	int n;
	if (!ir_config_strings(rd->cfg, key, &types, &n, rd->err))
		return false;
	if (n < 0)
		return rd_fail(rd, types_from, "layers.types_from: config key '%s' is missing from %s", key,
			       ir_config_name(rd->cfg));
	if (n != rd->m->n_layers)
		return rd_fail(rd, types_from, "layers.types_from: config key '%s' in %s has %d entries, expected %d (layers.count)",
			       key, ir_config_name(rd->cfg), n, rd->m->n_layers);
	for (int i = 0; i < n; i++) {
		yaml_node_t *b = rd_get(rd, map, types[i]);
		if (!b)
			return rd_fail(rd, map, "layers.map: no block for layer type '%s' (layer %d, from %s key '%s')",
				       types[i], i, ir_config_name(rd->cfg), key);
		int id = block_id(rd, b, "layers.map");
		if (id < 0)
			return false;
		rd->m->layer_block[i] = id;
	}
	return true;
}

/* Layers chain, so every block used as one takes and returns the same
 * number of values as the first one. */
static bool check_chain(rd_ctx *rd, const yaml_node_t *map)
{
	const ir_module *m = rd->m;
	const ir_func *first = &m->funcs[m->layer_block[0]];
	int k = first->n_inputs;
	for (int i = 0; i <= m->n_layers; i++) {
		int id = i < m->n_layers ? m->layer_block[i] : m->layer_then;
		if (id < 0)
			continue;
		const ir_func *b = &m->funcs[id];
		if (i < m->n_layers && id == m->layer_then)
			return rd_fail(rd, map, "layers.then: block '%s' is also the block of layer %d; a block runs once per layer",
				       b->name, i);
		if (b->n_inputs != k || b->n_outputs != k)
			return rd_fail(rd, map, "layers: block '%s' takes %d input(s) and returns %d output(s), but layers "
				       "chain: every layer block must take and return %d (as block '%s' takes)",
				       b->name, b->n_inputs, b->n_outputs, k, first->name);
	}
	return true;
}

bool rd_layers(rd_ctx *rd, const yaml_node_t *map)
{
	if (!rd_want_map(rd, map, "layers") || !rd_check_keys(rd, map, layer_keys, "layers"))
		return false;
	ir_module *m = rd->m;
	yaml_node_t *count = rd_need(rd, map, "count", "layers");
	int64_t n;
	if (!count || !rd_int(rd, count, "layers.count", &n))
		return false;
	if (n < 1 || n > MAX_LAYERS)
		return rd_fail(rd, count, "layers.count: expected 1 to %d, got %lld", MAX_LAYERS, (long long)n);
	m->n_layers = (int)n;
	m->layer_block = ir_arena_alloc(&m->arena, (size_t)n * sizeof(int));
	yaml_node_t *pattern = rd_get(rd, map, "pattern"), *types = rd_get(rd, map, "types_from");
	yaml_node_t *lmap = rd_get(rd, map, "map"), *then = rd_get(rd, map, "then");
	if (!pattern == !types)
		return rd_fail(rd, map, "layers: expected exactly one of 'pattern' or 'types_from'");
	if (pattern && lmap)
		return rd_fail(rd, lmap, "layers.map is used with types_from only");
	if (!(pattern ? from_pattern(rd, pattern) : from_config(rd, types, lmap)))
		return false;
	if (then && (m->layer_then = block_id(rd, then, "layers.then")) < 0)
		return false;
	return check_chain(rd, map);
}
