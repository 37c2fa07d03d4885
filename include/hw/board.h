/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_BOARD_H
#define BRISK_HW_BOARD_H

#include <stdbool.h>
#include <stdint.h>

struct cpu_entry;
struct kvm_check_guest;
struct kvm_vm;
struct machine;

/* What a board is asked to build: its share of the command line. */
struct board_cfg {
	const char *kernel, *initrd, *append;
	const char *dtb;		/* -dtb: boot with this device tree */
	const char *serial;		/* the console's chardev */
	uint64_t ram_size;
	unsigned ncpus;
	enum board_rtc_base { RTC_BASE_UTC, RTC_BASE_LOCALTIME } rtc_base;
	/* -device isa-debug-exit (hw/misc/debug-exit.c fills it) */
	struct debug_exit_cfg {
		bool present;
		unsigned iobase, iosize;
	} debug_exit;
};

/*
 * A board: what hw/main.c's board-independent init order asks of the
 * machine it builds.  Each build has exactly one (hw/x86/pc.c,
 * hw/arm/virt.c), returned by board_ops().  Calls come in this order;
 * every one but free() reports its own error line and returns -1 (NULL).
 * free() undoes whatever part of open()..load() happened.
 */
struct board;
struct board_ops {
	const char *name;
	/* The guest brisk --check-kvm times, entered as Linux is. */
	const struct kvm_check_guest *check_guest;
	/* Reads and checks the files the command line names; no VM yet. */
	struct board *(*open)(const struct board_cfg *cfg);
	/* The highest guest-physical address RAM reaches (sizes the VM). */
	uint64_t (*ram_end)(const struct board *b);
	/* RAM and the interrupt controller, on a fresh VM. */
	int (*init)(struct board *b, struct machine *m, struct kvm_vm *vm);
	/* The board's own devices, then the PCI bus in m->pci. */
	int (*devices)(struct board *b, struct machine *m);
	/* Kernel, initrd, firmware tables; where the boot vCPU starts. */
	int (*load)(struct board *b, struct machine *m, struct cpu_entry *entry);
	void (*free)(struct board *b, struct machine *m);
	/*
	 * -machine dumpdtb=FILE: writes the device tree the guest would get,
	 * right after open(), with no VM.  NULL for a board without one.
	 */
	int (*dump_fdt)(struct board *b, unsigned ncpus, const char *path);
};

const struct board_ops *board_ops(void);

#endif
