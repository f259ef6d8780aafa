/* The Jinja subset behind runtime/chat_template.h: values, the lexer's
 * tokens, the parsed tree and the evaluator's entry points. Internal to the
 * runtime (jinja_*.c, chat_template.c); docs/chat_template.md lists what the
 * subset covers and how it follows Jinja2 as transformers configures it.
 *
 * Ownership: everything a parse makes (tokens, tree, literals) lives in the
 * template's arena and dies with the template; everything a render makes
 * (values, strings, scopes) lives in that render's arena. Values never own
 * memory, so they are copied freely by value. */
#ifndef HALO_RUNTIME_JINJA_H
#define HALO_RUNTIME_JINJA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arena ---- */

typedef struct jarena_chunk jarena_chunk;
typedef struct {
	jarena_chunk *head;
	size_t used, limit; /* bytes handed out so far, and the most allowed */
} jarena;

/* NULL when the arena would pass its limit (or malloc fails). Zeroed. */
void *jarena_alloc(jarena *a, size_t size);
void jarena_free(jarena *a);

/* ---- values ---- */

typedef enum {
	JV_UNDEF, /* Jinja2's default Undefined; str.s names what was missing */
	JV_NONE,
	JV_BOOL,
	JV_INT,
	JV_FLOAT,
	JV_STR,
	JV_LIST,
	JV_DICT,
	JV_NS,	  /* namespace(): a dict whose attributes `set` may assign */
	JV_LOOP,  /* the `loop` variable of a for loop */
	JV_MACRO, /* a {% macro %} */
} jv_kind;

typedef struct jlist jlist;
typedef struct jdict jdict;
typedef struct jloop jloop;
typedef struct jnode jnode;

typedef struct {
	jv_kind kind;
	union {
		bool b;
		int64_t i;
		double f;
		struct {
			const char *s;
			size_t n;
		} str;
		jlist *list;
		jdict *dict;
		jloop *loop;
		const jnode *macro;
	} u;
} jv;

struct jlist {
	size_t n, cap;
	jv *items;
	bool tuple; /* a (a, b) literal: prints as a tuple */
};

struct jdict {
	size_t n, cap;
	jv *keys; /* strings (JSON objects and literals with string keys) */
	jv *vals;
};

struct jloop {
	const jlist *items; /* what the loop runs over, after its `if` filter */
	size_t index0;
};

static inline jv jv_undef(const char *what)
{
	return (jv){.kind = JV_UNDEF, .u.str = {what, 0}};
}
static inline jv jv_str(const char *s, size_t n)
{
	return (jv){.kind = JV_STR, .u.str = {s, n}};
}
static inline jv jv_int(int64_t i)
{
	return (jv){.kind = JV_INT, .u.i = i};
}
static inline jv jv_bool(bool b)
{
	return (jv){.kind = JV_BOOL, .u.b = b};
}

/* A growing byte buffer in an arena (output and string building). */
typedef struct {
	jarena *arena;
	char *p;
	size_t n, cap, limit; /* limit: the most bytes allowed */
	bool failed;	      /* out of arena or over limit */
	bool over_limit;      /* failed because of the limit */
} jbuf;

