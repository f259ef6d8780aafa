/* pass_infer_shapes: shapes and dtypes through every live graph function.
 * Blocks are inferred once, in place, from the inputs of their first call
 * site (module function order, then node order); every later call must pass
 * exactly those shapes, since expansion copies one inferred body per layer. */
#include "ir/ops.h"
#include "passes/graph_query.h"
#include "passes/passes.h"

#include <stdlib.h>

typedef struct {
	bool inferred;
	int layer;  /* layer of the first call site */
	ir_loc loc; /* where the first call site is */
} block_site;

static bool infer_func(ir_module *m, ir_func *f, block_site *sites, ir_error *err);

static int call_layer(const ir_node *n)
{
	return (int)ir_node_attr_int(n, "layer", n->layer);
}

static bool check_call_site(const ir_func *f, const ir_node *n, const ir_func *b,
			    const block_site *site, ir_error *err)
{
	for (int k = 0; k < n->n_in; k++) {
		const ir_value *a = &f->values[n->in[k]];
		const ir_value *p = &b->values[b->inputs[k]];
		if (a->dtype == p->dtype && ir_shape_eq(&a->shape, &p->shape))
			continue;
		char sa[96], sp[96];
		ir_error_set(err, n->loc,
			     "call of block '%s' (layer %d): input %d '%s' is %s %s, but the block was "
			     "inferred from its first call (layer %d, %s:%d) with %s %s (-1: an inline call)",
			     b->name, call_layer(n), k, a->name, ir_shape_str(&a->shape, sa, sizeof sa),
			     halo_dtype_name(a->dtype), site->layer, site->loc.file, site->loc.line,
			     ir_shape_str(&p->shape, sp, sizeof sp), halo_dtype_name(p->dtype));
		return false;
	}
	return true;
}

static bool infer_call(ir_module *m, ir_func *f, int ni, block_site *sites, ir_error *err)
{
	const ir_node *n = &f->nodes[ni];
	ir_func *b = &m->funcs[n->ref];
	if (n->n_in != b->n_inputs || n->n_out != b->n_outputs) {
		ir_error_set(err, n->loc, "call of block '%s' passes %d inputs and takes %d results; "
			     "the block has %d inputs and %d outputs",
			     b->name, n->n_in, n->n_out, b->n_inputs, b->n_outputs);
		return false;
	}
	block_site *site = &sites[n->ref];
	if (site->inferred)
		return check_call_site(f, n, b, site, err);
	/* Marked before the body is walked so a block that calls itself stops. */
	*site = (block_site){true, call_layer(n), n->loc};
	for (int k = 0; k < n->n_in; k++) {
		ir_value *p = &b->values[b->inputs[k]];
		const ir_value *a = &f->values[n->in[k]];
		p->shape = a->shape;
		p->dtype = a->dtype;
		p->shape_known = true;
	}
	return infer_func(m, b, sites, err);
}

static void copy_call_results(ir_module *m, ir_func *f, const ir_node *n)
{
	const ir_func *b = &m->funcs[n->ref];
	for (int k = 0; k < n->n_out; k++) {
		const ir_value *src = &b->values[b->outputs[k]];
		ir_value *dst = &f->values[n->out[k]];
		dst->shape = src->shape;
		dst->dtype = src->dtype;
		dst->shape_known = true;
	}
}

static bool infer_node(ir_module *m, ir_func *f, int ni, ir_error *err)
{
	const ir_node *n = &f->nodes[ni];
	ir_shape shapes[n->n_out > 0 ? n->n_out : 1];
	halo_dtype dtypes[n->n_out > 0 ? n->n_out : 1];
	if (!ir_op_infer(m, f, n, shapes, dtypes, err))
		return false;
	for (int k = 0; k < n->n_out; k++) {
		ir_value *v = &f->values[n->out[k]];
		v->shape = shapes[k];
		v->dtype = dtypes[k];
		v->shape_known = true;
	}
	return true;
}

static bool infer_func(ir_module *m, ir_func *f, block_site *sites, ir_error *err)
{
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		if (n->op != IR_OP_CALL) {
			if (!infer_node(m, f, i, err))
				return false;
			continue;
		}
		if (n->ref < 0 || n->ref >= m->n_funcs || !m->funcs[n->ref].is_block) {
			ir_error_set(err, n->loc, "call '%s' does not name a block", n->name);
			return false;
		}
		if (!infer_call(m, f, i, sites, err))
			return false;
		copy_call_results(m, f, &f->nodes[i]);
	}
	return true;
}

bool pass_infer_shapes(ir_module *m, ir_error *err)
{
	block_site *sites = calloc((size_t)m->n_funcs + 1, sizeof(*sites));
	if (!sites)
		abort();
	bool ok = true;
	for (int i = 0; ok && i < m->n_funcs; i++) {
		ir_func *f = &m->funcs[i];
		if (!f->is_block && func_is_live(m, f))
			ok = infer_func(m, f, sites, err);
	}
	free(sites);
	return ok;
}
