// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The CMOS clock on the fake board, through ports 0x70/0x71 as a guest
 * reaches it, with the host's clock injected.  Expected values are the
 * MC146818A data sheet's (register layout, BCD and 12-hour encodings,
 * UIP's 244 us and 1984 us, the flags of register C, the periodic rates)
 * and the calendar's, worked out by hand for the instants used here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hw/rtc/mc146818.h"
#include "util/iothread.h"

#include "check.h"
#include "test-board.h"

#define NSEC 1000000000ull
#define MS 1000000ull
#define US 1000ull
/* 2023-11-14 22:13:20 UTC, a Tuesday. */
#define T0 1700000000ull

#define SEC 0x00
#define SEC_ALARM 0x01
#define MIN 0x02
#define MIN_ALARM 0x03
#define HOUR 0x04
#define HOUR_ALARM 0x05
#define WDAY 0x06
#define MDAY 0x07
#define MON 0x08
#define YEAR 0x09
#define REG_A 0x0a
#define REG_B 0x0b
#define REG_C 0x0c
#define REG_D 0x0d
#define CENTURY 0x32
#define RTC_IRQ 8

static uint64_t fake_ns;
static uint64_t fake_now(void) { return fake_ns; }

static uint8_t rd(struct test_board *b, uint8_t idx)
{
	uint64_t v;

	bus_write(&b->m.pio, 0x70, idx, 1);
	bus_read(&b->m.pio, 0x71, &v, 1);
	return v;
}

static void wr(struct test_board *b, uint8_t idx, uint8_t v)
{
	bus_write(&b->m.pio, 0x70, idx, 1);
	bus_write(&b->m.pio, 0x71, v, 1);
}

static struct mc146818 *setup(struct test_board *b, uint64_t ns)
{
	board_init(b, 1, BOARD_RAM_SIZE);
	b->m.loop = iothread_new("test-rtc");
	fake_ns = ns;
	return mc146818_new(&b->m, fake_now);
}

static void teardown(struct test_board *b, struct mc146818 *r)
{
	mc146818_free(r);
	iothread_free(b->m.loop);
	board_destroy(b);
}

static bool bcd_ok(uint8_t v)
{
	return (v & 0xf) <= 9 && (v >> 4) <= 9;
}

static void test_power_up(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 500 * MS);

	CHECK(r != NULL);
	/* 32.768 kHz divider, 1024 Hz rate; 24-hour BCD; VRT set. */
	CHECK(rd(&b, REG_A) == 0x26);
	CHECK(rd(&b, REG_B) == 0x02);
	CHECK(rd(&b, REG_C) == 0x00);
	CHECK(rd(&b, REG_D) == 0x80);
	CHECK(level(&b, RTC_IRQ) == 0);
	uint64_t v;

	bus_read(&b.m.pio, 0x70, &v, 1);
	CHECK(v == 0xff);			/* the index port is write-only */
	CHECK(mc146818_new(&b.m, fake_now) == NULL);	/* ports taken */
	teardown(&b, r);

	board_init(&b, 1, BOARD_RAM_SIZE);			/* no event loop: no interrupt */
	CHECK(mc146818_new(&b.m, fake_now) == NULL);
	board_destroy(&b);
	check_case("power-up register values, ports taken, no event loop");
}

static void test_bcd_binary(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 500 * MS);

	CHECK(rd(&b, SEC) == 0x20 && rd(&b, MIN) == 0x13 && rd(&b, HOUR) == 0x22);
	CHECK(rd(&b, WDAY) == 0x03);		/* Sunday is 1 */
	CHECK(rd(&b, MDAY) == 0x14 && rd(&b, MON) == 0x11);
	CHECK(rd(&b, YEAR) == 0x23 && rd(&b, CENTURY) == 0x20);
	wr(&b, REG_B, 0x06);			/* DM: binary */
	CHECK(rd(&b, SEC) == 20 && rd(&b, MIN) == 13 && rd(&b, HOUR) == 22);
	CHECK(rd(&b, MDAY) == 14 && rd(&b, MON) == 11);
	CHECK(rd(&b, YEAR) == 23 && rd(&b, CENTURY) == 20);
	fake_ns += 41 * NSEC;			/* 22:14:01 */
	CHECK(rd(&b, SEC) == 1 && rd(&b, MIN) == 14);
	teardown(&b, r);
	check_case("BCD and binary time and date");
}

