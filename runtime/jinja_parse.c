/* The Jinja parser: tokens to a tree, with Jinja2's precedence (ternary,
 * or, and, not, comparisons, + -, ~, * / // %, **, unary, then postfix
 * attribute/item/call and `|filter` / `is test`). Anything outside the
 * subset is refused here, naming the construct, so a template that parses
 * renders without meeting an unknown name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/jinja.h"

typedef struct {
	jarena *arena;
	const jtok *t;
	size_t at, n;
	const char *label;
	char *err;
	size_t errlen;
	int depth;
	int loops; /* for bodies around this point (break/continue need one) */
	bool failed;
	/* calls to names that are neither builtins nor macros defined so far,
	 * checked once the whole template is read */
	const jnode **calls;
	size_t ncalls, calls_cap;
	const char **macros;
	size_t nmacros, macros_cap;
} parser;

static bool fail(parser *P, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(parser *P, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	jinja_error(P->err, P->errlen, &P->failed, P->label, line, fmt, ap);
	va_end(ap);
	return false;
}

static const jtok *peek(const parser *P)
{
	return &P->t[P->at];
}

static bool is_op(const jtok *t, const char *op)
{
	return t->kind == TK_OP && strcmp(t->s, op) == 0;
}

static bool is_name(const jtok *t, const char *name)
{
	return t->kind == TK_NAME && t->n == strlen(name) && memcmp(t->s, name, t->n) == 0;
}

static bool accept_op(parser *P, const char *op)
{
	if (!is_op(peek(P), op))
		return false;
	P->at++;
	return true;
}

static bool accept_name(parser *P, const char *name)
{
	if (!is_name(peek(P), name))
		return false;
	P->at++;
	return true;
}

static const char *describe(const jtok *t, char *buf, size_t len)
{
	static const char *const kinds[] = {[TK_TEXT] = "text", [TK_VAR_BEGIN] = "'{{'", [TK_VAR_END] = "'}}'",
					    [TK_BLOCK_BEGIN] = "'{%'", [TK_BLOCK_END] = "'%}'", [TK_STRING] = "a string",
					    [TK_INT] = "a number", [TK_FLOAT] = "a number", [TK_EOF] = "the end of the template"};
	if (t->kind == TK_NAME || t->kind == TK_OP)
		snprintf(buf, len, "'%.*s'", (int)(t->n < 40 ? t->n : 40), t->s);
	else
		snprintf(buf, len, "%s", kinds[t->kind]);
	return buf;
}

static bool expect_op(parser *P, const char *op)
{
	if (accept_op(P, op))
		return true;
	char buf[64];
	return fail(P, peek(P)->line, "expected '%s', found %s", op, describe(peek(P), buf, sizeof buf));
}

static const char *take_name(parser *P, const char *what)
{
	const jtok *t = peek(P);
	if (t->kind != TK_NAME) {
		char buf[64];
		fail(P, t->line, "expected %s, found %s", what, describe(t, buf, sizeof buf));
		return NULL;
	}
	char *s = jarena_alloc(P->arena, t->n + 1);
	if (!s) {
		fail(P, t->line, "out of memory");
		return NULL;
	}
	memcpy(s, t->s, t->n);
	P->at++;
	return s;
}

static jnode *node(parser *P, jnode_kind kind, int line)
{
	jnode *n = jarena_alloc(P->arena, sizeof *n);
	if (!n)
		fail(P, line, "out of memory");
	else
		*n = (jnode){.kind = kind, .line = line, .builtin = -1};
	return n;
}

static bool add(parser *P, jnodes *list, jnode *n)
{
	if (!n)
		return false;
	if ((list->n & (list->n - 1)) == 0) { /* grows at powers of two */
		jnode **v = jarena_alloc(P->arena, (list->n ? list->n * 2 : 1) * sizeof *v);
		if (!v)
			return fail(P, n->line, "out of memory");
		if (list->n)
			memcpy(v, list->v, list->n * sizeof *v);
		list->v = v;
	}
	list->v[list->n++] = n;
	return true;
}

static bool enter(parser *P)
{
	if (++P->depth > JINJA_MAX_DEPTH)
		return fail(P, peek(P)->line, "nesting deeper than %d", JINJA_MAX_DEPTH);
	return true;
}

static jnode *parse_expr(parser *P);
static jnode *parse_or(parser *P);
static jnode *parse_unary(parser *P, bool with_filter);

/* (args) after a call, filter or test: positional then name=value. */
static bool parse_args(parser *P, jnode *n)
{
	size_t cap = 0;
	const char **kw = NULL;
	while (!is_op(peek(P), ")")) {
		if (n->args.n && !expect_op(P, ","))
			return false;
		if (is_op(peek(P), ")"))
			break;
		const char *name = NULL;
		if (peek(P)->kind == TK_NAME && is_op(&P->t[P->at + 1], "=")) {
			if (!(name = take_name(P, "a name")))
				return false;
			P->at++;
		} else if (kw && n->args.n && kw[n->args.n - 1]) {
			return fail(P, peek(P)->line, "positional argument after a keyword argument");
		}
		if (!add(P, &n->args, parse_expr(P)))
			return false;
		if (n->args.n > cap) {
			cap = cap ? cap * 2 : 4;
			const char **k = jarena_alloc(P->arena, cap * sizeof *k);
			if (!k)
				return fail(P, n->line, "out of memory");
			if (kw)
				memcpy(k, kw, (n->args.n - 1) * sizeof *k);
			kw = k;
		}
		kw[n->args.n - 1] = name;
	}
	n->kw = kw;
	P->at++;
	return true;
}

static bool check_arity(parser *P, const jnode *n, const jbuiltin *b, int operand, const char *what)
{
	int count = (int)n->args.n + operand;
	if (count < b->min_args || count > b->max_args)
		return fail(P, n->line, "%s '%s' takes %d to %d arguments, given %d", what, b->name,
			    b->min_args - operand, b->max_args - operand, count - operand);
	return true;
}

/* `| name(args)`: the operand is a->... the filter's first argument. */
static jnode *parse_filter(parser *P, jnode *operand)
{
	jnode *n = node(P, N_FILTER, peek(P)->line);
	if (!n || !(n->name = take_name(P, "a filter name")))
		return NULL;
	n->a = operand;
	if ((n->builtin = jinja_builtin_find(JB_FILTER, n->name)) < 0) {
		fail(P, n->line, "unknown filter '%s'", n->name);
		return NULL;
	}
	if (accept_op(P, "(") && !parse_args(P, n))
		return NULL;
	return check_arity(P, n, jinja_builtin(JB_FILTER, n->builtin), 1, "filter") ? n : NULL;
}

static jnode *parse_test(parser *P, jnode *operand)
{
	jnode *n = node(P, N_TEST, peek(P)->line);
	if (!n)
		return NULL;
	n->negated = accept_name(P, "not");
	if (!(n->name = take_name(P, "a test name")))
		return NULL;
	n->a = operand;
	if ((n->builtin = jinja_builtin_find(JB_TEST, n->name)) < 0) {
		fail(P, n->line, "unknown test '%s'", n->name);
		return NULL;
	}
	if (accept_op(P, "(") && !parse_args(P, n))
		return NULL;
	return check_arity(P, n, jinja_builtin(JB_TEST, n->builtin), 1, "test") ? n : NULL;
}

static bool note_call(parser *P, const jnode *n)
{
	if (P->ncalls == P->calls_cap) {
		size_t cap = P->calls_cap ? P->calls_cap * 2 : 16;
		const jnode **v = jarena_alloc(P->arena, cap * sizeof *v);
		if (!v)
			return fail(P, n->line, "out of memory");
		if (P->ncalls)
			memcpy(v, P->calls, P->ncalls * sizeof *v);
		P->calls = v;
		P->calls_cap = cap;
	}
	P->calls[P->ncalls++] = n;
	return true;
}

/* f(args): a method when f is an attribute, else a global function or a
 * macro; which one is checked here (methods, globals) or after the whole
 * template is read (macros). */
static jnode *parse_call(parser *P, jnode *callee)
{
	jnode *n = node(P, N_CALL, callee->line);
	if (!n)
		return NULL;
	n->a = callee;
	if (!parse_args(P, n))
		return NULL;
	if (callee->kind == N_ATTR) {
		if ((n->builtin = jinja_builtin_find(JB_METHOD, callee->name)) < 0) {
			fail(P, n->line, "unsupported method '%s'", callee->name);
			return NULL;
		}
		return check_arity(P, n, jinja_builtin(JB_METHOD, n->builtin), 1, "method") ? n : NULL;
	}
	if (callee->kind != N_NAME) {
		fail(P, n->line, "only functions, macros and methods can be called");
		return NULL;
	}
	if ((n->builtin = jinja_builtin_find(JB_GLOBAL, callee->name)) >= 0)
		return check_arity(P, n, jinja_builtin(JB_GLOBAL, n->builtin), 0, "function") ? n : NULL;
	return note_call(P, n) ? n : NULL;
}

static jnode *parse_subscript(parser *P, jnode *obj)
{
	jnode *n = node(P, N_ITEM, peek(P)->line);
	if (!n)
		return NULL;
	n->a = obj;
	jnode **parts[] = {&n->b, &n->c, &n->d};
	for (int part = 0;; part++) {
		if (!is_op(peek(P), ":") && !is_op(peek(P), "]") && !(*parts[part] = parse_expr(P)))
			return NULL;
		if (accept_op(P, "]"))
			break;
		if (part == 2) {
			expect_op(P, "]");
			return NULL;
		}
		if (!expect_op(P, ":"))
			return NULL;
		n->kind = N_SLICE;
	}
	if (n->kind == N_ITEM && !n->b) {
		fail(P, n->line, "expected an index");
		return NULL;
	}
	return n;
}

static jnode *parse_postfix(parser *P, jnode *n)
{
	for (;;) {
		if (!n)
			return NULL;
		if (accept_op(P, ".")) {
			jnode *a = node(P, N_ATTR, peek(P)->line);
			if (!a || !(a->name = take_name(P, "an attribute name")))
				return NULL;
			a->a = n;
			n = a;
		} else if (accept_op(P, "[")) {
			n = parse_subscript(P, n);
		} else if (accept_op(P, "(")) {
			n = parse_call(P, n);
		} else {
			return n;
		}
	}
}

static jnode *parse_filters(parser *P, jnode *n)
{
	for (;;) {
		if (!n)
			return NULL;
		if (accept_op(P, "|"))
			n = parse_filter(P, n);
		else if (accept_name(P, "is"))
			n = parse_test(P, n);
		else
			return n;
	}
}

static jnode *literal(parser *P, int line, jv v)
{
	jnode *n = node(P, N_LIT, line);
	if (n)
		n->lit = v;
	return n;
}

/* [a, b], {k: v}, (a) and (a, b). */
static jnode *parse_collection(parser *P, const char *close, jnode_kind kind)
{
	jnode *n = node(P, kind, P->t[P->at - 1].line);
	bool comma = false;
	while (n && !accept_op(P, close)) {
		if (n->args.n && !(comma = expect_op(P, ",")))
			return NULL;
		if (accept_op(P, close))
			break;
		if (!add(P, &n->args, parse_expr(P)))
			return NULL;
		if (kind == N_DICT && (!expect_op(P, ":") || !add(P, &n->args, parse_expr(P))))
			return NULL;
	}
	if (n && kind == N_TUPLE && n->args.n == 1 && !comma)
		return n->args.v[0]; /* (a) is a itself */
	return n;
}

static jnode *parse_primary(parser *P)
{
	const jtok *t = peek(P);
	static const struct {
		const char *name;
		jv value;
	} constants[] = {{"true", {.kind = JV_BOOL, .u.b = true}},  {"True", {.kind = JV_BOOL, .u.b = true}},
			 {"false", {.kind = JV_BOOL, .u.b = false}}, {"False", {.kind = JV_BOOL, .u.b = false}},
			 {"none", {.kind = JV_NONE}},		     {"None", {.kind = JV_NONE}}};
	switch (t->kind) {
	case TK_NAME:
		for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
			if (is_name(t, constants[i].name)) {
				P->at++;
				return literal(P, t->line, constants[i].value);
			}
		jnode *n = node(P, N_NAME, t->line);
		return n && (n->name = take_name(P, "a name")) ? n : NULL;
	case TK_STRING: {
		/* adjacent strings concatenate, as in Python */
		size_t len = 0, k = P->at;
		for (; P->t[k].kind == TK_STRING; k++)
			len += P->t[k].n;
		char *s = jarena_alloc(P->arena, len + 1);
		if (!s)
			return fail(P, t->line, "out of memory"), NULL;
		len = 0;
		for (; P->at < k; P->at++) {
			memcpy(s + len, P->t[P->at].s, P->t[P->at].n);
			len += P->t[P->at].n;
		}
		return literal(P, t->line, jv_str(s, len));
	}
	case TK_INT:
		P->at++;
		return literal(P, t->line, jv_int(t->i));
	case TK_FLOAT:
		P->at++;
		return literal(P, t->line, (jv){.kind = JV_FLOAT, .u.f = t->f});
	default:
		break;
	}
	if (accept_op(P, "("))
		return parse_collection(P, ")", N_TUPLE);
	if (accept_op(P, "["))
		return parse_collection(P, "]", N_LIST);
	if (accept_op(P, "{"))
		return parse_collection(P, "}", N_DICT);
	char buf[64];
	fail(P, t->line, "expected an expression, found %s", describe(t, buf, sizeof buf));
	return NULL;
}

static jnode *unary(parser *P, jnode_kind kind, int line, jnode *operand)
{
	jnode *n = operand ? node(P, kind, line) : NULL;
	if (n)
		n->a = operand;
	return n;
}

static jnode *binary(parser *P, jnode_kind kind, jop op, int line, jnode *a, jnode *b)
{
	jnode *n = a && b ? node(P, kind, line) : NULL;
	if (n) {
		n->op = op;
		n->a = a;
		n->b = b;
	}
	return n;
}

static jnode *parse_unary(parser *P, bool with_filter)
{
	if (!enter(P))
		return NULL;
	int line = peek(P)->line;
	jnode *n;
	if (accept_op(P, "-"))
		n = unary(P, N_NEG, line, parse_unary(P, false));
	else if (accept_op(P, "+"))
		n = unary(P, N_POS, line, parse_unary(P, false));
	else
		n = parse_postfix(P, parse_primary(P));
	if (with_filter)
		n = parse_filters(P, n);
	P->depth--;
	return n;
}

typedef struct {
	const char *op;
	jop code;
} op_entry;

/* One left-associative level: operand (op operand)*. */
static jnode *parse_level(parser *P, jnode *(*operand)(parser *), const op_entry *ops, size_t nops)
{
	jnode *left = operand(P);
	for (;;) {
		size_t k = 0;
		while (k < nops && !is_op(peek(P), ops[k].op))
			k++;
		if (!left || k == nops)
			return left;
		int line = peek(P)->line;
		P->at++;
		left = binary(P, N_BINARY, ops[k].code, line, left, operand(P));
	}
}

static jnode *parse_unary_filtered(parser *P)
{
	return parse_unary(P, true);
}

static jnode *parse_pow(parser *P)
{
	static const op_entry ops[] = {{"**", OP_POW}};
	return parse_level(P, parse_unary_filtered, ops, 1);
}

static jnode *parse_math2(parser *P)
{
	static const op_entry ops[] = {{"*", OP_MUL}, {"//", OP_FLOORDIV}, {"/", OP_DIV}, {"%", OP_MOD}};
	return parse_level(P, parse_pow, ops, 4);
}

static jnode *parse_concat(parser *P)
{
	static const op_entry ops[] = {{"~", OP_CONCAT}};
	return parse_level(P, parse_math2, ops, 1);
}

static jnode *parse_math1(parser *P)
{
	static const op_entry ops[] = {{"+", OP_ADD}, {"-", OP_SUB}};
	return parse_level(P, parse_concat, ops, 2);
}

/* Takes the comparison operator at the cursor into *op; false if none. */
static bool accept_compare(parser *P, jop *op)
{
	static const op_entry ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {"<=", OP_LE},
				       {">=", OP_GE}, {"<", OP_LT},  {">", OP_GT}};
	for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
		if (is_op(peek(P), ops[k].op)) {
			*op = ops[k].code;
			P->at++;
			return true;
		}
	if (accept_name(P, "in")) {
		*op = OP_IN;
		return true;
	}
	if (is_name(peek(P), "not") && is_name(&P->t[P->at + 1], "in")) {
		P->at += 2;
		*op = OP_NOT_IN;
		return true;
	}
	return false;
}

