/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_TEST_BOARD_H
#define BRISK_TESTS_TEST_BOARD_H

/*
 * The fake board the device tests and fuzzers drive devices on, without
 * KVM: guest RAM, PIO and MMIO buses, a PCI bus if asked for, an interrupt
 * chip that records line levels, MSI routes and ioeventfds, and a shutdown
 * that records the exit status.  Devices are reached only through
 * bus_read()/bus_write(), the path a vCPU exit takes.  Fuzzers include it
 * too, so nothing here CHECKs: a broken invariant of the board aborts.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hw/machine.h"
#include "hw/pci/pci.h"

#define BOARD_RAM_SIZE (1u << 20)
#define BOARD_PCI_BASE 0xc0000000ull	/* the MMIO window for BARs */
#define BOARD_PCI_SIZE 0x10000000ull
#define BOARD_GSIS 24
#define BOARD_ROUTES 64
#define BOARD_IOEVENTFDS 8
#define CANARY_LEN 4096			/* the page either side of mapped RAM */
#define CANARY 0xa5
#define NO_SHUTDOWN (-1000)

struct board_route {
	bool used;
	int efd;
	uint64_t addr;
	uint32_t data, devid;
};

struct test_board {
	struct machine m;
	uint8_t *ram;		/* at guest address 0, ram_size bytes */
	size_t ram_size;
	uint8_t *map;		/* board_ram_map()'s mapping, ram a page in */
	int memfd;
	/* Device threads raise interrupts and take routes while tests look. */
	pthread_mutex_t lock;
	int level[BOARD_GSIS];
	unsigned irq_calls;
	struct board_route route[BOARD_ROUTES];
	unsigned route_sets;
	/*
	 * Refused unless ioeventfd_ok, as on a host without KVM_IOEVENTFD;
	 * kicks come through the bus either way, and the test sees which
	 * doorbells a real KVM would have taken past brisk.
	 */
	bool ioeventfd_ok;
	unsigned ioeventfd_calls;	/* assignments asked for */
	uint64_t ioeventfd_last_addr;
	unsigned ioeventfd_last_len;
	uint64_t ioeventfd[BOARD_IOEVENTFDS];	/* assigned doorbells; 0: free */
	int status;		/* last shutdown status, NO_SHUTDOWN if none */
	const char *why;
};

static inline void board_fail(const char *what)
{
	fprintf(stderr, "test board: %s failed\n", what);
	abort();
}

static inline void board_set_irq(void *o, unsigned gsi, int level)
{
	struct test_board *b = o;

	pthread_mutex_lock(&b->lock);
	if (gsi < BOARD_GSIS)
		b->level[gsi] = level;
	b->irq_calls++;
	pthread_mutex_unlock(&b->lock);
}

