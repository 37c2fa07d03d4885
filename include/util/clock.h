/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_UTIL_CLOCK_H
#define BRISK_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns: for deadlines and intervals, never wall time. */
static inline uint64_t clock_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * How far the host's time zone is ahead of UTC at t, in seconds (0 where
 * it cannot say): what an RTC kept in local time (-rtc base=localtime)
 * adds to the wall clock.
 */
static inline int64_t clock_zone_offset_s(time_t t)
{
	struct tm tm;

	return localtime_r(&t, &tm) ? (int64_t)tm.tm_gmtoff : 0;
}

#endif
