/* Plan lifetime and the small helpers every plan consumer shares. */
#include "passes/plan.h"

#include <stdlib.h>
#include <string.h>

halo_plan *plan_new(void)
{
	halo_plan *p = calloc(1, sizeof(*p));
	if (!p)
		abort();
	return p;
}

void plan_free(halo_plan *p)
{
	if (!p)
		return;
	ir_arena_free(&p->arena);
	free(p);
}

const plan_entry *plan_find_entry(const halo_plan *p, const char *name)
{
	for (int i = 0; i < p->n_entries; i++)
		if (strcmp(p->entries[i].name, name) == 0)
			return &p->entries[i];
	return NULL;
}

bool plan_ranges_overlap(const plan_range *a, const plan_range *b)
{
	return a->region == b->region && a->offset < b->offset + b->size &&
	       b->offset < a->offset + a->size;
}

const char *plan_region_name(plan_region r)
{
	switch (r) {
	case PLAN_ACT:
		return "act";
	case PLAN_STATE:
		return "state";
	case PLAN_WEIGHT:
		return "weight";
	}
	return "?";
}