/* One comparison at most: Jinja2 reads a < b < c as (a < b) and (b < c),
 * which no supported template uses, so a chain is refused rather than
 * evaluated left to right as ((a < b) < c). */
static jnode *parse_compare(parser *P)
{
	jnode *left = parse_math1(P);
	int line = peek(P)->line;
	jop op;
	if (!left || !accept_compare(P, &op))
		return left;
	jnode *n = binary(P, N_BINARY, op, line, left, parse_math1(P));
	jop next;
	if (n && accept_compare(P, &next)) {
		fail(P, line, "chained comparison (a < b < c) is not supported; write (a < b) and (b < c)");
		return NULL;
	}
	return n;
}

static jnode *parse_not(parser *P)
{
	int line = peek(P)->line;
	if (accept_name(P, "not")) {
		if (!enter(P))
			return NULL;
		jnode *n = unary(P, N_NOT, line, parse_not(P));
		P->depth--;
		return n;
	}
	return parse_compare(P);
}

static jnode *parse_and(parser *P)
{
	jnode *left = parse_not(P);
	while (left && is_name(peek(P), "and")) {
		int line = peek(P)->line;
		P->at++;
		left = binary(P, N_AND, OP_EQ, line, left, parse_not(P));
	}
	return left;
}

static jnode *parse_or(parser *P)
{
	jnode *left = parse_and(P);
	while (left && is_name(peek(P), "or")) {
		int line = peek(P)->line;
		P->at++;
		left = binary(P, N_OR, OP_EQ, line, left, parse_and(P));
	}
	return left;
}

