/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_MISC_DEBUG_EXIT_H
#define BRISK_HW_MISC_DEBUG_EXIT_H

#include <stdint.h>

struct bus;
struct device_family;
struct machine;

/*
 * isa-debug-exit, as QEMU's: a write of V at [base, base + size) on bus
 * ends brisk with status (V << 1) | 1.  size is 1, 2 or 4.  Reads return
 * 0.  The PC puts it on I/O ports; boards without them on MMIO, where it
 * is a 32-bit register (DEBUG_EXIT_MMIO_SIZE bytes whatever size says)
 * taking 8-, 16- and 32-bit writes, so the documented 32-bit store works
 * with the option's default iosize.
 */
#define DEBUG_EXIT_MMIO_SIZE 4

int debug_exit_init(struct machine *m, struct bus *bus, uint64_t base,
		    unsigned size);

extern const struct device_family isa_debug_exit_family;

#endif
