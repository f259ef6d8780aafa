/* The kernel emitters' shared generation (emit_kernel.h). */
#include "codegen/emit_kernel.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/op_table.h"

const kv_dialect kv_dialect_glsl = {
	.float_suffix = "",
	.fn = "",
	.ro_buffer = "layout(set = 0, binding = %d) readonly buffer %s { float %s[]; };\n",
	.wo_buffer = "layout(set = 0, binding = %d) writeonly buffer %s { float %s[]; };\n",
	.table_head = "const %s %s[%" PRId64 "] = ",
	.table_open = "%s[](",
	.table_close = ");\n",
};

/* In the HIP dialect a buffer is a member of the kernel's struct, set from
 * the launch's arguments (kernels/hip/README.md); a table lives in constant
 * memory at file scope. */
const kv_dialect kv_dialect_hip = {
	.float_suffix = "f",
	.fn = "static ",
	.ro_buffer = "const float *__restrict__ %3$s = (const float *)args.b[%1$d];\n",
	.wo_buffer = "float *__restrict__ %3$s = (float *)args.b[%1$d];\n",
	.table_head = "static HALO_CONSTANT const %s %s[%" PRId64 "] = ",
	.table_open = "{",
	.table_close = "};\n",
};

const kernel_source *kv_source_file(const char *name)
{
	for (int i = 0; i < kernel_sources_count; i++)
		if (strcmp(kernel_sources[i].name, name) == 0)
			return &kernel_sources[i];
	return NULL;
}

const kernel_source *kv_source_of(const char *base, const char *suffix)
{
	char name[128];
	if (snprintf(name, sizeof name, "%s%s", base, suffix) >= (int)sizeof name)
		return NULL;
	return kv_source_file(name);
}

/* A float literal that reads back as exactly f (9 significant digits
 * round-trip an f32), in the dialect's spelling. */
static const char *float_lit(char *buf, size_t len, const kv_dialect *dl, float f)
{
	snprintf(buf, len, "%.9g", (double)f);
	if (!strpbrk(buf, ".e"))
		snprintf(buf + strlen(buf), len - strlen(buf), ".0");
	snprintf(buf + strlen(buf), len - strlen(buf), "%s", dl->float_suffix);
	return buf;
}

static void emit_table(strbuf *g, const kv_dialect *dl, const kv_const *c)
{
	bool u = c->kind == KV_CONST_UINT_ARRAY;
	const char *type = u ? "uint" : "float";
	char buf[48];
	sb_printf(g, dl->table_head, type, c->name, c->n);
	sb_printf(g, dl->table_open, type);
	for (int64_t j = 0; j < c->n; j++) {
		if (u)
			sb_printf(g, "%s%uu", j ? ", " : "", c->u32[j]);
		else
			sb_printf(g, "%s%s", j ? ", " : "", float_lit(buf, sizeof buf, dl, c->f32[j]));
	}
	sb_printf(g, "%s", dl->table_close);
}

void kv_emit_consts(strbuf *g, const kv_dialect *dl, const kv_plan *p)
{
	char buf[48];
	for (int i = 0; i < p->n_c; i++) {
		const kv_const *c = &p->c[i];
		switch (c->kind) {
		case KV_CONST_UINT:
			sb_printf(g, "#define %s %" PRId64 "u\n", c->name, c->i);
			break;
		case KV_CONST_INT:
			sb_printf(g, c->i < 0 ? "#define %s (%" PRId64 ")\n" : "#define %s %" PRId64 "\n", c->name, c->i);
			break;
		case KV_CONST_FLOAT:
			sb_printf(g, "#define %s %s\n", c->name, float_lit(buf, sizeof buf, dl, c->f));
			break;
		case KV_CONST_BINDING:
			sb_printf(g, "#define %s %" PRId64 "\n", c->name, c->i);
			break;
		case KV_CONST_UINT_ARRAY:
		case KV_CONST_FLOAT_ARRAY:
			emit_table(g, dl, c);
			break;
		}
	}
}

