/* tests/models/hybrid_tiny.yaml reads; its dumps are canonical (same
 * module -> same bytes, same file -> same dump) and match the golden file.
 * HALO_IR_REGEN=1 rewrites the golden file instead of comparing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "ir/dump.h"
#include "ir/ops.h"
#include "ir/read_model.h"
#include "tests/check.h"
#include "tests/ir/golden.h"

static char root[1024];

static const char *src(const char *rel, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", root, rel);
	return buf;
}

/* tests/models/<name>.yaml read with hybrid_tiny's config. */
static ir_module *read_model_named(const char *name)
{
	char rel[128], y[1200 + 128], c[1200];
	ir_error err = {0};
	snprintf(rel, sizeof rel, "tests/models/%s.yaml", name);
	ir_module *m = ir_read_model(src(rel, y, sizeof(y)), src("tests/models/hybrid_tiny.config.json", c, sizeof(c)),
				     &err);
	CHECK(m, "%s does not read: %s", name, err.msg);
	return m;
}

static ir_module *read_tiny(void)
{
	return read_model_named("hybrid_tiny");
}

/* Dumps into a malloc'd string (the caller frees it). */
static char *dump(const ir_module *m, bool dot, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (!f)
		abort();
	if (dot)
		ir_dump_dot(m, f);
	else
		ir_dump_yaml(m, f);
	fclose(f);
	return buf;
}

static void test_structure(const ir_module *m)
{
	CHECK(strcmp(m->model, "hybrid_tiny") == 0, "model name %s", m->model);
	CHECK(m->n_funcs == 4, "funcs %d", m->n_funcs);
	CHECK(m->n_layers == 2 && m->layer_block[0] == ir_module_func(m, "gdn") &&
		      m->layer_block[1] == ir_module_func(m, "attn") && m->layer_then && m->layer_then[0] == ir_module_func(m, "moe_ffn") &&
		      m->layer_then[1] == m->layer_then[0],
	      "layer list");
	const ir_func *fwd = &m->funcs[ir_module_func(m, "forward")];
	int calls = 0, weights = 0;
	for (int i = 0; i < fwd->n_nodes; i++) {
		const ir_node *n = &fwd->nodes[i];
		if (n->op == IR_OP_CALL) {
			int want[4] = {ir_module_func(m, "gdn"), ir_module_func(m, "moe_ffn"), ir_module_func(m, "attn"),
				       ir_module_func(m, "moe_ffn")};
			CHECK(calls < 4 && n->ref == want[calls], "call %d refs %d", calls, n->ref);
			CHECK(ir_node_attr_int(n, "layer", -1) == calls / 2, "call %d layer", calls);
			if (calls > 0)
				CHECK(fwd->values[n->in[0]].producer == i - 1, "calls chain");
			calls++;
		}
		if (n->op == IR_OP_WEIGHT) {
			weights++;
			CHECK(!n->ref_local && ir_node_weight(m, fwd, n) == &m->weights[n->ref], "module weight ref");
		}
	}
	CHECK(calls == 4 && weights == 3, "forward has %d calls and %d weights", calls, weights);
	const ir_func *gdn = &m->funcs[ir_module_func(m, "gdn")];
	int nid = ir_func_node(gdn, "conv_store");
	CHECK(nid >= 0 && gdn->nodes[nid].ref_local && strcmp(ir_node_state(m, gdn, &gdn->nodes[nid])->name, "conv") == 0,
	      "state_write resolves to the block's state");
	CHECK(ir_module_param(m, "conv_ch")->i == 128 && ir_module_param(m, "rope_base")->is_float, "params");
	CHECK(m->n_entries == 3 && m->entries[0].t_max == 64 && strcmp(m->entries[0].logits, "last") == 0 &&
		      !m->entries[1].state_slots && m->entries[2].state_slots && m->entries[2].t_max == 5,
	      "entries: prefill, decode, verify (draft_max 4, recurrent: slots)");
}

/* Replaces the first occurrence of from in text (malloc'd result). */
static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	if (!at)
		abort();
	size_t pre = (size_t)(at - text), flen = strlen(from), tlen = strlen(to);
	char *out = malloc(strlen(text) - flen + tlen + 1);
	if (!out)
		abort();
	memcpy(out, text, pre);
	memcpy(out + pre, to, tlen);
	strcpy(out + pre + tlen, at + flen);
	return out;
}

/* The layer list from config.json (types_from + map) gives the same layers
 * as the pattern. */
