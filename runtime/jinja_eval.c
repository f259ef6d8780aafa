/* The Jinja evaluator: runs a parsed template over a context with Jinja2's
 * semantics as transformers' ImmutableSandboxedEnvironment has them
 * (Undefined prints as "" and fails on use, `set` in a loop stays in the
 * loop, loop controls, namespaces). Every step is bounded: output size,
 * memory, statements run, nesting of macro calls. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runtime/jinja.h"

typedef struct jscope {
	struct jscope *parent;
	jdict *vars;
} jscope;

typedef enum { X_OK, X_BREAK, X_CONTINUE, X_ERR } xstatus;

static bool eval(jctx *c, const jnode *n, jv *out);
static xstatus exec_body(jctx *c, const jnodes *body, jbuf *out);

bool jinja_error(char *err, size_t errlen, bool *failed, const char *label, int line, const char *fmt, va_list ap)
{
	if (*failed)
		return false;
	char msg[512];
	vsnprintf(msg, sizeof msg, fmt, ap);
	snprintf(err, errlen, "%s:%d: %s", label, line, msg);
	*failed = true;
	return false;
}

bool jinja_fail(jctx *c, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	jinja_error(c->err, c->errlen, &c->failed, c->label, line, fmt, ap);
	va_end(ap);
	return false;
}

bool jinja_oom(jctx *c, int line)
{
	return jinja_fail(c, line, "rendering needs more than %zu MiB of memory", JINJA_MAX_MEMORY >> 20);
}

static bool buf_ok(jctx *c, int line, const jbuf *b)
{
	if (!b->failed)
		return true;
	if (b->over_limit)
		return jinja_fail(c, line, "the rendered text passes %d MiB", JINJA_MAX_OUTPUT >> 20);
	return jinja_oom(c, line);
}

static bool undefined_error(jctx *c, int line, jv v)
{
	return jinja_fail(c, line, "'%s' is undefined", v.u.str.s ? v.u.str.s : "value");
}

static bool lookup(const jctx *c, const char *name, jv *out)
{
	for (const jscope *s = c->scope; s; s = s->parent) {
		const jv *v = jdict_get(s->vars, name, strlen(name));
		if (v) {
			*out = *v;
			return true;
		}
	}
	*out = jv_undef(name);
	return false;
}

static bool assign(jctx *c, int line, const char *name, jv v)
{
	if (!jdict_set(&c->arena, c->scope->vars, jv_str(name, strlen(name)), v))
		return jinja_oom(c, line);
	return true;
}

static bool push_scope(jctx *c, int line)
{
	jscope *s = jarena_alloc(&c->arena, sizeof *s);
	if (!s || !(s->vars = jdict_new(&c->arena, 4)))
		return jinja_oom(c, line);
	s->parent = c->scope;
	c->scope = s;
	return true;
}

/* ---- attribute and item access ---- */

static bool loop_attr(jctx *c, const jnode *n, const jloop *l, jv *out)
{
	size_t i = l->index0, len = l->items->n;
	static const char *const names[] = {"index", "index0", "revindex", "revindex0", "first",
					    "last",  "length", "previtem", "nextitem"};
	size_t k = 0;
	while (k < sizeof names / sizeof names[0] && strcmp(names[k], n->name) != 0)
		k++;
	switch (k) {
	case 0: *out = jv_int((int64_t)i + 1); return true;
	case 1: *out = jv_int((int64_t)i); return true;
	case 2: *out = jv_int((int64_t)(len - i)); return true;
	case 3: *out = jv_int((int64_t)(len - i - 1)); return true;
	case 4: *out = jv_bool(i == 0); return true;
	case 5: *out = jv_bool(i + 1 == len); return true;
	case 6: *out = jv_int((int64_t)len); return true;
	case 7: *out = i > 0 ? l->items->items[i - 1] : jv_undef("loop.previtem"); return true;
	case 8: *out = i + 1 < len ? l->items->items[i + 1] : jv_undef("loop.nextitem"); return true;
	default: return jinja_fail(c, n->line, "unsupported loop attribute '%s'", n->name);
	}
}

