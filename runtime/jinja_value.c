/* Values of the Jinja subset: the arena they live in, lists and dicts,
 * truth, equality, and the three ways a value becomes text (Python's str(),
 * repr() and transformers' json.dumps). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/jinja.h"

struct jarena_chunk {
	jarena_chunk *next;
	size_t size, used;
	max_align_t data[];
};

void *jarena_alloc(jarena *a, size_t size)
{
	size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
	if (size > a->limit || a->used > a->limit - size)
		return NULL;
	jarena_chunk *c = a->head;
	if (!c || c->size - c->used < size) {
		size_t cap = size > (64u << 10) ? size : (64u << 10);
		if (!(c = malloc(sizeof *c + cap)))
			return NULL;
		*c = (jarena_chunk){.next = a->head, .size = cap};
		a->head = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += size;
	a->used += size;
	memset(p, 0, size);
	return p;
}

void jarena_free(jarena *a)
{
	for (jarena_chunk *c = a->head, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->used = 0;
}

void jbuf_put(jbuf *b, const char *s, size_t n)
{
	if (b->failed || n == 0)
		return;
	if (n > b->limit - b->n) {
		b->failed = b->over_limit = true;
		return;
	}
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		char *p = jarena_alloc(b->arena, cap);
		if (!p) {
			b->failed = true;
			return;
		}
		if (b->n)
			memcpy(p, b->p, b->n);
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void jbuf_puts(jbuf *b, const char *s)
{
	jbuf_put(b, s, strlen(s));
}

void jbuf_printf(jbuf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	jbuf_put(b, tmp, n < 0 ? 0 : (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

jlist *jlist_new(jarena *a, size_t cap)
{
	jlist *l = jarena_alloc(a, sizeof *l);
	if (l && cap && !(l->items = jarena_alloc(a, cap * sizeof(jv))))
		return NULL;
	if (l)
		l->cap = cap;
	return l;
}

bool jlist_push(jarena *a, jlist *l, jv v)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4;
		jv *items = jarena_alloc(a, cap * sizeof(jv));
		if (!items)
			return false;
		if (l->n)
			memcpy(items, l->items, l->n * sizeof(jv));
		l->items = items;
		l->cap = cap;
	}
	l->items[l->n++] = v;
	return true;
}

jdict *jdict_new(jarena *a, size_t cap)
{
	jdict *d = jarena_alloc(a, sizeof *d);
	if (!d)
		return NULL;
	if (cap && (!(d->keys = jarena_alloc(a, cap * sizeof(jv))) || !(d->vals = jarena_alloc(a, cap * sizeof(jv)))))
		return NULL;
	d->cap = cap;
	return d;
}

const jv *jdict_get(const jdict *d, const char *key, size_t n)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->keys[i].kind == JV_STR && d->keys[i].u.str.n == n && memcmp(d->keys[i].u.str.s, key, n) == 0)
			return &d->vals[i];
	return NULL;
}

bool jdict_set(jarena *a, jdict *d, jv key, jv val)
{
	for (size_t i = 0; i < d->n; i++)
		if (jv_equal(d->keys[i], key)) {
			d->vals[i] = val;
			return true;
		}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 4;
		jv *keys = jarena_alloc(a, cap * sizeof(jv)), *vals = jarena_alloc(a, cap * sizeof(jv));
		if (!keys || !vals)
			return false;
		if (d->n) {
			memcpy(keys, d->keys, d->n * sizeof(jv));
			memcpy(vals, d->vals, d->n * sizeof(jv));
		}
		d->keys = keys;
		d->vals = vals;
		d->cap = cap;
	}
	d->keys[d->n] = key;
	d->vals[d->n++] = val;
	return true;
}

bool jv_truthy(jv v)
{
	switch (v.kind) {
	case JV_UNDEF:
	case JV_NONE:
		return false;
	case JV_BOOL:
		return v.u.b;
	case JV_INT:
		return v.u.i != 0;
	case JV_FLOAT:
		return v.u.f != 0;
	case JV_STR:
		return v.u.str.n != 0;
	case JV_LIST:
		return v.u.list->n != 0;
	case JV_DICT:
		return v.u.dict->n != 0;
	default:
		return true;
	}
}

static bool is_number(jv v)
{
	return v.kind == JV_INT || v.kind == JV_FLOAT || v.kind == JV_BOOL;
}

static double as_double(jv v)
{
	return v.kind == JV_FLOAT ? v.u.f : v.kind == JV_INT ? (double)v.u.i : (double)v.u.b;
}

/* Python's ==: numbers (bools included) by value, containers item by item. */
bool jv_equal(jv a, jv b)
{
	if (is_number(a) && is_number(b)) {
		if (a.kind != JV_FLOAT && b.kind != JV_FLOAT)
			return (a.kind == JV_INT ? a.u.i : a.u.b) == (b.kind == JV_INT ? b.u.i : b.u.b);
		return as_double(a) == as_double(b);
	}
	if (a.kind != b.kind)
		return false;
	switch (a.kind) {
	case JV_UNDEF:
	case JV_NONE:
		return true;
	case JV_STR:
		return a.u.str.n == b.u.str.n && memcmp(a.u.str.s, b.u.str.s, a.u.str.n) == 0;
	case JV_LIST:
		if (a.u.list->n != b.u.list->n)
			return false;
		for (size_t i = 0; i < a.u.list->n; i++)
			if (!jv_equal(a.u.list->items[i], b.u.list->items[i]))
				return false;
		return true;
	case JV_DICT:
	case JV_NS:
		if (a.u.dict->n != b.u.dict->n)
			return false;
		for (size_t i = 0; i < a.u.dict->n; i++) {
			jv k = a.u.dict->keys[i];
			const jv *o = k.kind == JV_STR ? jdict_get(b.u.dict, k.u.str.s, k.u.str.n) : NULL;
			if (!o || !jv_equal(a.u.dict->vals[i], *o))
				return false;
		}
		return true;
	default:
		return a.u.loop == b.u.loop;
	}
}