static void test_types_from(const ir_module *ref)
{
	char y[1200], c[1200];
	size_t ylen, clen;
	char *yaml = golden_slurp(src("tests/models/hybrid_tiny.yaml", y, sizeof(y)), &ylen);
	char *json = golden_slurp(src("tests/models/hybrid_tiny.config.json", c, sizeof(c)), &clen);
	CHECK(yaml && json, "cannot read hybrid_tiny");
	if (!yaml || !json)
		return;
	char *y2 = replace(yaml, "pattern: [gdn, attn]",
			   "types_from: layer_types\n  map: {linear_attention: gdn, full_attention: attn}");
	char *c2 = replace(json, "{", "{\"text_config\": {\"layer_types\": [\"linear_attention\", \"full_attention\"]},");
	ir_error err = {0};
	ir_module *m = ir_read_model_mem("t.yaml", y2, strlen(y2), "c.json", c2, strlen(c2), NULL, &err);
	CHECK(m, "types_from variant: %s", err.msg);
	if (m) {
		CHECK(m->n_layers == ref->n_layers && memcmp(m->layer_block, ref->layer_block, sizeof(int) * 2) == 0 &&
			      memcmp(m->layer_then, ref->layer_then, sizeof(int) * 2) == 0,
		      "types_from layers differ from the pattern's");
		ir_module_free(m);
	}
	free(y2);
	free(c2);
	free(yaml);
	free(json);
}

/* hybrid_tiny with its `layers` lines and config.json edited: the module,
 * or NULL with the reader's message in err. */
static ir_module *read_edited(const char *layers, const char *cfg_keys, ir_error *err)
{
	char y[1200], c[1200];
	size_t ylen, clen;
	char *yaml = golden_slurp(src("tests/models/hybrid_tiny.yaml", y, sizeof(y)), &ylen);
	char *json = golden_slurp(src("tests/models/hybrid_tiny.config.json", c, sizeof(c)), &clen);
	if (!yaml || !json)
		abort();
	char *y2 = replace(yaml, "pattern: [gdn, attn]\n  then: moe_ffn", layers);
	char *c2 = replace(json, "{", cfg_keys);
	ir_module *m = ir_read_model_mem("t.yaml", y2, strlen(y2), "c.json", c2, strlen(c2), NULL, err);
	free(y2);
	free(c2);
	free(yaml);
	free(json);
	return m;
}

/* The type-list fallbacks (DeepSeek V4: legacy compress_ratios codes, the
 * default schedule) and a `then` block chosen per layer by type. */
static void test_layer_type_rules(const ir_module *ref)
{
	static const char *const same_layers[][2] = {
		/* codes: a list longer than the layers is cut, as transformers does */
		{"types_from: layer_types\n  map: {linear_attention: gdn, full_attention: attn}\n"
		 "  types_from_codes: {config: ratios, codes: {0: linear_attention, 4: full_attention}}\n  then: moe_ffn",
		 "{\"ratios\": [0, 4, 0],"},
		{"types_from: layer_types\n  map: {linear_attention: gdn, full_attention: attn}\n"
		 "  types_default: {first: [linear_attention], repeat: [full_attention]}\n  then: moe_ffn",
		 "{"},
		/* an explicit list wins over the codes */
		{"types_from: layer_types\n  map: {linear_attention: gdn, full_attention: attn}\n"
		 "  types_from_codes: {config: ratios, codes: {0: linear_attention, 4: full_attention}}\n  then: moe_ffn",
		 "{\"ratios\": [4, 4], \"layer_types\": [\"linear_attention\", \"full_attention\"],"},
	};
	for (size_t k = 0; k < sizeof(same_layers) / sizeof(same_layers[0]); k++) {
		ir_error err = {0};
		ir_module *m = read_edited(same_layers[k][0], same_layers[k][1], &err);
		CHECK(m && memcmp(m->layer_block, ref->layer_block, sizeof(int) * 2) == 0 &&
			      memcmp(m->layer_then, ref->layer_then, sizeof(int) * 2) == 0,
		      "type rule %zu: %s", k, m ? "layers differ" : err.msg);
		ir_module_free(m);
	}
	ir_error err = {0};
	ir_module *m = read_edited("pattern: [gdn, attn]\n  then: {types_from: mlp_types, map: {dense: moe_ffn, hashy: attn},"
				   " types_by_count: {config: n_hash, default: 1, type: hashy, other: dense}}",
				   "{", &err);
	CHECK(m && m->layer_then[0] == ir_module_func(m, "attn") && m->layer_then[1] == ir_module_func(m, "moe_ffn"),
	      "then by type: %s", m ? "wrong blocks" : err.msg);
	if (m) {
		size_t len;
		char *text = dump(m, false, &len);
		CHECK(text && strstr(text, "then: [attn, moe_ffn]"), "per-layer then is not dumped as a list");
		free(text);
	}
	ir_module_free(m);
	static const char *const bad[][3] = {
		{"types_from: layer_types\n  map: {linear_attention: gdn, full_attention: attn}\n"
		 "  types_from_codes: {config: ratios, codes: {0: linear_attention}}",
		 "{\"ratios\": [0, 4],", "no layer type for code 4 (layer 1, c.json key 'ratios')"},
		{"types_from: layer_types\n  map: {linear_attention: gdn, full_attention: attn}\n"
		 "  types_from_codes: {config: ratios, codes: {0: linear_attention}}",
		 "{\"ratios\": [0],", "'ratios' in c.json has 1 entries, expected at least 2"},
		{"types_from: layer_types\n  map: {linear_attention: gdn, full_attention: attn}\n"
		 "  types_default: {repeat: [full_attention]}\n  types_by_count: {config: n, default: 1, type: a, other: b}",
		 "{", "expected at most one of types_by_interval, types_by_count, types_default"},
		{"types_from: layer_types\n  map: {linear_attention: gdn, full_attention: attn}", "{",
		 "layers.types_from: config key 'layer_types' is missing from c.json"},
		{"pattern: [gdn, attn]\n  types_default: {repeat: [full_attention]}", "{",
		 "layers.types_default is used with types_from only"},
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		ir_error e = {0};
		ir_module *b = read_edited(bad[k][0], bad[k][1], &e);
		CHECK(!b && strstr(e.msg, bad[k][2]), "bad layers %zu: %s", k, b ? "accepted" : e.msg);
		ir_module_free(b);
	}
}