/* a.name: a mapping's key (Jinja2 falls back from attributes to items). */
static bool get_attr(jctx *c, const jnode *n, jv obj, jv *out)
{
	switch (obj.kind) {
	case JV_UNDEF:
		return undefined_error(c, n->line, obj);
	case JV_DICT:
	case JV_NS: {
		const jv *v = jdict_get(obj.u.dict, n->name, strlen(n->name));
		*out = v ? *v : jv_undef(n->name);
		return true;
	}
	case JV_LOOP:
		return loop_attr(c, n, obj.u.loop, out);
	default:
		*out = jv_undef(n->name);
		return true;
	}
}

/* Python's index normalization: negative counts from the end. */
static bool norm_index(int64_t i, size_t len, size_t *at)
{
	if (i < 0)
		i += (int64_t)len;
	if (i < 0 || (uint64_t)i >= len)
		return false;
	*at = (size_t)i;
	return true;
}

static bool get_item(jctx *c, const jnode *n, jv obj, jv key, jv *out)
{
	*out = jv_undef("item");
	if (obj.kind == JV_UNDEF)
		return undefined_error(c, n->line, obj);
	if ((obj.kind == JV_DICT || obj.kind == JV_NS) && key.kind == JV_STR) {
		const jv *v = jdict_get(obj.u.dict, key.u.str.s, key.u.str.n);
		if (v)
			*out = *v;
		return true;
	}
	if (obj.kind == JV_LOOP && key.kind == JV_STR) {
		jnode tmp = *n;
		tmp.name = key.u.str.s;
		return loop_attr(c, &tmp, obj.u.loop, out);
	}
	if (key.kind != JV_INT && key.kind != JV_BOOL)
		return true;
	int64_t i = key.kind == JV_INT ? key.u.i : key.u.b;
	size_t at;
	if (obj.kind == JV_LIST && norm_index(i, obj.u.list->n, &at)) {
		*out = obj.u.list->items[at];
	} else if (obj.kind == JV_STR && norm_index(i, ju_length(obj.u.str.s, obj.u.str.n), &at)) {
		size_t from = ju_offset(obj.u.str.s, obj.u.str.n, at), to = from;
		ju_next(obj.u.str.s, obj.u.str.n, &to);
		*out = jv_str(obj.u.str.s + from, to - from);
	}
	return true;
}

static bool slice_bound(jctx *c, const jnode *n, jv v, bool *given, int64_t *out)
{
	*given = v.kind != JV_NONE && v.kind != JV_UNDEF;
	if (!*given)
		return true;
	if (v.kind != JV_INT && v.kind != JV_BOOL)
		return jinja_fail(c, n->line, "slice indices must be integers or None, not %s", jv_type_name(v));
	*out = v.kind == JV_INT ? v.u.i : v.u.b;
	return true;
}

/* Python's slice.indices(): the first index, and how many items. */
static size_t slice_plan(int64_t len, bool has_start, int64_t start, bool has_stop, int64_t stop, int64_t step,
			 int64_t *first)
{
	int64_t lo = step < 0 ? -1 : 0, hi = step < 0 ? len - 1 : len;
	if (!has_start)
		start = step < 0 ? hi : lo;
	else if (start < 0)
		start = start + len < lo ? lo : start + len;
	else if (start > hi)
		start = hi;
	if (!has_stop)
		stop = step < 0 ? lo : hi;
	else if (stop < 0)
		stop = stop + len < lo ? lo : stop + len;
	else if (stop > hi)
		stop = hi;
	*first = start;
	if (step < 0)
		return stop < start ? (size_t)((start - stop - 1) / -step + 1) : 0;
	return start < stop ? (size_t)((stop - start - 1) / step + 1) : 0;
}

