/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_CHECK_H
#define BRISK_TESTS_CHECK_H

/*
 * The C tests' one assertion and one report: TAP, which meson reads and
 * scripts/test.sh sums up, skips included.  CHECK counts and reports the
 * failing expression with its place, and keeps going so one run shows
 * every failure.  A test is made of cases: RUN(test_fn(args)) runs one and
 * reports it by its call ("ok" only if no CHECK failed in it), or a case
 * ends with check_case().  A case that cannot run here says why with
 * check_skip_case(); one that never started is reported by check_skip().
 * check_done() prints the plan and gives main its exit status.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

static int passed, failed;
static int tap_points, tap_failed_before, tap_skipped;
/* Why the running case could not run, set by check_skip_case(). */
static char tap_skip_why[256];

#define CHECK(cond) do {						\
	if (cond) {							\
		passed++;						\
	} else {							\
		failed++;						\
		fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
		fflush(stderr);						\
	}								\
} while (0)

/* CHECK that also shows both values when they differ. */
#define CHECK_EQ(a, b) do {						\
	unsigned long long a_ = (unsigned long long)(a);		\
	unsigned long long b_ = (unsigned long long)(b);		\
	if (a_ == b_) {							\
		passed++;						\
	} else {							\
		failed++;						\
		fprintf(stderr, "%s:%d: FAIL: %s == %s (%#llx != %#llx)\n", \
			__FILE__, __LINE__, #a, #b, a_, b_);		\
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

/* A TAP point that did not run, and WHY, on the same line. */
static inline void check_skip(const char *name, const char *why)
{
	tap_skipped++;
	fflush(stderr);
	printf("ok %d - %s # SKIP %s\n", ++tap_points, name, why);
	fflush(stdout);
}

/* Ends a TAP case named by FMT: ok when no CHECK failed during it, a skip
 * when check_skip_case() said it could not run (and nothing failed). */
__attribute__((format(printf, 1, 2)))
static inline void check_case(const char *fmt, ...)
{
	va_list ap;
	char directive[sizeof(tap_skip_why) + 8] = "";

	if (tap_skip_why[0] && failed == tap_failed_before) {
		tap_skipped++;
		snprintf(directive, sizeof(directive), " # SKIP %s", tap_skip_why);
	}
	tap_skip_why[0] = '\0';
	va_start(ap, fmt);
	check_vcase(directive, fmt, ap);
	va_end(ap);
}

/* The running case cannot run here: it ends as a skip saying WHY. */
__attribute__((format(printf, 1, 2)))
static inline void check_skip_case(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tap_skip_why, sizeof(tap_skip_why), fmt, ap);
	va_end(ap);
}

/* One case: the call, reported by its own text. */
#define RUN(...) do {							\
	__VA_ARGS__;							\
	check_case("%s", #__VA_ARGS__);					\
} while (0)

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
