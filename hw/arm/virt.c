// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The arm64 virt board: RAM from 1 GiB up, the in-kernel GICv3 with an
 * ITS (accel/kvm/arm64), the architected timer, PL011 UART and PL031 RTC,
 * pvpanic-mmio, a PCIe host bridge with ECAM, all described to the guest
 * by a device tree (fdt.c), and the arm64 Linux boot protocol (boot.c).
 * The map is in hw/arm/virt.h and docs/architecture.md.
 */
#include <errno.h>
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "accel/kvm-arm64.h"
#include "accel/kvm.h"
#include "hw/arm/virt.h"
#include "hw/board.h"
#include "hw/char/chardev.h"
#include "hw/char/pl011.h"
#include "hw/machine.h"
#include "hw/misc/debug-exit.h"
#include "hw/misc/pvpanic.h"
#include "hw/pci/pci.h"
#include "hw/rtc/pl031.h"
#include "util/guest-mem.h"
#include "util/log.h"

struct board {
	const struct board_cfg *opts;
	struct arm_boot boot;
	struct kvm_vm *vm;
	struct pl011 *uart;
	struct pl031 *rtc;
	struct pci_ecam *ecam;
	uint8_t *fdt;
};

static struct board *virt_open(const struct board_cfg *o)
{
	struct board *b = calloc(1, sizeof(*b));

	if (!b) {
		error_report("out of memory");
		return NULL;
	}
	b->opts = o;
	b->boot.initrd_fd = -1;
	if (o->ncpus > ARM_GICR_MAX_CPUS) {
		error_report("-smp %u: the arm64 board has room for %u vCPUs",
			     o->ncpus, ARM_GICR_MAX_CPUS);
		goto fail;
	}
	/*
	 * -machine dumpdtb needs no kernel: then nothing is placed either,
	 * and the dump is -dtb's tree with /chosen's bootargs.
	 */
	if (o->kernel &&
	    (arm_boot_open(&b->boot, o->kernel, o->initrd, o->dtb) ||
	     arm_boot_plan(&b->boot, ARM_RAM_BASE, o->ram_size)))
		goto fail;
	if (!o->kernel && o->dtb && arm_boot_open_dtb(&b->boot, o->dtb))
		goto fail;
	return b;
fail:
	arm_boot_close(&b->boot);
	free(b);
	return NULL;
}

static uint64_t virt_ram_end(const struct board *b)
{
	return ARM_RAM_BASE + b->opts->ram_size;
}

static int virt_init(struct board *b, struct machine *m, struct kvm_vm *vm)
{
	const struct kvm_arm_gic_layout gic = {
		.dist_base = ARM_GICD_BASE,
		.redist_base = ARM_GICR_BASE,
		.redist_size = m->ncpus * KVM_ARM_GICR_STRIDE,
		.its_base = ARM_GITS_BASE,
		.nr_irqs = ARM_NR_IRQS,
	};

	b->vm = vm;
	if (kvm_vm_add_ram(vm, ARM_RAM_BASE, b->opts->ram_size))
		return -1;
	return kvm_arm_gic_create(vm, &gic);
}

static int virt_devices(struct board *b, struct machine *m)
{
	const struct board_cfg *o = b->opts;
	struct chardev *cd = chardev_open(m, o->serial);

	if (!cd)
		return -1;
	b->uart = pl011_new(m, ARM_UART_BASE, ARM_UART_SPI, cd);
	if (!b->uart)
		return -1;
	b->rtc = pl031_new(m, ARM_RTC_BASE, o->rtc_base == RTC_BASE_LOCALTIME ?
			   pl031_host_localtime : pl031_host_now);
	if (!b->rtc || pvpanic_init(m, &m->mmio, ARM_PVPANIC_BASE))
		return -1;
	if (o->debug_exit.present &&
	    debug_exit_init(m, &m->mmio, ARM_DEBUG_EXIT_BASE, o->debug_exit.iosize))
		return -1;
	m->pci = pci_bus_new(NULL, &m->mmio, &m->irq, ARM_PCI_MMIO_BASE,
			     ARM_PCI_MMIO_SIZE);
	if (!m->pci)
		return -1;
	b->ecam = pci_ecam_new(m->pci, &m->mmio, ARM_PCI_ECAM_BASE);
	return b->ecam ? 0 : -1;
}

static int virt_fdt(struct board *b, unsigned ncpus)
{
	struct arm_fdt_params p = {
		.ram_size = b->opts->ram_size,
		.ncpus = ncpus,
		.bootargs = b->opts->append,
		.initrd_start = b->boot.initrd_addr,
		.initrd_size = b->boot.initrd_size,
		.debug_exit = b->opts->debug_exit.present,
	};

	b->fdt = calloc(1, ARM_FDT_MAX);
	if (!b->fdt) {
		error_report("out of memory");
		return -1;
	}
	if (b->boot.dtb)
		return arm_fdt_patch_user(b->boot.dtb, b->boot.dtb_size, b->fdt,
					  ARM_FDT_MAX, &p);
	/* Without a seed Linux keeps its own layout (no KASLR); not fatal. */
	if (getrandom(&p.seed, sizeof(p.seed), GRND_NONBLOCK) != sizeof(p.seed))
		p.seed = 0;
	return arm_fdt_build(&p, b->fdt, ARM_FDT_MAX);
}

static int virt_load(struct board *b, struct machine *m, struct cpu_entry *entry)
{
	if (virt_fdt(b, m->ncpus))
		return -1;
	return arm_boot_load(&b->boot, &m->mem, b->fdt, fdt_totalsize(b->fdt),
			     entry);
}

static int virt_dump_fdt(struct board *b, unsigned ncpus, const char *path)
{
	FILE *f;

	if (virt_fdt(b, ncpus))
		return -1;
	f = fopen(path, "wb");
	if (!f || fwrite(b->fdt, fdt_totalsize(b->fdt), 1, f) != 1) {
		error_report("-machine dumpdtb: cannot write '%s': %s", path,
			     strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	if (fclose(f)) {
		error_report("-machine dumpdtb: cannot write '%s': %s", path,
			     strerror(errno));
		return -1;
	}
	return 0;
}

static void virt_free(struct board *b, struct machine *m)
{
	(void)m;
	if (!b)
		return;
	pci_ecam_free(b->ecam);
	pl031_free(b->rtc);
	pl011_free(b->uart);
	arm_boot_close(&b->boot);
	free(b->fdt);
	free(b);
}

extern const uint8_t arm_check_code[], arm_check_code_end[];

/* Entered as a kernel is: EL1, MMU off, x0 the loop count. */
int arm_check_guest_load(struct guest_mem *mem, struct cpu_entry *entry)
{
	if (!guest_mem_write(mem, ARM_CHECK_ENTRY, arm_check_code,
			     arm_check_code_end - arm_check_code))
		return -1;
	*entry = (struct cpu_entry){ .pc = ARM_CHECK_ENTRY, .x0 = ARM_CHECK_LOOPS };
	return 0;
}

static const struct kvm_check_guest virt_check_guest = {
	.load = arm_check_guest_load,
	.loops = ARM_CHECK_LOOPS,
	.done_addr = ARM_CHECK_DONE,
};

static const struct board_ops virt_board = {
	.name = "virt",
	.check_guest = &virt_check_guest,
	.open = virt_open,
	.ram_end = virt_ram_end,
	.init = virt_init,
	.devices = virt_devices,
	.load = virt_load,
	.free = virt_free,
	.dump_fdt = virt_dump_fdt,
};

const struct board_ops *board_ops(void)
{
	return &virt_board;
}
