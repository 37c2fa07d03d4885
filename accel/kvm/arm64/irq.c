// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * arm64 interrupt lines: a board's line n is SPI n (interrupt id 32 + n),
 * raised with KVM_IRQ_LINE; no fixed GSI routes.  MSIs are routed through
 * the ITS, which translates by the requester id, so every route carries it.
 */
#include <errno.h>
#include <sys/ioctl.h>

#include "../kvm-internal.h"
#include "arm64.h"

#define SPI_BASE 32

const unsigned kvm_arch_first_msi_gsi = 0;
const bool kvm_arch_msi_devid = true;

unsigned kvm_arch_fixed_routes(struct kvm_irq_routing_entry *e)
{
	(void)e;
	return 0;
}

int kvm_arch_irq_line(struct kvm_vm *vm, unsigned spi, int level)
{
	struct kvm_irq_level irq = { .level = !!level };

	if (!vm->arch || SPI_BASE + spi >= vm->arch->nr_irqs) {
		errno = EINVAL;
		return -1;
	}
	irq.irq = KVM_ARM_IRQ_TYPE_SPI << KVM_ARM_IRQ_TYPE_SHIFT |
		  (SPI_BASE + spi);
	return ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq);
}
