/* config.json access for param binding (docs/ir.md, "Params"): a key is
 * looked up at the top level, then inside `text_config`. Errors name the
 * config file and the key. */
#ifndef HALO_IR_CONFIG_H
#define HALO_IR_CONFIG_H

#include "ir/ir.h"

typedef struct ir_config ir_config;

/* Parses config_json (config_len bytes; need not be NUL-terminated).
 * name is used in messages. Returns NULL and fills err on failure.
 * Free with ir_config_free(). */
ir_config *ir_config_parse(const char *name, const char *config_json, size_t config_len, ir_error *err);
void ir_config_free(ir_config *c); /* NULL ok */

typedef enum { IR_CFG_ABSENT, IR_CFG_INT, IR_CFG_FLOAT } ir_cfg_kind;

/* Looks up a number (bools bind as 0/1). Returns false with err set when the
 * key exists but is not a number; *kind is IR_CFG_ABSENT for a missing key
 * or a JSON null. */
bool ir_config_number(const ir_config *c, const char *key, ir_cfg_kind *kind, int64_t *i, double *f, ir_error *err);
/* Looks up an array of strings: *n_out items, each valid until
 * ir_config_free(); *n_out = -1 when the key is absent. */
bool ir_config_strings(ir_config *c, const char *key, const char ***out, int *n_out, ir_error *err);
/* Looks up an array of integers (integral floats count): *n_out items in
 * *out, a malloc'd array the caller frees (NULL when empty); *n_out = -1
 * when the key is absent. */
bool ir_config_ints(const ir_config *c, const char *key, int64_t **out, int *n_out, ir_error *err);
/* Looks up a string: *out valid until ir_config_free(), NULL when the key
 * is absent or a JSON null; false with err set for any other kind. */
bool ir_config_string(const ir_config *c, const char *key, const char **out, ir_error *err);
/* The config's name as given to ir_config_parse (for messages). */
const char *ir_config_name(const ir_config *c);

#endif
