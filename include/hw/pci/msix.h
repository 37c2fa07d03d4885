/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_PCI_MSIX_H
#define BRISK_HW_PCI_MSIX_H

#include <stdbool.h>

#include "hw/pci/pci.h"

/*
 * MSI-X with its table and pending-bit array in a 32-bit memory BAR of its
 * own (table at offset 0, PBA after it).  Each vector owns an eventfd wired
 * to the guest through an MSI route of the bus's irq_chip, so any thread
 * interrupts the guest by writing that eventfd, without a vCPU exit.
 *
 * Call msix_init() after the device's other BARs and capabilities and
 * before pci_register_device().
 */
int msix_init(struct pci_device *d, unsigned bar, unsigned nr_vectors,
	      const struct irq_chip *irq);
void msix_free(struct pci_device *d);

unsigned msix_nr_vectors(const struct pci_device *d);

/*
 * Sends vector v, or marks it pending while it (or the whole function) is
 * masked; a pending vector is sent when unmasked.  Safe from any thread,
 * with or without the device's own lock held.  An out-of-range v or
 * MSI-X disabled does nothing (brisk offers no INTx fallback).
 */
void msix_notify(struct pci_device *d, unsigned v);

/*
 * The eventfd behind vector v, for another process to write directly (a
 * vhost-user back-end's call eventfd): each write is one message on v,
 * with no brisk thread involved.  Masking still holds: while v (or the
 * function) is masked, such writes wait and are sent at unmask, though
 * the PBA does not show them.  -1 for an out-of-range v.
 */
int msix_vector_fd(struct pci_device *d, unsigned v);

/* pci.c calls this after a guest write overlapping the MSI-X capability. */
void msix_config_write(struct pci_device *d);

#endif
