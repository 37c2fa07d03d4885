// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A 16550A UART.  Transmission is instantaneous: a THR write goes straight
 * to the chardev, so THRE and TEMT are always set and the THRE interrupt is
 * pending again right after every write.  Reception fills a 16-byte FIFO
 * from the chardev's reader thread, which backs off while the FIFO is full.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "hw/char/chardev.h"
#include "hw/char/serial.h"
#include "hw/machine.h"
#include "util/log.h"

enum {
	REG_RBR_THR = 0,	/* DLL when LCR.DLAB */
	REG_IER = 1,		/* DLM when LCR.DLAB */
	REG_IIR_FCR = 2,
	REG_LCR = 3,
	REG_MCR = 4,
	REG_LSR = 5,
	REG_MSR = 6,
	REG_SCR = 7,
	SERIAL_NR_REGS = 8,
};

#define IER_ERBFI 0x01		/* received data available */
#define IER_ETBEI 0x02		/* THR empty */
#define IER_ELSI 0x04		/* receiver line status */
#define IER_EDSSI 0x08		/* modem status */
#define IER_MASK 0x0f

#define IIR_NONE 0x01
#define IIR_MSI 0x00
#define IIR_THRI 0x02
#define IIR_RDI 0x04
#define IIR_RLSI 0x06
#define IIR_CTI 0x0c		/* character timeout */
#define IIR_FIFO 0xc0

#define FCR_ENABLE 0x01
#define FCR_CLEAR_RX 0x02
#define FCR_TRIGGER(f) ((f) >> 6)

#define LCR_DLAB 0x80

#define MCR_DTR 0x01
#define MCR_RTS 0x02
#define MCR_OUT1 0x04
#define MCR_OUT2 0x08
#define MCR_LOOP 0x10
#define MCR_MASK 0x1f

#define LSR_DR 0x01
#define LSR_OE 0x02
#define LSR_THRE 0x20
#define LSR_TEMT 0x40

#define MSR_DCTS 0x01
#define MSR_DDSR 0x02
#define MSR_TERI 0x04
#define MSR_DDCD 0x08
#define MSR_CTS 0x10
#define MSR_DSR 0x20
#define MSR_RI 0x40
#define MSR_DCD 0x80

#define RX_FIFO_SIZE 16

struct serial {
	struct machine *m;
	struct chardev *cd;
	uint16_t base;
	unsigned irq;
	pthread_mutex_t lock;

	uint8_t ier, fcr, lcr, mcr, lsr, msr, scr, dll, dlm;
	bool thr_ipending;	/* THRE interrupt not yet acknowledged */
	bool rx_blocked;	/* the reader holds input we had no room for */
	int irq_level;

	uint8_t rx[RX_FIFO_SIZE];
	unsigned rx_head, rx_count;
};

static unsigned rx_capacity(const struct serial *s)
{
	return (s->fcr & FCR_ENABLE) ? RX_FIFO_SIZE : 1;
}

static unsigned rx_trigger(const struct serial *s)
{
	static const unsigned level[4] = { 1, 4, 8, 14 };

	return (s->fcr & FCR_ENABLE) ? level[FCR_TRIGGER(s->fcr)] : 1;
}

static void rx_push(struct serial *s, uint8_t c)
{
	if (s->rx_count == rx_capacity(s)) {
		s->lsr |= LSR_OE;
		return;
	}
	s->rx[(s->rx_head + s->rx_count) % RX_FIFO_SIZE] = c;
	s->rx_count++;
	s->lsr |= LSR_DR;
}

static void rx_clear(struct serial *s)
{
	s->rx_head = s->rx_count = 0;
	s->lsr &= ~LSR_DR;
}