static bool eval_slice(jctx *c, const jnode *n, jv *out)
{
	jv obj, b = {.kind = JV_NONE}, e = {.kind = JV_NONE}, s = {.kind = JV_NONE};
	if (!eval(c, n->a, &obj) || (n->b && !eval(c, n->b, &b)) || (n->c && !eval(c, n->c, &e)) ||
	    (n->d && !eval(c, n->d, &s)))
		return false;
	bool has_b, has_e, has_s;
	int64_t start = 0, stop = 0, step = 1;
	if (!slice_bound(c, n, b, &has_b, &start) || !slice_bound(c, n, e, &has_e, &stop) ||
	    !slice_bound(c, n, s, &has_s, &step))
		return false;
	if (step == 0)
		return jinja_fail(c, n->line, "slice step cannot be zero");
	if (obj.kind == JV_UNDEF)
		return undefined_error(c, n->line, obj);
	bool str = obj.kind == JV_STR;
	if (!str && obj.kind != JV_LIST)
		return jinja_fail(c, n->line, "'%s' object is not subscriptable", jv_type_name(obj));
	size_t len = str ? ju_length(obj.u.str.s, obj.u.str.n) : obj.u.list->n;
	int64_t at;
	size_t count = slice_plan((int64_t)len, has_b, start, has_e, stop, step, &at);
	jbuf sb = {.arena = &c->arena, .limit = JINJA_MAX_OUTPUT};
	jlist *l = str ? NULL : jlist_new(&c->arena, count);
	if (!str && !l)
		return jinja_oom(c, n->line);
	for (size_t k = 0; k < count; k++, at += step) {
		if (str) {
			size_t from = ju_offset(obj.u.str.s, obj.u.str.n, (size_t)at), to = from;
			ju_next(obj.u.str.s, obj.u.str.n, &to);
			jbuf_put(&sb, obj.u.str.s + from, to - from);
		} else {
			l->items[l->n++] = obj.u.list->items[at];
		}
	}
	if (str) {
		if (!buf_ok(c, n->line, &sb))
			return false;
		*out = jv_str(sb.p ? sb.p : "", sb.n);
	} else {
		*out = (jv){.kind = JV_LIST, .u.list = l};
	}
	return true;
}

/* ---- operators ---- */

static bool is_num(jv v)
{
	return v.kind == JV_INT || v.kind == JV_FLOAT || v.kind == JV_BOOL;
}

static double num(jv v)
{
	return v.kind == JV_FLOAT ? v.u.f : v.kind == JV_INT ? (double)v.u.i : v.u.b;
}

static int64_t inum(jv v)
{
	return v.kind == JV_INT ? v.u.i : v.u.b;
}

static const char *const op_names[] = {"+", "-", "*", "/", "//", "%", "**", "~", "==", "!=",
				       "<", "<=", ">", ">=", "in", "not in"};

