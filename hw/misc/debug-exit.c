// SPDX-License-Identifier: GPL-2.0-or-later
#include "hw/board.h"
#include "hw/device.h"
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

/* ---- -device isa-debug-exit: part of the board, which places it ---- */

#define E(f) OPT_AT(struct debug_exit_cfg, f, unsigned)
static const struct opt_prop debug_exit_props[] = {
	{ "iobase", OPT_UINT, E(iobase), .max = 0xffff, .def = "0x501",
	  .help = "the first I/O port (x86; arm64 has one MMIO address)" },
	{ "iosize", OPT_UINT, E(iosize), .min = 1, .max = 4, .def = "2",
	  .help = "how many ports: 1, 2 or 4" },
	{ NULL },
};
#undef E
static const struct opt_spec debug_exit_spec = {
	"-device isa-debug-exit", NULL, debug_exit_props,
};
static const struct debug_exit_cfg debug_exit_defaults = { .iobase = 0x501, .iosize = 2 };

/* Named on the command line, so present. */
static int debug_exit_check(void *cfg)
{
	struct debug_exit_cfg *c = cfg;

	if (c->iosize == 3) {
		error_report("-device isa-debug-exit: iosize=3: need 1, 2 or 4");
		return -1;
	}
	if (c->iobase + c->iosize > 0x10000) {
		error_report("-device isa-debug-exit: ports 0x%x+%u beyond 0xffff",
			     c->iobase, c->iosize);
		return -1;
	}
	c->present = true;
	return 0;
}

const struct device_family isa_debug_exit_family = {
	.name = "isa-debug-exit",
	.help = "a write of V ends brisk with status (V << 1) | 1",
	.spec = &debug_exit_spec,
	.kind = DEVICE_BOARD,
	.board_offset = offsetof(struct board_cfg, debug_exit),
	.cfg_size = sizeof(struct debug_exit_cfg),
	.defaults = &debug_exit_defaults,
	.check = debug_exit_check,
};
