/* The checks of the reference op tests (test_qwen4_ops, test_dsv4_ops,
 * test_dsv4_attention): a failed check prints its name, the values and the
 * tolerance, and counts in expect_failures, which main() turns into the
 * exit status. Header-only, for one test program per source file. */
#ifndef HALO_TESTS_RUNTIME_EXPECT_H
#define HALO_TESTS_RUNTIME_EXPECT_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

static int expect_failures;

static inline void expect_near(const char *what, double got, double want, double tol)
{
	if (!(fabs(got - want) <= tol)) { /* NaN fails too */
		printf("FAIL %s: got %.9g want %.9g (tol %.3g)\n", what, got, want, tol);
		expect_failures++;
	}
}

static inline void expect_true(const char *what, bool cond)
{
	if (!cond) {
		printf("FAIL %s\n", what);
		expect_failures++;
	}
}

#endif
