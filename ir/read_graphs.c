/* blocks and graphs: function shells (names, inputs, declarations), then
 * bodies: blocks first, then the layer list, then graphs (which use it). */
#include "ir/read_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_IO = 8 };

static const char *const block_keys[] = {"weights", "state", "inputs", "reads", "body", "outputs", NULL};
static const char *const graph_keys[] = {"inputs", "body", "outputs", NULL};
static const char *const input_keys[] = {"shape", "dtype", NULL};

static bool add_input(rd_ctx *rd, ir_func *f, const yaml_node_t *n, const char *name, int idx)
{
	if (!rd_name_free(rd, f, n, name))
		return false;
	f->inputs[idx] = ir_func_add_value(rd->m, f, name, -1, 0);
	return true;
}

/* inputs, then reads (values of the caller taken by name): both become the
 * block's inputs, the reads last. */
static bool block_inputs(rd_ctx *rd, ir_func *f, const yaml_node_t *ins, const yaml_node_t *reads)
{
	if (!rd_want_seq(rd, ins, "block inputs") || (reads && !rd_want_seq(rd, reads, "block reads")))
		return false;
	int n = rd_seq_len(ins), nr = reads ? rd_seq_len(reads) : 0;
	if (n < 1 || n + nr > MAX_IO)
		return rd_fail(rd, ins, "block '%s': expected 1 to %d inputs and reads, got %d", f->name, MAX_IO, n + nr);
	f->inputs = ir_arena_alloc(&rd->m->arena, (size_t)(n + nr) * sizeof(int));
	for (int i = 0; i < n + nr; i++) {
		yaml_node_t *item = rd_seq_item(rd, i < n ? ins : reads, i < n ? i : i - n);
		const char *name = rd_scalar(rd, item, i < n ? "an input name" : "a name the block reads");
		if (!name || !add_input(rd, f, item, name, i))
			return false;
		f->n_inputs = i + 1;
	}
	f->n_reads = nr;
	return true;
}

static bool graph_inputs(rd_ctx *rd, ir_func *f, const yaml_node_t *ins)
{
	if (!rd_want_map(rd, ins, "graph inputs"))
		return false;
	int n = rd_map_len(ins);
	f->inputs = ir_arena_alloc(&rd->m->arena, (size_t)(n ? n : 1) * sizeof(int));
	for (int i = 0; i < n; i++) {
		yaml_node_t *key = rd_map_key(rd, ins, i), *spec = rd_map_val(rd, ins, i);
		const char *name = rd_map_key_str(rd, ins, i);
		char what[160];
		snprintf(what, sizeof(what), "graph input '%s'", name);
		if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, input_keys, what))
			return false;
		yaml_node_t *shape = rd_need(rd, spec, "shape", what), *dt = rd_get(rd, spec, "dtype");
		ir_shape s;
		halo_dtype t = HALO_F32;
		if (!shape || !rd_shape(rd, shape, true, what, &s) || (dt && !rd_dtype(rd, dt, &t)) ||
		    !add_input(rd, f, key, name, i))
			return false;
		ir_value *v = &f->values[f->inputs[i]];
		v->shape = s;
		v->dtype = t;
		v->shape_known = true;
		f->n_inputs = i + 1;
	}
	return true;
}

static bool want_outputs(rd_ctx *rd, const ir_func *f, const yaml_node_t *outs)
{
	if (!rd_want_seq(rd, outs, "outputs"))
		return false;
	int n = rd_seq_len(outs);
	if (n < 1 || n > MAX_IO)
		return rd_fail(rd, outs, "'%s': expected 1 to %d outputs, got %d", f->name, MAX_IO, n);
	return true;
}

/* Fills f's name, declarations and inputs; the body is read later. */
static bool read_shell(rd_ctx *rd, const yaml_node_t *map, int i, bool is_block, int fid)
{
	ir_module *m = rd->m;
	ir_func *f = &m->funcs[fid];
	yaml_node_t *key = rd_map_key(rd, map, i), *spec = rd_map_val(rd, map, i);
	const char *name = rd_map_key_str(rd, map, i);
	char what[160];
	snprintf(what, sizeof(what), "%s '%s'", is_block ? "block" : "graph", name);
	if (ir_module_func(m, name) >= 0)
		return rd_fail(rd, key, "'%s' is defined twice (a block and a graph share the name)", name);
	if (!rd_want_map(rd, spec, what) || !rd_check_keys(rd, spec, is_block ? block_keys : graph_keys, what))
		return false;
	yaml_node_t *ins = rd_need(rd, spec, "inputs", what);
	yaml_node_t *body = ins ? rd_need(rd, spec, "body", what) : NULL;
	yaml_node_t *outs = body ? rd_need(rd, spec, "outputs", what) : NULL;
	if (!outs)
		return false;
	f->name = ir_arena_strdup(&m->arena, name);
	f->is_block = is_block;
	f->loc = rd_loc(rd, key);
	m->n_funcs = fid + 1;
	yaml_node_t *w = is_block ? rd_get(rd, spec, "weights") : NULL, *s = is_block ? rd_get(rd, spec, "state") : NULL;
	if ((w && !rd_weights(rd, w, &f->weights, &f->n_weights)) || (s && !rd_states(rd, s, &f->states, &f->n_states)))
		return false;
	if (!(is_block ? block_inputs(rd, f, ins, rd_get(rd, spec, "reads")) : graph_inputs(rd, f, ins)) ||
	    !want_outputs(rd, f, outs))
		return false;
	/* known before the bodies are read: a block may call one defined later */
	f->n_outputs = rd_seq_len(outs);
	return true;
}

