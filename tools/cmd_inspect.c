/* halo inspect: reads a model, runs the pass pipeline up to a chosen pass and
 * prints the result as canonical YAML, DOT, the dispatch schedule or the
 * memory plan. */
#include <stdio.h>
#include <string.h>

#include "ir/dump.h"
#include "ir/read_model.h"
#include "passes/pipeline.h"
#include "passes/plan_dump.h"
#include "tools/cli_args.h"
#include "tools/commands.h"

typedef struct {
	const char *model, *config, *after, *format, *entry;
	bool list_passes, help;
} inspect_args;

static void inspect_usage(FILE *out)
{
	fputs("usage: halo inspect MODEL.yaml --config CONFIG.json [--after PASS]\n"
	      "                    [--format yaml|dot|schedule|memory] [--entry NAME]\n"
	      "       halo inspect --list-passes\n"
	      "\n"
	      "Reads MODEL.yaml with the HF config CONFIG.json, runs the pass pipeline up to\n"
	      "and including PASS (default: all of it) and prints the result on stdout.\n"
	      "\n"
	      "options:\n"
	      "  --config FILE    HF config.json binding the model's params (required)\n"
	      "  --after PASS     stop after this pass (--list-passes names them)\n"
	      "  --format FMT     yaml     canonical IR dump (default)\n"
	      "                   dot      Graphviz graph of the IR\n"
	      "                   schedule dispatches in order, barriers marked '|',\n"
	      "                            state_write sinks in place (needs place_barriers)\n"
	      "                   memory   buffers: region, offset, size, live range;\n"
	      "                            peak activation bytes (needs plan_memory)\n"
	      "  --entry NAME     only this entry (schedule and memory; default: all)\n"
	      "  --list-passes    print the pipeline's passes in order and exit\n"
	      "  -h, --help       this text\n",
	      out);
}

static int parse_args(int argc, char **argv, inspect_args *a)
{
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			a->help = true;
		else if (strcmp(s, "--list-passes") == 0)
			a->list_passes = true;
		else if (cli_take_value("inspect", argc, argv, &i, "--config", &a->config, &rc) ||
			 cli_take_value("inspect", argc, argv, &i, "--after", &a->after, &rc) ||
			 cli_take_value("inspect", argc, argv, &i, "--format", &a->format, &rc) ||
			 cli_take_value("inspect", argc, argv, &i, "--entry", &a->entry, &rc))
			continue;
		else if (s[0] == '-')
			rc = cli_usage_error("inspect", "unknown option '%s'", s);
		else if (a->model)
			rc = cli_usage_error("inspect", "more than one model file given ('%s')", s);
		else
			a->model = s;
	}
	return rc;
}

static void list_passes(void)
{
	for (int i = 0; i < pipeline_n_passes(); i++)
		printf("%2d %-18s %s\n", i + 1, pipeline_pass_at(i)->name, pipeline_pass_at(i)->summary);
}

/* Which pass to stop after, checked against what the format needs. */
static int stop_pass(const inspect_args *a, int *last)
{
	*last = pipeline_n_passes() - 1;
	if (a->after && (*last = pipeline_find(a->after)) < 0)
		return cli_usage_error("inspect", "unknown pass '%s' (see --list-passes)", a->after);
	const char *needs = strcmp(a->format, "schedule") == 0 ? "place_barriers"
			    : strcmp(a->format, "memory") == 0 ? "plan_memory"
							       : NULL;
	if (!needs && strcmp(a->format, "yaml") != 0 && strcmp(a->format, "dot") != 0)
		return cli_usage_error("inspect", "unknown format '%s' (yaml, dot, schedule or memory)", a->format);
	if (needs && *last < pipeline_find(needs))
		return cli_usage_error("inspect", "--format %s needs --after plan_memory or later "
				   "(schedule: place_barriers or later)", a->format);
	if (!needs && a->entry)
		return cli_usage_error("inspect", "--entry '%s' applies to --format schedule and memory only", a->entry);
	return 0;
}

static int print_plan(const ir_module *m, const halo_plan *plan, const inspect_args *a)
{
	if (a->entry && !plan_find_entry(plan, a->entry)) {
		fprintf(stderr, "halo inspect: %s has no entry '%s'\n", a->model, a->entry);
		return 1;
	}
	for (int i = 0; i < plan->n_entries; i++) {
		const plan_entry *e = &plan->entries[i];
		if (a->entry && strcmp(a->entry, e->name) != 0)
			continue;
		if (strcmp(a->format, "schedule") == 0)
			plan_dump_schedule(m, e, stdout);
		else
			plan_dump_memory(m, plan, e, stdout);
	}
	return 0;
}

static int run_inspect(const inspect_args *a, int last)
{
	ir_error err = {0};
	ir_module *m = ir_read_model(a->model, a->config, &err);
	if (!m) {
		fprintf(stderr, "halo inspect: %s\n", err.msg);
		return 1;
	}
	halo_plan *plan = plan_new();
	int rc = 0;
	if (!pipeline_run_range(m, plan, 0, last, &err)) {
		fprintf(stderr, "halo inspect: %s\n", err.msg);
		rc = 1;
	} else if (strcmp(a->format, "yaml") == 0) {
		ir_dump_yaml(m, stdout);
	} else if (strcmp(a->format, "dot") == 0) {
		ir_dump_dot(m, stdout);
	} else {
		rc = print_plan(m, plan, a);
	}
	plan_free(plan);
	ir_module_free(m);
	if (fflush(stdout) != 0) {
		perror("halo inspect: writing stdout");
		rc = 1;
	}
	return rc;
}

int cmd_inspect(int argc, char **argv)
{
	inspect_args a = {.format = "yaml"};
	int rc = parse_args(argc, argv, &a);
	if (rc)
		return rc;
	if (a.help) {
		inspect_usage(stdout);
		return 0;
	}
	if (a.list_passes) {
		list_passes();
		return 0;
	}
	if (!a.model)
		return cli_usage_error("inspect", "%s", "no model file given");
	if (!a.config)
		return cli_usage_error("inspect", "%s", "--config CONFIG.json is required");
	int last;
	if ((rc = stop_pass(&a, &last)))
		return rc;
	return run_inspect(&a, last);
}
