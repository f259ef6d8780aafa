/* The top-level `layers` mapping: which block each layer runs. */
#include "ir/read_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LAYERS = 4096 };

static const char *const layer_keys[] = {
	"count", "pattern", "types_from", "types_by_interval", "types_by_count", "types_default", "types_from_codes",
	"map",	 "overrides", "then", NULL};
static const char *const then_keys[] = {"types_from",	    "types_by_interval", "types_by_count",
					"types_default",    "types_from_codes",	 "map",
					NULL};
static const char *const default_keys[] = {"first", "repeat", NULL};
static const char *const codes_keys[] = {"config", "codes", NULL};
static const char *const interval_keys[] = {"config", "default", "type", "other", NULL};
static const char *const bools[] = {"false", "true", NULL};
static const char *const override_keys[] = {"from", "one_indexed", "block", "replaces", "index_attr", NULL};

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

/* One generated type list: types_by_interval (transformers' rule for a
 * config without layer_types: layer i has `type` when (i+1) is a multiple
 * of the interval), types_by_count (the first N layers have `type`) and
 * types_default (the `first` types, then `repeat` cycled). Both read an int
 * from the config key, else `default`. */
typedef enum { GEN_INTERVAL, GEN_COUNT } gen_kind;

static bool gen_config_int(rd_ctx *rd, const yaml_node_t *spec, const char *what, int64_t *v)
{
	yaml_node_t *cfg = rd_need(rd, spec, "config", what), *dflt = rd_need(rd, spec, "default", what);
	const char *key = cfg ? rd_scalar(rd, cfg, "a config key") : NULL;
	double f;
	ir_cfg_kind kind;
	if (!key || !dflt || !rd_int(rd, dflt, what, v) || !ir_config_number(rd->cfg, key, &kind, v, &f, rd->err))
		return false;
	if (kind == IR_CFG_FLOAT)
		return rd_fail(rd, cfg, "%s: config key '%s' in %s is %g, expected an int", what, key,
			       ir_config_name(rd->cfg), f);
	return kind != IR_CFG_ABSENT || rd_int(rd, dflt, what, v);
}

static bool types_by_rule(rd_ctx *rd, const yaml_node_t *spec, gen_kind g, const char *what, const char **types)
{
	if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, interval_keys, what))
		return false;
	yaml_node_t *type = rd_need(rd, spec, "type", what), *other = rd_need(rd, spec, "other", what);
	const char *t = type ? rd_scalar(rd, type, "a layer type") : NULL;
	const char *o = other ? rd_scalar(rd, other, "a layer type") : NULL;
	int64_t v;
	if (!t || !o || !gen_config_int(rd, spec, what, &v))
		return false;
	if (v < (g == GEN_INTERVAL))
		return rd_fail(rd, spec, "%s: the %s is %lld, expected at least %d", what,
			       g == GEN_INTERVAL ? "interval" : "count", (long long)v, g == GEN_INTERVAL);
	for (int i = 0; i < rd->m->n_layers; i++)
		types[i] = (g == GEN_INTERVAL ? (i + 1) % v == 0 : i < v) ? t : o;
	return true;
}

static bool types_default(rd_ctx *rd, const yaml_node_t *spec, const char *what, const char **types)
{
	if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, default_keys, what))
		return false;
	yaml_node_t *first = rd_get(rd, spec, "first"), *repeat = rd_need(rd, spec, "repeat", what);
	if ((first && !rd_want_seq(rd, first, what)) || !repeat || !rd_want_seq(rd, repeat, what))
		return false;
	int nf = first ? rd_seq_len(first) : 0, nr = rd_seq_len(repeat);
	if (nr == 0)
		return rd_fail(rd, repeat, "%s.repeat: expected at least one layer type", what);
	for (int i = 0; i < rd->m->n_layers; i++) {
		yaml_node_t *item = i < nf ? rd_seq_item(rd, first, i) : rd_seq_item(rd, repeat, (i - nf) % nr);
		if (!(types[i] = rd_scalar(rd, item, "a layer type")))
			return false;
	}
	return true;
}

