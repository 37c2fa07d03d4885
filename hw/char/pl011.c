// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A PL011 UART (ARM DDI 0183).  As with the 16550A, transmission is
 * instantaneous: a DR write goes straight to the chardev, so the transmit
 * FIFO is always empty (TXFE, never TXFF or BUSY), and each write passes
 * it through its trigger level, which raises TXRIS until the driver
 * clears it.  Reception fills a 32-entry FIFO (1 entry with LCR_H.FEN
 * off) from the chardev's reader thread, which backs off while it is
 * full.  RXRIS follows the trigger level; below it the receive timeout
 * (RTRIS) is raised at once rather than after 32 bit periods, which a
 * driver cannot tell apart and which needs no timer.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "hw/char/chardev.h"
#include "hw/char/pl011.h"
#include "hw/machine.h"
#include "util/log.h"

enum {
	REG_DR = 0x000,
	REG_RSR_ECR = 0x004,
	REG_FR = 0x018,
	REG_ILPR = 0x020,
	REG_IBRD = 0x024,
	REG_FBRD = 0x028,
	REG_LCR_H = 0x02c,
	REG_CR = 0x030,
	REG_IFLS = 0x034,
	REG_IMSC = 0x038,
	REG_RIS = 0x03c,
	REG_MIS = 0x040,
	REG_ICR = 0x044,
	REG_DMACR = 0x048,
	REG_ID = 0xfe0,		/* PeriphID0-3, PCellID0-3 */
};

#define FR_RXFE 0x10
#define FR_TXFF 0x20
#define FR_RXFF 0x40
#define FR_TXFE 0x80
#define FR_DSR_DCD_CTS 0x07	/* modem inputs: the other end is there */

#define LCR_H_FEN 0x10
#define CR_RESET 0x300		/* TXE | RXE, UARTEN off */

#define INT_RX 0x010
#define INT_TX 0x020
#define INT_RT 0x040
#define INT_OE 0x400
#define INT_MASK 0x7ff

#define RX_FIFO_SIZE 32

/* PeriphID 0x00141011 (an Arm PL011 r1p5), PrimeCell id 0xb105f00d. */
static const uint8_t pl011_id[8] = {
	0x11, 0x10, 0x14, 0x00, 0x0d, 0xf0, 0x05, 0xb1,
};

struct pl011 {
	struct machine *m;
	struct chardev *cd;
	uint64_t base;
	unsigned irq;
	pthread_mutex_t lock;

	uint16_t ilpr, ibrd, fbrd, lcr_h, cr, ifls, imsc, dmacr;
	uint16_t ris;		/* latched bits: TX, OE; RX/RT follow the FIFO */
	bool rx_blocked;	/* the reader holds input we had no room for */
	int irq_level;

	uint8_t rx[RX_FIFO_SIZE];
	unsigned rx_head, rx_count;
};

static unsigned rx_capacity(const struct pl011 *s)
{
	return (s->lcr_h & LCR_H_FEN) ? RX_FIFO_SIZE : 1;
}

/* IFLS RXIFLSEL: 1/8, 1/4, 1/2, 3/4, 7/8 full. */
static unsigned rx_trigger(const struct pl011 *s)
{
	static const unsigned eighths[8] = { 1, 2, 4, 6, 7, 4, 4, 4 };

	if (!(s->lcr_h & LCR_H_FEN))
		return 1;
	return RX_FIFO_SIZE * eighths[(s->ifls >> 3) & 7] / 8;
}

static uint16_t pl011_ris(const struct pl011 *s)
{
	uint16_t ris = s->ris;

	if (s->rx_count >= rx_trigger(s))
		ris |= INT_RX;
	else if (s->rx_count)
		ris |= INT_RT;
	return ris;
}

static void pl011_update_irq(struct pl011 *s)
{
	int level = (pl011_ris(s) & s->imsc) != 0;

	if (level != s->irq_level) {
		s->irq_level = level;
		s->m->irq.ops->set_irq(s->m->irq.opaque, s->irq, level);
	}
}

static void pl011_kick_input(struct pl011 *s)
{
	if (s->rx_blocked && s->rx_count < rx_capacity(s)) {
		s->rx_blocked = false;
		chardev_kick(s->cd);
	}
}

static uint16_t rx_pop(struct pl011 *s)
{
	uint16_t c = 0;

	if (s->rx_count) {
		c = s->rx[s->rx_head];
		s->rx_head = (s->rx_head + 1) % RX_FIFO_SIZE;
		s->rx_count--;
	}
	return c;
}

