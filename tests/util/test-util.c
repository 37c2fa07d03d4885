// SPDX-License-Identifier: GPL-2.0-or-later
/* guest_mem bounds, bus dispatch and the iothread loop. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/*
 * Regions shared by another process through an fd (vhost-user): what the
 * peer writes through its own mapping is what guest_mem_ptr() reads.
 */
static void test_guest_mem_fd(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd = memfd_create("test-guest-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING), efd;
	struct guest_mem mem = { 0 };
	const char *why;
	uint64_t gpa;
	uint8_t *peer;

	CHECK(fd >= 0 && ftruncate(fd, 4 * pg) == 0);
	peer = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(peer != MAP_FAILED);
	/* Page 1 at gpa 0x10000 (uva 0x7000000), pages 2-3 at 0x100000000. */
	CHECK(guest_mem_map_fd(&mem, 0x10000, pg, 0x7000000, fd, pg, -1, &why) == 0);
	CHECK(guest_mem_map_fd(&mem, 0x100000000ull, 2 * pg, 0x9000000, fd, 2 * pg, -1, &why) == 0);
	CHECK(mem.nr_regions == 2 && mem.ram_size == 3 * (uint64_t)pg);
	/* Sealed by the mapping: the peer can no longer shrink it. */
	CHECK(fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK);
	CHECK(ftruncate(fd, pg) == -1 && errno == EPERM);
	CHECK(!mem.region[0].fragile && !mem.region[1].fragile);
	peer[pg + 5] = 0x5a;
	peer[3 * pg + 7] = 0xa5;
	uint8_t *p = guest_mem_ptr(&mem, 0x10000 + 5, 1);

	CHECK(p && *p == 0x5a);
	p = guest_mem_ptr(&mem, 0x100000000ull + pg + 7, 1);
	CHECK(p && *p == 0xa5);
	CHECK(guest_mem_ptr(&mem, 0x10000 + pg - 1, 2) == NULL);

	/* User addresses translate only inside one region. */
	CHECK(guest_mem_uva_to_gpa(&mem, 0x7000010, 16, &gpa) && gpa == 0x10010);
	CHECK(guest_mem_uva_to_gpa(&mem, 0x9000000 + pg, pg, &gpa) &&
	      gpa == 0x100000000ull + pg);
	CHECK(!guest_mem_uva_to_gpa(&mem, 0x7000000 + pg - 8, 16, &gpa));
	CHECK(!guest_mem_uva_to_gpa(&mem, 0x6fffff0, 16, &gpa));
	CHECK(!guest_mem_uva_to_gpa(&mem, ~0ull, 2, &gpa));

	/* A mapping need not start on a page: the offset is honoured. */
	CHECK(guest_mem_map_fd(&mem, 0x20000, 16, 0x8000000, fd, pg + 5, -1, &why) == 0);
	p = guest_mem_ptr(&mem, 0x20000, 1);
	CHECK(p && *p == 0x5a);

	/* What a hostile front-end may try. */
	CHECK(guest_mem_map_fd(&mem, 0x10000 + 8, 8, 0xa000000, fd, 0, -1, &why) == -1);	/* gpa overlap */
	CHECK(guest_mem_map_fd(&mem, 0x30000, 8, 0x7000000 + 8, fd, 0, -1, &why) == -1);	/* uva overlap */
	CHECK(guest_mem_map_fd(&mem, ~0ull - 4, 8, 0xb000000, fd, 0, -1, &why) == -1);	/* gpa wraps */
	CHECK(guest_mem_map_fd(&mem, 0x30000, 8, ~0ull - 4, fd, 0, -1, &why) == -1);	/* uva wraps */
	CHECK(guest_mem_map_fd(&mem, 0x30000, 8, 0xb000000, fd, ~0ull - 4, -1, &why) == -1);	/* offset wraps */
	CHECK(guest_mem_map_fd(&mem, 0x30000, 0, 0xb000000, fd, 0, -1, &why) == -1);	/* empty */
	CHECK(guest_mem_map_fd(&mem, 0x30000, pg, 0xb000000, fd, 3 * pg + 1, -1, &why) == -1);	/* past EOF */
	CHECK(why && strstr(why, "end of its file"));
	efd = eventfd(0, EFD_CLOEXEC);
	CHECK(guest_mem_map_fd(&mem, 0x30000, 8, 0xb000000, efd, 0, -1, &why) == -1);	/* not a file */
	CHECK(guest_mem_map_fd(&mem, 0x30000, 8, 0xb000000, -1, 0, -1, &why) == -1);
	close(efd);
	CHECK(mem.nr_regions == 3);
	for (unsigned i = 3; i < GUEST_MEM_MAX_REGIONS; i++)
		CHECK(guest_mem_map_fd(&mem, 0x40000 + i * 0x1000ull, 8, 0xc000000 + i * 0x1000ull,
				       fd, 0, -1, &why) == 0);
	CHECK(guest_mem_map_fd(&mem, 0x80000, 8, 0xd000000, fd, 0, -1, &why) == -1);	/* full */

	guest_mem_unmap(&mem);
	CHECK(mem.nr_regions == 0 && mem.ram_size == 0);
	CHECK(guest_mem_ptr(&mem, 0x10000, 1) == NULL);
	CHECK(!guest_mem_uva_to_gpa(&mem, 0x7000000, 1, &gpa));
	munmap(peer, 4 * pg);
	close(fd);
}

/*
 * A peer's file that cannot be sealed (here a memfd made without sealing,
 * as a tmpfs or hugetlbfs file) is mapped only with a fault eventfd.  The
 * peer truncates it: an access past the new end reads zeros instead of
 * raising SIGBUS, and the eventfd says so.  A SIGBUS anywhere else still
 * ends the process (in a child here).
 */
static void test_guest_mem_fragile(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd = memfd_create("test-fragile", MFD_CLOEXEC);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct guest_mem mem = { 0 };
	const char *why = NULL;
	volatile uint8_t *p;
	uint64_t n = 0;
	int status = 0;
	pid_t pid;

	CHECK(fd >= 0 && efd >= 0 && ftruncate(fd, 4 * pg) == 0);
	CHECK(guest_mem_map_fd(&mem, 0x10000, 4 * pg, 0x7000000, fd, 0, -1, &why) == -1);
	CHECK(why && strstr(why, "may shrink"));
	CHECK(guest_mem_map_fd(&mem, 0x10000, 4 * pg, 0x7000000, fd, 0, efd, &why) == 0);
	CHECK(mem.region[0].fragile);
	p = guest_mem_ptr(&mem, 0x10000 + 2 * pg, 1);
	CHECK(p != NULL);
	if (!p)
		return;
	*p = 0x77;
	CHECK(*p == 0x77);
	CHECK(read(efd, &n, sizeof(n)) == -1 && errno == EAGAIN);
	CHECK(ftruncate(fd, pg) == 0);
	CHECK(*p == 0);		/* would be SIGBUS */
	*p = 0x11;		/* lands nowhere the peer sees */
	CHECK(read(efd, &n, sizeof(n)) == sizeof(n) && n == 1);
	/* The page still in the file is still shared. */
	CHECK(pwrite(fd, "\x42", 1, 5) == 1);
	p = guest_mem_ptr(&mem, 0x10000 + 5, 1);
	CHECK(p && *p == 0x42);
	CHECK(read(efd, &n, sizeof(n)) == -1 && errno == EAGAIN);
	guest_mem_unmap(&mem);

	/* Not a watched mapping: SIGBUS as ever. */
	uint8_t *q = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	CHECK(q != MAP_FAILED);
	pid = fork();
	if (pid == 0) {
		*(volatile uint8_t *)(q + pg) = 1;
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	/* Killed by it, or (under AddressSanitizer) reported and failed. */
	CHECK(WIFSIGNALED(status) ? WTERMSIG(status) == SIGBUS : WEXITSTATUS(status) != 0);
	munmap(q, 2 * pg);
	close(fd);
	close(efd);
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

/* Huge pages need the mapping aligned; every byte of it must be usable. */
static void test_guest_ram_alloc(void)
{
	uint64_t sizes[] = { 4096, GUEST_RAM_ALIGN, 5 * GUEST_RAM_ALIGN + 4096 };

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *p = guest_ram_alloc(sizes[i]);

		CHECK(p != NULL);
		if (!p)
			continue;
		CHECK(((uintptr_t)p & (GUEST_RAM_ALIGN - 1)) == 0);
		CHECK(p[0] == 0 && p[sizes[i] - 1] == 0);	/* fresh and zero */
		p[0] = 1;
		p[sizes[i] - 1] = 2;
		CHECK(munmap(p, sizes[i]) == 0);
	}
	CHECK(guest_ram_alloc(0) == NULL);
	CHECK(guest_ram_alloc(~0ull - 4096) == NULL);

	/*
	 * Shared RAM (what a vhost-user back-end maps) is sealed at its
	 * size, for good: the back-end need not fear a SIGBUS from it.
	 */
	int fd = -1;
	uint8_t *p = guest_ram_alloc_shared(GUEST_RAM_ALIGN, &fd);
	int seals = fd >= 0 ? fcntl(fd, F_GET_SEALS) : 0;

	CHECK(p != NULL && fd >= 0);
	CHECK(seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_GROW) &&
	      (seals & F_SEAL_SEAL));
	CHECK(ftruncate(fd, 4096) == -1 && errno == EPERM);
	if (p) {
		p[GUEST_RAM_ALIGN - 1] = 3;
		CHECK(munmap(p, GUEST_RAM_ALIGN) == 0);
	}
	if (fd >= 0)
		close(fd);
}

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
		__atomic_add_fetch(&c->hits, (int)n, __ATOMIC_RELAXED);
}

