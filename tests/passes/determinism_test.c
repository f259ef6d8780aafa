/* The pipeline's output is a function of the graph alone:
 *  - running it twice on the same files gives byte-identical dumps;
 *  - a copy of hybrid_tiny.yaml whose independent pure ops are listed in
 *    another order (tests/passes/models/hybrid_tiny_reordered.yaml) gives
 *    the same schedule and memory plan, while its first YAML dump (before
 *    any pass reorders nodes) really does differ, so the test would see a
 *    schedule that followed the listing. */
#include <stdlib.h>
#include <string.h>

#include "tests/passes/test_util.h"

#define MODEL "tests/models/hybrid_tiny.yaml"
#define REORDERED "tests/passes/models/hybrid_tiny_reordered.yaml"
#define CONFIG "tests/models/hybrid_tiny.config.json"

typedef struct {
	char *yaml, *schedule, *memory;
} dumps;

static bool run(const char *model, dumps *d)
{
	halo_plan *plan;
	ir_module *m = test_run_to(model, CONFIG, "check_barriers", &plan);
	if (!m)
		return false;
	d->yaml = test_dump_yaml(m);
	d->schedule = test_dump_schedule(m, plan);
	d->memory = test_dump_memory(m, plan);
	plan_free(plan);
	ir_module_free(m);
	return true;
}

static void dumps_free(dumps *d)
{
	free(d->yaml);
	free(d->schedule);
	free(d->memory);
}

static char *first_dump(const char *model)
{
	ir_module *m = test_run_to(model, CONFIG, "verify", NULL);
	char *s = m ? test_dump_yaml(m) : NULL;
	ir_module_free(m);
	return s;
}

int main(void)
{
	dumps a = {0}, b = {0}, r = {0};
	if (run(MODEL, &a) && run(MODEL, &b) && run(REORDERED, &r)) {
		CHECK(strcmp(a.yaml, b.yaml) == 0, "two runs gave different YAML dumps");
		CHECK(strcmp(a.schedule, b.schedule) == 0, "two runs gave different schedules");
		CHECK(strcmp(a.memory, b.memory) == 0, "two runs gave different memory plans");
		CHECK(strcmp(a.schedule, r.schedule) == 0,
		      "reordering independent ops changed the schedule:\n%s\n---\n%s", a.schedule,
		      r.schedule);
		CHECK(strcmp(a.memory, r.memory) == 0, "reordering independent ops changed the memory plan");
	}
	char *fa = first_dump(MODEL), *fr = first_dump(REORDERED);
	CHECK(fa && fr && strcmp(fa, fr) != 0,
	      "the reordered model reads back identical: it does not test the listing order");
	free(fa);
	free(fr);
	dumps_free(&a);
	dumps_free(&b);
	dumps_free(&r);
	return test_finish("determinism_test");
}