/* The highest-priority pending interrupt, as IIR's low nibble. */
static uint8_t serial_iir_id(const struct serial *s)
{
	if ((s->ier & IER_ELSI) && (s->lsr & LSR_OE))
		return IIR_RLSI;
	if ((s->ier & IER_ERBFI) && s->rx_count) {
		/*
		 * Below the trigger level real hardware raises a timeout
		 * after four character times; raising it at once is
		 * indistinguishable to a driver and needs no timer.
		 */
		return s->rx_count >= rx_trigger(s) ? IIR_RDI : IIR_CTI;
	}
	if ((s->ier & IER_ETBEI) && s->thr_ipending)
		return IIR_THRI;
	if ((s->ier & IER_EDSSI) && (s->msr & 0x0f))
		return IIR_MSI;
	return IIR_NONE;
}

static void serial_update_irq(struct serial *s)
{
	int level = serial_iir_id(s) != IIR_NONE;

	if (level != s->irq_level) {
		s->irq_level = level;
		s->m->irq.ops->set_irq(s->m->irq.opaque, s->irq, level);
	}
}

static void serial_kick_input(struct serial *s)
{
	if (s->rx_blocked && !(s->mcr & MCR_LOOP) && s->rx_count < rx_capacity(s)) {
		s->rx_blocked = false;
		chardev_kick(s->cd);
	}
}

/* In loopback the modem inputs follow the modem outputs. */
static uint8_t msr_inputs(const struct serial *s)
{
	if (!(s->mcr & MCR_LOOP))
		return MSR_DCD | MSR_DSR | MSR_CTS;
	return ((s->mcr & MCR_DTR) ? MSR_DSR : 0) |
	       ((s->mcr & MCR_RTS) ? MSR_CTS : 0) |
	       ((s->mcr & MCR_OUT1) ? MSR_RI : 0) |
	       ((s->mcr & MCR_OUT2) ? MSR_DCD : 0);
}

static void msr_update(struct serial *s)
{
	uint8_t now = msr_inputs(s), old = s->msr & 0xf0, delta = s->msr & 0x0f;

	if ((now ^ old) & MSR_CTS)
		delta |= MSR_DCTS;
	if ((now ^ old) & MSR_DSR)
		delta |= MSR_DDSR;
	if ((old & MSR_RI) && !(now & MSR_RI))
		delta |= MSR_TERI;
	if ((now ^ old) & MSR_DCD)
		delta |= MSR_DDCD;
	s->msr = now | delta;
}

static void serial_write_fcr(struct serial *s, uint8_t v)
{
	/* Toggling FIFO mode empties both FIFOs. */
	if ((v ^ s->fcr) & FCR_ENABLE)
		v |= FCR_CLEAR_RX;
	if (v & FCR_CLEAR_RX) {
		rx_clear(s);
		s->lsr &= ~LSR_OE;
	}
	/* The clear bits self-clear; DMA mode and reserved bits do nothing. */
	s->fcr = v & 0xc1;
}

static void serial_write_reg(struct serial *s, unsigned reg, uint8_t v)
{
	bool dlab = s->lcr & LCR_DLAB;

	switch (reg) {
	case REG_RBR_THR:
		if (dlab) {
			s->dll = v;
			break;
		}
		if (s->mcr & MCR_LOOP)
			rx_push(s, v);
		else
			chardev_write(s->cd, &v, 1);
		/* The byte left at once: THR is empty again. */
		s->thr_ipending = true;
		break;
	case REG_IER:
		if (dlab) {
			s->dlm = v;
			break;
		}
		/* Enabling ETBEI with THR empty raises THRE right away. */
		if ((v & IER_ETBEI) && !(s->ier & IER_ETBEI))
			s->thr_ipending = true;
		s->ier = v & IER_MASK;
		break;
	case REG_IIR_FCR:
		serial_write_fcr(s, v);
		break;
	case REG_LCR:
		s->lcr = v;
		break;
	case REG_MCR:
		s->mcr = v & MCR_MASK;
		msr_update(s);
		break;
	case REG_LSR:
	case REG_MSR:
		/* Factory test registers on a 16550A: writes do nothing. */
		break;
	case REG_SCR:
		s->scr = v;
		break;
	}
}

