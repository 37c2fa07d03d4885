/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_CHECK_H
#define BRISK_TESTS_CHECK_H

/*
 * The unit tests' one assertion: count, report the failing expression with
 * its place, and keep going so one run shows every failure.  A test ends
 * either with check_summary(), whose "N passed, N failed" line is what
 * test runners read, or, when it is made of named cases, speaks TAP: each
 * case ends with check_case() ("ok" only if no CHECK failed since the last
 * case) or check_skip() (a skip with its reason), and check_done() prints
 * the plan.
 */
#include <stdarg.h>
#include <stdio.h>

static int passed, failed;
static int tap_points, tap_failed_before, tap_skipped;

#define CHECK(cond) do {						\
	if (cond) {							\
		passed++;						\
	} else {							\
		failed++;						\
		fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
		fflush(stderr);						\
	}								\
} while (0)

/* CHECK, and in a case function returning bool give the case up. */
#define REQUIRE(cond) do {						\
	int failed_before_ = failed;					\
	CHECK(cond);							\
	if (failed != failed_before_)					\
		return false;						\
} while (0)

static inline int check_summary(void)
{
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

static inline void check_vcase(const char *directive, const char *fmt,
			       va_list ap)
{
	/* stderr's FAIL lines belong before the verdict they explain. */
	fflush(stderr);
	printf("%s %d - ", failed == tap_failed_before ? "ok" : "not ok",
	       ++tap_points);
	vprintf(fmt, ap);
	printf("%s\n", directive);
	fflush(stdout);
	tap_failed_before = failed;
}

/* Ends a TAP case named by FMT: ok when no CHECK failed during it. */
__attribute__((format(printf, 1, 2)))
static inline void check_case(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_vcase("", fmt, ap);
	va_end(ap);
}

/* A TAP case that did not run, and WHY (said on the same line). */
static inline void check_skip(const char *name, const char *why)
{
	tap_skipped++;
	printf("ok %d - %s # SKIP %s\n", ++tap_points, name, why);
	fflush(stdout);
	tap_failed_before = failed;
}

/* The TAP plan; the exit status for main.  A CHECK that failed outside
 * any case still fails the test. */
static inline int check_done(void)
{
	if (failed != tap_failed_before)
		check_case("checks after the last case");
	printf("1..%d\n# %d checks passed, %d failed; %d cases skipped\n",
	       tap_points, passed, failed, tap_skipped);
	return failed ? 1 : 0;
}

#endif
