#include "codegen/tokenizer_section.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime/chat_template.h"
#include "runtime/tokenizer.h"

/* The whole file, NUL-terminated; NULL with *missing when it does not exist. */
static char *slurp(const char *path, size_t *size, bool *missing, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	*missing = !f && errno == ENOENT;
	struct stat st;
	char *buf = NULL;
	if (f && fstat(fileno(f), &st) == 0 && (buf = malloc((size_t)st.st_size + 1)) &&
	    fread(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size) {
		buf[st.st_size] = '\0';
		*size = (size_t)st.st_size;
	} else if (!*missing) {
		snprintf(err, errlen, "%s: cannot read: %s", path, f && !buf ? "out of memory" : strerror(errno));
		free(buf);
		buf = NULL;
	}
	if (f)
		fclose(f);
	return buf;
}

/* A JSON config file, NULL when absent (*ok stays true) or broken (*ok false). */
static json_object *read_config(const char *dir, const char *name, bool *ok, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	size_t size;
	bool missing;
	char *text = slurp(path, &size, &missing, err, errlen);
	*ok = text || missing;
	if (!text)
		return NULL;
	json_object *o = json_tokener_parse(text);
	free(text);
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		json_object_put(o);
		*ok = false;
		return NULL;
	}
	return o;
}

/* tokenizer_config.json writes a token as "<s>" or as {"content": "<s>", ...}. */
static const char *token_text(json_object *v)
{
	if (json_object_is_type(v, json_type_object))
		json_object_object_get_ex(v, "content", &v);
	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static bool add_tokens(json_object *meta, json_object *cfg, const halo_tokenizer *t, const char *dir, char *err,
		       size_t errlen)
{
	static const char *const roles[] = {"bos_token", "eos_token", "pad_token", "unk_token"};
	for (size_t r = 0; r < sizeof roles / sizeof roles[0]; r++) {
		json_object *v;
		const char *text = json_object_object_get_ex(cfg, roles[r], &v) ? token_text(v) : NULL;
		if (!text)
			continue;
		int32_t id = halo_tokenizer_token_id(t, text);
		if (id < 0) {
			snprintf(err, errlen, "%s/tokenizer_config.json: %s '%s' is not a token of tokenizer.json", dir,
				 roles[r], text);
			return false;
		}
		json_object *tok = json_object_new_object();
		json_object_object_add(tok, "content", json_object_new_string(text));
		json_object_object_add(tok, "id", json_object_new_int(id));
		json_object_object_add(meta, roles[r], tok);
	}
	return true;
}

/* One template parses with the runtime's interpreter, so a checkpoint whose
 * template halo chat could not render is refused here, naming the file,
 * the template line and the construct. */
static bool check_template(const char *src, size_t len, const char *label, char *err, size_t errlen)
{
	halo_chat_template *t = halo_chat_template_parse(src, len, label, err, errlen);
	halo_chat_template_free(t);
	return t != NULL;
}

/* tokenizer_config.json's chat_template: one template, or a list of
 * {"name", "template"} (transformers' named templates), each checked. */
static bool check_config_templates(json_object *v, const char *dir, char *err, size_t errlen)
{
	char label[4352];
	if (json_object_is_type(v, json_type_string)) {
		snprintf(label, sizeof label, "%s/tokenizer_config.json: chat_template", dir);
		return check_template(json_object_get_string(v), (size_t)json_object_get_string_len(v), label, err,
				      errlen);
	}
	size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
	if (!json_object_is_type(v, json_type_array)) {
		snprintf(err, errlen, "%s/tokenizer_config.json: chat_template is neither a string nor a list", dir);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i), *name, *tpl;
		if (!json_object_object_get_ex(e, "name", &name) || !json_object_object_get_ex(e, "template", &tpl) ||
		    !json_object_is_type(tpl, json_type_string)) {
			snprintf(err, errlen, "%s/tokenizer_config.json: chat_template[%zu] lacks a name or a template", dir,
				 i);
			return false;
		}
		snprintf(label, sizeof label, "%s/tokenizer_config.json: chat_template '%s'", dir,
			 json_object_get_string(name));
		if (!check_template(json_object_get_string(tpl), (size_t)json_object_get_string_len(tpl), label, err,
				    errlen))
			return false;
	}
	return true;
}

