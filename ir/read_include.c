/* `include:`: sections shared between model files (docs/ir.md, "Sharing
 * sections between files"). An included file is loaded into its own
 * document, its own includes merged into it first; its tree is then copied
 * into the including document, each node remembering its file, and its
 * sections merged: a section the includer lacks is added, the entries of a
 * mapping section both have are appended after the includer's. */
#include "ir/read_yaml.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INCLUDE_DEPTH = 8 };

/* Sections an included file may hold; all but draft are name mappings. */
static const char *const included_keys[] = {"params", "weights", "state", "blocks", "draft", "include", NULL};

static int node_id(const rd_ctx *rd, const yaml_node_t *n)
{
	return (int)(n - rd->doc.nodes.start) + 1;
}

static yaml_node_t *node(rd_ctx *rd, int id)
{
	return yaml_document_get_node(&rd->doc, id);
}

/* Grows rd->node_file to cover every node of rd->doc. */
static void cover_nodes(rd_ctx *rd)
{
	int n = (int)(rd->doc.nodes.top - rd->doc.nodes.start) + 1;
	if (n <= rd->n_node_file)
		return;
	const char **grown = realloc(rd->node_file, (size_t)n * sizeof(char *));
	if (!grown)
		abort();
	memset(grown + rd->n_node_file, 0, (size_t)(n - rd->n_node_file) * sizeof(char *));
	rd->node_file = grown;
	rd->n_node_file = n;
}

static int add_node_like(rd_ctx *dst, const yaml_node_t *src)
{
	yaml_char_t *tag = src->tag;
	switch (src->type) {
	case YAML_SCALAR_NODE:
		return yaml_document_add_scalar(&dst->doc, tag, src->data.scalar.value, (int)src->data.scalar.length,
						src->data.scalar.style);
	case YAML_SEQUENCE_NODE:
		return yaml_document_add_sequence(&dst->doc, tag, src->data.sequence.style);
	default:
		return yaml_document_add_mapping(&dst->doc, tag, src->data.mapping.style);
	}
}

/* Copies node id of sub (and its subtree: at most the nesting rd_load
 * allows) into dst; returns the new node's id. */
static int copy_tree(rd_ctx *dst, rd_ctx *sub, int id)
{
	const yaml_node_t *src = yaml_document_get_node(&sub->doc, id);
	int nid = add_node_like(dst, src);
	if (!nid)
		abort();
	yaml_node_t *n = node(dst, nid);
	n->start_mark = src->start_mark;
	n->end_mark = src->end_mark;
	cover_nodes(dst);
	dst->node_file[nid] = rd_loc(sub, src).file;
	if (src->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = src->data.sequence.items.start; it < src->data.sequence.items.top; it++)
			if (!yaml_document_append_sequence_item(&dst->doc, nid, copy_tree(dst, sub, *it)))
				abort();
	} else if (src->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = src->data.mapping.pairs.start; p < src->data.mapping.pairs.top; p++) {
			int k = copy_tree(dst, sub, p->key), v = copy_tree(dst, sub, p->value);
			if (!yaml_document_append_mapping_pair(&dst->doc, nid, k, v))
				abort();
		}
	}
	return nid;
}

/* The index of key in mapping map_id, or -1. */
static int find_key(rd_ctx *rd, int map_id, const char *key)
{
	const yaml_node_t *map = node(rd, map_id);
	for (int i = 0; i < rd_map_len(map); i++)
		if (strcmp(rd_map_key_str(rd, map, i), key) == 0)
			return i;
	return -1;
}

static bool defined_twice(rd_ctx *rd, const yaml_node_t *key, const yaml_node_t *first, const char *what)
{
	ir_loc at = rd_loc(rd, first);
	return rd_fail(rd, key, "%s '%s' is defined twice: here and at %s:%d:%d", what,
		       (const char *)key->data.scalar.value, at.file, at.line, at.col);
}

/* What an entry of a name-mapping section is: "block" for blocks. */
static const char *entry_noun(const char *section)
{
	return strcmp(section, "params") == 0 ? "param" : strcmp(section, "weights") == 0 ? "weight"
	       : strcmp(section, "blocks") == 0 ? "block" : section;
}

/* Appends the entries of mapping from_id to mapping into_id (the same
 * section of the includer); a name both have is an error. */
static bool merge_entries(rd_ctx *rd, int into_id, int from_id, const char *section)
{
	if (!rd_want_map(rd, node(rd, into_id), section) || !rd_want_map(rd, node(rd, from_id), section))
		return false;
	int n = rd_map_len(node(rd, from_id));
	for (int i = 0; i < n; i++) {
		const yaml_node_pair_t pair = node(rd, from_id)->data.mapping.pairs.start[i];
		int at = find_key(rd, into_id, (const char *)node(rd, pair.key)->data.scalar.value);
		if (at >= 0)
			return defined_twice(rd, node(rd, pair.key), rd_map_key(rd, node(rd, into_id), at),
					     entry_noun(section));
		if (!yaml_document_append_mapping_pair(&rd->doc, into_id, pair.key, pair.value))
			abort();
	}
	return true;
}

