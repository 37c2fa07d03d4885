/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_TIMER_FD_H
#define BRISK_TESTS_TIMER_FD_H

/*
 * A device's timerfd, set far in the future by the test's options, made
 * to go off when the test says: so no check depends on how long anything
 * takes.  The test then turns the loop that watches the fd.
 */
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>

#ifndef TFD_IOC_SET_TICKS	/* <linux/timerfd.h>, which clashes with <sys/timerfd.h> */
#define TFD_IOC_SET_TICKS _IOW('T', 0, uint64_t)
#endif

/* Whether the timer is armed. */
static inline bool timerfd_armed(int fd)
{
	struct itimerspec its;

	return timerfd_gettime(fd, &its) == 0 && (its.it_value.tv_sec || its.it_value.tv_nsec);
}

/* The wait left on the armed timer, in ns; 0 when it is not armed. */
static inline uint64_t timerfd_left_ns(int fd)
{
	struct itimerspec its;

	if (timerfd_gettime(fd, &its) < 0)
		return 0;
	return (uint64_t)its.it_value.tv_sec * 1000000000u + (uint64_t)its.it_value.tv_nsec;
}

/*
 * An armed timer goes off now: false if it was not armed, or is not
 * readable within wait_ms.  Disarmed first, as a one-shot timer is once it
 * fired, so that what the device arms next shows; then readable at once,
 * or without CONFIG_CHECKPOINT_RESTORE expired.
 */
static inline bool timerfd_fire(int fd, int wait_ms)
{
	uint64_t ticks = 1;
	struct itimerspec past = { .it_value = { 0, 1 } }, off = { 0 };
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (!timerfd_armed(fd) || timerfd_settime(fd, 0, &off, NULL) < 0)
		return false;
	if (ioctl(fd, TFD_IOC_SET_TICKS, &ticks) == 0)
		return true;
	return timerfd_settime(fd, TFD_TIMER_ABSTIME, &past, NULL) == 0 &&
	       poll(&p, 1, wait_ms) == 1;
}

#endif
