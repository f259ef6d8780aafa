/* A function body: ops, name resolution, weights named in `in:`, state
 * references, `after:` edges and the cycle check. */
#include "ir/ops.h"
#include "ir/read_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
	rd_ctx *rd;
	int fid;
	int *local_wval;  /* per block weight: the value of its weight node, -1 before first use */
	int *module_wval; /* per module weight, likewise */
	int n_pending;
	int *pending_node;               /* ops with an after: list ... */
	const yaml_node_t **pending_after; /* ... and that list */
} body_ctx;

static const char *const fixed_keys[] = {"op", "out", "in", "state", "name", "after", NULL};

static ir_func *F(const body_ctx *bc)
{
	return &bc->rd->m->funcs[bc->fid];
}

int rd_local_weight(const ir_func *f, const char *name)
{
	for (int i = 0; i < f->n_weights; i++)
		if (strcmp(f->weights[i].name, name) == 0)
			return i;
	return -1;
}

bool rd_name_free(rd_ctx *rd, const ir_func *f, const yaml_node_t *n, const char *name)
{
	int v = ir_func_value(f, name);
	if (v >= 0) {
		int p = f->values[v].producer;
		if (p >= 0)
			return rd_fail(rd, n, "'%s' is defined twice (first by the op at line %d)", name, f->nodes[p].loc.line);
		return rd_fail(rd, n, "'%s' is defined twice (it is an input of '%s')", name, f->name);
	}
	int k = ir_func_node(f, name);
	if (k >= 0)
		return rd_fail(rd, n, "'%s' is defined twice (it names the op at line %d)", name, f->nodes[k].loc.line);
	if (rd_local_weight(f, name) >= 0 || ir_module_weight(rd->m, name) >= 0)
		return rd_fail(rd, n, "'%s' is defined twice (it names a weight)", name);
	return true;
}

static int weight_value(body_ctx *bc, const yaml_node_t *n, const char *name, int w, bool local)
{
	int *slot = local ? &bc->local_wval[w] : &bc->module_wval[w];
	if (*slot >= 0)
		return *slot;
	ir_module *m = bc->rd->m;
	ir_func *f = F(bc);
	int nid = ir_func_add_node(m, f, IR_OP_WEIGHT, name, rd_loc(bc->rd, n));
	int vid = ir_func_add_value(m, f, name, nid, 0);
	ir_node *node = &f->nodes[nid];
	node->ref = w;
	node->ref_local = local;
	node->n_out = 1;
	node->out = ir_arena_alloc(&m->arena, sizeof(int));
	node->out[0] = vid;
	if (!local)
		bc->rd->module_weight_used[w] = true;
	return *slot = vid;
}

/* A name in `in:`: a value of f, else a block weight, else a module weight. */
static int resolve_in(body_ctx *bc, const yaml_node_t *n)
{
	const char *name = rd_scalar(bc->rd, n, "an operand name");
	if (!name)
		return -1;
	ir_func *f = F(bc);
	int v = ir_func_value(f, name);
	if (v >= 0)
		return v;
	int w = rd_local_weight(f, name);
	if (w >= 0)
		return weight_value(bc, n, name, w, true);
	w = ir_module_weight(bc->rd->m, name);
	if (w >= 0)
		return weight_value(bc, n, name, w, false);
	rd_fail(bc->rd, n, "undefined value '%s' (not an input, an earlier output or a weight)", name);
	return -1;
}

/* Resolves `in:` into an arena array; *n_in = -1 on error. */
static int *read_ins(body_ctx *bc, const yaml_node_t *ins, int *n_in)
{
	*n_in = -1;
	if (!ins) {
		*n_in = 0;
		return NULL;
	}
	if (!rd_want_seq(bc->rd, ins, "in"))
		return NULL;
	int n = rd_seq_len(ins);
	int *ids = ir_arena_alloc(&bc->rd->m->arena, (size_t)(n ? n : 1) * sizeof(int));
	for (int i = 0; i < n; i++)
		if ((ids[i] = resolve_in(bc, rd_seq_item(bc->rd, ins, i))) < 0)
			return NULL;
	*n_in = n;
	return ids;
}

