/* Scalars of the model file as expressions, shapes and dtypes. */
#include "ir/expr.h"
#include "ir/read_parts.h"

#include <stdio.h>
#include <string.h>

static bool eval(rd_ctx *rd, const yaml_node_t *n, const char *what, bool allow_T, ir_expr_val *v)
{
	const char *text = rd_scalar(rd, n, what);
	if (!text)
		return false;
	ir_expr_env env = {rd->m, allow_T, rd_text_loc(rd, n)};
	return ir_expr_eval(text, &env, v, rd->err);
}

bool rd_int(rd_ctx *rd, const yaml_node_t *n, const char *what, int64_t *out)
{
	ir_expr_val v;
	if (!eval(rd, n, what, false, &v))
		return false;
	if (v.is_float)
		return rd_fail(rd, n, "%s: expected an int, got the float %.9g", what, v.f);
	*out = v.d.c;
	return true;
}

bool rd_float(rd_ctx *rd, const yaml_node_t *n, const char *what, double *out)
{
	ir_expr_val v;
	if (!eval(rd, n, what, false, &v))
		return false;
	*out = v.is_float ? v.f : (double)v.d.c;
	return true;
}

bool rd_shape(rd_ctx *rd, const yaml_node_t *n, bool allow_T, const char *what, ir_shape *out)
{
	if (!rd_want_seq(rd, n, what))
		return false;
	int rank = rd_seq_len(n);
	if (rank < 1 || rank > IR_MAX_RANK)
		return rd_fail(rd, n, "%s: expected 1 to %d dims, got %d", what, IR_MAX_RANK, rank);
	out->rank = rank;
	for (int i = 0; i < rank; i++) {
		yaml_node_t *d = rd_seq_item(rd, n, i);
		ir_expr_val v;
		if (!eval(rd, d, what, allow_T, &v))
			return false;
		if (v.is_float)
			return rd_fail(rd, d, "%s: dim %d must be an int, got the float %.9g", what, i, v.f);
		/* dims are evaluated at T >= 1; they must stay positive and grow with T */
		if (v.d.coef_T < 0 || v.d.coef_T + v.d.c < 1)
			return rd_fail(rd, d, "%s: dim %d must be >= 1, got %s", what, i, rd_scalar(rd, d, what));
		/* keeps element counts and byte sizes far from int64 overflow */
		if (v.d.coef_T > RD_MAX_DIM || v.d.c > RD_MAX_DIM)
			return rd_fail(rd, d, "%s: dim %d exceeds %lld", what, i, (long long)RD_MAX_DIM);
		out->dim[i] = v.d;
	}
	return true;
}

bool rd_dtype(rd_ctx *rd, const yaml_node_t *n, halo_dtype *out)
{
	const char *s = rd_scalar(rd, n, "dtype");
	if (!s)
		return false;
	if (!halo_dtype_from_name(s, out))
		return rd_fail(rd, n, "unknown dtype '%s' (expected f32, f16, bf16, i32, i64 or f8e4m3)", s);
	if (halo_dtype_is_quant(*out))
		return rd_fail(rd, n, "dtype '%s' is a weight storage format, chosen by `halo compile --quant`, "
		               "not a tensor type (expected f32, f16, bf16, i32, i64 or f8e4m3)", s);
	return true;
}

const char *rd_choice(rd_ctx *rd, const yaml_node_t *n, const char *what, const char *const *choices)
{
	const char *s = rd_scalar(rd, n, what);
	if (!s)
		return NULL;
	char list[256] = "";
	size_t pos = 0;
	for (int i = 0; choices[i]; i++) {
		if (strcmp(s, choices[i]) == 0)
			return choices[i];
		if (pos < sizeof(list))
			pos += (size_t)snprintf(list + pos, sizeof(list) - pos, "%s%s", i ? ", " : "", choices[i]);
	}
	rd_fail(rd, n, "%s: expected one of %s, got '%s'", what, list, s);
	return NULL;
}
