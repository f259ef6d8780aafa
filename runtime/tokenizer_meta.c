#include "runtime/tokenizer_meta.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {"content": "...", "id": N} under key, when present. */
static bool read_token(json_object *root, const char *key, halo_named_token *t, const char *label, char *err,
		       size_t errlen)
{
	json_object *o, *content, *id;
	t->id = -1;
	if (!json_object_object_get_ex(root, key, &o))
		return true;
	if (!json_object_object_get_ex(o, "content", &content) || !json_object_is_type(content, json_type_string) ||
	    !json_object_object_get_ex(o, "id", &id) || !json_object_is_type(id, json_type_int) ||
	    json_object_get_int64(id) < 0 || json_object_get_int64(id) > INT32_MAX) {
		snprintf(err, errlen, "%s: %s is not {\"content\": string, \"id\": token id}", label, key);
		return false;
	}
	t->id = (int32_t)json_object_get_int64(id);
	if (!(t->text = strdup(json_object_get_string(content))))
		snprintf(err, errlen, "out of memory");
	return t->text != NULL;
}

/* A string, or the "template" of the entry named "default" in a list of
 * {"name", "template"} objects (tokenizer_config.json's two forms). */
static json_object *pick_template(json_object *v, const char *label, char *err, size_t errlen)
{
	if (json_object_is_type(v, json_type_string))
		return v;
	size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i), *name, *tpl;
		if (json_object_object_get_ex(e, "name", &name) && json_object_is_type(name, json_type_string) &&
		    strcmp(json_object_get_string(name), "default") == 0 &&
		    json_object_object_get_ex(e, "template", &tpl) && json_object_is_type(tpl, json_type_string))
			return tpl;
	}
	snprintf(err, errlen, "%s: chat_template is neither a string nor a list with a template named \"default\"",
		 label);
	return NULL;
}

static bool read_template(json_object *root, halo_tokenizer_meta *m, const char *label, char *err, size_t errlen)
{
	json_object *v;
	if (!json_object_object_get_ex(root, "chat_template", &v))
		return true;
	json_object *tpl = pick_template(v, label, err, errlen);
	if (!tpl)
		return false;
	m->chat_template_len = (size_t)json_object_get_string_len(tpl);
	if (!(m->chat_template = malloc(m->chat_template_len + 1))) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	memcpy(m->chat_template, json_object_get_string(tpl), m->chat_template_len + 1);
	return true;
}

static void add_eos(halo_tokenizer_meta *m, int32_t id)
{
	for (size_t i = 0; i < m->n_eos_ids; i++)
		if (m->eos_ids[i] == id)
			return;
	m->eos_ids[m->n_eos_ids++] = id;
}

/* eos_token_ids, then the eos token's id. */
static bool read_eos_ids(json_object *root, halo_tokenizer_meta *m, const char *label, char *err, size_t errlen)
{
	json_object *list;
	if (!json_object_object_get_ex(root, "eos_token_ids", &list) || !json_object_is_type(list, json_type_array)) {
		snprintf(err, errlen, "%s: eos_token_ids is missing or not a list", label);
		return false;
	}
	size_t n = json_object_array_length(list);
	if (!(m->eos_ids = malloc((n + 1) * sizeof(*m->eos_ids)))) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(list, i);
		int64_t id = json_object_get_int64(e);
		if (!json_object_is_type(e, json_type_int) || id < 0 || id > INT32_MAX) {
			snprintf(err, errlen, "%s: eos_token_ids[%zu] is not a token id", label, i);
			return false;
		}
		add_eos(m, (int32_t)id);
	}
	if (m->eos.id >= 0)
		add_eos(m, m->eos.id);
	return true;
}

bool halo_tokenizer_meta_parse(const void *json, size_t size, const char *label, halo_tokenizer_meta *out,
			       char *err, size_t errlen)
{
	*out = (halo_tokenizer_meta){.bos.id = -1, .eos.id = -1};
	json_tokener *tk = json_tokener_new();
	json_object *root = tk && size <= INT32_MAX ? json_tokener_parse_ex(tk, json, (int)size) : NULL;
	bool ok = json_object_is_type(root, json_type_object);
	if (!ok)
		snprintf(err, errlen, "%s: not a JSON object", label);
	ok = ok && read_token(root, "bos_token", &out->bos, label, err, errlen) &&
	     read_token(root, "eos_token", &out->eos, label, err, errlen) &&
	     read_template(root, out, label, err, errlen) && read_eos_ids(root, out, label, err, errlen);
	json_object_put(root);
	json_tokener_free(tk);
	if (!ok) {
		halo_tokenizer_meta_free(out);
		*out = (halo_tokenizer_meta){.bos.id = -1, .eos.id = -1};
	}
	return ok;
}

void halo_tokenizer_meta_free(halo_tokenizer_meta *m)
{
	free(m->bos.text);
	free(m->eos.text);
	free(m->chat_template);
	free(m->eos_ids);
}