/* types_from_codes: a config list of ints, each named by `codes` (DeepSeek
 * V4's legacy compress_ratios: 0, 4, 128). Like transformers, the list may
 * be longer than the layers (the V4-Flash checkpoint lists its MTP layer
 * too) and is cut to them. false with *found unset when the key is absent. */
static bool types_from_codes(rd_ctx *rd, const yaml_node_t *spec, const char *what, const char **types, bool *found)
{
	if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, codes_keys, what))
		return false;
	yaml_node_t *cfg = rd_need(rd, spec, "config", what), *codes = rd_need(rd, spec, "codes", what);
	const char *key = cfg ? rd_scalar(rd, cfg, "a config key") : NULL;
	int64_t *ids;
	int n;
	if (!key || !codes || !rd_want_map(rd, codes, what) || !ir_config_ints(rd->cfg, key, &ids, &n, rd->err))
		return false;
	*found = n >= 0;
	bool ok = true;
	if (n >= 0 && n < rd->m->n_layers)
		ok = rd_fail(rd, cfg, "%s: config key '%s' in %s has %d entries, expected at least %d (layers.count)", what,
			     key, ir_config_name(rd->cfg), n, rd->m->n_layers);
	for (int i = 0; ok && n >= 0 && i < rd->m->n_layers; i++) {
		char code[24];
		snprintf(code, sizeof code, "%lld", (long long)ids[i]);
		yaml_node_t *t = rd_get(rd, codes, code);
		ok = t ? (types[i] = rd_scalar(rd, t, "a layer type")) != NULL
		       : rd_fail(rd, codes, "%s: no layer type for code %s (layer %d, %s key '%s')", what, code, i,
				 ir_config_name(rd->cfg), key);
	}
	free(ids);
	return ok;
}

/* The layer types when the config has no `types_from` list: from the codes
 * list if the config has it, else from the one generator given. */
static bool types_fallback(rd_ctx *rd, const yaml_node_t *spec, const char *what, const char *key, const char **types)
{
	static const char *const gens[] = {"types_by_interval", "types_by_count", "types_default"};
	const yaml_node_t *gen = NULL;
	int g = -1;
	for (int k = 0; k < 3; k++) {
		yaml_node_t *n = rd_get(rd, spec, gens[k]);
		if (n && gen)
			return rd_fail(rd, n, "%s: expected at most one of types_by_interval, types_by_count, types_default",
				       what);
		if (n)
			gen = n, g = k;
	}
	yaml_node_t *codes = rd_get(rd, spec, "types_from_codes");
	bool found = false;
	if (codes && !types_from_codes(rd, codes, what, types, &found))
		return false;
	if (found)
		return true;
	if (!gen)
		return rd_fail(rd, spec, "%s.types_from: config key '%s' is missing from %s", what, key,
			       ir_config_name(rd->cfg));
	char name[64];
	snprintf(name, sizeof name, "%s.%s", what, gens[g]);
	return g == 2 ? types_default(rd, gen, name, types) : types_by_rule(rd, gen, g ? GEN_COUNT : GEN_INTERVAL, name, types);
}

/* Each layer's block from its type: the config list `types_from` (or a
 * fallback) through `map`. `what` is "layers" or "layers.then". */
static bool from_config(rd_ctx *rd, const yaml_node_t *spec, const char *what, int *blocks)
{
	yaml_node_t *types_from = rd_need(rd, spec, "types_from", what), *map = rd_get(rd, spec, "map");
	const char *key = types_from ? rd_scalar(rd, types_from, "types_from") : NULL;
	if (!key)
		return false;
	if (!map)
		return rd_fail(rd, types_from, "%s.types_from needs a 'map' from layer type to block", what);
	if (!rd_want_map(rd, map, what))
		return false;
	const char **types;
	int n, L = rd->m->n_layers;
	if (!ir_config_strings(rd->cfg, key, &types, &n, rd->err))
		return false;
	if (n < 0) {
		types = ir_arena_alloc(&rd->m->arena, (size_t)L * sizeof(*types));
		if (!types_fallback(rd, spec, what, key, types))
			return false;
		n = L;
	}
	if (n != L)
		return rd_fail(rd, types_from, "%s.types_from: config key '%s' in %s has %d entries, expected %d (layers.count)",
			       what, key, ir_config_name(rd->cfg), n, L);
	for (int i = 0; i < n; i++) {
		yaml_node_t *b = rd_get(rd, map, types[i]);
		if (!b)
			return rd_fail(rd, map, "%s.map: no block for layer type '%s' (layer %d, from %s key '%s')", what,
				       types[i], i, ir_config_name(rd->cfg), key);
		if ((blocks[i] = block_id(rd, b, what)) < 0)
			return false;
	}
	return true;
}

