/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_MISC_PVPANIC_H
#define BRISK_HW_MISC_PVPANIC_H

struct machine;

#define PVPANIC_IOPORT 0x505
#define PVPANIC_PANICKED (1u << 0)
#define PVPANIC_CRASH_LOADED (1u << 1)

/*
 * The ISA pvpanic device at PVPANIC_IOPORT (the DSDT describes it as
 * QEMU0001): PANICKED ends brisk with BRISK_EXIT_PANIC.
 */
int pvpanic_init(struct machine *m);

#endif
