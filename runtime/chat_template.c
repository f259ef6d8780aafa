/* runtime/chat_template.h over the Jinja subset (jinja_*.c): parsing keeps
 * the tree in the template's arena; each render converts the JSON context
 * to values in its own arena and frees it when done. */
#include "runtime/chat_template.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/jinja.h"

struct halo_chat_template {
	jarena arena;
	jnodes body;
	char *label;
};

/* The parse arena's bound: the tree is a small multiple of the source. */
#define PARSE_MEMORY ((size_t)256 << 20)

halo_chat_template *halo_chat_template_parse(const char *src, size_t len, const char *label, char *err,
					     size_t errlen)
{
	halo_chat_template *t = calloc(1, sizeof *t);
	if (!t || !(t->label = strdup(label))) {
		snprintf(err, errlen, "%s: out of memory", label);
		free(t);
		return NULL;
	}
	t->arena.limit = PARSE_MEMORY;
	jtok *toks;
	size_t ntoks;
	char lex_err[256];
	if (!jinja_lex(&t->arena, src, len, &toks, &ntoks, lex_err, sizeof lex_err)) {
		snprintf(err, errlen, "%s:%s", label, lex_err);
		halo_chat_template_free(t);
		return NULL;
	}
	if (!jinja_parse(&t->arena, toks, ntoks, &t->body, t->label, err, errlen)) {
		halo_chat_template_free(t);
		return NULL;
	}
	return t;
}

void halo_chat_template_free(halo_chat_template *t)
{
	if (!t)
		return;
	jarena_free(&t->arena);
	free(t->label);
	free(t);
}

/* The context as values; strings point into the JSON objects, which the
 * caller keeps for the render. */
static bool from_json(jctx *c, const json_object *o, int depth, jv *out)
{
	if (depth > JINJA_MAX_DEPTH)
		return jinja_fail(c, 0, "the context nests deeper than %d", JINJA_MAX_DEPTH);
	switch (json_object_get_type(o)) {
	case json_type_null: *out = (jv){.kind = JV_NONE}; return true;
	case json_type_boolean: *out = jv_bool(json_object_get_boolean(o)); return true;
	case json_type_int: *out = jv_int(json_object_get_int64(o)); return true;
	case json_type_double: *out = (jv){.kind = JV_FLOAT, .u.f = json_object_get_double(o)}; return true;
	case json_type_string:
		*out = jv_str(json_object_get_string((json_object *)o), (size_t)json_object_get_string_len(o));
		return true;
	case json_type_array: {
		size_t n = json_object_array_length(o);
		jlist *l = jlist_new(&c->arena, n);
		if (!l)
			return jinja_oom(c, 0);
		for (size_t i = 0; i < n; i++)
			if (!from_json(c, json_object_array_get_idx(o, i), depth + 1, &l->items[l->n++]))
				return false;
		*out = (jv){.kind = JV_LIST, .u.list = l};
		return true;
	}
	case json_type_object: {
		jdict *d = jdict_new(&c->arena, (size_t)json_object_object_length(o));
		if (!d)
			return jinja_oom(c, 0);
		json_object_object_foreach((json_object *)o, key, val)
		{
			jv v;
			if (!from_json(c, val, depth + 1, &v))
				return false;
			d->keys[d->n] = jv_str(key, strlen(key));
			d->vals[d->n++] = v;
		}
		*out = (jv){.kind = JV_DICT, .u.dict = d};
		return true;
	}
	}
	return jinja_fail(c, 0, "unexpected JSON value in the context");
}

bool halo_chat_template_render(const halo_chat_template *t, const struct json_object *context, char **out,
			       size_t *len, char *err, size_t errlen)
{
	*out = NULL;
	*len = 0;
	jctx c = {.arena = {.limit = JINJA_MAX_MEMORY}, .label = t->label, .err = err, .errlen = errlen};
	jv globals = {0};
	jbuf text = {.arena = &c.arena, .limit = JINJA_MAX_OUTPUT};
	bool ok;
	if (!json_object_is_type(context, json_type_object))
		ok = jinja_fail(&c, 0, "the render context is not a JSON object");
	else
		ok = from_json(&c, context, 0, &globals) && jinja_render(&c, &t->body, globals.u.dict, &text);
	if (ok && !(*out = malloc(text.n + 1)))
		ok = jinja_fail(&c, 0, "out of memory");
	if (ok) {
		if (text.n)
			memcpy(*out, text.p, text.n);
		(*out)[text.n] = '\0';
		*len = text.n;
	}
	jarena_free(&c.arena);
	return ok;
}

/* The context apply_chat_template builds: messages, tools and documents
 * (None when not given), add_generation_prompt, then the extra keywords. */
bool halo_chat_template_apply(const halo_chat_template *t, const halo_chat_message *msgs, size_t n,
			      const halo_chat_options *o, char **out, size_t *len, char *err, size_t errlen)
{
	json_object *ctx = json_object_new_object(), *list = json_object_new_array();
	json_object_object_add(ctx, "messages", list);
	for (size_t i = 0; i < n; i++) {
		json_object *m = json_object_new_object();
		json_object_object_add(m, "role", json_object_new_string(msgs[i].role));
		json_object_object_add(m, "content", json_object_new_string(msgs[i].content));
		json_object_array_add(list, m);
	}
	json_object_object_add(ctx, "tools", NULL);
	json_object_object_add(ctx, "documents", NULL);
	json_object_object_add(ctx, "add_generation_prompt", json_object_new_boolean(o->add_generation_prompt));
	if (o->enable_thinking >= 0)
		json_object_object_add(ctx, "enable_thinking", json_object_new_boolean(o->enable_thinking));
	if (o->bos_token)
		json_object_object_add(ctx, "bos_token", json_object_new_string(o->bos_token));
	if (o->eos_token)
		json_object_object_add(ctx, "eos_token", json_object_new_string(o->eos_token));
	bool ok = halo_chat_template_render(t, ctx, out, len, err, errlen);
	json_object_put(ctx);
	return ok;
}
