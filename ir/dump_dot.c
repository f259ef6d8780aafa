/* The canonical Graphviz dump (ir/dump.h). */
#include "ir/dump.h"
#include "ir/ops.h"

#include <inttypes.h>

static void put_escaped(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', out);
		if ((unsigned char)*s >= 0x20)
			fputc(*s, out);
	}
}

static void put_attrs_label(FILE *out, const ir_attr *attrs, int n)
{
	char buf[64];
	for (int i = 0; i < n; i++) {
		const ir_attr *a = &attrs[i];
		fputs("\\n", out);
		put_escaped(out, a->name);
		fputc('=', out);
		if (a->kind == IR_ATTR_INT)
			fprintf(out, "%" PRId64, a->i);
		else if (a->kind == IR_ATTR_FLOAT)
			fputs(ir_dump_float(a->f, buf, sizeof(buf)), out);
		else if (a->kind == IR_ATTR_STR)
			put_escaped(out, a->s);
		else if (a->kind == IR_ATTR_SHAPE) {
			char sh[160];
			fputs(ir_shape_str(&a->shape, sh, sizeof(sh)), out);
		} else
			fprintf(out, "[%d ints]", a->n_ints);
	}
}

static void put_node(FILE *out, const ir_module *m, int fi, const ir_func *f, int ni)
{
	const ir_node *n = &f->nodes[ni];
	char tb[256];
	fprintf(out, "    \"f%d_n%d\" [label=\"%s ", fi, ni, ir_op_name(n->op));
	put_escaped(out, n->name);
	if (n->op == IR_OP_CALL && n->ref >= 0 && n->ref < m->n_funcs) {
		fputs("\\nblock ", out);
		put_escaped(out, m->funcs[n->ref].name);
	}
	if (n->layer >= 0)
		fprintf(out, "\\nlayer %d", n->layer);
	for (int i = 0; i < n->n_out; i++) {
		fputs("\\n", out);
		put_escaped(out, ir_dump_value_type(&f->values[n->out[i]], tb, sizeof(tb)));
	}
	put_attrs_label(out, n->attr, n->n_attr);
	for (int i = 0; i < n->n_fused; i++)
		fprintf(out, "\\n+ %s %s", n->fused[i].pos == IR_FUSE_PROLOGUE ? "prologue" : "epilogue",
			ir_op_name(n->fused[i].op));
	fprintf(out, "\"%s];\n", ir_op_is_sink(n->op) ? ", shape=octagon" : "");
}

/* The source of value id: its producer node, or the function input ellipse. */
static void put_source(FILE *out, int fi, const ir_func *f, int id)
{
	const ir_value *v = &f->values[id];
	if (v->producer >= 0)
		fprintf(out, "\"f%d_n%d\"", fi, v->producer);
	else
		fprintf(out, "\"f%d_v%d\"", fi, id);
}

static void put_edges(FILE *out, int fi, const ir_func *f, int ni)
{
	const ir_node *n = &f->nodes[ni];
	char nb[256];
	for (int i = 0; i < n->n_in; i++) {
		fputs("    ", out);
		put_source(out, fi, f, n->in[i]);
		fprintf(out, " -> \"f%d_n%d\" [label=\"", fi, ni);
		put_escaped(out, ir_dump_value_name(f, n->in[i], nb, sizeof(nb)));
		fputs("\"];\n", out);
	}
	for (int k = 0; k < n->n_fused; k++)
		for (int i = 0; i < n->fused[k].n_extra; i++) {
			fputs("    ", out);
			put_source(out, fi, f, n->fused[k].extra[i]);
			fprintf(out, " -> \"f%d_n%d\" [style=dotted];\n", fi, ni);
		}
	for (int i = 0; i < n->n_after; i++)
		if (n->after[i] >= 0 && n->after[i] < f->n_nodes && !f->nodes[n->after[i]].dead)
			fprintf(out, "    \"f%d_n%d\" -> \"f%d_n%d\" [style=dashed, label=\"after\"];\n", fi, n->after[i],
				fi, ni);
}

static void put_func(FILE *out, const ir_module *m, int fi)
{
	const ir_func *f = &m->funcs[fi];
	char tb[256], nb[256];
	fprintf(out, "  subgraph \"cluster_f%d\" {\n    label=\"%s ", fi, f->is_block ? "block" : "graph");
	put_escaped(out, f->name);
	fputs("\";\n", out);
	for (int i = 0; i < f->n_inputs; i++) {
		fprintf(out, "    \"f%d_v%d\" [shape=ellipse, label=\"in ", fi, f->inputs[i]);
		put_escaped(out, ir_dump_value_name(f, f->inputs[i], nb, sizeof(nb)));
		fputs("\\n", out);
		put_escaped(out, ir_dump_value_type(&f->values[f->inputs[i]], tb, sizeof(tb)));
		fputs("\"];\n", out);
	}
	for (int i = 0; i < f->n_nodes; i++)
		if (!f->nodes[i].dead)
			put_node(out, m, fi, f, i);
	for (int i = 0; i < f->n_outputs; i++) {
		fprintf(out, "    \"f%d_o%d\" [shape=ellipse, label=\"out ", fi, i);
		put_escaped(out, ir_dump_value_name(f, f->outputs[i], nb, sizeof(nb)));
		fputs("\"];\n    ", out);
		put_source(out, fi, f, f->outputs[i]);
		fprintf(out, " -> \"f%d_o%d\";\n", fi, i);
	}
	for (int i = 0; i < f->n_nodes; i++)
		if (!f->nodes[i].dead)
			put_edges(out, fi, f, i);
	fputs("  }\n", out);
}

void ir_dump_dot(const ir_module *m, FILE *out)
{
	fputs("digraph \"", out);
	put_escaped(out, m->model);
	fputs("\" {\n  node [shape=box, fontname=\"monospace\"];\n", out);
	for (int i = 0; i < m->n_funcs; i++)
		put_func(out, m, i);
	fputs("}\n", out);
}
