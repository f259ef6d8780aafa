/* The Jinja lexer: text and tags, with Jinja2's whitespace control as
 * transformers configures it (trim_blocks: the newline after a block or
 * comment tag goes; lstrip_blocks: spaces and tabs between a line's start
 * and a block or comment tag go; `{%-`/`-%}` and the like strip all
 * whitespace on their side). Newlines are normalized to "\n" and one
 * trailing newline is dropped, as Jinja2's lexer does. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/jinja.h"

typedef struct {
	jarena *arena;
	const char *s;
	size_t n, at;
	int line;
	jtok *toks;
	size_t ntoks, cap;
	char *err;
	size_t errlen;
} lexer;

static bool lex_fail(lexer *L, const char *fmt, const char *what)
{
	char msg[160];
	snprintf(msg, sizeof msg, fmt, what);
	snprintf(L->err, L->errlen, "%d: %s", L->line, msg);
	return false;
}

static jtok *push(lexer *L, jtok_kind kind)
{
	if (L->ntoks == L->cap) {
		size_t cap = L->cap ? L->cap * 2 : 256;
		jtok *t = jarena_alloc(L->arena, cap * sizeof *t);
		if (!t)
			return NULL;
		if (L->ntoks)
			memcpy(t, L->toks, L->ntoks * sizeof *t);
		L->toks = t;
		L->cap = cap;
	}
	jtok *t = &L->toks[L->ntoks++];
	*t = (jtok){.kind = kind, .line = L->line};
	return t;
}

static void count_lines(lexer *L, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		L->line += L->s[i] == '\n';
}

/* The next tag opening at or after from: "{{", "{%" or "{#"; n if none. */
static size_t next_tag(const lexer *L, size_t from)
{
	for (size_t i = from; i + 1 < L->n; i++)
		if (L->s[i] == '{' && (L->s[i + 1] == '{' || L->s[i + 1] == '%' || L->s[i + 1] == '#'))
			return i;
	return L->n;
}

/* Emits the text s[from, to) before a tag opening at `to`. */
static bool emit_text(lexer *L, size_t from, size_t to)
{
	size_t end = to;
	if (to < L->n) {
		char kind = L->s[to + 1];
		if (to + 2 < L->n && L->s[to + 2] == '-') {
			while (end > from && isspace((unsigned char)L->s[end - 1]))
				end--;
		} else if (kind == '%' || kind == '#') {
			size_t ls = end;
			while (ls > from && (L->s[ls - 1] == ' ' || L->s[ls - 1] == '\t'))
				ls--;
			/* lstrip_blocks: only when nothing but blanks precedes the tag on its line */
			if ((ls > from && L->s[ls - 1] == '\n') || (ls == from && (from == 0 || L->s[from - 1] == '\n')))
				end = ls;
		}
	}
	if (end > from) {
		jtok *t = push(L, TK_TEXT);
		if (!t)
			return lex_fail(L, "%s", "out of memory");
		t->s = L->s + from;
		t->n = end - from;
	}
	count_lines(L, from, to);
	return true;
}

/* After a tag ending just before `at`: `-` strips all whitespace, a block
 * or comment tag drops one newline. Returns where the next text starts. */
static size_t after_tag(const lexer *L, size_t at, bool dash, bool block)
{
	if (dash)
		while (at < L->n && isspace((unsigned char)L->s[at]))
			at++;
	else if (block && at < L->n && L->s[at] == '\n')
		at++;
	return at;
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void put_utf8(char *out, size_t *n, uint32_t c)
{
	if (c < 0x80) {
		out[(*n)++] = (char)c;
	} else if (c < 0x800) {
		out[(*n)++] = (char)(0xc0 | c >> 6);
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		out[(*n)++] = (char)(0xe0 | c >> 12);
		out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	} else {
		out[(*n)++] = (char)(0xf0 | c >> 18);
		out[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3f));
		out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[(*n)++] = (char)(0x80 | (c & 0x3f));
	}
}

/* A backslash escape at s[*i] (just after the backslash), Python's
 * unicode-escape rules as Jinja2 applies them; unknown escapes stay as
 * written. */