static uint8_t serial_read_reg(struct serial *s, unsigned reg)
{
	bool dlab = s->lcr & LCR_DLAB;
	uint8_t v = 0;

	switch (reg) {
	case REG_RBR_THR:
		if (dlab)
			return s->dll;
		if (s->rx_count) {
			v = s->rx[s->rx_head];
			s->rx_head = (s->rx_head + 1) % RX_FIFO_SIZE;
			if (!--s->rx_count)
				s->lsr &= ~LSR_DR;
		}
		return v;
	case REG_IER:
		return dlab ? s->dlm : s->ier;
	case REG_IIR_FCR:
		v = serial_iir_id(s);
		/* Reading IIR acknowledges a THRE interrupt it reports. */
		if (v == IIR_THRI)
			s->thr_ipending = false;
		return v | ((s->fcr & FCR_ENABLE) ? IIR_FIFO : 0);
	case REG_LCR:
		return s->lcr;
	case REG_MCR:
		return s->mcr;
	case REG_LSR:
		v = s->lsr | LSR_THRE | LSR_TEMT;
		s->lsr &= ~LSR_OE;
		return v;
	case REG_MSR:
		v = s->msr;
		s->msr &= 0xf0;
		return v;
	case REG_SCR:
		return s->scr;
	}
	return 0;
}

/*
 * Wider accesses are split into bytes, lowest address first, as an ISA
 * bus would: the guest chooses the width, so accept any.
 */
static uint64_t serial_read(void *opaque, uint64_t offset, unsigned size)
{
	struct serial *s = opaque;
	uint64_t v = 0;

	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < size && offset + i < SERIAL_NR_REGS; i++)
		v |= (uint64_t)serial_read_reg(s, offset + i) << (8 * i);
	serial_kick_input(s);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return v;
}

static void serial_write(void *opaque, uint64_t offset, uint64_t value, unsigned size)
{
	struct serial *s = opaque;

	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < size && offset + i < SERIAL_NR_REGS; i++)
		serial_write_reg(s, offset + i, value >> (8 * i));
	serial_kick_input(s);
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
}

static const struct bus_ops serial_ops = {
	.read = serial_read,
	.write = serial_write,
};

/* The chardev's reader thread hands over input here. */
static size_t serial_receive(void *opaque, const uint8_t *buf, size_t len)
{
	struct serial *s = opaque;
	size_t n = 0;

	pthread_mutex_lock(&s->lock);
	/* In loopback the receiver hears only the transmitter. */
	if (!(s->mcr & MCR_LOOP)) {
		while (n < len && s->rx_count < rx_capacity(s))
			rx_push(s, buf[n++]);
	}
	s->rx_blocked = n < len;
	serial_update_irq(s);
	pthread_mutex_unlock(&s->lock);
	return n;
}

struct serial *serial_new(struct machine *m, uint16_t base, unsigned irq,
			  struct chardev *cd)
{
	struct serial *s = calloc(1, sizeof(*s));

	if (!s) {
		error_report("serial: out of memory");
		chardev_close(cd);
		return NULL;
	}
	*s = (struct serial){
		.m = m, .cd = cd, .base = base, .irq = irq,
		/* 9600 8N1 after reset, as firmware would leave it. */
		.lcr = 0x03, .dll = 0x0c,
	};
	s->msr = msr_inputs(s);
	pthread_mutex_init(&s->lock, NULL);
	if (chardev_attach(cd, "serial", &m->pio, base, SERIAL_NR_REGS,
			   &serial_ops, serial_receive, s) == 0)
		return s;
	chardev_close(cd);
	pthread_mutex_destroy(&s->lock);
	free(s);
	return NULL;
}

void serial_free(struct serial *s)
{
	if (!s)
		return;
	chardev_detach(s->cd, &s->m->pio, s->base, s);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

struct serial *serial_com1_new(struct machine *m, const char *spec)
{
	struct chardev *cd = chardev_open(m, spec);

	if (!cd)
		return NULL;
	return serial_new(m, SERIAL_COM1_BASE, SERIAL_COM1_IRQ, cd);
}
