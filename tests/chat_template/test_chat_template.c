/* runtime/chat_template.h against the reference renders in
 * tests/fixtures/chat_template (tools/oracle/make_chat_template_refs.js),
 * and its semantics and refusals case by case:
 *   test_chat_template refs TEMPLATE.jinja REFS.json
 *     every case renders to the reference text byte for byte
 *   test_chat_template units
 *     whitespace control, loops, namespaces, slicing, filters, undefined,
 *     parse-time refusals and run-time errors, each naming the line */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/chat_template.h"
#include "tests/check.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	if (f && fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		rewind(f);
		buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = '\0';
			*len = (size_t)n;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	if (f)
		fclose(f);
	CHECK(buf != NULL, "%s: cannot read", path);
	return buf;
}

/* Where two texts first differ, for the message. */
static size_t first_difference(const char *a, size_t na, const char *b, size_t nb)
{
	size_t i = 0;
	while (i < na && i < nb && a[i] == b[i])
		i++;
	return i;
}

static int run_refs(const char *tpl_path, const char *refs_path)
{
	size_t len;
	char *src = slurp(tpl_path, &len), err[512];
	json_object *refs = json_object_from_file(refs_path);
	CHECK(refs != NULL, "%s: cannot read", refs_path);
	halo_chat_template *t = src ? halo_chat_template_parse(src, len, tpl_path, err, sizeof err) : NULL;
	CHECK(t != NULL, "parse: %s", err);
	json_object *cases = json_object_object_get(refs, "cases");
	size_t n = json_object_array_length(cases);
	CHECK(n >= 20, "%s: only %zu cases", refs_path, n);
	for (size_t i = 0; t && i < n; i++) {
		json_object *c = json_object_array_get_idx(cases, i), *want = json_object_object_get(c, "text");
		const char *name = json_object_get_string(json_object_object_get(c, "name"));
		char *out;
		size_t out_len, want_len = (size_t)json_object_get_string_len(want);
		if (!halo_chat_template_render(t, json_object_object_get(c, "context"), &out, &out_len, err,
					       sizeof err)) {
			CHECK(0, "%s: %s: render: %s", tpl_path, name, err);
			continue;
		}
		const char *w = json_object_get_string(want);
		size_t at = first_difference(out, out_len, w, want_len);
		CHECK(out_len == want_len && at == out_len, "%s: %s: differs at byte %zu:\n got: %.60s\nwant: %.60s",
		      tpl_path, name, at, out + (at > 20 ? at - 20 : 0), w + (at > 20 ? at - 20 : 0));
		free(out);
	}
	halo_chat_template_free(t);
	json_object_put(refs);
	free(src);
	return check_failures ? 1 : 0;
}

/* A template, its context (JSON), and the text it renders to, or (want
 * starting with '!') the error it gives. Expected texts come from
 * @huggingface/jinja where it agrees with Jinja2; the cases marked Jinja2
 * are where it does not, and follow Python/Jinja2 (docs/chat_template.md). */
typedef struct {
	const char *src, *ctx, *want;
} unit;

