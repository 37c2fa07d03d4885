// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The PC's CMOS clock, a Motorola MC146818A, and its CMOS RAM.  Nothing
 * here counts time: the clock is the host's (now()) plus an offset the
 * guest sets by writing the time registers, and what the chip would have
 * done meanwhile (updates, the alarm, the periodic flag) is worked out
 * from that clock whenever the guest looks.  The interrupt cannot wait for
 * the guest to look, so a timerfd on the machine's event loop wakes the
 * device for the next event that would raise IRQ 8, and only while the
 * line is low and an interrupt is enabled.
 *
 * The line follows IRQF, as the chip's IRQ# pin does: it rises (the ISA
 * edge) when a flag meets its enable and falls when register C is read.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "hw/machine.h"
#include "hw/rtc/mc146818.h"
#include "util/clock.h"
#include "util/iothread.h"
#include "util/log.h"

#define NS 1000000000ull
#define XTAL 32768u		/* the time base the divider counts */
#define DAY 86400

enum {
	REG_SEC = 0x00, REG_SEC_ALARM = 0x01,
	REG_MIN = 0x02, REG_MIN_ALARM = 0x03,
	REG_HOUR = 0x04, REG_HOUR_ALARM = 0x05,
	REG_WDAY = 0x06, REG_MDAY = 0x07, REG_MON = 0x08, REG_YEAR = 0x09,
	REG_A = 0x0a, REG_B = 0x0b, REG_C = 0x0c, REG_D = 0x0d,
	CMOS_SIZE = 0x80,
};

#define A_UIP 0x80
#define A_DV 0x70		/* divider: 010 runs, 11x holds it in reset */
#define A_DV_RESET 0x60
#define A_RS 0x0f		/* periodic rate */
#define B_SET 0x80
#define B_PIE 0x40
#define B_AIE 0x20
#define B_UIE 0x10
#define B_DM 0x04		/* binary, not BCD */
#define B_24H 0x02
#define C_IRQF 0x80
#define C_PF 0x40
#define C_AF 0x20
#define C_UF 0x10
#define D_VRT 0x80
#define ALARM_ANY 0xc0		/* both top bits: the byte matches anything */

/*
 * UIP rises 244 us (8 ticks) before an update and falls when the update,
 * 1984 us (65 ticks), is over: a reader who sees it low has 244 us to
 * read a consistent time.  The registers change at the start here.
 */
#define UIP_BEFORE 8u
#define UIP_AFTER 65u

struct rtc_time {
	int64_t sec;
	uint32_t ns;
};

struct mc146818 {
	struct machine *m;
	uint64_t (*now)(void);
	pthread_mutex_t lock;
	int timer_fd;
	uint8_t index;		/* as written, NMI mask bit included */
	uint8_t ram[CMOS_SIZE];	/* the time bytes only matter while held */
	/* guest time = now() + off_s seconds + off_ns */
	int64_t off_s;
	uint32_t off_ns;
	bool held;		/* stopped: the time bytes in ram[] are the clock */
	bool div_was_reset;	/* during this hold */
	int64_t last_sec;	/* the last update accounted for */
	int64_t last_period;	/* the last periodic tick accounted for */
	int irq_level;
};

uint64_t mc146818_host_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