/* The optional `replaces` of an override: the block the layer had before. */
static bool check_replaces(rd_ctx *rd, const yaml_node_t *ov, int layer)
{
	yaml_node_t *rep = rd_get(rd, ov, "replaces");
	if (!rep)
		return true;
	int id = block_id(rd, rep, "layers.overrides.replaces");
	if (id < 0)
		return false;
	if (rd->m->layer_block[layer] != id)
		return rd_fail(rd, rep, "layers.overrides: layer %d runs block '%s', but this override replaces '%s' only",
			       layer, rd->m->funcs[rd->m->layer_block[layer]].name, rd->m->funcs[id].name);
	return true;
}

/* index_attr must name an int attribute that some op of the block has. */
static bool check_index_attr(rd_ctx *rd, const yaml_node_t *attr, const char *name, const ir_func *b)
{
	for (int j = 0; j < b->n_nodes; j++) {
		const ir_attr *a = ir_node_attr(&b->nodes[j], name);
		if (a && a->kind == IR_ATTR_INT)
			return true;
	}
	return rd_fail(rd, attr, "layers.overrides.index_attr: no op of block '%s' has an int attribute '%s'", b->name,
		       name);
}

/* Places the override's block at each layer its config list names. */
static bool place_override(rd_ctx *rd, const yaml_node_t *ov, const yaml_node_t *from, const int64_t *ids, int n,
			   const char *key)
{
	ir_module *m = rd->m;
	yaml_node_t *one = rd_get(rd, ov, "one_indexed"), *attr = rd_get(rd, ov, "index_attr");
	yaml_node_t *block = rd_need(rd, ov, "block", "layers.overrides");
	const char *one_s = one ? rd_choice(rd, one, "layers.overrides.one_indexed", bools) : "false";
	const char *attr_name = attr ? rd_str(rd, attr, "layers.overrides.index_attr") : NULL;
	if (!block || !one_s || (attr && !attr_name))
		return false;
	int id = block_id(rd, block, "layers.overrides.block");
	if (id < 0 || (attr && !check_index_attr(rd, attr, attr_name, &m->funcs[id])))
		return false;
	int64_t base = one_s[0] == 't';
	for (int p = 0; p < n; p++) {
		int64_t layer = ids[p] - base;
		if (layer < 0 || layer >= m->n_layers)
			return rd_fail(rd, from, "layers.overrides: %s key '%s' item %d is %lld, expected %lld to %lld (%s layer ids)",
				       ir_config_name(rd->cfg), key, p, (long long)ids[p], (long long)base,
				       (long long)(m->n_layers - 1 + base), base ? "one-indexed" : "zero-indexed");
		if (m->layer_entry[layer] >= 0)
			return rd_fail(rd, from, "layers.overrides: layer %lld is listed twice (%s key '%s' item %d)",
				       (long long)layer, ir_config_name(rd->cfg), key, p);
		if (!check_replaces(rd, ov, (int)layer))
			return false;
		m->layer_block[layer] = id;
		m->layer_entry[layer] = p;
		m->layer_entry_attr[layer] = attr_name;
	}
	return true;
}

static bool one_override(rd_ctx *rd, const yaml_node_t *ov)
{
	if (!rd_want_map(rd, ov, "layers.overrides item") || !rd_check_keys(rd, ov, override_keys, "layers.overrides"))
		return false;
	yaml_node_t *from = rd_need(rd, ov, "from", "layers.overrides");
	const char *key = from ? rd_scalar(rd, from, "layers.overrides.from") : NULL;
	int64_t *ids;
	int n;
	if (!key || !ir_config_ints(rd->cfg, key, &ids, &n, rd->err))
		return false;
	if (n < 0)
		return rd_fail(rd, from, "layers.overrides.from: config key '%s' is missing from %s", key,
			       ir_config_name(rd->cfg));
	bool ok = place_override(rd, ov, from, ids, n, key);
	free(ids);
	return ok;
}

