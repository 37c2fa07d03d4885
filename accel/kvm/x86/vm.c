// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The x86 VM: in-kernel IOAPIC, PIC and LAPICs, the PIT, and the CPUID
 * the host supports (each vCPU gets its own patched copy, cpu.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "../kvm-internal.h"
#include "util/log.h"
#include "x86.h"

/* KVM's real-mode helpers live in the hole, above the LAPIC page. */
#define KVM_IDENTITY_MAP_ADDR 0xfffbc000ull
#define KVM_TSS_ADDR 0xfffbd000ull

const struct kvm_cap_req kvm_arch_caps[] = {
	{ KVM_CAP_SET_TSS_ADDR, "SET_TSS_ADDR" },
	{ KVM_CAP_SET_IDENTITY_MAP_ADDR, "SET_IDENTITY_MAP_ADDR" },
	{ KVM_CAP_IRQCHIP, "IRQCHIP" },
	{ KVM_CAP_PIT2, "PIT2" },
	{ KVM_CAP_EXT_CPUID, "EXT_CPUID" },
};
const unsigned kvm_arch_nr_caps = ARRAY_SIZE(kvm_arch_caps);

/*
 * Older KVMs (Linux < 6.14) leave the TSC-deadline timer out of
 * KVM_GET_SUPPORTED_CPUID although the in-kernel LAPIC emulates it.
 * Without it the guest calibrates its LAPIC timer against the PIT, which
 * under a busy or nested host fails verification and leaves the guest
 * without high-resolution timers.
 */
static void kvm_cpuid_add_tsc_deadline(struct kvm_vm *vm)
{
	struct kvm_cpuid2 *c = vm->arch->cpuid;

	if (ioctl(vm->kvm_fd, KVM_CHECK_EXTENSION, KVM_CAP_TSC_DEADLINE_TIMER) <= 0)
		return;
	for (unsigned i = 0; i < c->nent; i++)
		if (c->entries[i].function == 1)
			c->entries[i].ecx |= 1u << 24;
}

static int kvm_get_cpuid(struct kvm_vm *vm)
{
	for (unsigned n = 128; n <= 4096; n *= 2) {
		struct kvm_cpuid2 *c;

		/* Room to add topology leaves per vCPU later. */
		c = calloc(1, sizeof(*c) + (n + 8) * sizeof(c->entries[0]));
		if (!c)
			break;
		c->nent = n;
		if (ioctl(vm->kvm_fd, KVM_GET_SUPPORTED_CPUID, c) == 0) {
			vm->arch->cpuid = c;
			kvm_cpuid_add_tsc_deadline(vm);
			return 0;
		}
		free(c);
		if (errno != E2BIG)
			break;
	}
	error_report("KVM_GET_SUPPORTED_CPUID failed: %s", strerror(errno));
	return -1;
}

int kvm_arch_vm_type(struct kvm_vm *vm, uint64_t ram_end)
{
	(void)vm, (void)ram_end;
	return 0;
}

int kvm_arch_vm_init(struct kvm_vm *vm)
{
	struct kvm_pit_config pit = { .flags = KVM_PIT_SPEAKER_DUMMY };
	uint64_t idmap = KVM_IDENTITY_MAP_ADDR;
	const char *what;

	vm->arch = calloc(1, sizeof(*vm->arch));
	if (!vm->arch) {
		error_report("out of memory");
		return -1;
	}
	if (kvm_get_cpuid(vm))
		return -1;
	what = "KVM_SET_IDENTITY_MAP_ADDR";
	if (ioctl(vm->vm_fd, KVM_SET_IDENTITY_MAP_ADDR, &idmap) < 0)
		goto fail;
	what = "KVM_SET_TSS_ADDR";
	if (ioctl(vm->vm_fd, KVM_SET_TSS_ADDR, (unsigned long)KVM_TSS_ADDR) < 0)
		goto fail;
	what = "KVM_CREATE_IRQCHIP";
	if (ioctl(vm->vm_fd, KVM_CREATE_IRQCHIP, 0) < 0)
		goto fail;
	/* The dummy speaker port 0x61 lets Linux calibrate with PIT channel 2. */
	what = "KVM_CREATE_PIT2";
	if (ioctl(vm->vm_fd, KVM_CREATE_PIT2, &pit) < 0)
		goto fail;
	return 0;
fail:
	error_report("%s failed: %s", what, strerror(errno));
	return -1;
}

void kvm_arch_vm_free(struct kvm_vm *vm)
{
	if (!vm->arch)
		return;
	free(vm->arch->cpuid);
	free(vm->arch);
	vm->arch = NULL;
}

int kvm_arch_vcpus_ready(struct kvm_vm *vm)
{
	(void)vm;
	return 0;
}
