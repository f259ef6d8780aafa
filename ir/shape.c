/* Affine-in-T dims and shapes (ir.h). */
#include "ir/ir.h"

#include <inttypes.h>
#include <stdio.h>

bool ir_dim_is_const(ir_dim d)
{
	return d.coef_T == 0;
}

bool ir_dim_eq(ir_dim a, ir_dim b)
{
	return a.coef_T == b.coef_T && a.c == b.c;
}

bool ir_shape_eq(const ir_shape *a, const ir_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (!ir_dim_eq(a->dim[i], b->dim[i]))
			return false;
	return true;
}

int64_t ir_dim_eval(ir_dim d, int64_t T)
{
	int64_t v;
	if (__builtin_mul_overflow(d.coef_T, T, &v) || __builtin_add_overflow(v, d.c, &v))
		return -1;
	return v;
}

int64_t ir_shape_numel(const ir_shape *s, int64_t T)
{
	int64_t n = 1;
	for (int i = 0; i < s->rank; i++)
		if (__builtin_mul_overflow(n, ir_dim_eval(s->dim[i], T), &n))
			return -1;
	return n;
}

/* "T", "4*T+1", "64", "2*T-1": the canonical spelling used in dumps and errors. */
static int dim_str(ir_dim d, char *buf, size_t len)
{
	if (d.coef_T == 0)
		return snprintf(buf, len, "%" PRId64, d.c);
	int n = d.coef_T == 1 ? snprintf(buf, len, "T") : snprintf(buf, len, "%" PRId64 "*T", d.coef_T);
	if (d.c == 0 || n < 0 || (size_t)n >= len)
		return n;
	return n + snprintf(buf + n, len - (size_t)n, "%+" PRId64, d.c);
}

const char *ir_shape_str(const ir_shape *s, char *buf, size_t len)
{
	if (!len)
		return buf;
	size_t pos = 0;
	buf[0] = 0;
	int n = snprintf(buf, len, "[");
	for (int i = 0; i < s->rank && n >= 0; i++) {
		pos += (size_t)n;
		if (pos >= len)
			break;
		if (i) {
			n = snprintf(buf + pos, len - pos, ", ");
			pos += (size_t)n;
			if (pos >= len)
				break;
		}
		n = dim_str(s->dim[i], buf + pos, len - pos);
	}
	if (n >= 0)
		pos += (size_t)n;
	if (pos < len)
		snprintf(buf + pos, len - pos, "]");
	return buf;
}