/* `out:` is a name or a list of names; returns the count, -1 on error. */
static int out_names(body_ctx *bc, const yaml_node_t *out, const yaml_node_t **names, int max)
{
	if (out->type == YAML_SCALAR_NODE) {
		names[0] = out;
		return 1;
	}
	if (!rd_want_seq(bc->rd, out, "out"))
		return -1;
	int n = rd_seq_len(out);
	if (n > max) {
		rd_fail(bc->rd, out, "out: at most %d names, got %d", max, n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		names[i] = rd_seq_item(bc->rd, out, i);
		if (!rd_scalar(bc->rd, names[i], "an output name"))
			return -1;
	}
	return n;
}

static void add_outputs(body_ctx *bc, int nid, const yaml_node_t **names, int n)
{
	ir_module *m = bc->rd->m;
	ir_func *f = F(bc);
	int *out = ir_arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof(int));
	for (int i = 0; i < n; i++)
		out[i] = ir_func_add_value(m, f, rd_scalar(bc->rd, names[i], "an output name"), nid, i);
	f->nodes[nid].out = out;
	f->nodes[nid].n_out = n;
}

static bool names_free(body_ctx *bc, const yaml_node_t **names, int n)
{
	for (int i = 0; i < n; i++) {
		const char *s = rd_scalar(bc->rd, names[i], "an output name");
		if (!rd_name_free(bc->rd, F(bc), names[i], s))
			return false;
		for (int j = 0; j < i; j++)
			if (strcmp(s, rd_scalar(bc->rd, names[j], "an output name")) == 0)
				return rd_fail(bc->rd, names[i], "'%s' is defined twice in one out: list", s);
	}
	return true;
}

static bool read_attr(body_ctx *bc, ir_op op, const char *key, const yaml_node_t *v, ir_attr *a)
{
	rd_ctx *rd = bc->rd;
	const ir_attr_schema *s = ir_op_attr_schema(op, key);
	char what[160];
	snprintf(what, sizeof(what), "attribute '%s' of %s", key, ir_op_name(op));
	a->name = s->name;
	a->kind = s->kind;
	bool ok = true;
	switch (s->kind) {
	case IR_ATTR_INT:
		ok = rd_int(rd, v, what, &a->i);
		break;
	case IR_ATTR_FLOAT:
		ok = rd_float(rd, v, what, &a->f);
		break;
	case IR_ATTR_STR: { /* a string param's name stands for its value */
		ok = (a->s = rd_str(rd, v, what)) != NULL;
		const ir_param *p = ok ? ir_module_param(rd->m, a->s) : NULL;
		if (p && p->s)
			a->s = p->s;
		break;
	}
	case IR_ATTR_SHAPE:
		ok = rd_shape(rd, v, true, what, &a->shape);
		break;
	case IR_ATTR_INTS: {
		if (!rd_want_seq(rd, v, what))
			return false;
		a->n_ints = rd_seq_len(v);
		int64_t *ints = ir_arena_alloc(&rd->m->arena, (size_t)(a->n_ints ? a->n_ints : 1) * sizeof(int64_t));
		for (int i = 0; ok && i < a->n_ints; i++)
			ok = rd_int(rd, rd_seq_item(rd, v, i), what, &ints[i]);
		a->ints = ints;
		break;
	}
	}
	return ok && ir_op_check_attr(op, a, rd_loc(rd, v), rd->err);
}

