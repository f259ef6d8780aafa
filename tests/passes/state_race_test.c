/* The seed's GDN state race, rebuilt (tests/passes/models/gdn_state_race.yaml:
 * three layers sharing one conv and one SSM state, each write a sink, plus a
 * checkpoint copy of the old conv state listed after the conv write). From
 * the final dispatch list alone this test checks, for each state write of
 * layer i: every dispatch of layers <= i that reads the state buffer runs
 * before it, and every dispatch of a later layer that reads it runs after
 * it with a barrier in between. It also checks that this order rests on
 * edges: without order_effects the effect checker rejects the graph. */
#include <string.h>

#include "passes/passes.h"
#include "tests/passes/test_util.h"

#define MODEL "tests/passes/models/gdn_state_race.yaml"
#define CONFIG "tests/passes/models/gdn_state_race.config.json"
#define LAYERS 3

static const plan_buffer *state_buffer(const plan_entry *e, const char *name)
{
	for (int b = 0; b < e->n_buffers; b++)
		if (e->buffers[b].region == PLAN_STATE && strcmp(e->buffers[b].name, name) == 0)
			return &e->buffers[b];
	return NULL;
}

static bool touches(const plan_range *r, int n, const plan_buffer *b)
{
	plan_range s = {0, b->region, b->offset, b->size};
	for (int k = 0; k < n; k++)
		if (plan_ranges_overlap(&r[k], &s))
			return true;
	return false;
}

static bool barrier_between(const plan_entry *e, int a, int b)
{
	for (int k = a + 1; k <= b; k++)
		if (e->dispatch[k].barrier)
			return true;
	return false;
}

static void check_state(const ir_module *m, const plan_entry *e, const char *state)
{
	const ir_func *f = &m->funcs[e->func];
	const plan_buffer *sb = state_buffer(e, state);
	CHECK(sb, "no state buffer '%s'", state);
	if (!sb)
		return;
	int writes = 0;
	for (int w = 0; w < e->n_dispatch; w++) {
		const plan_dispatch *dw = &e->dispatch[w];
		if (!touches(dw->writes, dw->n_writes, sb))
			continue;
		writes++;
		int layer = f->nodes[dw->node].layer;
		for (int r = 0; r < e->n_dispatch; r++) {
			const plan_dispatch *dr = &e->dispatch[r];
			if (!touches(dr->reads, dr->n_reads, sb))
				continue;
			const ir_node *rn = &f->nodes[dr->node];
			if (rn->layer <= layer)
				CHECK(r < w, "%s: '%s' (layer %d) reads the old state at %d, after the write "
				      "'%s' at %d", state, rn->name, rn->layer, r, f->nodes[dw->node].name, w);
			else
				CHECK(r > w && barrier_between(e, w, r),
				      "%s: '%s' (layer %d) at %d is not after the write '%s' at %d with a barrier",
				      state, rn->name, rn->layer, r, f->nodes[dw->node].name, w);
		}
	}
	CHECK(writes == LAYERS, "%s: %d writes, expected one per layer", state, writes);
}

static void check_reader_count(const ir_module *m, const plan_entry *e)
{
	/* conv is read by conv1d and by the checkpoint copy in each layer. */
	const plan_buffer *sb = state_buffer(e, "conv");
	int n = 0;
	for (int d = 0; sb && d < e->n_dispatch; d++)
		n += touches(e->dispatch[d].reads, e->dispatch[d].n_reads, sb);
	CHECK(n == 2 * LAYERS, "conv has %d reading dispatches, expected %d", n, 2 * LAYERS);
}

int main(void)
{
	halo_plan *plan;
	ir_module *m = test_run_to(MODEL, CONFIG, "check_barriers", &plan);
	if (m) {
		for (int i = 0; i < plan->n_entries; i++) {
			check_state(m, &plan->entries[i], "conv");
			check_state(m, &plan->entries[i], "ssm");
			check_reader_count(m, &plan->entries[i]);
		}
		plan_free(plan);
		ir_module_free(m);
	}
	ir_module *bare = test_run_to(MODEL, CONFIG, "fuse_elementwise", NULL);
	if (bare) {
		ir_error err = {0};
		CHECK(!pass_check_effects(bare, &err),
		      "without order_effects the state effects still count as ordered");
		ir_module_free(bare);
	}
	return test_finish("state_race_test");
}