const char *jv_type_name(jv v)
{
	static const char *const names[] = {
		[JV_UNDEF] = "Undefined", [JV_NONE] = "NoneType", [JV_BOOL] = "bool",	   [JV_INT] = "int",
		[JV_FLOAT] = "float",	  [JV_STR] = "str",	  [JV_LIST] = "list",	   [JV_DICT] = "dict",
		[JV_NS] = "Namespace",	  [JV_LOOP] = "LoopContext", [JV_MACRO] = "Macro",
	};
	if (v.kind == JV_LIST && v.u.list->tuple)
		return "tuple";
	return names[v.kind];
}

/* Python's repr(float): the shortest digits that read back the same, with
 * ".0" on integral values. */
static void write_float(jbuf *b, double f)
{
	if (isnan(f)) {
		jbuf_puts(b, "nan");
		return;
	}
	if (isinf(f)) {
		jbuf_puts(b, f < 0 ? "-inf" : "inf");
		return;
	}
	char tmp[40];
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*g", prec, f);
		if (strtod(tmp, NULL) == f)
			break;
	}
	/* Python writes exponents with at least two digits, as C does, but
	 * switches to them only from 1e16 up and below 1e-4: %g switches at
	 * the precision, so re-spell positional when Python would. */
	char *e = strchr(tmp, 'e');
	if (e && fabs(f) < 1e16 && fabs(f) >= 1e-4) {
		int exp = atoi(e + 1);
		int digits = 0;
		for (const char *p = tmp; p < e; p++)
			digits += *p >= '0' && *p <= '9';
		int decimals = digits - 1 - exp;
		snprintf(tmp, sizeof tmp, "%.*f", decimals > 0 ? decimals : 0, f);
	}
	jbuf_puts(b, tmp);
	if (!strpbrk(tmp, ".en"))
		jbuf_puts(b, ".0");
}

void jv_write_str(jbuf *b, jv v)
{
	switch (v.kind) {
	case JV_UNDEF:
		return;
	case JV_STR:
		jbuf_put(b, v.u.str.s, v.u.str.n);
		return;
	default:
		jv_write_repr(b, v);
	}
}

/* repr(str): single quotes unless the text has ' and no ", escapes for
 * backslash, the quote and control characters. */
