/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_PCI_PCI_H
#define BRISK_HW_PCI_PCI_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/bus.h"
#include "hw/irq.h"

/*
 * PCI bus 0 behind a host bridge at 00:00.0, configured through type-1
 * access on ports 0xcf8/0xcfc of pio (pio NULL: none; the board attaches
 * ECAM instead, pci_ecam_new()).  BARs are placed by brisk (there is no
 * firmware) inside the MMIO window [mmio_base, mmio_base + mmio_size),
 * which the board keeps out of RAM and tells the guest about.
 */
struct pci_bus *pci_bus_new(struct bus *pio, struct bus *mmio,
			    const struct irq_chip *irq,
			    uint64_t mmio_base, uint64_t mmio_size);
void pci_bus_free(struct pci_bus *bus);

/*
 * A config access to function devfn (slot << 3 | function) of bus 0, as
 * any mechanism decodes it: len 1, 2 or 4, aligned to len.  Registers
 * past the 256 bytes brisk models read as 0 up to 4 KiB (no extended
 * capabilities) and ignore writes; an absent function reads all ones.
 */
uint32_t pci_bus_config_read(struct pci_bus *bus, unsigned devfn, unsigned reg,
			     unsigned len);
void pci_bus_config_write(struct pci_bus *bus, unsigned devfn, unsigned reg,
			  uint32_t val, unsigned len);

/*
 * PCIe enhanced configuration access (ECAM) for bus 0: 1 MiB at base on
 * mmio, reg = offset & 0xfff, devfn = (offset >> 12) & 0xff.
 */
#define PCI_ECAM_BUS_SIZE (1ull << 20)
struct pci_ecam;
struct pci_ecam *pci_ecam_new(struct pci_bus *bus, struct bus *mmio,
			      uint64_t base);
void pci_ecam_free(struct pci_ecam *e);

/* Type-1 configuration mechanism. */
#define PCI_CONFIG_ADDRESS 0xcf8
#define PCI_CONFIG_DATA 0xcfc

/* Type 0 header offsets. */
#define PCI_VENDOR_ID 0x00
#define PCI_DEVICE_ID 0x02
#define PCI_COMMAND 0x04
#define  PCI_COMMAND_IO 0x1
#define  PCI_COMMAND_MEMORY 0x2
#define  PCI_COMMAND_MASTER 0x4
#define  PCI_COMMAND_INTX_DISABLE 0x400
#define PCI_STATUS 0x06
#define  PCI_STATUS_CAP_LIST 0x10
#define PCI_REVISION_ID 0x08
#define PCI_CLASS_PROG 0x09
#define PCI_HEADER_TYPE 0x0e
#define PCI_BASE_ADDRESS_0 0x10
#define  PCI_BASE_ADDRESS_MEM_TYPE_64 0x04
#define  PCI_BASE_ADDRESS_MEM_PREFETCH 0x08
#define PCI_SUBSYSTEM_VENDOR_ID 0x2c
#define PCI_SUBSYSTEM_ID 0x2e
#define PCI_CAPABILITY_LIST 0x34
#define PCI_INTERRUPT_LINE 0x3c
#define PCI_INTERRUPT_PIN 0x3d

#define PCI_CAP_ID_VNDR 0x09
#define PCI_CAP_ID_MSIX 0x11

#define PCI_CFG_SPACE_SIZE 256
#define PCI_EXT_CFG_SPACE_SIZE 4096
#define PCI_NUM_BARS 6
#define PCI_MAX_SLOTS 32

/* pci_device_add_bar() flags. */
#define PCI_BAR_MEM64 0x1	/* takes two BAR registers: bar and bar + 1 */
#define PCI_BAR_PREFETCH 0x2

struct pci_bar {
	uint64_t size;		/* power of two >= 16; 0: BAR not implemented */
	unsigned flags;
	const struct bus_ops *ops;	/* offsets are relative to the BAR */
	void *opaque;
	bool mapped;		/* registered on the MMIO bus at mapped_addr */
	uint64_t mapped_addr;
};

struct msix;

/*
 * One function (function 0 of its slot).  A device embeds this, fills it
 * with pci_device_init(), pci_device_add_bar() and capabilities, then
 * plugs it with pci_register_device().  Only bits set in wmask can be
 * changed by the guest; brisk writes cfg directly while unplugged.
 */
struct pci_device {
	uint8_t cfg[PCI_CFG_SPACE_SIZE];
	uint8_t wmask[PCI_CFG_SPACE_SIZE];
	struct pci_bar bar[PCI_NUM_BARS];
	uint8_t cap_free;	/* where the next capability goes */
	uint8_t last_cap;	/* 0 while the list is empty */
	struct msix *msix;	/* set by msix_init() */
	uint8_t msix_cap;
	struct pci_bus *bus;	/* set while plugged */
	unsigned slot;
	/*
	 * Optional: a BAR was mapped, moved or unmapped (bar[].mapped and
	 * mapped_addr are current).  Called with the PCI bus lock held.
	 */
	void (*mapping_changed)(struct pci_device *d);
	/*
	 * Optional: for registers backed by device state.  Called before a
	 * guest config read (write false) may read cfg[off, off + len), and
	 * after a guest config write has updated it.  PCI bus lock held.
	 */
	void (*config_access)(struct pci_device *d, unsigned off, unsigned len,
			      bool write);
	void *opaque;		/* the device's own state */
};

/* class_code: base class << 16 | subclass << 8 | programming interface. */
void pci_device_init(struct pci_device *d, uint16_t vendor, uint16_t device,
		     uint32_t class_code, uint8_t revision,
		     uint16_t subsys_vendor, uint16_t subsys_id);
/*
 * A memory BAR of size bytes (rounded up to a power of two, at least 4 KiB
 * so no two BARs share a page).  Accesses reach ops with offsets relative
 * to the BAR while the guest keeps memory decoding on.  -1 on a bad or
 * taken index.
 */
int pci_device_add_bar(struct pci_device *d, unsigned bar, uint64_t size,
		       unsigned flags, const struct bus_ops *ops, void *opaque);
/*
 * Appends a capability of len bytes (header included) with the given id
 * and links it into the list.  Returns its config-space offset, or -1 when
 * config space is full.  The caller fills the body and sets wmask bits for
 * the fields the guest may write.
 */
int pci_device_add_cap(struct pci_device *d, uint8_t id, uint8_t len);

/*
 * Puts d in the first free slot of bus and assigns its BARs inside the
 * MMIO window, naturally aligned, with memory decoding on as firmware would
 * leave it.  -1 when the bus is full or the window too small.
 */
int pci_register_device(struct pci_bus *bus, struct pci_device *d);
void pci_unregister_device(struct pci_device *d);

/* Bus 0, function 0: what the function's MSIs are sent as. */
static inline uint32_t pci_requester_id(const struct pci_device *d)
{
	return d->slot << 3;
}


/* Little-endian helpers on config space. */
static inline void pci_set_byte(uint8_t *p, uint8_t v) { p[0] = v; }
static inline void pci_set_word(uint8_t *p, uint16_t v)
{
	p[0] = v; p[1] = v >> 8;
}
static inline void pci_set_long(uint8_t *p, uint32_t v)
{
	p[0] = v; p[1] = v >> 8; p[2] = v >> 16; p[3] = v >> 24;
}
static inline uint16_t pci_get_word(const uint8_t *p)
{
	return p[0] | p[1] << 8;
}
static inline uint32_t pci_get_long(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
