#include "tools/model_select.h"

#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

const char *halo_models_dir(void)
{
	const char *env = getenv("HALO_MODELS_DIR");
	return env && *env ? env : HALO_DEFAULT_MODELS_DIR;
}

bool halo_config_model_type(const char *config_path, char *out, size_t outlen, char *err, size_t errlen)
{
	json_object *root = json_object_from_file(config_path);
	if (!root) {
		snprintf(err, errlen, "%s: cannot read as JSON (%s)", config_path, json_util_get_last_err());
		return false;
	}
	json_object *v = NULL, *text = NULL;
	bool found = json_object_object_get_ex(root, "model_type", &v) && json_object_is_type(v, json_type_string);
	if (!found && json_object_object_get_ex(root, "text_config", &text))
		found = json_object_object_get_ex(text, "model_type", &v) && json_object_is_type(v, json_type_string);
	if (found)
		snprintf(out, outlen, "%s", json_object_get_string(v));
	else
		snprintf(err, errlen, "%s: no string 'model_type' (top level or text_config)", config_path);
	json_object_put(root);
	return found;
}

/* True when the YAML file's top-level `hf_model_types` sequence holds want.
 * Only the top-level mapping is walked; a malformed file simply does not
 * match (the reader reports its errors when it is chosen explicitly). */
static bool file_serves(const char *path, const char *want)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return false;
	yaml_parser_t p;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_file(&p, f);
	int depth = 0;
	bool expect_value = false, in_types = false, match = false;
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&p, &ev))
			break;
		yaml_event_type_t t = ev.type;
		if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) {
			depth++;
		} else if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT) {
			if (--depth == 1)
				expect_value = in_types = false; /* a top-level value ended */
		} else if (t == YAML_SCALAR_EVENT) {
			const char *s = (const char *)ev.data.scalar.value;
			if (depth == 1 && !expect_value) {
				in_types = strcmp(s, "hf_model_types") == 0;
				expect_value = true;
			} else if (depth == 1) {
				expect_value = in_types = false;
			} else if (in_types && depth == 2 && strcmp(s, want) == 0) {
				match = true;
			}
		}
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT || match)
			break;
	}
	yaml_parser_delete(&p);
	fclose(f);
	return match;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

bool halo_select_model(const char *dir, const char *model_type, char *out, size_t outlen, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		snprintf(err, errlen, "%s: cannot open the models directory", dir);
		return false;
	}
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
			continue;
		char **grown = realloc(names, (n + 1) * sizeof(*names));
		if (!grown)
			break;
		names = grown;
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	bool found = false;
	for (size_t i = 0; i < n; i++) {
		if (!found && names[i]) {
			snprintf(out, outlen, "%s/%s", dir, names[i]);
			found = file_serves(out, model_type);
		}
		free(names[i]);
	}
	free(names);
	if (!found)
		snprintf(err, errlen, "no model file in %s serves model_type '%s' (pass --model)", dir, model_type);
	return found;
}
