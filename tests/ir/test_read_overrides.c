/* layers.overrides on models/qwen4_exp.yaml: ple_layer_ids places the PLE
 * block (one-indexed) over the layer_types pattern, and on expansion each
 * PLE layer's ngram_embed gets its position in the list as layer_index and
 * hashes the forward graph's own token ids (the block's `reads`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/read_model.h"
#include "passes/passes.h"
#include "tests/ir/golden.h"

static int fails;

#define CHECK(cond, ...)                                  \
	do {                                              \
		if (!(cond)) {                            \
			fprintf(stderr, "FAIL: " __VA_ARGS__); \
			fprintf(stderr, "\n");            \
			fails++;                          \
		}                                         \
	} while (0)

/* The fixture's config with its ple_layer_ids list replaced by ids. */
static char *config_with_ids(const char *fixture, const char *ids)
{
	size_t len;
	char *c = golden_slurp(fixture, &len);
	char *at = c ? strstr(c, "\"ple_layer_ids\": [") : NULL;
	char *end = at ? strchr(at, ']') : NULL;
	if (!end) {
		free(c);
		return NULL;
	}
	size_t head = (size_t)(at - c), out_len = len + strlen(ids) + 32;
	char *out = malloc(out_len);
	if (!out)
		abort();
	snprintf(out, out_len, "%.*s\"ple_layer_ids\": %s%s", (int)head, c, ids, end + 1);
	free(c);
	return out;
}

/* The layer_index of the ngram_embed of layer i after expansion, or -1. */
static int64_t layer_index_of(const ir_module *m, int layer)
{
	const ir_func *f = &m->funcs[ir_module_func(m, "forward")];
	for (int i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].op == IR_OP_NGRAM_EMBED && f->nodes[i].layer == layer)
			return ir_node_attr_int(&f->nodes[i], "layer_index", -2);
	return -1;
}

/* Whether every ngram_embed of forward reads the graph's input `tokens`. */
static bool ngram_reads_graph_tokens(const ir_module *m)
{
	const ir_func *f = &m->funcs[ir_module_func(m, "forward")];
	int tokens = ir_func_value(f, "tokens");
	for (int i = 0; i < f->n_nodes; i++)
		if (f->nodes[i].op == IR_OP_NGRAM_EMBED && (tokens < 0 || f->nodes[i].in[1] != tokens))
			return false;
	return true;
}

static void check_ids(const char *root, const char *ids, const int *want_entry)
{
	char y[1200], c[1200];
	snprintf(y, sizeof(y), "%s/models/qwen4_exp.yaml", root);
	snprintf(c, sizeof(c), "%s/tests/fixtures/qwen4_exp_tiny/config.json", root);
	char *cfg = config_with_ids(c, ids);
	size_t ylen;
	char *yaml = golden_slurp(y, &ylen);
	CHECK(cfg && yaml, "cannot read %s or %s", y, c);
	if (!cfg || !yaml) {
		free(cfg);
		free(yaml);
		return;
	}
	ir_error err = {0};
	ir_module *m = ir_read_model_mem(y, yaml, ylen, "config.json", cfg, strlen(cfg), NULL, &err);
	CHECK(m, "ple_layer_ids %s: %s", ids, err.msg);
	if (m && !pass_expand_blocks(m, &err))
		CHECK(false, "expand: %s", err.msg);
	int ple = ir_module_func(m, "gdn_ple");
	CHECK(!m || ngram_reads_graph_tokens(m), "ids %s: an ngram_embed does not read forward's tokens", ids);
	for (int i = 0; m && i < m->n_layers; i++) {
		CHECK((m->layer_block[i] == ple) == (want_entry[i] >= 0), "ids %s: layer %d block", ids, i);
		CHECK(layer_index_of(m, i) == want_entry[i], "ids %s: layer %d layer_index %lld, want %d", ids, i,
		      (long long)layer_index_of(m, i), want_entry[i]);
	}
	ir_module_free(m);
	free(cfg);
	free(yaml);
}

int main(void)
{
	const char *root = getenv("HALO_SOURCE_ROOT");
	if (!root) {
		fprintf(stderr, "HALO_SOURCE_ROOT is not set\n");
		return 1;
	}
	/* layer_types of the fixture: GDN, GDN, QSA, GDN */
	check_ids(root, "[2]", (const int[]){-1, 0, -1, -1});
	check_ids(root, "[4, 1]", (const int[]){1, -1, -1, 0});
	check_ids(root, "[]", (const int[]){-1, -1, -1, -1});
	printf("overrides: %d failed\n", fails);
	return fails ? 1 : 0;
}
