/* Tokenizer encode speed (runtime/tokenizer.h), single thread:
 *   tokenize_bench TOKENIZER.json TEXT_FILE [REPEATS]
 * Loads the tokenizer, encodes the whole file once on a fresh tokenizer
 * (cold: every pre-token through BPE) and then REPEATS times (warm: the
 * pre-token cache full), and decodes the ids. Prints MB/s and tokens/s;
 * bench/tokenize_bench_hf.js does the same with Hugging Face tokenizers. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/tokenizer.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	if (f && fseek(f, 0, SEEK_END) == 0) {
		long n = ftell(f);
		rewind(f);
		buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n)
			*len = (size_t)n;
		else {
			free(buf);
			buf = NULL;
		}
	}
	if (f)
		fclose(f);
	return buf;
}

static void report(const char *what, double s, size_t bytes, size_t n_ids, int reps)
{
	printf("%-7s %8.1f ms  %7.2f MB/s  %9.0f tokens/s\n", what, s * 1e3 / reps, (double)bytes * reps / s / 1e6,
	       (double)n_ids * reps / s);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: tokenize_bench TOKENIZER.json TEXT_FILE [REPEATS]\n");
		return 2;
	}
	int reps = argc > 3 ? atoi(argv[3]) : 5;
	size_t len;
	char *text = read_file(argv[2], &len), err[512];
	if (!text || reps < 1) {
		fprintf(stderr, "tokenize_bench: cannot read %s\n", argv[2]);
		return 1;
	}
	double t0 = now_s();
	halo_tokenizer *t = halo_tokenizer_load(argv[1], err, sizeof err);
	if (!t) {
		fprintf(stderr, "tokenize_bench: %s\n", err);
		return 1;
	}
	double t1 = now_s();
	int32_t *ids = NULL;
	size_t n = 0;
	bool ok = halo_tokenizer_encode(t, text, len, &ids, &n, err, sizeof err);
	double t2 = now_s();
	for (int r = 0; ok && r < reps; r++) {
		free(ids);
		ok = halo_tokenizer_encode(t, text, len, &ids, &n, err, sizeof err);
	}
	double t3 = now_s();
	char *back = NULL;
	size_t back_len;
	ok = ok && halo_tokenizer_decode(t, ids, n, false, &back, &back_len, err, sizeof err);
	double t4 = now_s();
	if (!ok) {
		fprintf(stderr, "tokenize_bench: %s\n", err);
		return 1;
	}
	printf("%s: %zu bytes, %zu tokens; load %.0f ms\n", argv[2], len, n, (t1 - t0) * 1e3);
	report("cold", t2 - t1, len, n, 1);
	report("warm", t3 - t2, len, n, reps);
	report("decode", t4 - t3, len, n, 1);
	free(back);
	free(ids);
	free(text);
	halo_tokenizer_free(t);
	return 0;
}
