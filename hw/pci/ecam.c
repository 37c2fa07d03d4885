// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ECAM (PCI Express Base Specification, "Enhanced Configuration Access
 * Mechanism"): each function's 4 KiB of config space is memory mapped, so
 * one MMIO access is one config access.  The board's device tree points
 * Linux's pci-host-ecam-generic driver here.
 */
#include <stdlib.h>

#include "hw/pci/pci.h"
#include "util/log.h"

struct pci_ecam {
	struct pci_bus *bus;
	struct bus *mmio;
	uint64_t base;
};

static uint64_t ecam_read(void *opaque, uint64_t off, unsigned size)
{
	struct pci_ecam *e = opaque;

	if (size > 4)
		return ~0ull;
	return pci_bus_config_read(e->bus, off >> 12, off & 0xfff, size);
}

static void ecam_write(void *opaque, uint64_t off, uint64_t val, unsigned size)
{
	struct pci_ecam *e = opaque;

	if (size <= 4)
		pci_bus_config_write(e->bus, off >> 12, off & 0xfff, val, size);
}

static const struct bus_ops ecam_ops = {
	.read = ecam_read,
	.write = ecam_write,
};

struct pci_ecam *pci_ecam_new(struct pci_bus *bus, struct bus *mmio,
			      uint64_t base)
{
	struct pci_ecam *e = calloc(1, sizeof(*e));

	if (!e) {
		error_report("out of memory");
		return NULL;
	}
	*e = (struct pci_ecam){ .bus = bus, .mmio = mmio, .base = base };
	if (bus_register(mmio, base, PCI_ECAM_BUS_SIZE, &ecam_ops, e) < 0) {
		error_report("pci: ECAM window at %#llx is taken",
			     (unsigned long long)base);
		free(e);
		return NULL;
	}
	return e;
}

void pci_ecam_free(struct pci_ecam *e)
{
	if (!e)
		return;
	bus_unregister(e->mmio, e->base, e);
	free(e);
}