/* Every key of the op mapping that is not a fixed key is an attribute. */
static bool read_attrs(body_ctx *bc, const yaml_node_t *map, int nid)
{
	rd_ctx *rd = bc->rd;
	ir_func *f = F(bc);
	ir_op op = f->nodes[nid].op;
	for (int i = 0; i < rd_map_len(map); i++) {
		const char *key = rd_map_key_str(rd, map, i);
		bool fixed = false;
		for (int j = 0; fixed_keys[j] && !fixed; j++)
			fixed = strcmp(fixed_keys[j], key) == 0;
		if (fixed)
			continue;
		ir_attr a = {0};
		if (!read_attr(bc, op, key, rd_map_val(rd, map, i), &a))
			return false;
		ir_node_add_attr(rd->m, f, nid, &a);
	}
	const ir_op_info *info = ir_op_get(op);
	for (int i = 0; i < info->n_attrs; i++) {
		const ir_attr_schema *s = &info->attrs[i];
		if (ir_node_attr(&f->nodes[nid], s->name))
			continue;
		if (s->presence == IR_ATTR_REQUIRED)
			return rd_fail(rd, map, "%s '%s': missing required attribute '%s'", ir_op_name(op),
				       f->nodes[nid].name, s->name);
		if (s->presence == IR_ATTR_DEFAULT) {
			ir_attr a = {.name = s->name, .kind = s->kind, .i = s->dflt_i, .f = s->dflt_f, .s = s->dflt_s};
			ir_node_add_attr(rd->m, f, nid, &a);
		}
	}
	return true;
}

static bool check_keys(body_ctx *bc, const yaml_node_t *map, ir_op op)
{
	rd_ctx *rd = bc->rd;
	for (int i = 0; i < rd_map_len(map); i++) {
		const char *key = rd_map_key_str(rd, map, i);
		bool ok = ir_op_attr_schema(op, key) != NULL;
		for (int j = 0; fixed_keys[j] && !ok; j++)
			ok = strcmp(fixed_keys[j], key) == 0;
		if (ok)
			continue;
		const ir_op_info *info = ir_op_get(op);
		char list[160] = "";
		size_t pos = 0;
		for (int j = 0; j < info->n_attrs && pos < sizeof(list); j++)
			pos += (size_t)snprintf(list + pos, sizeof(list) - pos, ", %s", info->attrs[j].name);
		return rd_fail(rd, rd_map_key(rd, map, i), "unknown key '%s' for op %s (expected op, out, in, state, "
			       "name, after%s)", key, ir_op_name(op), list);
	}
	return true;
}

static bool check_operand_count(body_ctx *bc, const yaml_node_t *at, ir_op op, int n_in)
{
	const ir_op_info *info = ir_op_get(op);
	if (n_in >= info->min_in && (info->max_in < 0 || n_in <= info->max_in))
		return true;
	if (info->max_in > info->min_in)
		return rd_fail(bc->rd, at, "op %s takes %d to %d operands, got %d", ir_op_name(op), info->min_in,
			       info->max_in, n_in);
	return rd_fail(bc->rd, at, "op %s takes %d operand(s), got %d", ir_op_name(op), info->min_in, n_in);
}

/* state: resolves to the block's own state first, then the module's. */
static bool read_state_ref(body_ctx *bc, const yaml_node_t *map, ir_op op, int *ref, bool *local)
{
	rd_ctx *rd = bc->rd;
	yaml_node_t *st = rd_get(rd, map, "state");
	bool effect = op == IR_OP_STATE_READ || op == IR_OP_STATE_WRITE;
	if (!effect) {
		if (st)
			return rd_fail(rd, st, "'state' is only for state_read and state_write, not %s", ir_op_name(op));
		return true;
	}
	if (!st)
		return rd_fail(rd, map, "%s: missing required key 'state'", ir_op_name(op));
	const char *name = rd_scalar(rd, st, "a state name");
	if (!name)
		return false;
	const ir_func *f = F(bc);
	for (int i = 0; i < f->n_states; i++) {
		if (strcmp(f->states[i].name, name) == 0) {
			*ref = i;
			*local = true;
			return true;
		}
	}
	if ((*ref = ir_module_state(rd->m, name)) >= 0)
		return true;
	return rd_fail(rd, st, "%s to undeclared state '%s'", ir_op_name(op), name);
}

static void add_pending_after(body_ctx *bc, int nid, const yaml_node_t *after)
{
	bc->pending_node[bc->n_pending] = nid;
	bc->pending_after[bc->n_pending++] = after;
}

enum { MAX_OUTS = 8 };

static bool read_layers_op(body_ctx *bc, const yaml_node_t *map);
static bool read_block_op(body_ctx *bc, const yaml_node_t *map);