static bool read_bodies(rd_ctx *rd, const yaml_node_t *map, int first)
{
	for (int i = 0; map && i < rd_map_len(map); i++) {
		yaml_node_t *spec = rd_map_val(rd, map, i);
		if (!rd_body(rd, first + i, rd_get(rd, spec, "body"), rd_get(rd, spec, "outputs")))
			return false;
	}
	return true;
}

typedef struct {
	rd_ctx *rd;
	char *color; /* per function: 0 not seen, 1 on the current chain, 2 done */
	int *height; /* per block once done: the most blocks a chain of calls below it has */
	int chain[IR_MAX_CALL_DEPTH + 1];
	int depth;
} calls_ctx;

/* "a -> b -> c": the chain from its block `from` on, then callee. */
static const char *chain_str(const calls_ctx *c, int from, int callee, char *buf, size_t len)
{
	const ir_func *fs = c->rd->m->funcs;
	size_t pos = 0;
	for (int i = from; i < c->depth && pos < len; i++)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s -> ", fs[c->chain[i]].name);
	if (pos < len)
		snprintf(buf + pos, len - pos, "%s", fs[callee].name);
	return buf;
}

static bool visit_calls(calls_ctx *c, int b);

/* The call n (in the block on top of the chain) of block callee. */
static bool check_call(calls_ctx *c, const ir_node *n, int callee)
{
	char buf[512];
	if (c->color[callee] == 1) {
		int from = 0;
		while (c->chain[from] != callee)
			from++;
		ir_error_set(c->rd->err, n->loc, "block '%s' calls itself: %s", c->rd->m->funcs[callee].name,
			     chain_str(c, from, callee, buf, sizeof(buf)));
		return false;
	}
	if (c->depth < IR_MAX_CALL_DEPTH && c->color[callee] == 0 && !visit_calls(c, callee))
		return false;
	if (c->depth >= IR_MAX_CALL_DEPTH || c->depth + 1 + c->height[callee] > IR_MAX_CALL_DEPTH) {
		ir_error_set(c->rd->err, n->loc, "blocks calling blocks nest deeper than %d: %s%s", IR_MAX_CALL_DEPTH,
			     chain_str(c, 0, callee, buf, sizeof(buf)), c->height[callee] ? " -> ..." : "");
		return false;
	}
	return true;
}

static bool visit_calls(calls_ctx *c, int b)
{
	const ir_func *f = &c->rd->m->funcs[b];
	c->color[b] = 1;
	c->chain[c->depth++] = b;
	int h = 0;
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		if (n->op != IR_OP_CALL)
			continue;
		if (!check_call(c, n, n->ref))
			return false;
		h = c->height[n->ref] + 1 > h ? c->height[n->ref] + 1 : h;
	}
	c->depth--;
	c->color[b] = 2;
	c->height[b] = h;
	return true;
}

/* Blocks calling blocks (functions 0..nb-1): no block calls itself, even
 * through others, and no chain of calls holds more than IR_MAX_CALL_DEPTH
 * blocks. */
static bool check_block_calls(rd_ctx *rd, int nb)
{
	calls_ctx c = {rd, calloc((size_t)nb + 1, 1), calloc((size_t)nb + 1, sizeof(int)), {0}, 0};
	if (!c.color || !c.height)
		abort();
	bool ok = true;
	for (int b = 0; ok && b < nb; b++)
		ok = c.color[b] || visit_calls(&c, b);
	free(c.color);
	free(c.height);
	return ok;
}

bool rd_funcs(rd_ctx *rd, const yaml_node_t *blocks, const yaml_node_t *graphs, const yaml_node_t *draft_graphs,
	      const yaml_node_t *layers)
{
	ir_module *m = rd->m;
	if ((blocks && !rd_want_map(rd, blocks, "blocks")) || !rd_want_map(rd, graphs, "graphs") ||
	    (draft_graphs && !rd_want_map(rd, draft_graphs, "draft graphs")))
		return false;
	int nb = blocks ? rd_map_len(blocks) : 0, ng = rd_map_len(graphs);
	int nd = draft_graphs ? rd_map_len(draft_graphs) : 0;
	if (ng == 0)
		return rd_fail(rd, graphs, "graphs: expected at least one graph");
	m->funcs = ir_arena_alloc(&m->arena, (size_t)(nb + ng + nd) * sizeof(ir_func));
	for (int i = 0; i < nb; i++)
		if (!read_shell(rd, blocks, i, true, i))
			return false;
	for (int i = 0; i < ng; i++)
		if (!read_shell(rd, graphs, i, false, nb + i))
			return false;
	for (int i = 0; i < nd; i++)
		if (!read_shell(rd, draft_graphs, i, false, nb + ng + i))
			return false;
	/* layers need the blocks' outputs, graphs need the layers */
	if (!read_bodies(rd, blocks, 0) || !check_block_calls(rd, nb))
		return false;
	if (layers && !rd_layers(rd, layers))
		return false;
	return read_bodies(rd, graphs, nb) && read_bodies(rd, draft_graphs, nb + ng);
}
