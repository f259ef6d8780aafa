/* Shared helpers of the passes tests (see test_util.h). */
#include "tests/passes/test_util.h"

#include <stdlib.h>
#include <string.h>

#include "ir/dump.h"
#include "ir/read_model.h"
#include "passes/pipeline.h"
#include "passes/plan_dump.h"

int test_failures;

const char *test_path(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("HALO_SOURCE_ROOT");
	snprintf(buf, sizeof buf, "%s/%s", root ? root : ".", rel);
	return buf;
}

bool test_try_run_to(const char *model, const char *config, const char *last, ir_module **out,
		     halo_plan **plan, ir_error *err)
{
	char model_path[4096];
	snprintf(model_path, sizeof model_path, "%s", test_path(model));
	*out = ir_read_model(model_path, test_path(config), err);
	if (plan)
		*plan = NULL;
	if (!*out)
		return false;
	int stop = pipeline_find(last);
	if (stop < 0) {
		ir_error_set(err, (ir_loc){model_path, 0, 0}, "test: no pass '%s'", last);
		return false;
	}
	halo_plan *p = plan_new();
	bool ok = pipeline_run_range(*out, p, 0, stop, err);
	if (plan)
		*plan = p;
	else
		plan_free(p);
	return ok;
}

ir_module *test_run_to(const char *model, const char *config, const char *last, halo_plan **plan)
{
	ir_error err = {0};
	ir_module *m;
	halo_plan *p;
	if (test_try_run_to(model, config, last, &m, &p, &err)) {
		if (plan)
			*plan = p;
		else
			plan_free(p);
		return m;
	}
	fprintf(stderr, "pipeline failed: %s\n", err.msg);
	test_failures++;
	plan_free(p);
	ir_module_free(m);
	if (plan)
		*plan = NULL;
	return NULL;
}

typedef struct {
	char *buf;
	size_t len;
	FILE *f;
} capture;

static FILE *capture_open(capture *c)
{
	c->f = open_memstream(&c->buf, &c->len);
	if (!c->f)
		abort();
	return c->f;
}

static char *capture_close(capture *c)
{
	fclose(c->f);
	return c->buf;
}

char *test_dump_yaml(const ir_module *m)
{
	capture c;
	ir_dump_yaml(m, capture_open(&c));
	return capture_close(&c);
}

char *test_dump_schedule(const ir_module *m, const halo_plan *p)
{
	capture c;
	FILE *f = capture_open(&c);
	for (int i = 0; i < p->n_entries; i++)
		plan_dump_schedule(m, &p->entries[i], f);
	return capture_close(&c);
}

char *test_dump_memory(const ir_module *m, const halo_plan *p)
{
	capture c;
	FILE *f = capture_open(&c);
	for (int i = 0; i < p->n_entries; i++)
		plan_dump_memory(m, p, &p->entries[i], f);
	return capture_close(&c);
}

const ir_func *test_graph(const ir_module *m)
{
	return &m->funcs[m->entries[0].func];
}

int test_node(const ir_module *m, const char *name)
{
	return ir_func_node(test_graph(m), name);
}

int test_finish(const char *name)
{
	if (test_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, test_failures);
		return 1;
	}
	printf("%s: ok\n", name);
	return 0;
}