static bool read_op(body_ctx *bc, const yaml_node_t *map)
{
	rd_ctx *rd = bc->rd;
	if (!rd_want_map(rd, map, "an op"))
		return false;
	yaml_node_t *opn = rd_need(rd, map, "op", "an op");
	const char *opname = opn ? rd_scalar(rd, opn, "an op name") : NULL;
	if (!opname)
		return false;
	if (strcmp(opname, "layers") == 0)
		return read_layers_op(bc, map);
	if (strcmp(opname, "block") == 0)
		return read_block_op(bc, map);
	ir_op op;
	if (!ir_op_from_name(opname, &op))
		return rd_fail(rd, opn, "unknown op '%s' (docs/ops.md lists the op set)", opname);
	if (op == IR_OP_WEIGHT || op == IR_OP_CALL)
		return rd_fail(rd, opn, "op '%s' is created by the reader: name weights in in:, use op layers or "
			       "op block for blocks",
			       opname);
	if (!check_keys(bc, map, op))
		return false;
	yaml_node_t *ins = rd_get(rd, map, "in"), *out = rd_get(rd, map, "out"), *nm = rd_get(rd, map, "name");
	bool sink = ir_op_is_sink(op);
	if (sink && out)
		return rd_fail(rd, out, "%s has no result: name it with 'name', not 'out'", opname);
	if (!sink && nm)
		return rd_fail(rd, nm, "'name' is only for state_write; %s is named by its first out", opname);
	if (sink && !nm)
		return rd_fail(rd, map, "%s: missing required key 'name'", opname);
	if (!sink && !out)
		return rd_fail(rd, map, "%s: missing required key 'out'", opname);
	const yaml_node_t *names[MAX_OUTS];
	int n_out = 0;
	if (out && (n_out = out_names(bc, out, names, MAX_OUTS)) < 0)
		return false;
	int want = ir_op_get(op)->n_out;
	if (!sink && !ir_op_result_count_ok(op, n_out))
		return rd_fail(rd, out, "op %s has %d result(s)%s, got %d name(s) in out", opname, want,
			       ir_op_get(op)->flags & IR_OPF_STEPS ? " (one more: its state after each token)" : "",
			       n_out);
	if (sink) {
		names[0] = nm;
		if (!rd_scalar(rd, nm, "an op name"))
			return false;
	}
	if (!names_free(bc, names, sink ? 1 : n_out))
		return false;
	int ref = -1;
	bool local = false;
	if (!read_state_ref(bc, map, op, &ref, &local))
		return false;
	int n_in;
	int *in = read_ins(bc, ins, &n_in);
	if (n_in < 0 || !check_operand_count(bc, ins ? ins : map, op, n_in))
		return false;
	ir_func *f = F(bc);
	int nid = ir_func_add_node(rd->m, f, op, rd_scalar(rd, names[0], "a name"), rd_loc(rd, map));
	ir_node *node = &f->nodes[nid];
	node->in = in;
	node->n_in = n_in;
	node->ref = ref;
	node->ref_local = local;
	if (!sink)
		add_outputs(bc, nid, names, n_out);
	yaml_node_t *after = rd_get(rd, map, "after");
	if (after)
		add_pending_after(bc, nid, after);
	return read_attrs(bc, map, nid);
}

/* The operands of a call of blk: the n passed ones, then the values of the
 * calling function named like the block's reads. NULL with the error set
 * when the caller has no such value. */
static int *with_reads(body_ctx *bc, const yaml_node_t *at, const ir_func *blk, const int *in, int n)
{
	ir_func *f = F(bc);
	int *all = ir_arena_alloc(&bc->rd->m->arena, (size_t)(n + blk->n_reads + 1) * sizeof(int));
	for (int i = 0; i < n; i++)
		all[i] = in[i];
	for (int r = 0; r < blk->n_reads; r++) {
		const char *name = blk->values[blk->inputs[n + r]].name;
		int v = ir_func_value(f, name);
		if (v < 0) {
			rd_fail(bc->rd, at, "block '%s' reads '%s', which %s '%s' does not define before this op", blk->name,
				name, f->is_block ? "block" : "graph", f->name);
			return NULL;
		}
		all[n + r] = v;
	}
	return all;
}

