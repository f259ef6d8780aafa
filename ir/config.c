/* config.json through json-c (ir/config.h). */
#include "ir/config.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ir_config {
	char *name;
	json_object *root;
	const char **strings; /* scratch for ir_config_strings, owned here */
};

static ir_loc file_loc(const char *name)
{
	return (ir_loc){.file = name};
}

ir_config *ir_config_parse(const char *name, const char *config_json, size_t config_len, ir_error *err)
{
	if (config_len > (size_t)INT32_MAX) {
		ir_error_set(err, file_loc(name), "config too large");
		return NULL;
	}
	json_tokener *tok = json_tokener_new();
	if (!tok)
		abort();
	json_object *root = json_tokener_parse_ex(tok, config_json, (int)config_len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	if (!root || jerr != json_tokener_success) {
		ir_error_set(err, file_loc(name), "invalid JSON at byte %zu: %s", json_tokener_get_parse_end(tok),
			     json_tokener_error_desc(jerr == json_tokener_success ? json_tokener_continue : jerr));
		json_object_put(root);
		json_tokener_free(tok);
		return NULL;
	}
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < config_len && strchr(" \t\r\n", config_json[end]) && config_json[end])
		end++;
	if (end < config_len) {
		ir_error_set(err, file_loc(name), "trailing data after the JSON object at byte %zu", end);
		json_object_put(root);
		return NULL;
	}
	if (!json_object_is_type(root, json_type_object)) {
		ir_error_set(err, file_loc(name), "expected a JSON object at the top level");
		json_object_put(root);
		return NULL;
	}
	ir_config *c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	c->name = strdup(name);
	if (!c->name)
		abort();
	c->root = root;
	return c;
}

void ir_config_free(ir_config *c)
{
	if (!c)
		return;
	json_object_put(c->root);
	free(c->strings);
	free(c->name);
	free(c);
}

const char *ir_config_name(const ir_config *c)
{
	return c->name;
}

/* Follows a dotted path ("rope_parameters.rope_theta") from obj. */
static json_object *walk(json_object *obj, const char *key)
{
	char part[256];
	while (obj && *key) {
		const char *dot = strchr(key, '.');
		size_t n = dot ? (size_t)(dot - key) : strlen(key);
		if (n == 0 || n >= sizeof(part) || !json_object_is_type(obj, json_type_object))
			return NULL;
		memcpy(part, key, n);
		part[n] = '\0';
		json_object *next = NULL;
		if (!json_object_object_get_ex(obj, part, &next))
			return NULL;
		obj = next;
		key = dot ? dot + 1 : key + n;
	}
	return obj;
}

/* Top level first, then the nested text_config of multimodal configs. A key
 * may be a dotted path into nested objects (transformers 5 writes
 * rope_parameters.rope_theta). */
static json_object *lookup(const ir_config *c, const char *key)
{
	json_object *v = walk(c->root, key), *text = NULL;
	if (v)
		return v;
	if (json_object_object_get_ex(c->root, "text_config", &text))
		return walk(text, key);
	return NULL;
}

bool ir_config_number(const ir_config *c, const char *key, ir_cfg_kind *kind, int64_t *i, double *f, ir_error *err)
{
	json_object *v = lookup(c, key);
	*kind = IR_CFG_ABSENT;
	switch (v ? json_object_get_type(v) : json_type_null) {
	case json_type_null:
		return true;
	case json_type_boolean:
		*kind = IR_CFG_INT;
		*i = json_object_get_boolean(v) ? 1 : 0;
		return true;
	case json_type_int:
		*kind = IR_CFG_INT;
		*i = json_object_get_int64(v);
		return true;
	case json_type_double:
		*kind = IR_CFG_FLOAT;
		*f = json_object_get_double(v);
		if (isfinite(*f))
			return true;
		break;
	default:
		break;
	}
	ir_error_set(err, file_loc(c->name), "key '%s': expected a number or a bool", key);
	return false;
}

bool ir_config_string(const ir_config *c, const char *key, const char **out, ir_error *err)
{
	json_object *v = lookup(c, key);
	*out = NULL;
	if (!v)
		return true;
	if (!json_object_is_type(v, json_type_string)) {
		ir_error_set(err, file_loc(c->name), "key '%s': expected a string", key);
		return false;
	}
	*out = json_object_get_string(v);
	return true;
}

bool ir_config_strings(ir_config *c, const char *key, const char ***out, int *n_out, ir_error *err)
{
	json_object *v = lookup(c, key);
	*n_out = -1;
	if (!v)
		return true;
	if (!json_object_is_type(v, json_type_array)) {
		ir_error_set(err, file_loc(c->name), "key '%s': expected an array of strings", key);
		return false;
	}
	size_t n = json_object_array_length(v);
	free(c->strings);
	c->strings = calloc(n ? n : 1, sizeof(char *));
	if (!c->strings)
		abort();
	for (size_t k = 0; k < n; k++) {
		json_object *s = json_object_array_get_idx(v, k);
		if (!json_object_is_type(s, json_type_string)) {
			ir_error_set(err, file_loc(c->name), "key '%s': item %zu is not a string", key, k);
			return false;
		}
		c->strings[k] = json_object_get_string(s);
	}
	*out = c->strings;
	*n_out = (int)n;
	return true;
}

/* One array item as an int: json-c gives integral doubles (2.0) as doubles. */
static bool item_int(json_object *v, int64_t *out)
{
	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return true;
	}
	if (!json_object_is_type(v, json_type_double))
		return false;
	double f = json_object_get_double(v);
	if (!(f >= -9007199254740992.0 && f <= 9007199254740992.0) || floor(f) != f)
		return false;
	*out = (int64_t)f;
	return true;
}

bool ir_config_ints(const ir_config *c, const char *key, int64_t **out, int *n_out, ir_error *err)
{
	json_object *v = lookup(c, key);
	*out = NULL;
	*n_out = -1;
	if (!v)
		return true;
	if (!json_object_is_type(v, json_type_array)) {
		ir_error_set(err, file_loc(c->name), "key '%s': expected an array of integers", key);
		return false;
	}
	size_t n = json_object_array_length(v);
	int64_t *vals = n ? malloc(n * sizeof(int64_t)) : NULL;
	if (n && !vals)
		abort();
	for (size_t k = 0; k < n; k++) {
		if (!item_int(json_object_array_get_idx(v, k), &vals[k])) {
			ir_error_set(err, file_loc(c->name), "key '%s': item %zu is not an integer", key, k);
			free(vals);
			return false;
		}
	}
	*out = vals;
	*n_out = (int)n;
	return true;
}
