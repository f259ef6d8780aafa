/* Recursive-descent expression evaluator (ir/expr.h). */
#include "ir/expr.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 64 };

typedef struct {
	const char *text, *p;
	const ir_expr_env *env;
	ir_error *err;
	int depth;
} parser;

static bool expr(parser *ps, ir_expr_val *out);

static bool fail_at(parser *ps, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail_at(parser *ps, const char *at, const char *fmt, ...)
{
	ir_loc loc = ps->env->loc;
	loc.col += (int)(at - ps->text);
	va_list ap;
	va_start(ap, fmt);
	ir_error_setv(ps->err, loc, fmt, ap);
	va_end(ap);
	return false;
}

static void skip_ws(parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
}

static ir_expr_val int_val(int64_t c)
{
	return (ir_expr_val){.d = {0, c}};
}

static ir_expr_val float_val(double f)
{
	return (ir_expr_val){.is_float = true, .f = f};
}

/* Converts an int operand of a float operation; T has no float meaning. */
static bool to_float(parser *ps, const char *at, ir_expr_val *v)
{
	if (v->is_float)
		return true;
	if (v->d.coef_T != 0)
		return fail_at(ps, at, "T cannot be used in a float expression");
	*v = float_val((double)v->d.c);
	return true;
}

static bool need_const_int(parser *ps, const char *at, const ir_expr_val *v, const char *what)
{
	if (v->is_float)
		return fail_at(ps, at, "%s needs ints, got a float", what);
	if (v->d.coef_T != 0)
		return fail_at(ps, at, "%s needs values that do not depend on T", what);
	return true;
}

static bool number(parser *ps, ir_expr_val *out)
{
	const char *start = ps->p, *q = ps->p;
	while (isdigit((unsigned char)*q))
		q++;
	bool is_float = *q == '.' || *q == 'e' || *q == 'E';
	char *end;
	errno = 0;
	if (is_float) {
		double f = strtod(start, &end);
		if (end == start || errno == ERANGE || !isfinite(f))
			return fail_at(ps, start, "bad float literal");
		*out = float_val(f);
	} else {
		long long v = strtoll(start, &end, 10);
		if (end == start || errno == ERANGE)
			return fail_at(ps, start, "integer literal out of range");
		*out = int_val(v);
	}
	ps->p = end;
	if (isalpha((unsigned char)*ps->p) || *ps->p == '_' || *ps->p == '.')
		return fail_at(ps, ps->p, "unexpected '%c' after a number", *ps->p);
	return true;
}

static bool call_args(parser *ps, const char *fname, ir_expr_val *args, int n)
{
	skip_ws(ps);
	if (*ps->p != '(')
		return fail_at(ps, ps->p, "expected '(' after %s", fname);
	ps->p++;
	for (int i = 0; i < n; i++) {
		if (!expr(ps, &args[i]))
			return false;
		skip_ws(ps);
		char want = i + 1 < n ? ',' : ')';
		if (*ps->p != want)
			return fail_at(ps, ps->p, "%s takes %d argument(s): expected '%c'", fname, n, want);
		ps->p++;
	}
	return true;
}

static bool func_sqrt(parser *ps, const char *at, ir_expr_val *out)
{
	ir_expr_val a;
	if (!call_args(ps, "sqrt", &a, 1) || !to_float(ps, at, &a))
		return false;
	if (a.f < 0)
		return fail_at(ps, at, "sqrt of a negative number");
	*out = float_val(sqrt(a.f));
	return true;
}

static bool func_minmax(parser *ps, const char *at, bool is_max, ir_expr_val *out)
{
	ir_expr_val a[2];
	if (!call_args(ps, is_max ? "max" : "min", a, 2))
		return false;
	if (a[0].is_float || a[1].is_float) {
		if (!to_float(ps, at, &a[0]) || !to_float(ps, at, &a[1]))
			return false;
		*out = float_val(is_max ? fmax(a[0].f, a[1].f) : fmin(a[0].f, a[1].f));
		return true;
	}
	if (!need_const_int(ps, at, &a[0], "min/max") || !need_const_int(ps, at, &a[1], "min/max"))
		return false;
	int64_t x = a[0].d.c, y = a[1].d.c;
	*out = int_val(is_max ? (x > y ? x : y) : (x < y ? x : y));
	return true;
}

static bool func_ceil_div(parser *ps, const char *at, ir_expr_val *out)
{
	ir_expr_val a[2];
	if (!call_args(ps, "ceil_div", a, 2) || !need_const_int(ps, at, &a[0], "ceil_div") ||
	    !need_const_int(ps, at, &a[1], "ceil_div"))
		return false;
	int64_t x = a[0].d.c, y = a[1].d.c;
	if (y <= 0 || x < 0)
		return fail_at(ps, at, "ceil_div needs a >= 0 and b > 0, got %lld, %lld", (long long)x, (long long)y);
	*out = int_val(x / y + (x % y != 0));
	return true;
}

/* prime_sum(base, skip, count): the sum of `count` consecutive primes >= base
 * after the first `skip` of them. transformers sizes qwen4_exp's n-gram
 * tables this way (head k of the PLE layers has the (k+1)-th prime >= the
 * vocabulary base), and no config key holds the result. Trial division on
 * 6k +- 1 candidates: bases below 2^31 and at most 4096 primes keep it
 * well under a second. */
#define PRIME_SUM_MAX_BASE ((int64_t)1 << 31)
#define PRIME_SUM_MAX_PRIMES 4096

static bool is_prime(int64_t n)
{
	if (n < 2)
		return false;
	if (n % 2 == 0 || n % 3 == 0)
		return n == 2 || n == 3;
	for (int64_t d = 5; d * d <= n; d += 6)
		if (n % d == 0 || n % (d + 2) == 0)
			return false;
	return true;
}

static bool func_prime_sum(parser *ps, const char *at, ir_expr_val *out)
{
	ir_expr_val a[3];
	if (!call_args(ps, "prime_sum", a, 3))
		return false;
	for (int i = 0; i < 3; i++)
		if (!need_const_int(ps, at, &a[i], "prime_sum"))
			return false;
	int64_t base = a[0].d.c, skip = a[1].d.c, count = a[2].d.c;
	if (base < 2 || base >= PRIME_SUM_MAX_BASE || skip < 0 || count < 0 || skip + count > PRIME_SUM_MAX_PRIMES)
		return fail_at(ps, at, "prime_sum needs 2 <= base < 2^31 and 0 <= skip, count with skip + count <= %d, "
			       "got %lld, %lld, %lld", PRIME_SUM_MAX_PRIMES, (long long)base, (long long)skip,
			       (long long)count);
	int64_t sum = 0;
	for (int64_t n = base, seen = 0; seen < skip + count; n++)
		if (is_prime(n) && seen++ >= skip)
			sum += n;
	*out = int_val(sum);
	return true;
}

/* int() truncates toward zero and floor() rounds down, as Python's int() and
 * math.floor() do on the config's floats (HF computes
 * int(head_dim * partial_rotary_factor)); both are exact on ints. */
static bool func_to_int(parser *ps, const char *at, bool is_floor, ir_expr_val *out)
{
	const char *fname = is_floor ? "floor" : "int";
	ir_expr_val a;
	if (!call_args(ps, fname, &a, 1))
		return false;
	if (!a.is_float) {
		*out = a;
		return true;
	}
	double r = is_floor ? floor(a.f) : trunc(a.f);
	/* 2^63 is exact as a double; every double below it converts. */
	if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0))
		return fail_at(ps, at, "%s(%.9g) is out of the int range", fname, a.f);
	*out = int_val((int64_t)r);
	return true;
}

