/* halo inspect: reads a model, runs the pass pipeline up to a chosen pass and
 * prints the result as canonical YAML, DOT, the dispatch schedule or the
 * memory plan; or, with --bundle, lists a compiled bundle's weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dump.h"
#include "ir/read_model.h"
#include "passes/pipeline.h"
#include "passes/plan_dump.h"
#include "runtime/bundle.h"
#include "runtime/manifest.h"
#include "tools/cli_args.h"
#include "tools/commands.h"

typedef struct {
	const char *model, *config, *after, *format, *entry, *bundle;
	bool list_passes, help;
} inspect_args;

static void inspect_usage(FILE *out)
{
	fputs("usage: halo inspect MODEL.yaml --config CONFIG.json [--after PASS]\n"
	      "                    [--format yaml|dot|schedule|memory] [--entry NAME]\n"
	      "       halo inspect --list-passes\n"
	      "       halo inspect --bundle BUNDLE.halo\n"
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
	      "  --bundle FILE    list a compiled bundle's weights (name, dtype, shape, bytes)\n"
	      "                   and its weight bytes per dtype (f16, q8_0, q4_k, ...)\n"
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
			 cli_take_value("inspect", argc, argv, &i, "--entry", &a->entry, &rc) ||
			 cli_take_value("inspect", argc, argv, &i, "--bundle", &a->bundle, &rc))
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

/* The bundle's weights in offset order (an alias, one stored tensor under
 * two names, shows its bytes once), then the bytes and weights per dtype. */
static int inspect_bundle(const char *path)
{
	char err[1024];
	halo_bundle *b = halo_bundle_open_flags(path, HALO_BUNDLE_SKIP_WEIGHTS_CHECKSUM, err, sizeof err);
	if (!b) {
		fprintf(stderr, "halo inspect: %s\n", err);
		return 1;
	}
	size_t jsize = 0, wsize = 0;
	const char *json = halo_bundle_section(b, "manifest", &jsize);
	halo_bundle_section(b, "weights", &wsize);
	uint64_t code_size[HALO_TARGET_COUNT];
	halo_bundle_code_sizes(b, code_size);
	halo_manifest *m = json ? manifest_parse(json, jsize, wsize, code_size, err, sizeof err) : NULL;
	if (!m) {
		fprintf(stderr, "halo inspect: %s: %s\n", path, json ? err : "no manifest section");
		halo_bundle_close(b);
		return 1;
	}
	uint64_t bytes[HALO_DTYPE_COUNT] = {0}, params[HALO_DTYPE_COUNT] = {0}, total = 0;
	int count[HALO_DTYPE_COUNT] = {0};
	printf("# %s: model %s, weights section %zu bytes\n# %-46s %-11s %-20s %12s %12s\n", path, m->model, wsize,
	       "weight", "dtype", "shape", "offset", "bytes");
	for (int i = 0; i < m->n_weights; i++) {
		const halo_buffer_decl *d = &m->weights[i];
		bool alias = i > 0 && d->offset == m->weights[i - 1].offset;
		char shape[64];
		int n = snprintf(shape, sizeof shape, "[");
		uint64_t numel = 1;
		for (int k = 0; k < d->rank && n > 0 && (size_t)n < sizeof shape; k++) {
			n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%lld", k ? ", " : "", (long long)d->shape[k]);
			numel *= (uint64_t)d->shape[k];
		}
		if (n > 0 && (size_t)n < sizeof shape)
			snprintf(shape + n, sizeof shape - (size_t)n, "]");
		printf("  %-46s %-11s %-20s %12llu %12llu%s\n", d->name, halo_dtype_name(d->dtype), shape,
		       (unsigned long long)d->offset, (unsigned long long)d->size, alias ? " (alias: stored once)" : "");
		if (alias)
			continue;
		bytes[d->dtype] += d->size;
		params[d->dtype] += numel;
		count[d->dtype]++;
		total += d->size;
	}
	printf("# bytes per dtype (alignment padding not counted):\n");
	for (int t = 0; t < HALO_DTYPE_COUNT; t++)
		if (count[t])
			printf("  %-11s %4d weights %14llu elements %14llu bytes %5.1f%%  %.2f bits/weight\n",
			       halo_dtype_name((halo_dtype)t), count[t], (unsigned long long)params[t],
			       (unsigned long long)bytes[t], total ? 100.0 * (double)bytes[t] / (double)total : 0.0,
			       params[t] ? 8.0 * (double)bytes[t] / (double)params[t] : 0.0);
	manifest_free(m);
	halo_bundle_close(b);
	return 0;
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
	if (a.bundle) {
		if (a.model || a.config || a.after || a.entry)
			return cli_usage_error("inspect", "%s", "--bundle takes no model file, --config, --after or --entry");
		return inspect_bundle(a.bundle);
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
