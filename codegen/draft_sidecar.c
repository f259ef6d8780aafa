#include "codegen/draft_sidecar.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "codegen/checkpoint.h"

/* The keys whose values the head's tensors and the target's must agree on. */
static const char *const shared_keys[] = {
	"hidden_size", "vocab_size", "num_attention_heads", "num_key_value_heads", "head_dim", "rms_norm_eps",
	"num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
	"hc_count", "hc_lowrank", "indexer_n_heads", "indexer_head_dim", NULL};
static const char *const mtp_count_keys[] = {"mtp_num_hidden_layers", "num_nextn_predict_layers", NULL};

/* The text model's section: text_config when nested (vision-language
 * configs), else the root. */
static json_object *text_section(json_object *root)
{
	json_object *t;
	return json_object_object_get_ex(root, "text_config", &t) && json_object_is_type(t, json_type_object) ? t
													 : root;
}

static const char *value_str(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN)
						     : "(absent)";
}

static bool declares_mtp(json_object *text)
{
	for (int i = 0; mtp_count_keys[i]; i++) {
		json_object *v;
		if (json_object_object_get_ex(text, mtp_count_keys[i], &v) && json_object_get_int64(v) > 0)
			return true;
	}
	return false;
}

/* Appends "key: a vs b" for every differing key; returns how many. */
static int list_differences(json_object *a, json_object *b, const char *const *keys, char *out, size_t len)
{
	int n = 0;
	size_t used = strlen(out);
	for (int i = 0; keys[i]; i++) {
		char va[96], vb[96];
		snprintf(va, sizeof(va), "%s", value_str(a, keys[i]));
		snprintf(vb, sizeof(vb), "%s", value_str(b, keys[i]));
		if (strcmp(va, vb) == 0)
			continue;
		if (used < len)
			used += (size_t)snprintf(out + used, len - used, "%s%s %s (target) vs %s (drafter)", n ? ", " : "",
						 keys[i], va, vb);
		n++;
	}
	return n;
}

bool cg_check_drafter_config(const char *target_config, const char *drafter_config, char *err, size_t errlen)
{
	json_object *t = json_object_from_file(target_config), *d = json_object_from_file(drafter_config);
	bool ok = false;
	char diff[1024] = "";
	static const char *const type_key[] = {"model_type", NULL};
	if (!t || !d)
		snprintf(err, errlen, "%s: cannot read it as JSON", t ? drafter_config : target_config);
	else if (list_differences(t, d, type_key, diff, sizeof(diff)) +
			 list_differences(text_section(t), text_section(d), shared_keys, diff, sizeof(diff)) >
		 0)
		snprintf(err, errlen, "drafter %s does not fit target %s: %s", drafter_config, target_config, diff);
	else if (!declares_mtp(text_section(d)))
		snprintf(err, errlen, "drafter %s declares no MTP layer (mtp_num_hidden_layers or "
			 "num_nextn_predict_layers >= 1)", drafter_config);
	else
		ok = true;
	json_object_put(t);
	json_object_put(d);
	return ok;
}

static halo_safetensors *route(const cg_split_checkpoint *s, const char *name)
{
	return strncmp(name, "mtp.", 4) == 0 ? s->drafter : s->target;
}

static bool split_exists(void *ctx, const char *name)
{
	cg_weight_source one;
	cg_checkpoint_source(route(ctx, name), &one);
	return one.exists(one.ctx, name);
}

static int64_t split_rows(void *ctx, const char *name)
{
	cg_weight_source one;
	cg_checkpoint_source(route(ctx, name), &one);
	return one.rows(one.ctx, name);
}

static bool split_read(void *ctx, const char *name, const int64_t *shape, int rank, float *dst, char *err,
		       size_t errlen)
{
	cg_weight_source one;
	cg_checkpoint_source(route(ctx, name), &one);
	return one.read(one.ctx, name, shape, rank, dst, err, errlen);
}

static halo_dtype split_stored_as(void *ctx, const char *name)
{
	cg_weight_source one;
	cg_checkpoint_source(route(ctx, name), &one);
	return one.stored_as(one.ctx, name);
}

static bool split_read_stored(void *ctx, const char *name, halo_dtype t, const int64_t *shape, int rank,
			      uint8_t *values, uint8_t *scales, char *err, size_t errlen)
{
	cg_weight_source one;
	cg_checkpoint_source(route(ctx, name), &one);
	return one.read_stored(one.ctx, name, t, shape, rank, values, scales, err, errlen);
}

void cg_split_checkpoint_source(cg_split_checkpoint *split, cg_weight_source *src)
{
	src->read = split_read;
	src->exists = split_exists;
	src->rows = split_rows;
	src->stored_as = split_stored_as;
	src->read_stored = split_read_stored;
	src->ctx = split;
}