/* A call of block b named nname at map's location, as layer `layer` (-1:
 * an inline call, without the attribute), on operands in[0..n_in); returns
 * its node id. */
static int add_call(body_ctx *bc, const yaml_node_t *map, const char *nname, int b, int *in, int n_in, int64_t layer)
{
	ir_module *m = bc->rd->m;
	ir_func *f = F(bc);
	int nid = ir_func_add_node(m, f, IR_OP_CALL, nname, rd_loc(bc->rd, map));
	f->nodes[nid].ref = b;
	f->nodes[nid].in = in;
	f->nodes[nid].n_in = n_in;
	if (layer >= 0) {
		ir_attr a = {.name = "layer", .kind = IR_ATTR_INT, .i = layer};
		ir_node_add_attr(m, f, nid, &a);
	}
	return nid;
}

static void add_str_attr(body_ctx *bc, int nid, const char *name, const char *value)
{
	ir_attr a = {.name = name, .kind = IR_ATTR_STR, .s = value};
	ir_node_add_attr(bc->rd->m, F(bc), nid, &a);
}

/* op: layers: one call per block instance (layer i's block, then the
 * `then` block), chained; the last call's results take the out names. */
static bool read_layers_op(body_ctx *bc, const yaml_node_t *map)
{
	static const char *const keys[] = {"op", "in", "out", NULL};
	rd_ctx *rd = bc->rd;
	ir_module *m = rd->m;
	if (!rd_check_keys(rd, map, keys, "op layers"))
		return false;
	if (F(bc)->is_block)
		return rd_fail(rd, map, "op layers is for graphs, not inside block '%s'", F(bc)->name);
	if (m->n_layers == 0)
		return rd_fail(rd, map, "op layers needs a top-level 'layers' mapping");
	int k = m->funcs[m->layer_block[0]].n_inputs - m->funcs[m->layer_block[0]].n_reads;
	yaml_node_t *ins = rd_need(rd, map, "in", "op layers"), *out = ins ? rd_need(rd, map, "out", "op layers") : NULL;
	const yaml_node_t *names[MAX_OUTS];
	int n_out, n_in;
	if (!out || (n_out = out_names(bc, out, names, MAX_OUTS)) < 0)
		return false;
	if (n_out != k)
		return rd_fail(rd, out, "op layers: the layer blocks return %d value(s), got %d name(s) in out", k, n_out);
	if (!names_free(bc, names, n_out))
		return false;
	int *cur = read_ins(bc, ins, &n_in);
	if (n_in < 0)
		return false;
	if (n_in != k)
		return rd_fail(rd, ins, "op layers: the layer blocks take %d value(s), got %d", k, n_in);
	for (int i = 0; i < m->n_layers; i++) {
		for (int slot = 0; slot < 2; slot++) {
			int b = slot ? (m->layer_then ? m->layer_then[i] : -1) : m->layer_block[i];
			if (b < 0)
				continue;
			const ir_func *blk = &m->funcs[b];
			char *nname = ir_arena_printf(&m->arena, "layers.%d.%s", i, blk->name);
			bool last = i == m->n_layers - 1 && (slot == 1 || !m->layer_then || m->layer_then[i] < 0);
			if (!rd_name_free(rd, F(bc), map, nname))
				return false;
			int *in = with_reads(bc, map, blk, cur, k);
			if (!in)
				return false;
			int nid = add_call(bc, map, nname, b, in, blk->n_inputs, i);
			ir_func *f = F(bc);
			int *outs = ir_arena_alloc(&m->arena, (size_t)k * sizeof(int));
			for (int j = 0; j < k; j++) {
				const char *vname = last ? rd_scalar(rd, names[j], "a name")
							 : ir_arena_printf(&m->arena, "%s.%s", nname, blk->output_names[j]);
				if (!last && !rd_name_free(rd, f, map, vname))
					return false;
				outs[j] = ir_func_add_value(m, f, vname, nid, j);
			}
			f->nodes[nid].out = outs;
			f->nodes[nid].n_out = k;
			cur = outs;
		}
	}
	return true;
}

