// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * An arm64 vCPU: KVM's preferred target with PSCI 0.2+, so that the guest
 * starts its secondaries with CPU_ON and powers off or resets through
 * SYSTEM_OFF/SYSTEM_RESET (KVM_EXIT_SYSTEM_EVENT, handled in ../cpu.c).
 * Every vCPU but the first is created powered off.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>

#include "../kvm-internal.h"
#include "arm64.h"
#include "hw/machine.h"
#include "util/log.h"

#define CORE_REG(field) (KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | \
			 (offsetof(struct kvm_regs, field) / sizeof(uint32_t)))
#define MPIDR_EL1 ARM64_SYS_REG(3, 0, 0, 0, 5)
#define MPIDR_AFF_MASK 0xff00ffffffull

/* EL1 with SP_EL1, debug, SError, IRQ and FIQ masked. */
#define PSR_D 0x200
#define PSR_A 0x100
#define PSR_I 0x080
#define PSR_F 0x040
#define PSR_MODE_EL1H 0x5

static int set_reg(struct kvm_vcpu *v, uint64_t id, uint64_t val)
{
	struct kvm_one_reg r = { .id = id, .addr = (uintptr_t)&val };

	return ioctl(v->fd, KVM_SET_ONE_REG, &r);
}

static int get_reg(struct kvm_vcpu *v, uint64_t id, uint64_t *val)
{
	struct kvm_one_reg r = { .id = id, .addr = (uintptr_t)val };

	return ioctl(v->fd, KVM_GET_ONE_REG, &r);
}

int kvm_arch_set_entry(struct kvm_vcpu *v, const struct cpu_entry *e)
{
	if (set_reg(v, CORE_REG(regs.pstate),
		    PSR_D | PSR_A | PSR_I | PSR_F | PSR_MODE_EL1H) < 0)
		return -1;
	for (unsigned i = 1; i < 4; i++)
		if (set_reg(v, CORE_REG(regs.regs[i]), 0) < 0)
			return -1;
	if (set_reg(v, CORE_REG(regs.regs[0]), e->x0) < 0)
		return -1;
	return set_reg(v, CORE_REG(regs.pc), e->pc);
}

int kvm_arch_vcpu_pc(struct kvm_vcpu *v, uint64_t *pc)
{
	return get_reg(v, CORE_REG(regs.pc), pc);
}

/*
 * The device tree names each CPU by its MPIDR; the board derives them from
 * the vCPU index the way KVM assigns them (kvm_arm_vcpu_mpidr()).  Check
 * that KVM agrees, or the guest would wait forever for a CPU it cannot
 * find.
 */
static int check_mpidr(struct kvm_vcpu *v)
{
	uint64_t mpidr;

	if (get_reg(v, MPIDR_EL1, &mpidr) < 0)
		return -1;
	if ((mpidr & MPIDR_AFF_MASK) != kvm_arm_vcpu_mpidr(v->id)) {
		error_report("vCPU %u: KVM gave it MPIDR %#llx, not %#llx",
			     v->id, (unsigned long long)(mpidr & MPIDR_AFF_MASK),
			     (unsigned long long)kvm_arm_vcpu_mpidr(v->id));
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int kvm_arch_vcpu_init(struct kvm_vcpu *v, const struct cpu_entry *entry)
{
	struct kvm_vcpu_init init = { 0 };
	const char *what;

	what = "KVM_ARM_PREFERRED_TARGET";
	if (ioctl(v->vm->vm_fd, KVM_ARM_PREFERRED_TARGET, &init) < 0)
		goto fail;
	init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
	if (!entry)
		init.features[0] |= 1u << KVM_ARM_VCPU_POWER_OFF;
	what = "KVM_ARM_VCPU_INIT";
	if (ioctl(v->fd, KVM_ARM_VCPU_INIT, &init) < 0)
		goto fail;
	what = "reading MPIDR_EL1";
	if (check_mpidr(v) < 0)
		goto fail;
	what = "boot register setup";
	if (entry && kvm_arch_set_entry(v, entry) < 0)
		goto fail;
	return 0;
fail:
	error_report("vCPU %u: %s failed: %s", v->id, what, strerror(errno));
	return -1;
}

bool kvm_arch_vcpu_exit(struct kvm_vcpu *v)
{
	struct kvm_run *run = v->run;

	switch (run->exit_reason) {
	case KVM_EXIT_FAIL_ENTRY:
		kvm_vcpu_stop(v, "vCPU %u: KVM entry failed, reason 0x%llx", v->id,
			      (unsigned long long)
			      run->fail_entry.hardware_entry_failure_reason);
		return false;
	}
	kvm_vcpu_stop(v, "vCPU %u: unexpected KVM exit reason %u", v->id,
		      run->exit_reason);
	return false;
}