/* Whether c's handler has counted n by now, waiting up to 5 s for it. */
static bool wait_hits(struct counter *c, int n)
{
	for (int i = 0; i < 5000 && __atomic_load_n(&c->hits, __ATOMIC_ACQUIRE) < n; i++)
		usleep(1000);
	return __atomic_load_n(&c->hits, __ATOMIC_ACQUIRE) == n;
}

/* One turn of a started loop is over: a handler added now has run. */
static bool loop_turned(struct iothread *t)
{
	struct counter mark = { .fd = eventfd(1, EFD_NONBLOCK) };
	bool ok = mark.fd >= 0 && iothread_add_fd(t, mark.fd, count, &mark) == 0 &&
		  wait_hits(&mark, 1);

	iothread_del_fd(t, mark.fd);
	close(mark.fd);
	return ok;
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
	CHECK(wait_hits(&c, 6));
	iothread_del_fd(t, c.fd);
	CHECK(write(c.fd, &one, sizeof(one)) == sizeof(one));
	CHECK(loop_turned(t));
	CHECK(c.hits == 6);	/* removed handlers never run again */
	iothread_free(t);
	close(c.fd);
}

static void ran(void *opaque)
{
	(*(int *)opaque)++;
}

/* A handler that stops early and asks to run again, as a kick's round limit does. */
struct again {
	int fd, runs, left;
};