/* Whether block b or a block it calls declares weights or state (the
 * reader has refused call cycles before any graph body is read). */
static bool block_declares(const ir_module *m, int b)
{
	const ir_func *f = &m->funcs[b];
	bool found = f->n_weights > 0 || f->n_states > 0;
	for (int i = 0; !found && i < f->n_nodes; i++)
		found = f->nodes[i].op == IR_OP_CALL && block_declares(m, f->nodes[i].ref);
	return found;
}

/* `layer` of an instance call in a graph: >= the layer
 * stack's count, so the instance shares no weight or state with it. */
static bool read_instance_layer(body_ctx *bc, const yaml_node_t *ln, int64_t *layer)
{
	rd_ctx *rd = bc->rd;
	if (!rd_int(rd, ln, "op block layer", layer))
		return false;
	if (*layer < rd->m->n_layers || *layer > INT32_MAX)
		return rd_fail(rd, ln, "op block: layer %lld would alias the layer stack (layers 0..%d); use %d or more",
			       (long long)*layer, rd->m->n_layers - 1, rd->m->n_layers);
	return true;
}

/* Which kind of call a valid op block is: an instance (a graph's call with
 * `layer`) or an inline call (in a block body, or a graph's call without
 * `layer` of a block that, with the blocks it calls, declares no weights
 * or state). Fails on keys that do not fit the kind. */
static bool check_call_kind(body_ctx *bc, const yaml_node_t *map, int b)
{
	rd_ctx *rd = bc->rd;
	const ir_func *f = F(bc);
	yaml_node_t *ln = rd_get(rd, map, "layer"), *pn = rd_get(rd, map, "hf_prefix"), *an = rd_get(rd, map, "as");
	if (f->is_block && (ln || pn))
		return rd_fail(rd, ln ? ln : pn, "op block: '%s' is for a graph's call; a call inside block '%s' is "
			       "part of the caller's layer instance", ln ? "layer" : "hf_prefix", f->name);
	if (ln && an)
		return rd_fail(rd, an, "op block: 'as' is for an inline call (without 'layer'); an instance's ops are "
			       "named layers.<layer>.<block>.*");
	if (!ln && pn)
		return rd_fail(rd, pn, "op block: 'hf_prefix' needs 'layer'");
	if (!f->is_block && !ln && block_declares(rd->m, b))
		return rd_fail(rd, map, "op block: block '%s' declares weights or state (itself or a block it calls), so "
			       "a graph's call of it needs 'layer'", rd->m->funcs[b].name);
	return true;
}

/* op block: one call of a block. An instance call (a graph's, with
 * `layer`: a draft head's decoder layer) is named layers.<layer>.<block>;
 * with hf_prefix, its checkpoint names take the prefix in place of their
 * "...layers.{i}" part (pass_expand_blocks): the stack's own blocks serve
 * as the head's layer. Every graph that instantiates the same block at the
 * same layer shares its weights and states. An inline call is named by its
 * first out and carries `as`, the prefix of the callee's op names on
 * expansion (default "<block>."). */
