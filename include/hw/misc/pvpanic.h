/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_MISC_PVPANIC_H
#define BRISK_HW_MISC_PVPANIC_H

#include <stdint.h>

struct bus;
struct device_family;
struct machine;

#define PVPANIC_IOPORT 0x505
#define PVPANIC_MMIO_SIZE 0x1000
#define PVPANIC_PANICKED (1u << 0)
#define PVPANIC_CRASH_LOADED (1u << 1)

/*
 * pvpanic at base on bus: the PC's ISA device at PVPANIC_IOPORT on m->pio
 * (the DSDT describes it as QEMU0001), or QEMU's pvpanic-mmio on m->mmio
 * (a device tree's "qemu,pvpanic-mmio").  A guest write of PANICKED ends
 * brisk with BRISK_EXIT_PANIC.
 */
int pvpanic_init(struct machine *m, struct bus *bus, uint64_t base);

extern const struct device_family pvpanic_family;

#endif
