/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_CHAR_PL011_H
#define BRISK_HW_CHAR_PL011_H

#include <stdint.h>

struct chardev;
struct machine;
struct pl011;

#define PL011_SIZE 0x1000

/*
 * An Arm PrimeCell PL011 UART (ARM DDI 0183) at base on m->mmio, raising
 * interrupt line irq, talking to cd (which it then owns).  NULL with one
 * error line on failure.
 */
struct pl011 *pl011_new(struct machine *m, uint64_t base, unsigned irq,
			struct chardev *cd);
/* Unregisters from the bus, stops the chardev's reader and frees both. */
void pl011_free(struct pl011 *s);

#endif
