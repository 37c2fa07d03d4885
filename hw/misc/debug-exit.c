// SPDX-License-Identifier: GPL-2.0-or-later
#include "hw/machine.h"
#include "hw/misc/debug-exit.h"
#include "util/log.h"

/*
 * Stateless: the machine is all it needs, and shutdown() serialises
 * concurrent writers itself (the first call wins).
 */
static uint64_t debug_exit_read(void *opaque, uint64_t offset, unsigned size)
{
	(void)opaque, (void)offset, (void)size;
	return 0;
}

static void debug_exit_write(void *opaque, uint64_t offset, uint64_t value,
			     unsigned size)
{
	struct machine *m = opaque;

	(void)offset;
	/*
	 * The exit status is the low byte of (V << 1) | 1, so what a test
	 * sees depends on V alone; keep the arithmetic in int's range.
	 */
	if (size < 8)
		value &= (1ull << (size * 8)) - 1;
	m->shutdown(m, (int)(((value & 0x3fffffff) << 1) | 1), NULL);
}

static const struct bus_ops debug_exit_ops = {
	.read = debug_exit_read,
	.write = debug_exit_write,
};

int debug_exit_init(struct machine *m, struct bus *bus, uint64_t base,
		    unsigned size)
{
	if (size != 1 && size != 2 && size != 4) {
		error_report("debug-exit: size must be 1, 2 or 4, not %u", size);
		return -1;
	}
	if (bus == &m->pio && base + size > 0x10000) {
		error_report("isa-debug-exit: ports 0x%llx+%u run past 0xffff",
			     (unsigned long long)base, size);
		return -1;
	}
	if (bus == &m->mmio)
		size = DEBUG_EXIT_MMIO_SIZE;
	if (bus_register(bus, base, size, &debug_exit_ops, m) < 0) {
		error_report("debug-exit: %s %#llx-%#llx is taken", bus->name,
			     (unsigned long long)base,
			     (unsigned long long)(base + size - 1));
		return -1;
	}
	return 0;
}
