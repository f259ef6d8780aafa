/* params: bound from config.json, else from their default expression. */
#include "ir/read_parts.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const param_keys[] = {"config", "length_of", "default", "type", NULL};
static const char *const param_types[] = {"int", "float", "str", NULL};
static const char *const reserved[] = {"T", "sqrt", "min", "max", "ceil_div", "prime_sum", "int", "floor", NULL};

static bool check_name(rd_ctx *rd, const yaml_node_t *key, const char *name)
{
	bool ok = isalpha((unsigned char)name[0]) || name[0] == '_';
	for (const char *p = name; ok && *p; p++)
		ok = isalnum((unsigned char)*p) || *p == '_';
	if (!ok)
		return rd_fail(rd, key, "param name '%s' must be an identifier (letters, digits, _)", name);
	for (int i = 0; reserved[i]; i++)
		if (strcmp(name, reserved[i]) == 0)
			return rd_fail(rd, key, "param name '%s' is reserved in expressions", name);
	return true;
}

/* Binds p from the config value; *found is false when the key is absent. */
static bool bind_config(rd_ctx *rd, const yaml_node_t *keynode, const char *key, ir_param *p, bool *found)
{
	ir_cfg_kind kind;
	int64_t i = 0;
	double f = 0;
	if (!ir_config_number(rd->cfg, key, &kind, &i, &f, rd->err))
		return false;
	*found = kind != IR_CFG_ABSENT;
	if (!*found)
		return true;
	if (p->is_float) {
		p->f = kind == IR_CFG_INT ? (double)i : f;
		return true;
	}
	if (kind == IR_CFG_FLOAT) {
		if (f != floor(f) || fabs(f) > 9.0e15)
			return rd_fail(rd, keynode, "param '%s': config key '%s' in %s is %.9g, expected an int", p->name,
				       key, ir_config_name(rd->cfg), f);
		i = (int64_t)f;
	}
	p->i = i;
	return true;
}

/* length_of: the item count of a config list of integers (*found false when
 * the key is absent). */
static bool bind_length(rd_ctx *rd, const yaml_node_t *node, const char *key, ir_param *p, bool *found)
{
	int64_t *items;
	int n;
	if (p->is_float)
		return rd_fail(rd, node, "param '%s': length_of gives an int", p->name);
	if (!ir_config_ints(rd->cfg, key, &items, &n, rd->err))
		return false;
	free(items);
	*found = n >= 0;
	p->i = n;
	return true;
}

/* A string param (`type: str`): a config string, else the default as
 * written. It names a value for string attributes (a router's scoring),
 * never a number in an expression. */
static bool read_str_param(rd_ctx *rd, const yaml_node_t *key, const yaml_node_t *spec, const yaml_node_t *cfg,
			   const yaml_node_t *dflt, ir_param *p)
{
	if (rd_get(rd, spec, "length_of"))
		return rd_fail(rd, key, "param '%s': a string param takes 'config' and 'default' only", p->name);
	const char *cfg_key = cfg ? rd_scalar(rd, cfg, "a config key") : NULL, *v = NULL;
	if ((cfg && !cfg_key) || (cfg_key && !ir_config_string(rd->cfg, cfg_key, &v, rd->err)))
		return false;
	if (!v && !dflt)
		return rd_fail(rd, key, "param '%s': config key '%s' is missing from %s and there is no default", p->name,
			       cfg_key ? cfg_key : "", ir_config_name(rd->cfg));
	if (!v && !(v = rd_str(rd, dflt, "the default of a string param")))
		return false;
	p->s = ir_arena_strdup(&rd->m->arena, v);
	return true;
}

static bool read_param(rd_ctx *rd, const yaml_node_t *key, const yaml_node_t *spec, ir_param *p)
{
	if (!check_name(rd, key, p->name) || !rd_want_map(rd, spec, "a param spec") ||
	    !rd_check_keys(rd, spec, param_keys, "a param spec"))
		return false;
	yaml_node_t *type = rd_get(rd, spec, "type"), *cfg = rd_get(rd, spec, "config");
	yaml_node_t *dflt = rd_get(rd, spec, "default");
	if (type) {
		const char *t = rd_choice(rd, type, "param type", param_types);
		if (!t)
			return false;
		p->is_float = strcmp(t, "float") == 0;
		if (strcmp(t, "str") == 0)
			return read_str_param(rd, key, spec, cfg, dflt, p);
	}
	yaml_node_t *len = rd_get(rd, spec, "length_of");
	if (cfg && len)
		return rd_fail(rd, len, "param '%s': 'config' and 'length_of' exclude each other", p->name);
	if (len)
		cfg = len;
	const char *cfg_key = cfg ? rd_scalar(rd, cfg, "a config key") : NULL;
	if (cfg && !cfg_key)
		return false;
	bool found = false;
	if (cfg_key && !(len ? bind_length(rd, len, cfg_key, p, &found) : bind_config(rd, cfg, cfg_key, p, &found)))
		return false;
	if (found)
		return true;
	if (!dflt) {
		if (cfg_key)
			return rd_fail(rd, key, "param '%s': config key '%s' is missing from %s and there is no default",
				       p->name, cfg_key, ir_config_name(rd->cfg));
		return rd_fail(rd, key, "param '%s': expected 'config' or 'default'", p->name);
	}
	char what[160];
	snprintf(what, sizeof(what), "the default of param '%s'", p->name);
	return p->is_float ? rd_float(rd, dflt, what, &p->f) : rd_int(rd, dflt, what, &p->i);
}