/* Shape rules through the call chain: logits are [T, vocab]. */
static void test_infer(ir_module *m)
{
	ir_func *fwd = &m->funcs[ir_module_func(m, "forward")];
	for (int i = 0; i < fwd->n_nodes; i++) {
		ir_shape s[8];
		halo_dtype t[8];
		ir_error err = {0};
		const ir_node *n = &fwd->nodes[i];
		bool ok = ir_op_infer(m, fwd, n, s, t, &err);
		CHECK(ok, "infer %s: %s", n->name, err.msg);
		if (!ok)
			return;
		for (int j = 0; j < n->n_out; j++) {
			fwd->values[n->out[j]].shape = s[j];
			fwd->values[n->out[j]].dtype = t[j];
			fwd->values[n->out[j]].shape_known = true;
		}
	}
	char buf[64];
	const ir_value *lg = &fwd->values[fwd->outputs[0]];
	CHECK(strcmp(ir_shape_str(&lg->shape, buf, sizeof(buf)), "[T, 128]") == 0 && lg->dtype == HALO_F32,
	      "logits are %s", buf);
}

/* The dump is YAML libyaml reads back. */
static void test_dump_parses(const char *text, size_t len)
{
	yaml_parser_t p;
	yaml_document_t doc;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	bool ok = yaml_parser_load(&p, &doc);
	CHECK(ok && yaml_document_get_root_node(&doc), "dump is not YAML: %s at line %zu", p.problem ? p.problem : "?",
	      p.problem_mark.line + 1);
	if (ok)
		yaml_document_delete(&doc);
	yaml_parser_delete(&p);
}

/* The read dump of model `name` against tests/ir/golden/<name>.read.yaml. */
static void test_golden(const char *name, const char *text, size_t len)
{
	char rel[128], path[1200 + 128];
	snprintf(rel, sizeof rel, "tests/ir/golden/%s.read.yaml", name);
	src(rel, path, sizeof(path));
	char why[1400];
	CHECK(golden_matches(path, text, len, why, sizeof why), "%s", why);
}

int main(void)
{
	const char *r = getenv("HALO_SOURCE_ROOT");
	snprintf(root, sizeof(root), "%s", r ? r : ".");
	ir_module *a = read_tiny(), *b = read_tiny();
	if (!a || !b)
		return 1;
	size_t la, la2, lb, da, da2;
	char *ya = dump(a, false, &la), *ya2 = dump(a, false, &la2), *yb = dump(b, false, &lb);
	char *dot1 = dump(a, true, &da), *dot2 = dump(a, true, &da2);
	CHECK(la == la2 && memcmp(ya, ya2, la) == 0, "dumping twice differs");
	CHECK(la == lb && memcmp(ya, yb, la) == 0, "reading twice gives different dumps");
	CHECK(da == da2 && memcmp(dot1, dot2, da) == 0, "DOT dumps differ");
	CHECK(strstr(dot1, "digraph \"hybrid_tiny\"") && strstr(dot1, "call layers.0.gdn"), "DOT content");
	test_structure(a);
	test_types_from(a);
	test_layer_type_rules(a);
	test_dump_parses(ya, la);
	test_golden("hybrid_tiny", ya, la);
	/* blocks.<b>.reads: the dump shows them apart from the inputs */
	ir_module *rm = read_model_named("reads_tiny");
	if (rm) {
		size_t lr;
		char *yr = dump(rm, false, &lr);
		CHECK(strstr(yr, "    reads: [tokens]") != NULL, "the reads_tiny dump shows no reads");
		test_golden("reads_tiny", yr, lr);
		free(yr);
		ir_module_free(rm);
	}
	/* blocks calling blocks, sections from an included file */
	ir_module *nm = read_model_named("nested_tiny");
	if (nm) {
		size_t ln;
		char *yn = dump(nm, false, &ln);
		test_golden("nested_tiny", yn, ln);
		free(yn);
		ir_module_free(nm);
	}
	test_infer(a);
	free(ya);
	free(ya2);
	free(yb);
	free(dot1);
	free(dot2);
	ir_module_free(a);
	ir_module_free(b);
	printf("read_model: %d failure(s)\n", check_failures);
	return check_failures ? 1 : 0;
}