/* Overrides run after pattern / types_from, in listed order; a layer may be
 * named by one override entry only, so the order never decides a block. */
static bool from_overrides(rd_ctx *rd, const yaml_node_t *list)
{
	if (!rd_want_seq(rd, list, "layers.overrides"))
		return false;
	ir_module *m = rd->m;
	m->layer_entry = ir_arena_alloc(&m->arena, (size_t)m->n_layers * sizeof(int));
	m->layer_entry_attr = ir_arena_alloc(&m->arena, (size_t)m->n_layers * sizeof(char *));
	for (int i = 0; i < m->n_layers; i++) {
		m->layer_entry[i] = -1;
		m->layer_entry_attr[i] = NULL;
	}
	for (int k = 0; k < rd_seq_len(list); k++)
		if (!one_override(rd, rd_seq_item(rd, list, k)))
			return false;
	return true;
}

/* Layers chain, so every block used as one takes and returns the same
 * number of values as the first one. */
static bool check_chain(rd_ctx *rd, const yaml_node_t *map)
{
	const ir_module *m = rd->m;
	const ir_func *first = &m->funcs[m->layer_block[0]];
	int k = first->n_inputs - first->n_reads;
	for (int i = 0; i < 2 * m->n_layers; i++) {
		int layer = i / 2, id = i % 2 ? (m->layer_then ? m->layer_then[layer] : -1) : m->layer_block[layer];
		if (id < 0)
			continue;
		const ir_func *b = &m->funcs[id];
		if (i % 2 && id == m->layer_block[layer])
			return rd_fail(rd, map, "layers.then: block '%s' is also the block of layer %d; a block runs once per layer",
				       b->name, layer);
		if (b->n_inputs - b->n_reads != k || b->n_outputs != k)
			return rd_fail(rd, map, "layers: block '%s' takes %d input(s) and returns %d output(s), but layers "
				       "chain: every layer block must take and return %d (as block '%s' takes; reads aside)",
				       b->name, b->n_inputs - b->n_reads, b->n_outputs, k, first->name);
	}
	return true;
}

/* `then`: one block after every layer, or a mapping choosing it per layer
 * by type like the layers' own (DeepSeek V4: hash-routed or top-k MoE). */
static bool read_then(rd_ctx *rd, const yaml_node_t *then)
{
	ir_module *m = rd->m;
	m->layer_then = ir_arena_alloc(&m->arena, (size_t)m->n_layers * sizeof(int));
	if (then->type == YAML_MAPPING_NODE)
		return rd_check_keys(rd, then, then_keys, "layers.then") &&
		       from_config(rd, then, "layers.then", m->layer_then);
	int id = block_id(rd, then, "layers.then");
	for (int i = 0; i < m->n_layers; i++)
		m->layer_then[i] = id;
	return id >= 0;
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
	yaml_node_t *then = rd_get(rd, map, "then");
	if (!pattern == !types)
		return rd_fail(rd, map, "layers: expected exactly one of 'pattern' or 'types_from'");
	static const char *const with_types[] = {"map", "types_by_interval", "types_by_count", "types_default",
						 "types_from_codes"};
	for (int k = 0; pattern && k < 5; k++) {
		yaml_node_t *x = rd_get(rd, map, with_types[k]);
		if (x)
			return rd_fail(rd, x, "layers.%s is used with types_from only", with_types[k]);
	}
	if (!(pattern ? from_pattern(rd, pattern) : from_config(rd, map, "layers", m->layer_block)))
		return false;
	yaml_node_t *overrides = rd_get(rd, map, "overrides");
	if (overrides && !from_overrides(rd, overrides))
		return false;
	if (then && !read_then(rd, then))
		return false;
	return check_chain(rd, map);
}
