/* The Qwen4-Exp reference ops (reduce_mean, signed_sqrt, conv1d_dilated,
 * ngram_embed, qsa_select, masked_attention) on cases worked out by hand,
 * the published PLE hash constants (models.md section 2.4), and properties:
 * a step split into chunks through the state equals one call, a dilation of 1
 * is the plain causal conv, an all-ones mask is plain attention. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/drivers/ref/ref_ops.h"
#include "tests/runtime/expect.h"

/* Deterministic values in [-1, 1). */
static void fill(float *x, int64_t n, uint32_t seed)
{
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		x[i] = (float)((seed >> 8) / 8388608.0 - 1.0);
	}
}

static void test_reduce_mean(void)
{
	/* [2,3,2], mean over axis 1 */
	const float x[12] = {1, 2, 3, 4, 5, 6, -1, -2, -3, -4, -5, 0};
	float y[4];
	ref_reduce_mean(x, y, 2, 3, 2);
	expect_near("reduce_mean [0,0]", y[0], 3.0, 0);
	expect_near("reduce_mean [0,1]", y[1], 4.0, 0);
	expect_near("reduce_mean [1,0]", y[2], -3.0, 0);
	expect_near("reduce_mean [1,1]", y[3], -2.0, 0);
}

static void test_signed_sqrt(void)
{
	const float x[5] = {4.0f, -9.0f, 0.0f, 1e-8f, -1e-8f};
	const double want[5] = {2.0, -3.0, 0.0, 1e-3, -1e-3};
	float y[5];
	ref_signed_sqrt(x, y, 5, 1e-6f);
	for (int i = 0; i < 5; i++)
		expect_near("signed_sqrt", y[i], want[i], 1e-9);
}

static void test_conv1d_dilated(void)
{
	/* C = 1, K = 2, dilation 3: y[t] = w0*s[t] + w1*s[t+3], s = [0,0,0; x] */
	const float x[5] = {1, 2, 3, 4, 5}, w[2] = {10, 1}, zero[3] = {0};
	float y[5], st[3];
	ref_conv1d_dilated(x, zero, w, y, st, NULL, 5, 1, 2, 3, false);
	const float want[5] = {1, 2, 3, 14, 25};
	for (int t = 0; t < 5; t++)
		expect_near("conv1d_dilated hand", y[t], want[t], 0);
	expect_true("conv1d_dilated state = last 3 inputs", st[0] == 3 && st[1] == 4 && st[2] == 5);

	/* dilation 1 is conv1d_causal; chunks through the state equal one call */
	enum { T = 7, C = 3, K = 4, D = 3 };
	float xs[T * C], ws[C * K], s0[(K - 1) * D * C], a[T * C], b[T * C], sa[(K - 1) * D * C], sb[(K - 1) * D * C];
	fill(xs, T * C, 1), fill(ws, C * K, 2), fill(s0, (K - 1) * D * C, 3);
	ref_conv1d_dilated(xs, s0, ws, a, sa, NULL, T, C, K, 1, true);
	ref_conv1d_causal(xs, s0, ws, b, sb, NULL, T, C, K, true);
	expect_true("dilation 1 = conv1d_causal", memcmp(a, b, sizeof a) == 0 && memcmp(sa, sb, (K - 1) * C * 4) == 0);
	ref_conv1d_dilated(xs, s0, ws, a, sa, NULL, T, C, K, D, true);
	memcpy(sb, s0, sizeof sb);
	ref_conv1d_dilated(xs, sb, ws, b, sb, NULL, 2, C, K, D, true);
	ref_conv1d_dilated(xs + 2 * C, sb, ws, b + 2 * C, sb, NULL, T - 2, C, K, D, true);
	expect_true("conv1d_dilated: 2 + 5 tokens = 7", memcmp(a, b, sizeof a) == 0 && memcmp(sa, sb, sizeof sa) == 0);
}

static const ref_ngram_params tiny_ple = {.ngram = 3, .heads_per_ngram = 2, .eos = 1, .vocab = 256, .seed = 1234,
					  .layer_index = 0, .table_base = 64};