static void write_str_repr(jbuf *b, const char *s, size_t n)
{
	char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
	jbuf_put(b, &q, 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '\\' || ch == (unsigned char)q) {
			jbuf_put(b, "\\", 1);
			jbuf_put(b, s + i, 1);
		} else if (ch == '\n') {
			jbuf_puts(b, "\\n");
		} else if (ch == '\r') {
			jbuf_puts(b, "\\r");
		} else if (ch == '\t') {
			jbuf_puts(b, "\\t");
		} else if (ch < 0x20 || ch == 0x7f) {
			jbuf_printf(b, "\\x%02x", ch);
		} else {
			jbuf_put(b, s + i, 1);
		}
	}
	jbuf_put(b, &q, 1);
}

void jv_write_repr(jbuf *b, jv v)
{
	switch (v.kind) {
	case JV_UNDEF:
		return;
	case JV_NONE:
		jbuf_puts(b, "None");
		return;
	case JV_BOOL:
		jbuf_puts(b, v.u.b ? "True" : "False");
		return;
	case JV_INT:
		jbuf_printf(b, "%lld", (long long)v.u.i);
		return;
	case JV_FLOAT:
		write_float(b, v.u.f);
		return;
	case JV_STR:
		write_str_repr(b, v.u.str.s, v.u.str.n);
		return;
	case JV_LIST: {
		const jlist *l = v.u.list;
		jbuf_puts(b, l->tuple ? "(" : "[");
		for (size_t i = 0; i < l->n; i++) {
			if (i)
				jbuf_puts(b, ", ");
			jv_write_repr(b, l->items[i]);
		}
		jbuf_puts(b, l->tuple ? (l->n == 1 ? ",)" : ")") : "]");
		return;
	}
	case JV_NS:
		jbuf_puts(b, "<Namespace ");
		/* fall through */
	case JV_DICT: {
		const jdict *d = v.u.dict;
		jbuf_puts(b, "{");
		for (size_t i = 0; i < d->n; i++) {
			if (i)
				jbuf_puts(b, ", ");
			jv_write_repr(b, d->keys[i]);
			jbuf_puts(b, ": ");
			jv_write_repr(b, d->vals[i]);
		}
		jbuf_puts(b, v.kind == JV_NS ? "}>" : "}");
		return;
	}
	case JV_LOOP:
		jbuf_puts(b, "<LoopContext>");
		return;
	case JV_MACRO:
		jbuf_printf(b, "<Macro '%.40s'>", v.u.macro->name);
		return;
	}
}

/* json.dumps string escaping with ensure_ascii=False. */
static void write_json_str(jbuf *b, const char *s, size_t n)
{
	jbuf_put(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		static const char esc[] = {['"'] = '"', ['\\'] = '\\', ['\n'] = 'n', ['\r'] = 'r',
					   ['\t'] = 't', ['\b'] = 'b', ['\f'] = 'f'};
		if (ch < sizeof esc && esc[ch]) {
			char e[2] = {'\\', esc[ch]};
			jbuf_put(b, e, 2);
		} else if (ch < 0x20) {
			jbuf_printf(b, "\\u%04x", ch);
		} else {
			jbuf_put(b, s + i, 1);
		}
	}
	jbuf_put(b, "\"", 1);
}

typedef struct {
	int indent;
	const char *item_sep, *key_sep;
	bool sort_keys;
	char *err;
	size_t errlen;
} json_style;

static void json_newline(jbuf *b, const json_style *st, int level)
{
	jbuf_put(b, "\n", 1);
	for (int i = 0; i < st->indent * level; i++)
		jbuf_put(b, " ", 1);
}

static int key_cmp(const jv *a, const jv *b)
{
	size_t n = a->u.str.n < b->u.str.n ? a->u.str.n : b->u.str.n;
	int c = memcmp(a->u.str.s, b->u.str.s, n);
	return c ? c : (a->u.str.n > b->u.str.n) - (a->u.str.n < b->u.str.n);
}

static bool write_json(jbuf *b, jv v, const json_style *st, int level);