/* The index of the other operand for element i. */
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
static void emit_op_fn(strbuf *g, const kv_dialect *dl, ir_op op, bool *seen)
{
	if (seen[op])
		return;
	seen[op] = true;
	sb_printf(g, "%sfloat ew_%s(float a, float b, float s)\n{\n\treturn %s;\n}\n", dl->fn, halo_op_name((int)op),
		  op_exprs[op]);
}

/* The call of e's function on the running value v and the other operand o
 * ("" for a unary op): the running value is a or b as e->operand says. */
static void elem_expr(strbuf *g, const kv_dialect *dl, const kv_elem_op *e, const char *v, const char *o)
{
	char zero[8], buf[48];
	snprintf(zero, sizeof zero, "0.0%s", dl->float_suffix);
	snprintf(buf, sizeof buf, "%s", zero);
	const char *a = e->operand == 0 ? v : o, *b = e->operand == 0 ? o : v;
	if (halo_op_class_of((int)e->op) == HALO_OP_SCALED) /* the one class whose expression reads s */
		float_lit(buf, sizeof buf, dl, e->value);
	sb_printf(g, "ew_%s(%s, %s, %s)", halo_op_name((int)e->op), a, b[0] ? b : zero, buf);
}

/* `float epilogue(float v, uint i)` (i = the output element) over the
 * descriptor's chain, after the buffers of its extra operands. */
static void emit_epilogue(strbuf *g, const kv_dialect *dl, const kv_desc *d, const kv_plan *p)
{
	strbuf body = {0};
	for (int j = 0; j < d->n_epi; j++) {
		const kv_elem_op *e = &d->epi[j];
		char other[96] = "";
		if (p->epi_binding[j] >= 0) {
			char idx[48], block[16], name[16];
			bcast_index(idx, sizeof idx, e);
			snprintf(block, sizeof block, "E%d", j);
			snprintf(name, sizeof name, "e%d", j);
			sb_printf(g, dl->ro_buffer, p->epi_binding[j], block, name);
			snprintf(other, sizeof other, "e%d[%s]", j, idx);
		}
		sb_printf(&body, "\tv = ");
		elem_expr(&body, dl, e, "v", other);
		sb_printf(&body, ";\n");
	}
	sb_printf(g, "float epilogue(float v, uint i)\n{\n%sreturn v;\n}\n", body.s ? body.s : "");
	free(body.s);
}

/* An elementwise kernel's buffers a (and b) and `float main_op(uint i)`. */
static void emit_main_op(strbuf *g, const kv_dialect *dl, const kv_desc *d, const kv_plan *p)
{
	const kv_elem_op *m = &d->u.elementwise.main;
	char other[64] = "";
	sb_printf(g, dl->ro_buffer, p->a_binding, "A", "a");
	if (p->b_binding >= 0) {
		char idx[48];
		bcast_index(idx, sizeof idx, m);
		sb_printf(g, dl->ro_buffer, p->b_binding, "B", "b");
		snprintf(other, sizeof other, "b[%s]", idx);
	}
	sb_printf(g, "float main_op(uint i)\n{\n\treturn ");
	elem_expr(g, dl, m, "a[i]", other);
	sb_printf(g, ";\n}\n");
}

void kv_emit_fused(strbuf *g, const kv_dialect *dl, const kv_desc *d, const kv_plan *p)
{
	bool seen[IR_OP_COUNT] = {false};
	if (p->elementwise)
		emit_op_fn(g, dl, d->u.elementwise.main.op, seen);
	for (int j = 0; j < d->n_epi; j++)
		emit_op_fn(g, dl, d->epi[j].op, seen);
	if (p->elementwise)
		emit_main_op(g, dl, d, p);
	emit_epilogue(g, dl, d, p);
	if (p->elementwise)
		sb_printf(g, dl->wo_buffer, p->y_binding, "Y", "y");
}

void kv_emit_matvec_paths(strbuf *defs, strbuf *tail, const kv_plan *p, const char *body)
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
