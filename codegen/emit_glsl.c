/* GLSL for a kernel plan (emit_glsl.h). */
#include "codegen/emit_glsl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/strbuf.h"
#include "kernels/op_table.h"
#include "kernels/vulkan/kernel_sources.h"

/* The embedded file `name` (static storage), or NULL. */
static const kernel_source *source_file(const char *name)
{
	for (int i = 0; i < kernel_sources_count; i++)
		if (strcmp(kernel_sources[i].name, name) == 0)
			return &kernel_sources[i];
	return NULL;
}

/* The embedded file base + suffix, or NULL. */
static const kernel_source *source_of(const char *base, const char *suffix)
{
	char name[128];
	if (snprintf(name, sizeof name, "%s%s", base, suffix) >= (int)sizeof name)
		return NULL;
	return source_file(name);
}

/* A GLSL float literal that reads back as exactly f (9 significant digits
 * round-trip an f32). */
static const char *glsl_float(char *buf, size_t len, float f)
{
	snprintf(buf, len, "%.9g", (double)f);
	if (!strpbrk(buf, ".e"))
		snprintf(buf + strlen(buf), len - strlen(buf), ".0");
	return buf;
}

static void emit_const(strbuf *g, const kv_const *c)
{
	char buf[48];
	switch (c->kind) {
	case KV_CONST_UINT:
		sb_printf(g, "#define %s %" PRId64 "u\n", c->name, c->i);
		break;
	case KV_CONST_INT:
		sb_printf(g, c->i < 0 ? "#define %s (%" PRId64 ")\n" : "#define %s %" PRId64 "\n", c->name, c->i);
		break;
	case KV_CONST_FLOAT:
		sb_printf(g, "#define %s %s\n", c->name, glsl_float(buf, sizeof buf, c->f));
		break;
	case KV_CONST_BINDING:
		sb_printf(g, "#define %s %" PRId64 "\n", c->name, c->i);
		break;
	case KV_CONST_UINT_ARRAY:
		sb_printf(g, "const uint %s[%" PRId64 "] = uint[](", c->name, c->n);
		for (int64_t j = 0; j < c->n; j++)
			sb_printf(g, "%s%uu", j ? ", " : "", c->u32[j]);
		sb_printf(g, ");\n");
		break;
	case KV_CONST_FLOAT_ARRAY:
		sb_printf(g, "const float %s[%" PRId64 "] = float[](", c->name, c->n);
		for (int64_t j = 0; j < c->n; j++)
			sb_printf(g, "%s%s", j ? ", " : "", glsl_float(buf, sizeof buf, c->f32[j]));
		sb_printf(g, ");\n");
		break;
	}
}

/* GLSL index of the other operand for element i. */
static void bcast_index(char *buf, size_t len, const kv_elem_op *e)
{
	if (e->bcast == KV_BCAST_TRAILING)
		snprintf(buf, len, "i %% %" PRId64 "u", e->bcast_n);
	else if (e->bcast == KV_BCAST_LASTDIM)
		snprintf(buf, len, "i / %" PRId64 "u", e->bcast_n);
	else
		snprintf(buf, len, "i");
}

/* Each elementwise op's expression as kernels/ops.def writes it. */
static const char *const op_exprs[] = {
#define IR_OP(id, name, cls, expr) [IR_OP_##id] = #expr,
#include "kernels/ops.def"
#undef IR_OP
};

/* `float ew_NAME(float a, float b, float s)` returning the op's ops.def
 * expression, once per op a kernel uses (seen[] marks the emitted ones). */
static void emit_op_fn(strbuf *g, ir_op op, bool *seen)
{
	if (seen[op])
		return;
	seen[op] = true;
	sb_printf(g, "float ew_%s(float a, float b, float s)\n{\n\treturn %s;\n}\n", halo_op_name((int)op), op_exprs[op]);
}

/* The call of e's function on the running value v and the other operand o
 * ("" for a unary op): the running value is a or b as e->operand says. */
static void elem_expr(strbuf *g, const kv_elem_op *e, const char *v, const char *o)
{
	char buf[48] = "0.0";
	const char *a = e->operand == 0 ? v : o, *b = e->operand == 0 ? o : v;
	if (halo_op_class_of((int)e->op) == HALO_OP_SCALED) /* the one class whose expression reads s */
		glsl_float(buf, sizeof buf, e->value);
	sb_printf(g, "ew_%s(%s, %s, %s)", halo_op_name((int)e->op), a, b[0] ? b : "0.0", buf);
}

/* `float epilogue(float v, uint i)` (i = the output element) over the
 * descriptor's chain, after the buffers of its extra operands. */