static inline int board_route_add(void *o, int efd, uint64_t addr, uint32_t data,
				  uint32_t devid)
{
	struct test_board *b = o;
	int r = -1;

	pthread_mutex_lock(&b->lock);
	for (int i = 0; r < 0 && i < BOARD_ROUTES; i++) {
		if (!b->route[i].used) {
			b->route[i] = (struct board_route){ true, efd, addr, data, devid };
			r = i;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return r;
}

/* Our own invariant: a device hands back only handles the board gave. */
static inline struct board_route *board_route(struct test_board *b, int r)
{
	if (r < 0 || r >= BOARD_ROUTES || !b->route[r].used)
		abort();
	return &b->route[r];
}

static inline int board_route_set(void *o, int r, uint64_t addr, uint32_t data)
{
	struct test_board *b = o;

	pthread_mutex_lock(&b->lock);
	board_route(b, r)->addr = addr;
	b->route[r].data = data;
	b->route_sets++;
	pthread_mutex_unlock(&b->lock);
	return 0;
}

static inline void board_route_del(void *o, int r)
{
	struct test_board *b = o;

	pthread_mutex_lock(&b->lock);
	board_route(b, r)->used = false;
	pthread_mutex_unlock(&b->lock);
}

static inline int board_ioeventfd(void *o, bool assign, uint64_t addr, unsigned len, int efd)
{
	struct test_board *b = o;
	int r = -1;

	(void)efd;
	pthread_mutex_lock(&b->lock);
	if (assign) {
		b->ioeventfd_calls++;
		b->ioeventfd_last_addr = addr;
		b->ioeventfd_last_len = len;
	}
	for (int i = 0; b->ioeventfd_ok && r < 0 && i < BOARD_IOEVENTFDS; i++) {
		if (b->ioeventfd[i] == (assign ? 0 : addr)) {
			b->ioeventfd[i] = assign ? addr : 0;
			r = 0;
		}
	}
	pthread_mutex_unlock(&b->lock);
	return r;
}

static const struct irq_ops board_irq_ops = {
	.set_irq = board_set_irq,
	.msi_route_add = board_route_add,
	.msi_route_set = board_route_set,
	.msi_route_del = board_route_del,
	.ioeventfd = board_ioeventfd,
};

/* stop_fd, where a test made one, wakes whatever waits for the VM's end. */
static inline void board_shutdown(struct machine *m, int status, const char *why)
{
	struct test_board *b = m->priv;

	pthread_mutex_lock(&b->lock);
	b->status = status;
	b->why = why;
	pthread_mutex_unlock(&b->lock);
	if (m->stop_fd >= 0)
		eventfd_write(m->stop_fd, 1);
}

/* Zeroed RAM, page aligned as brisk's is: the rings rely on that. */
static inline void board_ram(struct test_board *b, size_t size)
{
	b->ram = aligned_alloc(4096, size);
	if (!b->ram)
		board_fail("RAM");
	memset(b->ram, 0, size);
	b->ram_size = size;
	guest_mem_add(&b->m.mem, 0, size, b->ram);
}

/*
 * RAM mapped as brisk maps it, with a page either side.  With memfd it is
 * the middle of a memfd, which a vhost-user back-end can map too, and the
 * pages are canaries that show a stray write; without, they are
 * inaccessible, so a stray access faults.
 */
static inline void board_ram_map(struct test_board *b, size_t size, bool memfd)
{
	size_t len = size + 2 * CANARY_LEN;

	if (memfd) {
		b->memfd = memfd_create("test-guest-ram", MFD_CLOEXEC);
		if (b->memfd < 0 || ftruncate(b->memfd, (off_t)len) < 0)
			board_fail("memfd");
	}
	b->map = mmap(NULL, len, memfd ? PROT_READ | PROT_WRITE : PROT_NONE,
		      memfd ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		      b->memfd, 0);
	if (b->map == MAP_FAILED ||
	    mprotect(b->map + CANARY_LEN, size, PROT_READ | PROT_WRITE) < 0)
		board_fail("mmap");
	b->ram = b->map + CANARY_LEN;
	b->ram_size = size;
	if (memfd) {
		memset(b->map, CANARY, CANARY_LEN);
		memset(b->ram + size, CANARY, CANARY_LEN);
	}
	guest_mem_add_fd(&b->m.mem, 0, size, b->ram, b->memfd, memfd ? CANARY_LEN : 0);
}

/* RAM the caller made and frees itself. */
static inline void board_ram_mem(struct test_board *b, const struct guest_mem *mem)
{
	b->m.mem = *mem;
}

static inline bool canaries_intact(const struct test_board *b)
{
	for (unsigned i = 0; i < CANARY_LEN; i++)
		if (b->map[i] != CANARY || b->ram[b->ram_size + i] != CANARY)
			return false;
	return true;
}

/* With ram, that much zeroed RAM; without, the caller adds its own. */
static inline void board_init(struct test_board *b, unsigned ncpus, size_t ram)
{
	memset(b, 0, sizeof(*b));
	bus_init(&b->m.pio, "pio");
	bus_init(&b->m.mmio, "mmio");
	b->m.irq = (struct irq_chip){ .ops = &board_irq_ops, .opaque = b };
	b->m.ncpus = ncpus;
	b->m.shutdown = board_shutdown;
	b->m.stop_fd = -1;
	b->m.priv = b;
	b->memfd = -1;
	pthread_mutex_init(&b->lock, NULL);
	b->status = NO_SHUTDOWN;
	if (ram)
		board_ram(b, ram);
}

/* A PCI bus behind 0xcf8/0xcfc, its BARs in base..base + size. */
static inline void board_pci(struct test_board *b, uint64_t base, uint64_t size)
{
	b->m.pci = pci_bus_new(&b->m.pio, &b->m.mmio, &b->m.irq, base, size);
	if (!b->m.pci)
		board_fail("pci_bus_new");
}

/* Devices registered by the *_init() calls stay: nothing frees them. */
static inline void board_destroy(struct test_board *b)
{
	pci_bus_free(b->m.pci);
	bus_destroy(&b->m.pio);
	bus_destroy(&b->m.mmio);
	for (int i = 0; i < BOARD_ROUTES; i++)
		if (b->route[i].used)
			abort();	/* teardown must drop every MSI route */
	if (b->m.stop_fd >= 0)
		close(b->m.stop_fd);
	if (b->map)
		munmap(b->map, b->ram_size + 2 * CANARY_LEN);
	else
		free(b->ram);
	if (b->memfd >= 0)
		close(b->memfd);
	pthread_mutex_destroy(&b->lock);
}

static inline int level(struct test_board *b, unsigned gsi)
{
	pthread_mutex_lock(&b->lock);
	int l = b->level[gsi];
	pthread_mutex_unlock(&b->lock);
	return l;
}

static inline int take_status(struct test_board *b)
{
	pthread_mutex_lock(&b->lock);
	int s = b->status;
	b->status = NO_SHUTDOWN;
	pthread_mutex_unlock(&b->lock);
	return s;
}

/* The route (and so the eventfd) the guest programmed with this MSI data. */
static inline struct board_route *route_by_data(struct test_board *b, uint32_t data)
{
	struct board_route *r = NULL;

	pthread_mutex_lock(&b->lock);
	for (int i = 0; !r && i < BOARD_ROUTES; i++)
		if (b->route[i].used && b->route[i].data == data)
			r = &b->route[i];
	pthread_mutex_unlock(&b->lock);
	return r;
}

static inline unsigned ioeventfds_assigned(struct test_board *b)
{
	unsigned n = 0;

	pthread_mutex_lock(&b->lock);
	for (int i = 0; i < BOARD_IOEVENTFDS; i++)
		n += b->ioeventfd[i] != 0;
	pthread_mutex_unlock(&b->lock);
	return n;
}

/*
 * Config space through 0xcf8/0xcfc, as a guest reaches it: size bytes at
 * reg of bdf (bus << 8 | slot << 3 | function, as a requester id).
 */
static inline uint32_t cfg_read(struct test_board *b, unsigned bdf, unsigned reg,
				unsigned size)
{
	uint64_t v = 0;

	bus_write(&b->m.pio, PCI_CONFIG_ADDRESS, 0x80000000u | bdf << 8 | (reg & 0xfc), 4);
	bus_read(&b->m.pio, PCI_CONFIG_DATA + (reg & 3), &v, size);
	return (uint32_t)v;
}

static inline void cfg_write(struct test_board *b, unsigned bdf, unsigned reg, uint32_t val,
			     unsigned size)
{
	bus_write(&b->m.pio, PCI_CONFIG_ADDRESS, 0x80000000u | bdf << 8 | (reg & 0xfc), 4);
	bus_write(&b->m.pio, PCI_CONFIG_DATA + (reg & 3), val, size);
}

/* Where the guest has placed BAR bar of bdf, both halves of a 64-bit one. */
static inline uint64_t bar_addr(struct test_board *b, unsigned bdf, unsigned bar)
{
	uint32_t lo = cfg_read(b, bdf, PCI_BASE_ADDRESS_0 + 4 * bar, 4);
	uint64_t a = lo & ~0xfull;

	if ((lo & 6) == 4)
		a |= (uint64_t)cfg_read(b, bdf, PCI_BASE_ADDRESS_0 + 4 * bar + 4, 4) << 32;
	return a;
}

#endif
