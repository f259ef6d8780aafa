/* Data-parallel loops for the converters: fn(ctx, lo, hi) runs on disjoint
 * ranges [lo, hi) of [0, n) on every core. Each range writes only its own
 * outputs, so the result does not depend on the number of threads; the
 * caller's thread works too, and a failure to start a thread only means
 * fewer of them. */
#ifndef HALO_CODEGEN_PARALLEL_H
#define HALO_CODEGEN_PARALLEL_H

#include <stddef.h>

typedef void (*cg_range_fn)(void *ctx, size_t lo, size_t hi);

/* The cores this process may run on (its affinity mask: taskset and cgroup
 * cpusets count), at least 1; HALO_THREADS=N (a positive integer) caps it
 * at N (any other value is ignored). */
int cg_cores(void);

/* Ranges are multiples of `grain` (the last one excepted); below two grains
 * the loop runs on the calling thread alone. */
void cg_parallel_for(size_t n, size_t grain, cg_range_fn fn, void *ctx);

#endif
