// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The PC's legacy interrupt lines: GSI 0-23 reach IOAPIC pin n, and PIC
 * pin n below 16.  As on PC chipsets, and as the MADT's interrupt source
 * override and the MP table say, the PIT's GSI 0 reaches IOAPIC pin 2;
 * pin 0 is left unused and GSI 2 is only the 8259 cascade.
 */
#include <errno.h>
#include <sys/ioctl.h>

#include "../kvm-internal.h"

#define KVM_NR_LEGACY_GSI 24		/* IOAPIC pins; 0-15 also reach the PIC */

const unsigned kvm_arch_first_msi_gsi = KVM_NR_LEGACY_GSI;
const bool kvm_arch_msi_devid = false;

_Static_assert(KVM_NR_LEGACY_GSI + 16 <= KVM_ARCH_MAX_FIXED_ROUTES,
	       "room for the legacy routes");

unsigned kvm_arch_fixed_routes(struct kvm_irq_routing_entry *e)
{
	unsigned n = 0;

	for (unsigned gsi = 0; gsi < KVM_NR_LEGACY_GSI; gsi++) {
		if (gsi < 16)
			e[n++] = (struct kvm_irq_routing_entry){
				.gsi = gsi, .type = KVM_IRQ_ROUTING_IRQCHIP,
				.u.irqchip = { .irqchip = gsi < 8 ?
					KVM_IRQCHIP_PIC_MASTER : KVM_IRQCHIP_PIC_SLAVE,
					.pin = gsi % 8 },
			};
		if (gsi == 2)
			continue;
		e[n++] = (struct kvm_irq_routing_entry){
			.gsi = gsi, .type = KVM_IRQ_ROUTING_IRQCHIP,
			.u.irqchip = { .irqchip = KVM_IRQCHIP_IOAPIC,
				       .pin = gsi == 0 ? 2 : gsi },
		};
	}
	return n;
}

int kvm_arch_irq_line(struct kvm_vm *vm, unsigned gsi, int level)
{
	struct kvm_irq_level irq = { .irq = gsi, .level = !!level };

	if (gsi >= KVM_NR_LEGACY_GSI) {
		errno = EINVAL;
		return -1;
	}
	return ioctl(vm->vm_fd, KVM_IRQ_LINE, &irq);
}
