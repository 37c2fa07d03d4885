/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_IRQ_H
#define BRISK_HW_IRQ_H

#include <stdbool.h>
#include <stdint.h>

/*
 * What the platform offers devices for interrupts and doorbells.  accel/kvm
 * implements it with KVM_IRQ_LINE, GSI routing + KVM_IRQFD and
 * KVM_IOEVENTFD; the device tests implement it with plain eventfds, so the
 * devices never know which one they run on.
 */
struct irq_ops {
	/* Drive a board interrupt line (x86: GSI; arm64: SPI) to level. */
	void (*set_irq)(void *opaque, unsigned gsi, int level);

	/*
	 * Have writes to eventfd efd deliver the MSI (addr, data) as sent by
	 * the PCI function with requester id devid (bus << 8 | devfn; an ITS
	 * translates by it).  Returns a route handle >= 0, or -1.  route_set
	 * retargets an existing handle (the guest rewrote an MSI-X table
	 * entry).
	 */
	int (*msi_route_add)(void *opaque, int efd, uint64_t addr, uint32_t data,
			     uint32_t devid);
	int (*msi_route_set)(void *opaque, int route, uint64_t addr, uint32_t data);
	void (*msi_route_del)(void *opaque, int route);

	/*
	 * Have guest writes of len bytes to MMIO address addr signal efd
	 * instead of exiting to a vCPU thread.  When this is absent or fails,
	 * the write arrives through the bus as usual, and the device signals
	 * efd itself.
	 */
	int (*ioeventfd)(void *opaque, bool assign, uint64_t addr, unsigned len, int efd);
};

struct irq_chip {
	const struct irq_ops *ops;
	void *opaque;
};

#endif