static void test_12h(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 500 * MS);

	wr(&b, REG_B, 0x00);			/* 12-hour BCD */
	CHECK(rd(&b, HOUR) == 0x90);		/* 10 PM */
	wr(&b, REG_B, 0x04);			/* 12-hour binary */
	CHECK(rd(&b, HOUR) == 0x8a);
	fake_ns += 6400 * NSEC;			/* 2023-11-15 00:00:00 */
	wr(&b, REG_B, 0x00);
	CHECK(rd(&b, HOUR) == 0x12);		/* 12 AM */
	CHECK(rd(&b, MDAY) == 0x15 && rd(&b, WDAY) == 0x04);
	fake_ns += 12 * 3600 * NSEC;		/* noon */
	CHECK(rd(&b, HOUR) == 0x92);		/* 12 PM */
	fake_ns += 3600 * NSEC;
	CHECK(rd(&b, HOUR) == 0x81);		/* 1 PM */
	/* Writing 3 PM in 12-hour mode reads back 15 in 24-hour mode. */
	wr(&b, REG_B, 0x80);
	wr(&b, HOUR, 0x83);
	wr(&b, REG_B, 0x00);
	wr(&b, REG_B, 0x02);
	CHECK(rd(&b, HOUR) == 0x15);
	teardown(&b, r);
	check_case("12-hour mode with the PM bit, BCD and binary");
}

static void test_set(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 500 * MS);

	/* SET stops the clock: the time read is the time SET was set at. */
	wr(&b, REG_B, 0x82);
	fake_ns += 3 * NSEC;
	CHECK(rd(&b, SEC) == 0x20);
	CHECK((rd(&b, REG_A) & 0x80) == 0);	/* no update, no UIP */
	/* 2030-06-30 08:09:10, a Sunday, written as a driver does. */
	wr(&b, YEAR, 0x30);
	wr(&b, MON, 0x06);
	wr(&b, MDAY, 0x30);
	wr(&b, HOUR, 0x08);
	wr(&b, MIN, 0x09);
	wr(&b, SEC, 0x10);
	fake_ns += 5 * NSEC;
	CHECK(rd(&b, SEC) == 0x10 && rd(&b, MIN) == 0x09);
	CHECK((rd(&b, REG_C) & 0x10) == 0);	/* no update while SET */
	wr(&b, REG_B, 0x02);
	CHECK(rd(&b, SEC) == 0x10);
	fake_ns += 2 * NSEC;
	CHECK(rd(&b, SEC) == 0x12 && rd(&b, MIN) == 0x09 && rd(&b, HOUR) == 0x08);
	CHECK(rd(&b, MDAY) == 0x30 && rd(&b, MON) == 0x06);
	CHECK(rd(&b, YEAR) == 0x30 && rd(&b, CENTURY) == 0x20);
	CHECK(rd(&b, WDAY) == 0x01);
	/* Dates pass through impossible ones while they are written. */
	wr(&b, REG_B, 0x82);
	wr(&b, MON, 0x02);			/* 30 February... */
	wr(&b, MDAY, 0x28);			/* ...then 28 February */
	wr(&b, REG_B, 0x02);
	CHECK(rd(&b, MDAY) == 0x28 && rd(&b, MON) == 0x02);
	/* Without SET a write takes effect at once. */
	wr(&b, MIN, 0x45);
	CHECK(rd(&b, MIN) == 0x45 && rd(&b, HOUR) == 0x08);
	/* SET going high clears UIE. */
	wr(&b, REG_B, 0x12);
	wr(&b, REG_B, 0x92);
	CHECK(rd(&b, REG_B) == 0x82);
	/* The century byte sets the century. */
	wr(&b, CENTURY, 0x21);
	wr(&b, REG_B, 0x02);
	CHECK(rd(&b, CENTURY) == 0x21 && rd(&b, YEAR) == 0x30);
	teardown(&b, r);
	check_case("SET freezes; the time written runs from SET's clearing");
}

static void test_divider(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 100 * MS);

	wr(&b, REG_A, 0x76);			/* divider held in reset */
	fake_ns += 10 * NSEC;
	CHECK(rd(&b, SEC) == 0x20);
	CHECK(rd(&b, REG_A) == 0x76);
	/* Out of reset the first update comes 500 ms later. */
	wr(&b, REG_A, 0x26);
	fake_ns += 490 * MS;
	CHECK(rd(&b, SEC) == 0x20);
	fake_ns += 20 * MS;
	CHECK(rd(&b, SEC) == 0x21);
	teardown(&b, r);
	check_case("divider reset stops the clock; the first update 500 ms after");
}

