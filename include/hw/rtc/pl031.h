/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_RTC_PL031_H
#define BRISK_HW_RTC_PL031_H

#include <stdint.h>

struct machine;
struct pl031;

#define PL031_SIZE 0x1000

/*
 * An Arm PrimeCell PL031 real-time clock (ARM DDI 0224) at base on
 * m->mmio, counting seconds since the epoch from the host's clock.  The
 * match register and its raw status work; no interrupt line is wired, so
 * the board's device tree gives the RTC none and Linux offers no alarm.
 * now() returns the host's time in seconds (tests pass their own).
 */
struct pl031 *pl031_new(struct machine *m, uint64_t base,
			uint64_t (*now)(void));
void pl031_free(struct pl031 *r);
/* The host's wall clock, in seconds since the epoch. */
uint64_t pl031_host_now(void);
/* The same in the host's time zone, for -rtc base=localtime. */
uint64_t pl031_host_localtime(void);

#endif
