/* The canonical YAML dump (ir/dump.h). */
#include "ir/dump.h"
#include "ir/ops.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

/* Plain when unambiguous as a YAML plain scalar, else double-quoted. */
static bool plain_ok(const char *s)
{
	static const char *const words[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", NULL};
	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return false;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.@/-", *p))
			return false;
	for (int i = 0; words[i]; i++)
		if (strcasecmp(s, words[i]) == 0)
			return false;
	return true;
}

static void put_str(FILE *out, const char *s)
{
	if (!s) {
		fputs("null", out);
		return;
	}
	if (plain_ok(s)) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

static void put_shape(FILE *out, const ir_shape *s)
{
	char buf[160];
	fputs(ir_shape_str(s, buf, sizeof(buf)), out);
}

static void put_float(FILE *out, double f)
{
	char buf[64];
	fputs(ir_dump_float(f, buf, sizeof(buf)), out);
}

static void put_attr_value(FILE *out, const ir_attr *a)
{
	switch (a->kind) {
	case IR_ATTR_INT:
		fprintf(out, "%" PRId64, a->i);
		break;
	case IR_ATTR_FLOAT:
		put_float(out, a->f);
		break;
	case IR_ATTR_STR:
		put_str(out, a->s);
		break;
	case IR_ATTR_INTS:
		fputc('[', out);
		for (int i = 0; i < a->n_ints; i++)
			fprintf(out, "%s%" PRId64, i ? ", " : "", a->ints[i]);
		fputc(']', out);
		break;
	case IR_ATTR_SHAPE:
		put_shape(out, &a->shape);
		break;
	}
}

/* Attributes in schema order (so the file's key order does not show),
 * then any the schema does not know, in node order. */
static void put_attrs(FILE *out, ir_op op, const ir_attr *attrs, int n)
{
	if (!n)
		return;
	fputs(", attrs: {", out);
	const ir_op_info *info = ir_op_get(op);
	int printed = 0;
	for (int s = 0; info && s < info->n_attrs; s++)
		for (int i = 0; i < n; i++)
			if (strcmp(attrs[i].name, info->attrs[s].name) == 0) {
				fprintf(out, "%s%s: ", printed++ ? ", " : "", attrs[i].name);
				put_attr_value(out, &attrs[i]);
			}
	for (int i = 0; i < n; i++) {
		if (ir_op_attr_schema(op, attrs[i].name))
			continue;
		fprintf(out, "%s", printed++ ? ", " : "");
		put_str(out, attrs[i].name);
		fputs(": ", out);
		put_attr_value(out, &attrs[i]);
	}
	fputc('}', out);
}

static void put_value_list(FILE *out, const ir_func *f, const int *ids, int n, bool typed)
{
	char nb[256], tb[256];
	fputc('[', out);
	for (int i = 0; i < n; i++) {
		fputs(i ? ", " : "", out);
		const ir_value *v = ids[i] >= 0 && ids[i] < f->n_values ? &f->values[ids[i]] : NULL;
		if (typed && v && v->shape_known)
			fputc('{', out);
		put_str(out, ir_dump_value_name(f, ids[i], nb, sizeof(nb)));
		if (typed && v && v->shape_known) {
			fputs(": ", out);
			put_str(out, ir_dump_value_type(v, tb, sizeof(tb)));
			fputc('}', out);
		}
	}
	fputc(']', out);
}

/* table: the array w is in, whose entry fold_norm names a folded weight's norm. */
static void put_weight(FILE *out, const char *indent, const ir_weight *w, const ir_weight *table)
{
	fprintf(out, "%s", indent);
	put_str(out, w->name);
	fputs(": {shape: ", out);
	put_shape(out, &w->shape);
	fprintf(out, ", dtype: %s, hf: ", halo_dtype_name(w->dtype));
	put_str(out, w->hf_name);
	if (w->hf_fallback) {
		fputs(", fallback: ", out);
		put_str(out, w->hf_fallback);
	}
	fputs(", transform: ", out);
	put_str(out, w->transform);
	if (w->n_takes) {
		fprintf(out, ", rows: {groups: %lld, take: [", (long long)w->rows_groups);
		for (int k = 0; k < w->n_takes; k++)
			fprintf(out, "%s[%lld, %lld]", k ? ", " : "", (long long)w->takes[2 * k],
				(long long)w->takes[2 * k + 1]);
		fputs("]}", out);
	}
	if (w->layer >= 0)
		fprintf(out, ", layer: %d", w->layer);
	if (w->folded) {
		fputs(", folded: ", out);
		put_str(out, table[w->fold_norm].name);
		fprintf(out, ", fold_offset: %d", w->fold_offset);
	}
	if (w->n_parts) {
		fprintf(out, ", %s: [", w->interleave ? "interleave" : "rows_of");
		for (int i = 0; i < w->n_parts; i++) {
			fputs(i ? ", " : "", out);
			put_str(out, table[w->parts[i]].name);
		}
		fputc(']', out);
	}
	fputs("}\n", out);
}

static void put_state(FILE *out, const char *indent, const ir_state *s)
{
	fprintf(out, "%s", indent);
	put_str(out, s->name);
	fputs(": {shape: ", out);
	put_shape(out, &s->shape);
	fprintf(out, ", dtype: %s, kind: ", halo_dtype_name(s->dtype));
	put_str(out, s->kind);
	if (s->layer >= 0)
		fprintf(out, ", layer: %d", s->layer);
	fputs("}\n", out);
}

static void put_decls(FILE *out, const char *indent, const ir_weight *w, int nw, const ir_state *s, int ns)
{
	char sub[32];
	snprintf(sub, sizeof(sub), "%s  ", indent);
	if (nw) {
		fprintf(out, "%sweights:\n", indent);
		for (int i = 0; i < nw; i++)
			put_weight(out, sub, &w[i], w);
	}
	if (ns) {
		fprintf(out, "%sstate:\n", indent);
		for (int i = 0; i < ns; i++)
			put_state(out, sub, &s[i]);
	}
}

static void put_ref(FILE *out, const ir_module *m, const ir_func *f, const ir_node *n)
{
	const ir_weight *w = ir_node_weight(m, f, n);
	const ir_state *s = ir_node_state(m, f, n);
	if (w || s) {
		fputs(w ? ", weight: " : ", state: ", out);
		put_str(out, w ? w->name : s->name);
		fprintf(out, ", scope: %s", n->ref_local ? "block" : "module");
		if (n->in_place)
			fputs(", in_place: true", out);
	} else if (n->op == IR_OP_CALL && n->ref >= 0 && n->ref < m->n_funcs) {
		fputs(", block: ", out);
		put_str(out, m->funcs[n->ref].name);
	} else if (n->ref >= 0) {
		fprintf(out, ", ref: %d", n->ref);
	}
}

static void put_fused(FILE *out, const ir_func *f, const ir_node *n)
{
	if (!n->n_fused)
		return;
	fputs(", fused: [", out);
	for (int i = 0; i < n->n_fused; i++) {
		const ir_fused *fu = &n->fused[i];
		fprintf(out, "%s{op: %s, pos: %s", i ? ", " : "", ir_op_name(fu->op),
			fu->pos == IR_FUSE_PROLOGUE ? "prologue" : "epilogue");
		if (fu->name) {
			fputs(", name: ", out);
			put_str(out, fu->name);
		}
		if (fu->n_extra) {
			fputs(", extra: ", out);
			put_value_list(out, f, fu->extra, fu->n_extra, false);
		}
		fprintf(out, ", operand: %d", fu->operand);
		put_attrs(out, fu->op, fu->attr, fu->n_attr);
		fputc('}', out);
	}
	fputc(']', out);
}

/* after: edges by node name, dead targets included (a pass may not have
 * compacted yet: the edge still exists). */
static void put_after(FILE *out, const ir_func *f, const ir_node *n)
{
	if (!n->n_after)
		return;
	fputs(", after: [", out);
	for (int i = 0; i < n->n_after; i++) {
		fputs(i ? ", " : "", out);
		int t = n->after[i];
		if (t >= 0 && t < f->n_nodes && f->nodes[t].name)
			put_str(out, f->nodes[t].name);
		else
			fprintf(out, "\"#%d\"", t);
	}
	fputc(']', out);
}

static void put_node(FILE *out, const ir_module *m, const ir_func *f, const ir_node *n)
{
	fprintf(out, "      - {op: %s, name: ", ir_op_name(n->op));
	put_str(out, n->name);
	if (n->n_in) {
		fputs(", in: ", out);
		put_value_list(out, f, n->in, n->n_in, false);
	}
	if (n->n_out) {
		fputs(", out: ", out);
		put_value_list(out, f, n->out, n->n_out, true);
	}
	put_ref(out, m, f, n);
	if (n->layer >= 0)
		fprintf(out, ", layer: %d", n->layer);
	put_attrs(out, n->op, n->attr, n->n_attr);
	put_fused(out, f, n);
	put_after(out, f, n);
	fputs("}\n", out);
}

static void put_func(FILE *out, const ir_module *m, const ir_func *f)
{
	fputs("  - name: ", out);
	put_str(out, f->name);
	fprintf(out, "\n    kind: %s\n", f->is_block ? "block" : "graph");
	put_decls(out, "    ", f->weights, f->n_weights, f->states, f->n_states);
	fputs("    inputs: ", out);
	put_value_list(out, f, f->inputs, f->n_inputs - f->n_reads, true);
	if (f->n_reads) {
		fputs("\n    reads: ", out);
		put_value_list(out, f, f->inputs + f->n_inputs - f->n_reads, f->n_reads, true);
	}
	fputs("\n    body:\n", out);
	for (int i = 0; i < f->n_nodes; i++)
		if (!f->nodes[i].dead)
			put_node(out, m, f, &f->nodes[i]);
	fputs("    outputs: ", out);
	put_value_list(out, f, f->outputs, f->n_outputs, true);
	fputc('\n', out);
}

static void put_params(FILE *out, const ir_module *m)
{
	fputs("params:\n", out);
	for (int i = 0; i < m->n_params; i++) {
		fputs("  ", out);
		put_str(out, m->params[i].name);
		fputs(": ", out);
		if (m->params[i].s)
			put_str(out, m->params[i].s);
		else if (m->params[i].is_float)
			put_float(out, m->params[i].f);
		else
			fprintf(out, "%" PRId64, m->params[i].i);
		fputc('\n', out);
	}
}

static void put_layers(FILE *out, const ir_module *m)
{
	if (!m->n_layers)
		return;
	fprintf(out, "layers: {count: %d, blocks: [", m->n_layers);
	for (int i = 0; i < m->n_layers; i++) {
		fputs(i ? ", " : "", out);
		put_str(out, m->funcs[m->layer_block[i]].name);
	}
	fputc(']', out);
	/* one name when every layer has the same `then` block, else the list */
	bool same = true;
	for (int i = 1; m->layer_then && i < m->n_layers; i++)
		same = same && m->layer_then[i] == m->layer_then[0];
	for (int i = 0; m->layer_then && i < (same ? 1 : m->n_layers); i++) {
		fputs(i ? ", " : same ? ", then: " : ", then: [", out);
		put_str(out, m->funcs[m->layer_then[i]].name);
	}
	if (m->layer_then && !same)
		fputc(']', out);
	fputs("}\n", out);
}

static void put_entries(FILE *out, const ir_module *m)
{
	fputs("entries:\n", out);
	for (int i = 0; i < m->n_entries; i++) {
		const ir_entry *e = &m->entries[i];
		fputs("  ", out);
		put_str(out, e->name);
		fputs(": {graph: ", out);
		put_str(out, m->funcs[e->func].name);
		fprintf(out, ", tokens: [%" PRId64 ", %" PRId64 "], logits: ", e->t_min, e->t_max);
		put_str(out, e->logits);
		if (e->position && strcmp(e->position, "session") != 0) {
			fputs(", position: ", out);
			put_str(out, e->position);
		}
		if (e->state_slots)
			fputs(", recurrent: slots", out);
		if (e->tokens_out)
			fputs(", output: tokens", out);
		fputs("}\n", out);
	}
}

void ir_dump_yaml(const ir_module *m, FILE *out)
{
	fputs("model: ", out);
	put_str(out, m->model);
	fputs("\nhf_model_types: [", out);
	for (int i = 0; i < m->n_hf_types; i++) {
		fputs(i ? ", " : "", out);
		put_str(out, m->hf_types[i]);
	}
	fputs("]\n", out);
	if (m->n_hf_prefixes) {
		fputs("hf_prefixes: [", out);
		for (int i = 0; i < m->n_hf_prefixes; i++) {
			fputs(i ? ", {from: " : "{from: ", out);
			put_str(out, m->hf_prefix_from[i]);
			fputs(", to: ", out);
			put_str(out, m->hf_prefix_to[i]);
			fputc('}', out);
		}
		fputs("]\n", out);
	}
	fprintf(out, "expanded: %s\n", m->expanded ? "true" : "false");
	put_params(out, m);
	put_decls(out, "", m->weights, m->n_weights, m->states, m->n_states);
	put_layers(out, m);
	fputs("functions:\n", out);
	for (int i = 0; i < m->n_funcs; i++)
		put_func(out, m, &m->funcs[i]);
	put_entries(out, m);
}
