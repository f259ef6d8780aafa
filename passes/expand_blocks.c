/* pass_expand_blocks: inlines every call into its graph function. Each call
 * instantiates its block for one layer: block-local weights and states
 * become module entries named layers.<i>.<block>.<name> (their checkpoint
 * names with {i} replaced by i), the body's nodes and values get the same
 * prefix and node->layer = i. Module-level refs stay as they are. The graph
 * function is rebuilt in listing order, with each call replaced by its body,
 * so node order stays the program order that order_effects relies on. */
#include "passes/graph_query.h"
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	int first, count; /* the new nodes an old node became */
} node_span;

typedef struct {
	ir_module *m;
	ir_func *f;       /* the graph function, being rebuilt */
	ir_node *old;     /* its nodes before the rebuild */
	ir_value *old_values;
	int *vmap;        /* old value id -> new value id, -1 before defined */
	node_span *span;  /* old node id -> new nodes */
} expand_ctx;

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p)
		abort();
	return p;
}

/* s with every "{i}" replaced by the layer index; NULL stays NULL. */
static const char *subst_layer(ir_arena *a, const char *s, int layer)
{
	if (!s || !strstr(s, "{i}"))
		return s;
	size_t cap = strlen(s) * 2 + 32, len = 0;
	char *out = ir_arena_alloc(a, cap);
	for (const char *p = s; *p;) {
		if (strncmp(p, "{i}", 3) == 0) {
			len += (size_t)snprintf(out + len, cap - len, "%d", layer);
			p += 3;
		} else {
			out[len++] = *p++;
		}
	}
	return out;
}

/* A block instance outside the stack (op block) takes its checkpoint names
 * from hf_prefix: "model.layers.{i}.mlp.gate.weight" with prefix
 * "mtp.layers.0" is "mtp.layers.0.mlp.gate.weight". NULL name stays NULL;
 * a name without "layers.{i}" cannot be re-prefixed and is returned as NULL
 * with *bad set. */
static const char *reprefix(ir_arena *a, const char *s, const char *prefix, bool *bad)
{
	static const char key[] = "layers.{i}";
	const char *at = s ? strstr(s, key) : NULL;
	if (!s || !prefix)
		return s;
	if (!at) {
		*bad = true;
		return NULL;
	}
	return ir_arena_printf(a, "%s%s", prefix, at + sizeof(key) - 1);
}

static int layer_weight(ir_module *m, const ir_func *b, int bw, int layer, const char *hf_prefix, ir_error *err)
{
	const ir_weight *src = &b->weights[bw];
	const char *name = ir_arena_printf(&m->arena, "layers.%d.%s.%s", layer, b->name, src->name);
	int id = ir_module_weight(m, name);
	if (id >= 0)
		return id;
	if (m->n_weights >= m->cap_weights) {
		int cap = m->n_weights < 8 ? 16 : m->n_weights * 2;
		m->weights = ir_arena_grow(&m->arena, m->weights, (size_t)m->n_weights * sizeof(ir_weight),
					   (size_t)cap * sizeof(ir_weight));
		m->cap_weights = cap;
	}
	bool bad = false;
	const char *hf = reprefix(&m->arena, src->hf_name, hf_prefix, &bad);
	const char *fb = reprefix(&m->arena, src->hf_fallback, hf_prefix, &bad);
	if (bad) {
		ir_error_set(err, src->loc, "weight '%s' of block '%s': an instance with hf_prefix '%s' needs "
			     "'layers.{i}' in its checkpoint names", src->name, b->name, hf_prefix);
		return -1;
	}
	ir_weight *w = &m->weights[m->n_weights];
	*w = *src;
	w->name = name;
	w->hf_name = subst_layer(&m->arena, hf, layer);
	w->hf_fallback = subst_layer(&m->arena, fb, layer);
	w->layer = layer;
	return m->n_weights++;
}

static int layer_state(ir_module *m, const ir_func *b, int bs, int layer)
{
	const ir_state *src = &b->states[bs];
	const char *name = ir_arena_printf(&m->arena, "layers.%d.%s.%s", layer, b->name, src->name);
	int id = ir_module_state(m, name);
	if (id >= 0)
		return id;
	ir_state s = *src;
	s.name = name;
	s.layer = layer;
	return ir_module_add_state(m, &s);
}

static int copy_value(expand_ctx *c, const ir_value *src, const char *name, int producer, int k)
{
	int v = ir_func_add_value(c->m, c->f, NULL, producer, k);
	ir_value *dst = &c->f->values[v];
	dst->name = name;
	dst->shape = src->shape;
	dst->dtype = src->dtype;
	dst->shape_known = src->shape_known;
	return v;
}