void jbuf_put(jbuf *b, const char *s, size_t n);
void jbuf_puts(jbuf *b, const char *s);
void jbuf_printf(jbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

jlist *jlist_new(jarena *a, size_t cap);
bool jlist_push(jarena *a, jlist *l, jv v);
jdict *jdict_new(jarena *a, size_t cap);
bool jdict_set(jarena *a, jdict *d, jv key, jv val); /* replaces an equal key */
const jv *jdict_get(const jdict *d, const char *key, size_t n);

bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
const char *jv_type_name(jv v); /* Python's name for the type, for messages */
/* Python's str() of v (what {{ v }} prints); repr for what lists print. */
void jv_write_str(jbuf *b, jv v);
void jv_write_repr(jbuf *b, jv v);
/* json.dumps(v, ensure_ascii=False, indent, separators, sort_keys) as
 * transformers' tojson calls it; indent < 0 is None. False with err set when
 * v holds something JSON has no form for. */
bool jv_write_json(jbuf *b, jv v, int indent, const char *item_sep, const char *key_sep, bool sort_keys,
		   char *err, size_t errlen);

/* UTF-8 helpers: the string's length in code points, and the byte offset of
 * code point i (n when i is past the end). */
size_t ju_length(const char *s, size_t n);
size_t ju_offset(const char *s, size_t n, size_t i);
/* Decodes the code point at s[*at] (advancing *at); invalid bytes read as
 * themselves so every byte is consumed. */
uint32_t ju_next(const char *s, size_t n, size_t *at);
bool ju_is_space(uint32_t c); /* Python's str.isspace() */

/* ---- tokens ---- */

typedef enum {
	TK_TEXT,       /* literal text between tags, whitespace control applied */
	TK_VAR_BEGIN,  /* {{ */
	TK_VAR_END,    /* }} */
	TK_BLOCK_BEGIN, /* {% */
	TK_BLOCK_END,  /* %} */
	TK_NAME,
	TK_STRING, /* s/n: the decoded value */
	TK_INT,
	TK_FLOAT,
	TK_OP, /* s/n: the operator's spelling */
	TK_EOF,
} jtok_kind;

typedef struct {
	jtok_kind kind;
	int line;
	const char *s;
	size_t n;
	int64_t i;
	double f;
} jtok;

/* Splits src into tokens, applying trim_blocks, lstrip_blocks and the
 * `-` markers as Jinja2 does. False with "LINE: message" in err. */
bool jinja_lex(jarena *a, const char *src, size_t len, jtok **toks, size_t *ntoks, char *err, size_t errlen);

/* ---- the tree ---- */

typedef enum {
	/* expressions */
	N_LIT,	  /* lit */
	N_NAME,	  /* name */
	N_ATTR,	  /* a.name */
	N_ITEM,	  /* a[b] */
	N_SLICE,  /* a[b:c:d]; b, c, d may be NULL */
	N_CALL,	  /* a(args): a is a name (function or macro) or an attribute (method) */
	N_FILTER, /* a | name(args) */
	N_TEST,	  /* a is [not] name(args) */
	N_NOT,
	N_NEG,
	N_POS,
	N_BINARY, /* a op b */
	N_AND,
	N_OR,
	N_COND, /* b if a else c */
	N_LIST,
	N_TUPLE,
	N_DICT, /* args: key, value, key, value... */
	/* statements */
	N_TEXT,
	N_OUTPUT,   /* {{ a }} */
	N_IF,	    /* if a: body, else: orelse */
	N_FOR,	    /* for names in a [if b]: body, else: orelse */
	N_SET,	    /* set name = a; set a.name = b (a namespace) */
	N_MACRO,    /* macro name(params = args defaults): body */
	N_BREAK,
	N_CONTINUE,
} jnode_kind;

typedef enum {
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_DIV,
	OP_FLOORDIV,
	OP_MOD,
	OP_POW,
	OP_CONCAT,
	OP_EQ,
	OP_NE,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_IN,
	OP_NOT_IN,
} jop;

typedef struct {
	jnode **v;
	size_t n;
} jnodes;

struct jnode {
	jnode_kind kind;
	int line;
	jop op;
	bool negated;	  /* N_TEST: is not */
	const char *name; /* NUL-terminated; names, attributes, filters, tests */
	jv lit;
	jnode *a, *b, *c, *d;
	jnodes args;	  /* call/filter/test/list arguments; macro defaults */
	const char **kw;  /* keyword names of args (NULL entries for positional) */
	const char **names; /* N_FOR targets, N_MACRO parameters */
	size_t nnames;
	jnodes body, orelse;
	int builtin;	  /* N_FILTER/N_TEST/N_CALL: index into the builtin tables */
};

/* Parses tokens into a statement list; label prefixes messages. */
bool jinja_parse(jarena *a, const jtok *toks, size_t ntoks, jnodes *out, const char *label, char *err,
		 size_t errlen);

/* ---- builtins (jinja_builtins.c) ---- */

typedef struct jctx jctx;

/* A filter, test, method or global function: args[0] is the operand
 * (filters, tests, methods); kw names keyword arguments (NULL entries for
 * positional ones). */
typedef bool (*jbuiltin_fn)(jctx *c, const jnode *at, jv *args, const char **kw, size_t n, jv *out);

typedef struct {
	const char *name;
	jbuiltin_fn fn;
	int min_args, max_args; /* counting the operand */
} jbuiltin;

typedef enum { JB_FILTER, JB_TEST, JB_METHOD, JB_GLOBAL } jbuiltin_table;
int jinja_builtin_find(jbuiltin_table t, const char *name); /* -1: none */
const jbuiltin *jinja_builtin(jbuiltin_table t, int index);

/* ---- evaluation (jinja_eval.c) ---- */

/* Limits that keep a hostile template from exhausting the process. */
enum {
	JINJA_MAX_OUTPUT = 64 << 20,	    /* bytes of rendered text */
	JINJA_MAX_DEPTH = 200,		    /* nesting of tags and expressions, and of macro calls */
	JINJA_MAX_STEPS = 20 * 1000 * 1000, /* statements run and loop iterations */
};
#define JINJA_MAX_MEMORY ((size_t)512 << 20) /* bytes one render may allocate */

struct jctx {
	jarena arena;
	const char *label;
	char *err;
	size_t errlen;
	bool failed;
	size_t steps;
	int depth;
	struct jscope *scope;
};

/* The parser's and the renderer's error: "label:LINE: message" into err
 * unless *failed (the first error is the one reported); sets *failed and
 * returns false. */
bool jinja_error(char *err, size_t errlen, bool *failed, const char *label, int line, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));

/* Sets the render error "label:LINE: message" (the first one wins) and
 * returns false. */
bool jinja_fail(jctx *c, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool jinja_oom(jctx *c, int line);
/* Renders the statements with globals (a dict of the context's variables). */
bool jinja_render(jctx *c, const jnodes *body, jdict *globals, jbuf *out);
/* Calls a macro value with arguments (used by N_CALL). */
bool jinja_call_macro(jctx *c, const jnode *at, jv macro, jv *args, const char **kw, size_t n, jv *out);

#endif
