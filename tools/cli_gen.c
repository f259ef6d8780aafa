#include "tools/cli_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/mtp_draft.h"
#include "runtime/spec.h"
#include "tools/cli_args.h"

bool cli_gen_take(const char *cmd, int argc, char **argv, int *i, cli_gen_args *a, int *rc)
{
	const char *s = argv[*i];
	if (strcmp(s, "--validate") == 0)
		a->validate = true;
	else if (strcmp(s, "--no-tuning") == 0)
		a->no_tuning = true;
	else if (strcmp(s, "--draft-fixed") == 0)
		a->draft_fixed = true;
	else
		return cli_take_value(cmd, argc, argv, i, "--n-predict", &a->n_predict, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--backend", &a->backend, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--device", &a->device, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--temp", &a->temp, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--temperature", &a->temp, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--top-k", &a->top_k, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--top-p", &a->top_p, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--seed", &a->seed, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--spec", &a->spec, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--draft-n", &a->draft_n, rc) ||
		       cli_take_value(cmd, argc, argv, i, "--tuning", &a->tuning, rc);
	return true;
}

/* The CLI's bound on drafts per round: what halo compile --draft-max allows. */
#define CLI_DRAFT_N_MAX 7

static int check_spec(const char *cmd, const cli_gen_args *a, cli_gen_config *c)
{
	int64_t v;
	c->spec_mtp = a->spec && strcmp(a->spec, "mtp") == 0;
	c->draft_n = 3;
	c->draft_fixed = a->draft_fixed;
	if (a->spec && !c->spec_mtp && strcmp(a->spec, "none") != 0)
		return cli_usage_error(cmd, "--spec is none or mtp, not '%s'", a->spec);
	if ((a->draft_n || a->draft_fixed) && !c->spec_mtp)
		return cli_usage_error(cmd, "%s", "--draft-n and --draft-fixed need --spec mtp");
	if (a->draft_n && !cli_parse_i64(a->draft_n, 1, CLI_DRAFT_N_MAX, &v))
		return cli_usage_error(cmd, "--draft-n wants 1..7 drafts per round, got '%s'", a->draft_n);
	if (a->draft_n)
		c->draft_n = (int)v;
	return 0;
}

static int check_sampling(const char *cmd, const cli_gen_args *a, cli_gen_config *c)
{
	int64_t v;
	c->sampling = (halo_sampling){.temperature = 0, .top_k = 0, .top_p = 1.0f};
	if (a->temp && (!cli_parse_f32(a->temp, &c->sampling.temperature) || c->sampling.temperature < 0))
		return cli_usage_error(cmd, "--temp wants a number >= 0, got '%s'", a->temp);
	if (a->top_k && !cli_parse_i64(a->top_k, 0, INT32_MAX, &v))
		return cli_usage_error(cmd, "--top-k wants a count, got '%s'", a->top_k);
	if (a->top_k)
		c->sampling.top_k = (int)v;
	if (a->top_p && (!cli_parse_f32(a->top_p, &c->sampling.top_p) || c->sampling.top_p <= 0 ||
			 c->sampling.top_p > 1))
		return cli_usage_error(cmd, "--top-p wants a number in (0, 1], got '%s'", a->top_p);
	if (a->seed && !cli_parse_i64(a->seed, 0, INT64_MAX, &v))
		return cli_usage_error(cmd, "--seed wants a non-negative integer, got '%s'", a->seed);
	c->seed = a->seed ? (uint64_t)v : 0;
	return 0;
}

int cli_gen_check(const char *cmd, const cli_gen_args *a, cli_gen_config *c)
{
	int64_t v;
	int rc;
	char why[256];
	c->open = (halo_open_options){.backend = a->backend ? a->backend : "vulkan", .device = -1,
				      .validation = a->validate};
	if (a->n_predict && !cli_parse_i64(a->n_predict, 0, 1 << 24, &c->n_predict))
		return cli_usage_error(cmd, "--n-predict wants a count, got '%s'", a->n_predict);
	if (!halo_backend_check(c->open.backend, why, sizeof(why)))
		return cli_usage_error(cmd, "--backend: %s", why);
	if (a->device && !cli_parse_i64(a->device, 0, 255, &v))
		return cli_usage_error(cmd, "--device wants an index, got '%s'", a->device);
	if (a->device)
		c->open.device = (int)v;
	if (a->tuning && a->no_tuning)
		return cli_usage_error(cmd, "%s", "--tuning and --no-tuning exclude each other");
	if ((rc = check_sampling(cmd, a, c)))
		return rc;
	return check_spec(cmd, a, c);
}

/* A drafter that does not fit the bundle is refused before anything runs:
 * run anyway, it would only waste time at 0% acceptance. */
static bool check_drafter(const char *bundle, const cli_gen_config *c, const halo_model *m, char *err,
			  size_t errlen)
{
	if (!c->spec_mtp)
		return true;
	char why[1536];
	if (halo_spec_check_model(m, HALO_MTP_STEP_ENTRY, c->draft_n, why, sizeof(why)) &&
	    halo_mtp_check_model(m, why, sizeof(why)))
		return true;
	snprintf(err, errlen, "--spec mtp refused: %s: %s", bundle, why);
	return false;
}

halo_model *cli_gen_open(const char *cmd, const char *bundle, const cli_gen_args *a, cli_gen_config *c,
			 cli_tuning *tuning, char *err, size_t errlen)
{
	/* Only Vulkan picks kernels from a database; a named DB is checked on
	 * any backend. */
	bool want_db = !a->no_tuning && (a->tuning || strcmp(c->open.backend, "vulkan") == 0);
	if (want_db && !cli_tuning_open(cmd, a->tuning, false, tuning, err, errlen))
		return NULL;
	c->open.tuning = tuning->db;
	halo_model *m = halo_model_open(bundle, &c->open, err, errlen);
	if (m && !check_drafter(bundle, c, m, err, errlen)) {
		halo_model_close(m);
		return NULL;
	}
	return m;
}

bool cli_text_open(cli_text *t, const halo_model *m, const char *bundle, char *err, size_t errlen)
{
	*t = (cli_text){.meta = {.bos.id = -1, .eos.id = -1}};
	size_t size, meta_size;
	const void *json = halo_model_section(m, "tokenizer", &size);
	const void *meta = halo_model_section(m, "tokenizer_meta", &meta_size);
	char label[600];
	if (!json || !meta) {
		snprintf(err, errlen, "bundle %s has no tokenizer (its checkpoint had no tokenizer.json); text needs "
			 "one: give token ids with halo run --tokens", bundle);
		return false;
	}
	snprintf(label, sizeof label, "bundle %s: section 'tokenizer'", bundle);
	if (!(t->tok = halo_tokenizer_load_mem(json, size, label, err, errlen)))
		return false;
	snprintf(label, sizeof label, "bundle %s: section 'tokenizer_meta'", bundle);
	return halo_tokenizer_meta_parse(meta, meta_size, label, &t->meta, err, errlen);
}

void cli_text_close(cli_text *t)
{
	halo_tokenizer_free(t->tok);
	halo_tokenizer_meta_free(&t->meta);
}