static const unit units[] = {
	/* whitespace control: trim_blocks, lstrip_blocks, dashes, comments */
	{"  {% if true %}\n  x\n  {% endif %}\n  y {# c #}\n  z", "{}", "  x\n  y   z"},
	{"a  {%- if true -%}  b  {%- endif -%}  c", "{}", "abc"},
	{"a {{- ' x ' -}} b\n", "{}", "a x b"},
	{"{# one\ntwo #}\nx\n", "{}", "x"},
	{"line\r\nnext\r\n", "{}", "line\nnext"},
	{"{% for x in [1, 2] %}\n{{ x }}\n{% endfor %}\n", "{}", "1\n2\n"},
	/* loops */
	{"{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.first }}{{ loop.last }}"
	 "{{ loop.length }};{% endfor %}",
	 "{}", "103TrueFalse3;212FalseFalse3;321FalseTrue3;"},
	{"{% for x in [1, 2, 3, 4] if x is even %}{% endfor %}", "{}", "!:1: unknown test 'even'"},
	{"{% for x in [1, 2, 3, 4] if x > 1 %}{{ loop.index }}{{ x }}{% else %}none{% endfor %}", "{}",
	 "122334"},
	{"{% for x in [] %}{{ x }}{% else %}none{% endfor %}", "{}", "none"},
	{"{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }},{% endfor %}", "{}", "-2,1-3,2-,"},
	{"{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
	 "{% endif %}{{ x }}{% endfor %}",
	 "{}", "13"},
	{"{% for k, v in d|items %}{{ k }}={{ v }};{% endfor %}", "{\"d\": {\"a\": 1, \"b\": \"x\"}}", "a=1;b=x;"},
	{"{% for k in d %}{{ k }}{% endfor %}", "{\"d\": {\"a\": 1, \"b\": 2}}", "ab"},
	{"{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}", "{}", "1"},
	/* namespace */
	{"{% set ns = namespace(n=0, s='') %}{% for i in [1, 2, 3] %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
	 "{}", "6"},
	{"{% set x = 1 %}{% set x.y = 2 %}", "{}", "!:1: cannot assign attribute on non-namespace object 'x'"},
	/* slicing and indexing */
	{"{{ 'abcdef'[::-1] }} {{ 'abcdef'[1:4] }} {{ [1, 2, 3][-1] }} {{ [1, 2, 3, 4][1:] }} {{ 'héllo'[1] }}",
	 "{}", "fedcba bcd 3 [2, 3, 4] é"},
	{"{{ [1, 2, 3, 4, 5][::2] }}{{ [1, 2, 3][5] }}{{ 'x'[1:] }}", "{}", "[1, 3, 5]"},
	/* filters */
	{"{{ '  a b  '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'ÀB'|lower }}|{{ 'àb'|upper }}|{{ 'a-b-c'|replace('-', '+') }}",
	 "{}", "a b|a|àb|ÀB|a+b+c"},
	{"{{ [1, 2]|join(', ') }}|{{ [1, 2]|first }}|{{ [1, 2]|last }}|{{ u|default('d') }}|{{ 'héllo'|length }}",
	 "{}", "1, 2|1|2|d|5"},
	{"{{ {'a': [1, 2.5, true, none], 'é': '<\"\\\\>'}|tojson }}", "{}",
	 "{\"a\": [1, 2.5, true, null], \"é\": \"<\\\"\\\\>\"}"},
	{"{{ x|tojson(indent=2) }}", "{\"x\": {\"a\": [1, 2], \"b\": {}}}", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}"},
	/* Jinja2: json.dumps of a float keeps ".0"; sort_keys and separators */
	{"{{ 2.0|tojson }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true, separators=(',', ':')) }}", "{}",
	 "2.0 {\"a\":2,\"b\":1}"},
	{"{{ u|tojson }}", "{}", "!:1: tojson: Object of type Undefined is not JSON serializable"},
	/* Jinja2: str() of Python values */
	{"{{ true }} {{ none }} {{ 1.0 }} {{ [1, 'a'] }} {{ {'a': none} }} {{ true|string }} {{ 3|string }}", "{}",
	 "True None 1.0 [1, 'a'] {'a': None} True 3"},
	{"{{ ['it\\'s'] }} {{ (1,) }} {{ 1e20 }} {{ 0.1 + 0.2 }}", "{}", "[\"it's\"] (1,) 1e+20 0.30000000000000004"},
	/* string methods */
	{"{{ ' a  b '.split() }}{{ 'a,b,,c'.split(',') }}{{ 'a,b,c'.split(',', 1) }}", "{}",
	 "['a', 'b']['a', 'b', '', 'c']['a', 'b,c']"},
	{"{{ '\\n\\nx\\n'.strip('\\n') }}|{{ '  x '.lstrip() }}|{{ '  x '.rstrip() }}|{{ 'ab'.startswith('a') }}"
	 "{{ 'ab'.endswith('a') }}|{{ 'aXa'.replace('a', 'b') }}|{{ 'Ab'.upper() }}{{ 'Ab'.lower() }}",
	 "{}", "x|x |  x|TrueFalse|bXb|ABab"},
	{"{{ d.get('a') }}{{ d.get('z', 'none') }}{{ d.items()|list }}", "{\"d\": {\"a\": 1}}", "1none[('a', 1)]"},
	/* operators */
	{"{{ 7 // 2 }} {{ 7 / 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 'a' ~ 1 ~ none }} {{ 1 == 1.0 }}",
	 "{}", "3 3.5 -4 2 1024 a1None True"},
	{"{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 'z' not in 'abc' }}{{ 'x' in u }}", "{}",
	 "TrueTrueTrueTrueFalse"},
	{"{{ 'yes' if x else 'no' }} {{ x or 'default' }} {{ x and 'both' }} {{ not x }}", "{\"x\": 0}",
	 "no default 0 True"},
	{"{{ 1 + 'a' }}", "{}", "!:1: unsupported operand type(s) for +: 'int' and 'str'"},
	{"{{ 9223372036854775807 + 1 }}", "{}", "!:1: integer overflow in '+'"},
	{"{{ 1 // 0 }}", "{}", "!:1: integer division or modulo by zero"},
	/* undefined: prints empty, is not defined, fails on use */
	{"[{{ u }}]{{ u is defined }}{{ u is undefined }}{{ m.missing is defined }}{{ u|length }}", "{\"m\": {}}",
	 "[]FalseTrueFalse0"},
	{"\n{{ u.x }}", "{}", "!:2: 'u' is undefined"},
	{"{{ u + 'a' }}", "{}", "!:1: 'u' is undefined"},
	{"{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 'a' is sequence }}"
	 "{{ 1.5 is number }}{{ true is boolean }}{{ false is false }}{{ 1 is false }}",
	 "{}", "TrueTrueTrueTrueTrueTrueTrueTrueFalse"},
	/* macros */
	{"{% macro m(a, b=2) %}[{{ a }}{{ b }}{{ c }}]{% endmacro %}{{ m(1) }}{{ m(1, b=3)|trim }}{{ m(b=4) }}",
	 "{\"c\": \"g\"}", "[12g][13g][4g]"},
	{"{% macro m() %}x{% endmacro %}{{ m(1) }}", "{}", "!:1: macro 'm' takes not more than 0 argument(s)"},
	/* raise_exception and strftime_now */
	{"a\n{{ raise_exception('No messages provided.') }}", "{}", "!:2: raise_exception: No messages provided."},
	{"{{ strftime_now('%Y')|length }}", "{}", "4"},
	/* parse-time refusals name the line and the construct */
	{"x\n{% include 'other.jinja' %}", "{}", "!:2: unsupported tag 'include'"},
	{"{{ x|xmlattr }}", "{}", "!:1: unknown filter 'xmlattr'"},
	{"{{ x is divisibleby(3) }}", "{}", "!:1: unknown test 'divisibleby'"},
	{"{{ messages.append(1) }}", "{}", "!:1: unsupported method 'append'"},
	{"{{ cycler(1) }}", "{}", "!:1: unknown function 'cycler'"},
	{"{% break %}", "{}", "!:1: 'break' outside a for loop"},
	{"{% if x %}\n", "{}", "!:1: missing '{% endif %}'"},
	{"{% set x %}y{% endset %}", "{}", "!:1: unsupported block set (set without '=')"},
	{"{{ 'abc }}", "{}", "!:1: unterminated string"},
	{"{{ x|trim(1, 2) }}", "{}", "!:1: filter 'trim' takes 0 to 1 arguments, given 2"},
	{"{% for x in y recursive %}{% endfor %}", "{}", "!:1: unsupported recursive for loop"},
	{"{{ 1 < 2 < 3 }}", "{}", "!:1: chained comparison (a < b < c) is not supported; write (a < b) and (b < c)"},
	{"{{ (1 < 2) and (2 < 3) }}", "{}", "True"},
	/* bounds */
	{"{% for i in range(100000000) %}{% endfor %}", "{}", "!:1: range() of more than 20000000 items"},
	{"{% macro m(n) %}{{ m(n) }}{% endmacro %}{{ m(1) }}", "{}", "!:1: macro calls nest deeper than 200"},
	{"{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}"
	 "{% endfor %}",
	 "{}", "!:1: rendering needs more than 512 MiB of memory"},
};