static void test_uip(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 500 * MS);

	CHECK((rd(&b, REG_A) & 0x80) == 0);
	fake_ns = (T0 + 1) * NSEC - 300 * US;	/* more than 244 us left */
	CHECK((rd(&b, REG_A) & 0x80) == 0);
	CHECK(rd(&b, SEC) == 0x20);
	fake_ns = (T0 + 1) * NSEC - 200 * US;	/* within 244 us */
	CHECK(rd(&b, REG_A) & 0x80);
	fake_ns = (T0 + 1) * NSEC + 1 * MS;	/* the 1984 us update */
	CHECK(rd(&b, REG_A) & 0x80);
	fake_ns = (T0 + 1) * NSEC + 2 * MS;
	CHECK((rd(&b, REG_A) & 0x80) == 0);
	CHECK(rd(&b, SEC) == 0x21);		/* after UIP, the new second */
	/* A reader polling UIP sees it rise and fall once a second. */
	unsigned rises = 0;
	bool last = false;

	for (unsigned i = 0; i < 3000; i++) {
		bool u = rd(&b, REG_A) & 0x80;

		rises += u && !last;
		last = u;
		fake_ns += 1 * MS;
	}
	CHECK(rises == 3);
	teardown(&b, r);
	check_case("UIP: 244 us before each update until it is over");
}

static void test_flags(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 500 * MS);

	/* PF counts at 1024 Hz whatever PIE says: no rate, no PF. */
	fake_ns += 1 * MS;
	CHECK(rd(&b, REG_C) == 0x40);
	wr(&b, REG_A, 0x20);
	/* Flags are set with their interrupts disabled; IRQF is not. */
	fake_ns += 1 * NSEC;
	CHECK(rd(&b, REG_C) == 0x10);		/* UF */
	CHECK(rd(&b, REG_C) == 0x00);		/* read clears */
	CHECK(level(&b, RTC_IRQ) == 0);
	/* UIE: the update raises IRQ 8 until C is read. */
	wr(&b, REG_B, 0x12);
	fake_ns += 1 * NSEC;
	CHECK(rd(&b, REG_D) == 0x80);
	CHECK(level(&b, RTC_IRQ) == 1);
	CHECK(rd(&b, REG_C) == 0x90);		/* IRQF | UF */
	CHECK(level(&b, RTC_IRQ) == 0);
	CHECK(rd(&b, REG_C) == 0x00);
	/* An enable set while its flag is up raises the line at once. */
	wr(&b, REG_B, 0x02);
	fake_ns += 1 * NSEC;
	CHECK(level(&b, RTC_IRQ) == 0);
	wr(&b, REG_B, 0x12);
	CHECK(level(&b, RTC_IRQ) == 1);
	/* C and D are read-only. */
	wr(&b, REG_C, 0x00);
	wr(&b, REG_D, 0x00);
	CHECK(level(&b, RTC_IRQ) == 1);
	CHECK(rd(&b, REG_D) == 0x80);
	CHECK(rd(&b, REG_C) == 0x90);
	teardown(&b, r);
	check_case("register C: flags, IRQF, read clears and lowers IRQ 8");
}

static void test_periodic(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 100 * MS);

	/* RS = 15: 2 Hz, every 500 ms. */
	wr(&b, REG_A, 0x2f);
	rd(&b, REG_C);
	fake_ns += 300 * MS;			/* .400 */
	CHECK((rd(&b, REG_C) & 0x40) == 0);
	fake_ns += 200 * MS;			/* .600: past .500 */
	CHECK((rd(&b, REG_C) & 0x40) == 0x40);
	/* RS = 3: 8192 Hz, 122.07 us. */
	wr(&b, REG_A, 0x23);
	rd(&b, REG_C);
	fake_ns += 100 * US;
	uint8_t c = rd(&b, REG_C);
	fake_ns += 130 * US;
	CHECK(((c | rd(&b, REG_C)) & 0x40) == 0x40);
	/* RS = 0: none. */
	wr(&b, REG_A, 0x20);
	rd(&b, REG_C);
	fake_ns += 2 * NSEC;
	CHECK((rd(&b, REG_C) & 0x40) == 0);
	/* Through the timer: 1024 Hz with PIE raises IRQ 8 on its own. */
	wr(&b, REG_A, 0x26);
	wr(&b, REG_B, 0x42);
	rd(&b, REG_C);
	unsigned calls = b.irq_calls;

	fake_ns += 1 * MS;
	CHECK(iothread_poll(b.m.loop, 1000) == 1);
	CHECK(level(&b, RTC_IRQ) == 1 && b.irq_calls == calls + 1);
	CHECK(rd(&b, REG_C) == 0xc0);		/* IRQF | PF */
	CHECK(level(&b, RTC_IRQ) == 0);
	teardown(&b, r);
	check_case("periodic flag at register A's rate; PIE through the timer");
}

