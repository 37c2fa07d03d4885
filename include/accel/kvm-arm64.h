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

/*
 * The guest physical address space a VM needs for a map that ends at end:
 * never under 32 bits (the least KVM gives, and the whole device map
 * below 4 GiB, the KVM check's MMIO store included).
 */
#define KVM_ARM_MIN_IPA_BITS 32
#define KVM_ARM_FIXED_IPA_BITS 40	/* KVM without KVM_CAP_ARM_VM_IPA_SIZE */

static inline unsigned kvm_arm_ipa_bits(uint64_t end)
{
	unsigned bits = KVM_ARM_MIN_IPA_BITS;

	while (bits < 64 && end > (1ull << bits))
		bits++;
	return bits;
}

/*
 * What to ask KVM_CREATE_VM for, given host_max, KVM_CAP_ARM_VM_IPA_SIZE
 * (0 where KVM lacks it): the bits to pass in the VM type, 0 for the
 * type-0 VM of a KVM without the capability (always 40 bits), -1 when
 * this host cannot hold bits.  Type 0 is never asked of a KVM that has
 * the capability: there it means 40 bits, which a host whose limit is
 * lower refuses however little RAM the guest has.
 */
static inline int kvm_arm_ipa_request(unsigned bits, int host_max)
{
	if (host_max <= 0)
		return bits <= KVM_ARM_FIXED_IPA_BITS ? 0 : -1;
	return bits <= (unsigned)host_max ? (int)bits : -1;
}

#endif
