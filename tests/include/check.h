/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_CHECK_H
#define BRISK_TESTS_CHECK_H

/*
 * The unit tests' one assertion: count, report the failing expression with
 * its place, and keep going so one run shows every failure.  Each test
 * ends with check_summary(), whose "N passed, N failed" line is what test
 * runners read.
 */
#include <stdio.h>

static int passed, failed;

#define CHECK(cond) do {						\
	if (cond) {							\
		passed++;						\
	} else {							\
		failed++;						\
		fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
		fflush(stderr);						\
	}								\
} while (0)

static inline int check_summary(void)
{
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif
