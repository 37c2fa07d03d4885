/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_X86_INTERNAL_H
#define BRISK_ACCEL_KVM_X86_INTERNAL_H

#include <linux/kvm.h>

struct kvm_vm_arch {
	struct kvm_cpuid2 *cpuid;	/* what the host supports */
};

void kvm_cpuid_patch(struct kvm_cpuid2 *c, unsigned max, unsigned id,
		     unsigned ncpus);

#endif