static void run_unit(size_t i, const unit *u)
{
	char err[512], *out = NULL;
	size_t len = 0;
	json_object *ctx = json_tokener_parse(u->ctx);
	halo_chat_template *t = halo_chat_template_parse(u->src, strlen(u->src), "unit", err, sizeof err);
	bool ok = t && halo_chat_template_render(t, ctx, &out, &len, err, sizeof err);
	if (u->want[0] == '!') {
		char want[512];
		snprintf(want, sizeof want, "unit%s", u->want + 1);
		CHECK(!ok && strcmp(err, want) == 0, "unit %zu (%s): error '%s', want '%s'", i, u->src, ok ? "" : err,
		      want);
	} else {
		CHECK(ok, "unit %zu (%s): %s", i, u->src, err);
		CHECK(!ok || (len == strlen(u->want) && strcmp(out, u->want) == 0), "unit %zu (%s): '%s', want '%s'", i,
		      u->src, out ? out : "", u->want);
	}
	free(out);
	halo_chat_template_free(t);
	json_object_put(ctx);
}

/* halo_chat_template_apply builds the context apply_chat_template does. */
static void check_apply(void)
{
	static const char src[] = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
				  "{{ tools is none }}{{ enable_thinking is defined }}{{ bos_token }}"
				  "{% if add_generation_prompt %}<gen>{% endif %}";
	char err[256], *out;
	size_t len;
	halo_chat_template *t = halo_chat_template_parse(src, sizeof src - 1, "apply", err, sizeof err);
	CHECK(t != NULL, "parse: %s", err);
	halo_chat_message msgs[] = {{"system", "S"}, {"user", "héllo"}};
	halo_chat_options o = {.add_generation_prompt = true, .enable_thinking = -1, .bos_token = "<s>"};
	CHECK(halo_chat_template_apply(t, msgs, 2, &o, &out, &len, err, sizeof err), "apply: %s", err);
	CHECK(strcmp(out, "<system>S<user>héllo" "TrueFalse<s><gen>") == 0, "apply gives '%s'", out);
	free(out);
	o = (halo_chat_options){.enable_thinking = 0};
	CHECK(halo_chat_template_apply(t, msgs, 1, &o, &out, &len, err, sizeof err), "apply: %s", err);
	CHECK(strcmp(out, "<system>STrueTrue") == 0, "apply gives '%s'", out);
	free(out);
	halo_chat_template_free(t);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "refs") == 0)
		return run_refs(argv[2], argv[3]);
	if (argc == 2 && strcmp(argv[1], "units") == 0) {
		for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
			run_unit(i, &units[i]);
		check_apply();
		return check_failures ? 1 : 0;
	}
	fprintf(stderr, "usage: test_chat_template refs TEMPLATE REFS | units\n");
	return 2;
}