/* a if cond [else b] */
static jnode *parse_expr(parser *P)
{
	if (!enter(P))
		return NULL;
	jnode *n = parse_or(P);
	while (n && is_name(peek(P), "if")) {
		jnode *c = node(P, N_COND, peek(P)->line);
		P->at++;
		if (!c || !(c->a = parse_or(P)))
			return NULL;
		c->b = n;
		if (accept_name(P, "else") && !(c->c = parse_expr(P)))
			return NULL;
		n = c;
	}
	P->depth--;
	return n;
}

/* ---- statements ---- */

static bool parse_body(parser *P, jnodes *body, const char *const *ends, size_t nends, const char **end);

static bool block_end(parser *P)
{
	if (peek(P)->kind == TK_BLOCK_END) {
		P->at++;
		return true;
	}
	char buf[64];
	return fail(P, peek(P)->line, "expected '%%}', found %s", describe(peek(P), buf, sizeof buf));
}

static jnode *parse_if(parser *P, int line)
{
	jnode *n = node(P, N_IF, line);
	if (!n || !(n->a = parse_expr(P)) || !block_end(P))
		return NULL;
	static const char *const ends[] = {"elif", "else", "endif"};
	const char *end = NULL;
	if (!parse_body(P, &n->body, ends, 3, &end))
		return NULL;
	if (strcmp(end, "elif") == 0) {
		if (!add(P, &n->orelse, parse_if(P, P->t[P->at - 1].line)))
			return NULL;
		return n;
	}
	if (strcmp(end, "else") == 0 && (!block_end(P) || !parse_body(P, &n->orelse, ends + 2, 1, &end)))
		return NULL;
	return block_end(P) ? n : NULL;
}

