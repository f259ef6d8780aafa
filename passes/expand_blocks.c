/* pass_expand_blocks: inlines every call into its graph function. An
 * instance call (a layer, or op block with `layer`) instantiates its block
 * for one layer: block-local weights and states become module entries
 * named layers.<i>.<block>.<name> (their checkpoint names with {i} replaced
 * by i), the body's nodes and values get the same prefix and node->layer =
 * i. An inline call (a block's call of a block, or a graph's call without
 * `layer`) joins the instance it is in: the callee's names take the
 * caller's prefix plus the call's `as`, the values it returns the call's
 * out names, its own weights and states the same prefixed names under the
 * caller's layer. Module-level refs stay as they are. The graph function is
 * rebuilt in listing order, with each call replaced by its body, so node
 * order stays the program order that order_effects relies on. */
#include "passes/graph_query.h"
#include "passes/passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	int first, count; /* the new nodes an old node became */
} node_span;

/* The instance a body is inlined into: its layer (-1: a graph's inline
 * call, outside any layer), the block the call placed (the one an
 * override's index_attr names) and its checkpoint prefix (or NULL). */
typedef struct {
	int layer;
	int top_ref;
	const char *hf_prefix;
} instance;

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

/* Block b's weight bw as the module weight prefix + its name (declared
 * once: a later instance of the same name shares it). */
static int layer_weight(ir_module *m, const ir_func *b, int bw, const char *prefix, const instance *in,
			ir_error *err)
{
	const ir_weight *src = &b->weights[bw];
	const char *hf_prefix = in->hf_prefix;
	const char *name = ir_arena_printf(&m->arena, "%s%s", prefix, src->name);
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
	w->hf_name = subst_layer(&m->arena, hf, in->layer);
	w->hf_fallback = subst_layer(&m->arena, fb, in->layer);
	w->layer = in->layer;
	return m->n_weights++;
}

static int layer_state(ir_module *m, const ir_func *b, int bs, const char *prefix, int layer)
{
	const ir_state *src = &b->states[bs];
	const char *name = ir_arena_printf(&m->arena, "%s%s", prefix, src->name);
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

/* How the values and ops of a body being copied are named: a value the
 * body returns takes ret[k], the caller's name for it (ret NULL: no such
 * renaming), any other name takes prefix (NULL: kept). */
typedef struct {
	const char *prefix;
	const char *const *ret;
} naming;

static const char *name_in(ir_arena *a, const naming *nm, const char *name)
{
	return name && nm->prefix ? ir_arena_printf(a, "%s%s", nm->prefix, name) : name;
}

/* nm's name for value v of `from` when `from` returns it, else NULL. */
static const char *returned_name(const ir_func *from, int v, const naming *nm)
{
	for (int k = 0; nm->ret && k < from->n_outputs; k++)
		if (from->outputs[k] == v)
			return nm->ret[k];
	return NULL;
}

static const char *value_name(ir_arena *a, const ir_func *from, int v, const naming *nm)
{
	const char *r = returned_name(from, v, nm);
	return r ? r : name_in(a, nm, from->values[v].name);
}

/* Appends a copy of src (a node of function `from`, whose values map
 * through vmap) to the rebuilt function, named by nm: an op whose first
 * result is returned takes that result's name, as ops are named by their
 * first out. */
static int copy_node(expand_ctx *c, const ir_func *from, const ir_node *src, int *vmap, const naming *nm,
		     int layer)
{
	ir_arena *a = &c->m->arena;
	const char *r = src->n_out ? returned_name(from, src->out[0], nm) : NULL;
	const char *name = r ? r : name_in(a, nm, src->name);
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
		int v = copy_value(c, sv, value_name(a, from, src->out[k], nm), id, k);
		c->f->nodes[id].out[k] = v;
		vmap[src->out[k]] = v;
	}
	return id;
}

/* Points a copied block node at its layer's weight or state (declared
 * already by inline_call, so found by name). */
static void bind_layer_ref(expand_ctx *c, const ir_func *b, ir_node *n, const char *prefix, const instance *in)
{
	if (!n->ref_local)
		return;
	if (n->op == IR_OP_WEIGHT)
		n->ref = layer_weight(c->m, b, n->ref, prefix, in, NULL);
	else
		n->ref = layer_state(c->m, b, n->ref, prefix, in->layer);
	n->ref_local = false;
}

