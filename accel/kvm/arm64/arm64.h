/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_ARM64_INTERNAL_H
#define BRISK_ACCEL_KVM_ARM64_INTERNAL_H

#include <stdbool.h>

#include "accel/kvm-arm64.h"

struct kvm_vm_arch {
	int gic_fd;		/* -1 until kvm_arm_gic_create() */
	int its_fd;		/* -1 without an ITS */
	unsigned nr_irqs;
	bool its_checked_devid;
};

#endif