static void unescape(const char *s, size_t end, size_t *i, char *out, size_t *n)
{
	static const char simple[][2] = {{'n', '\n'}, {'t', '\t'}, {'r', '\r'}, {'\\', '\\'}, {'\'', '\''},
					 {'"', '"'},  {'b', '\b'}, {'f', '\f'}, {'v', '\v'},  {'a', '\a'},
					 {'0', '\0'}};
	char c = s[*i];
	for (size_t k = 0; k < sizeof simple / sizeof simple[0]; k++)
		if (c == simple[k][0]) {
			out[(*n)++] = simple[k][1];
			(*i)++;
			return;
		}
	int digits = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
	uint32_t cp = 0;
	int k = 0;
	for (; digits && k < digits && *i + 1 + (size_t)k < end && hex_digit(s[*i + 1 + (size_t)k]) >= 0; k++)
		cp = cp << 4 | (uint32_t)hex_digit(s[*i + 1 + (size_t)k]);
	if (digits && k == digits && cp <= 0x10ffff) {
		put_utf8(out, n, cp);
		*i += 1 + (size_t)digits;
		return;
	}
	out[(*n)++] = '\\';
}

static bool lex_string(lexer *L)
{
	char q = L->s[L->at];
	size_t start = L->at + 1, end = start;
	while (end < L->n && L->s[end] != q)
		end += L->s[end] == '\\' && end + 1 < L->n ? 2 : 1;
	if (end >= L->n)
		return lex_fail(L, "%s", "unterminated string");
	char *out = jarena_alloc(L->arena, end - start + 1);
	jtok *t = push(L, TK_STRING);
	if (!out || !t)
		return lex_fail(L, "%s", "out of memory");
	size_t n = 0;
	for (size_t i = start; i < end;) {
		if (L->s[i] == '\\') {
			i++;
			unescape(L->s, end, &i, out, &n);
		} else {
			out[n++] = L->s[i++];
		}
	}
	t->s = out;
	t->n = n;
	count_lines(L, start, end);
	L->at = end + 1;
	return true;
}

static bool lex_number(lexer *L)
{
	size_t start = L->at, i = start;
	bool is_float = false;
	while (i < L->n && (isdigit((unsigned char)L->s[i]) || L->s[i] == '_'))
		i++;
	if (i + 1 < L->n && L->s[i] == '.' && isdigit((unsigned char)L->s[i + 1])) {
		is_float = true;
		for (i++; i < L->n && (isdigit((unsigned char)L->s[i]) || L->s[i] == '_'); i++)
			;
	}
	if (i < L->n && (L->s[i] == 'e' || L->s[i] == 'E')) {
		size_t j = i + 1 + (i + 1 < L->n && (L->s[i + 1] == '+' || L->s[i + 1] == '-'));
		if (j < L->n && isdigit((unsigned char)L->s[j])) {
			is_float = true;
			for (i = j; i < L->n && isdigit((unsigned char)L->s[i]); i++)
				;
		}
	}
	char buf[64];
	size_t n = 0;
	for (size_t k = start; k < i && n + 1 < sizeof buf; k++)
		if (L->s[k] != '_')
			buf[n++] = L->s[k];
	buf[n] = '\0';
	jtok *t = push(L, is_float ? TK_FLOAT : TK_INT);
	if (!t)
		return lex_fail(L, "%s", "out of memory");
	char *end;
	if (is_float) {
		t->f = strtod(buf, &end);
	} else {
		t->i = strtoll(buf, &end, 10);
		if (i - start >= 19 && strcmp(buf, "9223372036854775807") > 0)
			return lex_fail(L, "integer %s is too large", buf);
	}
	L->at = i;
	return true;
}

/* Operators, longest first so "//" wins over "/". */
static const char *const ops[] = {"**", "//", "==", "!=", "<=", ">=", "(", ")", "[", "]", "{", "}", ",", ".",
				  ":",	"|",  "~",  "+",  "-",	"*",  "/", "%", "<", ">", "="};

/* Lexes one tag's inside up to its closer ("}}" or "%}"); *dash tells
 * whether the closer had a `-`. */
