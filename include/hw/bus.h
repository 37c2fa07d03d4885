/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_BUS_H
#define BRISK_HW_BUS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * A bus is an address-sorted dispatch table.  A vCPU exit reaches a device
 * only through bus_read()/bus_write() on the board's PIO or MMIO bus; tests
 * drive devices through the very same calls.
 *
 * Accesses are 1, 2, 4 or 8 bytes wide, little-endian values.  offset is
 * relative to the region's base.  Callbacks run on vCPU threads (several at
 * once) or test threads, without the bus lock held (so a callback may
 * register or unregister regions): devices lock their own state, and a
 * device outlives its regions.
 */
struct bus_ops {
	uint64_t (*read)(void *opaque, uint64_t offset, unsigned size);
	void (*write)(void *opaque, uint64_t offset, uint64_t value, unsigned size);
};

struct bus_region {
	uint64_t base;
	uint64_t len;
	const struct bus_ops *ops;
	void *opaque;
};

struct bus {
	const char *name;
	pthread_rwlock_t lock;	/* guards regions[]: the guest moves BARs */
	struct bus_region *regions;
	unsigned nr, cap;
};

void bus_init(struct bus *bus, const char *name);
void bus_destroy(struct bus *bus);

/* -1 if [base, base + len) overlaps a registered region or len is 0. */
int bus_register(struct bus *bus, uint64_t base, uint64_t len,
		 const struct bus_ops *ops, void *opaque);
/*
 * Removes the region that starts at base and belongs to opaque.  It does
 * not wait for accesses in flight: a bus_read()/bus_write() that found
 * the region before it went may still call its ops with opaque, on
 * another thread, after this returns.  Waiting could deadlock, as a
 * callback may unregister a region of its own bus (an ECAM write moving
 * a BAR).  So the caller keeps opaque and its ops valid until no access
 * can be in flight: a device unmapped at run time (a BAR) outlives the
 * mapping and takes a late access as hardware would; one freed at
 * teardown is freed after the vCPU threads have been joined.
 */
int bus_unregister(struct bus *bus, uint64_t base, void *opaque);

/*
 * Dispatch.  Returns false when no region covers the whole access; a read
 * then yields all ones, as on real hardware, and a write is dropped.
 */
bool bus_read(struct bus *bus, uint64_t addr, uint64_t *value, unsigned size);
bool bus_write(struct bus *bus, uint64_t addr, uint64_t value, unsigned size);

#endif