static bool name(parser *ps, ir_expr_val *out)
{
	const char *start = ps->p;
	while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
		ps->p++;
	size_t len = (size_t)(ps->p - start);
	char buf[128];
	if (len >= sizeof(buf))
		return fail_at(ps, start, "name too long");
	memcpy(buf, start, len);
	buf[len] = 0;
	if (strcmp(buf, "sqrt") == 0)
		return func_sqrt(ps, start, out);
	if (strcmp(buf, "min") == 0 || strcmp(buf, "max") == 0)
		return func_minmax(ps, start, buf[1] == 'a', out);
	if (strcmp(buf, "ceil_div") == 0)
		return func_ceil_div(ps, start, out);
	if (strcmp(buf, "prime_sum") == 0)
		return func_prime_sum(ps, start, out);
	if (strcmp(buf, "int") == 0 || strcmp(buf, "floor") == 0)
		return func_to_int(ps, start, buf[0] == 'f', out);
	if (strcmp(buf, "T") == 0 && ps->env->allow_T) {
		*out = (ir_expr_val){.d = {1, 0}};
		return true;
	}
	const ir_param *prm = ps->env->m ? ir_module_param(ps->env->m, buf) : NULL;
	if (!prm)
		return fail_at(ps, start, "unknown name '%s'%s", buf,
			       strcmp(buf, "T") == 0 ? " (T is allowed in shapes only)" : " (not an earlier param)");
	if (prm->s)
		return fail_at(ps, start, "param '%s' is a string (it names a value for string attributes only)", buf);
	*out = prm->is_float ? float_val(prm->f) : int_val(prm->i);
	return true;
}