static bool write_json_list(jbuf *b, const jlist *l, const json_style *st, int level)
{
	if (l->n == 0) {
		jbuf_puts(b, "[]");
		return true;
	}
	jbuf_put(b, "[", 1);
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			jbuf_puts(b, st->item_sep);
		if (st->indent >= 0)
			json_newline(b, st, level + 1);
		if (!write_json(b, l->items[i], st, level + 1))
			return false;
	}
	if (st->indent >= 0)
		json_newline(b, st, level);
	jbuf_put(b, "]", 1);
	return true;
}

static bool write_json_dict(jbuf *b, const jdict *d, const json_style *st, int level)
{
	if (d->n == 0) {
		jbuf_puts(b, "{}");
		return true;
	}
	size_t *order = malloc(d->n * sizeof *order);
	if (!order) {
		b->failed = true;
		return true;
	}
	for (size_t i = 0; i < d->n; i++) {
		/* insertion sort: dicts here are small, and it is stable */
		size_t j = i;
		while (st->sort_keys && j > 0 && key_cmp(&d->keys[order[j - 1]], &d->keys[i]) > 0) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	bool ok = true;
	jbuf_put(b, "{", 1);
	for (size_t i = 0; ok && i < d->n; i++) {
		if (i)
			jbuf_puts(b, st->item_sep);
		if (st->indent >= 0)
			json_newline(b, st, level + 1);
		jv k = d->keys[order[i]];
		write_json_str(b, k.u.str.s, k.u.str.n);
		jbuf_puts(b, st->key_sep);
		ok = write_json(b, d->vals[order[i]], st, level + 1);
	}
	free(order);
	if (st->indent >= 0)
		json_newline(b, st, level);
	jbuf_put(b, "}", 1);
	return ok;
}

static bool write_json(jbuf *b, jv v, const json_style *st, int level)
{
	if (level > JINJA_MAX_DEPTH) {
		snprintf(st->err, st->errlen, "tojson: nesting deeper than %d", JINJA_MAX_DEPTH);
		return false;
	}
	switch (v.kind) {
	case JV_NONE:
		jbuf_puts(b, "null");
		return true;
	case JV_BOOL:
		jbuf_puts(b, v.u.b ? "true" : "false");
		return true;
	case JV_INT:
		jbuf_printf(b, "%lld", (long long)v.u.i);
		return true;
	case JV_FLOAT:
		if (isnan(v.u.f) || isinf(v.u.f))
			jbuf_puts(b, isnan(v.u.f) ? "NaN" : v.u.f < 0 ? "-Infinity" : "Infinity");
		else
			write_float(b, v.u.f);
		return true;
	case JV_STR:
		write_json_str(b, v.u.str.s, v.u.str.n);
		return true;
	case JV_LIST:
		return write_json_list(b, v.u.list, st, level);
	case JV_DICT:
		return write_json_dict(b, v.u.dict, st, level);
	default:
		snprintf(st->err, st->errlen, "tojson: Object of type %s is not JSON serializable", jv_type_name(v));
		return false;
	}
}

bool jv_write_json(jbuf *b, jv v, int indent, const char *item_sep, const char *key_sep, bool sort_keys,
		   char *err, size_t errlen)
{
	json_style st = {indent, item_sep, key_sep, sort_keys, err, errlen};
	return write_json(b, v, &st, 0);
}

uint32_t ju_next(const char *s, size_t n, size_t *at)
{
	const unsigned char *p = (const unsigned char *)s + *at;
	size_t left = n - *at;
	int len = p[0] < 0x80 ? 1 : p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 1;
	if ((size_t)len > left)
		len = 1;
	for (int k = 1; k < len; k++)
		if ((p[k] & 0xc0) != 0x80)
			len = 1;
	*at += (size_t)len;
	if (len == 1)
		return p[0];
	uint32_t c = p[0] & (0x7f >> len);
	for (int k = 1; k < len; k++)
		c = c << 6 | (p[k] & 0x3f);
	return c;
}

size_t ju_length(const char *s, size_t n)
{
	size_t count = 0;
	for (size_t at = 0; at < n; count++)
		ju_next(s, n, &at);
	return count;
}

size_t ju_offset(const char *s, size_t n, size_t i)
{
	size_t at = 0;
	while (i-- > 0 && at < n)
		ju_next(s, n, &at);
	return at;
}

bool ju_is_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
	       c == 0x3000;
}