/* The chat template: tokenizer_config.json's, else chat_template.jinja
 * (where newer transformers save it). */
static bool add_chat_template(json_object *meta, json_object *cfg, const char *dir, char *err, size_t errlen)
{
	json_object *v;
	if (cfg && json_object_object_get_ex(cfg, "chat_template", &v) && v) {
		if (!check_config_templates(v, dir, err, errlen))
			return false;
		json_object_object_add(meta, "chat_template", json_object_get(v));
		return true;
	}
	char path[4096];
	snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
	size_t size;
	bool missing;
	char *text = slurp(path, &size, &missing, err, errlen);
	bool found = text != NULL, ok = !found || check_template(text, size, path, err, errlen);
	if (found && ok)
		json_object_object_add(meta, "chat_template", json_object_new_string_len(text, (int)size));
	free(text);
	return ok && (found || missing);
}

/* generation_config.json's eos_token_id (one id or a list), as a list. */
static bool add_generation_eos(json_object *meta, json_object *gen, int32_t id_end, const char *dir, char *err,
			       size_t errlen)
{
	json_object *v, *list = json_object_new_array();
	json_object_object_add(meta, "eos_token_ids", list);
	if (!gen || !json_object_object_get_ex(gen, "eos_token_id", &v) || !v)
		return true;
	size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 1;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_is_type(v, json_type_array) ? json_object_array_get_idx(v, i) : v;
		int64_t id = json_object_get_int64(e);
		if (!json_object_is_type(e, json_type_int) || id < 0 || id >= id_end) {
			snprintf(err, errlen, "%s/generation_config.json: eos_token_id %s is not a token id", dir,
				 json_object_to_json_string(e));
			return false;
		}
		json_object_array_add(list, json_object_new_int((int32_t)id));
	}
	return true;
}

static bool build_meta(cg_tokenizer_sections *out, const halo_tokenizer *t, const char *dir, char *err,
		       size_t errlen)
{
	bool cfg_ok, gen_ok = false;
	json_object *cfg = read_config(dir, "tokenizer_config.json", &cfg_ok, err, errlen);
	json_object *gen = cfg_ok ? read_config(dir, "generation_config.json", &gen_ok, err, errlen) : NULL;
	json_object *meta = json_object_new_object();
	json_object_object_add(meta, "format", json_object_new_int(1));
	bool ok = cfg_ok && gen_ok && (!cfg || add_tokens(meta, cfg, t, dir, err, errlen)) &&
		  add_chat_template(meta, cfg, dir, err, errlen) &&
		  add_generation_eos(meta, gen, halo_tokenizer_id_end(t), dir, err, errlen);
	/* keys in insertion order, no spaces: the same checkpoint, the same bytes */
	if (ok && !(out->meta = strdup(json_object_to_json_string_ext(meta, JSON_C_TO_STRING_PLAIN)))) {
		snprintf(err, errlen, "out of memory");
		ok = false;
	}
	json_object_put(meta);
	json_object_put(cfg);
	json_object_put(gen);
	return ok;
}

bool cg_tokenizer_read(const char *hf_dir, int64_t vocab, cg_tokenizer_sections *out, char *err, size_t errlen)
{
	*out = (cg_tokenizer_sections){0};
	char path[4096];
	snprintf(path, sizeof path, "%s/tokenizer.json", hf_dir);
	bool missing;
	out->json = slurp(path, &out->json_size, &missing, err, errlen);
	if (!out->json)
		return missing;
	halo_tokenizer *t = halo_tokenizer_load_mem(out->json, out->json_size, path, err, errlen);
	bool ok = t != NULL;
	if (ok && halo_tokenizer_id_end(t) > vocab) {
		snprintf(err, errlen, "%s: token id %d is outside the model's vocab (%lld rows)", path,
			 halo_tokenizer_id_end(t) - 1, (long long)vocab);
		ok = false;
	}
	ok = ok && build_meta(out, t, hf_dir, err, errlen);
	halo_tokenizer_free(t);
	if (!ok)
		cg_tokenizer_sections_free(out);
	return ok;
}

void cg_tokenizer_sections_free(cg_tokenizer_sections *s)
{
	free(s->json);
	free(s->meta);
	*s = (cg_tokenizer_sections){0};
}