static bool type_error(jctx *c, int line, jop op, jv a, jv b)
{
	if (op >= OP_LT && op <= OP_GE)
		return jinja_fail(c, line, "'%s' not supported between instances of '%s' and '%s'", op_names[op],
				  jv_type_name(a), jv_type_name(b));
	return jinja_fail(c, line, "unsupported operand type(s) for %s: '%s' and '%s'", op_names[op],
			  jv_type_name(a), jv_type_name(b));
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static bool int_pow(int64_t base, int64_t exp, int64_t *out)
{
	int64_t r = 1;
	for (; exp > 0; exp--)
		if (__builtin_mul_overflow(r, base, &r))
			return false;
	*out = r;
	return true;
}

/* Integer arithmetic as Python does it, refusing what leaves int64. */
static bool int_arith(jctx *c, int line, jop op, int64_t a, int64_t b, jv *out)
{
	int64_t r = 0;
	bool overflow = false;
	switch (op) {
	case OP_ADD: overflow = __builtin_add_overflow(a, b, &r); break;
	case OP_SUB: overflow = __builtin_sub_overflow(a, b, &r); break;
	case OP_MUL: overflow = __builtin_mul_overflow(a, b, &r); break;
	case OP_FLOORDIV:
	case OP_MOD:
		if (b == 0)
			return jinja_fail(c, line, "integer division or modulo by zero");
		if (a == INT64_MIN && b == -1)
			overflow = true;
		else
			r = op == OP_FLOORDIV ? floor_div(a, b) : a - floor_div(a, b) * b;
		break;
	case OP_POW:
		if (b < 0) {
			if (a == 0)
				return jinja_fail(c, line, "0 cannot be raised to a negative power");
			*out = (jv){.kind = JV_FLOAT, .u.f = pow((double)a, (double)b)};
			return true;
		}
		overflow = !int_pow(a, b > 64 && (a < -1 || a > 1) ? 64 : b, &r);
		if (!overflow && (a == -1 || a == 0 || a == 1) && b > 64)
			r = a == -1 ? (b % 2 ? -1 : 1) : a;
		break;
	default: return false;
	}
	if (overflow)
		return jinja_fail(c, line, "integer overflow in '%s'", op_names[op]);
	*out = jv_int(r);
	return true;
}

static bool float_arith(jctx *c, int line, jop op, double a, double b, jv *out)
{
	double r;
	switch (op) {
	case OP_ADD: r = a + b; break;
	case OP_SUB: r = a - b; break;
	case OP_MUL: r = a * b; break;
	case OP_DIV:
	case OP_FLOORDIV:
	case OP_MOD:
		if (b == 0)
			return jinja_fail(c, line, "float division by zero");
		r = op == OP_DIV ? a / b : op == OP_FLOORDIV ? floor(a / b) : a - floor(a / b) * b;
		break;
	case OP_POW: r = pow(a, b); break;
	default: return false;
	}
	*out = (jv){.kind = JV_FLOAT, .u.f = r};
	return true;
}

static bool concat_lists(jctx *c, int line, const jlist *a, const jlist *b, jv *out)
{
	jlist *l = jlist_new(&c->arena, a->n + b->n);
	if (!l)
		return jinja_oom(c, line);
	memcpy(l->items, a->items, a->n * sizeof(jv));
	memcpy(l->items + a->n, b->items, b->n * sizeof(jv));
	l->n = a->n + b->n;
	*out = (jv){.kind = JV_LIST, .u.list = l};
	return true;
}

static bool join_str(jctx *c, int line, jv a, jv b, bool as_str, jv *out)
{
	jbuf sb = {.arena = &c->arena, .limit = JINJA_MAX_OUTPUT};
	if (as_str) {
		jv_write_str(&sb, a);
		jv_write_str(&sb, b);
	} else {
		jbuf_put(&sb, a.u.str.s, a.u.str.n);
		jbuf_put(&sb, b.u.str.s, b.u.str.n);
	}
	if (!buf_ok(c, line, &sb))
		return false;
	*out = jv_str(sb.p ? sb.p : "", sb.n);
	return true;
}

static bool contains(jctx *c, int line, jv needle, jv hay, bool *found)
{
	*found = false;
	switch (hay.kind) {
	case JV_UNDEF:
		return true; /* Undefined iterates as empty */
	case JV_STR:
		if (needle.kind != JV_STR)
			return jinja_fail(c, line, "'in <string>' requires string as left operand, not %s",
					  jv_type_name(needle));
		*found = needle.u.str.n == 0 ||
			 (needle.u.str.n <= hay.u.str.n && memmem(hay.u.str.s, hay.u.str.n, needle.u.str.s, needle.u.str.n));
		return true;
	case JV_LIST:
		for (size_t i = 0; i < hay.u.list->n && !*found; i++)
			*found = jv_equal(needle, hay.u.list->items[i]);
		return true;
	case JV_DICT:
	case JV_NS:
		for (size_t i = 0; i < hay.u.dict->n && !*found; i++)
			*found = jv_equal(needle, hay.u.dict->keys[i]);
		return true;
	default:
		return jinja_fail(c, line, "argument of type '%s' is not iterable", jv_type_name(hay));
	}
}

static int str_cmp(jv a, jv b)
{
	size_t n = a.u.str.n < b.u.str.n ? a.u.str.n : b.u.str.n;
	int r = memcmp(a.u.str.s, b.u.str.s, n);
	return r ? r : (a.u.str.n > b.u.str.n) - (a.u.str.n < b.u.str.n);
}

static bool compare(jctx *c, int line, jop op, jv a, jv b, jv *out)
{
	int r;
	if (is_num(a) && is_num(b))
		r = (num(a) > num(b)) - (num(a) < num(b));
	else if (a.kind == JV_STR && b.kind == JV_STR)
		r = str_cmp(a, b);
	else
		return type_error(c, line, op, a, b);
	*out = jv_bool(op == OP_LT ? r < 0 : op == OP_LE ? r <= 0 : op == OP_GT ? r > 0 : r >= 0);
	return true;
}

static bool binary_op(jctx *c, int line, jop op, jv a, jv b, jv *out)
{
	bool found;
	switch (op) {
	case OP_EQ:
	case OP_NE:
		*out = jv_bool(jv_equal(a, b) == (op == OP_EQ));
		return true;
	case OP_IN:
	case OP_NOT_IN:
		if (!contains(c, line, a, b, &found))
			return false;
		*out = jv_bool(found == (op == OP_IN));
		return true;
	case OP_CONCAT:
		return join_str(c, line, a, b, true, out);
	default:
		break;
	}
	if (a.kind == JV_UNDEF || b.kind == JV_UNDEF)
		return undefined_error(c, line, a.kind == JV_UNDEF ? a : b);
	if (op >= OP_LT && op <= OP_GE)
		return compare(c, line, op, a, b, out);
	if (op == OP_ADD && a.kind == JV_STR && b.kind == JV_STR)
		return join_str(c, line, a, b, false, out);
	if (op == OP_ADD && a.kind == JV_LIST && b.kind == JV_LIST)
		return concat_lists(c, line, a.u.list, b.u.list, out);
	if (!is_num(a) || !is_num(b))
		return type_error(c, line, op, a, b);
	if (a.kind != JV_FLOAT && b.kind != JV_FLOAT && op != OP_DIV)
		return int_arith(c, line, op, inum(a), inum(b), out);
	return float_arith(c, line, op, num(a), num(b), out);
}

/* ---- expressions ---- */

/* Evaluates n's arguments after `lead` leading values (the operand of a
 * filter, test or method) into a fresh array; kw gets the names. */
static bool eval_args(jctx *c, const jnode *n, const jv *lead, size_t nlead, jv **args, const char ***kw)
{
	size_t total = nlead + n->args.n;
	*args = jarena_alloc(&c->arena, (total + 1) * sizeof(jv));
	*kw = jarena_alloc(&c->arena, (total + 1) * sizeof(char *));
	if (!*args || !*kw)
		return jinja_oom(c, n->line);
	for (size_t i = 0; i < nlead; i++)
		(*args)[i] = lead[i];
	for (size_t i = 0; i < n->args.n; i++) {
		if (!eval(c, n->args.v[i], &(*args)[nlead + i]))
			return false;
		(*kw)[nlead + i] = n->kw ? n->kw[i] : NULL;
	}
	return true;
}

static bool call_builtin(jctx *c, const jnode *n, jbuiltin_table t, const jv *lead, size_t nlead, jv *out)
{
	jv *args;
	const char **kw;
	if (!eval_args(c, n, lead, nlead, &args, &kw))
		return false;
	return jinja_builtin(t, n->builtin)->fn(c, n, args, kw, nlead + n->args.n, out);
}

static bool eval_call(jctx *c, const jnode *n, jv *out)
{
	if (n->a->kind == N_ATTR) {
		jv obj;
		if (!eval(c, n->a->a, &obj))
			return false;
		if (obj.kind == JV_UNDEF)
			return undefined_error(c, n->line, obj);
		return call_builtin(c, n, JB_METHOD, &obj, 1, out);
	}
	jv callee;
	if (lookup(c, n->a->name, &callee) && callee.kind == JV_MACRO) {
		jv *args;
		const char **kw;
		return eval_args(c, n, NULL, 0, &args, &kw) && jinja_call_macro(c, n, callee, args, kw, n->args.n, out);
	}
	if (n->builtin >= 0)
		return call_builtin(c, n, JB_GLOBAL, NULL, 0, out);
	if (callee.kind == JV_UNDEF)
		return undefined_error(c, n->line, callee);
	return jinja_fail(c, n->line, "'%s' object is not callable", jv_type_name(callee));
}

static bool eval_collection(jctx *c, const jnode *n, jv *out)
{
	if (n->kind == N_DICT) {
		jdict *d = jdict_new(&c->arena, n->args.n / 2);
		if (!d)
			return jinja_oom(c, n->line);
		for (size_t i = 0; i + 1 < n->args.n; i += 2) {
			jv k, v;
			if (!eval(c, n->args.v[i], &k) || !eval(c, n->args.v[i + 1], &v))
				return false;
			if (k.kind != JV_STR)
				return jinja_fail(c, n->line, "dict keys must be strings here, not %s", jv_type_name(k));
			if (!jdict_set(&c->arena, d, k, v))
				return jinja_oom(c, n->line);
		}
		*out = (jv){.kind = JV_DICT, .u.dict = d};
		return true;
	}
	jlist *l = jlist_new(&c->arena, n->args.n);
	if (!l)
		return jinja_oom(c, n->line);
	for (size_t i = 0; i < n->args.n; i++)
		if (!eval(c, n->args.v[i], &l->items[l->n++]))
			return false;
	l->tuple = n->kind == N_TUPLE;
	*out = (jv){.kind = JV_LIST, .u.list = l};
	return true;
}

static bool eval_inner(jctx *c, const jnode *n, jv *out)
{
	jv a, b;
	switch (n->kind) {
	case N_LIT:
		*out = n->lit;
		return true;
	case N_NAME:
		lookup(c, n->name, out);
		return true;
	case N_ATTR:
		return eval(c, n->a, &a) && get_attr(c, n, a, out);
	case N_ITEM:
		return eval(c, n->a, &a) && eval(c, n->b, &b) && get_item(c, n, a, b, out);
	case N_SLICE:
		return eval_slice(c, n, out);
	case N_CALL:
		return eval_call(c, n, out);
	case N_FILTER:
		return eval(c, n->a, &a) && call_builtin(c, n, JB_FILTER, &a, 1, out);
	case N_TEST:
		if (!eval(c, n->a, &a) || !call_builtin(c, n, JB_TEST, &a, 1, out))
			return false;
		out->u.b ^= n->negated;
		return true;
	case N_NOT:
		if (!eval(c, n->a, &a))
			return false;
		*out = jv_bool(!jv_truthy(a));
		return true;
	case N_NEG:
	case N_POS:
		if (!eval(c, n->a, &a))
			return false;
		if (a.kind == JV_UNDEF)
			return undefined_error(c, n->line, a);
		if (!is_num(a))
			return jinja_fail(c, n->line, "bad operand type for unary %s: '%s'", n->kind == N_NEG ? "-" : "+",
					  jv_type_name(a));
		return n->kind == N_POS ? (*out = a.kind == JV_BOOL ? jv_int(a.u.b) : a, true)
					: binary_op(c, n->line, OP_SUB, jv_int(0), a, out);
	case N_BINARY:
		return eval(c, n->a, &a) && eval(c, n->b, &b) && binary_op(c, n->line, n->op, a, b, out);
	case N_AND:
	case N_OR:
		/* Python's and/or give an operand, not a bool */
		if (!eval(c, n->a, &a))
			return false;
		if (jv_truthy(a) == (n->kind == N_OR)) {
			*out = a;
			return true;
		}
		return eval(c, n->b, out);
	case N_COND:
		if (!eval(c, n->a, &a))
			return false;
		if (jv_truthy(a))
			return eval(c, n->b, out);
		if (n->c)
			return eval(c, n->c, out);
		*out = jv_undef("else branch");
		return true;
	case N_LIST:
	case N_TUPLE:
	case N_DICT:
		return eval_collection(c, n, out);
	default:
		return jinja_fail(c, n->line, "a statement where an expression belongs");
	}
}

static bool eval(jctx *c, const jnode *n, jv *out)
{
	if (++c->depth > JINJA_MAX_DEPTH * 4) {
		c->depth--;
		return jinja_fail(c, n->line, "expressions nest deeper than %d", JINJA_MAX_DEPTH * 4);
	}
	bool ok = eval_inner(c, n, out);
	c->depth--;
	return ok && !c->failed;
}

/* ---- statements ---- */

static bool step(jctx *c, int line)
{
	if (++c->steps > JINJA_MAX_STEPS)
		return jinja_fail(c, line, "the template runs more than %d steps", JINJA_MAX_STEPS);
	return true;
}

/* What a for loop runs over: a list's items, a mapping's keys, a string's
 * characters; undefined runs over nothing. */
static bool iter_items(jctx *c, int line, jv v, jlist **out)
{
	if (v.kind == JV_LIST) {
		*out = v.u.list;
		return true;
	}
	jlist *l = jlist_new(&c->arena, 0);
	if (!l)
		return jinja_oom(c, line);
	*out = l;
	if (v.kind == JV_UNDEF)
		return true;
	if (v.kind == JV_DICT || v.kind == JV_NS) {
		l->items = v.u.dict->keys;
		l->n = l->cap = v.u.dict->n;
		return true;
	}
	if (v.kind != JV_STR)
		return jinja_fail(c, line, "'%s' object is not iterable", jv_type_name(v));
	for (size_t at = 0; at < v.u.str.n;) {
		size_t from = at;
		ju_next(v.u.str.s, v.u.str.n, &at);
		if (!jlist_push(&c->arena, l, jv_str(v.u.str.s + from, at - from)))
			return jinja_oom(c, line);
	}
	return true;
}

static bool bind_targets(jctx *c, const jnode *n, jv item)
{
	if (n->nnames == 1)
		return assign(c, n->line, n->names[0], item);
	if (item.kind != JV_LIST || item.u.list->n != 2)
		return jinja_fail(c, n->line, "cannot unpack %s into two loop variables", jv_type_name(item));
	return assign(c, n->line, n->names[0], item.u.list->items[0]) &&
	       assign(c, n->line, n->names[1], item.u.list->items[1]);
}

/* The items that pass the loop's `if`, evaluated with the targets bound. */
static bool filter_items(jctx *c, const jnode *n, jlist *all, jlist **out)
{
	if (!n->b) {
		*out = all;
		return true;
	}
	jlist *l = jlist_new(&c->arena, all->n);
	if (!l)
		return jinja_oom(c, n->line);
	for (size_t i = 0; i < all->n; i++) {
		jv keep;
		if (!step(c, n->line) || !bind_targets(c, n, all->items[i]) || !eval(c, n->b, &keep))
			return false;
		if (jv_truthy(keep))
			l->items[l->n++] = all->items[i];
	}
	*out = l;
	return true;
}

static xstatus exec_for(jctx *c, const jnode *n, jbuf *out)
{
	jv seq;
	jlist *all = NULL, *items = NULL;
	jscope *outer = c->scope;
	if (!eval(c, n->a, &seq) || !iter_items(c, n->line, seq, &all) || !push_scope(c, n->line))
		return X_ERR;
	jloop *loop = jarena_alloc(&c->arena, sizeof *loop);
	if (!loop || !filter_items(c, n, all, &items)) {
		c->scope = outer;
		return loop ? X_ERR : (jinja_oom(c, n->line), X_ERR);
	}
	loop->items = items;
	xstatus st = X_OK;
	for (size_t i = 0; i < items->n; i++) {
		loop->index0 = i;
		if (!step(c, n->line) || !bind_targets(c, n, items->items[i]) ||
		    !assign(c, n->line, "loop", (jv){.kind = JV_LOOP, .u.loop = loop})) {
			st = X_ERR;
			break;
		}
		st = exec_body(c, &n->body, out);
		if (st == X_ERR || st == X_BREAK)
			break;
	}
	c->scope = outer;
	if (st == X_ERR)
		return X_ERR;
	return items->n == 0 ? exec_body(c, &n->orelse, out) : X_OK;
}

static xstatus exec_set(jctx *c, const jnode *n)
{
	jv v;
	if (!eval(c, n->b, &v))
		return X_ERR;
	if (!n->a)
		return assign(c, n->line, n->name, v) ? X_OK : X_ERR;
	jv ns;
	lookup(c, n->a->name, &ns);
	if (ns.kind != JV_NS)
		return jinja_fail(c, n->line, "cannot assign attribute on non-namespace object '%s'", n->a->name), X_ERR;
	return jdict_set(&c->arena, ns.u.dict, jv_str(n->name, strlen(n->name)), v) ? X_OK
										     : (jinja_oom(c, n->line), X_ERR);
}

static xstatus exec_one(jctx *c, const jnode *n, jbuf *out)
{
	jv v;
	switch (n->kind) {
	case N_TEXT:
		jbuf_put(out, n->lit.u.str.s, n->lit.u.str.n);
		return buf_ok(c, n->line, out) ? X_OK : X_ERR;
	case N_OUTPUT:
		if (!eval(c, n->a, &v))
			return X_ERR;
		jv_write_str(out, v);
		return buf_ok(c, n->line, out) ? X_OK : X_ERR;
	case N_IF:
		if (!eval(c, n->a, &v))
			return X_ERR;
		return exec_body(c, jv_truthy(v) ? &n->body : &n->orelse, out);
	case N_FOR:
		return exec_for(c, n, out);
	case N_SET:
		return exec_set(c, n);
	case N_MACRO:
		return assign(c, n->line, n->name, (jv){.kind = JV_MACRO, .u.macro = n}) ? X_OK : X_ERR;
	case N_BREAK:
		return X_BREAK;
	case N_CONTINUE:
		return X_CONTINUE;
	default:
		return jinja_fail(c, n->line, "an expression where a statement belongs"), X_ERR;
	}
}

static xstatus exec_body(jctx *c, const jnodes *body, jbuf *out)
{
	for (size_t i = 0; i < body->n; i++) {
		if (!step(c, body->v[i]->line))
			return X_ERR;
		xstatus st = exec_one(c, body->v[i], out);
		if (st != X_OK)
			return st;
	}
	return X_OK;
}

/* Binds the call's arguments to the macro's parameters in a scope under
 * the template's globals (macros here see globals and their parameters). */
static bool bind_params(jctx *c, const jnode *at, const jnode *m, jv *args, const char **kw, size_t n)
{
	size_t npos = 0;
	while (npos < n && !kw[npos])
		npos++;
	if (npos > m->nnames)
		return jinja_fail(c, at->line, "macro '%s' takes not more than %zu argument(s)", m->name, m->nnames);
	for (size_t p = 0; p < m->nnames; p++) {
		jv v;
		size_t k = npos;
		while (k < n && strcmp(kw[k], m->names[p]) != 0)
			k++;
		if (p < npos)
			v = args[p];
		else if (k < n)
			v = args[k];
		else if (!eval(c, m->args.v[p], &v))
			return false;
		if (!assign(c, at->line, m->names[p], v))
			return false;
	}
	for (size_t k = npos; k < n; k++) {
		size_t p = 0;
		while (p < m->nnames && strcmp(kw[k], m->names[p]) != 0)
			p++;
		if (p == m->nnames)
			return jinja_fail(c, at->line, "macro '%s' takes no keyword argument '%s'", m->name, kw[k]);
	}
	return true;
}

bool jinja_call_macro(jctx *c, const jnode *at, jv macro, jv *args, const char **kw, size_t n, jv *out)
{
	const jnode *m = macro.u.macro;
	if (c->depth > JINJA_MAX_DEPTH)
		return jinja_fail(c, at->line, "macro calls nest deeper than %d", JINJA_MAX_DEPTH);
	jscope *saved = c->scope, *root = c->scope;
	while (root->parent)
		root = root->parent;
	c->scope = root;
	bool ok = push_scope(c, at->line) && bind_params(c, at, m, args, kw, n);
	jbuf body = {.arena = &c->arena, .limit = JINJA_MAX_OUTPUT};
	c->depth += 4; /* a macro call costs more of the nesting budget than an expression */
	/* break/continue cannot leave a macro: the parser only allows them in loops */
	ok = ok && exec_body(c, &m->body, &body) != X_ERR && buf_ok(c, at->line, &body);
	c->depth -= 4;
	c->scope = saved;
	*out = jv_str(body.p ? body.p : "", body.n);
	return ok;
}

bool jinja_render(jctx *c, const jnodes *body, jdict *globals, jbuf *out)
{
	jscope *root = jarena_alloc(&c->arena, sizeof *root);
	if (!root)
		return jinja_oom(c, 1);
	root->vars = globals;
	c->scope = root;
	xstatus st = exec_body(c, body, out);
	return st != X_ERR && !c->failed;
}
