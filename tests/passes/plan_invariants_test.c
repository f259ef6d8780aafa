/* Invariants of every memory plan, checked on each test model:
 *  - state buffers live in the STATE region, disjoint from each other, and
 *    nothing but state reads (and reshapes of them) maps onto them;
 *  - a state_write writes exactly its state's buffer;
 *  - two activation buffers whose live ranges meet never share a byte;
 *  - graph outputs stay live to the end; the arena covers every buffer;
 *  - every barrier but dispatch 0's is asked for by the data: a read of a
 *    buffer written since the last barrier, or a write of one read or
 *    written since. Reused activation bytes never add one (plan_memory.c
 *    reuses a buffer only across a barrier the data already needs). */
#include <string.h>

#include "tests/passes/test_util.h"

static const char *const models[][2] = {
	{"tests/models/hybrid_tiny.yaml", "tests/models/hybrid_tiny.config.json"},
	{"tests/passes/models/gdn_state_race.yaml", "tests/passes/models/gdn_state_race.config.json"},
	{"models/qwen4_exp.yaml", "tests/fixtures/qwen4_exp_tiny/config.json"},
	{"models/deepseek_v4.yaml", "tests/fixtures/deepseek_v4_tiny/config.json"},
};

static bool bytes_overlap(const plan_buffer *a, const plan_buffer *b)
{
	return a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

/* Whether value v is a state read's result, looking through reshapes. */
static bool is_state_view(const ir_func *f, int v)
{
	int p = f->values[v].producer;
	while (p >= 0 && f->nodes[p].op == IR_OP_RESHAPE)
		p = f->values[f->nodes[p].in[0]].producer;
	return p >= 0 && f->nodes[p].op == IR_OP_STATE_READ;
}

/* Whether v (or a reshape of it, down a chain of single readers) is the
 * operand of an in-place state_write. */
static bool written_in_place(const ir_func *f, int v)
{
	for (int i = 0; i < f->n_nodes; i++) {
		const ir_node *n = &f->nodes[i];
		if (n->n_in < 1 || n->in[0] != v)
			continue;
		if (n->op == IR_OP_STATE_WRITE)
			return n->in_place;
		if (n->op == IR_OP_RESHAPE)
			return written_in_place(f, n->out[0]);
	}
	return false;
}

static void check_states(const ir_module *m, const plan_entry *e)
{
	const ir_func *f = &m->funcs[e->func];
	for (int a = 0; a < e->n_buffers; a++) {
		const plan_buffer *ba = &e->buffers[a];
		for (int b = a + 1; b < e->n_buffers; b++)
			if (ba->region == PLAN_STATE && e->buffers[b].region == PLAN_STATE)
				CHECK(!bytes_overlap(ba, &e->buffers[b]), "states %s and %s overlap",
				      ba->name, e->buffers[b].name);
	}
	for (int v = 0; v < f->n_values; v++) {
		const plan_buffer *b = &e->buffers[e->value_buffer[v]];
		CHECK((b->region == PLAN_STATE) == (is_state_view(f, v) || e->value_at_pos[v]),
		      "value %s is in region %s", f->values[v].name, plan_region_name(b->region));
		CHECK(!e->value_at_pos[v] || written_in_place(f, v), "value %s is at pos but no in-place write takes it",
		      f->values[v].name);
	}
	for (int d = 0; d < e->n_dispatch; d++) {
		const ir_node *n = &f->nodes[e->dispatch[d].node];
		if (n->op != IR_OP_STATE_WRITE)
			continue;
		const plan_range *w = &e->dispatch[d].writes[0];
		CHECK(e->dispatch[d].n_writes == 1 && w->region == PLAN_STATE &&
		      strcmp(e->buffers[w->buffer].name, m->states[n->ref].name) == 0,
		      "%s does not write its state's buffer", n->name);
	}
}

static void check_activations(const ir_module *m, const plan_entry *e)
{
	const ir_func *f = &m->funcs[e->func];
	for (int a = 0; a < e->n_buffers; a++) {
		const plan_buffer *ba = &e->buffers[a];
		if (ba->region != PLAN_ACT)
			continue;
		CHECK(ba->offset % PLAN_ALIGN == 0 && ba->offset + ba->size <= e->act_bytes,
		      "%s at %lld+%lld outside the %lld-byte arena", ba->name, (long long)ba->offset,
		      (long long)ba->size, (long long)e->act_bytes);
		for (int b = a + 1; b < e->n_buffers; b++) {
			const plan_buffer *bb = &e->buffers[b];
			bool live_together = bb->region == PLAN_ACT && ba->first <= bb->last &&
					     bb->first <= ba->last;
			CHECK(!live_together || !bytes_overlap(ba, bb),
			      "%s [%d..%d] and %s [%d..%d] are live together and overlap", ba->name,
			      ba->first, ba->last, bb->name, bb->first, bb->last);
		}
	}
	for (int i = 0; i < f->n_outputs; i++)
		CHECK(e->buffers[e->value_buffer[f->outputs[i]]].last == e->n_dispatch,
		      "graph output %s is not live to the end", f->values[f->outputs[i]].name);
	CHECK(e->live_peak_bytes > 0 && e->live_peak_bytes <= e->act_bytes, "peak %lld, arena %lld",
	      (long long)e->live_peak_bytes, (long long)e->act_bytes);
}

/* Whether buffer b is in the n ranges r. */
static bool has_buffer(const plan_range *r, int n, int b)
{
	for (int k = 0; k < n; k++)
		if (r[k].buffer == b)
			return true;
	return false;
}

static void check_barriers_asked(const ir_module *m, const plan_entry *e)
{
	(void)m;
	int group = 0;
	for (int d = 0; d < e->n_dispatch; d++) {
		const plan_dispatch *x = &e->dispatch[d];
		if (!x->barrier)
			continue;
		bool asked = d == 0;
		for (int p = group; p < d && !asked; p++) {
			const plan_dispatch *y = &e->dispatch[p];
			for (int k = 0; k < x->n_reads && !asked; k++)
				asked = x->reads[k].region != PLAN_WEIGHT && has_buffer(y->writes, y->n_writes, x->reads[k].buffer);
			for (int k = 0; k < x->n_writes && !asked; k++)
				asked = has_buffer(y->writes, y->n_writes, x->writes[k].buffer) ||
					has_buffer(y->reads, y->n_reads, x->writes[k].buffer);
		}
		CHECK(asked, "entry %s: the barrier before dispatch %d (%s) orders only reused bytes", e->name, d,
		      m->funcs[e->func].nodes[x->node].name);
		group = d;
	}
}

int main(void)
{
	for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
		halo_plan *plan;
		ir_module *m = test_run_to(models[i][0], models[i][1], "check_barriers", &plan);
		if (!m)
			continue;
		for (int e = 0; e < plan->n_entries; e++) {
			check_states(m, &plan->entries[e]);
			check_activations(m, &plan->entries[e]);
			check_barriers_asked(m, &plan->entries[e]);
		}
		plan_free(plan);
		ir_module_free(m);
	}
	return test_finish("plan_invariants_test");
}
