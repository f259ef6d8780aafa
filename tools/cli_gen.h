/* The flags halo run and halo chat share: backend and device, sampling,
 * speculative decoding, the tuning DB; and the bundle's text side
 * (tokenizer, tokenizer_meta) for their text modes. */
#ifndef HALO_TOOLS_CLI_GEN_H
#define HALO_TOOLS_CLI_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/halo.h"
#include "runtime/sample.h"
#include "runtime/tokenizer.h"
#include "runtime/tokenizer_meta.h"
#include "tools/cli_tuning.h"

/* The flags as given (NULL: not given). */
typedef struct {
	const char *n_predict, *backend, *device, *temp, *top_k, *top_p, *seed, *spec, *draft_n, *tuning;
	bool validate, no_tuning, draft_fixed;
} cli_gen_args;

/* The flags checked, with their defaults. */
typedef struct {
	int64_t n_predict;
	uint64_t seed;
	halo_sampling sampling;
	bool spec_mtp, draft_fixed;
	int draft_n;
	halo_open_options open;
} cli_gen_config;

/* When argv[*i] is one of the shared flags, takes it (and its value) into
 * a and returns true; a missing value sets *rc to the usage error. */
bool cli_gen_take(const char *cmd, int argc, char **argv, int *i, cli_gen_args *a, int *rc);
/* Checks the values into c (c->n_predict holds the command's default on
 * entry); returns 0 or the usage error's exit status (2), the message
 * naming the flag. */
int cli_gen_check(const char *cmd, const cli_gen_args *a, cli_gen_config *c);
/* Opens the tuning DB (Vulkan, or a DB named on any backend) and the model;
 * with --spec mtp refuses, naming the bundle, one without the MTP head's
 * entries. tuning is freed by the caller (halo_tuning_db_free). */
halo_model *cli_gen_open(const char *cmd, const char *bundle, const cli_gen_args *a, cli_gen_config *c,
			 cli_tuning *tuning, char *err, size_t errlen);

/* The bundle's text side. */
typedef struct {
	halo_tokenizer *tok;
	halo_tokenizer_meta meta;
} cli_text;

/* Reads the tokenizer and tokenizer_meta sections of m's bundle (named
 * bundle in messages); a bundle without them is refused, saying so. Free
 * with cli_text_close (also after a failure). */
bool cli_text_open(cli_text *t, const halo_model *m, const char *bundle, char *err, size_t errlen);
void cli_text_close(cli_text *t);

#endif
