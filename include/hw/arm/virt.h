/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_ARM_VIRT_H
#define BRISK_HW_ARM_VIRT_H

/* The KVM check's guest (check-guest.S). */
#define ARM_CHECK_LOOPS 100000
#define ARM_CHECK_ENTRY 0x1000
#define ARM_CHECK_DONE 0x10000000	/* outside the check VM's 2 MiB */

#ifndef __ASSEMBLER__
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/kvm-arm64.h"

struct guest_mem;

/*
 * The arm64 virt board's guest-physical map (docs/architecture.md):
 *   0x08000000  GICv3 distributor          64 KiB
 *   0x08080000  GICv3 ITS                  128 KiB
 *   0x09000000  PL011 UART                 4 KiB, SPI 1
 *   0x09010000  PL031 RTC                  4 KiB
 *   0x09020000  pvpanic-mmio               4 KiB
 *   0x09030000  debug-exit                 4 KiB (only when asked for)
 *   0x0a000000  GICv3 redistributors       128 KiB per vCPU, up to 256
 *   0x10000000  PCI MMIO window            up to 0x3f000000
 *   0x3f000000  PCIe ECAM, bus 0           1 MiB
 *   0x40000000  RAM                        -m bytes
 */
#define ARM_GICD_BASE 0x08000000ull
#define ARM_GITS_BASE 0x08080000ull
#define ARM_UART_BASE 0x09000000ull
#define ARM_RTC_BASE 0x09010000ull
#define ARM_PVPANIC_BASE 0x09020000ull
#define ARM_DEBUG_EXIT_BASE 0x09030000ull
#define ARM_GICR_BASE 0x0a000000ull
#define ARM_GICR_MAX_CPUS 256
#define ARM_PCI_MMIO_BASE 0x10000000ull
#define ARM_PCI_MMIO_SIZE (0x3f000000ull - ARM_PCI_MMIO_BASE)
#define ARM_PCI_ECAM_BASE 0x3f000000ull
#define ARM_RAM_BASE 0x40000000ull

/* SPIs (interrupt id 32 + n) of the devices that have one. */
#define ARM_UART_SPI 1
#define ARM_PCI_INTX_SPI 3		/* INTA..INTD: SPIs 3..6 */
#define ARM_NR_IRQS 128			/* 32 private + 96 SPIs */

/* The architected timer's PPIs (interrupt id 16 + n). */
#define ARM_TIMER_PPI_SEC 13
#define ARM_TIMER_PPI_PHYS 14
#define ARM_TIMER_PPI_VIRT 11
#define ARM_TIMER_PPI_HYP 10
#define ARM_GIC_MAINT_PPI 9

/* What the device tree describes beyond the fixed map above. */
struct arm_fdt_params {
	uint64_t ram_size;
	unsigned ncpus;
	const char *bootargs;
	uint64_t initrd_start, initrd_size;	/* size 0: no initrd */
	bool debug_exit;
	uint64_t seed;				/* kaslr-seed */
};

/*
 * Builds brisk's device tree into buf (size bytes) with libfdt.  Returns
 * 0, or -1 with one error line when it does not fit.
 */
int arm_fdt_build(const struct arm_fdt_params *p, void *buf, size_t size);
/*
 * A user's tree (-dtb FILE, size bytes read from it) checked whole: its
 * header, its total size against size, every tag, offset and string in
 * it.  0, or -1 with one error line naming name.
 */
int arm_fdt_check_user(const void *dtb, size_t size, const char *name);
/*
 * A user's tree (dtb, dtb_size bytes) checked as above and copied into
 * buf, with /chosen's bootargs (when p->bootargs) and initrd range (when
 * p->initrd_size) set from p; the rest of p is the user's business.  -1
 * with one error line on a blob that fails the check or does not fit.
 */
int arm_fdt_patch_user(const void *dtb, size_t dtb_size, void *buf,
		       size_t size, const struct arm_fdt_params *p);

/*
 * The arm64 Linux boot protocol (Documentation/arch/arm64/booting.rst).
 * arm_boot_open() reads the Image and checks its header, the initrd's and
 * a user's device tree's sizes, with no VM yet; arm_boot_plan() places
 * them in RAM; arm_boot_load() writes them, the tree last.
 */
struct arm_boot {
	uint8_t *image;
	size_t image_size;
	uint64_t text_offset, load_size;	/* from the header */
	int initrd_fd;
	uint64_t initrd_size;
	uint8_t *dtb;			/* -dtb FILE, or NULL */
	size_t dtb_size;

	uint64_t kernel_addr, initrd_addr, dtb_addr;	/* arm_boot_plan() */
};

#define ARM_FDT_MAX (2u << 20)		/* booting.rst: at most 2 MiB */

int arm_boot_open(struct arm_boot *b, const char *kernel, const char *initrd,
		  const char *dtb);
/* Reads and checks (arm_fdt_check_user) the user's tree alone. */
int arm_boot_open_dtb(struct arm_boot *b, const char *dtb);
/*
 * arm_boot_open() for an Image already in memory: image was malloc'd and
 * belongs to b from now on, even on failure; name stands for the file.
 */
int arm_boot_open_image(struct arm_boot *b, uint8_t *image, size_t size,
			const char *name);
int arm_boot_plan(struct arm_boot *b, uint64_t ram_base, uint64_t ram_size);
/* Kernel, initrd, then the tree fdt (fdt_size bytes); fills entry. */
int arm_boot_load(struct arm_boot *b, struct guest_mem *mem, const void *fdt,
		  size_t fdt_size, struct cpu_entry *entry);
void arm_boot_close(struct arm_boot *b);

int arm_check_guest_load(struct guest_mem *mem, struct cpu_entry *entry);

#endif /* __ASSEMBLER__ */
#endif
