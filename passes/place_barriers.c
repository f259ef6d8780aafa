/* pass_place_barriers: walks each entry's dispatch list keeping the ranges
 * read and written since the last barrier; a dispatch that reads a pending
 * write (RAW), writes a pending read (WAR) or writes a pending write (WAW)
 * gets a barrier, which retires everything pending. Dispatch 0 always gets
 * one: it orders the step after the previous step and the input upload. */
#include "passes/passes.h"

#include <stdlib.h>

typedef struct {
	plan_range *r;
	int n, cap;
} range_list;

static void push(range_list *l, const plan_range *r)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->r = realloc(l->r, (size_t)l->cap * sizeof(plan_range));
		if (!l->r)
			abort();
	}
	l->r[l->n++] = *r;
}

static bool overlaps_any(const range_list *l, const plan_range *r, int n)
{
	for (int i = 0; i < n; i++)
		for (int k = 0; k < l->n; k++)
			if (plan_ranges_overlap(&r[i], &l->r[k]))
				return true;
	return false;
}

static void place_entry(plan_entry *e)
{
	range_list reads = {0}, writes = {0};
	e->n_barriers = 0;
	for (int i = 0; i < e->n_dispatch; i++) {
		plan_dispatch *d = &e->dispatch[i];
		d->barrier = i == 0 || overlaps_any(&writes, d->reads, d->n_reads) ||
			     overlaps_any(&reads, d->writes, d->n_writes) ||
			     overlaps_any(&writes, d->writes, d->n_writes);
		if (d->barrier) {
			reads.n = writes.n = 0;
			e->n_barriers++;
		}
		for (int k = 0; k < d->n_reads; k++)
			if (d->reads[k].region != PLAN_WEIGHT)
				push(&reads, &d->reads[k]);
		for (int k = 0; k < d->n_writes; k++)
			push(&writes, &d->writes[k]);
	}
	free(reads.r);
	free(writes.r);
}

bool pass_place_barriers(ir_module *m, halo_plan *plan, ir_error *err)
{
	for (int i = 0; i < plan->n_entries; i++)
		place_entry(&plan->entries[i]);
	return true;
}
