/* The model reader's top level (ir/read_model.h). */
#include "ir/read_model.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/read_parts.h"

static const char *const top_keys[] = {"model",  "hf_model_types", "hf_prefixes", "params", "weights", "state",
				       "blocks", "layers",         "graphs",      "entries", "draft",  "include", NULL};
static const char *const prefix_keys[] = {"from", "to", NULL};
static const char *const entry_keys[] = {"graph", "tokens", "logits", "position", "recurrent", "output", NULL};
static const char *const logits_modes[] = {"all", "last", NULL};
static const char *const position_modes[] = {"session", "caller", NULL};
static const char *const recurrent_modes[] = {"last", "slots", NULL};
static const char *const output_modes[] = {"logits", "tokens", NULL};

static bool read_hf_types(rd_ctx *rd, const yaml_node_t *seq)
{
	if (!rd_want_seq(rd, seq, "hf_model_types"))
		return false;
	ir_module *m = rd->m;
	int n = rd_seq_len(seq);
	m->hf_types = ir_arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof(char *));
	for (int i = 0; i < n; i++)
		if (!(m->hf_types[i] = rd_str(rd, rd_seq_item(rd, seq, i), "a model_type")))
			return false;
	m->n_hf_types = n;
	return true;
}

static bool read_hf_prefixes(rd_ctx *rd, const yaml_node_t *seq)
{
	if (!rd_want_seq(rd, seq, "hf_prefixes"))
		return false;
	ir_module *m = rd->m;
	int n = rd_seq_len(seq);
	m->hf_prefix_from = ir_arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof(char *));
	m->hf_prefix_to = ir_arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof(char *));
	for (int i = 0; i < n; i++) {
		const yaml_node_t *item = rd_seq_item(rd, seq, i);
		yaml_node_t *from, *to;
		if (!rd_want_map(rd, item, "an hf_prefixes entry") || !rd_check_keys(rd, item, prefix_keys, "an hf_prefixes entry") ||
		    !(from = rd_need(rd, item, "from", "an hf_prefixes entry")) ||
		    !(to = rd_need(rd, item, "to", "an hf_prefixes entry")) ||
		    !(m->hf_prefix_from[i] = rd_str(rd, from, "a name prefix")) ||
		    !(m->hf_prefix_to[i] = rd_str(rd, to, "a name prefix")))
			return false;
		if (!m->hf_prefix_from[i][0])
			return rd_fail(rd, from, "hf_prefixes: an empty 'from' prefix would rewrite every name");
	}
	m->n_hf_prefixes = n;
	return true;
}

static bool read_entry(rd_ctx *rd, const yaml_node_t *spec, ir_entry *e)
{
	char what[160];
	snprintf(what, sizeof(what), "entry '%s'", e->name);
	if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, entry_keys, what))
		return false;
	yaml_node_t *g = rd_need(rd, spec, "graph", what), *tok = g ? rd_need(rd, spec, "tokens", what) : NULL;
	yaml_node_t *lg = rd_get(rd, spec, "logits");
	const char *gname = g ? rd_scalar(rd, g, "a graph name") : NULL;
	if (!gname || !tok)
		return false;
	e->func = ir_module_func(rd->m, gname);
	if (e->func < 0 || rd->m->funcs[e->func].is_block)
		return rd_fail(rd, g, "%s: unknown graph '%s'", what, gname);
	if (!rd_want_seq(rd, tok, "tokens"))
		return false;
	if (rd_seq_len(tok) != 2)
		return rd_fail(rd, tok, "%s: tokens: expected [min, max]", what);
	if (!rd_int(rd, rd_seq_item(rd, tok, 0), "tokens min", &e->t_min) ||
	    !rd_int(rd, rd_seq_item(rd, tok, 1), "tokens max", &e->t_max))
		return false;
	if (e->t_min < 1)
		return rd_fail(rd, tok, "%s: tokens min must be >= 1, got %lld", what, (long long)e->t_min);
	if (e->t_min > e->t_max)
		return rd_fail(rd, tok, "%s: t_min > t_max (%lld > %lld)", what, (long long)e->t_min, (long long)e->t_max);
	e->logits = lg ? rd_choice(rd, lg, "logits", logits_modes) : "all";
	yaml_node_t *pos = rd_get(rd, spec, "position");
	e->position = pos ? rd_choice(rd, pos, "position", position_modes) : "session";
	yaml_node_t *rec = rd_get(rd, spec, "recurrent");
	const char *mode = rec ? rd_choice(rd, rec, "recurrent", recurrent_modes) : "last";
	yaml_node_t *outn = rd_get(rd, spec, "output");
	const char *output = outn ? rd_choice(rd, outn, "output", output_modes) : "logits";
	if (!e->logits || !e->position || !mode || !output)
		return false;
	e->state_slots = strcmp(mode, "slots") == 0;
	e->tokens_out = strcmp(output, "tokens") == 0;
	if (e->state_slots && strcmp(e->position, "session") != 0)
		return rd_fail(rd, rec, "%s: recurrent: slots is for an entry at the session's position (a "
			       "verify step), not position: caller", what);
	return true;
}

