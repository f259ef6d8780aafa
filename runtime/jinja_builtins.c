/* The filters, tests, methods and global functions of the Jinja subset, as
 * tables the parser resolves names against. Semantics follow Python and
 * Jinja2 (str.strip strips Unicode whitespace, split() without a separator
 * drops empty fields, `length` counts code points, `items` of undefined is
 * empty) and transformers' own globals and tojson. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <utf8proc.h>

#include "runtime/jinja.h"

#define BUILTIN(name) static bool name(jctx *c, const jnode *at, jv *args, const char **kw, size_t n, jv *out)

/* Argument `pos` (positional) or keyword `name`; false when absent. */
static bool arg(jv *args, const char **kw, size_t n, size_t pos, const char *name, jv *out)
{
	if (pos < n && !kw[pos]) {
		*out = args[pos];
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (kw[i] && strcmp(kw[i], name) == 0) {
			*out = args[i];
			return true;
		}
	return false;
}

/* Keywords must be among `names` (NULL-terminated). */
static bool known_kw(jctx *c, const jnode *at, const char **kw, size_t n, const char *fn, const char *const *names)
{
	for (size_t i = 0; i < n; i++) {
		if (!kw[i])
			continue;
		size_t k = 0;
		while (names[k] && strcmp(names[k], kw[i]) != 0)
			k++;
		if (!names[k])
			return jinja_fail(c, at->line, "%s() got an unexpected keyword argument '%s'", fn, kw[i]);
	}
	return true;
}

static bool need_str(jctx *c, const jnode *at, jv v, const char *what)
{
	if (v.kind == JV_STR)
		return true;
	if (v.kind == JV_UNDEF)
		return jinja_fail(c, at->line, "'%s' is undefined", v.u.str.s ? v.u.str.s : "value");
	return jinja_fail(c, at->line, "%s: expected a string, got %s", what, jv_type_name(v));
}

static bool text(jctx *c, const jnode *at, jbuf *b, jv *out)
{
	if (b->failed)
		return b->over_limit ? jinja_fail(c, at->line, "a string passes %d MiB", JINJA_MAX_OUTPUT >> 20)
				     : jinja_oom(c, at->line);
	*out = jv_str(b->p ? b->p : "", b->n);
	return true;
}

static jbuf new_buf(jctx *c)
{
	return (jbuf){.arena = &c->arena, .limit = JINJA_MAX_OUTPUT};
}

/* str(v) as a string value. */
static bool to_str(jctx *c, const jnode *at, jv v, jv *out)
{
	if (v.kind == JV_STR) {
		*out = v;
		return true;
	}
	jbuf b = new_buf(c);
	jv_write_str(&b, v);
	return text(c, at, &b, out);
}

/* ---- strings ---- */

static bool in_chars(uint32_t ch, const jv *chars)
{
	if (!chars)
		return ju_is_space(ch);
	for (size_t at = 0; at < chars->u.str.n;)
		if (ju_next(chars->u.str.s, chars->u.str.n, &at) == ch)
			return true;
	return false;
}

/* str.strip/lstrip/rstrip: which ends, and the characters (NULL: whitespace). */
static jv strip(jv s, bool left, bool right, const jv *chars)
{
	size_t from = 0, to = s.u.str.n;
	while (left && from < to) {
		size_t next = from;
		if (!in_chars(ju_next(s.u.str.s, to, &next), chars))
			break;
		from = next;
	}
	while (right && to > from) {
		size_t start = to - 1;
		while (start > from && ((unsigned char)s.u.str.s[start] & 0xc0) == 0x80)
			start--;
		size_t at = start;
		if (!in_chars(ju_next(s.u.str.s, to, &at), chars))
			break;
		to = start;
	}
	return jv_str(s.u.str.s + from, to - from);
}

static bool strip_call(jctx *c, const jnode *at, jv *args, const char **kw, size_t n, jv *out, bool l, bool r)
{
	jv chars = {.kind = JV_NONE};
	if (!need_str(c, at, args[0], "strip"))
		return false;
	if (arg(args, kw, n, 1, "chars", &chars) && chars.kind != JV_NONE &&
	    !need_str(c, at, chars, "strip characters"))
		return false;
	*out = strip(args[0], l, r, chars.kind == JV_STR ? &chars : NULL);
	return true;
}

BUILTIN(m_strip)
{
	return strip_call(c, at, args, kw, n, out, true, true);
}

BUILTIN(m_lstrip)
{
	return strip_call(c, at, args, kw, n, out, true, false);
}

BUILTIN(m_rstrip)
{
	return strip_call(c, at, args, kw, n, out, false, true);
}

static bool affix(jctx *c, const jnode *at, jv *args, jv *out, bool start)
{
	if (!need_str(c, at, args[0], "startswith/endswith") || !need_str(c, at, args[1], "startswith/endswith"))
		return false;
	size_t n = args[1].u.str.n, len = args[0].u.str.n;
	const char *s = args[0].u.str.s + (start ? 0 : len - (n <= len ? n : 0));
	*out = jv_bool(n <= len && memcmp(s, args[1].u.str.s, n) == 0);
	return true;
}

BUILTIN(m_startswith)
{
	(void)kw, (void)n;
	return affix(c, at, args, out, true);
}

BUILTIN(m_endswith)
{
	(void)kw, (void)n;
	return affix(c, at, args, out, false);
}

static bool push_str(jctx *c, const jnode *at, jlist *l, const char *s, size_t len)
{
	return jlist_push(&c->arena, l, jv_str(s, len)) || jinja_oom(c, at->line);
}

/* str.split(): on whitespace runs without a separator, else exactly. */
BUILTIN(m_split)
{
	jv sep = {.kind = JV_NONE}, maxv = jv_int(-1);
	if (!need_str(c, at, args[0], "split"))
		return false;
	arg(args, kw, n, 1, "sep", &sep);
	arg(args, kw, n, 2, "maxsplit", &maxv);
	if (sep.kind != JV_NONE && !need_str(c, at, sep, "split separator"))
		return false;
	if (maxv.kind != JV_INT)
		return jinja_fail(c, at->line, "split: maxsplit must be an integer");
	if (sep.kind == JV_STR && sep.u.str.n == 0)
		return jinja_fail(c, at->line, "empty separator");
	jlist *l = jlist_new(&c->arena, 4);
	if (!l)
		return jinja_oom(c, at->line);
	const char *s = args[0].u.str.s;
	size_t len = args[0].u.str.n, pos = 0;
	int64_t left = maxv.u.i;
	if (sep.kind == JV_STR) {
		const char *hit;
		while (left-- != 0 && (hit = memmem(s + pos, len - pos, sep.u.str.s, sep.u.str.n))) {
			if (!push_str(c, at, l, s + pos, (size_t)(hit - s) - pos))
				return false;
			pos = (size_t)(hit - s) + sep.u.str.n;
		}
		if (!push_str(c, at, l, s + pos, len - pos))
			return false;
	} else {
		for (;;) {
			jv rest = strip(jv_str(s + pos, len - pos), true, false, NULL);
			pos = (size_t)(rest.u.str.s - s);
			if (pos == len)
				break;
			if (left-- == 0) {
				jv tail = strip(rest, false, true, NULL);
				if (!push_str(c, at, l, tail.u.str.s, tail.u.str.n))
					return false;
				break;
			}
			size_t end = pos;
			while (end < len) {
				size_t next = end;
				if (ju_is_space(ju_next(s, len, &next)))
					break;
				end = next;
			}
			if (!push_str(c, at, l, s + pos, end - pos))
				return false;
			pos = end;
		}
	}
	*out = (jv){.kind = JV_LIST, .u.list = l};
	return true;
}

/* str.replace(old, new[, count]); an empty old inserts between characters. */
static bool replace(jctx *c, const jnode *at, jv s, jv old, jv new, int64_t count, jv *out)
{
	jbuf b = new_buf(c);
	size_t pos = 0, len = s.u.str.n;
	if (old.u.str.n == 0) {
		while (count-- != 0) {
			jbuf_put(&b, new.u.str.s, new.u.str.n);
			if (pos >= len)
				break;
			size_t from = pos;
			ju_next(s.u.str.s, len, &pos);
			jbuf_put(&b, s.u.str.s + from, pos - from);
		}
	} else {
		const char *hit;
		while (count-- != 0 && (hit = memmem(s.u.str.s + pos, len - pos, old.u.str.s, old.u.str.n))) {
			jbuf_put(&b, s.u.str.s + pos, (size_t)(hit - s.u.str.s) - pos);
			jbuf_put(&b, new.u.str.s, new.u.str.n);
			pos = (size_t)(hit - s.u.str.s) + old.u.str.n;
		}
	}
	jbuf_put(&b, s.u.str.s + pos, len - pos);
	return text(c, at, &b, out);
}

static bool replace_call(jctx *c, const jnode *at, jv s, jv *args, const char **kw, size_t n, jv *out)
{
	jv old, new, count = jv_int(-1);
	if (!arg(args, kw, n, 1, "old", &old) || !arg(args, kw, n, 2, "new", &new))
		return jinja_fail(c, at->line, "replace needs old and new");
	arg(args, kw, n, 3, "count", &count);
	if (!need_str(c, at, old, "replace") || !need_str(c, at, new, "replace"))
		return false;
	if (count.kind != JV_INT)
		return jinja_fail(c, at->line, "replace: count must be an integer");
	return replace(c, at, s, old, new, count.u.i, out);
}

BUILTIN(m_replace)
{
	return need_str(c, at, args[0], "replace") && replace_call(c, at, args[0], args, kw, n, out);
}

static bool change_case(jctx *c, const jnode *at, jv s, bool upper, jv *out)
{
	jbuf b = new_buf(c);
	for (size_t pos = 0; pos < s.u.str.n;) {
		size_t from = pos;
		uint32_t ch = ju_next(s.u.str.s, s.u.str.n, &pos);
		if (pos - from == 1 && ch >= 0x80) { /* an invalid byte stays as it was */
			jbuf_put(&b, s.u.str.s + from, 1);
			continue;
		}
		utf8proc_uint8_t enc[4];
		utf8proc_int32_t mapped = upper ? utf8proc_toupper((utf8proc_int32_t)ch) : utf8proc_tolower((utf8proc_int32_t)ch);
		jbuf_put(&b, (const char *)enc, (size_t)utf8proc_encode_char(mapped, enc));
	}
	return text(c, at, &b, out);
}

BUILTIN(m_upper)
{
	(void)kw, (void)n;
	return need_str(c, at, args[0], "upper") && change_case(c, at, args[0], true, out);
}

BUILTIN(m_lower)
{
	(void)kw, (void)n;
	return need_str(c, at, args[0], "lower") && change_case(c, at, args[0], false, out);
}

/* ---- mappings ---- */

static bool items_of(jctx *c, const jnode *at, jv d, jv *out)
{
	jlist *l = jlist_new(&c->arena, d.kind == JV_UNDEF ? 0 : d.u.dict->n);
	if (!l)
		return jinja_oom(c, at->line);
	for (size_t i = 0; d.kind != JV_UNDEF && i < d.u.dict->n; i++) {
		jlist *pair = jlist_new(&c->arena, 2);
		if (!pair)
			return jinja_oom(c, at->line);
		pair->items[0] = d.u.dict->keys[i];
		pair->items[1] = d.u.dict->vals[i];
		pair->n = 2;
		pair->tuple = true;
		l->items[l->n++] = (jv){.kind = JV_LIST, .u.list = pair};
	}
	*out = (jv){.kind = JV_LIST, .u.list = l};
	return true;
}

static bool need_dict(jctx *c, const jnode *at, jv v, const char *what)
{
	if (v.kind == JV_DICT || v.kind == JV_NS)
		return true;
	return jinja_fail(c, at->line, "%s: expected a mapping, got %s", what, jv_type_name(v));
}

BUILTIN(m_items)
{
	(void)kw, (void)n;
	return need_dict(c, at, args[0], "items") && items_of(c, at, args[0], out);
}

BUILTIN(m_get)
{
	jv key, def = {.kind = JV_NONE};
	if (!need_dict(c, at, args[0], "get") || !arg(args, kw, n, 1, "key", &key))
		return false;
	arg(args, kw, n, 2, "default", &def);
	const jv *v = key.kind == JV_STR ? jdict_get(args[0].u.dict, key.u.str.s, key.u.str.n) : NULL;
	*out = v ? *v : def;
	return true;
}

/* ---- filters ---- */

BUILTIN(f_items)
{
	(void)kw, (void)n;
	/* Jinja2's items filter: undefined gives nothing */
	if (args[0].kind == JV_UNDEF)
		return items_of(c, at, args[0], out);
	return need_dict(c, at, args[0], "items") && items_of(c, at, args[0], out);
}

BUILTIN(f_trim)
{
	jv s = jv_str("", 0), chars = {.kind = JV_NONE};
	if (!to_str(c, at, args[0], &s))
		return false;
	if (arg(args, kw, n, 1, "chars", &chars) && chars.kind != JV_NONE && !need_str(c, at, chars, "trim"))
		return false;
	*out = strip(s, true, true, chars.kind == JV_STR ? &chars : NULL);
	return true;
}

BUILTIN(f_length)
{
	(void)kw, (void)n;
	jv v = args[0];
	switch (v.kind) {
	case JV_UNDEF: *out = jv_int(0); return true;
	case JV_STR: *out = jv_int((int64_t)ju_length(v.u.str.s, v.u.str.n)); return true;
	case JV_LIST: *out = jv_int((int64_t)v.u.list->n); return true;
	case JV_DICT:
	case JV_NS: *out = jv_int((int64_t)v.u.dict->n); return true;
	default: return jinja_fail(c, at->line, "object of type '%s' has no len()", jv_type_name(v));
	}
}

BUILTIN(f_string)
{
	(void)kw, (void)n;
	return to_str(c, at, args[0], out);
}

/* safe marks text as not to be escaped; transformers renders without
 * autoescape, so the text is unchanged. */
BUILTIN(f_safe)
{
	(void)c, (void)at, (void)kw, (void)n;
	*out = args[0];
	return true;
}

BUILTIN(f_lower)
{
	(void)kw, (void)n;
	jv s = jv_str("", 0);
	return to_str(c, at, args[0], &s) && change_case(c, at, s, false, out);
}

BUILTIN(f_upper)
{
	(void)kw, (void)n;
	jv s = jv_str("", 0);
	return to_str(c, at, args[0], &s) && change_case(c, at, s, true, out);
}

BUILTIN(f_replace)
{
	jv s = jv_str("", 0);
	return to_str(c, at, args[0], &s) && replace_call(c, at, s, args, kw, n, out);
}

BUILTIN(f_join)
{
	jv sep = jv_str("", 0), seq = args[0];
	jlist *items;
	if (arg(args, kw, n, 1, "d", &sep) && !need_str(c, at, sep, "join"))
		return false;
	if (seq.kind == JV_LIST) {
		items = seq.u.list;
	} else if (seq.kind == JV_UNDEF) {
		*out = jv_str("", 0);
		return true;
	} else {
		return jinja_fail(c, at->line, "join: expected a list, got %s", jv_type_name(seq));
	}
	jbuf b = new_buf(c);
	for (size_t i = 0; i < items->n; i++) {
		if (i)
			jbuf_put(&b, sep.u.str.s, sep.u.str.n);
		jv_write_str(&b, items->items[i]);
	}
	return text(c, at, &b, out);
}

static bool end_item(jctx *c, const jnode *at, jv v, bool first, jv *out)
{
	if (v.kind == JV_LIST) {
		size_t len = v.u.list->n;
		*out = len ? v.u.list->items[first ? 0 : len - 1] : jv_undef(first ? "first item" : "last item");
		return true;
	}
	if (v.kind == JV_STR) {
		size_t len = ju_length(v.u.str.s, v.u.str.n);
		if (!len) {
			*out = jv_undef(first ? "first item" : "last item");
			return true;
		}
		size_t from = ju_offset(v.u.str.s, v.u.str.n, first ? 0 : len - 1), to = from;
		ju_next(v.u.str.s, v.u.str.n, &to);
		*out = jv_str(v.u.str.s + from, to - from);
		return true;
	}
	return jinja_fail(c, at->line, "%s: expected a list or string, got %s", first ? "first" : "last",
			  jv_type_name(v));
}

BUILTIN(f_first)
{
	(void)kw, (void)n;
	return end_item(c, at, args[0], true, out);
}

BUILTIN(f_last)
{
	(void)kw, (void)n;
	return end_item(c, at, args[0], false, out);
}

BUILTIN(f_default)
{
	(void)c, (void)at;
	jv def = jv_str("", 0), boolean = jv_bool(false);
	arg(args, kw, n, 1, "default_value", &def);
	arg(args, kw, n, 2, "boolean", &boolean);
	bool use = args[0].kind == JV_UNDEF || (jv_truthy(boolean) && !jv_truthy(args[0]));
	*out = use ? def : args[0];
	return true;
}

BUILTIN(f_list)
{
	(void)kw, (void)n;
	jv v = args[0];
	if (v.kind == JV_LIST) {
		jlist *l = jlist_new(&c->arena, v.u.list->n);
		if (!l)
			return jinja_oom(c, at->line);
		memcpy(l->items, v.u.list->items, v.u.list->n * sizeof(jv));
		l->n = v.u.list->n;
		*out = (jv){.kind = JV_LIST, .u.list = l};
		return true;
	}
	jlist *l = jlist_new(&c->arena, 0);
	if (!l)
		return jinja_oom(c, at->line);
	if (v.kind == JV_DICT || v.kind == JV_NS) {
		for (size_t i = 0; i < v.u.dict->n; i++)
			if (!jlist_push(&c->arena, l, v.u.dict->keys[i]))
				return jinja_oom(c, at->line);
	} else if (v.kind == JV_STR) {
		for (size_t pos = 0; pos < v.u.str.n;) {
			size_t from = pos;
			ju_next(v.u.str.s, v.u.str.n, &pos);
			if (!push_str(c, at, l, v.u.str.s + from, pos - from))
				return false;
		}
	} else if (v.kind != JV_UNDEF) {
		return jinja_fail(c, at->line, "'%s' object is not iterable", jv_type_name(v));
	}
	*out = (jv){.kind = JV_LIST, .u.list = l};
	return true;
}

/* transformers' tojson: json.dumps(x, ensure_ascii=False, indent=indent,
 * separators=separators, sort_keys=sort_keys). */
BUILTIN(f_tojson)
{
	static const char *const names[] = {"indent", "separators", "sort_keys", NULL};
	jv indent = {.kind = JV_NONE}, seps = {.kind = JV_NONE}, sort = jv_bool(false);
	if (!known_kw(c, at, kw, n, "tojson", names))
		return false;
	arg(args, kw, n, 1, "indent", &indent);
	arg(args, kw, n, 2, "separators", &seps);
	arg(args, kw, n, 3, "sort_keys", &sort);
	if (indent.kind != JV_NONE && (indent.kind != JV_INT || indent.u.i < 0 || indent.u.i > 64))
		return jinja_fail(c, at->line, "tojson: indent must be an integer from 0 to 64");
	int ind = indent.kind == JV_INT ? (int)indent.u.i : -1;
	char item_sep[64], key_sep[64];
	snprintf(item_sep, sizeof item_sep, "%s", ind >= 0 ? "," : ", ");
	snprintf(key_sep, sizeof key_sep, ": ");
	if (seps.kind != JV_NONE) {
		if (seps.kind != JV_LIST || seps.u.list->n != 2 || seps.u.list->items[0].kind != JV_STR ||
		    seps.u.list->items[1].kind != JV_STR || seps.u.list->items[0].u.str.n >= sizeof item_sep ||
		    seps.u.list->items[1].u.str.n >= sizeof key_sep)
			return jinja_fail(c, at->line, "tojson: separators must be two short strings");
		snprintf(item_sep, sizeof item_sep, "%.*s", (int)seps.u.list->items[0].u.str.n, seps.u.list->items[0].u.str.s);
		snprintf(key_sep, sizeof key_sep, "%.*s", (int)seps.u.list->items[1].u.str.n, seps.u.list->items[1].u.str.s);
	}
	jbuf b = new_buf(c);
	char err[160];
	if (!jv_write_json(&b, args[0], ind, item_sep, key_sep, jv_truthy(sort), err, sizeof err))
		return jinja_fail(c, at->line, "%s", err);
	return text(c, at, &b, out);
}

/* ---- tests ---- */

#define TEST(name, expr)                                      \
	BUILTIN(name)                                         \
	{                                                     \
		(void)c, (void)at, (void)kw, (void)n;         \
		jv v = args[0];                               \
		*out = jv_bool(expr);                         \
		return true;                                  \
	}

TEST(t_defined, v.kind != JV_UNDEF)
TEST(t_undefined, v.kind == JV_UNDEF)
TEST(t_none, v.kind == JV_NONE)
TEST(t_string, v.kind == JV_STR)
TEST(t_mapping, v.kind == JV_DICT || v.kind == JV_NS)
/* Undefined defines __iter__, so Jinja2 counts it iterable */
TEST(t_iterable, v.kind == JV_STR || v.kind == JV_LIST || v.kind == JV_DICT || v.kind == JV_UNDEF)
TEST(t_sequence, v.kind == JV_STR || v.kind == JV_LIST || v.kind == JV_DICT || v.kind == JV_UNDEF)
TEST(t_number, v.kind == JV_INT || v.kind == JV_FLOAT || v.kind == JV_BOOL)
TEST(t_integer, v.kind == JV_INT)
TEST(t_float, v.kind == JV_FLOAT)
TEST(t_boolean, v.kind == JV_BOOL)
TEST(t_true, v.kind == JV_BOOL && v.u.b)
TEST(t_false, v.kind == JV_BOOL && !v.u.b)

/* ---- global functions ---- */

/* transformers' raise_exception: the template's own error message */
BUILTIN(g_raise_exception)
{
	(void)kw, (void)n;
	jv msg;
	if (!to_str(c, at, args[0], &msg))
		return false;
	*out = msg;
	return jinja_fail(c, at->line, "raise_exception: %.*s", (int)(msg.u.str.n < 400 ? msg.u.str.n : 400),
			  msg.u.str.s);
}

BUILTIN(g_namespace)
{
	jdict *d = jdict_new(&c->arena, n);
	if (!d)
		return jinja_oom(c, at->line);
	for (size_t i = 0; i < n; i++) {
		if (!kw[i])
			return jinja_fail(c, at->line, "namespace() takes keyword arguments only here");
		if (!jdict_set(&c->arena, d, jv_str(kw[i], strlen(kw[i])), args[i]))
			return jinja_oom(c, at->line);
	}
	*out = (jv){.kind = JV_NS, .u.dict = d};
	return true;
}

BUILTIN(g_range)
{
	int64_t v[3] = {0, 0, 1};
	for (size_t i = 0; i < n; i++) {
		if (kw[i] || args[i].kind != JV_INT)
			return jinja_fail(c, at->line, "range() takes integer arguments");
		v[n == 1 ? 1 : i] = args[i].u.i;
	}
	if (v[2] == 0)
		return jinja_fail(c, at->line, "range() arg 3 must not be zero");
	int64_t first;
	double span = ((double)v[1] - (double)v[0]) / (double)v[2];
	if (span > JINJA_MAX_STEPS)
		return jinja_fail(c, at->line, "range() of more than %d items", JINJA_MAX_STEPS);
	size_t count = span <= 0 ? 0 : (size_t)((v[1] - v[0] + v[2] - (v[2] > 0 ? 1 : -1)) / v[2]);
	jlist *l = jlist_new(&c->arena, count);
	if (!l)
		return jinja_oom(c, at->line);
	first = v[0];
	for (size_t i = 0; i < count; i++)
		l->items[l->n++] = jv_int(first + (int64_t)i * v[2]);
	*out = (jv){.kind = JV_LIST, .u.list = l};
	return true;
}

/* transformers' strftime_now: datetime.now().strftime(format) */
BUILTIN(g_strftime_now)
{
	(void)kw, (void)n;
	if (!need_str(c, at, args[0], "strftime_now"))
		return false;
	char fmt[256], buf[512];
	snprintf(fmt, sizeof fmt, "%.*s", (int)args[0].u.str.n, args[0].u.str.s);
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	size_t len = strftime(buf, sizeof buf, fmt, &tm);
	jbuf b = new_buf(c);
	jbuf_put(&b, buf, len);
	return text(c, at, &b, out);
}

static const jbuiltin filters[] = {
	{"default", f_default, 1, 3}, {"d", f_default, 1, 3},	    {"first", f_first, 1, 1},
	{"items", f_items, 1, 1},     {"join", f_join, 1, 2},	    {"last", f_last, 1, 1},
	{"length", f_length, 1, 1},   {"count", f_length, 1, 1},    {"list", f_list, 1, 1},
	{"lower", f_lower, 1, 1},     {"replace", f_replace, 3, 4}, {"safe", f_safe, 1, 1},
	{"string", f_string, 1, 1},   {"tojson", f_tojson, 1, 4},   {"trim", f_trim, 1, 2},
	{"upper", f_upper, 1, 1},
};

static const jbuiltin tests[] = {
	{"defined", t_defined, 1, 1}, {"undefined", t_undefined, 1, 1}, {"none", t_none, 1, 1},
	{"string", t_string, 1, 1},   {"mapping", t_mapping, 1, 1},	{"iterable", t_iterable, 1, 1},
	{"sequence", t_sequence, 1, 1}, {"number", t_number, 1, 1},	{"integer", t_integer, 1, 1},
	{"float", t_float, 1, 1},     {"boolean", t_boolean, 1, 1},	{"true", t_true, 1, 1},
	{"false", t_false, 1, 1},
};

static const jbuiltin methods[] = {
	{"startswith", m_startswith, 2, 2}, {"endswith", m_endswith, 2, 2}, {"split", m_split, 1, 3},
	{"strip", m_strip, 1, 2},	    {"lstrip", m_lstrip, 1, 2},	    {"rstrip", m_rstrip, 1, 2},
	{"replace", m_replace, 3, 4},	    {"upper", m_upper, 1, 1},	    {"lower", m_lower, 1, 1},
	{"items", m_items, 1, 1},	    {"get", m_get, 2, 3},
};

static const jbuiltin globals[] = {
	{"raise_exception", g_raise_exception, 1, 1},
	{"namespace", g_namespace, 0, 64},
	{"range", g_range, 1, 3},
	{"strftime_now", g_strftime_now, 1, 1},
};

static const struct {
	const jbuiltin *v;
	size_t n;
} tables[] = {
	[JB_FILTER] = {filters, sizeof filters / sizeof filters[0]},
	[JB_TEST] = {tests, sizeof tests / sizeof tests[0]},
	[JB_METHOD] = {methods, sizeof methods / sizeof methods[0]},
	[JB_GLOBAL] = {globals, sizeof globals / sizeof globals[0]},
};

int jinja_builtin_find(jbuiltin_table t, const char *name)
{
	for (size_t i = 0; i < tables[t].n; i++)
		if (strcmp(tables[t].v[i].name, name) == 0)
			return (int)i;
	return -1;
}

const jbuiltin *jinja_builtin(jbuiltin_table t, int index)
{
	return &tables[t].v[index];
}