static bool lex_tag(lexer *L, char closer, bool *dash)
{
	int braces = 0; /* a dict literal's "}}" does not close "{{" */
	for (;;) {
		while (L->at < L->n && isspace((unsigned char)L->s[L->at]))
			L->line += L->s[L->at++] == '\n';
		if (L->at >= L->n)
			return lex_fail(L, "%s", closer == '}' ? "'{{' is never closed" : "'{%' is never closed");
		const char *p = L->s + L->at;
		size_t left = L->n - L->at;
		*dash = left >= 3 && p[0] == '-' && p[1] == closer && p[2] == '}';
		if (braces == 0 && (*dash || (left >= 2 && p[0] == closer && p[1] == '}'))) {
			L->at += *dash ? 3 : 2;
			return true;
		}
		if (*p == '\'' || *p == '"') {
			if (!lex_string(L))
				return false;
			continue;
		}
		if (isdigit((unsigned char)*p)) {
			if (!lex_number(L))
				return false;
			continue;
		}
		if (isalpha((unsigned char)*p) || *p == '_') {
			size_t len = 1;
			while (len < left && (isalnum((unsigned char)p[len]) || p[len] == '_'))
				len++;
			jtok *t = push(L, TK_NAME);
			if (!t)
				return lex_fail(L, "%s", "out of memory");
			t->s = p;
			t->n = len;
			L->at += len;
			continue;
		}
		size_t k = 0;
		while (k < sizeof ops / sizeof ops[0] && strncmp(p, ops[k], strlen(ops[k])) != 0)
			k++;
		if (k == sizeof ops / sizeof ops[0]) {
			char what[8] = {*p, 0};
			return lex_fail(L, "unexpected character '%s'", what);
		}
		jtok *t = push(L, TK_OP);
		if (!t)
			return lex_fail(L, "%s", "out of memory");
		t->s = ops[k];
		t->n = strlen(ops[k]);
		braces += *p == '{' ? 1 : *p == '}' && braces > 0 ? -1 : 0;
		L->at += t->n;
	}
}

static bool lex_comment(lexer *L, bool *dash)
{
	for (size_t i = L->at; i + 1 < L->n; i++)
		if (L->s[i] == '#' && L->s[i + 1] == '}') {
			*dash = i > L->at && L->s[i - 1] == '-';
			count_lines(L, L->at, i);
			L->at = i + 2;
			return true;
		}
	return lex_fail(L, "%s", "'{#' is never closed");
}

/* "\r\n" and "\r" to "\n"; one trailing newline off. */
static char *normalize(jarena *a, const char *src, size_t len, size_t *n)
{
	char *s = jarena_alloc(a, len + 1);
	if (!s)
		return NULL;
	*n = 0;
	for (size_t i = 0; i < len; i++) {
		if (src[i] == '\r' && i + 1 < len && src[i + 1] == '\n')
			continue;
		s[(*n)++] = src[i] == '\r' ? '\n' : src[i];
	}
	if (*n && s[*n - 1] == '\n')
		(*n)--;
	return s;
}

bool jinja_lex(jarena *a, const char *src, size_t len, jtok **toks, size_t *ntoks, char *err, size_t errlen)
{
	lexer L = {.arena = a, .line = 1, .err = err, .errlen = errlen};
	if (!(L.s = normalize(a, src, len, &L.n)))
		return lex_fail(&L, "%s", "out of memory");
	size_t text = 0;
	while (text <= L.n) {
		size_t tag = next_tag(&L, text);
		if (!emit_text(&L, text, tag))
			return false;
		if (tag >= L.n)
			break;
		char kind = L.s[tag + 1];
		L.at = tag + 2 + (tag + 2 < L.n && L.s[tag + 2] == '-');
		bool dash = false;
		if (kind == '#') {
			if (!lex_comment(&L, &dash))
				return false;
		} else {
			jtok *open = push(&L, kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN);
			if (!open || !lex_tag(&L, kind == '{' ? '}' : '%', &dash))
				return open ? false : lex_fail(&L, "%s", "out of memory");
			if (!push(&L, kind == '{' ? TK_VAR_END : TK_BLOCK_END))
				return lex_fail(&L, "%s", "out of memory");
		}
		size_t next = after_tag(&L, L.at, dash, kind != '{');
		count_lines(&L, L.at, next);
		text = next;
	}
	if (!push(&L, TK_EOF))
		return lex_fail(&L, "%s", "out of memory");
	*toks = L.toks;
	*ntoks = L.ntoks;
	return true;
}
