/* Expressions of params (docs/ir.md, "Params and expressions"): integer and
 * float literals, param names, + - * / %, unary -, parentheses, sqrt, min,
 * max, ceil_div, int (truncation toward zero), floor, and in shapes the token
 * count T. Int values are affine in T
 * (coef_T * T + c); `/` on ints is exact division. Nothing is allocated. */
#ifndef HALO_IR_EXPR_H
#define HALO_IR_EXPR_H

#include "ir/ir.h"

typedef struct {
	bool is_float;
	double f;  /* is_float */
	ir_dim d;  /* !is_float: an int, affine in T (coef_T == 0 unless T was used) */
} ir_expr_val;

typedef struct {
	const ir_module *m; /* names resolve to m->params[0 .. m->n_params) */
	bool allow_T;       /* shapes: the name T is the step's token count */
	ir_loc loc;         /* where text starts: errors add the offending token's offset to loc.col */
} ir_expr_env;

/* Evaluates text. On failure fills err with the column of the offending token. */
bool ir_expr_eval(const char *text, const ir_expr_env *env, ir_expr_val *out, ir_error *err);
/* Helpers: a constant int (a float or a T-dependent value is an error), a
 * float (ints convert), a dim (int, may use T when env->allow_T). */
bool ir_expr_int(const char *text, const ir_expr_env *env, int64_t *out, ir_error *err);
bool ir_expr_float(const char *text, const ir_expr_env *env, double *out, ir_error *err);
bool ir_expr_dim(const char *text, const ir_expr_env *env, ir_dim *out, ir_error *err);

#endif
