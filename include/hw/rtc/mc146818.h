/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_RTC_MC146818_H
#define BRISK_HW_RTC_MC146818_H

#include <stdbool.h>
#include <stdint.h>

struct machine;
struct mc146818;

#define MC146818_IOPORT 0x70	/* index (bit 7: NMI mask); data at 0x71 */
#define MC146818_IRQ 8
#define MC146818_CENTURY 0x32	/* the CMOS byte the FADT names */

/*
 * The PC's CMOS clock (Motorola MC146818A) and its 128 bytes of CMOS RAM
 * on m->pio, its interrupt on IRQ 8.  The time is now() (nanoseconds
 * since the epoch, read as UTC: tests pass their own) plus whatever the
 * guest sets; the interrupts come from a timerfd on m->loop, which must
 * be set.  NULL (with one error line) when the ports are taken.
 */
struct mc146818 *mc146818_new(struct machine *m, uint64_t (*now)(void));
void mc146818_free(struct mc146818 *r);
/* The host's wall clock, in nanoseconds since the epoch. */
uint64_t mc146818_host_now(void);
/* The same in the host's time zone, for -rtc base=localtime. */
uint64_t mc146818_host_localtime(void);

#endif
