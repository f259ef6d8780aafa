/* Command-line helpers shared by the halo subcommands. */
#ifndef HALO_TOOLS_CLI_ARGS_H
#define HALO_TOOLS_CLI_ARGS_H

#include <stdbool.h>
#include <stdint.h>

/* Prints "halo CMD: <fmt with arg> (see halo CMD --help)" to stderr and
 * returns 2, the exit status of a command-line error. */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);

/* When argv[*i] is opt, as "--opt VALUE" or "--opt=VALUE", stores VALUE in
 * *dst (advancing *i past it) and returns true; a missing value sets *rc to
 * the usage error. Returns false when argv[*i] is another option. */
bool cli_take_value(const char *cmd, int argc, char **argv, int *i, const char *opt, const char **dst,
		    int *rc);

/* Parses a whole decimal integer in [lo, hi]; false otherwise. */
bool cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out);
/* Parses a whole finite float. */
bool cli_parse_f32(const char *s, float *out);
/* Seconds on the monotonic clock, for the commands' timings. */
double cli_now_s(void);

#endif
