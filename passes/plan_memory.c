/* pass_plan_memory: turns each entry's scheduled graph function into a
 * dispatch list and a memory plan (plan.h). Activation buffers are placed
 * first-fit in dispatch order: before the buffers written by dispatch d are
 * placed, every buffer whose last reader ran in an earlier barrier group
 * than d is released. The groups are those the data alone asks for
 * (barrier_groups: place_barriers' rule over buffers that share no bytes),
 * so a reuse never needs a barrier of its own: place_barriers then finds
 * exactly those barriers. Reusing a buffer freed in d's own group would
 * order two otherwise independent dispatches (a write after a read): the
 * decode step of Qwen3.8 Flash's published config had 86 such of its 1449
 * barriers, each about 5 us on an H100 (bench/results-h100-qwen3_8b.txt),
 * for the same activation bytes. Graph outputs stay live to the end of the
 * step. */
#include "passes/graph_query.h"
#include "passes/passes.h"
#include "passes/state_effects.h"

#include <stdlib.h>

typedef struct {
	int64_t offset, size;
	int last;
} live_slot;

typedef struct {
	halo_plan *p;
	const ir_module *m;
	const ir_func *f;
	plan_entry *e;
	int *dispatch_of; /* node id -> dispatch index, -1 for views */
} plan_ctx;

