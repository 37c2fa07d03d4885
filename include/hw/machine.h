/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_MACHINE_H
#define BRISK_HW_MACHINE_H

#include <stdint.h>

#include "hw/bus.h"
#include "hw/irq.h"
#include "util/guest-mem.h"

struct pci_bus;

/*
 * What every device may see of the board it sits on.  The board (hw/x86)
 * owns and fills it; accel/ fills irq; devices only register on the buses
 * and use mem/irq.
 */
struct machine {
	struct guest_mem mem;
	struct bus pio;
	struct bus mmio;
	struct irq_chip irq;
	struct pci_bus *pci;
	unsigned ncpus;
};

#endif