static int *map_ids(ir_arena *a, const int *ids, int n, const int *map)
{
	int *out = n ? ir_arena_alloc(a, (size_t)n * sizeof(int)) : NULL;
	for (int i = 0; i < n; i++)
		out[i] = map[ids[i]];
	return out;
}

/* Appends a copy of src (a node of function `from`, whose values map
 * through vmap) to the rebuilt function; results get names from prefix. */
static int copy_node(expand_ctx *c, const ir_func *from, const ir_node *src, int *vmap,
		     const char *prefix, int layer)
{
	ir_arena *a = &c->m->arena;
	const char *name = src->name && prefix ? ir_arena_printf(a, "%s%s", prefix, src->name) : src->name;
	int id = ir_func_add_node(c->m, c->f, src->op, NULL, src->loc);
	ir_node *n = &c->f->nodes[id];
	n->name = name;
	n->n_in = src->n_in;
	n->in = map_ids(a, src->in, src->n_in, vmap);
	n->n_attr = src->n_attr;
	n->attr = src->attr;
	n->ref = src->ref;
	n->ref_local = src->ref_local;
	n->layer = layer >= 0 ? layer : src->layer;
	n->n_fused = src->n_fused;
	n->fused = src->n_fused ? ir_arena_alloc(a, (size_t)src->n_fused * sizeof(ir_fused)) : NULL;
	for (int k = 0; k < src->n_fused; k++) {
		n->fused[k] = src->fused[k];
		n->fused[k].extra = map_ids(a, src->fused[k].extra, src->fused[k].n_extra, vmap);
	}
	n->n_out = src->n_out;
	n->out = src->n_out ? ir_arena_alloc(a, (size_t)src->n_out * sizeof(int)) : NULL;
	for (int k = 0; k < src->n_out; k++) {
		const ir_value *sv = &from->values[src->out[k]];
		const char *vn = sv->name && prefix ? ir_arena_printf(a, "%s%s", prefix, sv->name) : sv->name;
		int v = copy_value(c, sv, vn, id, k);
		c->f->nodes[id].out[k] = v;
		vmap[src->out[k]] = v;
	}
	return id;
}

/* Points a copied block node at its layer's weight or state (declared
 * already by inline_call, so found by name). */
static void bind_layer_ref(expand_ctx *c, const ir_func *b, ir_node *n, int layer)
{
	if (!n->ref_local)
		return;
	if (n->op == IR_OP_WEIGHT)
		n->ref = layer_weight(c->m, b, n->ref, layer, NULL, NULL);
	else
		n->ref = layer_state(c->m, b, n->ref, layer);
	n->ref_local = false;
}

/* A layer placed by an override with index_attr learns its position in the
 * override's config list (e.g. PLE's layer_index): the copied node gets its
 * own attribute array with that attribute set. The `then` block of the same
 * layer is a different call and keeps its attributes. */
static void bind_layer_entry(expand_ctx *c, int call_ref, int nid, int layer)
{
	const ir_module *m = c->m;
	if (!m->layer_entry_attr || layer >= m->n_layers || call_ref != m->layer_block[layer] ||
	    !m->layer_entry_attr[layer])
		return;
	ir_node *n = &c->f->nodes[nid];
	for (int k = 0; k < n->n_attr; k++) {
		if (n->attr[k].kind != IR_ATTR_INT || strcmp(n->attr[k].name, m->layer_entry_attr[layer]) != 0)
			continue;
		ir_attr *attr = ir_arena_alloc(&c->m->arena, (size_t)n->n_attr * sizeof(ir_attr));
		memcpy(attr, n->attr, (size_t)n->n_attr * sizeof(ir_attr));
		attr[k].i = m->layer_entry[layer];
		n->attr = attr;
		return;
	}
}