static void test_ngram_constants(void)
{
	/* the published config's multipliers and tables (models.md 2.4 (b), (c)) */
	ref_ngram_params pub = {.ngram = 3, .heads_per_ngram = 8, .eos = 248044, .vocab = 248320, .seed = 1234,
				.layer_index = 0, .table_base = 20000000};
	int64_t m[3], size[16], off[16];
	ref_ngram_multipliers(&pub, m);
	expect_true("published multipliers",
		    m[0] == 23703573157769 && m[1] == 20109073645365 && m[2] == 8052911324071);
	ref_ngram_tables(&pub, size, off);
	expect_true("published primes", size[0] == 20000003 && size[15] == 20000171);
	expect_true("published table rows", off[15] + size[15] == 320001446);
	ref_ngram_tables(&tiny_ple, size, off);
	expect_true("tiny primes 67 71 73 79", size[0] == 67 && size[1] == 71 && size[2] == 73 && size[3] == 79);
	expect_true("tiny offsets", off[0] == 0 && off[1] == 67 && off[2] == 138 && off[3] == 211);
	/* a second PLE layer takes the next primes */
	ref_ngram_params second = tiny_ple;
	second.layer_index = 1;
	ref_ngram_tables(&second, size, off);
	expect_true("second PLE layer primes", size[0] == 83 && size[3] == 101);
}

/* Row ids recovered from the embedding: table row r holds the value r. */
static void ngram_rows(const int32_t *ids, float *hist, int64_t T, float *rows)
{
	static float table[384];
	for (int r = 0; r < 384; r++)
		table[r] = (float)r;
	ref_error e;
	expect_true("ngram_embed runs", ref_ngram_embed(&tiny_ple, table, ids, hist, rows, hist, NULL, T, 384, 1, &e));
}

static void test_ngram_embed(void)
{
	int64_t m[3];
	ref_ngram_multipliers(&tiny_ple, m);
	/* token 0 after the start: bigram = 5*m0 ^ eos*m1, trigram ^= eos*m2 */
	const int32_t ids[8] = {5, 7, 1, 5, 7, 1, 1, 5};
	float hist[2] = {0, 0}, rows[8 * 4];
	ngram_rows(ids, hist, 8, rows);
	uint64_t bi = (uint64_t)(5 * m[0]) ^ (uint64_t)(1 * m[1]), tri = bi ^ (uint64_t)(1 * m[2]);
	expect_true("t0 bigram head 0", rows[0] == (float)(bi % 67));
	expect_true("t0 bigram head 1", rows[1] == (float)(bi % 71 + 67));
	expect_true("t0 trigram head 0", rows[2] == (float)(tri % 73 + 138));
	expect_true("t0 trigram head 1", rows[3] == (float)(tri % 79 + 211));
	bi = (uint64_t)(7 * m[0]) ^ (uint64_t)(5 * m[1]);
	tri = bi ^ (uint64_t)(1 * m[2]);
	expect_true("t1 bigram", rows[4] == (float)(bi % 67) && rows[6] == (float)(tri % 73 + 138));
	/* an EOS restarts the windows: tokens 3, 4 hash like tokens 0, 1; and
	 * after two EOS in a row, token 7 like token 0 */
	expect_true("EOS restart", memcmp(rows + 12, rows, 8 * sizeof(float)) == 0);
	expect_true("EOS EOS restart", memcmp(rows + 28, rows, 4 * sizeof(float)) == 0);
	expect_true("history = last two ids + 1", hist[0] == 2 && hist[1] == 6);

	/* one call of 8 tokens = 3 tokens then 5 through the history */
	float h2[2] = {0, 0}, split[8 * 4];
	ngram_rows(ids, h2, 3, split);
	ngram_rows(ids + 3, h2, 5, split + 12);
	expect_true("ngram_embed: 3 + 5 tokens = 8", memcmp(split, rows, sizeof rows) == 0);

	ref_error e;
	const int32_t bad[1] = {256};
	float out[4], hz[2] = {0, 0}, table[384] = {0};
	expect_true("id outside the vocabulary is refused",
		    !ref_ngram_embed(&tiny_ple, table, bad, hz, out, hz, NULL, 1, 384, 1, &e) && strstr(e.msg, "vocabulary"));
	expect_true("too small a table is refused",
		    !ref_ngram_embed(&tiny_ple, table, ids, hz, out, hz, NULL, 1, 200, 1, &e) && strstr(e.msg, "rows"));
}

