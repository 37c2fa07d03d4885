/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_H
#define BRISK_ACCEL_KVM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct guest_mem;
struct machine;
struct kvm_vm;
/*
 * Where and how the boot vCPU enters the guest.  Each board defines it
 * (hw/x86/pc.h, hw/arm/virt.h); accel/kvm/<arch>/ loads it into a vCPU.
 */
struct cpu_entry;

/*
 * The test guest kvm_check() runs: the board writes it into 2 MiB of RAM
 * at guest-physical 0, entered as the board enters Linux; it runs a loop
 * of loops iterations, then writes to done_addr (an I/O port on x86, an
 * MMIO address outside RAM elsewhere).
 */
struct kvm_check_guest {
	int (*load)(struct guest_mem *mem, struct cpu_entry *entry);
	unsigned loops;
	uint64_t done_addr;
};

/* What backs /dev/kvm, and whether ordinary guests run there at speed. */
struct kvm_check {
	bool usable;
	char module[16];	/* kvm_intel, kvm_amd, kvm_pvm, kvm; "" if unknown */
	char cpu_virt[16];	/* vmx, svm (host CPU flags), el2; "none" */
	int nested_state;	/* KVM_CAP_NESTED_STATE; -1 if not asked */
	uint64_t loop_ns;	/* the test guest's best run; 0 if none ended */
	char why[160];		/* what went wrong running it, if anything */
	char verdict[512];	/* one line saying all of it */
};

/* Where a vCPU's guest code was when its thread stopped. */
struct kvm_vcpu_place {
	uint64_t pc;		/* x86 RIP, arm64 PC */
	bool known;
};

/*
 * What -timeout's line ends with: appends " (vCPU 0 at 0x100200, vCPU 1
 * at 0xfff0)" to why (a string shorter than size), each of the n vCPUs
 * whose place is known, in order.  An entry goes in only if ", ...)"
 * still fits after it, so a line too short for all ends in ", ...)"
 * (" (...)" if no entry fit, nothing if not even that does).  Nothing
 * when no place is known.
 */
void kvm_why_add_places(char *why, size_t size, const struct kvm_vcpu_place *p,
			unsigned n);

/*
 * Runs the test guest on a VM of its own and fills c.  -1 (after one
 * error line) only when no VM could be made at all: no /dev/kvm, no
 * permission, a KVM too old.
 */
int kvm_check(struct kvm_check *c, const struct kvm_check_guest *g);

/*
 * Opens /dev/kvm and creates the VM with the architecture's in-kernel
 * interrupt controller (x86: IOAPIC/PIC/LAPIC and PIT; arm64: none until
 * the board calls kvm_arm_gic_create()).  Fills m->irq, m->shutdown and
 * m->priv.  NULL after one error line.  ram_end is the highest guest
 * address RAM will reach (arm64 sizes the guest address space by it).
 * Block SIGINT/SIGTERM/SIGHUP before any thread starts and call this
 * before starting any thread either: it installs the vCPU kick handler.
 */
struct kvm_vm *kvm_vm_new(struct machine *m, uint64_t ram_end);
/* Largest -smp the host's KVM accepts. */
unsigned kvm_max_vcpus(struct kvm_vm *vm);
/* RAM at gpa (a shared memfd if m->ram_shared), registered with KVM, added to m->mem. */
int kvm_vm_add_ram(struct kvm_vm *vm, uint64_t gpa, uint64_t size);
/*
 * Creates m->ncpus vCPUs; the first starts at entry, the others wait to
 * be started by the guest (x86: INIT/SIPI; arm64: PSCI CPU_ON).
 */
int kvm_vcpus_create(struct kvm_vm *vm, const struct cpu_entry *entry);
int kvm_vcpus_start(struct kvm_vm *vm);
/*
 * Readable once m->shutdown() has been called; then kvm_vm_stop() joins
 * the vCPU threads and returns the status shutdown() was given.
 */
int kvm_vm_done_fd(struct kvm_vm *vm);
int kvm_vm_stop(struct kvm_vm *vm, const char **why);
void kvm_vm_free(struct kvm_vm *vm);

#endif