uint64_t mc146818_host_localtime(void)
{
	uint64_t now = mc146818_host_now();

	/* The registers show the breakdown as UTC: shift by the host's zone. */
	return now + (uint64_t)(clock_zone_offset_s((time_t)(now / NS)) *
				(int64_t)NS);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

static int64_t floor_mod(int64_t a, int64_t b)
{
	return a - floor_div(a, b) * b;
}

static bool div_reset(const struct mc146818 *r)
{
	return (r->ram[REG_A] & A_DV_RESET) == A_DV_RESET;
}

static bool stopped(const struct mc146818 *r)
{
	return (r->ram[REG_B] & B_SET) || div_reset(r);
}

static struct rtc_time guest_time(const struct mc146818 *r, uint64_t now)
{
	uint64_t ns = now % NS + r->off_ns;

	return (struct rtc_time){
		.sec = (int64_t)(now / NS) + r->off_s + (ns >= NS),
		.ns = (uint32_t)(ns % NS),
	};
}

/* The divider's ticks per periodic interrupt; 0: none (RS = 0). */
static unsigned period_ticks(const struct mc146818 *r)
{
	unsigned rs = r->ram[REG_A] & A_RS;

	/* 1 and 2 repeat 8 and 9 (256 and 128 Hz); 3..15: 8192 Hz halving. */
	if (rs == 0)
		return 0;
	return rs < 3 ? 1u << (rs + 6) : 1u << (rs - 1);
}

static int64_t period_index(const struct mc146818 *r, struct rtc_time t)
{
	unsigned p = period_ticks(r);
	uint64_t tick = (uint64_t)t.ns * XTAL / NS;

	return p ? t.sec * (XTAL / p) + (int64_t)(tick / p) : 0;
}

static uint8_t enc(const struct mc146818 *r, unsigned v)
{
	return r->ram[REG_B] & B_DM ? v : (v / 10) << 4 | v % 10;
}

/* Garbage (BCD digits above 9) decodes to a number all the same. */
static int dec(const struct mc146818 *r, uint8_t b)
{
	return r->ram[REG_B] & B_DM ? b : (b >> 4) * 10 + (b & 0xf);
}

/* 12-hour mode: 1..12, bit 7 set after noon. */
static uint8_t enc_hour(const struct mc146818 *r, unsigned h)
{
	if (r->ram[REG_B] & B_24H)
		return enc(r, h);
	return enc(r, h % 12 ? h % 12 : 12) | (h >= 12 ? 0x80 : 0);
}

static int dec_hour(const struct mc146818 *r, uint8_t b)
{
	if (r->ram[REG_B] & B_24H)
		return dec(r, b);
	int h = dec(r, b & 0x7f);

	return (h == 12 ? 0 : h) + (b & 0x80 ? 12 : 0);
}

static void time_to_regs(struct mc146818 *r, int64_t sec)
{
	time_t t = (time_t)sec;
	struct tm tm;

	if (!gmtime_r(&t, &tm))
		return;
	int64_t year = tm.tm_year + 1900ll;

	r->ram[REG_SEC] = enc(r, tm.tm_sec);
	r->ram[REG_MIN] = enc(r, tm.tm_min);
	r->ram[REG_HOUR] = enc_hour(r, tm.tm_hour);
	r->ram[REG_WDAY] = enc(r, tm.tm_wday + 1);
	r->ram[REG_MDAY] = enc(r, tm.tm_mday);
	r->ram[REG_MON] = enc(r, tm.tm_mon + 1);
	r->ram[REG_YEAR] = enc(r, floor_mod(year, 100));
	r->ram[MC146818_CENTURY] = enc(r, floor_mod(floor_div(year, 100), 100));
}

/*
 * Out-of-range fields (second 75, 31 February, month 0) carry over as
 * timegm() does; every field is a byte, so nothing can overflow.  The
 * day of the week follows from the date.
 */
static int64_t regs_to_time(const struct mc146818 *r)
{
	struct tm tm = {
		.tm_sec = dec(r, r->ram[REG_SEC]),
		.tm_min = dec(r, r->ram[REG_MIN]),
		.tm_hour = dec_hour(r, r->ram[REG_HOUR]),
		.tm_mday = dec(r, r->ram[REG_MDAY]),
		.tm_mon = dec(r, r->ram[REG_MON]) - 1,
		.tm_year = dec(r, r->ram[MC146818_CENTURY]) * 100 +
			   dec(r, r->ram[REG_YEAR]) - 1900,
	};

	return (int64_t)timegm(&tm);
}

/* The clock reads sec + ns from now on; no update is due for the jump. */
static void set_time(struct mc146818 *r, uint64_t now, int64_t sec, uint32_t ns)
{
	uint32_t frac = now % NS;

	r->off_s = sec - (int64_t)(now / NS);
	if (ns >= frac) {
		r->off_ns = ns - frac;
	} else {
		r->off_ns = ns + NS - frac;
		r->off_s--;
	}
	r->last_sec = sec;
	r->last_period = period_index(r, guest_time(r, now));
}

static bool alarm_byte(uint8_t alarm, uint8_t now)
{
	return (alarm & ALARM_ANY) == ALARM_ANY || alarm == now;
}

static bool alarm_at(const struct mc146818 *r, int64_t sec)
{
	int64_t tod = floor_mod(sec, DAY);

	return alarm_byte(r->ram[REG_SEC_ALARM], enc(r, tod % 60)) &&
	       alarm_byte(r->ram[REG_MIN_ALARM], enc(r, tod / 60 % 60)) &&
	       alarm_byte(r->ram[REG_HOUR_ALARM], enc_hour(r, tod / 3600));
}

/* Whether an update in (from, to] met the alarm: a day holds every match. */
static bool alarm_between(const struct mc146818 *r, int64_t from, int64_t to)
{
	int64_t n = to - from < DAY ? to - from : DAY;

	for (int64_t s = to - n + 1; s <= to; s++)
		if (alarm_at(r, s))
			return true;
	return false;
}

/* Sets the flags of whatever happened since the last look. */
static void catch_up(struct mc146818 *r, uint64_t now)
{
	if (div_reset(r))
		return;
	struct rtc_time t = guest_time(r, now);
	int64_t p = period_index(r, t);

	/* The divider runs under SET: periodic ticks go on, updates do not. */
	if (period_ticks(r) && p > r->last_period)
		r->ram[REG_C] |= C_PF;
	r->last_period = p;
	if (r->held)
		return;
	if (t.sec > r->last_sec) {
		r->ram[REG_C] |= C_UF;
		if (alarm_between(r, r->last_sec, t.sec))
			r->ram[REG_C] |= C_AF;
	}
	/* A host clock stepped back takes the updates back with it. */
	r->last_sec = t.sec;
}

static void update_irq(struct mc146818 *r)
{
	uint8_t c = r->ram[REG_C], b = r->ram[REG_B];
	int irqf = (c & C_PF && b & B_PIE) || (c & C_AF && b & B_AIE) ||
		   (c & C_UF && b & B_UIE);

	r->ram[REG_C] = (c & ~C_IRQF) | (irqf ? C_IRQF : 0);
	if (irqf != r->irq_level) {
		r->irq_level = irqf;
		r->m->irq.ops->set_irq(r->m->irq.opaque, MC146818_IRQ, irqf);
	}
}

/*
 * The next moment a flag could meet its enable.  None while IRQF is set:
 * nothing can raise the line again before the guest reads C, which
 * rearms.  AIE wakes every second, which is cheaper than finding the
 * next match.
 */
static void rearm(struct mc146818 *r, uint64_t now)
{
	uint8_t b = r->ram[REG_B];
	uint64_t wait = 0;

	if (!(r->ram[REG_C] & C_IRQF) && !div_reset(r)) {
		struct rtc_time t = guest_time(r, now);
		unsigned p = period_ticks(r);

		if (!r->held && b & (B_UIE | B_AIE))
			wait = NS - t.ns;
		if (b & B_PIE && p) {
			uint64_t tick = ((uint64_t)t.ns * XTAL / NS / p + 1) * p;
			uint64_t at = (tick * NS + XTAL - 1) / XTAL;

			if (!wait || at - t.ns < wait)
				wait = at - t.ns;
		}
	}
	struct itimerspec its = {
		.it_value = { .tv_sec = wait / NS, .tv_nsec = wait % NS },
	};

	if (timerfd_settime(r->timer_fd, 0, &its, NULL) < 0)
		error_report("mc146818: timerfd_settime failed");
}

static void mc146818_timer(void *opaque)
{
	struct mc146818 *r = opaque;
	uint64_t expirations;

	/* Nonblocking: a rearm since the wakeup may have emptied it. */
	if (read(r->timer_fd, &expirations, sizeof(expirations)) < 0)
		expirations = 0;
	pthread_mutex_lock(&r->lock);
	uint64_t now = r->now();

	catch_up(r, now);
	update_irq(r);
	rearm(r, now);
	pthread_mutex_unlock(&r->lock);
}

/* Stopping keeps the time in the registers; starting runs it from there. */
static void hold_changed(struct mc146818 *r, uint64_t now)
{
	if (div_reset(r))
		r->div_was_reset = true;
	if (stopped(r) && !r->held) {
		time_to_regs(r, guest_time(r, now).sec);
		r->held = true;
	} else if (!stopped(r) && r->held) {
		/* Out of reset the first update comes half a second later. */
		uint32_t ns = r->div_was_reset ? NS / 2 : guest_time(r, now).ns;

		set_time(r, now, regs_to_time(r), ns);
		r->held = false;
		r->div_was_reset = false;
	}
}

static bool is_time_reg(unsigned i)
{
	return i == REG_SEC || i == REG_MIN || i == REG_HOUR || i == REG_WDAY ||
	       i == REG_MDAY || i == REG_MON || i == REG_YEAR ||
	       i == MC146818_CENTURY;
}

static bool uip(const struct mc146818 *r, uint64_t now)
{
	if (stopped(r))
		return false;
	uint64_t tick = (uint64_t)guest_time(r, now).ns * XTAL / NS;

	return tick >= XTAL - UIP_BEFORE || tick < UIP_AFTER;
}

static uint8_t reg_read(struct mc146818 *r, uint64_t now)
{
	unsigned i = r->index & (CMOS_SIZE - 1);
	uint8_t v;

	switch (i) {
	case REG_A:
		return (r->ram[REG_A] & ~A_UIP) | (uip(r, now) ? A_UIP : 0);
	case REG_C:
		v = r->ram[REG_C];
		r->ram[REG_C] = 0;
		update_irq(r);
		rearm(r, now);
		return v;
	case REG_D:
		return D_VRT;	/* the battery is fine */
	}
	if (is_time_reg(i) && !r->held)
		time_to_regs(r, guest_time(r, now).sec);
	return r->ram[i];
}

static void reg_write(struct mc146818 *r, uint64_t now, uint8_t v)
{
	unsigned i = r->index & (CMOS_SIZE - 1);

	switch (i) {
	case REG_A:
		r->ram[REG_A] = v & ~A_UIP;
		hold_changed(r, now);
		r->last_period = period_index(r, guest_time(r, now));
		break;
	case REG_B:
		/* SET going high clears UIE (data sheet, register B). */
		r->ram[REG_B] = v & B_SET ? v & ~B_UIE : v;
		hold_changed(r, now);
		break;
	case REG_C:
	case REG_D:
		return;		/* read-only */
	default:
		if (is_time_reg(i) && !r->held) {
			struct rtc_time t = guest_time(r, now);

			time_to_regs(r, t.sec);
			r->ram[i] = v;
			set_time(r, now, regs_to_time(r), t.ns);
		} else {
			r->ram[i] = v;
		}
		break;
	}
	update_irq(r);
	rearm(r, now);
}

/* Port 0x70 is write-only; a word access is two byte accesses. */
static uint64_t mc146818_read(void *opaque, uint64_t off, unsigned size)
{
	struct mc146818 *r = opaque;
	uint64_t v = 0;

	pthread_mutex_lock(&r->lock);
	uint64_t now = r->now();

	catch_up(r, now);
	update_irq(r);
	for (unsigned i = 0; i < size && off + i < 2; i++)
		v |= (uint64_t)(off + i ? reg_read(r, now) : 0xff) << (8 * i);
	pthread_mutex_unlock(&r->lock);
	return v;
}

static void mc146818_write(void *opaque, uint64_t off, uint64_t v, unsigned size)
{
	struct mc146818 *r = opaque;

	pthread_mutex_lock(&r->lock);
	uint64_t now = r->now();

	catch_up(r, now);
	for (unsigned i = 0; i < size && off + i < 2; i++) {
		uint8_t b = v >> (8 * i);

		/* Bit 7 masks NMIs on a PC; there are none to mask here. */
		if (off + i == 0)
			r->index = b;
		else
			reg_write(r, now, b);
	}
	update_irq(r);
	pthread_mutex_unlock(&r->lock);
}

static const struct bus_ops mc146818_ops = {
	.read = mc146818_read,
	.write = mc146818_write,
};

struct mc146818 *mc146818_new(struct machine *m, uint64_t (*now)(void))
{
	struct mc146818 *r = calloc(1, sizeof(*r));

	if (!r) {
		error_report("mc146818: out of memory");
		return NULL;
	}
	*r = (struct mc146818){ .m = m, .now = now };
	/* What a PC's firmware leaves: 32.768 kHz, 1024 Hz, 24-hour BCD. */
	r->ram[REG_A] = 0x26;
	r->ram[REG_B] = B_24H;
	r->ram[REG_D] = D_VRT;
	uint64_t t = now();

	set_time(r, t, (int64_t)(t / NS), t % NS);
	pthread_mutex_init(&r->lock, NULL);
	r->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (r->timer_fd < 0 || !m->loop ||
	    iothread_add_fd(m->loop, r->timer_fd, mc146818_timer, r)) {
		error_report("mc146818: no timer for its interrupt");
		goto fail;
	}
	if (bus_register(&m->pio, MC146818_IOPORT, 2, &mc146818_ops, r) < 0) {
		error_report("mc146818: ports %#x-%#x are taken", MC146818_IOPORT,
			     MC146818_IOPORT + 1);
		iothread_del_fd(m->loop, r->timer_fd);
		goto fail;
	}
	return r;
fail:
	if (r->timer_fd >= 0)
		close(r->timer_fd);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

void mc146818_free(struct mc146818 *r)
{
	if (!r)
		return;
	bus_unregister(&r->m->pio, MC146818_IOPORT, r);
	iothread_del_fd(r->m->loop, r->timer_fd);
	close(r->timer_fd);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
