/* Module lifetime, lookups and the builders every pass appends through. */
#include "ir/ir.h"

#include <stdlib.h>
#include <string.h>

ir_module *ir_module_new(const char *path)
{
	ir_module *m = calloc(1, sizeof(*m));
	if (!m)
		abort();
	m->path = ir_arena_strdup(&m->arena, path ? path : "");
	return m;
}

void ir_module_free(ir_module *m)
{
	if (!m)
		return;
	ir_arena_free(&m->arena);
	free(m);
}

static const char *const op_names[IR_OP_COUNT] = {
#define IR_OP(id, name, cls, expr) [IR_OP_##id] = name,
#include "kernels/ops.def"
#undef IR_OP
};

const char *ir_op_name(ir_op op)
{
	return (unsigned)op < IR_OP_COUNT ? op_names[op] : "?";
}

bool ir_op_from_name(const char *name, ir_op *out)
{
	for (int i = 0; i < IR_OP_COUNT; i++) {
		if (strcmp(op_names[i], name) == 0) {
			*out = (ir_op)i;
			return true;
		}
	}
	return false;
}

const ir_param *ir_module_param(const ir_module *m, const char *name)
{
	for (int i = 0; i < m->n_params; i++)
		if (strcmp(m->params[i].name, name) == 0)
			return &m->params[i];
	return NULL;
}

int ir_module_weight(const ir_module *m, const char *name)
{
	for (int i = 0; i < m->n_weights; i++)
		if (strcmp(m->weights[i].name, name) == 0)
			return i;
	return -1;
}

int ir_module_state(const ir_module *m, const char *name)
{
	for (int i = 0; i < m->n_states; i++)
		if (strcmp(m->states[i].name, name) == 0)
			return i;
	return -1;
}

int ir_module_func(const ir_module *m, const char *name)
{
	for (int i = 0; i < m->n_funcs; i++)
		if (strcmp(m->funcs[i].name, name) == 0)
			return i;
	return -1;
}

int ir_func_node(const ir_func *f, const char *name)
{
	for (int i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].name && strcmp(f->nodes[i].name, name) == 0)
			return i;
	return -1;
}

int ir_func_value(const ir_func *f, const char *name)
{
	for (int i = 0; i < f->n_values; i++)
		if (f->values[i].name && strcmp(f->values[i].name, name) == 0)
			return i;
	return -1;
}

const ir_attr *ir_node_attr(const ir_node *n, const char *name)
{
	for (int i = 0; i < n->n_attr; i++)
		if (strcmp(n->attr[i].name, name) == 0)
			return &n->attr[i];
	return NULL;
}

int64_t ir_node_attr_int(const ir_node *n, const char *name, int64_t dflt)
{
	const ir_attr *a = ir_node_attr(n, name);
	return a && a->kind == IR_ATTR_INT ? a->i : dflt;
}

double ir_node_attr_float(const ir_node *n, const char *name, double dflt)
{
	const ir_attr *a = ir_node_attr(n, name);
	if (!a)
		return dflt;
	if (a->kind == IR_ATTR_FLOAT)
		return a->f;
	return a->kind == IR_ATTR_INT ? (double)a->i : dflt;
}

const char *ir_node_attr_str(const ir_node *n, const char *name, const char *dflt)
{
	const ir_attr *a = ir_node_attr(n, name);
	return a && a->kind == IR_ATTR_STR ? a->s : dflt;
}

const ir_weight *ir_node_weight(const ir_module *m, const ir_func *f, const ir_node *n)
{
	if (n->op != IR_OP_WEIGHT || n->ref < 0)
		return NULL;
	if (n->ref_local)
		return n->ref < f->n_weights ? &f->weights[n->ref] : NULL;
	return n->ref < m->n_weights ? &m->weights[n->ref] : NULL;
}

const ir_state *ir_node_state(const ir_module *m, const ir_func *f, const ir_node *n)
{
	if ((n->op != IR_OP_STATE_READ && n->op != IR_OP_STATE_WRITE) || n->ref < 0)
		return NULL;
	if (n->ref_local)
		return n->ref < f->n_states ? &f->states[n->ref] : NULL;
	return n->ref < m->n_states ? &m->states[n->ref] : NULL;
}

/* Doubling growth inside the arena: the old array is abandoned (the arena
 * frees it with the module), which is why pointers do not survive appends. */
