/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_H
#define BRISK_ACCEL_KVM_H

#include <stdbool.h>
#include <stdint.h>

struct guest_mem;
struct machine;
struct x86_cpu_entry;
struct kvm_vm;

/*
 * The test guest kvm_check() runs: the board writes it into 2 MiB of RAM
 * at guest-physical 0, entered as the board enters Linux; it runs a loop
 * of loops iterations, then writes to port.
 */
struct kvm_check_guest {
	int (*load)(struct guest_mem *mem, struct x86_cpu_entry *entry);
	unsigned loops;
	uint16_t port;
};

/* What backs /dev/kvm, and whether ordinary guests run there at speed. */
struct kvm_check {
	bool usable;
	char module[16];	/* kvm_intel, kvm_amd, kvm_pvm; "" if unknown */
	bool cpu_vmx, cpu_svm;	/* in the host CPU's flags */
	int nested_state;	/* KVM_CAP_NESTED_STATE; -1 if not asked */
	uint64_t loop_ns;	/* the test guest's best run; 0 if none ended */
	char why[160];		/* what went wrong running it, if anything */
	char verdict[512];	/* one line saying all of it */
};

/*
 * Runs the test guest on a VM of its own and fills c.  -1 (after one
 * error line) only when no VM could be made at all: no /dev/kvm, no
 * permission, a KVM too old.
 */
int kvm_check(struct kvm_check *c, const struct kvm_check_guest *g);

/*
 * Opens /dev/kvm and creates the VM with in-kernel IOAPIC/PIC/LAPIC and
 * PIT.  Fills m->irq, m->shutdown and m->priv.  NULL after one error line.
 * Block SIGINT/SIGTERM/SIGHUP before any thread starts and call this
 * before starting any thread either: it installs the vCPU kick handler.
 */
struct kvm_vm *kvm_vm_new(struct machine *m);
/* Largest -smp the host's KVM accepts. */
unsigned kvm_max_vcpus(struct kvm_vm *vm);
/* Anonymous RAM at gpa, registered with KVM and added to m->mem. */
int kvm_vm_add_ram(struct kvm_vm *vm, uint64_t gpa, uint64_t size);
/* Creates m->ncpus vCPUs; the first starts at entry, the others wait for SIPI. */
int kvm_vcpus_create(struct kvm_vm *vm, const struct x86_cpu_entry *entry);
int kvm_vcpus_start(struct kvm_vm *vm);
/*
 * Readable once m->shutdown() has been called; then kvm_vm_stop() joins
 * the vCPU threads and returns the status shutdown() was given.
 */
int kvm_vm_done_fd(struct kvm_vm *vm);
int kvm_vm_stop(struct kvm_vm *vm, const char **why);
void kvm_vm_free(struct kvm_vm *vm);

#endif
