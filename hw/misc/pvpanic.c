// SPDX-License-Identifier: GPL-2.0-or-later
#include "hw/device.h"
#include "hw/machine.h"
#include "hw/misc/pvpanic.h"
#include "util/log.h"

/* Stateless, like debug-exit: the machine is the opaque. */
static uint64_t pvpanic_read(void *opaque, uint64_t offset, unsigned size)
{
	(void)opaque, (void)offset, (void)size;
	return PVPANIC_PANICKED | PVPANIC_CRASH_LOADED;
}

static void pvpanic_write(void *opaque, uint64_t offset, uint64_t value,
			  unsigned size)
{
	struct machine *m = opaque;

	(void)offset, (void)size;
	/* CRASH_LOADED: a kdump kernel takes over; brisk keeps running. */
	if (!(value & PVPANIC_PANICKED) || m->panic == PANIC_NONE)
		return;
	if (m->panic == PANIC_SHUTDOWN)
		m->shutdown(m, BRISK_EXIT_OK, NULL);
	else
		m->shutdown(m, BRISK_EXIT_PANIC, "guest kernel panicked");
}

static const struct bus_ops pvpanic_ops = {
	.read = pvpanic_read,
	.write = pvpanic_write,
};

int pvpanic_init(struct machine *m, struct bus *bus, uint64_t base)
{
	/* One byte as an ISA port; a page on MMIO, as QEMU's pvpanic-mmio. */
	uint64_t len = bus == &m->mmio ? PVPANIC_MMIO_SIZE : 1;

	if (bus_register(bus, base, len, &pvpanic_ops, m) < 0) {
		error_report("pvpanic: %s %#llx is taken", bus->name,
			     (unsigned long long)base);
		return -1;
	}
	return 0;
}

static const struct opt_prop pvpanic_props[] = { { NULL } };
static const struct opt_spec pvpanic_spec = { "-device pvpanic", NULL, pvpanic_props };

/* Every brisk board has its pvpanic: naming it (QEMU's CI lines do) adds nothing. */
const struct device_family pvpanic_family = {
	.name = "pvpanic",
	.help = "a guest panic ends brisk with status 2 (every board has one)",
	.spec = &pvpanic_spec,
	.kind = DEVICE_BOARD,
};