static void emit_epilogue(strbuf *g, const kv_desc *d, const kv_plan *p)
{
	strbuf body = {0};
	for (int j = 0; j < d->n_epi; j++) {
		const kv_elem_op *e = &d->epi[j];
		char other[96] = "";
		if (p->epi_binding[j] >= 0) {
			char idx[48];
			bcast_index(idx, sizeof idx, e);
			sb_printf(g, "layout(set = 0, binding = %d) readonly buffer E%d { float e%d[]; };\n",
				  p->epi_binding[j], j, j);
			snprintf(other, sizeof other, "e%d[%s]", j, idx);
		}
		sb_printf(&body, "\tv = ");
		elem_expr(&body, e, "v", other);
		sb_printf(&body, ";\n");
	}
	sb_printf(g, "float epilogue(float v, uint i)\n{\n%sreturn v;\n}\n", body.s ? body.s : "");
	free(body.s);
}

/* An elementwise kernel's buffers a (and b) and `float main_op(uint i)`. */
static void emit_main_op(strbuf *g, const kv_desc *d, const kv_plan *p)
{
	const kv_elem_op *m = &d->u.elementwise.main;
	char other[64] = "";
	sb_printf(g, "layout(set = 0, binding = %d) readonly buffer A { float a[]; };\n", p->a_binding);
	if (p->b_binding >= 0) {
		char idx[48];
		bcast_index(idx, sizeof idx, m);
		sb_printf(g, "layout(set = 0, binding = %d) readonly buffer B { float b[]; };\n", p->b_binding);
		snprintf(other, sizeof other, "b[%s]", idx);
	}
	sb_printf(g, "float main_op(uint i)\n{\n\treturn ");
	elem_expr(g, m, "a[i]", other);
	sb_printf(g, ";\n}\n");
}

/* matvec_cols.glsl once per column count nc = cols, 2 cols, ... cols_max
 * after the template (tail), their prototypes and the dispatch on nc in the
 * defines. */
static void emit_matvec_paths(strbuf *defs, strbuf *tail, const kv_plan *p, const char *body)
{
	strbuf dispatch = {0};
	sb_printf(defs, "#define MATVEC_PROTOTYPES");
	for (uint32_t nc = p->cols; nc <= p->cols_max; nc *= 2) {
		sb_printf(defs, " void run_%u(uint lane, uint g, uint l, uint grp);", nc);
		sb_printf(&dispatch, "%sif (nc == %uu) run_%u(lane, g, l, grp);", nc == p->cols ? "" : " else ", nc, nc);
		for (const char *s = body; *s;) {
			const char *at = strstr(s, "@NC@");
			if (!at) {
				sb_printf(tail, "%s", s);
				break;
			}
			sb_printf(tail, "%.*s%u", (int)(at - s), s, nc);
			s = at + 4;
		}
	}
	sb_printf(defs, "\n#define MATVEC_DISPATCH %s\n", dispatch.s);
	free(dispatch.s);
}

char *kv_emit_glsl(const kv_desc *d, const kv_plan *p, const char *signature, const char **file, char *err,
		   size_t errlen)
{
	const kernel_source *tmpl = source_of(p->template, ".comp"), *prelude = source_file("prelude.glsl");
	const kernel_source *cols = p->cols ? source_file("matvec_cols.glsl") : NULL;
	const kernel_source *lib = p->library ? source_of(p->library, ".glsl") : NULL;
	const kernel_source *quant = p->quant ? source_of(p->quant, ".glsl") : NULL;
	const struct {
		bool wanted;
		const kernel_source *found;
		const char *name;
	} files[] = {{true, tmpl, p->template},
		     {true, prelude, "prelude.glsl"},
		     {p->cols != 0, cols, "matvec_cols.glsl"},
		     {p->library != NULL, lib, p->library},
		     {p->quant != NULL, quant, p->quant}};
	for (size_t i = 0; i < sizeof files / sizeof *files; i++)
		if (files[i].wanted && !files[i].found) {
			snprintf(err, errlen, "GLSL template file for '%s' is not embedded", files[i].name);
			return NULL;
		}
	strbuf defs = {0}, gen = {0}, tail = {0}, src = {0};
	for (int i = 0; i < p->n_c; i++)
		emit_const(&defs, &p->c[i]);
	if (cols)
		emit_matvec_paths(&defs, &tail, p, cols->text);
	bool seen[IR_OP_COUNT] = {false};
	if (p->elementwise)
		emit_op_fn(&gen, d->u.elementwise.main.op, seen);
	for (int j = 0; j < d->n_epi; j++)
		emit_op_fn(&gen, d->epi[j].op, seen);
	if (p->elementwise)
		emit_main_op(&gen, d, p);
	emit_epilogue(&gen, d, p);
	if (p->elementwise)
		sb_printf(&gen, "layout(set = 0, binding = %d) writeonly buffer Y { float y[]; };\n", p->y_binding);
	if (quant)
		sb_printf(&gen, "%s", quant->text);
	if (lib)
		sb_printf(&gen, "%s", lib->text);
	sb_printf(&src, "#version 450\n// halo kernel: %s\n%s", signature, defs.s ? defs.s : "");
	sb_printf(&src, "%s\n%s\n%s\n%s", prelude->text, gen.s ? gen.s : "", tmpl->text, tail.s ? tail.s : "");
	free(defs.s);
	free(gen.s);
	free(tail.s);
	*file = tmpl->name;
	return sb_take(&src);
}
