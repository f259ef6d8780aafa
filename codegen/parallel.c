#include "codegen/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#define CG_MAX_THREADS 64

typedef struct {
	size_t n, grain;
	cg_range_fn fn;
	void *ctx;
	atomic_size_t next; /* the next grain-aligned start */
} loop;

static void *worker(void *arg)
{
	loop *l = arg;
	for (size_t lo; (lo = atomic_fetch_add(&l->next, l->grain)) < l->n;)
		l->fn(l->ctx, lo, lo + l->grain < l->n ? lo + l->grain : l->n);
	return NULL;
}

int cg_cores(void)
{
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
	const char *env = getenv("HALO_THREADS");
	char *end;
	long cap = env && *env ? strtol(env, &end, 10) : 0;
	if (env && *env && *end == 0 && cap >= 1 && cap < n)
		n = (int)cap;
	return n < 1 ? 1 : n;
}

void cg_parallel_for(size_t n, size_t grain, cg_range_fn fn, void *ctx)
{
	if (grain == 0)
		grain = 1;
	size_t chunks = (n + grain - 1) / grain;
	size_t want = (size_t)cg_cores();
	want = want < chunks ? want : chunks;
	want = want < CG_MAX_THREADS ? want : CG_MAX_THREADS;
	if (want < 2) {
		if (n)
			fn(ctx, 0, n);
		return;
	}
	loop l = {.n = n, .grain = grain, .fn = fn, .ctx = ctx};
	atomic_init(&l.next, 0);
	pthread_t th[CG_MAX_THREADS];
	size_t started = 0;
	while (started < want - 1 && pthread_create(&th[started], NULL, worker, &l) == 0)
		started++;
	worker(&l);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}
