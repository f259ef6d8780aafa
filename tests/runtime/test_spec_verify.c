/* The acceptance rules of runtime/spec_verify on a 6-token vocabulary.
 *
 * Greedy: each acceptance length and the bonus token, on hand-made rows.
 *
 * Stochastic: the target rows are fixed, so speculative sampling must emit
 * tokens distributed as p_0 = halo_sampling_probs(row 0), then (after an
 * accepted first draft) as p_1, whatever the drafter's q. Over DRAWS rounds
 * with drafts drawn from q, the first and second emitted tokens are tested
 * against p_0 and p_1, and the bonus token after a full acceptance against
 * p_2, by Pearson's chi-square at significance 0.001 (the draws are seeded,
 * so the result is the same on every run); a token with p = 0 must never
 * appear. The same statistic applied to the drafts
 * themselves must reject p whenever q differs from it: the test can tell. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtime/spec_verify.h"
#include "tests/check.h"

#define V 6
#define DRAWS 200000
#define N_DRAFTS 2

/* Upper 0.001 quantiles of chi-square with 1..V-1 degrees of freedom. */
static const double chi2_crit[V] = {0, 10.828, 13.816, 16.266, 18.467, 20.515};

static void test_greedy(void)
{
	/* Row argmaxes: 2, 4, 1 (row 2 ties 1 and 3: the lowest index wins). */
	const float rows[3 * V] = {0, 1, 5, 2, 0, 0, /**/ 0, 0, 0, 1, 3, 2, /**/ 0, 4, 0, 4, 1, 1};
	struct {
		int32_t d0, d1;
		int accepted;
		int32_t next;
	} cases[] = {{2, 4, 2, 1}, {2, 3, 1, 4}, {0, 4, 0, 2}, {5, 5, 0, 2}};
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		halo_draft d[2] = {{cases[c].d0, NULL}, {cases[c].d1, NULL}};
		halo_verdict v = halo_verify_greedy(rows, V, d, 2);
		CHECK(v.accepted == cases[c].accepted && v.next == cases[c].next,
		      "greedy case %zu: accepted %d next %d, want %d and %d", c, v.accepted, v.next,
		      cases[c].accepted, cases[c].next);
	}
	halo_verdict v = halo_verify_greedy(rows, V, NULL, 0);
	CHECK(v.accepted == 0 && v.next == 2, "no drafts: the target's own argmax, got %d", v.next);
}

typedef struct {
	const char *name;
	float logits[N_DRAFTS + 1][V]; /* -INFINITY: outside the support */
	const float *q;                /* NULL: a deterministic drafter proposing `fixed` */
	int32_t fixed;
	halo_sampling sampling;
} sampled_case;

static double chi_square(const long *counts, const float *p, long total, int *df)
{
	double stat = 0;
	*df = -1;
	for (int i = 0; i < V; i++) {
		if (p[i] <= 0)
			continue;
		double e = (double)total * p[i];
		stat += ((double)counts[i] - e) * ((double)counts[i] - e) / e;
		++*df;
	}
	return stat;
}

/* Checks counts against p: nothing outside the support, chi-square below
 * the critical value. */
static bool fits(const long *counts, const float *p, long total, const char *what, const char *name, bool report)
{
	for (int i = 0; i < V; i++) {
		if (p[i] <= 0 && counts[i]) {
			CHECK(!report, "%s, %s: token %d has p = 0 but was emitted %ld times", name, what, i, counts[i]);
			return false;
		}
	}
	int df;
	double stat = chi_square(counts, p, total, &df);
	bool ok = df < 1 || stat < chi2_crit[df];
	CHECK(ok || !report, "%s, %s: chi-square %.2f with %d dof over %ld draws exceeds %.3f", name, what, stat, df,
	      total, chi2_crit[df]);
	if (report)
		printf("%s, %s: chi-square %.2f, %d dof, %ld draws (critical %.3f)\n", name, what, stat, df, total,
		       df > 0 ? chi2_crit[df] : 0.0);
	return ok;
}

static int32_t draw_draft(const sampled_case *c, halo_rng *rng)
{
	return c->q ? halo_sample_from(c->q, V, rng) : c->fixed;
}

