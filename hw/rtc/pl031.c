// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * PL031 RTC (ARM DDI 0224).  DR counts host seconds plus an offset the
 * guest sets by writing LR; the counter always runs (CR.RTCStart reads 1).
 * RIS is set once DR has reached MR after MR was written, and cleared by
 * ICR; as no interrupt line is wired (see pl031.h) it is only ever seen
 * by polling.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "hw/machine.h"
#include "hw/rtc/pl031.h"
#include "util/clock.h"
#include "util/log.h"

enum {
	REG_DR = 0x00,
	REG_MR = 0x04,
	REG_LR = 0x08,
	REG_CR = 0x0c,
	REG_IMSC = 0x10,
	REG_RIS = 0x14,
	REG_MIS = 0x18,
	REG_ICR = 0x1c,
	REG_ID = 0xfe0,
};

/* PeriphID 0x00041031 (an Arm PL031), PrimeCell id 0xb105f00d. */
static const uint8_t pl031_id[8] = {
	0x31, 0x10, 0x04, 0x00, 0x0d, 0xf0, 0x05, 0xb1,
};

struct pl031 {
	struct machine *m;
	uint64_t base;
	uint64_t (*now)(void);
	pthread_mutex_t lock;
	int64_t offset;		/* guest time - host time, in seconds */
	uint32_t mr, lr;
	bool imsc, ris;
	bool armed;		/* MR written, not yet reached */
};

uint64_t pl031_host_now(void)
{
	return (uint64_t)time(NULL);
}

uint64_t pl031_host_localtime(void)
{
	time_t t = time(NULL);

	/* The guest reads the counter as UTC: shift it by the host's zone. */
	return (uint64_t)(t + clock_zone_offset_s(t));
}

static uint32_t pl031_dr(const struct pl031 *r)
{
	return (uint32_t)(r->now() + r->offset);
}

/* A match seen late still counts, as with a guest that looks seldom. */
static void pl031_match(struct pl031 *r)
{
	if (r->armed && (int32_t)(pl031_dr(r) - r->mr) >= 0) {
		r->ris = true;
		r->armed = false;
	}
}

static uint64_t pl031_read(void *opaque, uint64_t off, unsigned size)
{
	struct pl031 *r = opaque;
	uint64_t v = 0;

	(void)size;
	pthread_mutex_lock(&r->lock);
	pl031_match(r);
	switch (off) {
	case REG_DR: v = pl031_dr(r); break;
	case REG_MR: v = r->mr; break;
	case REG_LR: v = r->lr; break;
	case REG_CR: v = 1; break;
	case REG_IMSC: v = r->imsc; break;
	case REG_RIS: v = r->ris; break;
	case REG_MIS: v = r->ris && r->imsc; break;
	default:
		if (off >= REG_ID && off < REG_ID + 4 * sizeof(pl031_id) &&
		    off % 4 == 0)
			v = pl031_id[(off - REG_ID) / 4];
	}
	pthread_mutex_unlock(&r->lock);
	return v;
}

static void pl031_write(void *opaque, uint64_t off, uint64_t v, unsigned size)
{
	struct pl031 *r = opaque;

	(void)size;
	pthread_mutex_lock(&r->lock);
	switch (off) {
	case REG_MR:
		r->mr = v;
		r->armed = true;
		break;
	case REG_LR:
		r->lr = v;
		r->offset = (int64_t)(uint32_t)v - (int64_t)r->now();
		break;
	case REG_IMSC:
		r->imsc = v & 1;
		break;
	case REG_ICR:
		if (v & 1)
			r->ris = false;
		break;
	}
	pthread_mutex_unlock(&r->lock);
}

static const struct bus_ops pl031_ops = {
	.read = pl031_read,
	.write = pl031_write,
};

struct pl031 *pl031_new(struct machine *m, uint64_t base, uint64_t (*now)(void))
{
	struct pl031 *r = calloc(1, sizeof(*r));

	if (!r) {
		error_report("pl031: out of memory");
		return NULL;
	}
	*r = (struct pl031){ .m = m, .base = base, .now = now };
	pthread_mutex_init(&r->lock, NULL);
	if (bus_register(&m->mmio, base, PL031_SIZE, &pl031_ops, r) < 0) {
		error_report("pl031: MMIO %#llx is taken", (unsigned long long)base);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return NULL;
	}
	return r;
}

void pl031_free(struct pl031 *r)
{
	if (!r)
		return;
	bus_unregister(&r->m->mmio, r->base, r);
	pthread_mutex_destroy(&r->lock);
	free(r);
}
