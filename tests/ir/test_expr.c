/* The expression evaluator: values, affine T, exact division, and error
 * columns. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ir/expr.h"

static int fails;

static ir_module *params(void)
{
	ir_module *m = ir_module_new("e.yaml");
	m->params = ir_arena_alloc(&m->arena, 3 * sizeof(ir_param));
	m->params[0] = (ir_param){.name = "H", .i = 64};
	m->params[1] = (ir_param){.name = "n", .i = 4};
	m->params[2] = (ir_param){.name = "eps", .is_float = true, .f = 1e-5};
	m->n_params = 3;
	return m;
}

typedef struct {
	const char *text;
	bool allow_T;
	bool is_float;
	double f;
	int64_t coef_T, c;
} ok_case;

static const ok_case oks[] = {
	{"H / n", false, false, 0, 0, 16},
	{"2 * H + 1", false, false, 0, 0, 129},
	{"-(H - 70) % 4", false, false, 0, 0, 2},
	{"ceil_div(H + 1, 8)", false, false, 0, 0, 9},
	{"max(n, 3) * min(H, 100)", false, false, 0, 0, 256},
	{"1.0 / sqrt(H)", false, true, 0.125, 0, 0},
	{"eps * 2", false, true, 2e-5, 0, 0},
	{"T", true, false, 0, 1, 0},
	{"(4 * T + 8) / 4 - 1", true, false, 0, 1, 1},
	{"n * T * 2", true, false, 0, 8, 0},
	{"1.0e-6", false, true, 1e-6, 0, 0},
	{"int(H * 0.25)", false, false, 0, 0, 16},
	{"int(H * 0.3)", false, false, 0, 0, 19},
	{"int(-2.5)", false, false, 0, 0, -2},
	{"floor(-2.5)", false, false, 0, 0, -3},
	{"floor(7 / 2.0) + 1", false, false, 0, 0, 4},
	{"int(n) * floor(H)", false, false, 0, 0, 256},
	{"int(2 * T + 1)", true, false, 0, 2, 1},
	/* models.md 2.4(c): the tiny fixture's 4 heads [67, 71, 73, 79], the
	 * published 16 heads 20000003 ... 20000171 */
	{"prime_sum(H, 0, n)", false, false, 0, 0, 290},
	{"prime_sum(H, 2, 2)", false, false, 0, 0, 152},
	{"prime_sum(20000000, 0, 16)", false, false, 0, 0, 320001446},
	{"prime_sum(2, 0, 5)", false, false, 0, 0, 28},
	{"prime_sum(H, n, 0)", false, false, 0, 0, 0},
};

typedef struct {
	const char *text;
	bool allow_T;
	const char *expect;
} err_case;

static const err_case errs[] = {
	{"H / 3", false, "e.yaml:3:7: division with remainder: 64 / 3"},
	{"(2 * T + 1) / 2", true, "e.yaml:3:17: division with remainder: 2*T+1 / 2"},
	{"H / (n - 4)", false, "e.yaml:3:7: division by zero"},
	{"T * T", true, "e.yaml:3:7: T * T is not affine in T"},
	{"H + foo", false, "e.yaml:3:9: unknown name 'foo'"},
	{"T + 1", false, "e.yaml:3:5: unknown name 'T' (T is allowed in shapes only)"},
	{"(H + 1", false, "e.yaml:3:11: expected ')'"},
	{"H 4", false, "e.yaml:3:7: unexpected '4' after the expression"},
	{"sqrt(H, 2)", false, "e.yaml:3:11: sqrt takes 1 argument(s): expected ')'"},
	{"H % 2.0", false, "e.yaml:3:7: % needs ints, got a float"},
	{"9223372036854775807 + 1", false, "e.yaml:3:25: integer overflow"},
	{"3abc", false, "e.yaml:3:6: unexpected 'a' after a number"},
	{"", false, "e.yaml:3:5: expression ends early"},
	{"sqrt(0 - 1)", false, "e.yaml:3:5: sqrt of a negative number"},
	{"1 + int(1.0e300)", false, "e.yaml:3:9: int(1e+300) is out of the int range"},
	{"floor(-1.0e19)", false, "e.yaml:3:5: floor(-1e+19) is out of the int range"},
	{"floor(H, 2)", false, "e.yaml:3:12: floor takes 1 argument(s): expected ')'"},
	{"H + int 2", false, "e.yaml:3:13: expected '(' after int"},
	{"2 * int(foo)", false, "e.yaml:3:13: unknown name 'foo'"},
	{"int(T)", false, "e.yaml:3:9: unknown name 'T' (T is allowed in shapes only)"},
	{"prime_sum(1, 0, 4)", false, "e.yaml:3:5: prime_sum needs 2 <= base < 2^31"},
	{"prime_sum(H, 4000, 97)", false, "e.yaml:3:5: prime_sum needs 2 <= base < 2^31 and 0 <= skip, count with skip + count <= 4096, got 64, 4000, 97"},
	{"prime_sum(H, 0, 1.5)", false, "e.yaml:3:5: prime_sum"},
	{"prime_sum(H, 0)", false, "e.yaml:3:19: prime_sum takes 3 argument(s): expected ','"},
	{"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
	 false, "expression nested too deeply"},
};

int main(void)
{
	ir_module *m = params();
	int n_ok = (int)(sizeof(oks) / sizeof(oks[0])), n_err = (int)(sizeof(errs) / sizeof(errs[0]));
	for (int i = 0; i < n_ok; i++) {
		ir_expr_env env = {m, oks[i].allow_T, {"e.yaml", 3, 5}};
		ir_expr_val v;
		ir_error err = {0};
		bool ok = ir_expr_eval(oks[i].text, &env, &v, &err);
		bool match = ok && v.is_float == oks[i].is_float &&
			     (v.is_float ? fabs(v.f - oks[i].f) <= 1e-12 * fabs(oks[i].f)
					 : v.d.coef_T == oks[i].coef_T && v.d.c == oks[i].c);
		if (!match) {
			fprintf(stderr, "FAIL '%s': %s\n", oks[i].text, ok ? "wrong value" : err.msg);
			fails++;
		}
	}
	for (int i = 0; i < n_err; i++) {
		ir_expr_env env = {m, errs[i].allow_T, {"e.yaml", 3, 5}};
		ir_expr_val v;
		ir_error err = {0};
		if (ir_expr_eval(errs[i].text, &env, &v, &err) || !strstr(err.msg, errs[i].expect)) {
			fprintf(stderr, "FAIL '%s': got \"%s\", wanted \"%s\"\n", errs[i].text, err.msg, errs[i].expect);
			fails++;
		}
	}
	ir_error err = {0};
	int64_t i64;
	ir_expr_env env = {m, false, {"e.yaml", 3, 5}};
	if (ir_expr_int("eps", &env, &i64, &err) || !strstr(err.msg, "e.yaml:3:5: expected an int, got the float 1e-05")) {
		fprintf(stderr, "FAIL float where int required: %s\n", err.msg);
		fails++;
	}
	ir_module_free(m);
	printf("expr: %d cases, %d failed\n", n_ok + n_err + 1, fails);
	return fails ? 1 : 0;
}