/* Appends the entries of map (the target's, then the draft head's). */
static bool read_entries(rd_ctx *rd, const yaml_node_t *map)
{
	if (!rd_want_map(rd, map, "entries"))
		return false;
	ir_module *m = rd->m;
	int n = rd_map_len(map), base = m->n_entries;
	if (n == 0)
		return rd_fail(rd, map, "entries: expected at least one entry");
	ir_entry *all = ir_arena_alloc(&m->arena, (size_t)(base + n) * sizeof(ir_entry));
	if (base)
		memcpy(all, m->entries, (size_t)base * sizeof(ir_entry));
	m->entries = all;
	for (int i = 0; i < n; i++) {
		ir_entry *e = &m->entries[base + i];
		yaml_node_t *key = rd_map_key(rd, map, i);
		e->name = rd_str(rd, key, "an entry name");
		e->loc = rd_loc(rd, key);
		for (int j = 0; e->name && j < base + i; j++)
			if (strcmp(m->entries[j].name, e->name) == 0)
				return rd_fail(rd, key, "entry '%s' is defined twice", e->name);
		if (!e->name || !read_entry(rd, rd_map_val(rd, map, i), e))
			return false;
		m->n_entries = base + i + 1;
	}
	return true;
}

static bool check_module_weights_used(rd_ctx *rd)
{
	for (int i = 0; i < rd->m->n_weights; i++)
		if (!rd->module_weight_used[i]) {
			ir_error_set(rd->err, rd->m->weights[i].loc, "weight '%s' is declared but never used",
				     rd->m->weights[i].name);
			return false;
		}
	return true;
}

static bool read_decls(rd_ctx *rd, const yaml_node_t *root)
{
	ir_module *m = rd->m;
	yaml_node_t *w = rd_get(rd, root, "weights"), *s = rd_get(rd, root, "state");
	if (w && !rd_weights(rd, w, &m->weights, &m->n_weights))
		return false;
	m->cap_weights = m->n_weights;
	if (s && !rd_states(rd, s, &m->states, &m->n_states))
		return false;
	m->cap_states = m->n_states;
	rd->module_weight_used = calloc((size_t)m->n_weights + 1, sizeof(bool));
	if (!rd->module_weight_used)
		abort();
	return true;
}