static void ran_again(void *opaque)
{
	struct again *a = opaque;
	uint64_t one = 1;

	a->runs++;
	if (a->left > 0 && a->left-- && write(a->fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

/*
 * An event (iothread_add_event): its handler runs once per write and
 * never reads the eventfd, so a level-triggered watch would run it again
 * on every turn; watch_fd(on) must keep the edge.
 */
static void test_iothread_event(void)
{
	struct iothread *t = iothread_new("test");
	int fd = eventfd(0, EFD_NONBLOCK), runs = 0;
	uint64_t one = 1, n;

	CHECK(t != NULL && fd >= 0);
	CHECK(iothread_add_event(t, fd, ran, &runs) == 0);
	CHECK(iothread_poll(t, 0) == 0);
	CHECK(write(fd, &one, sizeof(one)) == sizeof(one));
	CHECK(iothread_poll(t, 1000) == 1 && runs == 1);
	CHECK(iothread_poll(t, 0) == 0 && runs == 1);
	/* Two writes before the thread looks: one run takes the work of both. */
	CHECK(write(fd, &one, sizeof(one)) == sizeof(one));
	CHECK(write(fd, &one, sizeof(one)) == sizeof(one));
	CHECK(iothread_poll(t, 1000) == 1 && runs == 2);
	CHECK(iothread_poll(t, 0) == 0);
	iothread_watch_fd(t, fd, false);
	CHECK(write(fd, &one, sizeof(one)) == sizeof(one));
	CHECK(iothread_poll(t, 0) == 0);
	iothread_watch_fd(t, fd, true);
	CHECK(write(fd, &one, sizeof(one)) == sizeof(one));
	CHECK(iothread_poll(t, 1000) == 1 && runs == 3);
	CHECK(iothread_poll(t, 0) == 0 && runs == 3);
	/* Never read: the count is every write. */
	CHECK(read(fd, &n, sizeof(n)) == sizeof(n) && n == 5);
	iothread_free(t);
	close(fd);

	/* A write from inside the handler runs it again, on the next turn. */
	struct again a = { .fd = eventfd(0, EFD_NONBLOCK), .left = 2 };

	t = iothread_new("test");
	CHECK(t != NULL && a.fd >= 0);
	CHECK(iothread_add_event(t, a.fd, ran_again, &a) == 0);
	CHECK(write(a.fd, &one, sizeof(one)) == sizeof(one));
	CHECK(iothread_poll(t, 1000) == 1 && a.runs == 1);
	CHECK(iothread_poll(t, 1000) == 1 && a.runs == 2);
	CHECK(iothread_poll(t, 1000) == 1 && a.runs == 3);
	CHECK(iothread_poll(t, 0) == 0 && a.runs == 3);
	iothread_free(t);
	close(a.fd);
}

/*
 * The polling window's contract (iothread.h): kept while it covers the
 * idle period, 0 past the maximum, grown from 4 us by doubling up to the
 * maximum, and from 0 only after two fitting periods in a row.
 */
static void test_iothread_poll_adapt(void)
{
	const uint64_t us = 1000, max = 16 * us;
	struct iothread_poll_window w = { 0 };

	iothread_poll_adapt(&w, 10 * us, max);
	CHECK(w.ns == 0);		/* one short period: not yet */
	iothread_poll_adapt(&w, 30 * us, max);
	CHECK(w.ns == 0);		/* a long one: the count starts over */
	iothread_poll_adapt(&w, 10 * us, max);
	CHECK(w.ns == 0);
	iothread_poll_adapt(&w, 10 * us, max);
	CHECK(w.ns == 4 * us);		/* two in a row */
	iothread_poll_adapt(&w, 3 * us, max);
	CHECK(w.ns == 4 * us);		/* covered: kept */
	iothread_poll_adapt(&w, 5 * us, max);
	CHECK(w.ns == 8 * us);
	iothread_poll_adapt(&w, 9 * us, max);
	CHECK(w.ns == 16 * us);
	iothread_poll_adapt(&w, 16 * us, max);
	CHECK(w.ns == 16 * us);		/* at the maximum */
	iothread_poll_adapt(&w, 16 * us + 1, max);
	CHECK(w.ns == 0);		/* past it: off at once */
	iothread_poll_adapt(&w, 1 * us, max);
	CHECK(w.ns == 0);
	iothread_poll_adapt(&w, 1 * us, max);
	CHECK(w.ns == 4 * us);
	/* A maximum under the first step: the window is the maximum. */
	w = (struct iothread_poll_window){ 0 };
	iothread_poll_adapt(&w, 2 * us, 3 * us);
	iothread_poll_adapt(&w, 2 * us, 3 * us);
	CHECK(w.ns == 3 * us);
}

/*
 * A handler removes another whose event is already in the same epoll
 * batch and adds a third: the allocator hands the third the memory the
 * second just gave back.  The stale event must not run the newcomer.
 */
struct swap {
	struct iothread *t;
	struct counter *first, *victim, *newcomer;
};

static void called(void *opaque)
{
	struct counter *c = opaque;

	c->hits++;
}

static void swap_handlers(void *opaque)
{
	struct swap *w = opaque;
	void *fill[8];

	count(w->first);
	/*
	 * glibc's calloc bypasses its per-thread cache; with that cache
	 * full, the handler freed next is what calloc hands out first.
	 */
	for (int i = 0; i < 8; i++)
		fill[i] = malloc(40);
	for (int i = 0; i < 8; i++)
		free(fill[i]);
	iothread_del_fd(w->t, w->victim->fd);
	CHECK(iothread_add_fd(w->t, w->newcomer->fd, called, w->newcomer) == 0);
}

static void test_iothread_stale_event(void)
{
	struct counter first = { .fd = eventfd(0, EFD_NONBLOCK) };
	struct counter victim = { .fd = eventfd(0, EFD_NONBLOCK) };
	struct counter newcomer = { .fd = eventfd(0, EFD_NONBLOCK) };
	struct iothread *t = iothread_new("stale");
	struct swap w = { t, &first, &victim, &newcomer };
	uint64_t one = 1;

	CHECK(iothread_add_fd(t, first.fd, swap_handlers, &w) == 0);
	CHECK(iothread_add_fd(t, victim.fd, count, &victim) == 0);
	/* Both ready before the poll: one batch, first's event first. */
	CHECK(write(first.fd, &one, sizeof(one)) == sizeof(one));
	CHECK(write(victim.fd, &one, sizeof(one)) == sizeof(one));
	CHECK(iothread_poll(t, 1000) == 1);
	CHECK(first.hits == 1 && victim.hits == 0);
	CHECK(newcomer.hits == 0);	/* its fd was never readable */
	CHECK(write(newcomer.fd, &one, sizeof(one)) == sizeof(one));
	CHECK(iothread_poll(t, 1000) == 1 && newcomer.hits == 1);
	iothread_free(t);
	close(first.fd);
	close(victim.fd);
	close(newcomer.fd);
}

/*
 * A work source like a virtqueue: the producer posts an item and kicks (an
 * eventfd write) only while the consumer has not quiesced it.
 */
struct pollsrc {
	struct counter *kick;
	int posted, taken;	/* atomic */
	int quiet;		/* atomic: between quiesce(true) and (false) */
	int kicks;
	int quiesced, woken;	/* quiesce calls */
};

static bool src_ready(void *opaque)
{
	struct pollsrc *p = opaque;

	return __atomic_load_n(&p->posted, __ATOMIC_SEQ_CST) !=
	       __atomic_load_n(&p->taken, __ATOMIC_SEQ_CST);
}

static void src_run(void *opaque)
{
	struct pollsrc *p = opaque;

	__atomic_store_n(&p->taken, __atomic_load_n(&p->posted, __ATOMIC_SEQ_CST),
			 __ATOMIC_SEQ_CST);
}

static void src_quiesce(void *opaque, bool quiet)
{
	struct pollsrc *p = opaque;

	__atomic_store_n(&p->quiet, quiet, __ATOMIC_SEQ_CST);
	if (quiet)
		p->quiesced++;
	else
		p->woken++;
}

/* A kick's handler that serves, as a device's does. */
static void src_kick(void *opaque)
{
	struct pollsrc *p = opaque;

	count(p->kick);
	src_run(p);
}

/* Posts one item; returns whether it was taken within a second. */
static bool src_post(struct pollsrc *p)
{
	uint64_t one = 1;
	int want = __atomic_add_fetch(&p->posted, 1, __ATOMIC_SEQ_CST);

	if (!__atomic_load_n(&p->quiet, __ATOMIC_SEQ_CST)) {
		p->kicks++;
		if (write(p->kick->fd, &one, sizeof(one)) != sizeof(one))
			return false;
	}
	for (int i = 0; i < 1000; i++) {
		if (__atomic_load_n(&p->taken, __ATOMIC_SEQ_CST) == want)
			return true;
		usleep(1000);
	}
	return false;
}

static void test_iothread_polling(void)
{
	struct counter c = { .fd = eventfd(0, EFD_NONBLOCK) };
	struct pollsrc src = { .kick = &c };
	struct iothread_poller poller = {
		.ready = src_ready, .run = src_run, .quiesce = src_quiesce,
		.opaque = &src,
	};
	int ok = 0;

	/*
	 * No maximum: pollers are not consulted, so nothing is taken at all
	 * (the kick only reaches the fd handler).
	 */
	struct iothread *t = iothread_new("nopoll");

	CHECK(iothread_add_fd(t, c.fd, count, &c) == 0);
	CHECK(iothread_add_poller(t, &poller) == 0);
	CHECK(iothread_start(t) == 0);
	__atomic_add_fetch(&src.posted, 1, __ATOMIC_SEQ_CST);
	CHECK(loop_turned(t) && loop_turned(t));
	CHECK(__atomic_load_n(&src.taken, __ATOMIC_SEQ_CST) == 0);
	CHECK(src.quiesced == 0);
	iothread_free(t);

	/*
	 * A 200 ms maximum: the window grows to span the gaps between items,
	 * so soon an item needs no kick (the consumer said it is quiet), and
	 * each such item is still taken.  Idle past the window, the thread
	 * re-arms and sleeps.  Judged by what the consumer said, not by how
	 * many kicks a run happened to need.
	 */
	src = (struct pollsrc){ .kick = &c };
	t = iothread_new("poll");
	CHECK(iothread_add_fd(t, c.fd, src_kick, &src) == 0);
	CHECK(iothread_add_poller(t, &poller) == 0);
	iothread_set_poll_max(t, 200 * 1000 * 1000ull);
	CHECK(iothread_start(t) == 0);
	int i, unkicked = 0;

	for (i = 0; i < 4000 && unkicked < 8; i++) {
		int before = src.kicks;

		ok += src_post(&src);
		unkicked += src.kicks == before;
	}
	CHECK(ok == i);
	CHECK(unkicked == 8);
	for (i = 0; i < 5000 && __atomic_load_n(&src.quiet, __ATOMIC_SEQ_CST); i++)
		usleep(1000);
	CHECK(__atomic_load_n(&src.quiet, __ATOMIC_SEQ_CST) == 0);
	int kicks = src.kicks;

	CHECK(src_post(&src));	/* asleep: this one needs its kick */
	CHECK(src.kicks == kicks + 1);
	iothread_free(t);
	CHECK(src.quiesced > 0 && src.quiesced == src.woken);
	close(c.fd);
}

/*
 * A poller that always has work (a queue its driver keeps full) and an fd
 * of the same thread (another disk's completion): the fd's handler must
 * run while the poller is still busy, not once it runs dry.  The poller
 * makes the fd ready on its first busy turn and stays busy until the
 * handler ran or BUSY_LIMIT turns passed; judged by the turn count.
 */
#define BUSY_LIMIT 1000000
struct busysrc {
	struct pollsrc *src;	/* for the warm-up: a spinning thread */
	struct counter *other;
	int busy;		/* atomic: set by the test */
	unsigned turns;		/* I/O thread only */
	int hit_at;		/* atomic: turns when the handler had run; -1 */
};

static bool busy_ready(void *opaque)
{
	struct busysrc *b = opaque;

	return __atomic_load_n(&b->busy, __ATOMIC_SEQ_CST) ? b->turns < BUSY_LIMIT &&
	       __atomic_load_n(&b->hit_at, __ATOMIC_SEQ_CST) < 0 : src_ready(b->src);
}

static void busy_run(void *opaque)
{
	struct busysrc *b = opaque;
	uint64_t one = 1;

	if (!__atomic_load_n(&b->busy, __ATOMIC_SEQ_CST)) {
		src_run(b->src);
		return;
	}
	if (b->turns++ == 0 && write(b->other->fd, &one, sizeof(one)) != sizeof(one))
		abort();
	if (b->other->hits || b->turns == BUSY_LIMIT)
		__atomic_store_n(&b->hit_at, b->other->hits ? (int)b->turns : BUSY_LIMIT,
				 __ATOMIC_SEQ_CST);
}

static void busy_quiesce(void *opaque, bool quiet)
{
	struct busysrc *b = opaque;

	src_quiesce(b->src, quiet);
}

static void test_iothread_fair(void)
{
	struct counter c = { .fd = eventfd(0, EFD_NONBLOCK) };
	struct counter other = { .fd = eventfd(0, EFD_NONBLOCK) };
	struct pollsrc src = { .kick = &c };
	struct busysrc b = { .src = &src, .other = &other, .hit_at = -1 };
	struct iothread_poller poller = {
		.ready = busy_ready, .run = busy_run, .quiesce = busy_quiesce, .opaque = &b,
	};
	struct iothread *t = iothread_new("fair");
	uint64_t one = 1;
	int i, unkicked = 0;

	CHECK(iothread_add_fd(t, c.fd, src_kick, &src) == 0);
	CHECK(iothread_add_fd(t, other.fd, count, &other) == 0);
	CHECK(iothread_add_poller(t, &poller) == 0);
	/*
	 * Open at 60 s from the start, never idle past it: no preemption of
	 * the thread, however loaded the host, ends the spin, which would
	 * serve the fd from the main loop whatever the spin does.
	 */
	iothread_set_poll_max(t, 60 * 1000000000ull);
	iothread_open_poll_window(t);
	CHECK(iothread_start(t) == 0);
	/* Until an item needs no kick: the thread spins. */
	for (i = 0; i < 4000 && !unkicked; i++) {
		int before = src.kicks;

		CHECK(src_post(&src));
		unkicked += src.kicks == before;
	}
	CHECK(unkicked == 1);
	__atomic_store_n(&b.busy, 1, __ATOMIC_SEQ_CST);
	/* Asleep after all: the kick brings it back to the spin. */
	CHECK(write(c.fd, &one, sizeof(one)) == sizeof(one));
	for (i = 0; i < 10000 && __atomic_load_n(&b.hit_at, __ATOMIC_SEQ_CST) < 0; i++)
		usleep(1000);
	int hit_at = __atomic_load_n(&b.hit_at, __ATOMIC_SEQ_CST);

	printf("# the fd's handler ran after %d busy turns (limit %d)\n", hit_at, BUSY_LIMIT);
	CHECK(hit_at > 0 && hit_at < BUSY_LIMIT);
	iothread_free(t);
	close(c.fd);
	close(other.fd);
}

int main(void)
{
	RUN(test_guest_mem());
	RUN(test_guest_mem_fd());
	RUN(test_guest_mem_fragile());
	RUN(test_guest_ram_alloc());
	RUN(test_bus());
	RUN(test_iothread());
	RUN(test_iothread_event());
	RUN(test_iothread_poll_adapt());
	RUN(test_iothread_stale_event());
	RUN(test_iothread_polling());
	RUN(test_iothread_fair());
	return check_done();
}
