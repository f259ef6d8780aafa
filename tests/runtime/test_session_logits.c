/* halo_session_logits, the in-place view of a step's logits that greedy
 * decoding, verification and drafting read instead of a copy: none before a
 * step and after a reset; after a step the same bits halo_session_step
 * copies out, as many rows as it copies (every row of an all-rows entry,
 * the last row of a last-row one); after a prefill its last chunk's rows.
 * Two sessions of one qwen3 bundle take the same tokens, one copying, one
 * reading in place. Backend from argv[1] (ref or vulkan, validation on). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/runtime/model_check.h"

#define FIX "tests/fixtures/qwen3_tiny/"

/* The view of s holds want_rows rows equal to want's, bitwise. */
static void check_view(const char *what, halo_session *s, const float *want, int64_t want_rows, int64_t vocab)
{
	int64_t rows = -1;
	const float *got = halo_session_logits(s, &rows);
	MC_CHECK(got && rows == want_rows, "%s: view of %lld rows (want %lld)", what, (long long)rows,
		 (long long)want_rows);
	if (got && rows == want_rows)
		MC_CHECK(mc_bitwise(what, got, want, (size_t)(rows * vocab)), "%s: the view differs from the copy", what);
}

int main(int argc, char **argv)
{
	if (argc != 2 || !halo_backend_check(argv[1], NULL, 0)) {
		fprintf(stderr, "usage: test_session_logits BACKEND\n");
		return 2;
	}
	char bundle[64], err[2048];
	snprintf(bundle, sizeof(bundle), "session_logits_%s_%d.halo", argv[1], (int)getpid());
	mc_compile_for("models/qwen3.yaml", FIX, bundle, false, argv[1]);
	halo_model *m = mc_open(bundle, argv[1]);
	halo_session *s = mc_session(m);
	int64_t vocab = halo_model_vocab(m), rows = -1;
	MC_CHECK(!halo_session_logits(s, &rows) && rows == 0, "a fresh session has no logits (%lld rows)",
		 (long long)rows);
	enum { N = 12 };
	int32_t tok[N];
	for (int i = 0; i < N; i++)
		tok[i] = (int32_t)((7 + 31 * i) % vocab);
	float *all = malloc((size_t)(N * vocab) * sizeof(float)), *last = malloc((size_t)vocab * sizeof(float));
	float *copy = malloc((size_t)(N * vocab) * sizeof(float));
	/* prefill with every row: the view is the last chunk's rows (one chunk
	 * here: all N), then with the last row only (prefill_last, one row) */
	MC_CHECK(halo_session_prefill(s, tok, N, all, last, err, sizeof(err)), "prefill: %s", err);
	check_view("prefill, every row", s, all, N, vocab);
	MC_CHECK(halo_session_reset(s, err, sizeof(err)), "reset: %s", err);
	MC_CHECK(!halo_session_logits(s, NULL), "a reset session has no logits");
	MC_CHECK(halo_session_prefill(s, tok, N, NULL, last, err, sizeof(err)), "prefill_last: %s", err);
	check_view("prefill, the last row", s, last, 1, vocab);
	/* a last-row entry stepped directly: the copy is its last row too */
	MC_CHECK(halo_session_reset(s, err, sizeof(err)) &&
			 halo_session_step(s, "prefill_last", tok, N, copy, err, sizeof(err)),
		 "prefill_last step: %s", err);
	check_view("prefill_last step", s, copy, 1, vocab);
	/* decode and verify steps: the copy of one session, the view of another */
	halo_session *t = mc_session(m);
	MC_CHECK(halo_session_prefill(t, tok, N, NULL, last, err, sizeof(err)), "prefill: %s", err);
	for (int64_t n = 1; n <= 3; n++) {
		char what[64];
		snprintf(what, sizeof(what), "%s step of %lld", n == 1 ? "decode" : "verify", (long long)n);
		const char *entry = n == 1 ? "decode" : "verify";
		MC_CHECK(halo_session_step(s, entry, tok, n, copy, err, sizeof(err)) &&
				 halo_session_step(t, entry, tok, n, NULL, err, sizeof(err)),
			 "%s: %s", what, err);
		check_view(what, t, copy, n, vocab);
		check_view(what, s, copy, n, vocab); /* the copying session's own view */
		if (n > 1)
			MC_CHECK(halo_session_keep(s, n, err, sizeof(err)) && halo_session_keep(t, n, err, sizeof(err)),
				 "keep: %s", err);
	}
	free(all), free(last), free(copy);
	halo_session_free(t);
	halo_session_free(s);
	halo_model_close(m);
	remove(bundle);
	if (mc_failures)
		return 1;
	printf("session logits %s: ok\n", argv[1]);
	return 0;
}