static void test_alarm(void)
{
	struct test_board b;
	/* 10 ms before 22:13:25. */
	struct mc146818 *r = setup(&b, (T0 + 5) * NSEC - 10 * MS);

	wr(&b, REG_A, 0x20);			/* no periodic flag */
	wr(&b, SEC_ALARM, 0x25);
	wr(&b, MIN_ALARM, 0x13);
	wr(&b, HOUR_ALARM, 0x22);
	rd(&b, REG_C);
	wr(&b, REG_B, 0x22);			/* AIE */
	CHECK(level(&b, RTC_IRQ) == 0);
	/* The timer was set for the update; the clock gets there first. */
	fake_ns += 10 * MS + 1 * US;
	CHECK(iothread_poll(b.m.loop, 1000) == 1);
	CHECK(level(&b, RTC_IRQ) == 1);
	CHECK(rd(&b, REG_C) == 0xb0);		/* IRQF | AF | UF */
	CHECK(level(&b, RTC_IRQ) == 0);
	/* Not again until the time matches again. */
	fake_ns += 1 * NSEC;
	CHECK(rd(&b, REG_C) == 0x10);
	/* Don't-care bytes (top bits set): every minute at :30. */
	wr(&b, MIN_ALARM, 0xc0);
	wr(&b, HOUR_ALARM, 0xff);
	wr(&b, SEC_ALARM, 0x30);
	rd(&b, REG_C);
	fake_ns += 4 * NSEC;			/* 22:13:30 */
	CHECK(rd(&b, REG_C) == 0xb0);
	fake_ns += 59 * NSEC;			/* 22:14:29 */
	CHECK(rd(&b, REG_C) == 0x10);
	fake_ns += 1 * NSEC;			/* 22:14:30 */
	CHECK(rd(&b, REG_C) == 0xb0);
	/* A match the guest did not look at while it happened still counts. */
	wr(&b, REG_B, 0x02);
	fake_ns += 3600 * NSEC;
	CHECK(rd(&b, REG_C) == 0x30);		/* AF | UF */
	/* An hour that never comes: no match, however long the wait. */
	wr(&b, HOUR_ALARM, 0x24);
	rd(&b, REG_C);
	fake_ns += 3 * 86400 * NSEC;
	CHECK(rd(&b, REG_C) == 0x10);
	/* 12-hour mode compares the 12-hour bytes: 11 PM is 0x91. */
	wr(&b, REG_B, 0x00);
	wr(&b, SEC_ALARM, 0xc0);
	wr(&b, MIN_ALARM, 0xc0);
	wr(&b, HOUR_ALARM, 0x91);
	rd(&b, REG_C);
	fake_ns += 1 * NSEC;			/* 23:14:31 */
	CHECK(rd(&b, HOUR) == 0x91);
	CHECK(rd(&b, REG_C) == 0x30);
	teardown(&b, r);
	check_case("alarm raises IRQ 8 through the timer; don't-care bytes");
}

static unsigned hour_now(struct test_board *b, int64_t shift, unsigned *want)
{
	for (;;) {
		time_t before = time(NULL);
		unsigned h = rd(b, HOUR), m = rd(b, MIN);

		if (time(NULL) != before)
			continue;		/* a second boundary in between */
		int64_t tod = ((int64_t)before + shift) % 86400;

		*want = (unsigned)(tod / 3600) << 8 | (unsigned)(tod / 60 % 60);
		return h << 8 | m;
	}
}

static void test_localtime(void)
{
	struct test_board b;
	unsigned want;

	/* UTC+5:30 with no daylight saving: the offset is fixed. */
	setenv("TZ", "XST-5:30", 1);
	tzset();
	board_init(&b, 1, BOARD_RAM_SIZE);
	b.m.loop = iothread_new("test-rtc");
	struct mc146818 *r = mc146818_new(&b.m, mc146818_host_localtime);

	CHECK(r != NULL);
	wr(&b, REG_B, 0x06);			/* binary: compare numbers */
	CHECK(hour_now(&b, 5 * 3600 + 30 * 60, &want) == want);
	teardown(&b, r);

	board_init(&b, 1, BOARD_RAM_SIZE);
	b.m.loop = iothread_new("test-rtc");
	r = mc146818_new(&b.m, mc146818_host_now);
	wr(&b, REG_B, 0x06);
	CHECK(hour_now(&b, 0, &want) == want);
	teardown(&b, r);
	unsetenv("TZ");
	tzset();
	check_case("base=localtime under TZ=XST-5:30; base=utc");
}