static bool inline_call(expand_ctx *c, int oi, ir_error *err)
{
	const ir_node *call = &c->old[oi];
	const ir_func *b = &c->m->funcs[call->ref];
	int layer = (int)ir_node_attr_int(call, "layer", call->layer);
	if (layer < 0 || call->n_in != b->n_inputs || call->n_out != b->n_outputs) {
		ir_error_set(err, call->loc, "call of block '%s' needs a layer index and %d inputs, %d "
			     "results", b->name, b->n_inputs, b->n_outputs);
		return false;
	}
	int *bvmap = xcalloc((size_t)b->n_values, sizeof(int));
	for (int k = 0; k < b->n_inputs; k++)
		bvmap[b->inputs[k]] = c->vmap[call->in[k]];
	/* Declaration order, not body order, so the weight and state tables
	 * (and the plan's regions) do not depend on how ops are listed. */
	const char *hf_prefix = ir_node_attr_str(call, "hf_prefix", NULL);
	for (int k = 0; k < b->n_weights; k++) {
		if (layer_weight(c->m, b, k, layer, hf_prefix, err) < 0) {
			free(bvmap);
			return false;
		}
	}
	for (int k = 0; k < b->n_states; k++)
		layer_state(c->m, b, k, layer);
	const char *prefix = ir_arena_printf(&c->m->arena, "layers.%d.%s.", layer, b->name);
	int first = c->f->n_nodes;
	for (int j = 0; j < b->n_nodes; j++) {
		const ir_node *bn = &b->nodes[j];
		if (bn->op == IR_OP_CALL) {
			ir_error_set(err, bn->loc, "block '%s' calls another block; blocks do not nest",
				     b->name);
			free(bvmap);
			return false;
		}
		int id = copy_node(c, b, bn, bvmap, prefix, layer);
		bind_layer_ref(c, b, &c->f->nodes[id], layer);
		bind_layer_entry(c, call->ref, id, layer);
	}
	for (int j = 0; j < b->n_nodes; j++) {
		/* Block-internal edges: block node j became node first + j. */
		const ir_node *bn = &b->nodes[j];
		ir_node *n = &c->f->nodes[first + j];
		n->n_after = bn->n_after;
		n->after = bn->n_after ? ir_arena_alloc(&c->m->arena, (size_t)bn->n_after * sizeof(int))
				       : NULL;
		for (int k = 0; k < bn->n_after; k++)
			n->after[k] = first + bn->after[k];
	}
	for (int k = 0; k < b->n_outputs; k++)
		c->vmap[call->out[k]] = bvmap[b->outputs[k]];
	c->span[oi] = (node_span){first, c->f->n_nodes - first};
	free(bvmap);
	return true;
}

/* Appends to new node id the new nodes of every old node in targets. */
static void add_span_edges(expand_ctx *c, int id, const int *targets, int n_targets)
{
	int extra = 0;
	for (int k = 0; k < n_targets; k++)
		extra += c->span[targets[k]].count;
	if (!extra)
		return;
	ir_node *n = &c->f->nodes[id];
	int *after = ir_arena_alloc(&c->m->arena, (size_t)(n->n_after + extra) * sizeof(int));
	if (n->n_after)
		memcpy(after, n->after, (size_t)n->n_after * sizeof(int));
	int cnt = n->n_after;
	for (int k = 0; k < n_targets; k++)
		for (int j = 0; j < c->span[targets[k]].count; j++)
			after[cnt++] = c->span[targets[k]].first + j;
	n->after = after;
	n->n_after = cnt;
}

/* Edges written on the graph's own ops (after: in the YAML) are kept; one
 * naming a call now names every node of its body, and a call's own edges
 * hold for every node of its body. */
static void remap_outer_edges(expand_ctx *c, int n_old)
{
	for (int oi = 0; oi < n_old; oi++) {
		const ir_node *o = &c->old[oi];
		if (!o->n_after)
			continue;
		for (int j = 0; j < c->span[oi].count; j++)
			add_span_edges(c, c->span[oi].first + j, o->after, o->n_after);
	}
}

static bool expand_func(ir_module *m, ir_func *f, ir_error *err)
{
	int n_old = f->n_nodes, n_old_values = f->n_values;
	expand_ctx c = {m, f, f->nodes, f->values, xcalloc((size_t)n_old_values, sizeof(int)),
			xcalloc((size_t)n_old, sizeof(node_span))};
	for (int v = 0; v < n_old_values; v++)
		c.vmap[v] = -1;
	f->nodes = NULL;
	f->n_nodes = f->cap_nodes = 0;
	f->values = NULL;
	f->n_values = f->cap_values = 0;
	for (int i = 0; i < f->n_inputs; i++) {
		int v = copy_value(&c, &c.old_values[f->inputs[i]], c.old_values[f->inputs[i]].name, -1, 0);
		c.vmap[f->inputs[i]] = v;
		f->inputs[i] = v;
	}
	/* copy_node reads result values from a function; give it the old one. */
	ir_func old_view = *f;
	old_view.values = c.old_values;
	old_view.n_values = n_old_values;
	bool ok = true;
	for (int oi = 0; ok && oi < n_old; oi++) {
		if (c.old[oi].op == IR_OP_CALL) {
			ok = inline_call(&c, oi, err);
		} else {
			int id = copy_node(&c, &old_view, &c.old[oi], c.vmap, NULL, -1);
			c.span[oi] = (node_span){id, 1};
		}
	}
	if (ok)
		remap_outer_edges(&c, n_old);
	for (int i = 0; ok && i < f->n_outputs; i++)
		f->outputs[i] = c.vmap[f->outputs[i]];
	free(c.vmap);
	free(c.span);
	return ok;
}

bool pass_expand_blocks(ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_funcs; i++)
		if (!m->funcs[i].is_block && !expand_func(m, &m->funcs[i], err))
			return false;
	m->expanded = true;
	return true;
}
