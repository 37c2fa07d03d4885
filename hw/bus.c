// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "hw/bus.h"

void bus_init(struct bus *bus, const char *name)
{
	*bus = (struct bus){ .name = name };
	pthread_rwlock_init(&bus->lock, NULL);
}

void bus_destroy(struct bus *bus)
{
	free(bus->regions);
	pthread_rwlock_destroy(&bus->lock);
}

/* Index of the first region whose end lies above addr. */
static unsigned bus_lower_bound(const struct bus *bus, uint64_t addr)
{
	unsigned lo = 0, hi = bus->nr;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		const struct bus_region *r = &bus->regions[mid];

		if (r->base + r->len - 1 < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int bus_register(struct bus *bus, uint64_t base, uint64_t len,
		 const struct bus_ops *ops, void *opaque)
{
	int ret = -1;

	if (len == 0 || base + len - 1 < base)
		return -1;
	pthread_rwlock_wrlock(&bus->lock);
	unsigned i = bus_lower_bound(bus, base);

	if (i < bus->nr && bus->regions[i].base <= base + len - 1)
		goto out;
	if (bus->nr == bus->cap) {
		unsigned cap = bus->cap ? bus->cap * 2 : 16;
		struct bus_region *n = realloc(bus->regions, cap * sizeof(*n));

		if (!n)
			goto out;
		bus->regions = n;
		bus->cap = cap;
	}
	memmove(&bus->regions[i + 1], &bus->regions[i],
		(bus->nr - i) * sizeof(bus->regions[0]));
	bus->regions[i] = (struct bus_region){
		.base = base, .len = len, .ops = ops, .opaque = opaque,
	};
	bus->nr++;
	ret = 0;
out:
	pthread_rwlock_unlock(&bus->lock);
	return ret;
}

int bus_unregister(struct bus *bus, uint64_t base, void *opaque)
{
	int ret = -1;

	pthread_rwlock_wrlock(&bus->lock);
	unsigned i = bus_lower_bound(bus, base);

	if (i < bus->nr && bus->regions[i].base == base &&
	    bus->regions[i].opaque == opaque) {
		memmove(&bus->regions[i], &bus->regions[i + 1],
			(bus->nr - i - 1) * sizeof(bus->regions[0]));
		bus->nr--;
		ret = 0;
	}
	pthread_rwlock_unlock(&bus->lock);
	return ret;
}

static const struct bus_region *bus_find(const struct bus *bus, uint64_t addr,
					 unsigned size)
{
	unsigned i = bus_lower_bound(bus, addr);

	if (i == bus->nr)
		return NULL;
	const struct bus_region *r = &bus->regions[i];

	if (addr < r->base || addr - r->base + size > r->len)
		return NULL;
	return r;
}

/*
 * The region is looked up under the read lock, but its handler runs after
 * it is dropped: a handler may itself change the bus (a config write
 * through ECAM moves a BAR on the very bus it arrived on).  Regions are
 * only unregistered while their device lives on, so a handler racing an
 * unmap still finds its device, as a late access on hardware would.
 */
static bool bus_lookup(struct bus *bus, uint64_t addr, unsigned size,
		       struct bus_region *out)
{
	const struct bus_region *r;

	pthread_rwlock_rdlock(&bus->lock);
	r = bus_find(bus, addr, size);
	if (r)
		*out = *r;
	pthread_rwlock_unlock(&bus->lock);
	return r != NULL;
}

bool bus_read(struct bus *bus, uint64_t addr, uint64_t *value, unsigned size)
{
	struct bus_region r;

	assert(size == 1 || size == 2 || size == 4 || size == 8);
	if (!bus_lookup(bus, addr, size, &r)) {
		*value = size == 8 ? ~0ull : (1ull << (size * 8)) - 1;
		return false;
	}
	*value = r.ops->read ? r.ops->read(r.opaque, addr - r.base, size) : 0;
	return true;
}

bool bus_write(struct bus *bus, uint64_t addr, uint64_t value, unsigned size)
{
	struct bus_region r;

	assert(size == 1 || size == 2 || size == 4 || size == 8);
	if (!bus_lookup(bus, addr, size, &r))
		return false;
	if (r.ops->write)
		r.ops->write(r.opaque, addr - r.base, value, size);
	return true;
}
