// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Intel MultiProcessor Specification 1.4 table.  Linux prefers the ACPI
 * MADT; this table is what it finds with acpi=off (or an older guest), so
 * -smp N still brings N CPUs up.  The floating pointer sits at the start of
 * the BIOS area 0xf0000, which Linux scans.
 *
 * Interrupts: ISA IRQ n is IOAPIC pin n, except the timer's IRQ 0 on pin
 * 2 (accel/kvm routes it there, as the MADT says too), the 8259 reaches every LAPIC's LINT0
 * as ExtINT and NMI is LINT1.  PCI devices use MSI-X only, so the PCI bus
 * needs no interrupt entries.
 */
#include <string.h>

#include "hw/machine.h"
#include "hw/x86/pc.h"

#define MP_SPEC_REV 4
#define MP_ENTRY_CPU 0
#define MP_ENTRY_BUS 1
#define MP_ENTRY_IOAPIC 2
#define MP_ENTRY_IOINT 3
#define MP_ENTRY_LINT 4
#define MP_INT 0
#define MP_NMI 1
#define MP_EXTINT 3
#define MP_BUS_PCI 0
#define MP_BUS_ISA 1
#define MP_CPU_EN 1
#define MP_CPU_BP 2
#define MP_HEADER_LEN 44

struct mp_writer {
	uint8_t *buf;
	size_t len, cap;
	unsigned entries;
};

static void mp_put(struct mp_writer *w, const void *p, size_t n)
{
	if (w->len + n <= w->cap)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void mp_u8(struct mp_writer *w, uint8_t v) { mp_put(w, &v, 1); }

static void mp_u16(struct mp_writer *w, uint16_t v)
{
	mp_u8(w, v);
	mp_u8(w, v >> 8);
}

static void mp_u32(struct mp_writer *w, uint32_t v)
{
	mp_u16(w, v);
	mp_u16(w, v >> 16);
}

static uint8_t mp_checksum(const uint8_t *p, size_t n)
{
	uint8_t sum = 0;

	while (n--)
		sum += *p++;
	return -sum;
}

static void mp_cpu(struct mp_writer *w, unsigned id, bool bsp)
{
	mp_u8(w, MP_ENTRY_CPU);
	mp_u8(w, id);
	mp_u8(w, 0x14);			/* LAPIC version: integrated */
	mp_u8(w, MP_CPU_EN | (bsp ? MP_CPU_BP : 0));
	mp_u32(w, 0x600);		/* family 6 signature */
	mp_u32(w, 0x201);		/* FPU, APIC */
	mp_u32(w, 0);
	mp_u32(w, 0);
	w->entries++;
}

static void mp_bus(struct mp_writer *w, unsigned id, const char *type)
{
	mp_u8(w, MP_ENTRY_BUS);
	mp_u8(w, id);
	mp_put(w, type, 6);
	w->entries++;
}

static void mp_int(struct mp_writer *w, unsigned entry, unsigned type,
		   unsigned bus, unsigned irq, unsigned dst, unsigned pin)
{
	mp_u8(w, entry);
	mp_u8(w, type);
	mp_u16(w, 0);			/* polarity and trigger of the bus */
	mp_u8(w, bus);
	mp_u8(w, irq);
	mp_u8(w, dst);
	mp_u8(w, pin);
	w->entries++;
}

int mptable_write(struct machine *m)
{
	uint8_t *base = guest_mem_ptr(&m->mem, PC_MPTABLE_BASE, PC_MPTABLE_SIZE);
	unsigned ioapic_id = m->ncpus;

	if (!base || m->ncpus == 0 || m->ncpus > 254)
		return -1;
	/* Floating pointer (16 bytes), then the configuration table. */
	struct mp_writer w = { .buf = base + 16, .cap = PC_MPTABLE_SIZE - 16 };

	w.len = MP_HEADER_LEN;
	for (unsigned i = 0; i < m->ncpus; i++)
		mp_cpu(&w, i, i == 0);
	mp_bus(&w, MP_BUS_PCI, "PCI   ");
	mp_bus(&w, MP_BUS_ISA, "ISA   ");
	mp_u8(&w, MP_ENTRY_IOAPIC);
	mp_u8(&w, ioapic_id);
	mp_u8(&w, 0x11);		/* IOAPIC version */
	mp_u8(&w, 1);			/* enabled */
	mp_u32(&w, PC_IOAPIC_ADDR);
	w.entries++;
	for (unsigned irq = 0; irq < 16; irq++)
		if (irq != 2)		/* the 8259 cascade */
			mp_int(&w, MP_ENTRY_IOINT, MP_INT, MP_BUS_ISA, irq,
			       ioapic_id, irq ? irq : 2);
	mp_int(&w, MP_ENTRY_LINT, MP_EXTINT, MP_BUS_ISA, 0, 0xff, 0);
	mp_int(&w, MP_ENTRY_LINT, MP_NMI, MP_BUS_ISA, 0, 0xff, 1);
	if (w.len > w.cap)
		return -1;

	size_t table_len = w.len;

	w.len = 0;
	mp_put(&w, "PCMP", 4);
	mp_u16(&w, table_len);
	mp_u8(&w, MP_SPEC_REV);
	mp_u8(&w, 0);			/* checksum, below */
	mp_put(&w, "BRISK   ", 8);
	mp_put(&w, "BRISK PC    ", 12);
	mp_u32(&w, 0);
	mp_u16(&w, 0);
	mp_u16(&w, w.entries);
	mp_u32(&w, PC_LAPIC_ADDR);
	mp_u32(&w, 0);			/* no extended table */
	w.buf[7] = mp_checksum(w.buf, table_len);

	uint8_t *fp = base;

	memset(fp, 0, 16);
	memcpy(fp, "_MP_", 4);
	uint32_t table = PC_MPTABLE_BASE + 16;

	memcpy(fp + 4, &table, 4);	/* x86 hosts are little-endian */
	fp[8] = 1;			/* length in 16-byte units */
	fp[9] = MP_SPEC_REV;
	fp[10] = mp_checksum(fp, 16);
	return 0;
}