static int64_t align_up(int64_t x)
{
	return (x + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

static int64_t shape_bytes(const ir_shape *s, halo_dtype t, int64_t T)
{
	return ir_shape_numel(s, T) * (int64_t)halo_dtype_size(t);
}

static int add_buffer(plan_ctx *c, plan_region r, int64_t size, const char *name, int ref)
{
	plan_buffer *b = &c->e->buffers[c->e->n_buffers];
	*b = (plan_buffer){r, 0, size, name, ref, -1, -1};
	return c->e->n_buffers++;
}

/* Weights and states, in module order, each region packed from 0. */
static void add_module_buffers(plan_ctx *c)
{
	int64_t off = 0;
	for (int i = 0; i < c->m->n_weights; i++) {
		const ir_weight *w = &c->m->weights[i];
		int b = add_buffer(c, PLAN_WEIGHT, shape_bytes(&w->shape, w->dtype, 0), w->name, i);
		c->e->buffers[b].offset = off;
		off = align_up(off + c->e->buffers[b].size);
	}
	c->p->weight_bytes = off;
	off = 0;
	for (int i = 0; i < c->m->n_states; i++) {
		const ir_state *s = &c->m->states[i];
		int b = add_buffer(c, PLAN_STATE, shape_bytes(&s->shape, s->dtype, 0), s->name, i);
		c->e->buffers[b].offset = off;
		off = align_up(off + c->e->buffers[b].size);
	}
	c->p->state_bytes = off;
}

static int own_buffer(plan_ctx *c, int v, int first)
{
	const ir_value *val = &c->f->values[v];
	int64_t size = align_up(shape_bytes(&val->shape, val->dtype, c->e->t_max));
	int b = add_buffer(c, PLAN_ACT, size ? size : PLAN_ALIGN, val->name, v);
	c->e->buffers[b].first = first;
	return b;
}

/* in_state[v]: the state buffer an in-place state_write's producer makes
 * value v in (state_write_source), -1 for every other value; the reshapes
 * down to the write share it as views do. */
static void mark_in_place(plan_ctx *c, int *in_state)
{
	const ir_func *f = c->f;
	for (int v = 0; v < f->n_values; v++)
		in_state[v] = -1;
	for (int i = 0; i < f->n_nodes; i++) {
		int v = state_write_source(f, i);
		if (v >= 0)
			in_state[v] = c->m->n_weights + f->nodes[i].ref;
	}
}

/* Gives every value its buffer: views share the buffer they look at. */
static void assign_buffers(plan_ctx *c)
{
	const ir_func *f = c->f;
	int weight0 = 0, state0 = c->m->n_weights;
	int *in_state = calloc((size_t)f->n_values + 1, sizeof(int));
	if (!in_state)
		abort();
	mark_in_place(c, in_state);
	for (int i = 0; i < f->n_inputs; i++)
		c->e->value_buffer[f->inputs[i]] = own_buffer(c, f->inputs[i], -1);
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		if (n->op == IR_OP_WEIGHT)
			c->e->value_buffer[n->out[0]] = weight0 + n->ref;
		else if (n->op == IR_OP_STATE_READ)
			c->e->value_buffer[n->out[0]] = state0 + n->ref;
		else if (n->op == IR_OP_RESHAPE) {
			c->e->value_buffer[n->out[0]] = c->e->value_buffer[n->in[0]];
			c->e->value_at_pos[n->out[0]] = c->e->value_at_pos[n->in[0]];
		} else
			for (int k = 0; k < n->n_out; k++) {
				int v = n->out[k];
				c->e->value_at_pos[v] = in_state[v] >= 0;
				c->e->value_buffer[v] = in_state[v] >= 0 ? in_state[v]
									   : own_buffer(c, v, c->dispatch_of[i]);
			}
	}
	free(in_state);
}

static void compute_liveness(plan_ctx *c)
{
	const ir_func *f = c->f;
	plan_buffer *bufs = c->e->buffers;
	for (int i = 0; i < f->n_nodes; i++) {
		int d = c->dispatch_of[i];
		if (d < 0)
			continue;
		for (int k = 0; k < node_n_reads(&f->nodes[i]); k++) {
			plan_buffer *b = &bufs[c->e->value_buffer[node_read(&f->nodes[i], k)]];
			if (b->region == PLAN_ACT && d > b->last)
				b->last = d;
		}
	}
	for (int i = 0; i < f->n_outputs; i++) {
		plan_buffer *b = &bufs[c->e->value_buffer[f->outputs[i]]];
		if (b->region == PLAN_ACT)
			b->last = c->e->n_dispatch;
	}
	for (int b = 0; b < c->e->n_buffers; b++)
		if (bufs[b].region == PLAN_ACT && bufs[b].last < bufs[b].first)
			bufs[b].last = bufs[b].first;
}

/* The buffers node i reads (k < node_n_reads) and writes (after them), into
 * ids; returns how many it reads and sets *n_writes. */
static int node_buffers(const plan_ctx *c, int i, int *ids, int *n_writes)
{
	const ir_node *n = &c->f->nodes[i];
	int nr = node_n_reads(n), nw = 0;
	for (int k = 0; k < nr; k++)
		ids[k] = c->e->value_buffer[node_read(n, k)];
	if (n->op == IR_OP_STATE_WRITE)
		ids[nr + nw++] = c->m->n_weights + n->ref;
	for (int k = 0; k < n->n_out; k++)
		ids[nr + nw++] = c->e->value_buffer[n->out[k]];
	*n_writes = nw;
	return nr;
}

/* group[d]: the first dispatch of d's barrier group, were no two buffers to
 * share bytes: place_barriers' rule (a read of a buffer written since the
 * last barrier, or a write of one read or written since, takes a barrier;
 * dispatch 0 always does) over buffer identities. Weights, states and
 * activations never overlap one another, nor states each other, so only
 * the reuse of activation bytes could add barriers to these. */
static void barrier_groups(const plan_ctx *c, int *group)
{
	const ir_func *f = c->f;
	int nb = c->e->n_buffers, epoch = 0, start = 0, most = 1;
	for (int i = 0; i < f->n_nodes; i++)
		if (node_n_reads(&f->nodes[i]) + f->nodes[i].n_out + 1 > most)
			most = node_n_reads(&f->nodes[i]) + f->nodes[i].n_out + 1;
	int *read_at = malloc((size_t)(nb + 1) * sizeof(int)), *written_at = malloc((size_t)(nb + 1) * sizeof(int));
	int *ids = malloc((size_t)most * sizeof(int));
	if (!read_at || !written_at || !ids)
		abort();
	for (int b = 0; b < nb; b++)
		read_at[b] = written_at[b] = -1;
	for (int i = 0; i < f->n_nodes; i++) {
		int d = c->dispatch_of[i];
		if (d < 0)
			continue;
		int nw, nr = node_buffers(c, i, ids, &nw);
		bool barrier = d == 0;
		for (int k = 0; k < nr + nw && !barrier; k++)
			barrier = written_at[ids[k]] == epoch || (k >= nr && read_at[ids[k]] == epoch);
		if (barrier) {
			epoch++;
			start = d;
		}
		group[d] = start;
		for (int k = 0; k < nr; k++)
			if (c->e->buffers[ids[k]].region != PLAN_WEIGHT)
				read_at[ids[k]] = epoch;
		for (int k = nr; k < nr + nw; k++)
			written_at[ids[k]] = epoch;
	}
	free(read_at);
	free(written_at);
	free(ids);
}

/* First fit among the slots (sorted by offset) still live. */
static int64_t place(live_slot *live, int *n_live, int64_t size, int last)
{
	int64_t off = 0;
	int at = 0;
	while (at < *n_live && live[at].offset < off + size) {
		if (live[at].offset + live[at].size > off)
			off = live[at].offset + live[at].size;
		at++;
	}
	for (int k = *n_live; k > at; k--)
		live[k] = live[k - 1];
	live[at] = (live_slot){off, size, last};
	(*n_live)++;
	return off;
}

static void assign_offsets(plan_ctx *c)
{
	plan_entry *e = c->e;
	live_slot *live = calloc((size_t)e->n_buffers + 1, sizeof(live_slot));
	int *group = malloc((size_t)(e->n_dispatch + 1) * sizeof(int));
	if (!live || !group)
		abort();
	barrier_groups(c, group);
	int n_live = 0;
	int64_t live_bytes = 0;
	for (int b = 0; b < e->n_buffers; b++) {
		plan_buffer *buf = &e->buffers[b];
		if (buf->region != PLAN_ACT)
			continue;
		/* a graph input (first -1) is placed before anything is freed */
		int from = buf->first >= 0 ? group[buf->first] : buf->first, kept = 0;
		for (int k = 0; k < n_live; k++) {
			if (live[k].last < from)
				live_bytes -= live[k].size;
			else
				live[kept++] = live[k];
		}
		n_live = kept;
		buf->offset = place(live, &n_live, buf->size, buf->last);
		live_bytes += buf->size;
		if (buf->offset + buf->size > e->act_bytes)
			e->act_bytes = buf->offset + buf->size;
		if (live_bytes > e->live_peak_bytes)
			e->live_peak_bytes = live_bytes;
	}
	free(live);
	free(group);
}

static plan_range *ranges_of(plan_ctx *c, const int *buffers, int n)
{
	plan_range *r = ir_arena_alloc(&c->p->arena, (size_t)(n ? n : 1) * sizeof(plan_range));
	for (int k = 0; k < n; k++) {
		const plan_buffer *b = &c->e->buffers[buffers[k]];
		r[k] = (plan_range){buffers[k], b->region, b->offset, b->size};
	}
	return r;
}

static void fill_dispatch(plan_ctx *c, int node, plan_dispatch *d)
{
	const ir_node *n = &c->f->nodes[node];
	int ids[node_n_reads(n) + n->n_out + 1], nw, nr = node_buffers(c, node, ids, &nw);
	*d = (plan_dispatch){node, nr, nw, ranges_of(c, ids, nr), ranges_of(c, ids + nr, nw), false};
}

static void plan_entry_build(halo_plan *p, const ir_module *m, int ei, plan_entry *e)
{
	const ir_entry *en = &m->entries[ei];
	const ir_func *f = &m->funcs[en->func];
	ir_arena *a = &p->arena;
	*e = (plan_entry){.name = en->name, .entry = ei, .func = en->func, .t_max = en->t_max};
	plan_ctx c = {p, m, f, e, calloc((size_t)f->n_nodes + 1, sizeof(int))};
	if (!c.dispatch_of)
		abort();
	for (int i = 0; i < f->n_nodes; i++)
		c.dispatch_of[i] = node_is_view(&f->nodes[i]) ? -1 : e->n_dispatch++;
	int max_buffers = m->n_weights + m->n_states + f->n_values;
	e->buffers = ir_arena_alloc(a, (size_t)(max_buffers ? max_buffers : 1) * sizeof(plan_buffer));
	e->value_buffer = ir_arena_alloc(a, (size_t)(f->n_values ? f->n_values : 1) * sizeof(int));
	e->value_at_pos = ir_arena_alloc(a, (size_t)(f->n_values ? f->n_values : 1) * sizeof(bool));
	add_module_buffers(&c);
	assign_buffers(&c);
	compute_liveness(&c);
	assign_offsets(&c);
	e->dispatch = ir_arena_alloc(a, (size_t)(e->n_dispatch ? e->n_dispatch : 1) * sizeof(plan_dispatch));
	for (int i = 0; i < f->n_nodes; i++)
		if (c.dispatch_of[i] >= 0)
			fill_dispatch(&c, i, &e->dispatch[c.dispatch_of[i]]);
	free(c.dispatch_of);
}

bool pass_plan_memory(ir_module *m, halo_plan *plan, ir_error *err)
{
	if (!m->expanded) {
		ir_error_set(err, (ir_loc){m->path, 0, 0}, "plan_memory: the module is not expanded");
		return false;
	}
	plan->n_entries = m->n_entries;
	plan->entries = ir_arena_alloc(&plan->arena, (size_t)(m->n_entries ? m->n_entries : 1) *
							      sizeof(plan_entry));
	for (int i = 0; i < m->n_entries; i++)
		plan_entry_build(plan, m, i, &plan->entries[i]);
	return true;
}
