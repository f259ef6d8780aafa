/* The unit tests' soft assertion: on failure, prints "FAIL file:line: " and
 * the printf-style message, counts it in check_failures and goes on, so one
 * run reports every failing check. Include once per test program. */
#ifndef HALO_TESTS_CHECK_H
#define HALO_TESTS_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			check_failures++;                                   \
		}                                                           \
	} while (0)

#endif
