/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_ARM64_H
#define BRISK_ACCEL_KVM_ARM64_H

#include <stdint.h>

struct kvm_vm;

/*
 * Where the boot vCPU starts (Documentation/arch/arm64/booting.rst): EL1h
 * with the MMU and caches off, interrupts masked, x0 the device tree's
 * address, x1-x3 zero.
 */
struct cpu_entry {
	uint64_t pc;
	uint64_t x0;
};

/*
 * Where the board puts the in-kernel GICv3: the distributor (64 KiB), the
 * redistributors (128 KiB per vCPU from redist_base, redist_size bytes in
 * all) and the ITS (128 KiB; 0 for none).  nr_irqs counts every interrupt
 * id, the 32 private ones included (a multiple of 32).
 */
struct kvm_arm_gic_layout {
	uint64_t dist_base;
	uint64_t redist_base, redist_size;
	uint64_t its_base;
	unsigned nr_irqs;
};

/*
 * The MPIDR affinity KVM gives vCPU id (Aff0: 16 per cluster, as the
 * GICv3 redistributor's target lists want; then Aff1, Aff2), which is
 * what the device tree's cpu@ reg and PSCI CPU_ON name.
 */
static inline uint64_t kvm_arm_vcpu_mpidr(unsigned id)
{
	return (id & 0xf) | ((uint64_t)(id >> 4) & 0xff) << 8 |
	       ((uint64_t)(id >> 12) & 0xff) << 16;
}

#define KVM_ARM_GICD_SIZE 0x10000ull
#define KVM_ARM_GICR_STRIDE 0x20000ull	/* RD_base + SGI_base frames */
#define KVM_ARM_GITS_SIZE 0x20000ull
#define KVM_ARM_GITS_TRANSLATER 0x10040ull

/*
 * Creates the vGICv3 (and its ITS when its_base != 0) before the vCPUs;
 * kvm_vcpus_create() initialises it once they all exist.  Legacy lines
 * (irq_ops.set_irq) are then SPIs numbered from 0; MSIs go through the
 * ITS.  -1 after one error line (e.g. a host without GICv3 support).
 */
int kvm_arm_gic_create(struct kvm_vm *vm, const struct kvm_arm_gic_layout *l);

#endif
