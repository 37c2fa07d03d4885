/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_X86_PC_H
#define BRISK_HW_X86_PC_H

#include <stddef.h>
#include <stdint.h>

#include "accel/kvm-x86.h"

struct machine;

/*
 * Guest-physical map of the board:
 *   [0, low_size)               RAM (low_size <= PC_LOW_RAM_MAX)
 *     0x500    GDT       0x7000  boot_params    0x9000  page tables
 *     0x20000  kernel command line
 *     0x9fc00  reserved (EBDA)
 *     0xe0000  ACPI tables, 0xf0000 MP table (reserved in e820)
 *     0x100000 kernel at its preferred address, initrd at the top
 *   [0xc0000000, 0xfec00000)    PCI MMIO window (32-bit hole)
 *   0xfec00000 IOAPIC, 0xfee00000 LAPIC, 0xfffbc000 KVM's TSS/identity map
 *   [4 GiB, 4 GiB + high_size)  RAM above the hole
 */
#define PC_LOW_RAM_MAX 0xc0000000ull
#define PC_PCI_HOLE_BASE 0xc0000000ull
#define PC_PCI_HOLE_SIZE (0xfec00000ull - PC_PCI_HOLE_BASE)
#define PC_HIGH_RAM_BASE 0x100000000ull
#define PC_EBDA_BASE 0x9fc00ull
#define PC_ACPI_BASE 0xe0000ull
#define PC_ACPI_SIZE 0x10000ull
#define PC_MPTABLE_BASE 0xf0000ull
#define PC_MPTABLE_SIZE 0x10000ull
#define PC_IOAPIC_ADDR 0xfec00000u
#define PC_LAPIC_ADDR 0xfee00000u

struct pc_layout {
	uint64_t low_size, high_size;
};

void pc_layout(uint64_t ram_size, struct pc_layout *l);

/*
 * The Linux x86 boot protocol.  x86_boot_open() reads and checks the files
 * and plans where everything goes; it needs no VM, so command-line mistakes
 * are caught before /dev/kvm is opened.  x86_boot_load() then writes kernel,
 * initrd, command line, boot_params (with e820 and rsdp), GDT and page
 * tables into guest RAM.
 */
struct x86_boot {
	uint8_t *image;		/* the whole bzImage */
	size_t image_size;
	size_t setup_size;	/* real-mode part, skipped */
	uint64_t load_addr, init_size;
	int initrd_fd;
	uint64_t initrd_size, initrd_addr;
	const char *cmdline;
};

int x86_boot_open(struct x86_boot *b, const struct pc_layout *l,
		  const char *kernel, const char *initrd, const char *cmdline);
int x86_boot_load(struct x86_boot *b, struct machine *m,
		  const struct pc_layout *l, uint64_t rsdp,
		  struct cpu_entry *entry);
/*
 * x86_boot_open() for a kernel already in memory: image was malloc'd and
 * belongs to b from now on, even on failure (x86_boot_close() frees it);
 * name stands for the file in messages.
 */
int x86_boot_open_image(struct x86_boot *b, const struct pc_layout *l,
			uint8_t *image, size_t size, const char *name,
			const char *initrd, const char *cmdline);
void x86_boot_close(struct x86_boot *b);

/* Intel MP table at PC_MPTABLE_BASE so -smp works without ACPI too. */
int mptable_write(struct machine *m);

#endif