static bool read_top(rd_ctx *rd, const yaml_node_t *root)
{
	if (!rd_want_map(rd, root, "the model") || !rd_check_keys(rd, root, top_keys, "the model"))
		return false;
	const char *what = "the model";
	yaml_node_t *model = rd_need(rd, root, "model", what);
	yaml_node_t *types = model ? rd_need(rd, root, "hf_model_types", what) : NULL;
	yaml_node_t *params = types ? rd_need(rd, root, "params", what) : NULL;
	yaml_node_t *graphs = params ? rd_need(rd, root, "graphs", what) : NULL;
	yaml_node_t *entries = graphs ? rd_need(rd, root, "entries", what) : NULL;
	yaml_node_t *prefixes = rd_get(rd, root, "hf_prefixes");
	if (!entries || !(rd->m->model = rd_str(rd, model, "the model name")) || !read_hf_types(rd, types) ||
	    (prefixes && !read_hf_prefixes(rd, prefixes)) || !rd_params(rd, params) || !read_decls(rd, root))
		return false;
	yaml_node_t *draft = rd_get(rd, root, "draft");
	bool with_draft;
	if (!rd_draft_wanted(rd, draft, &with_draft))
		return false;
	if (rd->force_draft && !draft)
		return rd_fail(rd, root, "a drafter is attached but the model file has no draft: section");
	with_draft = (with_draft || rd->force_draft) && !rd->no_draft;
	if (with_draft && !rd_draft_states(rd, draft))
		return false;
	yaml_node_t *draft_graphs = with_draft ? rd_get(rd, draft, "graphs") : NULL;
	if (!rd_funcs(rd, rd_get(rd, root, "blocks"), graphs, draft_graphs, rd_get(rd, root, "layers")) ||
	    !check_module_weights_used(rd) || !read_entries(rd, entries))
		return false;
	return !with_draft || (rd_draft_exports(rd, draft) && read_entries(rd, rd_get(rd, draft, "entries")));
}

/* ir_read_model_mem; canon: the real path of the model file model_name
 * when it was read from one (its includes resolve against its directory),
 * NULL when from memory (it may not include). */
static ir_module *read_model(const char *model_name, const char *yaml, size_t yaml_len, const char *config_name,
			     const char *config_json, size_t config_len, const ir_read_options *opts,
			     const char *canon, ir_error *err)
{
	rd_ctx rd = {.err = err,
		     .no_draft = opts && opts->no_draft,
		     .force_draft = opts && opts->force_draft,
		     .n_ctx = opts ? opts->n_ctx : 0,
		     .draft_max = opts ? opts->draft_max : 0,
		     .draft_vocab = opts ? opts->draft_vocab : 0};
	rd.cfg = ir_config_parse(config_name, config_json, config_len, err);
	if (!rd.cfg)
		return NULL;
	rd.m = ir_module_new(model_name);
	rd.path = rd.m->path;
	rd.include_dir = canon ? rd_dir_of(&rd.m->arena, model_name) : NULL;
	rd.canon = canon ? strdup(canon) : NULL;
	bool ok = rd_load(&rd, yaml, yaml_len) && rd_includes(&rd) && read_top(&rd, rd_root(&rd));
	rd_unload(&rd);
	ir_config_free(rd.cfg);
	free(rd.module_weight_used);
	free(rd.node_file);
	free(rd.canon);
	if (ok)
		return rd.m;
	ir_module_free(rd.m);
	return NULL;
}

ir_module *ir_read_model_mem(const char *model_name, const char *yaml, size_t yaml_len, const char *config_name,
			     const char *config_json, size_t config_len, const ir_read_options *opts, ir_error *err)
{
	return read_model(model_name, yaml, yaml_len, config_name, config_json, config_len, opts, NULL, err);
}

char *rd_slurp(const char *path, size_t *len, ir_error *err)
{
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		ir_error_set(err, (ir_loc){.file = path}, "cannot open: %s", strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0, got;
	char *buf = malloc(cap);
	while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += got;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	if (!buf)
		abort();
	if (ferror(fp)) {
		ir_error_set(err, (ir_loc){.file = path}, "read error");
		free(buf);
		buf = NULL;
	}
	fclose(fp);
	*len = n;
	return buf;
}

ir_module *ir_read_model(const char *model_path, const char *config_path, ir_error *err)
{
	return ir_read_model_opts(model_path, config_path, NULL, err);
}

ir_module *ir_read_model_opts(const char *model_path, const char *config_path, const ir_read_options *opts,
			      ir_error *err)
{
	size_t ylen = 0, clen = 0;
	char *yaml = rd_slurp(model_path, &ylen, err);
	char *json = yaml ? rd_slurp(config_path, &clen, err) : NULL;
	char canon[PATH_MAX];
	ir_module *m = json ? read_model(model_path, yaml, ylen, config_path, json, clen, opts,
					 realpath(model_path, canon), err)
			    : NULL;
	free(yaml);
	free(json);
	return m;
}