static uint16_t pl011_fr(const struct pl011 *s)
{
	uint16_t fr = FR_TXFE | FR_DSR_DCD_CTS;

	if (!s->rx_count)
		fr |= FR_RXFE;
	if (s->rx_count == rx_capacity(s))
		fr |= FR_RXFF;
	return fr;
}

static uint64_t pl011_reg_read(struct pl011 *s, uint64_t off)
{
	switch (off) {
	case REG_DR:
		return rx_pop(s);
	case REG_RSR_ECR:
		return 0;	/* no framing, parity, break or overrun error */
	case REG_FR:
		return pl011_fr(s);
	case REG_ILPR:
		return s->ilpr;
	case REG_IBRD:
		return s->ibrd;
	case REG_FBRD:
		return s->fbrd;
	case REG_LCR_H:
		return s->lcr_h;
	case REG_CR:
		return s->cr;
	case REG_IFLS:
		return s->ifls;
	case REG_IMSC:
		return s->imsc;
	case REG_RIS:
		return pl011_ris(s);
	case REG_MIS:
		return pl011_ris(s) & s->imsc;
	case REG_DMACR:
		return s->dmacr;
	}
	if (off >= REG_ID && off < REG_ID + 4 * sizeof(pl011_id) && off % 4 == 0)
		return pl011_id[(off - REG_ID) / 4];
	return 0;
}

static void pl011_reg_write(struct pl011 *s, uint64_t off, uint16_t v)
{
	uint8_t c = v;

	switch (off) {
	case REG_DR:
		chardev_write(s->cd, &c, 1);
		s->ris |= INT_TX;
		break;
	case REG_RSR_ECR:
		break;
	case REG_ILPR:
		s->ilpr = v & 0xff;
		break;
	case REG_IBRD:
		s->ibrd = v;
		break;
	case REG_FBRD:
		s->fbrd = v & 0x3f;
		break;
	case REG_LCR_H:
		/* Turning the FIFOs off or on flushes them. */
		if ((v ^ s->lcr_h) & LCR_H_FEN)
			s->rx_head = s->rx_count = 0;
		s->lcr_h = v & 0xff;
		break;
	case REG_CR:
		s->cr = v;
		break;
	case REG_IFLS:
		s->ifls = v & 0x3f;
		break;
	case REG_IMSC:
		s->imsc = v & INT_MASK;
		break;
	case REG_ICR:
		s->ris &= ~v;
		break;
	case REG_DMACR:
		s->dmacr = v & 0x7;	/* accepted; no DMA is ever requested */
		break;
	}
}

/* Registers are 32 bits apart; narrower accesses reach their low bytes. */
static uint64_t pl011_read(void *opaque, uint64_t off, unsigned size)
{
	struct pl011 *s = opaque;
	uint64_t v;

	(void)size;
	pthread_mutex_lock(&s->lock);
	v = off % 4 ? 0 : pl011_reg_read(s, off);
	pl011_kick_input(s);
	pl011_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return v;
}

static void pl011_write(void *opaque, uint64_t off, uint64_t v, unsigned size)
{
	struct pl011 *s = opaque;

	(void)size;
	if (off % 4)
		return;
	pthread_mutex_lock(&s->lock);
	pl011_reg_write(s, off, v);
	pl011_kick_input(s);
	pl011_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

static const struct bus_ops pl011_ops = {
	.read = pl011_read,
	.write = pl011_write,
};

/* The chardev's reader thread hands over input here. */
static size_t pl011_receive(void *opaque, const uint8_t *buf, size_t len)
{
	struct pl011 *s = opaque;
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	while (n < len && s->rx_count < rx_capacity(s)) {
		s->rx[(s->rx_head + s->rx_count) % RX_FIFO_SIZE] = buf[n++];
		s->rx_count++;
	}
	s->rx_blocked = n < len;
	pl011_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return n;
}

struct pl011 *pl011_new(struct machine *m, uint64_t base, unsigned irq,
			struct chardev *cd)
{
	struct pl011 *s = calloc(1, sizeof(*s));

	if (!s) {
		error_report("pl011: out of memory");
		chardev_close(cd);
		return NULL;
	}
	*s = (struct pl011){
		.m = m, .cd = cd, .base = base, .irq = irq,
		.cr = CR_RESET, .ifls = 0x12,	/* both FIFOs half full */
	};
	pthread_mutex_init(&s->lock, NULL);
	if (chardev_attach(cd, "pl011", &m->mmio, base, PL011_SIZE, &pl011_ops,
			   pl011_receive, s) == 0)
		return s;
	chardev_close(cd);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

void pl011_free(struct pl011 *s)
{
	if (!s)
		return;
	chardev_detach(s->cd, &s->m->mmio, s->base, s);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