/* A layer placed by an override with index_attr learns its position in the
 * override's config list (e.g. PLE's layer_index): the copied node gets its
 * own attribute array with that attribute set. The `then` block of the same
 * layer is a different call and keeps its attributes. */
static void bind_layer_entry(expand_ctx *c, int call_ref, int nid, int layer)
{
	const ir_module *m = c->m;
	if (!m->layer_entry_attr || layer < 0 || layer >= m->n_layers || call_ref != m->layer_block[layer] ||
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

/* Appends to new node id the new nodes of every old node in targets
 * (spans: what each node of the same body became). */
static void add_span_edges(expand_ctx *c, const node_span *span, int id, const int *targets, int n_targets)
{
	int extra = 0;
	for (int k = 0; k < n_targets; k++)
		extra += span[targets[k]].count;
	if (!extra)
		return;
	ir_node *n = &c->f->nodes[id];
	int *after = ir_arena_alloc(&c->m->arena, (size_t)(n->n_after + extra) * sizeof(int));
	if (n->n_after)
		memcpy(after, n->after, (size_t)n->n_after * sizeof(int));
	int cnt = n->n_after;
	for (int k = 0; k < n_targets; k++)
		for (int j = 0; j < span[targets[k]].count; j++)
			after[cnt++] = span[targets[k]].first + j;
	n->after = after;
	n->n_after = cnt;
}

/* The after: edges of a body's nodes (n of them, copied into spans): one
 * naming a call names every node of its body, and a call's own edges hold
 * for every node of its body. */
static void add_body_edges(expand_ctx *c, const node_span *span, const ir_node *nodes, int n)
{
	for (int j = 0; j < n; j++)
		for (int k = 0; nodes[j].n_after && k < span[j].count; k++)
			add_span_edges(c, span, span[j].first + k, nodes[j].after, nodes[j].n_after);
}

static bool inline_body(expand_ctx *c, const ir_func *b, int *bvmap, const naming *nm, const instance *in,
			ir_error *err);

/* An inline call in block `from` (named by nm): the callee's names take
 * nm's prefix plus the call's `as`, the values it returns the call's out
 * names. */
static bool inline_nested(expand_ctx *c, const ir_func *from, const ir_node *call, int *vmap, const naming *nm,
			  const instance *in, ir_error *err)
{
	ir_arena *a = &c->m->arena;
	const ir_func *b = &c->m->funcs[call->ref];
	const char **ret = ir_arena_alloc(a, (size_t)(call->n_out ? call->n_out : 1) * sizeof(char *));
	for (int k = 0; k < call->n_out; k++)
		ret[k] = value_name(a, from, call->out[k], nm);
	naming sub = {name_in(a, nm, ir_node_attr_str(call, "as", "")), ret};
	int *bvmap = xcalloc((size_t)b->n_values, sizeof(int));
	for (int k = 0; k < b->n_inputs; k++)
		bvmap[b->inputs[k]] = vmap[call->in[k]];
	bool ok = inline_body(c, b, bvmap, &sub, in, err);
	for (int k = 0; ok && k < b->n_outputs; k++)
		vmap[call->out[k]] = bvmap[b->outputs[k]];
	free(bvmap);
	return ok;
}

/* Copies block b's body (its values mapping through bvmap, inputs set) into
 * the rebuilt function, named by nm, as part of instance in. */
static bool inline_body(expand_ctx *c, const ir_func *b, int *bvmap, const naming *nm, const instance *in,
			ir_error *err)
{
	/* Declaration order, not body order, so the weight and state tables
	 * (and the plan's regions) do not depend on how ops are listed. */
	for (int k = 0; k < b->n_weights; k++)
		if (layer_weight(c->m, b, k, nm->prefix, in, err) < 0)
			return false;
	for (int k = 0; k < b->n_states; k++)
		layer_state(c->m, b, k, nm->prefix, in->layer);
	node_span *span = xcalloc((size_t)b->n_nodes, sizeof(node_span));
	bool ok = true;
	for (int j = 0; ok && j < b->n_nodes; j++) {
		const ir_node *bn = &b->nodes[j];
		int first = c->f->n_nodes;
		if (bn->op == IR_OP_CALL) {
			ok = inline_nested(c, b, bn, bvmap, nm, in, err);
		} else {
			int id = copy_node(c, b, bn, bvmap, nm, in->layer);
			bind_layer_ref(c, b, &c->f->nodes[id], nm->prefix, in);
			bind_layer_entry(c, in->top_ref, id, in->layer);
		}
		span[j] = (node_span){first, c->f->n_nodes - first};
	}
	if (ok)
		add_body_edges(c, span, b->nodes, b->n_nodes);
	free(span);
	return ok;
}

/* A call of the graph: an instance (with `layer`) named
 * layers.<layer>.<block>.*, or an inline call named by its `as`. */
static bool inline_call(expand_ctx *c, const ir_func *old_view, int oi, ir_error *err)
{
	const ir_node *call = &c->old[oi];
	const ir_func *b = &c->m->funcs[call->ref];
	if (call->n_in != b->n_inputs || call->n_out != b->n_outputs) {
		ir_error_set(err, call->loc, "call of block '%s' needs %d inputs, %d results", b->name, b->n_inputs,
			     b->n_outputs);
		return false;
	}
	int first = c->f->n_nodes;
	bool ok;
	if (ir_node_attr(call, "layer")) {
		int layer = (int)ir_node_attr_int(call, "layer", -1);
		instance in = {layer, call->ref, ir_node_attr_str(call, "hf_prefix", NULL)};
		naming nm = {ir_arena_printf(&c->m->arena, "layers.%d.%s.", layer, b->name), NULL};
		int *bvmap = xcalloc((size_t)b->n_values, sizeof(int));
		for (int k = 0; k < b->n_inputs; k++)
			bvmap[b->inputs[k]] = c->vmap[call->in[k]];
		ok = inline_body(c, b, bvmap, &nm, &in, err);
		for (int k = 0; ok && k < b->n_outputs; k++)
			c->vmap[call->out[k]] = bvmap[b->outputs[k]];
		free(bvmap);
	} else {
		instance in = {-1, call->ref, NULL};
		naming nm = {NULL, NULL};
		ok = inline_nested(c, old_view, call, c->vmap, &nm, &in, err);
	}
	c->span[oi] = (node_span){first, c->f->n_nodes - first};
	return ok;
}

typedef struct {
	const char *name;
	int node;
} named_node;

static int by_name(const void *a, const void *b)
{
	const named_node *x = a, *y = b;
	int d = strcmp(x->name, y->name);
	return d ? d : x->node - y->node;
}

/* Inline calls name their ops by `as`: two that share a prefix, or one
 * whose prefixed names meet the caller's, would name two ops alike. */
static bool check_unique_names(const ir_func *f, ir_error *err)
{
	named_node *all = xcalloc((size_t)f->n_nodes, sizeof(named_node));
	int n = 0;
	for (int i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].name)
			all[n++] = (named_node){f->nodes[i].name, i};
	qsort(all, (size_t)n, sizeof(named_node), by_name);
	bool ok = true;
	for (int i = 1; ok && i < n; i++) {
		const ir_node *a = &f->nodes[all[i - 1].node], *b = &f->nodes[all[i].node];
		if (strcmp(a->name, b->name) == 0) {
			ir_error_set(err, b->loc, "'%s' names two ops of '%s' once its calls are inlined (the other "
				     "from %s:%d:%d): give the inline call a distinct 'as'",
				     b->name, f->name, a->loc.file, a->loc.line, a->loc.col);
			ok = false;
		}
	}
	free(all);
	return ok;
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
	naming keep = {NULL, NULL};
	for (int oi = 0; ok && oi < n_old; oi++) {
		if (c.old[oi].op == IR_OP_CALL) {
			ok = inline_call(&c, &old_view, oi, err);
		} else {
			int id = copy_node(&c, &old_view, &c.old[oi], c.vmap, &keep, -1);
			c.span[oi] = (node_span){id, 1};
		}
	}
	if (ok)
		add_body_edges(&c, c.span, c.old, n_old);
	for (int i = 0; ok && i < f->n_outputs; i++)
		f->outputs[i] = c.vmap[f->outputs[i]];
	free(c.vmap);
	free(c.span);
	return ok && check_unique_names(f, err);
}

bool pass_expand_blocks(ir_module *m, ir_error *err)
{
	for (int i = 0; i < m->n_funcs; i++)
		if (!m->funcs[i].is_block && !expand_func(m, &m->funcs[i], err))
			return false;
	m->expanded = true;
	return true;
}
