/* Golden dumps of tests/models/hybrid_tiny.yaml: the canonical YAML after
 * every module pass, and the schedule and memory views of the final plan,
 * compared byte for byte with tests/passes/golden/. After an intended
 * change, regenerate with HALO_REGEN_GOLDEN=1 and review the diff. */
#include <stdlib.h>
#include <string.h>

#include "passes/pipeline.h"
#include "tests/passes/test_util.h"

#define MODEL "tests/models/hybrid_tiny.yaml"
#define CONFIG "tests/models/hybrid_tiny.config.json"

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		fwrite(chunk, 1, n, mem);
	fclose(f);
	fclose(mem);
	return buf;
}

/* Where two texts first differ, as a line number and both lines. */
static void report_diff(const char *name, const char *want, const char *got)
{
	int line = 1;
	const char *w = want, *g = got;
	while (*w && *w == *g) {
		line += *w == '\n';
		w++;
		g++;
	}
	while (w > want && w[-1] != '\n')
		w--, g--;
	fprintf(stderr, "%s: first difference at line %d\n  golden: %.*s\n  actual: %.*s\n", name,
		line, (int)strcspn(w, "\n"), w, (int)strcspn(g, "\n"), g);
}

static void compare(const char *name, const char *got)
{
	char rel[256];
	snprintf(rel, sizeof rel, "tests/passes/golden/%s", name);
	const char *path = test_path(rel);
	if (getenv("HALO_REGEN_GOLDEN")) {
		FILE *f = fopen(path, "wb");
		CHECK(f && fputs(got, f) >= 0 && fclose(f) == 0, "cannot write %s", path);
		return;
	}
	char *want = read_file(path);
	CHECK(want, "missing golden file %s (run with HALO_REGEN_GOLDEN=1)", path);
	if (want && strcmp(want, got) != 0) {
		report_diff(name, want, got);
		CHECK(false, "%s differs from its golden file", name);
	}
	free(want);
}

int main(void)
{
	for (int i = 0; i < pipeline_n_passes(); i++) {
		const pipeline_pass *p = pipeline_pass_at(i);
		if (p->needs_plan)
			continue;
		ir_module *m = test_run_to(MODEL, CONFIG, p->name, NULL);
		if (!m)
			return test_finish("golden_test");
		char name[96], *dump = test_dump_yaml(m);
		snprintf(name, sizeof name, "%02d_%s.yaml", i + 1, p->name);
		compare(name, dump);
		free(dump);
		ir_module_free(m);
	}
	halo_plan *plan;
	ir_module *m = test_run_to(MODEL, CONFIG, "check_barriers", &plan);
	if (m) {
		char *sched = test_dump_schedule(m, plan), *mem = test_dump_memory(m, plan);
		compare("schedule.txt", sched);
		compare("memory.txt", mem);
		free(sched);
		free(mem);
		plan_free(plan);
		ir_module_free(m);
	}
	return test_finish("golden_test");
}