static void *grow(ir_module *m, void *arr, int n, int *cap, size_t elem)
{
	if (n < *cap)
		return arr;
	int ncap = *cap ? *cap * 2 : 16;
	arr = ir_arena_grow(&m->arena, arr, (size_t)*cap * elem, (size_t)ncap * elem);
	*cap = ncap;
	return arr;
}

int ir_func_add_value(ir_module *m, ir_func *f, const char *name, int producer, int producer_out)
{
	f->values = grow(m, f->values, f->n_values, &f->cap_values, sizeof(ir_value));
	ir_value *v = &f->values[f->n_values];
	memset(v, 0, sizeof(*v));
	v->name = name ? ir_arena_strdup(&m->arena, name) : NULL;
	v->dtype = HALO_F32;
	v->producer = producer;
	v->producer_out = producer_out;
	return f->n_values++;
}

int ir_func_add_node(ir_module *m, ir_func *f, ir_op op, const char *name, ir_loc loc)
{
	f->nodes = grow(m, f->nodes, f->n_nodes, &f->cap_nodes, sizeof(ir_node));
	ir_node *n = &f->nodes[f->n_nodes];
	memset(n, 0, sizeof(*n));
	n->op = op;
	n->name = name ? ir_arena_strdup(&m->arena, name) : NULL;
	n->ref = -1;
	n->layer = -1;
	n->loc = loc;
	return f->n_nodes++;
}

int ir_module_add_weight(ir_module *m, const ir_weight *w)
{
	m->weights = grow(m, m->weights, m->n_weights, &m->cap_weights, sizeof(ir_weight));
	m->weights[m->n_weights] = *w;
	return m->n_weights++;
}

int ir_module_add_state(ir_module *m, const ir_state *s)
{
	m->states = grow(m, m->states, m->n_states, &m->cap_states, sizeof(ir_state));
	m->states[m->n_states] = *s;
	return m->n_states++;
}

void ir_node_add_attr(ir_module *m, ir_func *f, int nid, const ir_attr *a)
{
	ir_node *n = &f->nodes[nid];
	n->attr = ir_arena_grow(&m->arena, n->attr, (size_t)n->n_attr * sizeof(ir_attr),
				(size_t)(n->n_attr + 1) * sizeof(ir_attr));
	n->attr[n->n_attr++] = *a;
}

static void *dup_array(ir_module *m, const void *src, int n, size_t elem)
{
	if (n <= 0)
		return NULL;
	void *p = ir_arena_alloc(&m->arena, (size_t)n * elem);
	memcpy(p, src, (size_t)n * elem);
	return p;
}

static void dup_node_arrays(ir_module *m, ir_node *n)
{
	n->in = dup_array(m, n->in, n->n_in, sizeof(int));
	n->out = dup_array(m, n->out, n->n_out, sizeof(int));
	n->attr = dup_array(m, n->attr, n->n_attr, sizeof(ir_attr));
	n->after = dup_array(m, n->after, n->n_after, sizeof(int));
	n->fused = dup_array(m, n->fused, n->n_fused, sizeof(ir_fused));
	for (int k = 0; k < n->n_fused; k++) {
		ir_fused *fu = &n->fused[k];
		fu->attr = dup_array(m, fu->attr, fu->n_attr, sizeof(ir_attr));
		fu->extra = dup_array(m, fu->extra, fu->n_extra, sizeof(int));
	}
}

int ir_func_clone(ir_module *m, int src, const char *name)
{
	m->funcs = ir_arena_grow(&m->arena, m->funcs, (size_t)m->n_funcs * sizeof(ir_func),
				 (size_t)(m->n_funcs + 1) * sizeof(ir_func));
	const ir_func *s = &m->funcs[src];
	ir_func *f = &m->funcs[m->n_funcs];
	*f = *s;
	f->name = ir_arena_strdup(&m->arena, name);
	f->values = dup_array(m, s->values, s->n_values, sizeof(ir_value));
	f->cap_values = s->n_values;
	f->nodes = dup_array(m, s->nodes, s->n_nodes, sizeof(ir_node));
	f->cap_nodes = s->n_nodes;
	for (int i = 0; i < f->n_nodes; i++)
		dup_node_arrays(m, &f->nodes[i]);
	f->inputs = dup_array(m, s->inputs, s->n_inputs, sizeof(int));
	f->outputs = dup_array(m, s->outputs, s->n_outputs, sizeof(int));
	f->output_names = dup_array(m, s->output_names, s->n_outputs, sizeof(char *));
	return m->n_funcs++;
}
