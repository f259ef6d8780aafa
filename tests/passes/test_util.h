/* Helpers shared by the passes tests: locating test files, running the
 * pipeline to a named pass, capturing dumps as strings, and a CHECK macro
 * that reports file:line and keeps going so one run shows every failure. */
#ifndef HALO_TESTS_PASSES_TEST_UTIL_H
#define HALO_TESTS_PASSES_TEST_UTIL_H

#include <stdbool.h>
#include <stdio.h>

#include "ir/ir.h"
#include "passes/plan.h"

extern int test_failures;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__,  \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			test_failures++;                                        \
		}                                                               \
	} while (0)

/* $HALO_SOURCE_ROOT/rel (or ./rel when unset), in a static buffer that the
 * next call overwrites. */
const char *test_path(const char *rel);

/* Reads the model (paths relative to the source root) and runs the pipeline
 * through pass `last` (a name from pipeline.c). Returns NULL and prints the
 * error when reading or a pass fails; *plan (when plan is not NULL) gets
 * a plan the caller frees with plan_free(). */
ir_module *test_run_to(const char *model, const char *config, const char *last, halo_plan **plan);

/* Like test_run_to, but keeps the error for the caller: returns whether the
 * pipeline ran clean, and *out the module (NULL when reading failed). */
bool test_try_run_to(const char *model, const char *config, const char *last, ir_module **out,
		     halo_plan **plan, ir_error *err);

/* Captured dumps: malloc'd NUL-terminated strings the caller frees. */
char *test_dump_yaml(const ir_module *m);
char *test_dump_schedule(const ir_module *m, const halo_plan *p);
char *test_dump_memory(const ir_module *m, const halo_plan *p);

/* Node id of the node named name in the first graph function, or -1. */
int test_node(const ir_module *m, const char *name);
/* The graph function of the first entry. */
const ir_func *test_graph(const ir_module *m);

/* Exit status for main: 0 when no CHECK failed. */
int test_finish(const char *name);

#endif