static bool read_block_op(body_ctx *bc, const yaml_node_t *map)
{
	static const char *const keys[] = {"op", "block", "layer", "hf_prefix", "as", "in", "out", NULL};
	rd_ctx *rd = bc->rd;
	ir_module *m = rd->m;
	if (!rd_check_keys(rd, map, keys, "op block"))
		return false;
	yaml_node_t *bn = rd_need(rd, map, "block", "op block"), *ln = rd_get(rd, map, "layer");
	yaml_node_t *pn = rd_get(rd, map, "hf_prefix"), *an = rd_get(rd, map, "as");
	yaml_node_t *ins = bn ? rd_need(rd, map, "in", "op block") : NULL;
	yaml_node_t *out = ins ? rd_need(rd, map, "out", "op block") : NULL;
	const char *bname = out ? rd_scalar(rd, bn, "a block name") : NULL;
	const char *prefix = NULL, *as = NULL;
	int64_t layer = -1;
	if (!bname)
		return false;
	int b = ir_module_func(m, bname);
	if (b < 0 || !m->funcs[b].is_block)
		return rd_fail(rd, bn, "op block: unknown block '%s'", bname);
	if (!check_call_kind(bc, map, b) || (pn && !(prefix = rd_str(rd, pn, "a checkpoint name prefix"))) ||
	    (an && !(as = rd_str(rd, an, "a name prefix"))) || (ln && !read_instance_layer(bc, ln, &layer)))
		return false;
	const ir_func *blk = &m->funcs[b];
	const yaml_node_t *names[MAX_OUTS];
	int n_out, n_in;
	if ((n_out = out_names(bc, out, names, MAX_OUTS)) < 0)
		return false;
	if (n_out != blk->n_outputs)
		return rd_fail(rd, out, "op block: block '%s' returns %d value(s), got %d name(s) in out", bname,
			       blk->n_outputs, n_out);
	int *in = read_ins(bc, ins, &n_in);
	if (n_in < 0)
		return false;
	if (n_in != blk->n_inputs - blk->n_reads)
		return rd_fail(rd, ins, "op block: block '%s' takes %d value(s), got %d", bname, blk->n_inputs - blk->n_reads,
			       n_in);
	if (!(in = with_reads(bc, ins, blk, in, n_in)))
		return false;
	n_in = blk->n_inputs;
	const char *nname = ln ? ir_arena_printf(&m->arena, "layers.%lld.%s", (long long)layer, bname)
			       : rd_scalar(rd, names[0], "a name");
	if ((ln && !rd_name_free(rd, F(bc), map, nname)) || !names_free(bc, names, n_out))
		return false;
	int nid = add_call(bc, map, nname, b, in, n_in, layer);
	if (prefix)
		add_str_attr(bc, nid, "hf_prefix", prefix);
	if (!ln)
		add_str_attr(bc, nid, "as", as ? as : ir_arena_printf(&m->arena, "%s.", bname));
	add_outputs(bc, nid, names, n_out);
	return true;
}

static bool resolve_after(body_ctx *bc)
{
	rd_ctx *rd = bc->rd;
	for (int p = 0; p < bc->n_pending; p++) {
		const yaml_node_t *after = bc->pending_after[p];
		if (!rd_want_seq(rd, after, "after"))
			return false;
		int n = rd_seq_len(after);
		int *ids = ir_arena_alloc(&rd->m->arena, (size_t)(n ? n : 1) * sizeof(int));
		for (int i = 0; i < n; i++) {
			yaml_node_t *item = rd_seq_item(rd, after, i);
			const char *name = rd_scalar(rd, item, "an op name");
			if (!name)
				return false;
			if ((ids[i] = ir_func_node(F(bc), name)) < 0)
				return rd_fail(rd, item, "after: no op named '%s' in '%s'", name, F(bc)->name);
		}
		ir_node *node = &F(bc)->nodes[bc->pending_node[p]];
		node->after = ids;
		node->n_after = n;
	}
	return true;
}

/* An op's dependencies: the producers of its operands, then its after: edges. */
static int dep(const ir_func *f, const ir_node *n, int k)
{
	return k < n->n_in ? f->values[n->in[k]].producer : n->after[k - n->n_in];
}

static bool report_cycle(rd_ctx *rd, const ir_func *f, const int *stack, int sp, int v)
{
	char path[512];
	size_t pos = 0;
	int start = sp - 1;
	while (start > 0 && stack[start] != v)
		start--;
	for (int i = start; i < sp && pos < sizeof(path); i++)
		pos += (size_t)snprintf(path + pos, sizeof(path) - pos, "'%s' after ", f->nodes[stack[i]].name);
	if (pos < sizeof(path))
		snprintf(path + pos, sizeof(path) - pos, "'%s'", f->nodes[v].name);
	ir_error_set(rd->err, f->nodes[stack[sp - 1]].loc, "cycle through after: edges: %s", path);
	return false;
}

/* Operands always come from earlier ops, so a cycle needs an after: edge;
 * depth-first search with an explicit stack (bodies can be long). */