static jnode *parse_for(parser *P, int line)
{
	jnode *n = node(P, N_FOR, line);
	const char **names = n ? jarena_alloc(P->arena, 2 * sizeof *names) : NULL;
	if (!names)
		return NULL;
	n->names = names;
	do {
		if (n->nnames == 2)
			return fail(P, line, "a for loop unpacks at most two names"), NULL;
		if (!(names[n->nnames++] = take_name(P, "a loop variable")))
			return NULL;
	} while (accept_op(P, ","));
	if (!accept_name(P, "in"))
		return fail(P, peek(P)->line, "expected 'in' in the for tag"), NULL;
	/* the iterable has no ternary: a trailing `if` filters the items */
	if (!(n->a = parse_or(P)) || (accept_name(P, "if") && !(n->b = parse_expr(P))))
		return NULL;
	if (is_name(peek(P), "recursive"))
		return fail(P, peek(P)->line, "unsupported recursive for loop"), NULL;
	static const char *const ends[] = {"else", "endfor"};
	const char *end = NULL;
	P->loops++;
	bool body_ok = block_end(P) && parse_body(P, &n->body, ends, 2, &end);
	P->loops--;
	if (!body_ok)
		return NULL;
	if (strcmp(end, "else") == 0 && (!block_end(P) || !parse_body(P, &n->orelse, ends + 1, 1, &end)))
		return NULL;
	return block_end(P) ? n : NULL;
}

