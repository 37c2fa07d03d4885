// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The legacy PC devices and the ACPI tables without KVM: a machine with
 * malloc'd RAM, a PIO bus, an interrupt chip that records line levels and
 * a shutdown that records the exit status.  Devices are driven only through
 * bus_read()/bus_write(), the path a vCPU's I/O exit takes.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hw/acpi/acpi.h"
#include "hw/char/chardev.h"
#include "hw/char/serial.h"
#include "hw/input/i8042.h"
#include "hw/machine.h"
#include "hw/misc/debug-exit.h"
#include "hw/misc/pvpanic.h"

#include "capture.h"
#include "check.h"
#include "test-board.h"

static uint64_t in(struct test_board *b, uint16_t port, unsigned size)
{
	uint64_t v;

	bus_read(&b->m.pio, port, &v, size);
	return v;
}

static uint8_t inb(struct test_board *b, uint16_t port)
{
	return in(b, port, 1);
}

static void out(struct test_board *b, uint16_t port, uint64_t v, unsigned size)
{
	bus_write(&b->m.pio, port, v, size);
}

static void outb(struct test_board *b, uint16_t port, uint8_t v)
{
	out(b, port, v, 1);
}

/* ---- 16550A ---- */

#define COM 0x3f8
#define THR (COM + 0)
#define RBR (COM + 0)
#define IER (COM + 1)
#define IIR (COM + 2)
#define FCR (COM + 2)
#define LCR (COM + 3)
#define MCR (COM + 4)
#define LSR (COM + 5)
#define MSR (COM + 6)
#define SCR (COM + 7)