static bool check_cycles(rd_ctx *rd, const ir_func *f)
{
	int n = f->n_nodes;
	char *color = calloc((size_t)n + 1, 1);
	int *stack = malloc(((size_t)n + 1) * sizeof(int)), *edge = calloc((size_t)n + 1, sizeof(int));
	if (!color || !stack || !edge)
		abort();
	bool ok = true;
	for (int s = 0; ok && s < n; s++) {
		if (color[s])
			continue;
		int sp = 0;
		stack[sp++] = s;
		color[s] = 1;
		while (ok && sp) {
			int u = stack[sp - 1];
			const ir_node *node = &f->nodes[u];
			int k = edge[u]++;
			if (k >= node->n_in + node->n_after) {
				color[u] = 2;
				sp--;
				continue;
			}
			int v = dep(f, node, k);
			if (v < 0 || color[v] == 2)
				continue;
			if (color[v] == 1)
				ok = report_cycle(rd, f, stack, sp, v);
			else {
				color[v] = 1;
				stack[sp++] = v;
			}
		}
	}
	free(color);
	free(stack);
	free(edge);
	return ok;
}

static bool read_outputs(body_ctx *bc, const yaml_node_t *outputs)
{
	rd_ctx *rd = bc->rd;
	ir_func *f = F(bc);
	int n = rd_seq_len(outputs); /* rd_funcs checked it is a list */
	f->outputs = ir_arena_alloc(&rd->m->arena, (size_t)(n ? n : 1) * sizeof(int));
	f->output_names = ir_arena_alloc(&rd->m->arena, (size_t)(n ? n : 1) * sizeof(char *));
	for (int i = 0; i < n; i++) {
		yaml_node_t *item = rd_seq_item(rd, outputs, i);
		const char *name = rd_scalar(rd, item, "an output name");
		if (!name)
			return false;
		int v = ir_func_value(f, name);
		if (v < 0)
			return rd_fail(rd, item, "undefined value '%s' in outputs of '%s'", name, f->name);
		f->outputs[i] = v;
		f->output_names[i] = f->values[v].name;
	}
	f->n_outputs = n;
	return true;
}

static bool check_block_weights_used(body_ctx *bc)
{
	const ir_func *f = F(bc);
	for (int i = 0; i < f->n_weights; i++)
		if (bc->local_wval[i] < 0) {
			ir_error_set(bc->rd->err, f->weights[i].loc, "weight '%s' of block '%s' is declared but never used",
				     f->weights[i].name, f->name);
			return false;
		}
	return true;
}

static bool read_all(body_ctx *bc, const yaml_node_t *body, const yaml_node_t *outputs)
{
	for (int i = 0; i < rd_seq_len(body); i++)
		if (!read_op(bc, rd_seq_item(bc->rd, body, i)))
			return false;
	return resolve_after(bc) && check_cycles(bc->rd, F(bc)) && read_outputs(bc, outputs) &&
	       check_block_weights_used(bc);
}

bool rd_body(rd_ctx *rd, int func, const yaml_node_t *body, const yaml_node_t *outputs)
{
	if (!rd_want_seq(rd, body, "body"))
		return false;
	const ir_func *f = &rd->m->funcs[func];
	int n_ops = rd_seq_len(body);
	body_ctx bc = {rd, func, malloc(((size_t)f->n_weights + 1) * sizeof(int)),
		       malloc(((size_t)rd->m->n_weights + 1) * sizeof(int)), 0,
		       malloc(((size_t)n_ops + 1) * sizeof(int)), malloc(((size_t)n_ops + 1) * sizeof(yaml_node_t *))};
	if (!bc.local_wval || !bc.module_wval || !bc.pending_node || !bc.pending_after)
		abort();
	memset(bc.local_wval, 0xff, ((size_t)f->n_weights + 1) * sizeof(int));
	memset(bc.module_wval, 0xff, ((size_t)rd->m->n_weights + 1) * sizeof(int));
	bool ok = read_all(&bc, body, outputs);
	free(bc.local_wval);
	free(bc.module_wval);
	free(bc.pending_node);
	free(bc.pending_after);
	return ok;
}
