// SPDX-License-Identifier: GPL-2.0-or-later
/* guest_mem bounds, bus dispatch and the iothread loop. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "hw/bus.h"
#include "util/guest-mem.h"
#include "util/iothread.h"

#include "check.h"

static void test_guest_mem(void)
{
	static uint8_t low[4096], high[8192];
	struct guest_mem mem = { 0 };

	CHECK(guest_mem_add(&mem, 0, sizeof(low), low) == 0);
	CHECK(guest_mem_add(&mem, 0x100000000ull, sizeof(high), high) == 0);
	CHECK(guest_mem_add(&mem, 0x800, 0x1000, low) == -1);	/* overlap */
	CHECK(guest_mem_add(&mem, ~0ull - 10, 100, low) == -1);	/* wraps */
	CHECK(mem.ram_size == sizeof(low) + sizeof(high));

	CHECK(guest_mem_ptr(&mem, 0, 4096) == low);
	CHECK(guest_mem_ptr(&mem, 4095, 1) == low + 4095);
	CHECK(guest_mem_ptr(&mem, 4095, 2) == NULL);		/* runs off the end */
	CHECK(guest_mem_ptr(&mem, 4096, 0) == NULL);		/* hole */
	CHECK(guest_mem_ptr(&mem, 0x100000000ull + 8191, 1) == high + 8191);
	CHECK(guest_mem_ptr(&mem, 0x100000000ull + 1, ~0ull) == NULL);
	CHECK(guest_mem_ptr(&mem, ~0ull, 2) == NULL);		/* wraps */
	CHECK(guest_mem_ptr(&mem, 0xfffffffful, 2) == NULL);	/* below high */

	uint32_t v = 0x11223344, r = 0;

	CHECK(guest_mem_write(&mem, 100, &v, sizeof(v)));
	CHECK(guest_mem_read(&mem, 100, &r, sizeof(r)) && r == v);
	CHECK(!guest_mem_write(&mem, 4094, &v, sizeof(v)));
	CHECK(low[4094] == 0 && low[4095] == 0);
}

struct reg {
	uint64_t last_off, last_val;
	unsigned last_size;
};

static uint64_t reg_read(void *opaque, uint64_t off, unsigned size)
{
	struct reg *r = opaque;

	r->last_off = off;
	r->last_size = size;
	return 0xab00 | off;
}

static void reg_write(void *opaque, uint64_t off, uint64_t val, unsigned size)
{
	struct reg *r = opaque;

	r->last_off = off;
	r->last_val = val;
	r->last_size = size;
}

static const struct bus_ops reg_ops = { .read = reg_read, .write = reg_write };

static void test_bus(void)
{
	struct bus bus;
	struct reg a = { 0 }, b = { 0 };
	uint64_t v;

	bus_init(&bus, "test");
	CHECK(bus_register(&bus, 0x100, 0x10, &reg_ops, &a) == 0);
	CHECK(bus_register(&bus, 0x200, 0x8, &reg_ops, &b) == 0);
	CHECK(bus_register(&bus, 0x108, 0x10, &reg_ops, &b) == -1);
	CHECK(bus_register(&bus, 0xf8, 0x9, &reg_ops, &b) == -1);
	CHECK(bus_register(&bus, 0, 0, &reg_ops, &b) == -1);
	CHECK(bus_register(&bus, ~0ull, 2, &reg_ops, &b) == -1);

	CHECK(bus_read(&bus, 0x104, &v, 4) && v == 0xab04 && a.last_size == 4);
	CHECK(bus_write(&bus, 0x207, 0x5a, 1) && b.last_off == 7 && b.last_val == 0x5a);
	/* straddling the end of a region is not an access to it */
	CHECK(!bus_read(&bus, 0x10e, &v, 4) && v == 0xffffffffu);
	CHECK(!bus_write(&bus, 0x1ff, 1, 2));
	CHECK(!bus_read(&bus, 0x300, &v, 8) && v == ~0ull);

	CHECK(bus_unregister(&bus, 0x100, &b) == -1);	/* not its owner */
	CHECK(bus_unregister(&bus, 0x100, &a) == 0);
	CHECK(!bus_read(&bus, 0x100, &v, 1) && v == 0xff);
	CHECK(bus_register(&bus, 0x108, 0x10, &reg_ops, &a) == 0);
	CHECK(bus_read(&bus, 0x110, &v, 2) && v == 0xab08 && a.last_off == 8);
	bus_destroy(&bus);
}

struct counter {
	int fd;
	int hits;
};

static void count(void *opaque)
{
	struct counter *c = opaque;
	uint64_t n;

	if (read(c->fd, &n, sizeof(n)) == sizeof(n))
		c->hits += (int)n;
}

static void test_iothread(void)
{
	struct iothread *t = iothread_new("test");
	struct counter c = { .fd = eventfd(0, EFD_NONBLOCK) };
	uint64_t one = 1;

	CHECK(t != NULL);
	CHECK(iothread_add_fd(t, c.fd, count, &c) == 0);
	CHECK(iothread_poll(t, 0) == 0);
	CHECK(write(c.fd, &one, sizeof(one)) == sizeof(one));
	CHECK(iothread_poll(t, 1000) == 1 && c.hits == 1);

	/* the same loop as a thread */
	CHECK(iothread_start(t) == 0);
	for (int i = 0; i < 5; i++)
		CHECK(write(c.fd, &one, sizeof(one)) == sizeof(one));
	for (int i = 0; i < 1000 && __atomic_load_n(&c.hits, __ATOMIC_RELAXED) < 6; i++)
		usleep(1000);
	iothread_del_fd(t, c.fd);
	CHECK(c.hits == 6);
	CHECK(write(c.fd, &one, sizeof(one)) == sizeof(one));
	usleep(10000);
	CHECK(c.hits == 6);	/* removed handlers never run again */
	iothread_free(t);
	close(c.fd);
}

int main(void)
{
	test_guest_mem();
	test_bus();
	test_iothread();
	return check_summary();
}
