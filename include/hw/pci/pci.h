/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_PCI_PCI_H
#define BRISK_HW_PCI_PCI_H

#include <stdint.h>

#include "hw/bus.h"
#include "hw/irq.h"

/*
 * PCI bus 0 behind a host bridge at 00:00.0, configured through type-1
 * access on ports 0xcf8/0xcfc of pio.  BARs are placed by brisk (there is
 * no firmware) inside the MMIO window [mmio_base, mmio_base + mmio_size),
 * which the board keeps out of RAM and out of the e820 RAM entries.
 */
struct pci_bus *pci_bus_new(struct bus *pio, struct bus *mmio,
			    const struct irq_chip *irq,
			    uint64_t mmio_base, uint64_t mmio_size);
void pci_bus_free(struct pci_bus *bus);

#endif
