/* Helpers the Vulkan benchmarks share: failing loudly and taking medians. */
#ifndef HALO_BENCH_UTIL_H
#define HALO_BENCH_UTIL_H

#include <stddef.h>

/* Prints "prog: what: msg" on stderr and exits with status 1. */
void bench_die(const char *prog, const char *what, const char *msg) __attribute__((noreturn));
/* The median of v[0..n) (n >= 1); sorts v in place. */
double bench_median(double *v, size_t n);

#endif
