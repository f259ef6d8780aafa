#include "tools/cli_args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
	fprintf(stderr, "halo %s: ", cmd);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see halo %s --help)\n", cmd);
	return 2;
}

bool cli_take_value(const char *cmd, int argc, char **argv, int *i, const char *opt, const char **dst, int *rc)
{
	size_t len = strlen(opt);
	const char *a = argv[*i];
	if (strncmp(a, opt, len) != 0 || (a[len] != '\0' && a[len] != '='))
		return false;
	if (a[len] == '=')
		*dst = a + len + 1;
	else if (*i + 1 < argc)
		*dst = argv[++*i];
	else
		*rc = cli_usage_error(cmd, "option '%s' needs a value", opt);
	return true;
}

bool cli_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (!*s || *end || errno || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

bool cli_parse_f32(const char *s, float *out)
{
	char *end;
	errno = 0;
	float v = strtof(s, &end);
	if (!*s || *end || errno || !isfinite(v))
		return false;
	*out = v;
	return true;
}

double cli_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
