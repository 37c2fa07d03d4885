/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_H
#define BRISK_ACCEL_KVM_H

#include <stdint.h>

struct machine;
struct x86_cpu_entry;
struct kvm_vm;

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
