/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_CHAR_SERIAL_H
#define BRISK_HW_CHAR_SERIAL_H

#include <stdint.h>

struct machine;
struct chardev;
struct serial;

#define SERIAL_COM1_BASE 0x3f8
#define SERIAL_COM1_IRQ 4

/*
 * The board's COM1: a 16550A at 0x3f8, IRQ 4, behind the chardev named by
 * spec ("stdio", "file:PATH" or "none", see hw/char/chardev.h).  Free it
 * with serial_free(); NULL with one error line on failure.
 */
struct serial *serial_com1_new(struct machine *m, const char *spec);

/*
 * The building block: a 16550A at base/irq on m->pio, talking to cd (which
 * it then owns).  NULL with one error line on failure.
 */
struct serial *serial_new(struct machine *m, uint16_t base, unsigned irq,
			  struct chardev *cd);
/* Unregisters from the bus, stops the chardev's reader and frees both. */
void serial_free(struct serial *s);

#endif