static bool primary(parser *ps, ir_expr_val *out)
{
	skip_ws(ps);
	char ch = *ps->p;
	if (isdigit((unsigned char)ch) || ch == '.')
		return number(ps, out);
	if (isalpha((unsigned char)ch) || ch == '_')
		return name(ps, out);
	if (ch == '(') {
		ps->p++;
		if (!expr(ps, out))
			return false;
		skip_ws(ps);
		if (*ps->p != ')')
			return fail_at(ps, ps->p, "expected ')'");
		ps->p++;
		return true;
	}
	if (!ch)
		return fail_at(ps, ps->p, "expression ends early: expected a number, a name or '('");
	return fail_at(ps, ps->p, "unexpected '%c': expected a number, a name or '('", ch);
}

static bool unary(parser *ps, ir_expr_val *out)
{
	skip_ws(ps);
	if (*ps->p != '-')
		return primary(ps, out);
	const char *at = ps->p++;
	if (++ps->depth > MAX_DEPTH)
		return fail_at(ps, at, "expression nested too deeply");
	bool ok = unary(ps, out);
	ps->depth--;
	if (!ok)
		return false;
	if (out->is_float)
		out->f = -out->f;
	else if (out->d.c == INT64_MIN || out->d.coef_T == INT64_MIN)
		return fail_at(ps, at, "integer overflow");
	else
		out->d = (ir_dim){-out->d.coef_T, -out->d.c};
	return true;
}

static bool int_addsub(parser *ps, const char *at, char op, ir_dim a, ir_dim b, ir_dim *r)
{
	bool ovf = op == '+' ? __builtin_add_overflow(a.coef_T, b.coef_T, &r->coef_T) ||
				       __builtin_add_overflow(a.c, b.c, &r->c)
			     : __builtin_sub_overflow(a.coef_T, b.coef_T, &r->coef_T) ||
				       __builtin_sub_overflow(a.c, b.c, &r->c);
	return ovf ? fail_at(ps, at, "integer overflow") : true;
}

static bool int_mul(parser *ps, const char *at, ir_dim a, ir_dim b, ir_dim *r)
{
	if (a.coef_T != 0 && b.coef_T != 0)
		return fail_at(ps, at, "T * T is not affine in T");
	ir_dim v = a.coef_T != 0 ? a : b;
	int64_t k = a.coef_T != 0 ? b.c : a.c;
	if (__builtin_mul_overflow(v.coef_T, k, &r->coef_T) || __builtin_mul_overflow(v.c, k, &r->c))
		return fail_at(ps, at, "integer overflow");
	return true;
}