static jnode *parse_set(parser *P, int line)
{
	jnode *n = node(P, N_SET, line);
	if (!n || !(n->name = take_name(P, "a variable name")))
		return NULL;
	if (accept_op(P, ".")) {
		/* set ns.attr = value: a names the namespace */
		jnode *ns = node(P, N_NAME, line);
		if (!ns)
			return NULL;
		ns->name = n->name;
		n->a = ns;
		if (!(n->name = take_name(P, "an attribute name")))
			return NULL;
	}
	if (is_op(peek(P), ","))
		return fail(P, line, "unsupported tuple assignment in set"), NULL;
	if (!is_op(peek(P), "="))
		return fail(P, line, "unsupported block set (set without '=')"), NULL;
	P->at++;
	return (n->b = parse_expr(P)) && block_end(P) ? n : NULL;
}

static bool note_macro(parser *P, const char *name, int line)
{
	if (P->nmacros == P->macros_cap) {
		size_t cap = P->macros_cap ? P->macros_cap * 2 : 8;
		const char **v = jarena_alloc(P->arena, cap * sizeof *v);
		if (!v)
			return fail(P, line, "out of memory");
		if (P->nmacros)
			memcpy(v, P->macros, P->nmacros * sizeof *v);
		P->macros = v;
		P->macros_cap = cap;
	}
	P->macros[P->nmacros++] = name;
	return true;
}

