/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_INTERNAL_H
#define BRISK_ACCEL_KVM_INTERNAL_H

#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "accel/kvm.h"
#include "util/compiler.h"

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
	uint32_t devid;
};

struct kvm_vm_arch;

struct kvm_vm {
	struct machine *m;
	int kvm_fd, vm_fd;
	size_t run_size;
	unsigned nr_slots;
	struct kvm_vm_arch *arch;	/* accel/kvm/<arch>/ */

	struct kvm_vcpu *vcpus;
	unsigned nr_vcpus;
	/*
	 * Where each vCPU's guest was when its thread stopped, for -timeout's
	 * line; written by that thread only, so a vCPU never started stays
	 * unknown.
	 */
	struct kvm_vcpu_place *stops;

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

struct kvm_cap_req {
	int cap;
	const char *name;
};

/* Default GSI routes, then m->irq. */
int kvm_irq_init(struct kvm_vm *vm);
void kvm_irq_fini(struct kvm_vm *vm);

int kvm_vcpu_init(struct kvm_vm *vm, struct kvm_vcpu *v,
		  const struct cpu_entry *entry);
void *kvm_vcpu_thread(void *opaque);
/* Ends the VM with BRISK_EXIT_FAILURE and a formatted reason. */
void kvm_vcpu_stop(struct kvm_vcpu *v, const char *fmt, ...) BRISK_PRINTF(2, 3);

/*
 * What each architecture (accel/kvm/x86/, accel/kvm/arm64/) provides.
 */
extern const struct kvm_cap_req kvm_arch_caps[];
extern const unsigned kvm_arch_nr_caps;
/* KVM_CREATE_VM's type argument for a guest whose RAM ends at ram_end. */
int kvm_arch_vm_type(struct kvm_vm *vm, uint64_t ram_end);
/* After KVM_CREATE_VM: vm->arch, in-kernel devices; before kvm_irq_init. */
int kvm_arch_vm_init(struct kvm_vm *vm);
void kvm_arch_vm_free(struct kvm_vm *vm);
/* After KVM_CREATE_VCPU and the kvm_run mmap; entry is NULL but for vCPU 0. */
int kvm_arch_vcpu_init(struct kvm_vcpu *v, const struct cpu_entry *entry);
/* Once every vCPU exists, before any runs. */
int kvm_arch_vcpus_ready(struct kvm_vm *vm);
/* The state brisk enters a kernel in; also the test guest's (check.c). */
int kvm_arch_set_entry(struct kvm_vcpu *v, const struct cpu_entry *entry);
/* The guest's program counter (x86: RIP), on the vCPU's own thread. */
int kvm_arch_vcpu_pc(struct kvm_vcpu *v, uint64_t *pc);
/*
 * An exit the common loop does not know.  Returns false once the vCPU
 * must stop; unknown exits end the VM.
 */
bool kvm_arch_vcpu_exit(struct kvm_vcpu *v);
/* The hardware feature ordinary guests need, in words ("VT-x/AMD-V"). */
extern const char kvm_arch_hw_virt[];
/* The test guest's loop time above which ordinary guests are too slow. */
extern const uint64_t kvm_arch_check_limit_ns;
/* Whether the exit in v->run is the test guest's write to addr. */
bool kvm_arch_check_done(const struct kvm_vcpu *v, uint64_t addr);
/* Fills c->module and c->cpu_virt from what the host shows. */
void kvm_arch_check_host(struct kvm_check *c);
/* Words for c->module in the verdict, e.g. "kvm_amd (AMD-V)". */
const char *kvm_arch_module_words(const struct kvm_check *c);
/*
 * The fixed GSI routes, written into e (room for KVM_ARCH_MAX_FIXED_ROUTES);
 * returns how many.  MSI routes follow them, from GSI kvm_arch_first_msi_gsi.
 */
#define KVM_ARCH_MAX_FIXED_ROUTES 48
unsigned kvm_arch_fixed_routes(struct kvm_irq_routing_entry *e);
extern const unsigned kvm_arch_first_msi_gsi;
/* MSI routes carry the requester id (an ITS translates by it). */
extern const bool kvm_arch_msi_devid;
/* irq_ops.set_irq: drive the board's legacy line to level. */
int kvm_arch_irq_line(struct kvm_vm *vm, unsigned line, int level);

#endif