static bool int_divmod(parser *ps, const char *at, char op, ir_dim a, ir_dim b, ir_dim *r)
{
	if (b.coef_T != 0)
		return fail_at(ps, at, "cannot divide by an expression of T");
	if (b.c == 0)
		return fail_at(ps, at, "division by zero");
	if (b.c == -1 && (a.c == INT64_MIN || a.coef_T == INT64_MIN))
		return fail_at(ps, at, "integer overflow");
	if (op == '%') {
		if (a.coef_T != 0)
			return fail_at(ps, at, "%% needs values that do not depend on T");
		*r = (ir_dim){0, a.c % b.c};
		return true;
	}
	if (a.coef_T % b.c != 0 || a.c % b.c != 0) {
		char buf[64];
		ir_shape s = {1, {a}};
		ir_shape_str(&s, buf, sizeof(buf));
		buf[strlen(buf) - 1] = 0;
		return fail_at(ps, at, "division with remainder: %s / %lld (dims must divide exactly)", buf + 1,
			       (long long)b.c);
	}
	*r = (ir_dim){a.coef_T / b.c, a.c / b.c};
	return true;
}

static bool apply(parser *ps, const char *at, char op, ir_expr_val *a, ir_expr_val b)
{
	if (!a->is_float && !b.is_float) {
		ir_dim r;
		bool ok = op == '+' || op == '-' ? int_addsub(ps, at, op, a->d, b.d, &r)
			  : op == '*'		 ? int_mul(ps, at, a->d, b.d, &r)
						 : int_divmod(ps, at, op, a->d, b.d, &r);
		a->d = r;
		return ok;
	}
	if (op == '%')
		return fail_at(ps, at, "%% needs ints, got a float");
	if (!to_float(ps, at, a) || !to_float(ps, at, &b))
		return false;
	if (op == '/' && b.f == 0)
		return fail_at(ps, at, "division by zero");
	a->f = op == '+' ? a->f + b.f : op == '-' ? a->f - b.f : op == '*' ? a->f * b.f : a->f / b.f;
	if (!isfinite(a->f))
		return fail_at(ps, at, "float result is not finite");
	return true;
}

static bool term(parser *ps, ir_expr_val *out)
{
	if (!unary(ps, out))
		return false;
	for (;;) {
		skip_ws(ps);
		char op = *ps->p;
		if (op != '*' && op != '/' && op != '%')
			return true;
		const char *at = ps->p++;
		ir_expr_val b;
		if (!unary(ps, &b) || !apply(ps, at, op, out, b))
			return false;
	}
}

static bool expr(parser *ps, ir_expr_val *out)
{
	if (++ps->depth > MAX_DEPTH)
		return fail_at(ps, ps->p, "expression nested too deeply");
	bool ok = term(ps, out);
	while (ok) {
		skip_ws(ps);
		char op = *ps->p;
		if (op != '+' && op != '-')
			break;
		const char *at = ps->p++;
		ir_expr_val b;
		ok = term(ps, &b) && apply(ps, at, op, out, b);
	}
	ps->depth--;
	return ok;
}

bool ir_expr_eval(const char *text, const ir_expr_env *env, ir_expr_val *out, ir_error *err)
{
	parser ps = {text, text, env, err, 0};
	if (!expr(&ps, out))
		return false;
	skip_ws(&ps);
	if (*ps.p)
		return fail_at(&ps, ps.p, "unexpected '%c' after the expression", *ps.p);
	return true;
}

bool ir_expr_int(const char *text, const ir_expr_env *env, int64_t *out, ir_error *err)
{
	ir_expr_env e = *env;
	e.allow_T = false;
	ir_expr_val v;
	if (!ir_expr_eval(text, &e, &v, err))
		return false;
	if (v.is_float) {
		ir_error_set(err, env->loc, "expected an int, got the float %.9g", v.f);
		return false;
	}
	*out = v.d.c;
	return true;
}

bool ir_expr_float(const char *text, const ir_expr_env *env, double *out, ir_error *err)
{
	ir_expr_env e = *env;
	e.allow_T = false;
	ir_expr_val v;
	if (!ir_expr_eval(text, &e, &v, err))
		return false;
	*out = v.is_float ? v.f : (double)v.d.c;
	return true;
}

bool ir_expr_dim(const char *text, const ir_expr_env *env, ir_dim *out, ir_error *err)
{
	ir_expr_val v;
	if (!ir_expr_eval(text, env, &v, err))
		return false;
	if (v.is_float) {
		ir_error_set(err, env->loc, "expected an int dim, got the float %.9g", v.f);
		return false;
	}
	*out = v.d;
	return true;
}
