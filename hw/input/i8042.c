// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An 8042 keyboard controller with a keyboard that acknowledges every
 * command and never types.  It exists so that Linux's i8042 and atkbd
 * drivers probe quickly without timeouts, and for the classic reboot: the
 * 0xfe command pulses the CPU reset line, which ends brisk.
 *
 * There is no mouse: the AUX loopback returns a wrong byte and the AUX
 * interface test reports a stuck clock, which is how a driver tells that
 * the port is unusable without waiting for a timeout.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "hw/input/i8042.h"
#include "hw/machine.h"
#include "util/log.h"

#define STR_OBF 0x01
#define STR_SYS 0x04
#define STR_CMD 0x08		/* the last write went to the command port */
#define STR_UNLOCKED 0x10
#define STR_AUXDATA 0x20

#define CTR_KBDINT 0x01
#define CTR_SYS 0x04
#define CTR_KBDDIS 0x10
#define CTR_AUXDIS 0x20
#define CTR_XLATE 0x40

#define CMD_READ_CTR 0x20
#define CMD_WRITE_CTR 0x60
#define CMD_AUX_DISABLE 0xa7
#define CMD_AUX_ENABLE 0xa8
#define CMD_AUX_TEST 0xa9
#define CMD_SELF_TEST 0xaa
#define CMD_KBD_TEST 0xab
#define CMD_KBD_DISABLE 0xad
#define CMD_KBD_ENABLE 0xae
#define CMD_READ_INPUT 0xc0
#define CMD_READ_OUTPUT 0xd0
#define CMD_WRITE_OUTPUT 0xd1
#define CMD_WRITE_KBD_OBUF 0xd2
#define CMD_WRITE_AUX_OBUF 0xd3
#define CMD_WRITE_AUX 0xd4
#define CMD_PULSE 0xf0		/* 0xf0-0xff: pulse output lines, 0 = pulse */

#define OUTPORT_RESET 0x01	/* active low */
#define OUTPORT_A20 0x02

#define KBD_ACK 0xfa
#define KBD_BAT_OK 0xaa
#define KBD_ECHO 0xee
#define KBD_CMD_SETLEDS 0xed
#define KBD_CMD_SCANSET 0xf0
#define KBD_CMD_GETID 0xf2
#define KBD_CMD_SETREP 0xf3
#define KBD_CMD_RESET 0xff

#define OUT_QUEUE 16

struct i8042 {
	struct machine *m;
	pthread_mutex_t lock;
	uint8_t ctr, status_cmd, outport;
	uint8_t pending_cmd;	/* controller command awaiting its data byte */
	uint8_t kbd_pending;	/* keyboard command awaiting its parameter */
	uint8_t scanset;
	uint8_t last;		/* the byte the data port last returned */
	int irq_level;
	struct { uint8_t data; bool aux; } out[OUT_QUEUE];
	unsigned out_head, out_count;
};

/* A full queue drops: only a guest that never reads can fill it. */
static void out_push(struct i8042 *k, uint8_t data, bool aux)
{
	if (k->out_count == OUT_QUEUE)
		return;
	k->out[(k->out_head + k->out_count) % OUT_QUEUE].data = data;
	k->out[(k->out_head + k->out_count) % OUT_QUEUE].aux = aux;
	k->out_count++;
}

/* The AUX port has no interrupt line here: there is no mouse to drive it. */
static void i8042_update_irq(struct i8042 *k)
{
	int level = k->out_count && !k->out[k->out_head].aux &&
		    (k->ctr & CTR_KBDINT);

	if (level != k->irq_level) {
		k->irq_level = level;
		k->m->irq.ops->set_irq(k->m->irq.opaque, I8042_KBD_IRQ, level);
	}
}

static void i8042_reset(struct i8042 *k)
{
	k->m->shutdown(k->m, BRISK_EXIT_OK, NULL);
}

static void kbd_write(struct i8042 *k, uint8_t v)
{
	uint8_t cmd = k->kbd_pending;

	if (cmd) {
		k->kbd_pending = 0;
		out_push(k, KBD_ACK, false);
		if (cmd == KBD_CMD_SCANSET) {
			if (v == 0)
				out_push(k, k->scanset, false);
			else if (v <= 3)
				k->scanset = v;
		}
		return;
	}
	switch (v) {
	case KBD_ECHO:
		out_push(k, KBD_ECHO, false);
		return;
	case KBD_CMD_SETLEDS:
	case KBD_CMD_SCANSET:
	case KBD_CMD_SETREP:
		k->kbd_pending = v;
		break;
	case KBD_CMD_GETID:
		out_push(k, KBD_ACK, false);
		out_push(k, 0xab, false);	/* MF2 keyboard */
		out_push(k, 0x83, false);
		return;
	case KBD_CMD_RESET:
		k->scanset = 2;
		out_push(k, KBD_ACK, false);
		out_push(k, KBD_BAT_OK, false);
		return;
	}
	out_push(k, KBD_ACK, false);
}

static void i8042_data_byte(struct i8042 *k, uint8_t v)
{
	uint8_t cmd = k->pending_cmd;

	k->pending_cmd = 0;
	switch (cmd) {
	case CMD_WRITE_CTR:
		k->ctr = v;
		break;
	case CMD_WRITE_OUTPUT:
		k->outport = v;
		if (!(v & OUTPORT_RESET))
			i8042_reset(k);
		break;
	case CMD_WRITE_KBD_OBUF:
		out_push(k, v, false);
		break;
	case CMD_WRITE_AUX_OBUF:
		out_push(k, ~v, true);
		break;
	case CMD_WRITE_AUX:
		break;		/* nobody listens */
	default:
		kbd_write(k, v);
		break;
	}
}

