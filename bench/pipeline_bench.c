/* Times the compiler front half: reading a model (YAML + config.json) and
 * running the whole pass pipeline, repeated to report the best and median
 * run, plus what the plan looks like (dispatches, barriers, peak bytes).
 * usage: pipeline_bench [MODEL.yaml CONFIG.json [RUNS]]
 * Defaults to the 64-layer Qwen3-Next-dims hybrid in models/bench/, found
 * through $HALO_SOURCE_ROOT (or the current directory). Not a test: it
 * prints numbers and fails only when the pipeline fails. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ir/read_model.h"
#include "passes/pipeline.h"

#define MAX_RUNS 100

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void report(const char *what, double *ms, int n)
{
	qsort(ms, (size_t)n, sizeof(double), cmp_double);
	printf("%-9s best %8.2f ms   median %8.2f ms\n", what, ms[0], ms[n / 2]);
}

static void describe(const ir_module *m, const halo_plan *plan)
{
	const ir_func *f = &m->funcs[m->entries[0].func];
	printf("model %s: %d layers, %d weights, %d states, %d nodes after the pipeline\n", m->model,
	       m->n_layers, m->n_weights, m->n_states, f->n_nodes);
	for (int i = 0; i < plan->n_entries; i++) {
		const plan_entry *e = &plan->entries[i];
		printf("entry %-8s T<=%-5lld %5d dispatches %5d barriers  activations %.1f MiB "
		       "(live peak %.1f MiB)\n",
		       e->name, (long long)e->t_max, e->n_dispatch, e->n_barriers,
		       (double)e->act_bytes / 1048576.0, (double)e->live_peak_bytes / 1048576.0);
	}
	printf("state %.1f MiB, weights %.2f GiB\n", (double)plan->state_bytes / 1048576.0,
	       (double)plan->weight_bytes / 1073741824.0);
}

/* One read + pipeline; prints the module on the first run. */
static bool run_once(const char *model, const char *config, double *read_ms, double *pass_ms,
		     bool print)
{
	ir_error err = {0};
	double t0 = now_ms();
	ir_module *m = ir_read_model(model, config, &err);
	double t1 = now_ms();
	halo_plan *plan = plan_new();
	bool ok = m && pipeline_run(m, plan, &err);
	double t2 = now_ms();
	if (!ok)
		fprintf(stderr, "pipeline_bench: %s\n", err.msg);
	else if (print)
		describe(m, plan);
	*read_ms = t1 - t0;
	*pass_ms = t2 - t1;
	plan_free(plan);
	ir_module_free(m);
	return ok;
}

int main(int argc, char **argv)
{
	const char *root = getenv("HALO_SOURCE_ROOT");
	char model[4096], config[4096];
	snprintf(model, sizeof model, "%s/models/bench/hybrid_bench.yaml", root ? root : ".");
	snprintf(config, sizeof config, "%s/models/bench/qwen3_next_80b_a3b_64l.config.json",
		 root ? root : ".");
	int runs = 10;
	if (argc == 3 || argc == 4) {
		snprintf(model, sizeof model, "%s", argv[1]);
		snprintf(config, sizeof config, "%s", argv[2]);
		runs = argc == 4 ? atoi(argv[3]) : runs;
	} else if (argc != 1) {
		fprintf(stderr, "usage: pipeline_bench [MODEL.yaml CONFIG.json [RUNS]]\n");
		return 2;
	}
	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "pipeline_bench: RUNS must be 1..%d\n", MAX_RUNS);
		return 2;
	}
	double read_ms[MAX_RUNS], pass_ms[MAX_RUNS], total_ms[MAX_RUNS];
	for (int i = 0; i < runs; i++) {
		if (!run_once(model, config, &read_ms[i], &pass_ms[i], i == 0))
			return 1;
		total_ms[i] = read_ms[i] + pass_ms[i];
	}
#ifdef NDEBUG
	printf("%d runs (verifier after each pass: off)\n", runs);
#else
	printf("%d runs (verifier after each pass: on)\n", runs);
#endif
	report("read", read_ms, runs);
	report("pipeline", pass_ms, runs);
	report("total", total_ms, runs);
	return 0;
}
