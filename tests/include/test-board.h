/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_TEST_BOARD_H
#define BRISK_TESTS_TEST_BOARD_H

/*
 * The fake board the device tests drive devices on, without KVM: malloc'd
 * RAM, PIO and MMIO buses, an interrupt chip that records line levels and
 * a shutdown that records the exit status.  Devices are reached only
 * through bus_read()/bus_write(), the path a vCPU exit takes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hw/machine.h"

#define RAM_SIZE (1u << 20)
#define NO_SHUTDOWN (-1000)

struct test_board {
	struct machine m;
	uint8_t *ram;
	pthread_mutex_t lock;
	int level[24];
	unsigned irq_calls;
	int status;		/* last shutdown status, NO_SHUTDOWN if none */
	const char *why;
};

static inline void fake_set_irq(void *opaque, unsigned gsi, int level)
{
	struct test_board *b = opaque;

	pthread_mutex_lock(&b->lock);
	if (gsi < 24)
		b->level[gsi] = level;
	b->irq_calls++;
	pthread_mutex_unlock(&b->lock);
}

static const struct irq_ops fake_irq_ops = { .set_irq = fake_set_irq };

static inline void fake_shutdown(struct machine *m, int status, const char *why)
{
	struct test_board *b = m->priv;

	pthread_mutex_lock(&b->lock);
	b->status = status;
	b->why = why;
	pthread_mutex_unlock(&b->lock);
}

static inline void board_init(struct test_board *b, unsigned ncpus)
{
	memset(b, 0, sizeof(*b));
	b->ram = calloc(1, RAM_SIZE);
	guest_mem_add(&b->m.mem, 0, RAM_SIZE, b->ram);
	bus_init(&b->m.pio, "pio");
	bus_init(&b->m.mmio, "mmio");
	b->m.irq = (struct irq_chip){ .ops = &fake_irq_ops, .opaque = b };
	b->m.ncpus = ncpus;
	b->m.shutdown = fake_shutdown;
	b->m.stop_fd = -1;
	b->m.priv = b;
	pthread_mutex_init(&b->lock, NULL);
	b->status = NO_SHUTDOWN;
}

/* Devices registered by the *_init() calls stay: nothing frees them. */
static inline void board_destroy(struct test_board *b)
{
	bus_destroy(&b->m.pio);
	bus_destroy(&b->m.mmio);
	pthread_mutex_destroy(&b->lock);
	free(b->ram);
}

static inline int level(struct test_board *b, unsigned gsi)
{
	pthread_mutex_lock(&b->lock);
	int l = b->level[gsi];
	pthread_mutex_unlock(&b->lock);
	return l;
}

static inline int take_status(struct test_board *b)
{
	pthread_mutex_lock(&b->lock);
	int s = b->status;
	b->status = NO_SHUTDOWN;
	pthread_mutex_unlock(&b->lock);
	return s;
}


#endif
