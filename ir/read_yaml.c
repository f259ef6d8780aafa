/* libyaml document loading and accessors for the model reader. */
#include "ir/read_yaml.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_NESTING = 32 };

/* A node of the loaded document has the file it came from (an included
 * one's, rd->node_file); any other node (a second document's, reported as
 * an error) is the top file's. Compared as addresses: pointer arithmetic
 * between the document's node array and another object is undefined. */
ir_loc rd_loc(const rd_ctx *rd, const yaml_node_t *n)
{
	uintptr_t at = (uintptr_t)n, start = (uintptr_t)rd->doc.nodes.start, top = (uintptr_t)rd->doc.nodes.top;
	int id = start && at >= start && at < top ? (int)((at - start) / sizeof *n) + 1 : 0;
	const char *file = id > 0 && id < rd->n_node_file && rd->node_file[id] ? rd->node_file[id] : rd->path;
	return (ir_loc){file, (int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
}

bool rd_fail(rd_ctx *rd, const yaml_node_t *n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ir_error_setv(rd->err, rd_loc(rd, n), fmt, ap);
	va_end(ap);
	return false;
}

static bool syntax_error(rd_ctx *rd, const yaml_parser_t *p)
{
	ir_loc loc = {rd->path, (int)p->problem_mark.line + 1, (int)p->problem_mark.column + 1};
	if (p->context)
		ir_error_set(rd->err, loc, "YAML syntax error: %s %s", p->problem ? p->problem : "?", p->context);
	else
		ir_error_set(rd->err, loc, "YAML syntax error: %s", p->problem ? p->problem : "?");
	return false;
}

static yaml_node_t *node_at(rd_ctx *rd, int id)
{
	return yaml_document_get_node(&rd->doc, id);
}

/* Marks child as reached and queues it; a node reached twice came from an
 * alias. Marking at push time bounds the stack by the node count. */
static bool push(rd_ctx *rd, bool *seen, int *stack, int *sp, int child, int depth)
{
	if (seen[child])
		return rd_fail(rd, node_at(rd, child), "anchors and aliases are not supported (this node is used twice)");
	seen[child] = true;
	stack[(*sp)++] = child;
	stack[(*sp)++] = depth;
	return true;
}

static bool check_keys_unique(rd_ctx *rd, const yaml_node_t *n)
{
	yaml_node_pair_t *b = n->data.mapping.pairs.start, *e = n->data.mapping.pairs.top;
	for (yaml_node_pair_t *pr = b; pr < e; pr++) {
		yaml_node_t *k = node_at(rd, pr->key);
		if (k->type != YAML_SCALAR_NODE)
			return rd_fail(rd, k, "expected a plain key (a scalar), got a %s",
				       k->type == YAML_MAPPING_NODE ? "mapping" : "list");
		for (yaml_node_pair_t *q = b; q < pr; q++) {
			yaml_node_t *k2 = node_at(rd, q->key);
			if (k2->type == YAML_SCALAR_NODE &&
			    strcmp((char *)k2->data.scalar.value, (char *)k->data.scalar.value) == 0)
				return rd_fail(rd, k, "duplicate key '%s' (first at line %d)", (char *)k->data.scalar.value,
					       (int)k2->start_mark.line + 1);
		}
	}
	return true;
}

/* One pass over the tree with an explicit stack (no recursion on input
 * depth): keys are unique scalars, every node is reached once. */
static bool check_tree(rd_ctx *rd)
{
	int n_nodes = (int)(rd->doc.nodes.top - rd->doc.nodes.start);
	bool *seen = calloc((size_t)n_nodes + 1, sizeof(bool));
	int *stack = malloc(((size_t)n_nodes + 1) * sizeof(int) * 2);
	if (!seen || !stack)
		abort();
	int sp = 0;
	bool ok = push(rd, seen, stack, &sp, 1, 0);
	while (ok && sp) {
		int depth = stack[--sp], id = stack[--sp];
		yaml_node_t *n = node_at(rd, id);
		if (depth > MAX_NESTING && n->type != YAML_SCALAR_NODE) {
			ok = rd_fail(rd, n, "nesting deeper than %d levels", MAX_NESTING);
		} else if (n->type == YAML_SEQUENCE_NODE) {
			for (yaml_node_item_t *it = n->data.sequence.items.start; ok && it < n->data.sequence.items.top; it++)
				ok = push(rd, seen, stack, &sp, *it, depth + 1);
		} else if (n->type == YAML_MAPPING_NODE) {
			ok = check_keys_unique(rd, n);
			yaml_node_pair_t *pr = n->data.mapping.pairs.start;
			for (; ok && pr < n->data.mapping.pairs.top; pr++)
				ok = push(rd, seen, stack, &sp, pr->key, depth + 1) &&
				     push(rd, seen, stack, &sp, pr->value, depth + 1);
		}
	}
	free(seen);
	free(stack);
	return ok;
}

bool rd_load(rd_ctx *rd, const char *yaml, size_t len)
{
	yaml_parser_t p;
	if (!yaml_parser_initialize(&p))
		abort();
	yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
	bool ok = yaml_parser_load(&p, &rd->doc);
	if (!ok) {
		syntax_error(rd, &p);
		yaml_parser_delete(&p);
		return false;
	}
	rd->doc_loaded = true;
	yaml_node_t *root = yaml_document_get_root_node(&rd->doc);
	if (!root) {
		ir_error_set(rd->err, (ir_loc){rd->path, 1, 1}, "empty file: expected a model mapping");
		ok = false;
	} else {
		yaml_document_t next;
		if (!yaml_parser_load(&p, &next)) {
			ok = syntax_error(rd, &p);
		} else {
			yaml_node_t *extra = yaml_document_get_root_node(&next);
			if (extra)
				ok = rd_fail(rd, extra, "a second YAML document: expected one model per file");
			yaml_document_delete(&next);
		}
	}
	yaml_parser_delete(&p);
	return ok && check_tree(rd);
}

void rd_unload(rd_ctx *rd)
{
	if (rd->doc_loaded)
		yaml_document_delete(&rd->doc);
	rd->doc_loaded = false;
}

yaml_node_t *rd_root(rd_ctx *rd)
{
	return yaml_document_get_root_node(&rd->doc);
}

static const char *type_name(const yaml_node_t *n)
{
	return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a list" : "a scalar";
}

bool rd_want_map(rd_ctx *rd, const yaml_node_t *n, const char *what)
{
	if (n->type == YAML_MAPPING_NODE)
		return true;
	return rd_fail(rd, n, "expected a mapping for %s, got %s", what, type_name(n));
}

bool rd_want_seq(rd_ctx *rd, const yaml_node_t *n, const char *what)
{
	if (n->type == YAML_SEQUENCE_NODE)
		return true;
	return rd_fail(rd, n, "expected a list for %s, got %s", what, type_name(n));
}

const char *rd_scalar(rd_ctx *rd, const yaml_node_t *n, const char *what)
{
	if (n->type == YAML_SCALAR_NODE)
		return (const char *)n->data.scalar.value;
	rd_fail(rd, n, "expected a scalar for %s, got %s", what, type_name(n));
	return NULL;
}

const char *rd_str(rd_ctx *rd, const yaml_node_t *n, const char *what)
{
	const char *s = rd_scalar(rd, n, what);
	return s ? ir_arena_strdup(&rd->m->arena, s) : NULL;
}

int rd_map_len(const yaml_node_t *map)
{
	return (int)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
}

yaml_node_t *rd_map_key(rd_ctx *rd, const yaml_node_t *map, int i)
{
	return node_at(rd, map->data.mapping.pairs.start[i].key);
}

yaml_node_t *rd_map_val(rd_ctx *rd, const yaml_node_t *map, int i)
{
	return node_at(rd, map->data.mapping.pairs.start[i].value);
}

const char *rd_map_key_str(rd_ctx *rd, const yaml_node_t *map, int i)
{
	/* check_tree guarantees scalar keys */
	return (const char *)rd_map_key(rd, map, i)->data.scalar.value;
}

yaml_node_t *rd_get(rd_ctx *rd, const yaml_node_t *map, const char *key)
{
	for (int i = 0; i < rd_map_len(map); i++)
		if (strcmp(rd_map_key_str(rd, map, i), key) == 0)
			return rd_map_val(rd, map, i);
	return NULL;
}

yaml_node_t *rd_need(rd_ctx *rd, const yaml_node_t *map, const char *key, const char *what)
{
	yaml_node_t *v = rd_get(rd, map, key);
	if (!v)
		rd_fail(rd, map, "%s: missing required key '%s'", what, key);
	return v;
}

bool rd_check_keys(rd_ctx *rd, const yaml_node_t *map, const char *const *allowed, const char *what)
{
	for (int i = 0; i < rd_map_len(map); i++) {
		const char *k = rd_map_key_str(rd, map, i);
		bool found = false;
		for (int j = 0; allowed[j] && !found; j++)
			found = strcmp(allowed[j], k) == 0;
		if (found)
			continue;
		char list[256] = "";
		size_t pos = 0;
		for (int j = 0; allowed[j] && pos < sizeof(list); j++)
			pos += (size_t)snprintf(list + pos, sizeof(list) - pos, "%s%s", j ? ", " : "", allowed[j]);
		return rd_fail(rd, rd_map_key(rd, map, i), "unknown key '%s' in %s (expected one of: %s)", k, what,
			       list);
	}
	return true;
}

int rd_seq_len(const yaml_node_t *seq)
{
	return (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
}

yaml_node_t *rd_seq_item(rd_ctx *rd, const yaml_node_t *seq, int i)
{
	return node_at(rd, seq->data.sequence.items.start[i]);
}

ir_loc rd_text_loc(const rd_ctx *rd, const yaml_node_t *scalar)
{
	ir_loc loc = rd_loc(rd, scalar);
	yaml_scalar_style_t st = scalar->data.scalar.style;
	if (st == YAML_SINGLE_QUOTED_SCALAR_STYLE || st == YAML_DOUBLE_QUOTED_SCALAR_STYLE)
		loc.col++;
	return loc;
}
