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

int debug_exit_init(struct machine *m, uint16_t iobase, uint16_t iosize)
{
	if (iosize != 1 && iosize != 2 && iosize != 4) {
		error_report("isa-debug-exit: iosize must be 1, 2 or 4, not %u", iosize);
		return -1;
	}
	if ((uint32_t)iobase + iosize > 0x10000) {
		error_report("isa-debug-exit: ports 0x%x+%u run past 0xffff",
			     iobase, iosize);
		return -1;
	}
	if (bus_register(&m->pio, iobase, iosize, &debug_exit_ops, m) < 0) {
		error_report("isa-debug-exit: ports 0x%x-0x%x are taken", iobase,
			     iobase + iosize - 1);
		return -1;
	}
	return 0;
}
