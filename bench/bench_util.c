#include "bench/bench_util.h"

#include <stdio.h>
#include <stdlib.h>

void bench_die(const char *prog, const char *what, const char *msg)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, msg);
	exit(1);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return v[n / 2];
}
