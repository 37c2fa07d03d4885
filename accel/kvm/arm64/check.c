// SPDX-License-Identifier: GPL-2.0-or-later
/* What the KVM check (../check.c) looks at on an arm64 host. */
#include <stdio.h>
#include <unistd.h>

#include "../kvm-internal.h"

const char kvm_arch_hw_virt[] = "Linux booted at EL2";

/*
 * Hardware runs the loop in well under a millisecond, the nested arm64
 * host (QEMU's TCG emulating EL2) in about 15 ms.  No arm64 KVM is known
 * to emulate ordinary guests instruction by instruction as x86's kvm_pvm
 * does, so the limit only has to catch a /dev/kvm that barely runs.
 */
const uint64_t kvm_arch_check_limit_ns = 100 * 1000000ull;

/*
 * KVM is built into arm64 kernels as a rule; /sys/module/kvm shows it
 * either way.  A kernel started at EL1 has no KVM to offer at all, so
 * /dev/kvm existing already says it runs at EL2.
 */
void kvm_arch_check_host(struct kvm_check *c)
{
	if (access("/sys/module/kvm", F_OK) == 0)
		snprintf(c->module, sizeof(c->module), "kvm");
	snprintf(c->cpu_virt, sizeof(c->cpu_virt), "%s",
		 access("/dev/kvm", F_OK) == 0 ? "el2" : "none");
}

const char *kvm_arch_module_words(const struct kvm_check *c)
{
	return c->module[0] ? "kvm (arm64, EL2)" : "an unknown KVM";
}

/* The arm64 test guest ends with a store outside its RAM. */
bool kvm_arch_check_done(const struct kvm_vcpu *v, uint64_t addr)
{
	return v->run->exit_reason == KVM_EXIT_MMIO &&
	       v->run->mmio.is_write && v->run->mmio.phys_addr == addr;
}
