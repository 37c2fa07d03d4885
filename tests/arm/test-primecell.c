// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The arm64 board's MMIO devices on the fake test board: the PL011 UART
 * (ARM DDI 0183) and PL031 RTC (ARM DDI 0224) register by register,
 * pvpanic-mmio and debug-exit on MMIO, and ECAM config access to the
 * PCI bus.  Expected values are the TRMs' and the PCI spec's.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hw/char/chardev.h"
#include "hw/char/pl011.h"
#include "hw/misc/debug-exit.h"
#include "hw/misc/pvpanic.h"
#include "hw/pci/pci.h"
#include "hw/rtc/pl031.h"

#include "check.h"
#include "test-board.h"

#define UART 0x09000000ull
#define UART_SPI 1
#define RTC 0x09010000ull

static uint32_t rd(struct test_board *b, uint64_t addr)
{
	uint64_t v;

	bus_read(&b->m.mmio, addr, &v, 4);
	return v;
}

static void wr(struct test_board *b, uint64_t addr, uint32_t v)
{
	bus_write(&b->m.mmio, addr, v, 4);
}

/* The four ID bytes at off, lowest first, as one word. */
static uint32_t id_word(struct test_board *b, uint64_t base, unsigned off)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < 4; i++)
		v |= (rd(b, base + off + 4 * i) & 0xff) << (8 * i);
	return v;
}

#define DR 0x000
#define FR 0x018
#define LCR_H 0x02c
#define IFLS 0x034
#define IMSC 0x038
#define RIS 0x03c
#define MIS 0x040
#define ICR 0x044
#define FR_RXFE 0x10
#define FR_TXFF 0x20
#define FR_RXFF 0x40
#define FR_TXFE 0x80
#define INT_RX 0x10
#define INT_TX 0x20
#define INT_RT 0x40

/*
 * Waits (10 s bounds a hang) until reg & mask is want: the reader thread hands
 * input over when it gets to run, and the test judges what it then sees.
 */