/* xorshift: the same garbage every run. */
static uint32_t rnd(void)
{
	static uint32_t x = 2463534242u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return x;
}

static void test_garbage(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 500 * MS);
	bool ok = true;

	/* Every index with every value, NMI bit or not, in every mode. */
	for (unsigned i = 0; i < 200000; i++) {
		uint32_t x = rnd();
		uint64_t v;

		switch (x & 7) {
		case 0:
			bus_write(&b.m.pio, 0x70, x >> 8, 2);
			break;
		case 1:
			bus_read(&b.m.pio, 0x70, &v, 2);
			break;
		case 2:
			fake_ns += (x >> 8) * US;
			break;
		case 3:
			rd(&b, x >> 8);
			break;
		default:
			wr(&b, x >> 8, x >> 16);
			break;
		}
		ok &= (rd(&b, REG_D) == 0x80) && (rd(&b, REG_C) & 0x0f) == 0;
	}
	CHECK(ok);
	/* BCD garbage in every time byte, then SET cleared: some time. */
	wr(&b, REG_A, 0x26);
	wr(&b, REG_B, 0x82);
	for (uint8_t i = 0; i <= YEAR; i++)
		wr(&b, i, 0xff);
	wr(&b, CENTURY, 0xff);
	wr(&b, REG_B, 0x02);
	fake_ns += 1 * NSEC;
	for (uint8_t i = 0; i <= YEAR; i++)
		ok &= i == SEC_ALARM || i == MIN_ALARM || i == HOUR_ALARM ||
		      bcd_ok(rd(&b, i));
	CHECK(ok && bcd_ok(rd(&b, CENTURY)));
	/* Zeros: day 0 of month 0 of year 0. */
	wr(&b, REG_B, 0x86);
	for (uint8_t i = 0; i <= YEAR; i++)
		wr(&b, i, 0);
	wr(&b, CENTURY, 0);
	wr(&b, REG_B, 0x06);
	CHECK(rd(&b, SEC) == 0 && rd(&b, MON) == 11 && rd(&b, MDAY) == 30);
	/* And a sane time is sane again. */
	wr(&b, REG_B, 0x82);
	wr(&b, CENTURY, 0x20);
	wr(&b, YEAR, 0x24);
	wr(&b, MON, 0x02);
	wr(&b, MDAY, 0x29);
	wr(&b, HOUR, 0x23);
	wr(&b, MIN, 0x59);
	wr(&b, SEC, 0x59);
	wr(&b, REG_B, 0x02);
	fake_ns += 1 * NSEC;
	CHECK(rd(&b, SEC) == 0x00 && rd(&b, MIN) == 0x00 && rd(&b, HOUR) == 0x00);
	CHECK(rd(&b, MDAY) == 0x01 && rd(&b, MON) == 0x03 && rd(&b, YEAR) == 0x24);
	teardown(&b, r);
	check_case("garbage writes of every register and width");
}

static void test_ram(void)
{
	struct test_board b;
	struct mc146818 *r = setup(&b, T0 * NSEC + 500 * MS);
	bool ok = true;

	for (unsigned i = 0x0e; i < 0x80; i++)
		if (i != CENTURY)
			wr(&b, i, i ^ 0x5a);
	for (unsigned i = 0x0e; i < 0x80; i++)
		if (i != CENTURY)
			ok &= rd(&b, i) == (i ^ 0x5a) && rd(&b, i | 0x80) == (i ^ 0x5a);
	CHECK(ok);
	/* A word access: index at 0x70, data at 0x71. */
	bus_write(&b.m.pio, 0x70, 0x3312, 2);
	CHECK(rd(&b, 0x12) == 0x33);
	uint64_t v;

	bus_read(&b.m.pio, 0x70, &v, 2);
	CHECK(v == 0x33ff);
	teardown(&b, r);
	check_case("CMOS RAM holds its 114 bytes; NMI bit and word accesses");
}

int main(void)
{
	test_power_up();
	test_bcd_binary();
	test_12h();
	test_set();
	test_divider();
	test_uip();
	test_flags();
	test_periodic();
	test_alarm();
	test_localtime();
	test_garbage();
	test_ram();
	return check_done();
}