static jnode *parse_macro(parser *P, int line)
{
	jnode *n = node(P, N_MACRO, line);
	if (!n || !(n->name = take_name(P, "a macro name")) || !expect_op(P, "("))
		return NULL;
	size_t cap = 0;
	bool defaulted = false;
	while (!accept_op(P, ")")) {
		if (n->nnames && !expect_op(P, ","))
			return NULL;
		if (n->nnames == cap) {
			cap = cap ? cap * 2 : 4;
			const char **v = jarena_alloc(P->arena, cap * sizeof *v);
			if (!v)
				return fail(P, line, "out of memory"), NULL;
			if (n->nnames)
				memcpy(v, n->names, n->nnames * sizeof *v);
			n->names = v;
		}
		if (!(n->names[n->nnames++] = take_name(P, "a parameter name")))
			return NULL;
		/* args[i] is parameter i's default; one without reads as undefined,
		 * which is what Jinja2 gives a parameter the call leaves out */
		jnode *def;
		if (accept_op(P, "=")) {
			if (!(def = parse_expr(P)))
				return NULL;
			defaulted = true;
		} else if (defaulted) {
			return fail(P, line, "non-default parameter '%s' follows a default one", n->names[n->nnames - 1]),
			       NULL;
		} else if ((def = literal(P, line, jv_undef(n->names[n->nnames - 1]))) == NULL) {
			return NULL;
		}
		if (!add(P, &n->args, def))
			return NULL;
	}
	static const char *const ends[] = {"endmacro"};
	const char *end;
	int loops = P->loops;
	P->loops = 0; /* a macro's body is a function of its own */
	bool body_ok = block_end(P) && note_macro(P, n->name, line) && parse_body(P, &n->body, ends, 1, &end);
	P->loops = loops;
	if (!body_ok)
		return NULL;
	return block_end(P) ? n : NULL;
}