static void i8042_command(struct i8042 *k, uint8_t cmd)
{
	switch (cmd) {
	case CMD_READ_CTR:
		out_push(k, k->ctr, false);
		break;
	case CMD_WRITE_CTR:
	case CMD_WRITE_OUTPUT:
	case CMD_WRITE_KBD_OBUF:
	case CMD_WRITE_AUX_OBUF:
	case CMD_WRITE_AUX:
		k->pending_cmd = cmd;
		break;
	case CMD_AUX_DISABLE:
		k->ctr |= CTR_AUXDIS;
		break;
	case CMD_AUX_ENABLE:
		k->ctr &= ~CTR_AUXDIS;
		break;
	case CMD_AUX_TEST:
		out_push(k, 0x02, false);	/* clock line stuck high */
		break;
	case CMD_SELF_TEST:
		out_push(k, 0x55, false);
		break;
	case CMD_KBD_TEST:
		out_push(k, 0x00, false);
		break;
	case CMD_KBD_DISABLE:
		k->ctr |= CTR_KBDDIS;
		break;
	case CMD_KBD_ENABLE:
		k->ctr &= ~CTR_KBDDIS;
		break;
	case CMD_READ_INPUT:
		out_push(k, 0x80, false);	/* keyboard not inhibited */
		break;
	case CMD_READ_OUTPUT:
		out_push(k, k->outport, false);
		break;
	default:
		if (cmd >= CMD_PULSE && !(cmd & OUTPORT_RESET))
			i8042_reset(k);
		break;
	}
}

static uint64_t i8042_status_read(void *opaque, uint64_t offset, unsigned size)
{
	struct i8042 *k = opaque;
	uint8_t v;

	(void)offset, (void)size;
	pthread_mutex_lock(&k->lock);
	v = STR_SYS | STR_UNLOCKED | k->status_cmd;
	if (k->out_count)
		v |= STR_OBF | (k->out[k->out_head].aux ? STR_AUXDATA : 0);
	pthread_mutex_unlock(&k->lock);
	return v;
}

static uint64_t i8042_data_read(void *opaque, uint64_t offset, unsigned size)
{
	struct i8042 *k = opaque;
	uint8_t v;

	(void)offset, (void)size;
	pthread_mutex_lock(&k->lock);
	/* An empty buffer reads back its last byte, as on hardware. */
	if (k->out_count) {
		k->last = k->out[k->out_head].data;
		k->out_head = (k->out_head + 1) % OUT_QUEUE;
		k->out_count--;
		/* Drop the line so that a next byte makes a fresh edge. */
		if (k->irq_level) {
			k->irq_level = 0;
			k->m->irq.ops->set_irq(k->m->irq.opaque, I8042_KBD_IRQ, 0);
		}
	}
	v = k->last;
	i8042_update_irq(k);
	pthread_mutex_unlock(&k->lock);
	return v;
}

static void i8042_cmd_write(void *opaque, uint64_t offset, uint64_t value,
			    unsigned size)
{
	struct i8042 *k = opaque;

	(void)offset, (void)size;
	pthread_mutex_lock(&k->lock);
	k->status_cmd = STR_CMD;
	i8042_command(k, value);
	i8042_update_irq(k);
	pthread_mutex_unlock(&k->lock);
}

static void i8042_data_write(void *opaque, uint64_t offset, uint64_t value,
			     unsigned size)
{
	struct i8042 *k = opaque;

	(void)offset, (void)size;
	pthread_mutex_lock(&k->lock);
	k->status_cmd = 0;
	i8042_data_byte(k, value);
	i8042_update_irq(k);
	pthread_mutex_unlock(&k->lock);
}

static const struct bus_ops i8042_data_ops = {
	.read = i8042_data_read,
	.write = i8042_data_write,
};

static const struct bus_ops i8042_cmd_ops = {
	.read = i8042_status_read,
	.write = i8042_cmd_write,
};

struct i8042 *i8042_new(struct machine *m)
{
	struct i8042 *k = calloc(1, sizeof(*k));

	if (!k) {
		error_report("i8042: out of memory");
		return NULL;
	}
	k->m = m;
	k->ctr = CTR_KBDINT | CTR_SYS | CTR_XLATE | CTR_AUXDIS;
	k->outport = OUTPORT_RESET | OUTPORT_A20;
	k->scanset = 2;
	pthread_mutex_init(&k->lock, NULL);
	/* 0x61 in between is the PIT's speaker gate, not ours. */
	if (bus_register(&m->pio, I8042_DATA_PORT, 1, &i8042_data_ops, k) < 0 ||
	    bus_register(&m->pio, I8042_CMD_PORT, 1, &i8042_cmd_ops, k) < 0) {
		error_report("i8042: ports 0x60/0x64 are taken");
		bus_unregister(&m->pio, I8042_DATA_PORT, k);
		pthread_mutex_destroy(&k->lock);
		free(k);
		return NULL;
	}
	return k;
}

void i8042_free(struct i8042 *k)
{
	if (!k)
		return;
	bus_unregister(&k->m->pio, I8042_DATA_PORT, k);
	bus_unregister(&k->m->pio, I8042_CMD_PORT, k);
	pthread_mutex_destroy(&k->lock);
	free(k);
}
