/* pass_check_barriers: the barrier checker, written apart from the placer so
 * that a bug in one is not repeated in the other. It looks at pairs: for
 * every dispatch j without a barrier, every earlier dispatch i back to the
 * most recent barrier runs concurrently with j, so no byte may be written by
 * one and touched by the other. Dispatch 0 must carry the step barrier. */
#include "passes/passes.h"

typedef struct {
	const char *kind; /* "RAW", "WAR", "WAW", or NULL */
	const plan_range *at;
} hazard;

static const plan_range *first_overlap(const plan_range *a, int na, const plan_range *b, int nb)
{
	for (int i = 0; i < na; i++)
		for (int k = 0; k < nb; k++)
			if (plan_ranges_overlap(&a[i], &b[k]))
				return &a[i];
	return NULL;
}

/* The hazard between earlier dispatch a and later dispatch b, if any. */
static hazard hazard_between(const plan_dispatch *a, const plan_dispatch *b)
{
	const plan_range *r;
	if ((r = first_overlap(b->reads, b->n_reads, a->writes, a->n_writes)))
		return (hazard){"RAW", r};
	if ((r = first_overlap(b->writes, b->n_writes, a->reads, a->n_reads)))
		return (hazard){"WAR", r};
	if ((r = first_overlap(b->writes, b->n_writes, a->writes, a->n_writes)))
		return (hazard){"WAW", r};
	return (hazard){NULL, NULL};
}

static bool check_entry(const ir_module *m, const plan_entry *e, ir_error *err)
{
	const ir_func *f = &m->funcs[e->func];
	if (e->n_dispatch && !e->dispatch[0].barrier) {
		ir_error_set(err, f->nodes[e->dispatch[0].node].loc,
			     "check_barriers: entry '%s': dispatch 0 lacks the step barrier", e->name);
		return false;
	}
	int since = 0; /* the most recent dispatch carrying a barrier */
	for (int j = 0; j < e->n_dispatch; j++) {
		const plan_dispatch *b = &e->dispatch[j];
		if (b->barrier) {
			since = j;
			continue;
		}
		for (int i = since; i < j; i++) {
			hazard h = hazard_between(&e->dispatch[i], b);
			if (!h.kind)
				continue;
			const ir_node *na = &f->nodes[e->dispatch[i].node], *nb = &f->nodes[b->node];
			ir_error_set(err, nb->loc,
				     "check_barriers: entry '%s': dispatch %d '%s' has a %s hazard with "
				     "dispatch %d '%s' on %s bytes [%lld, %lld) and no barrier between them",
				     e->name, j, nb->name, h.kind, i, na->name, plan_region_name(h.at->region),
				     (long long)h.at->offset, (long long)(h.at->offset + h.at->size));
			return false;
		}
	}
	return true;
}

bool pass_check_barriers(ir_module *m, halo_plan *plan, ir_error *err)
{
	for (int i = 0; i < plan->n_entries; i++)
		if (!check_entry(m, &plan->entries[i], err))
			return false;
	return true;
}
