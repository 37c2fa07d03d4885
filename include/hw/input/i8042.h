/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_INPUT_I8042_H
#define BRISK_HW_INPUT_I8042_H

struct machine;

#define I8042_DATA_PORT 0x60
#define I8042_CMD_PORT 0x64
#define I8042_KBD_IRQ 1

/*
 * A PS/2 controller with a keyboard that answers but never types and no
 * mouse port.  Command 0xfe (pulse reset) ends brisk with status 0.
 * NULL (with one error line) when its ports are taken.
 */
struct i8042;
struct i8042 *i8042_new(struct machine *m);
void i8042_free(struct i8042 *k);

#endif
