/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_INTERNAL_H
#define BRISK_ACCEL_KVM_INTERNAL_H

#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "accel/kvm.h"

#define KVM_NR_LEGACY_GSI 24		/* IOAPIC pins; 0-15 also reach the PIC */
#define KVM_NR_MSI_ROUTES 1000
/* Interrupts a vCPU out of KVM_RUN; the handler only has to exist. */
#define SIG_VCPU_KICK SIGUSR1

struct kvm_vcpu {
	struct kvm_vm *vm;
	unsigned id;
	int fd;
	struct kvm_run *run;
	pthread_t thread;
	bool started;
};

struct kvm_msi_route {
	bool used;
	int efd;
	uint64_t addr;
	uint32_t data;
};

struct kvm_vm {
	struct machine *m;
	int kvm_fd, vm_fd;
	size_t run_size;
	unsigned nr_slots;
	struct kvm_cpuid2 *cpuid;	/* what the host supports */

	struct kvm_vcpu *vcpus;
	unsigned nr_vcpus;

	pthread_mutex_t route_lock;
	struct kvm_msi_route msi[KVM_NR_MSI_ROUTES];
	struct kvm_irq_routing *routing;	/* scratch for commits */
	bool irq_line_failed;

	pthread_mutex_t stop_lock;
	bool stopping;			/* atomic reads on the vCPU paths */
	int status;
	char why[256];
	int done_fd;
};

/* Default GSI routes, then m->irq. */
int kvm_irq_init(struct kvm_vm *vm);
void kvm_irq_fini(struct kvm_vm *vm);

int kvm_vcpu_init(struct kvm_vm *vm, struct kvm_vcpu *v,
		  const struct x86_cpu_entry *entry);
/* The state brisk enters a kernel in; also the test guest's (check.c). */
int kvm_vcpu_set_boot_regs(struct kvm_vcpu *v, const struct x86_cpu_entry *e);
void *kvm_vcpu_thread(void *opaque);
void kvm_cpuid_patch(struct kvm_cpuid2 *c, unsigned max, unsigned id,
		     unsigned ncpus);

#endif
