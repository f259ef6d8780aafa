/* Sampling: greedy ties, determinism per seed, and the empirical distribution
 * of draws against the probabilities (chi-square). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/sample.h"
#include "tests/check.h"

/* The definition, one logit at a time. */
static int32_t argmax_naive(const float *l, int64_t n)
{
	int64_t best = -1;
	for (int64_t i = 0; i < n; i++)
		if (l[i] > -INFINITY && (best < 0 || l[i] > l[best]))
			best = i;
	return (int32_t)(best < 0 ? 0 : best);
}

static void test_argmax_ties(void)
{
	float l[] = {0.5f, 2.0f, -1.0f, 2.0f};
	CHECK(halo_argmax(l, 4) == 1, "ties go to the lowest index");
	float nan0[] = {NAN, 1.0f, 3.0f, 3.0f, NAN};
	CHECK(halo_argmax(nan0, 5) == 2, "NaN never wins, even first");
	float inf[] = {-INFINITY, -INFINITY, NAN};
	CHECK(halo_argmax(inf, 3) == 0, "nothing above -infinity: 0");
}

/* The eight-lane scan against the definition: lengths around its lane
 * count and a vocabulary's, values drawn from a few levels (many ties, in
 * every lane), with NaNs and infinities sprinkled in. */
static void test_argmax_lanes(void)
{
	static const int64_t lengths[] = {1, 7, 8, 9, 15, 16, 17, 100, 248320};
	static float l[248320];
	uint32_t seed = 7;
	for (size_t c = 0; c < sizeof lengths / sizeof *lengths; c++)
		for (int rep = 0; rep < 20; rep++) {
			int64_t n = lengths[c];
			for (int64_t i = 0; i < n; i++) {
				seed = seed * 1664525u + 1013904223u;
				uint32_t r = seed >> 24;
				l[i] = r < 4 ? NAN : r < 8 ? -INFINITY : r < 10 ? INFINITY : (float)(r % 5);
				if (rep % 2)
					l[i] = r < 4 ? NAN : (float)(seed >> 8) * 0x1p-20f; /* few ties */
			}
			CHECK(halo_argmax(l, n) == argmax_naive(l, n), "n %lld rep %d: %d, want %d", (long long)n, rep,
			      halo_argmax(l, n), argmax_naive(l, n));
		}
}

static void test_probs_topk_topp(void)
{
	float logits[] = {1.0f, 3.0f, 2.0f, 0.0f, 3.0f};
	float p[5];
	int32_t scratch[5];
	halo_sampling s = {.temperature = 1.0f, .top_k = 2, .top_p = 1.0f};
	halo_sampling_probs(&s, logits, 5, p, scratch);
	CHECK(p[1] > 0.49f && p[1] < 0.51f && p[4] > 0.49f && p[4] < 0.51f, "top-2 keeps the two 3.0 logits");
	CHECK(p[0] == 0 && p[2] == 0 && p[3] == 0, "top-2 zeroes the rest");

	/* top_p = 0.5 over softmax(1,3,2,0,3): the two largest hold 0.42 + 0.42. */
	s = (halo_sampling){.temperature = 1.0f, .top_k = 0, .top_p = 0.5f};
	halo_sampling_probs(&s, logits, 5, p, scratch);
	CHECK(p[1] > 0.49f && p[4] > 0.49f && p[2] == 0, "top-p 0.5 keeps the smallest prefix reaching 0.5");
}

static void test_determinism(void)
{
	float logits[64];
	for (int i = 0; i < 64; i++)
		logits[i] = (float)sin(i * 1.7) * 3.0f;
	float p[64];
	int32_t scratch[64];
	halo_sampling s = {.temperature = 0.8f, .top_k = 0, .top_p = 0.95f};
	halo_rng a, b;
	halo_rng_seed(&a, 1234);
	halo_rng_seed(&b, 1234);
	for (int i = 0; i < 200; i++) {
		int32_t x = halo_sample(&s, logits, 64, &a, p, scratch);
		int32_t y = halo_sample(&s, logits, 64, &b, p, scratch);
		CHECK(x == y, "same seed, same draws (draw %d: %d vs %d)", i, x, y);
	}
}

/* 1e5 draws from a 6-way distribution; chi-square with 5 degrees of freedom
 * must stay under 20.5 (p = 0.001): a correct sampler fails 1 run in 1000,
 * and the fixed seed makes the result repeatable. */
static void test_distribution(void)
{
	float logits[6] = {0.0f, 1.0f, -0.5f, 2.0f, 0.3f, -2.0f};
	float p[6];
	int32_t scratch[6];
	halo_sampling s = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f};
	halo_sampling_probs(&s, logits, 6, p, scratch);
	halo_rng rng;
	halo_rng_seed(&rng, 42);
	enum { N = 100000 };
	long count[6] = {0};
	for (int i = 0; i < N; i++)
		count[halo_sample_from(p, 6, &rng)]++;
	double chi2 = 0;
	for (int i = 0; i < 6; i++) {
		double expect = N * (double)p[i];
		chi2 += (count[i] - expect) * (count[i] - expect) / expect;
	}
	CHECK(chi2 < 20.5, "chi-square %.2f over 5 dof exceeds the 0.001 critical value", chi2);
}

int main(void)
{
	test_argmax_ties();
	test_argmax_lanes();
	test_probs_topk_topp();
	test_determinism();
	test_distribution();
	if (check_failures)
		return 1;
	puts("sample: ok");
	return 0;
}
