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

#endif
