/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_MISC_DEBUG_EXIT_H
#define BRISK_HW_MISC_DEBUG_EXIT_H

#include <stdint.h>

struct machine;

/*
 * isa-debug-exit, as QEMU's: a write of V at [iobase, iobase + iosize) ends
 * brisk with status (V << 1) | 1.  iosize is 1, 2 or 4.  Reads return 0.
 */
int debug_exit_init(struct machine *m, uint16_t iobase, uint16_t iosize);

#endif