static jnode *parse_statement(parser *P)
{
	const jtok *t = peek(P);
	if (t->kind != TK_NAME) {
		char buf[64];
		return fail(P, t->line, "expected a tag name, found %s", describe(t, buf, sizeof buf)), NULL;
	}
	int line = t->line;
	if (accept_name(P, "if"))
		return parse_if(P, line);
	if (accept_name(P, "for"))
		return parse_for(P, line);
	if (accept_name(P, "set"))
		return parse_set(P, line);
	if (accept_name(P, "macro"))
		return parse_macro(P, line);
	if (accept_name(P, "break") || accept_name(P, "continue")) {
		if (P->loops == 0)
			return fail(P, line, "'%.*s' outside a for loop", (int)t->n, t->s), NULL;
		jnode *n = node(P, is_name(t, "break") ? N_BREAK : N_CONTINUE, line);
		return n && block_end(P) ? n : NULL;
	}
	fail(P, line, "unsupported tag '%.*s'", (int)(t->n < 40 ? t->n : 40), t->s);
	return NULL;
}

/* Statements up to one of ends (then *end names it, its name consumed but
 * not its '%}'), or to the end of the template when nends is 0. */
static bool parse_body(parser *P, jnodes *body, const char *const *ends, size_t nends, const char **end)
{
	if (!enter(P))
		return false;
	for (;;) {
		const jtok *t = peek(P);
		if (t->kind == TK_EOF) {
			P->depth--;
			if (nends == 0)
				return true;
			return fail(P, t->line, "missing '{%% %s %%}'", ends[nends - 1]);
		}
		P->at++;
		if (t->kind == TK_TEXT) {
			jnode *n = literal(P, t->line, jv_str(t->s, t->n));
			if (n)
				n->kind = N_TEXT;
			if (!add(P, body, n))
				return false;
		} else if (t->kind == TK_VAR_BEGIN) {
			jnode *n = node(P, N_OUTPUT, t->line);
			if (!n || !(n->a = parse_expr(P)) || !add(P, body, n))
				return false;
			if (peek(P)->kind != TK_VAR_END) {
				char buf[64];
				return fail(P, peek(P)->line, "expected '}}', found %s", describe(peek(P), buf, sizeof buf));
			}
			P->at++;
		} else {
			for (size_t k = 0; k < nends; k++)
				if (accept_name(P, ends[k])) {
					*end = ends[k];
					P->depth--;
					return true;
				}
			if (!add(P, body, parse_statement(P)))
				return false;
		}
	}
}

bool jinja_parse(jarena *a, const jtok *toks, size_t ntoks, jnodes *out, const char *label, char *err,
		 size_t errlen)
{
	parser P = {.arena = a, .t = toks, .n = ntoks, .label = label, .err = err, .errlen = errlen};
	*out = (jnodes){0};
	if (!parse_body(&P, out, NULL, 0, NULL))
		return false;
	for (size_t i = 0; i < P.ncalls; i++) {
		const char *name = P.calls[i]->a->name;
		size_t k = 0;
		while (k < P.nmacros && strcmp(P.macros[k], name) != 0)
			k++;
		if (k == P.nmacros)
			return fail(&P, P.calls[i]->line, "unknown function '%s'", name);
	}
	return true;
}
