/* Blocks that call blocks and include: (docs/ir.md) through the reader and
 * expand_blocks: tests/models/nested_tiny.yaml's expanded dump against
 * tests/ir/golden/nested_tiny.expand.yaml (HALO_IR_REGEN=1 rewrites it), and
 * the errors of includes (tests/models/include_errors/) and of inlined
 * names, each naming file:line:col and what was expected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dump.h"
#include "ir/read_model.h"
#include "passes/passes.h"
#include "tests/check.h"
#include "tests/ir/golden.h"

static char root[1024];

static const char *src(const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", root, rel);
	return buf;
}

/* Reads tests/models/<rel> with hybrid_tiny's config and, when expand,
 * runs infer_shapes and expand_blocks; NULL with err set on failure. */
static ir_module *read(const char *rel, bool expand, ir_error *err)
{
	char y[1400], c[1400], r[200];
	snprintf(r, sizeof(r), "tests/models/%s", rel);
	ir_module *m = ir_read_model(src(r, y, sizeof(y)), src("tests/models/hybrid_tiny.config.json", c, sizeof(c)), err);
	if (m && expand && !(pass_infer_shapes(m, err) && pass_expand_blocks(m, err))) {
		ir_module_free(m);
		return NULL;
	}
	return m;
}

static void check_golden(const char *text, size_t len)
{
	char path[1200];
	src("tests/ir/golden/nested_tiny.expand.yaml", path, sizeof(path));
	char why[1400];
	CHECK(golden_matches(path, text, len, why, sizeof why), "%s", why);
}

/* Names and checkpoint names of nested_tiny once expanded. */
static void check_expanded(void)
{
	ir_error err = {0};
	ir_module *m = read("nested_tiny.yaml", true, &err);
	CHECK(m, "nested_tiny does not expand: %s", err.msg);
	if (!m)
		return;
	const ir_func *g = &m->funcs[ir_module_func(m, "forward")];
	int w = ir_module_weight(m, "layers.1.layer.tok_add.table");
	CHECK(w >= 0 && strcmp(m->weights[w].hf_name, "model.layers.1.tok.weight") == 0 && m->weights[w].layer == 1,
	      "the callee's own weight is instantiated under the caller's layer instance");
	int n = ir_func_node(g, "layers.1.layer.a_n"), q = ir_func_node(g, "layers.1.layer.q");
	CHECK(n >= 0 && g->nodes[n].layer == 1, "a nested op is named with the call's 'as' and has the layer");
	CHECK(q >= 0 && g->nodes[q].op == IR_OP_ADD, "an op the callee returns takes the call's out name");
	int h = ir_func_node(g, "head_n");
	CHECK(h >= 0 && g->nodes[h].layer == -1, "a graph's inline call keeps layer -1");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ir_dump_yaml(m, f);
	fclose(f);
	check_golden(text, len);
	free(text);
	ir_module_free(m);
}

typedef struct {
	const char *file;   /* under tests/models/ */
	const char *expect; /* a part of the message, from the location on */
} err_case;

static const err_case cases[] = {
	{"include_errors/missing.yaml",
	 "include_errors/missing.yaml:4:11: include: cannot open " /* <root>/tests/models/... */},
	{"include_errors/missing.yaml", "include_errors/nope.yaml: No such file or directory"},
	{"include_errors/absolute.yaml",
	 "include_errors/absolute.yaml:4:11: include: expected a path relative to the including file, got "
	 "'/etc/hostname'"},
	{"include_errors/cycle.yaml", "include_errors/cycle_c.yaml:2:11: include cycle: "},
	{"include_errors/cycle.yaml", "include_errors/cycle_b.yaml -> "},
	{"include_errors/self.yaml", "include_errors/self.yaml:4:11: include cycle: "},
	{"include_errors/dup_block.yaml", "include_errors/block_b.yaml:3:3: block 'b' is defined twice: here and at "},
	{"include_errors/dup_block.yaml", "include_errors/dup_block.yaml:10:3"},
	{"include_errors/bad_key.yaml",
	 "include_errors/with_graphs.yaml:2:1: unknown key 'graphs' in an included file (expected one of: params, "
	 "weights, state, blocks, draft, include)"},
	{"include_errors/two_drafts.yaml",
	 "include_errors/draft_b.yaml:2:1: section 'draft' is defined twice: here and at "},
	{"include_errors/same_as.yaml",
	 "same_as.yaml:10:9: 's_m' names two ops of 'g' once its calls are inlined (the other from "},
};

static void check_errors(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ir_error err = {0};
		ir_module *m = read(cases[i].file, true, &err);
		CHECK(!m && strstr(err.msg, cases[i].expect), "%s: got \"%s\", wanted \"...%s...\"", cases[i].file,
		      err.msg, cases[i].expect);
		ir_module_free(m);
	}
}

/* A model read from memory has no directory to resolve includes against. */
static void check_mem_refuses(void)
{
	static const char yaml[] = "model: m\nhf_model_types: [m]\ninclude: [x.yaml]\n";
	ir_error err = {0};
	ir_module *m = ir_read_model_mem("t.yaml", yaml, strlen(yaml), "c.json", "{}", 2, NULL, &err);
	CHECK(!m && strstr(err.msg, "t.yaml:3:10: include: this model was read from memory"), "got \"%s\"", err.msg);
	ir_module_free(m);
}

int main(void)
{
	const char *r = getenv("HALO_SOURCE_ROOT");
	snprintf(root, sizeof(root), "%s", r ? r : ".");
	check_expanded();
	check_errors();
	check_mem_refuses();
	printf("read_nested: %d failure(s)\n", check_failures);
	return check_failures ? 1 : 0;
}
