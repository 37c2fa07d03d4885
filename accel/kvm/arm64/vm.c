// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The arm64 VM: its guest address space sized for the board's RAM, and
 * the in-kernel GICv3 with an optional ITS, placed where the board says
 * (Documentation/virt/kvm/devices/arm-vgic-v3.rst, arm-vgic-its.rst).
 * The GIC is created before the vCPUs and initialised once they all
 * exist, as KVM requires.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../kvm-internal.h"
#include "arm64.h"
#include "util/log.h"

const struct kvm_cap_req kvm_arch_caps[] = {
	{ KVM_CAP_ARM_PSCI_0_2, "ARM_PSCI_0_2" },
	{ KVM_CAP_ONE_REG, "ONE_REG" },
	{ KVM_CAP_DEVICE_CTRL, "DEVICE_CTRL" },
};
const unsigned kvm_arch_nr_caps = ARRAY_SIZE(kvm_arch_caps);

/* The board's map lies below its RAM, so RAM's end bounds all of it. */
int kvm_arch_vm_type(struct kvm_vm *vm, uint64_t ram_end)
{
	unsigned bits = kvm_arm_ipa_bits(ram_end);
	int max = ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_ARM_VM_IPA_SIZE);
	int req = kvm_arm_ipa_request(bits, max);

	if (req < 0) {
		error_report("guest memory up to %#llx needs a %u-bit guest physical "
			     "address space; this host's KVM offers %d bits (lower -m)",
			     (unsigned long long)ram_end, bits,
			     max > 0 ? max : KVM_ARM_FIXED_IPA_BITS);
		return -1;
	}
	return req ? (int)KVM_VM_TYPE_ARM_IPA_SIZE(req) : 0;
}

int kvm_arch_vm_init(struct kvm_vm *vm)
{
	vm->arch = calloc(1, sizeof(*vm->arch));
	if (!vm->arch) {
		error_report("out of memory");
		return -1;
	}
	vm->arch->gic_fd = vm->arch->its_fd = -1;
	return 0;
}

void kvm_arch_vm_free(struct kvm_vm *vm)
{
	if (!vm->arch)
		return;
	if (vm->arch->its_fd >= 0)
		close(vm->arch->its_fd);
	if (vm->arch->gic_fd >= 0)
		close(vm->arch->gic_fd);
	free(vm->arch);
	vm->arch = NULL;
}

static int device_attr(int fd, uint32_t group, uint64_t attr, const void *val)
{
	struct kvm_device_attr a = {
		.group = group, .attr = attr, .addr = (uintptr_t)val,
	};

	return ioctl(fd, KVM_SET_DEVICE_ATTR, &a);
}

static int create_device(struct kvm_vm *vm, uint32_t type)
{
	struct kvm_create_device d = { .type = type };

	if (ioctl(vm->vm_fd, KVM_CREATE_DEVICE, &d) < 0)
		return -1;
	return d.fd;
}

int kvm_arm_gic_create(struct kvm_vm *vm, const struct kvm_arm_gic_layout *l)
{
	struct kvm_vm_arch *a = vm->arch;
	const char *what;

	what = "KVM_CREATE_DEVICE(VGIC_V3)";
	a->gic_fd = create_device(vm, KVM_DEV_TYPE_ARM_VGIC_V3);
	if (a->gic_fd < 0)
		goto fail;
	what = "the GIC distributor address";
	if (device_attr(a->gic_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
			KVM_VGIC_V3_ADDR_TYPE_DIST, &l->dist_base) < 0)
		goto fail;
	what = "the GIC redistributor address";
	if (device_attr(a->gic_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
			KVM_VGIC_V3_ADDR_TYPE_REDIST, &l->redist_base) < 0)
		goto fail;
	a->nr_irqs = l->nr_irqs;
	if (!l->its_base)
		return 0;
	what = "KVM_CREATE_DEVICE(VGIC_ITS)";
	a->its_fd = create_device(vm, KVM_DEV_TYPE_ARM_VGIC_ITS);
	if (a->its_fd < 0)
		goto fail;
	/* The VM asks for device ids in MSI routes once it has an ITS. */
	if (ioctl(vm->vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MSI_DEVID) <= 0) {
		error_report("this KVM's ITS takes no device ids in MSI routes "
			     "(KVM_CAP_MSI_DEVID)");
		return -1;
	}
	what = "the ITS address";
	if (device_attr(a->its_fd, KVM_DEV_ARM_VGIC_GRP_ADDR,
			KVM_VGIC_ITS_ADDR_TYPE, &l->its_base) < 0)
		goto fail;
	return 0;
fail:
	if (errno == ENODEV && a->gic_fd < 0)
		error_report("%s failed: this host's KVM has no GICv3 to offer",
			     what);
	else
		error_report("setting up %s failed: %s", what, strerror(errno));
	return -1;
}

int kvm_arch_vcpus_ready(struct kvm_vm *vm)
{
	struct kvm_vm_arch *a = vm->arch;
	uint32_t nr = a->nr_irqs;
	const char *what;

	if (a->gic_fd < 0)
		return 0;	/* the KVM check's VM needs no interrupts */
	what = "the GIC's interrupt count";
	if (device_attr(a->gic_fd, KVM_DEV_ARM_VGIC_GRP_NR_IRQS, 0, &nr) < 0)
		goto fail;
	what = "GIC initialisation";
	if (device_attr(a->gic_fd, KVM_DEV_ARM_VGIC_GRP_CTRL,
			KVM_DEV_ARM_VGIC_CTRL_INIT, NULL) < 0)
		goto fail;
	what = "ITS initialisation";
	if (a->its_fd >= 0 &&
	    device_attr(a->its_fd, KVM_DEV_ARM_VGIC_GRP_CTRL,
			KVM_DEV_ARM_VGIC_CTRL_INIT, NULL) < 0)
		goto fail;
	return 0;
fail:
	error_report("%s failed: %s", what, strerror(errno));
	return -1;
}
