/* Measures what opening a bundle costs: full verification against
 * HALO_BUNDLE_SKIP_WEIGHTS_CHECKSUM, for a weights section of N MiB
 * (argument 1, default 1024). The numbers go into docs/bundle.md. */
#include "codegen/bundle_write.h"
#include "runtime/bundle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fill(void *ctx, uint64_t offset, void *buf, size_t len, char *err, size_t errlen)
{
	memset(buf, (int)(offset >> 20), len);
	return 0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Best of three opens, so the page cache is warm for every timed run. */
static double time_open(const char *path, unsigned flags)
{
	double best = 1e30;
	char err[512];
	for (int i = 0; i < 3; i++) {
		double t0 = now();
		halo_bundle *b = halo_bundle_open_flags(path, flags, err, sizeof err);
		double t = now() - t0;
		if (!b) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		halo_bundle_close(b);
		best = t < best ? t : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 1024;
	char path[256], err[512];
	snprintf(path, sizeof path, "/tmp/halo_bench_%ld.halo", (long)getpid());
	halo_bundle_writer *w = halo_bundle_writer_new();
	double t0 = now();
	if (halo_bundle_writer_add_stream(w, "weights", mib << 20, 0, fill, NULL, err, sizeof err) ||
	    halo_bundle_writer_write(w, path, err, sizeof err)) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	double tw = now() - t0;
	halo_bundle_writer_free(w);
	double tv = time_open(path, 0), ts = time_open(path, HALO_BUNDLE_SKIP_WEIGHTS_CHECKSUM);
	printf("weights %llu MiB: write %.3f s; open verified %.3f s (%.2f GB/s); open skipping weights %.6f s\n",
	       (unsigned long long)mib, tw, tv, (double)(mib << 20) / tv / 1e9, ts);
	unlink(path);
	return 0;
}