/* The context length the caller asked for replaces param n_ctx, within the
 * positions the model was trained for. */
static bool override_ctx(rd_ctx *rd, const yaml_node_t *key, ir_param *p)
{
	ir_cfg_kind kind;
	int64_t max = 0;
	double f;
	if (p->is_float)
		return rd_fail(rd, key, "param 'n_ctx' must be an int to take a context length");
	if (!ir_config_number(rd->cfg, "max_position_embeddings", &kind, &max, &f, rd->err))
		return false;
	if (kind == IR_CFG_INT && rd->n_ctx > max)
		return rd_fail(rd, key, "a context of %lld tokens is more than max_position_embeddings = %lld in %s",
			       (long long)rd->n_ctx, (long long)max, ir_config_name(rd->cfg));
	p->i = rd->n_ctx;
	return true;
}

/* With no context length asked for, param n_ctx keeps the model file's
 * default, or max_position_embeddings where that is smaller: a default
 * never sizes caches past the positions the model was trained for. */
static bool clamp_default_ctx(rd_ctx *rd, ir_param *p)
{
	ir_cfg_kind kind;
	int64_t max = 0;
	double f;
	if (p->is_float)
		return true;
	if (!ir_config_number(rd->cfg, "max_position_embeddings", &kind, &max, &f, rd->err))
		return false;
	if (kind == IR_CFG_INT && max > 0 && p->i > max)
		p->i = max;
	return true;
}

/* The draft count the caller asked for replaces param draft_max. */
static bool override_draft_max(rd_ctx *rd, const yaml_node_t *key, ir_param *p)
{
	if (p->is_float)
		return rd_fail(rd, key, "param 'draft_max' must be an int to take a draft count");
	p->i = rd->draft_max;
	return true;
}

/* The draft vocabulary the caller asked for replaces param draft_vocab,
 * whose default (the whole vocabulary) bounds it. */
static bool override_draft_vocab(rd_ctx *rd, const yaml_node_t *key, ir_param *p)
{
	if (p->is_float)
		return rd_fail(rd, key, "param 'draft_vocab' must be an int to take a draft vocabulary");
	if (rd->draft_vocab > p->i)
		return rd_fail(rd, key, "a draft vocabulary of %lld tokens was asked for; the vocabulary has %lld",
			       (long long)rd->draft_vocab, (long long)p->i);
	p->i = rd->draft_vocab;
	return true;
}

/* A param the caller's options replace: its name, the value asked for (0:
 * none) and how to apply it. */
typedef struct {
	const char *name, *what;
	int64_t value;
	bool (*apply)(rd_ctx *rd, const yaml_node_t *key, ir_param *p);
} param_override;

bool rd_params(rd_ctx *rd, const yaml_node_t *map)
{
	if (!rd_want_map(rd, map, "params"))
		return false;
	ir_module *m = rd->m;
	const param_override overrides[] = {
		{"n_ctx", "a context length", rd->n_ctx, override_ctx},
		{"draft_max", "a draft count", rd->draft_max, override_draft_max},
		{"draft_vocab", "a draft vocabulary", rd->draft_vocab, override_draft_vocab},
	};
	int n = rd_map_len(map);
	m->params = ir_arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof(ir_param));
	/* m->n_params grows one at a time so a default sees earlier params only */
	for (int i = 0; i < n; i++) {
		yaml_node_t *key = rd_map_key(rd, map, i);
		ir_param *p = &m->params[i];
		p->name = rd_str(rd, key, "a param name");
		p->loc = rd_loc(rd, key);
		if (!read_param(rd, key, rd_map_val(rd, map, i), p))
			return false;
		for (size_t k = 0; k < sizeof overrides / sizeof *overrides; k++)
			if (overrides[k].value > 0 && strcmp(p->name, overrides[k].name) == 0 &&
			    !overrides[k].apply(rd, key, p))
				return false;
		if (rd->n_ctx <= 0 && strcmp(p->name, "n_ctx") == 0 && !clamp_default_ctx(rd, p))
			return false;
		m->n_params = i + 1;
	}
	for (size_t k = 0; k < sizeof overrides / sizeof *overrides; k++)
		if (overrides[k].value > 0 && !ir_module_param(m, overrides[k].name))
			return rd_fail(rd, map, "%s was asked for, but the model file declares no param '%s'",
				       overrides[k].what, overrides[k].name);
	return true;
}
