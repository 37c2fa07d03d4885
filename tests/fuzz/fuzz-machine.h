/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_FUZZ_MACHINE_H
#define BRISK_TESTS_FUZZ_MACHINE_H

/*
 * A board for the device fuzzers: guest RAM from fuzz-util.h, PIO and
 * MMIO buses, a PCI bus, and virtio-blk devices made from command-line
 * strings on a memfd disk.  MSI routes only count; kicks arrive through
 * the bus (no ioeventfd), as on a host without KVM_IOEVENTFD.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz-util.h"
#include "hw/block/virtio-blk.h"
#include "hw/bus.h"
#include "hw/machine.h"
#include "hw/pci/pci.h"

#define FM_MMIO_BASE 0xc0000000ull
#define FM_MMIO_SIZE 0x10000000ull
#define FM_MAX_ROUTES 64
#define FM_DISK_SIZE (64u << 10)

struct fuzz_machine {
	struct machine m;
	struct fuzz_ram ram;
	bool route_used[FM_MAX_ROUTES];
	struct blk_cmdline *blk;
	int disk_fd;
};

static void fm_set_irq(void *o, unsigned gsi, int level)
{
	(void)o; (void)gsi; (void)level;
}

static int fm_route_add(void *o, int efd, uint64_t addr, uint32_t data,
			uint32_t devid)
{
	(void)devid;
	struct fuzz_machine *f = o;

	(void)efd; (void)addr; (void)data;
	for (int i = 0; i < FM_MAX_ROUTES; i++) {
		if (!f->route_used[i]) {
			f->route_used[i] = true;
			return i;
		}
	}
	return -1;
}

static int fm_route_set(void *o, int r, uint64_t addr, uint32_t data)
{
	struct fuzz_machine *f = o;

	(void)addr; (void)data;
	if (r < 0 || r >= FM_MAX_ROUTES || !f->route_used[r])
		abort();	/* msix handed back a handle we never gave */
	return 0;
}

static void fm_route_del(void *o, int r)
{
	struct fuzz_machine *f = o;

	if (r < 0 || r >= FM_MAX_ROUTES || !f->route_used[r])
		abort();
	f->route_used[r] = false;
}

static const struct irq_ops fm_irq_ops = {
	.set_irq = fm_set_irq,
	.msi_route_add = fm_route_add,
	.msi_route_set = fm_route_set,
	.msi_route_del = fm_route_del,
};

static void fm_shutdown(struct machine *m, int status, const char *why)
{
	(void)m; (void)status; (void)why;
}

/*
 * Builds the board with RAM from data and one virtio-blk device from the
 * -drive options drive_opts (file= is added) and the -device string
 * device.  Returns -1 if the device could not be made.
 */
static int fm_init(struct fuzz_machine *f, const uint8_t *data, size_t len,
		   size_t ram_size, const char *drive_opts, const char *device)
{
	char arg[256];

	memset(f, 0, sizeof(*f));
	f->disk_fd = -1;
	if (fuzz_ram_init(&f->ram, data, len, ram_size, 0) < 0)
		abort();
	f->m.mem = f->ram.mem;
	bus_init(&f->m.pio, "pio");
	bus_init(&f->m.mmio, "mmio");
	f->m.irq = (struct irq_chip){ &fm_irq_ops, f };
	f->m.ncpus = 1;
	f->m.shutdown = fm_shutdown;
	f->m.stop_fd = -1;
	f->m.pci = pci_bus_new(&f->m.pio, &f->m.mmio, &f->m.irq, FM_MMIO_BASE,
			       FM_MMIO_SIZE);
	f->disk_fd = memfd_create("disk", MFD_CLOEXEC);
	if (!f->m.pci || f->disk_fd < 0 || ftruncate(f->disk_fd, FM_DISK_SIZE) < 0)
		abort();
	f->blk = blk_cmdline_new();
	snprintf(arg, sizeof(arg), "file=/proc/self/fd/%d,%s", f->disk_fd, drive_opts);
	if (!f->blk || blk_cmdline_drive(f->blk, arg) < 0 ||
	    blk_cmdline_device(f->blk, device) < 0 ||
	    blk_cmdline_finish(f->blk) < 0)
		abort();	/* the harness wrote a bad command line */
	return blk_devices_create(f->blk, &f->m);
}

static void fm_free(struct fuzz_machine *f)
{
	blk_devices_destroy(f->blk);
	blk_cmdline_free(f->blk);
	pci_bus_free(f->m.pci);
	bus_destroy(&f->m.pio);
	bus_destroy(&f->m.mmio);
	for (int i = 0; i < FM_MAX_ROUTES; i++)
		if (f->route_used[i])
			abort();	/* teardown must drop every MSI route */
	if (f->disk_fd >= 0)
		close(f->disk_fd);
	fuzz_ram_free(&f->ram);
}

/* Type-1 config access to 00:slot.0, the way a guest does it. */
static inline uint32_t fm_cfg_read(struct fuzz_machine *f, unsigned slot, unsigned reg)
{
	uint64_t v = 0;

	bus_write(&f->m.pio, PCI_CONFIG_ADDRESS, 0x80000000u | slot << 11 | (reg & 0xfc), 4);
	bus_read(&f->m.pio, PCI_CONFIG_DATA, &v, 4);
	return (uint32_t)v;
}

static inline void fm_cfg_write(struct fuzz_machine *f, unsigned slot, unsigned reg,
			 uint32_t val)
{
	bus_write(&f->m.pio, PCI_CONFIG_ADDRESS, 0x80000000u | slot << 11 | (reg & 0xfc), 4);
	bus_write(&f->m.pio, PCI_CONFIG_DATA, val, 4);
}

/* Where the guest has placed a 64-bit BAR of the device in slot. */
static inline uint64_t fm_bar64(struct fuzz_machine *f, unsigned slot, unsigned bar)
{
	unsigned reg = PCI_BASE_ADDRESS_0 + 4 * bar;

	return (fm_cfg_read(f, slot, reg) & ~0xfull) |
	       (uint64_t)fm_cfg_read(f, slot, reg + 4) << 32;
}

#endif