/* Keys: block 0 = (1,0) twice, block 1 = (0,1) twice, then (1,1). After the
 * (1+0) rms norm and rope (theta 1 for rot_dim 2) at position 0 resp. 2,
 * block 0 keys on +x and block 1 on (-sin 2, cos 2)*sqrt(2), mostly -x. */
static void test_qsa_select(void)
{
	const float keys[5 * 2] = {1, 0, 1, 0, 0, 1, 0, 1, 1, 1}, w[2] = {0, 0};
	const float q[5 * 2] = {1, 0, 1, 0, 1, 0, -1, 0, 1, 0};
	const float want[5][5] = {{1, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {1, 1, 1, 0, 0}, {0, 0, 1, 1, 0}, {1, 1, 0, 0, 1}};
	ref_qsa_params p = {.block = 2, .top_blocks = 1, .rot_dim = 2, .base = 10000.0f, .eps = 1e-6f};
	float mask[5 * 5];
	ref_error e;
	expect_true("qsa_select runs", ref_qsa_select(&p, q, keys, w, mask, 5, 1, 2, 5, 0, &e));
	for (int t = 0; t < 5; t++)
		for (int j = 0; j < 5; j++)
			expect_near("qsa_select mask", mask[t * 5 + j], want[t][j], 0);
	/* a decode step at pos 3 sees the same rows */
	float m2[2 * 5];
	expect_true("qsa_select pos 3", ref_qsa_select(&p, q + 6, keys, w, m2, 2, 1, 2, 5, 3, &e));
	expect_true("qsa_select chunked = one call", memcmp(m2, mask + 15, sizeof m2) == 0);
	/* while every complete block fits the budget, the mask is causal */
	p.top_blocks = 2;
	expect_true("qsa_select dense", ref_qsa_select(&p, q, keys, w, mask, 5, 1, 2, 5, 0, &e));
	for (int t = 0; t < 5; t++)
		for (int j = 0; j < 5; j++)
			expect_near("dense mask is causal", mask[t * 5 + j], j <= t, 0);
	expect_true("qsa_select past the cache is refused", !ref_qsa_select(&p, q, keys, w, mask, 5, 1, 2, 5, 1, &e));
}

static void test_masked_attention(void)
{
	enum { T = 4, HQ = 4, HK = 2, D = 8, C = 6, POS = 2 };
	float q[T * HQ * D], k[C * HK * D], v[C * HK * D], mask[T * C], a[T * HQ * D], b[T * HQ * D];
	fill(q, T * HQ * D, 4), fill(k, C * HK * D, 5), fill(v, C * HK * D, 6);
	for (int i = 0; i < T * C; i++)
		mask[i] = 1.0f;
	ref_error e;
	expect_true("masked_attention runs", ref_masked_attention(q, k, v, mask, a, T, HQ, HK, D, D, C, POS, 0.3f, &e));
	expect_true("attention runs", ref_attention(q, k, v, b, T, HQ, HK, D, D, C, POS, 0.3f, &e));
	double worst = 0;
	for (int i = 0; i < T * HQ * D; i++)
		worst = fmax(worst, fabs(a[i] - b[i]));
	expect_near("all-ones mask = attention", worst, 0.0, 1e-6);
	/* one visible key: the output is that key's value */
	memset(mask, 0, sizeof mask);
	for (int t = 0; t < T; t++)
		mask[t * C + 1] = 1.0f;
	expect_true("one key", ref_masked_attention(q, k, v, mask, a, T, HQ, HK, D, D, C, POS, 0.3f, &e));
	for (int t = 0; t < T; t++)
		for (int h = 0; h < HQ; h++)
			for (int i = 0; i < D; i++)
				expect_near("one key: its value", a[(t * HQ + h) * D + i], v[(1 * HK + h / 2) * D + i], 1e-7);
	memset(mask, 0, sizeof mask);
	expect_true("a row with no key is refused",
		    !ref_masked_attention(q, k, v, mask, a, T, HQ, HK, D, D, C, POS, 0.3f, &e) && strstr(e.msg, "no key"));
}

int main(void)
{
	test_reduce_mean();
	test_signed_sqrt();
	test_conv1d_dilated();
	test_ngram_constants();
	test_ngram_embed();
	test_qsa_select();
	test_masked_attention();
	if (expect_failures) {
		printf("%d failure(s)\n", expect_failures);
		return 1;
	}
	printf("all Qwen4-Exp reference op tests passed\n");
	return 0;
}
