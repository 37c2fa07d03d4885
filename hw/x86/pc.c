// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The PC board: RAM below the PCI hole and above 4 GiB, the in-kernel
 * IOAPIC/PIC/PIT (accel/kvm/x86), legacy devices on the I/O-port bus,
 * PCI behind type-1 config ports, ACPI and MP tables, the Linux x86 boot
 * protocol.
 */
#include <stdlib.h>

#include "accel/kvm.h"
#include "hw/acpi/acpi.h"
#include "hw/board.h"
#include "hw/char/serial.h"
#include "hw/input/i8042.h"
#include "hw/machine.h"
#include "hw/misc/debug-exit.h"
#include "hw/misc/pvpanic.h"
#include "hw/pci/pci.h"
#include "hw/rtc/mc146818.h"
#include "hw/x86/check-guest.h"
#include "hw/x86/pc.h"
#include "util/log.h"

struct board {
	const struct board_cfg *opts;
	struct pc_layout layout;
	struct x86_boot boot;
	struct kvm_vm *vm;
	bool pio_ready;
	struct serial *serial;
	struct i8042 *i8042;
	struct mc146818 *rtc;
	struct acpi_pm *acpi_pm;
};

static struct board *pc_open(const struct board_cfg *o)
{
	struct board *b = calloc(1, sizeof(*b));

	if (!b) {
		error_report("out of memory");
		return NULL;
	}
	b->opts = o;
	b->boot.initrd_fd = -1;
	if (o->dtb) {
		error_report("-dtb: the x86 board is described by ACPI, not a "
			     "device tree");
		free(b);
		return NULL;
	}
	pc_layout(o->ram_size, &b->layout);
	if (x86_boot_open(&b->boot, &b->layout, o->kernel, o->initrd, o->append)) {
		x86_boot_close(&b->boot);
		free(b);
		return NULL;
	}
	return b;
}

static uint64_t pc_ram_end(const struct board *b)
{
	return b->layout.high_size ? PC_HIGH_RAM_BASE + b->layout.high_size :
				     b->layout.low_size;
}

/* KVM_CREATE_VM already made the irqchip and PIT: only RAM is left. */
static int pc_init(struct board *b, struct machine *m, struct kvm_vm *vm)
{
	b->vm = vm;
	bus_init(&m->pio, "pio");
	b->pio_ready = true;
	if (kvm_vm_add_ram(vm, 0, b->layout.low_size))
		return -1;
	if (b->layout.high_size &&
	    kvm_vm_add_ram(vm, PC_HIGH_RAM_BASE, b->layout.high_size))
		return -1;
	return 0;
}

static int pc_devices(struct board *b, struct machine *m)
{
	const struct board_cfg *o = b->opts;

	b->serial = serial_com1_new(m, o->serial);
	if (!b->serial)
		return -1;
	b->i8042 = i8042_new(m);
	if (!b->i8042 || pvpanic_init(m, &m->pio, PVPANIC_IOPORT))
		return -1;
	b->rtc = mc146818_new(m, o->rtc_base == RTC_BASE_LOCALTIME ? mc146818_host_localtime :
			      mc146818_host_now);
	if (!b->rtc)
		return -1;
	b->acpi_pm = acpi_pm_new(m);
	if (!b->acpi_pm)
		return -1;
	if (o->debug_exit.present &&
	    debug_exit_init(m, &m->pio, o->debug_exit.iobase, o->debug_exit.iosize))
		return -1;
	m->pci = pci_bus_new(&m->pio, &m->mmio, &m->irq, PC_PCI_HOLE_BASE,
			     PC_PCI_HOLE_SIZE);
	return m->pci ? 0 : -1;
}

static int pc_load(struct board *b, struct machine *m, struct cpu_entry *entry)
{
	if (mptable_write(m)) {
		error_report("cannot write the MP table");
		return -1;
	}
	uint64_t rsdp = acpi_build(m, PC_ACPI_BASE, PC_ACPI_SIZE);

	if (!rsdp)
		return -1;
	return x86_boot_load(&b->boot, m, &b->layout, rsdp, entry);
}

static void pc_free(struct board *b, struct machine *m)
{
	if (!b)
		return;
	acpi_pm_free(b->acpi_pm);
	mc146818_free(b->rtc);
	i8042_free(b->i8042);
	serial_free(b->serial);
	if (b->pio_ready)
		bus_destroy(&m->pio);
	x86_boot_close(&b->boot);
	free(b);
}

static const struct kvm_check_guest pc_check_guest = {
	.load = x86_check_guest_load,
	.loops = X86_CHECK_LOOPS,
	.done_addr = X86_CHECK_PORT,
};

static const struct board_ops pc_board = {
	.name = "pc",
	.check_guest = &pc_check_guest,
	.open = pc_open,
	.ram_end = pc_ram_end,
	.init = pc_init,
	.devices = pc_devices,
	.load = pc_load,
	.free = pc_free,
};

const struct board_ops *board_ops(void)
{
	return &pc_board;
}