static bool wait_reg(struct test_board *b, uint64_t reg, uint32_t mask, uint32_t want)
{
	for (int i = 0; i < 10000 && (rd(b, reg) & mask) != want; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	return (rd(b, reg) & mask) == want;
}

static void test_pl011_tx(struct test_board *b, int out_rd)
{
	char got[8] = { 0 };

	/* PrimeCell id 0xb105f00d; PL011 part 0x011, designer Arm (0x41). */
	CHECK(id_word(b, UART, 0xff0) == 0xb105f00d);
	CHECK((id_word(b, UART, 0xfe0) & 0x000fffff) == 0x00041011);
	/* Transmission is immediate: TX FIFO empty, never full or busy. */
	CHECK((rd(b, UART + FR) & (FR_TXFE | FR_TXFF | 0x8)) == FR_TXFE);
	CHECK(rd(b, UART + FR) & FR_RXFE);
	CHECK(!(rd(b, UART + RIS) & INT_TX));
	wr(b, UART + DR, 'o');
	wr(b, UART + DR, 'k');
	CHECK(read(out_rd, got, 2) == 2 && !memcmp(got, "ok", 2));
	/* The FIFO drained through its trigger level: TXRIS until cleared. */
	CHECK(rd(b, UART + RIS) & INT_TX);
	CHECK(!(rd(b, UART + MIS) & INT_TX));
	CHECK(level(b, UART_SPI) == 0);
	wr(b, UART + IMSC, INT_TX);
	CHECK(rd(b, UART + MIS) & INT_TX);
	CHECK(level(b, UART_SPI) == 1);
	wr(b, UART + ICR, INT_TX);
	CHECK(!(rd(b, UART + RIS) & INT_TX));
	CHECK(level(b, UART_SPI) == 0);
	wr(b, UART + IMSC, 0);
}

static void test_pl011_rx(struct test_board *b, int in_wr)
{
	char buf[40];

	/* FIFOs off: a one-character holding register. */
	wr(b, UART + LCR_H, 0x60);
	wr(b, UART + IMSC, INT_RX | INT_RT);
	CHECK(write(in_wr, "ab", 2) == 2);
	CHECK(wait_reg(b, UART + FR, FR_RXFF, FR_RXFF));
	CHECK(rd(b, UART + RIS) & INT_RX);
	CHECK(level(b, UART_SPI) == 1);
	CHECK(rd(b, UART + DR) == 'a');
	/* the reader hands over the held 'b' */
	CHECK(wait_reg(b, UART + FR, FR_RXFE, 0));
	CHECK(rd(b, UART + DR) == 'b');
	CHECK(rd(b, UART + FR) & FR_RXFE);
	CHECK(level(b, UART_SPI) == 0);

	/* FIFOs on, RX trigger 1/2 (16 of 32): below it, the timeout. */
	wr(b, UART + LCR_H, 0x70);
	wr(b, UART + IFLS, 2 << 3);
	CHECK(write(in_wr, "0123456789", 10) == 10);
	CHECK(wait_reg(b, UART + RIS, INT_RX | INT_RT, INT_RT));
	CHECK(write(in_wr, "abcdefghijklmnopqrstuvwxyz", 26) == 26);
	CHECK(wait_reg(b, UART + FR, FR_RXFF, FR_RXFF));
	/* 32 in the FIFO, 4 held back by the reader, nothing lost. */
	CHECK(rd(b, UART + FR) & FR_RXFF);
	CHECK((rd(b, UART + RIS) & (INT_RX | INT_RT)) == INT_RX);
	for (unsigned i = 0; i < 36; i++) {
		CHECK(wait_reg(b, UART + FR, FR_RXFE, 0));
		buf[i] = rd(b, UART + DR);
	}
	CHECK(!memcmp(buf, "0123456789abcdefghijklmnopqrstuvwxyz", 36));
	CHECK(rd(b, UART + FR) & FR_RXFE);
	CHECK(level(b, UART_SPI) == 0);
	/* Unaligned and unknown offsets are harmless. */
	wr(b, UART + 0x2, 0xffff);
	wr(b, UART + 0x800, 1);
	CHECK(rd(b, UART + 0x801) == 0);
}

static void test_pl011(void)
{
	struct test_board b;
	int in[2], out[2];
	struct chardev *cd;
	struct pl011 *s;

	board_init(&b, 1, BOARD_RAM_SIZE);
	CHECK(pipe(in) == 0 && pipe(out) == 0);
	cd = chardev_open_fds(&b.m, in[0], out[1]);
	s = cd ? pl011_new(&b.m, UART, UART_SPI, cd) : NULL;
	CHECK(s != NULL);
	if (s) {
		test_pl011_tx(&b, out[0]);
		test_pl011_rx(&b, in[1]);
		CHECK(pl011_new(&b.m, UART, 2, chardev_open(&b.m, "none")) == NULL);
		pl011_free(s);
	}
	close(in[1]);
	close(out[0]);
	board_destroy(&b);
}

static uint64_t fake_now_s;
static uint64_t fake_now(void) { return fake_now_s; }

static void test_pl031(void)
{
	struct test_board b;
	struct pl031 *r;

	board_init(&b, 1, BOARD_RAM_SIZE);
	fake_now_s = 1700000000;
	r = pl031_new(&b.m, RTC, fake_now);
	CHECK(r != NULL);
	if (!r)
		return;
	CHECK(id_word(&b, RTC, 0xff0) == 0xb105f00d);
	CHECK((id_word(&b, RTC, 0xfe0) & 0x000fffff) == 0x00041031);
	CHECK(rd(&b, RTC + 0x00) == 1700000000);	/* DR: the host's time */
	CHECK(rd(&b, RTC + 0x0c) == 1);			/* CR: running */
	fake_now_s += 5;
	CHECK(rd(&b, RTC + 0x00) == 1700000005);
	/* LR loads the counter, which then runs from there. */
	wr(&b, RTC + 0x08, 1000);
	CHECK(rd(&b, RTC + 0x08) == 1000);
	fake_now_s += 3;
	CHECK(rd(&b, RTC + 0x00) == 1003);
	/* MR: the match sets RIS; MIS follows IMSC; ICR clears it. */
	wr(&b, RTC + 0x04, 1010);
	CHECK(rd(&b, RTC + 0x04) == 1010);
	fake_now_s += 6;
	CHECK(rd(&b, RTC + 0x14) == 0);
	fake_now_s += 2;
	CHECK(rd(&b, RTC + 0x14) == 1);
	CHECK(rd(&b, RTC + 0x18) == 0);
	wr(&b, RTC + 0x10, 1);
	CHECK(rd(&b, RTC + 0x18) == 1);
	wr(&b, RTC + 0x1c, 1);
	CHECK(rd(&b, RTC + 0x14) == 0);
	CHECK(pl031_new(&b.m, RTC, fake_now) == NULL);	/* taken */
	pl031_free(r);
	board_destroy(&b);
}

/* The arm64 board puts both on MMIO; a 32-bit store is what the guest does. */
/*
 * -rtc base=localtime: the counter runs in the host's zone.  POSIX TZ
 * "XXX-5" is five hours east of UTC, "YYY+3" three hours west.
 */
static void test_pl031_localtime(void)
{
	const char *old = getenv("TZ");
	static const struct { const char *tz; long off; } zones[] = {
		{ "XXX-5", 5 * 3600 }, { "YYY+3", -3 * 3600 }, { "UTC0", 0 },
	};

	for (unsigned i = 0; i < sizeof(zones) / sizeof(zones[0]); i++) {
		setenv("TZ", zones[i].tz, 1);
		tzset();
		uint64_t utc = pl031_host_now();
		long d = (long)(pl031_host_localtime() - utc) - zones[i].off;

		CHECK(d >= 0 && d <= 1);	/* a second may tick between */
	}
	if (old)
		setenv("TZ", old, 1);
	else
		unsetenv("TZ");
	tzset();
}

static void test_mmio_exits(void)
{
	struct test_board b;
	uint64_t v;

	board_init(&b, 1, BOARD_RAM_SIZE);
	CHECK(pvpanic_init(&b.m, &b.m.mmio, 0x09020000) == 0);
	CHECK(debug_exit_init(&b.m, &b.m.mmio, 0x09030000, 4) == 0);
	bus_read(&b.m.mmio, 0x09020000, &v, 1);
	CHECK(v == (PVPANIC_PANICKED | PVPANIC_CRASH_LOADED));
	bus_write(&b.m.mmio, 0x09020000, PVPANIC_CRASH_LOADED, 1);
	CHECK(take_status(&b) == NO_SHUTDOWN);
	bus_write(&b.m.mmio, 0x09020000, PVPANIC_PANICKED, 1);
	CHECK(take_status(&b) == BRISK_EXIT_PANIC);
	wr(&b, 0x09030000, 0x21);
	CHECK(take_status(&b) == 67);
	board_destroy(&b);
}

/*
 * -device isa-debug-exit's default iosize is 2 (README); on MMIO the
 * documented guest access is a 32-bit store (devmem ADDR 32 V), and 8-
 * and 16-bit ones must end brisk too.
 */
static void test_mmio_debug_exit_default(void)
{
	struct test_board b;

	board_init(&b, 1, BOARD_RAM_SIZE);
	CHECK(debug_exit_init(&b.m, &b.m.mmio, 0x09030000, 2) == 0);
	CHECK(bus_write(&b.m.mmio, 0x09030000, 0x21, 4));
	CHECK(take_status(&b) == 67);
	CHECK(bus_write(&b.m.mmio, 0x09030000, 0x101, 2));
	CHECK(take_status(&b) == 0x203);
	CHECK(bus_write(&b.m.mmio, 0x09030000, 0x1ff, 1));	/* the low byte */
	CHECK(take_status(&b) == 0x1ff);
	board_destroy(&b);
}

static uint64_t bar_read(void *opaque, uint64_t off, unsigned size)
{
	(void)opaque, (void)size;
	return 0xb0000000u | off;
}

static const struct bus_ops bar_ops = { .read = bar_read };

/* ECAM: offset = devfn << 12 | register (PCIe Base Spec, 7.2.2). */
static void test_ecam(void)
{
	struct test_board b;
	struct pci_ecam *e;
	uint64_t v;
	uint32_t type1;

	board_init(&b, 1, BOARD_RAM_SIZE);
	board_pci(&b, 0x10000000, 0x1000000);
	e = pci_ecam_new(b.m.pci, &b.m.mmio, 0x3f000000);
	CHECK(e != NULL);
	if (!e)
		return;
	bus_read(&b.m.mmio, 0x3f000000, &v, 4);		/* 00:00.0 vendor/device */
	bus_write(&b.m.pio, 0xcf8, 0x80000000u, 4);
	bus_read(&b.m.pio, 0xcfc, &v, 4);
	type1 = v;
	bus_read(&b.m.mmio, 0x3f000000, &v, 4);
	CHECK(v == type1 && v != 0xffffffff);
	bus_read(&b.m.mmio, 0x3f000002, &v, 2);		/* device id alone */
	CHECK(v == type1 >> 16);
	/* A function in slot 1 answers at devfn 8, its config writes land. */
	struct pci_device d;

	pci_device_init(&d, 0x1af4, 0x1042, 0x018000, 1, 0x1af4, 2);
	CHECK(pci_device_add_bar(&d, 0, 0x1000, 0, &bar_ops, NULL) == 0);
	CHECK(pci_register_device(b.m.pci, &d) == 0 && d.slot == 1);
	/*
	 * Moving the BAR through ECAM re-registers it on the bus the config
	 * write itself came in on: no deadlock, and it answers at once.
	 */
	bus_write(&b.m.mmio, 0x3f000000 + (1 << 15) + PCI_BASE_ADDRESS_0, 0x10800000, 4);
	bus_read(&b.m.mmio, 0x10800010, &v, 4);
	CHECK(v == 0xb0000010);
	bus_read(&b.m.mmio, 0x3f000000 + (1 << 15), &v, 4);
	CHECK(v == (0x1042u << 16 | 0x1af4));
	bus_write(&b.m.mmio, 0x3f000000 + (1 << 15) + PCI_INTERRUPT_LINE, 0x5a, 1);
	CHECK(d.cfg[PCI_INTERRUPT_LINE] == 0x5a);
	bus_read(&b.m.mmio, 0x3f000000 + (2 << 15), &v, 4);	/* empty slot 2 */
	CHECK(v == 0xffffffff);
	bus_read(&b.m.mmio, 0x3f000000 + (1 << 12), &v, 4);	/* function 1 */
	CHECK(v == 0xffffffff);
	bus_read(&b.m.mmio, 0x3f000100, &v, 4);	/* extended caps: none */
	CHECK(v == 0);
	bus_read(&b.m.mmio, 0x3f000001, &v, 2);		/* misaligned */
	CHECK(v == 0xffff);
	CHECK(pci_ecam_new(b.m.pci, &b.m.mmio, 0x3f000000) == NULL);	/* taken */
	pci_ecam_free(e);
	pci_unregister_device(&d);
	board_destroy(&b);
}

int main(void)
{
	RUN(test_pl011());
	RUN(test_pl031());
	RUN(test_pl031_localtime());
	RUN(test_mmio_exits());
	RUN(test_mmio_debug_exit_default());
	RUN(test_ecam());
	return check_done();
}