static void test_sampled(const sampled_case *c)
{
	float p[N_DRAFTS + 1][V], work_p[V], residual[V];
	int32_t scratch[V];
	for (int r = 0; r <= N_DRAFTS; r++)
		halo_sampling_probs(&c->sampling, c->logits[r], V, p[r], scratch);
	halo_verify_work w = {work_p, residual, scratch};
	halo_rng verifier, drafter;
	halo_verifier_rng_seed(&verifier, 42);
	halo_rng_seed(&drafter, 43);
	long first[V] = {0}, second[V] = {0}, bonus[V] = {0}, drafts[V] = {0}, n_second = 0, n_bonus = 0;
	long accepted = 0;
	for (long i = 0; i < DRAWS; i++) {
		halo_draft d[N_DRAFTS];
		for (int j = 0; j < N_DRAFTS; j++)
			d[j] = (halo_draft){draw_draft(c, &drafter), c->q};
		halo_verdict v = halo_verify_sampled(&c->sampling, &c->logits[0][0], V, d, N_DRAFTS, &verifier, &w);
		drafts[d[0].token]++;
		first[v.accepted > 0 ? d[0].token : v.next]++;
		accepted += v.accepted;
		if (v.accepted > 0) {
			second[v.accepted > 1 ? d[1].token : v.next]++;
			n_second++;
		}
		if (v.accepted == N_DRAFTS) {
			bonus[v.next]++;
			n_bonus++;
		}
	}
	fits(first, p[0], DRAWS, "first emitted token", c->name, true);
	if (n_second > 1000)
		fits(second, p[1], n_second, "second emitted token", c->name, true);
	if (n_bonus > 1000)
		fits(bonus, p[N_DRAFTS], n_bonus, "bonus token", c->name, true);
	bool q_is_p = c->q && memcmp(c->q, p[0], sizeof(p[0])) == 0;
	if (!q_is_p)
		CHECK(!fits(drafts, p[0], DRAWS, "drafts", c->name, false),
		      "%s: the chi-square test cannot tell the drafts from p", c->name);
	printf("%s: %.1f%% of drafts accepted\n", c->name, 100.0 * (double)accepted / (N_DRAFTS * (double)DRAWS));
	if (q_is_p)
		CHECK(n_second == DRAWS, "%s: q = p for the first draft must accept it always, did %ld times", c->name,
		      n_second);
}

int main(void)
{
	test_greedy();
	const halo_sampling plain = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f};
	const halo_sampling cut = {.temperature = 0.7f, .top_k = 4, .top_p = 0.9f};
	const float ninf = -INFINITY;
	/* ln(0.4, 0.3, 0.2, 0.07, 0.02, 0.01) */
	const float skewed[V] = {-0.916f, -1.204f, -1.609f, -2.659f, -3.912f, -4.605f};
	const float q_far[V] = {0, 0, 0, 0.3f, 0.3f, 0.4f};
	const float q_tail[V] = {0.01f, 0.01f, 0.02f, 0.06f, 0.3f, 0.6f};
	const float q_flat[V] = {1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f, 1 / 6.f};
	sampled_case cases[] = {
		{"q = p", {{0}, {0.5f, 0, 0, 1, 0, 0}, {0}}, NULL, 0, plain},
		{"disjoint supports", {{1, 0.5f, 2, ninf, ninf, ninf}, {0.2f, 1, ninf, ninf, 0, ninf}, {0}}, q_far, 0,
		 plain},
		{"q heavy where p is small", {{0}, {2, 1, 0, 0, 0, 0}, {0}}, q_tail, 0, plain},
		{"deterministic drafter", {{0}, {0, 0, 1, 0, 3, 0}, {0}}, NULL, 4, plain},
		{"top-k, top-p, temperature", {{0.3f, 2, 1.5f, -1, 1, 0.2f}, {1, 1, 1, 0, 0, 2}, {0}}, q_flat, 0, cut},
	};
	memcpy(cases[0].logits[0], skewed, sizeof(skewed));
	memcpy(cases[2].logits[0], skewed, sizeof(skewed));
	memcpy(cases[3].logits[0], skewed, sizeof(skewed));
	/* q = p needs p exactly as the sampler computes it. */
	int32_t scratch[V];
	float p0[V];
	halo_sampling_probs(&plain, skewed, V, p0, scratch);
	cases[0].q = p0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		test_sampled(&cases[i]);
	if (check_failures)
		return 1;
	puts("spec_verify: ok");
	return 0;
}
