// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * PCI and virtio-pci as a guest driver sees them: a sequence of config
 * cycles through 0xcf8/0xcfc and MMIO accesses to the BARs, against a PCI
 * bus holding one virtio-blk device (its I/O threads running), then
 * teardown.  The guest may move or disable BARs, set up queues, reset...
 *
 * Input layout:
 *   u8  device: bit 0 packed, bit 1 event_idx, bit 2 indirect_desc,
 *       bit 3 aio=threads, bit 4 readonly
 *   u8  log2 of queue-size (mod 10, plus 1)
 *   u8  num-queues (mod 4, plus 1)
 *   ... operations, each an opcode byte o and its operands:
 *   o % 8 == 0: u32 to CONFIG_ADDRESS
 *            1: CONFIG_DATA write, width (o >> 3) % 3 (1, 2, 4 bytes) at
 *               offset o >> 5 (0 to 3 modulo the width), u32 value
 *            2: CONFIG_DATA read, as 1
 *            3: write to BAR 4 (virtio structures): u16 offset, width
 *               1 << ((o >> 3) & 3), u64 value
 *            4: read from BAR 4, as 3
 *            5: write to BAR 1 (MSI-X table and PBA): u16 offset, as 3
 *            6: MMIO at any address: u64 address, width as 3, read if
 *               o & 0x20, else write u64 value
 *            7: PIO at any port: u16 port, width as 3, as 6
 * BAR addresses are read back from config space before each access, so
 * accesses follow the device wherever the guest moved it.
 */
#include <stdio.h>

#include "fuzz-machine.h"

#define RAM_SIZE (64u << 10)
#define MAX_OPS 4096
#define DEV_SLOT 1

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* BAR bar's address, leaving the guest's CONFIG_ADDRESS as it was. */
static uint64_t bar_base(struct fuzz_machine *f, unsigned bar)
{
	uint64_t saved = 0, a;

	bus_read(&f->b.m.pio, PCI_CONFIG_ADDRESS, &saved, 4);
	a = bar_addr(&f->b, DEV_SLOT << 3, bar);
	bus_write(&f->b.m.pio, PCI_CONFIG_ADDRESS, saved, 4);
	return a;
}

static void bus_access(struct bus *bus, uint64_t addr, unsigned width, bool read,
		   uint64_t val)
{
	uint64_t v;

	if (read)
		bus_read(bus, addr, &v, width);
	else
		bus_write(bus, addr, val, width);
}

static void run_op(struct fuzz_machine *f, struct fuzz_in *in)
{
	uint8_t o = fuzz_u8(in);
	unsigned w = 1u << ((o >> 3) & 3);
	uint64_t v, addr;

	switch (o % 8) {
	case 0:
		bus_write(&f->b.m.pio, PCI_CONFIG_ADDRESS, fuzz_u32(in), 4);
		break;
	case 1:
	case 2: {
		unsigned cw = 1u << ((o >> 3) % 3);
		unsigned off = (o >> 5) & (4 - cw);

		bus_access(&f->b.m.pio, PCI_CONFIG_DATA + off, cw, o % 8 == 2, fuzz_u32(in));
		break;
	}
	case 3:
	case 4:
		addr = bar_base(f, 4) + fuzz_u16(in) % 0x4000;
		v = o % 8 == 3 ? fuzz_u64(in) : 0;
		bus_access(&f->b.m.mmio, addr, w, o % 8 == 4, v);
		break;
	case 5:
		addr = bar_base(f, 1) + fuzz_u16(in) % 0x1000;
		bus_access(&f->b.m.mmio, addr, w, false, fuzz_u64(in));
		break;
	case 6:
		addr = fuzz_u64(in);
		bus_access(&f->b.m.mmio, addr, w, o & 0x20, o & 0x20 ? 0 : fuzz_u64(in));
		break;
	default:
		addr = fuzz_u16(in);
		bus_access(&f->b.m.pio, addr, w, o & 0x20, o & 0x20 ? 0 : fuzz_u64(in));
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct fuzz_machine f;
	char drive[64], device[160];
	uint8_t dev = fuzz_u8(&in);
	unsigned qsize = 1u << (fuzz_u8(&in) % 10 + 1);
	unsigned nq = fuzz_u8(&in) % 4 + 1;

	snprintf(drive, sizeof(drive), "if=none,id=d0,aio=%s,readonly=%s",
		 dev & 8 ? "threads" : "io_uring", dev & 16 ? "on" : "off");
	snprintf(device, sizeof(device),
		 "virtio-blk-pci,drive=d0,packed=%s,event_idx=%s,indirect_desc=%s,"
		 "queue-size=%u,num-queues=%u", dev & 1 ? "on" : "off",
		 dev & 2 ? "on" : "off", dev & 4 ? "on" : "off", qsize, nq);
	if (fm_init(&f, NULL, 0, RAM_SIZE, drive, device) < 0)
		abort();	/* a valid command line must make a device */
	for (unsigned i = 0; i < MAX_OPS && in.n; i++)
		run_op(&f, &in);
	fm_free(&f);
	return 0;
}