/* Merges the copied root of an included file (root_id) into rd's root. */
static bool merge_root(rd_ctx *rd, int root_id)
{
	int top = node_id(rd, rd_root(rd));
	if (!rd_check_keys(rd, node(rd, root_id), included_keys, "an included file"))
		return false;
	int n = rd_map_len(node(rd, root_id));
	for (int i = 0; i < n; i++) {
		const yaml_node_pair_t pair = node(rd, root_id)->data.mapping.pairs.start[i];
		const char *key = (const char *)node(rd, pair.key)->data.scalar.value;
		int at = find_key(rd, top, key);
		bool ok = true;
		if (strcmp(key, "include") == 0)
			continue; /* the included file's own, already merged into it */
		if (at < 0) {
			if (!yaml_document_append_mapping_pair(&rd->doc, top, pair.key, pair.value))
				abort();
		} else if (strcmp(key, "draft") == 0) {
			ok = defined_twice(rd, node(rd, pair.key), rd_map_key(rd, node(rd, top), at), "section");
		} else {
			ok = merge_entries(rd, node_id(rd, rd_map_val(rd, node(rd, top), at)), pair.value, key);
		}
		if (!ok)
			return false;
	}
	return true;
}

/* "a.yaml -> b.yaml -> c.yaml": the chain of includers from `from` down to
 * rd, then next. */
static void include_chain(const rd_ctx *rd, const rd_ctx *from, const char *next, char *buf, size_t len)
{
	const rd_ctx *chain[MAX_INCLUDE_DEPTH + 2];
	int n = 0;
	for (const rd_ctx *c = rd; c && n < MAX_INCLUDE_DEPTH + 1; c = c->parent) {
		chain[n++] = c;
		if (c == from)
			break;
	}
	size_t pos = 0;
	for (int i = n - 1; i >= 0 && pos < len; i--)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s -> ", chain[i]->path);
	if (pos < len)
		snprintf(buf + pos, len - pos, "%s", next);
}

/* Refuses including canon (shown as path) from rd: a file already being
 * read on the way here, or includes nested too deep. */
static bool check_chain(rd_ctx *rd, const yaml_node_t *at, const char *canon, const char *path)
{
	char buf[1024];
	int depth = 0;
	for (const rd_ctx *c = rd; c; c = c->parent, depth++) {
		if (c->canon && strcmp(c->canon, canon) == 0) {
			include_chain(rd, c, path, buf, sizeof(buf));
			return rd_fail(rd, at, "include cycle: %s", buf);
		}
	}
	if (depth > MAX_INCLUDE_DEPTH) {
		include_chain(rd, NULL, path, buf, sizeof(buf));
		return rd_fail(rd, at, "includes nest deeper than %d: %s", MAX_INCLUDE_DEPTH, buf);
	}
	return true;
}

const char *rd_dir_of(ir_arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return ".";
	return ir_arena_printf(a, "%.*s", (int)(slash == path ? 1 : slash - path), path);
}

/* Loads the file of include item `it` as sub (its includes merged). */
static bool load_included(rd_ctx *rd, const yaml_node_t *it, rd_ctx *sub)
{
	const char *rel = rd_scalar(rd, it, "an included file's path");
	if (!rel)
		return false;
	if (!rel[0] || rel[0] == '/')
		return rd_fail(rd, it, "include: expected a path relative to the including file, got '%s'", rel);
	const char *path = ir_arena_printf(&rd->m->arena, "%s/%s", rd->include_dir, rel);
	char canon[PATH_MAX];
	if (!realpath(path, canon))
		return rd_fail(rd, it, "include: cannot open %s: %s", path, strerror(errno));
	if (!check_chain(rd, it, canon, path))
		return false;
	ir_error read_err = {0};
	size_t len = 0;
	char *text = rd_slurp(path, &len, &read_err);
	if (!text)
		return rd_fail(rd, it, "include: %s", read_err.msg);
	*sub = (rd_ctx){.m = rd->m, .err = rd->err, .path = path, .include_dir = rd_dir_of(&rd->m->arena, path),
			.canon = strdup(canon), .parent = rd};
	bool ok = rd_load(sub, text, len) && rd_want_map(sub, rd_root(sub), "an included file") && rd_includes(sub);
	free(text);
	return ok;
}

static void unload_included(rd_ctx *sub)
{
	rd_unload(sub);
	free(sub->node_file);
	free(sub->canon);
}

bool rd_includes(rd_ctx *rd)
{
	yaml_node_t *root = rd_root(rd);
	yaml_node_t *inc = root->type == YAML_MAPPING_NODE ? rd_get(rd, root, "include") : NULL;
	if (!inc)
		return true;
	if (!rd->include_dir)
		return rd_fail(rd, inc, "include: this model was read from memory, with no directory to find the "
			       "included files in");
	if (!rd_want_seq(rd, inc, "include"))
		return false;
	int inc_id = node_id(rd, inc), n = rd_seq_len(inc);
	for (int i = 0; i < n; i++) {
		/* merging adds nodes, which moves them: hold ids, not pointers */
		rd_ctx sub = {0};
		bool ok = load_included(rd, rd_seq_item(rd, node(rd, inc_id), i), &sub);
		ok = ok && merge_root(rd, copy_tree(rd, &sub, node_id(&sub, rd_root(&sub))));
		unload_included(&sub);
		if (!ok)
			return false;
	}
	return true;
}