/* Waits for the reader thread to bring a byte in; 10 s bounds a hang. */
static bool wait_rx(struct test_board *b)
{
	for (int i = 0; i < 10000; i++) {
		if (inb(b, LSR) & 0x01)
			return true;
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	return false;
}

static void test_serial_registers(struct test_board *b)
{
	CHECK(inb(b, LSR) == 0x60);		/* THRE | TEMT, no data */
	CHECK(inb(b, IIR) == 0x01);		/* FIFOs off, nothing pending */

	outb(b, SCR, 0x5a);
	CHECK(inb(b, SCR) == 0x5a);
	outb(b, SCR, 0xa5);
	CHECK(inb(b, SCR) == 0xa5);

	/* Divisor latch behind DLAB, IER untouched by it. */
	outb(b, IER, 0x00);
	outb(b, LCR, 0x83);
	outb(b, COM + 0, 0x01);
	outb(b, COM + 1, 0x02);
	CHECK(inb(b, COM + 0) == 0x01 && inb(b, COM + 1) == 0x02);
	outb(b, LCR, 0x03);
	CHECK(inb(b, LCR) == 0x03);
	CHECK(inb(b, IER) == 0x00);
	/* Bits 4-7 of IER do not exist on a 16550A (the XScale probe). */
	outb(b, IER, 0xf0);
	CHECK(inb(b, IER) == 0x00);

	/* FIFO mode shows in IIR bits 6-7. */
	outb(b, FCR, 0x07);
	CHECK(inb(b, IIR) == 0xc1);

	/* Loopback: the modem outputs feed the inputs, as the probe expects. */
	outb(b, MCR, 0x10 | 0x0a);
	CHECK((inb(b, MSR) & 0xf0) == 0x90);
	outb(b, MCR, 0x10 | 0x05);
	uint8_t msr = inb(b, MSR);
	CHECK((msr & 0xf0) == 0x60);
	CHECK((msr & 0x0f) != 0);		/* deltas recorded... */
	CHECK((inb(b, MSR) & 0x0f) == 0);	/* ...and cleared by the read */

	outb(b, THR, 0x42);
	CHECK(inb(b, LSR) & 0x01);
	CHECK(inb(b, RBR) == 0x42);
	CHECK(!(inb(b, LSR) & 0x01));

	/* Overrun: with FIFOs off the receiver holds one byte. */
	outb(b, FCR, 0x00);
	outb(b, THR, 0x11);
	outb(b, THR, 0x22);
	CHECK(inb(b, LSR) & 0x02);		/* OE */
	CHECK(!(inb(b, LSR) & 0x02));		/* cleared by reading LSR */
	CHECK(inb(b, RBR) == 0x11);
	outb(b, MCR, 0x08);
	CHECK((inb(b, MSR) & 0xb0) == 0xb0);	/* DCD DSR CTS from the line */
	inb(b, MSR);
}

static void test_serial_thre(struct test_board *b)
{
	outb(b, FCR, 0x07);
	outb(b, IER, 0x02);
	CHECK(level(b, 4) == 1);
	CHECK(inb(b, IIR) == 0xc2);
	/* Reading IIR acknowledged THRE. */
	CHECK(inb(b, IIR) == 0xc1);
	CHECK(level(b, 4) == 0);
	/* Re-enabling raises it again (Linux's THRE-bug test relies on it). */
	outb(b, IER, 0x00);
	outb(b, IER, 0x02);
	CHECK(inb(b, IIR) == 0xc2);
	/* A transmitted byte empties THR at once: THRE pending again. */
	outb(b, THR, 'x');
	CHECK(level(b, 4) == 1);
	outb(b, IER, 0x00);
	CHECK(level(b, 4) == 0);
}

static void test_serial_rx(struct test_board *b, int in_w)
{
	char msg[40];

	outb(b, FCR, 0x07);			/* FIFO on, trigger 1 */
	outb(b, IER, 0x01);
	CHECK(level(b, 4) == 0);
	CHECK(write(in_w, "ok", 2) == 2);
	CHECK(wait_rx(b));
	CHECK(level(b, 4) == 1);
	CHECK((inb(b, IIR) & 0x0f) == 0x04);	/* received data available */
	CHECK(inb(b, RBR) == 'o');
	CHECK(wait_rx(b));
	CHECK(inb(b, RBR) == 'k');
	CHECK(level(b, 4) == 0);
	CHECK(inb(b, IIR) == 0xc1);

	/* Below a trigger level of 4 the driver sees a character timeout. */
	outb(b, FCR, 0x41);
	CHECK(write(in_w, "z", 1) == 1);
	CHECK(wait_rx(b));
	CHECK((inb(b, IIR) & 0x0f) == 0x0c);
	CHECK(inb(b, RBR) == 'z');

	/* More than the FIFO holds: the reader waits, nothing is lost. */
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = 'A' + i;
	CHECK(write(in_w, msg, sizeof(msg)) == (ssize_t)sizeof(msg));
	nanosleep(&(struct timespec){ .tv_nsec = 50000000 }, NULL);
	bool same = true;

	for (unsigned i = 0; i < sizeof(msg); i++) {
		if (!wait_rx(b) || inb(b, RBR) != msg[i])
			same = false;
	}
	CHECK(same);
	CHECK(!(inb(b, LSR) & 0x02));		/* no overrun */
	outb(b, IER, 0x00);
}

static void test_serial(const char *dir)
{
	struct test_board b;
	char path[256], got[16] = { 0 };
	int pfd[2];

	board_init(&b, 1, BOARD_RAM_SIZE);
	snprintf(path, sizeof(path), "%s/serial-out", dir);
	CHECK(chardev_open(&b.m, "bogus") == NULL);
	CHECK(chardev_open(&b.m, "file:") == NULL);
	CHECK(chardev_open(&b.m, "file:/nonexistent/dir/out") == NULL);

	CHECK(chardev_open(&b.m, "") == NULL);

	/* Output through a file: backend. */
	struct chardev *cd;
	char spec[300];

	snprintf(spec, sizeof(spec), "file:%s", path);
	cd = chardev_open(&b.m, spec);
	CHECK(cd != NULL);
	struct serial *s = cd ? serial_new(&b.m, SERIAL_COM1_BASE, SERIAL_COM1_IRQ, cd) : NULL;

	CHECK(s != NULL);
	if (s) {
		outb(&b, THR, 'h');
		outb(&b, THR, 'i');
		outb(&b, MCR, 0x10);		/* loopback: not transmitted */
		outb(&b, THR, '!');
		outb(&b, MCR, 0x00);
		outb(&b, THR, '\n');
		int fd = open(path, O_RDONLY);

		CHECK(fd >= 0 && read(fd, got, sizeof(got)) == 3);
		CHECK(!memcmp(got, "hi\n", 3));
		if (fd >= 0)
			close(fd);
		/* A second UART on the same ports is refused. */
		CHECK(serial_new(&b.m, SERIAL_COM1_BASE, 3, chardev_open(&b.m, "none")) == NULL);
		serial_free(s);
	}
	unlink(path);

	/* Input through descriptors, as "stdio" without a terminal. */
	CHECK(pipe(pfd) == 0);
	int out_fd = open("/dev/null", O_WRONLY);

	cd = chardev_open_fds(&b.m, pfd[0], out_fd);
	s = cd ? serial_new(&b.m, SERIAL_COM1_BASE, SERIAL_COM1_IRQ, cd) : NULL;
	CHECK(s != NULL);
	if (s) {
		test_serial_registers(&b);
		test_serial_thre(&b);
		test_serial_rx(&b, pfd[1]);
		/* EOF ends input only: the device keeps working. */
		close(pfd[1]);
		pfd[1] = -1;
		nanosleep(&(struct timespec){ .tv_nsec = 20000000 }, NULL);
		outb(&b, SCR, 0x33);
		CHECK(inb(&b, SCR) == 0x33);
		CHECK(take_status(&b) == NO_SHUTDOWN);
		serial_free(s);
	}
	if (pfd[1] >= 0)
		close(pfd[1]);
	board_destroy(&b);
}

/* The status of a shutdown that another thread makes; 10 s bounds a hang. */
static int wait_status(struct test_board *b)
{
	int st = take_status(b);

	for (int i = 0; i < 10000 && st == NO_SHUTDOWN; i++) {
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
		st = take_status(b);
	}
	return st;
}

/*
 * -serial stdio on a terminal: Ctrl-A Ctrl-A gives the guest one Ctrl-A,
 * Ctrl-A and any other key gives it nothing, Ctrl-A x ends brisk with
 * status 0 and one line.  The terminal is a pty, made the controlling
 * terminal of a child of its own session (brisk takes input only from its
 * foreground terminal); the child's failed checks are its exit status.
 */
static void serial_escapes_child(int pty, int failed0)
{
	struct test_board b;
	const uint8_t want[] = { 'a', 0x01, 'b', 'c' };
	char line[256];
	bool same = true;
	int tty;

	CHECK(setsid() > 0);
	tty = open(ptsname(pty), O_RDWR);	/* the session's terminal now */
	CHECK(tty >= 0 && dup2(tty, 0) == 0);
	board_init(&b, 1, BOARD_RAM_SIZE);
	struct chardev *cd = chardev_open(&b.m, "stdio");
	struct serial *s = cd ? serial_new(&b.m, SERIAL_COM1_BASE, SERIAL_COM1_IRQ, cd) : NULL;

	CHECK(s != NULL);
	if (s) {
		outb(&b, FCR, 0x07);
		CHECK(write(pty, "a\x01\x01" "b\x01z" "c", 7) == 7);
		for (unsigned i = 0; i < sizeof(want); i++)
			same &= wait_rx(&b) && inb(&b, RBR) == want[i];
		CHECK(same);
		CHECK(!(inb(&b, LSR) & 0x01));	/* the swallowed 'z' is not there */
		CHECK(take_status(&b) == NO_SHUTDOWN);
		/* Checked once stderr is back: a FAIL line would be captured. */
		capture_begin();
		bool wrote = write(pty, "\x01x", 2) == 2;
		int st = wait_status(&b);
		bool said = capture_wait_for("terminated by Ctrl-A x", 2);
		int lines = capture_end(line, sizeof(line));

		CHECK(wrote && st == 0);
		CHECK(said && lines == 1);
		serial_free(s);
	}
	board_destroy(&b);
	_exit(failed != failed0);
}

static void test_serial_escapes(void)
{
	int pty = posix_openpt(O_RDWR | O_NOCTTY), st = -1, failed0 = failed;
	pid_t pid;

	CHECK(pty >= 0 && grantpt(pty) == 0 && unlockpt(pty) == 0);
	if (pty < 0)
		return;
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		serial_escapes_child(pty, failed0);
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(pty);
}

/* ---- isa-debug-exit, pvpanic ---- */

static void test_debug_exit(void)
{
	struct test_board b;

	board_init(&b, 1, BOARD_RAM_SIZE);
	CHECK(debug_exit_init(&b.m, &b.m.pio, 0xf4, 3) == -1);
	CHECK(debug_exit_init(&b.m, &b.m.pio, 0xffff, 2) == -1);
	CHECK(debug_exit_init(&b.m, &b.m.pio, 0xf4, 1) == 0);
	CHECK(debug_exit_init(&b.m, &b.m.pio, 0xf4, 1) == -1);	/* taken */
	CHECK(debug_exit_init(&b.m, &b.m.pio, 0x510, 2) == 0);
	CHECK(inb(&b, 0xf4) == 0);
	CHECK(take_status(&b) == NO_SHUTDOWN);
	outb(&b, 0xf4, 1);
	CHECK(take_status(&b) == 3);
	outb(&b, 0xf4, 0x21);
	CHECK(take_status(&b) == 67);
	outb(&b, 0xf4, 0);
	CHECK(take_status(&b) == 1);
	out(&b, 0x510, 0x1234, 2);
	CHECK(take_status(&b) == 0x2469);
	board_destroy(&b);
}

static void test_pvpanic(void)
{
	struct test_board b;

	board_init(&b, 1, BOARD_RAM_SIZE);
	CHECK(pvpanic_init(&b.m, &b.m.pio, PVPANIC_IOPORT) == 0);
	CHECK(inb(&b, 0x505) == 0x03);
	outb(&b, 0x505, 0x02);			/* crash kernel loaded: carry on */
	CHECK(take_status(&b) == NO_SHUTDOWN);
	outb(&b, 0x505, 0x01);
	CHECK(b.why && strstr(b.why, "panic"));
	CHECK(take_status(&b) == 2);		/* README: exit 2 on a panic */
	/* -action panic=shutdown: exit 0, as a power-off; panic=none: go on. */
	b.m.panic = PANIC_SHUTDOWN;
	outb(&b, 0x505, 0x01);
	CHECK(take_status(&b) == 0);
	b.m.panic = PANIC_NONE;
	outb(&b, 0x505, 0x01);
	CHECK(take_status(&b) == NO_SHUTDOWN);
	b.m.panic = PANIC_EXIT_FAILURE;
	outb(&b, 0x505, 0x01);
	CHECK(take_status(&b) == 2);
	board_destroy(&b);
}

/* ---- i8042 ---- */

static uint8_t kbc_read(struct test_board *b, bool *ok)
{
	*ok = inb(b, 0x64) & 0x01;
	return inb(b, 0x60);
}

static void test_i8042(void)
{
	struct test_board b;
	bool ok;

	board_init(&b, 1, BOARD_RAM_SIZE);
	struct i8042 *k = i8042_new(&b.m);

	CHECK(k != NULL);
	CHECK(i8042_new(&b.m) == NULL);	/* ports taken */
	CHECK((inb(&b, 0x64) & 0x01) == 0);	/* nothing to read */

	outb(&b, 0x64, 0xaa);			/* self test */
	CHECK(kbc_read(&b, &ok) == 0x55 && ok);
	CHECK(inb(&b, 0x64) & 0x08);		/* last write was a command */

	outb(&b, 0x64, 0x20);
	uint8_t ctr = kbc_read(&b, &ok);
	CHECK(ok && (ctr & 0x01));		/* keyboard interrupt on */
	outb(&b, 0x64, 0x60);
	outb(&b, 0x60, ctr & ~0x01);
	outb(&b, 0x64, 0x20);
	CHECK(kbc_read(&b, &ok) == (ctr & ~0x01));

	/* No mouse: the AUX loop and the AUX interface test both fail. */
	outb(&b, 0x64, 0xd3);
	outb(&b, 0x60, 0x5a);
	CHECK((inb(&b, 0x64) & 0x21) == 0x21);
	CHECK(kbc_read(&b, &ok) != 0x5a);
	outb(&b, 0x64, 0xa9);
	uint8_t t = kbc_read(&b, &ok);
	CHECK(ok && t != 0x00 && t != 0xfa && t != 0xff);

	/* The keyboard answers with interrupts on. */
	outb(&b, 0x64, 0x60);
	outb(&b, 0x60, ctr | 0x01);
	outb(&b, 0x60, 0xf2);			/* get id */
	CHECK(level(&b, 1) == 1);
	CHECK(kbc_read(&b, &ok) == 0xfa);
	CHECK(kbc_read(&b, &ok) == 0xab);
	CHECK(kbc_read(&b, &ok) == 0x83 && ok);
	CHECK(level(&b, 1) == 0);
	outb(&b, 0x60, 0xed);			/* LEDs take a parameter */
	CHECK(kbc_read(&b, &ok) == 0xfa);
	outb(&b, 0x60, 0x00);
	CHECK(kbc_read(&b, &ok) == 0xfa);
	CHECK((inb(&b, 0x64) & 0x01) == 0);

	CHECK(take_status(&b) == NO_SHUTDOWN);
	outb(&b, 0x64, 0xff);			/* pulse nothing */
	CHECK(take_status(&b) == NO_SHUTDOWN);
	outb(&b, 0x64, 0xfe);			/* pulse reset */
	CHECK(take_status(&b) == BRISK_EXIT_OK);
	i8042_free(k);
	CHECK(inb(&b, 0x64) == 0xff);		/* gone from the bus */
	board_destroy(&b);
}

/* ---- ACPI ---- */

static void test_acpi_pm(void)
{
	struct test_board b;

	board_init(&b, 1, BOARD_RAM_SIZE);
	struct acpi_pm *pm = acpi_pm_new(&b.m);

	CHECK(pm != NULL);
	CHECK(acpi_pm_new(&b.m) == NULL);	/* ports taken */
	CHECK(in(&b, ACPI_PM1_CNT_BLK, 2) & 0x0001);	/* SCI_EN */
	out(&b, ACPI_PM1_EVT_BLK + 2, 0x0100, 2);	/* PWRBTN_EN */
	CHECK(in(&b, ACPI_PM1_EVT_BLK + 2, 2) == 0x0100);
	out(&b, ACPI_PM1_EVT_BLK, 0xffff, 2);		/* W1C of nothing */
	CHECK(in(&b, ACPI_PM1_EVT_BLK, 2) == 0);

	/* SLP_TYP alone, and another sleep type, do not power off. */
	out(&b, ACPI_PM1_CNT_BLK, ACPI_SLP_TYP_S5 << 10, 2);
	CHECK(take_status(&b) == NO_SHUTDOWN);
	out(&b, ACPI_PM1_CNT_BLK, (1 << 10) | (1 << 13), 2);
	CHECK(take_status(&b) == NO_SHUTDOWN);
	out(&b, ACPI_PM1_CNT_BLK, (ACPI_SLP_TYP_S5 << 10) | (1 << 13), 2);
	CHECK(take_status(&b) == BRISK_EXIT_OK);
	/* Byte access to the high half counts the same. */
	outb(&b, ACPI_PM1_CNT_BLK + 1, (ACPI_SLP_TYP_S5 << 2) | (1 << 5));
	CHECK(take_status(&b) == BRISK_EXIT_OK);
	CHECK(!(in(&b, ACPI_PM1_CNT_BLK, 2) & (1 << 13)));	/* SLP_EN reads 0 */

	outb(&b, ACPI_RESET_REG, ACPI_RESET_VALUE + 1);
	CHECK(take_status(&b) == NO_SHUTDOWN);
	outb(&b, ACPI_RESET_REG, ACPI_RESET_VALUE);
	CHECK(take_status(&b) == BRISK_EXIT_OK);
	acpi_pm_free(pm);
	board_destroy(&b);
}

static uint8_t sum(const uint8_t *p, size_t len)
{
	uint8_t s = 0;

	while (len--)
		s += *p++;
	return s;
}

static bool all_zero(const uint8_t *p, size_t len)
{
	while (len--) {
		if (*p++)
			return false;
	}
	return true;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* A table at gpa that fits in RAM and sums to 0; NULL otherwise. */
static const uint8_t *table(struct test_board *b, uint64_t gpa, const char *sig)
{
	const uint8_t *t = guest_mem_ptr(&b->m.mem, gpa, 36);

	if (!t || memcmp(t, sig, 4) || !guest_mem_ptr(&b->m.mem, gpa, rd32(t + 4)))
		return NULL;
	return sum(t, rd32(t + 4)) == 0 ? t : NULL;
}

static bool contains(const uint8_t *p, size_t len, const char *s)
{
	return memmem(p, len, s, strlen(s)) != NULL;
}

static void test_madt(struct test_board *b, const uint8_t *madt, unsigned ncpus)
{
	uint32_t len = rd32(madt + 4);
	unsigned lapics = 0, ioapics = 0, overrides = 0;
	bool ids_ok = true;

	CHECK(rd32(madt + 36) == 0xfee00000);
	for (uint32_t off = 44; off + 2 <= len && madt[off + 1] >= 2; off += madt[off + 1]) {
		const uint8_t *e = madt + off;

		switch (e[0]) {
		case 0:
			if (e[3] != lapics || e[2] != lapics || !(rd32(e + 4) & 1))
				ids_ok = false;
			lapics++;
			break;
		case 1:
			ioapics++;
			CHECK(e[2] == ncpus);
			CHECK(rd32(e + 4) == 0xfec00000 && rd32(e + 8) == 0);
			break;
		case 2:
			overrides++;
			if (e[3] == 0)
				CHECK(rd32(e + 4) == 2);
			if (e[3] == 9)
				CHECK(rd32(e + 4) == 9 && (e[8] | e[9] << 8) == 0x000d);
			break;
		}
	}
	CHECK(lapics == ncpus && ids_ok);
	CHECK(ioapics == 1 && overrides == 2);
	(void)b;
}

static void test_acpi_tables(unsigned ncpus)
{
	struct test_board b;

	board_init(&b, ncpus, BOARD_RAM_SIZE);
	uint64_t rsdp_gpa = acpi_build(&b.m, 0xe0000, 0x10000);

	CHECK(rsdp_gpa == 0xe0000);
	const uint8_t *rsdp = guest_mem_ptr(&b.m.mem, rsdp_gpa, 36);

	CHECK(rsdp && !memcmp(rsdp, "RSD PTR ", 8));
	if (!rsdp) {
		board_destroy(&b);
		return;
	}
	CHECK(sum(rsdp, 20) == 0 && sum(rsdp, 36) == 0);
	CHECK(rsdp[15] == 2 && rd32(rsdp + 20) == 36);

	const uint8_t *xsdt = table(&b, rd64(rsdp + 24), "XSDT");
	const uint8_t *fadt = NULL, *madt = NULL;

	CHECK(xsdt != NULL);
	for (uint32_t off = 36; xsdt && off + 8 <= rd32(xsdt + 4); off += 8) {
		uint64_t gpa = rd64(xsdt + off);
		const uint8_t *t = guest_mem_ptr(&b.m.mem, gpa, 4);

		CHECK(t != NULL);
		if (t && !memcmp(t, "FACP", 4))
			fadt = table(&b, gpa, "FACP");
		else if (t && !memcmp(t, "APIC", 4))
			madt = table(&b, gpa, "APIC");
		else
			CHECK(!"unexpected table in XSDT");
	}
	CHECK(fadt && madt);
	if (fadt) {
		const uint8_t *dsdt = table(&b, rd64(fadt + 140), "DSDT");

		CHECK(rd32(fadt + 40) == rd64(fadt + 140));
		CHECK(dsdt && contains(dsdt, rd32(dsdt + 4), "_S5_"));
		CHECK(dsdt && contains(dsdt, rd32(dsdt + 4), "QEMU0001"));
		CHECK(dsdt && contains(dsdt, rd32(dsdt + 4), "RTC_"));
		CHECK(fadt[108] == 0x32);		/* CENTURY: CMOS byte */
		CHECK(!(fadt[109] & (1u << 5)));	/* CMOS RTC present */
		const uint8_t *facs = guest_mem_ptr(&b.m.mem, rd64(fadt + 132), 64);

		CHECK(facs && !memcmp(facs, "FACS", 4) && (rd64(fadt + 132) & 63) == 0);
		CHECK((fadt[46] | fadt[47] << 8) == 9);		/* SCI_INT */
		CHECK(rd32(fadt + 56) == ACPI_PM1_EVT_BLK);
		CHECK(rd32(fadt + 64) == ACPI_PM1_CNT_BLK);
		CHECK(rd32(fadt + 112) & (1u << 10));		/* RESET_REG_SUP */
		CHECK(!(rd32(fadt + 112) & (1u << 20)));	/* not HW-reduced */
		CHECK(fadt[116] == 1 && rd64(fadt + 120) == ACPI_RESET_REG);
		CHECK(fadt[128] == ACPI_RESET_VALUE);
	}
	if (madt)
		test_madt(&b, madt, ncpus);

	/* Nothing lands outside the range it was given. */
	CHECK(all_zero(b.ram, 0xe0000) && all_zero(b.ram + 0xf0000, BOARD_RAM_SIZE - 0xf0000));
	board_destroy(&b);
}

static void test_acpi_errors(void)
{
	struct test_board b;

	board_init(&b, 2, BOARD_RAM_SIZE);
	CHECK(acpi_build(&b.m, 0xe0000, 64) == 0);		/* too small */
	CHECK(acpi_build(&b.m, BOARD_RAM_SIZE - 0x800, 0x1000) == 0);	/* not RAM */
	CHECK(acpi_build(&b.m, 0xe0008, 0x1000) == 0);		/* misaligned */
	b.m.ncpus = 0;
	CHECK(acpi_build(&b.m, 0xe0000, 0x10000) == 0);
	b.m.ncpus = 300;
	CHECK(acpi_build(&b.m, 0xe0000, 0x10000) == 0);
	CHECK(all_zero(b.ram, BOARD_RAM_SIZE));
	board_destroy(&b);
}

int main(void)
{
	char dir[] = "/tmp/brisk-legacy-XXXXXX";

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_serial(dir));
	RUN(test_serial_escapes());
	rmdir(dir);
	RUN(test_debug_exit());
	RUN(test_pvpanic());
	RUN(test_i8042());
	RUN(test_acpi_pm());
	RUN(test_acpi_tables(1));
	RUN(test_acpi_tables(4));
	RUN(test_acpi_tables(254));
	RUN(test_acpi_errors());
	return check_done();
}
