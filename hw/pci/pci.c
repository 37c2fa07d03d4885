// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * PCI bus 0: type-1 config access, config space with write masks, memory
 * BARs that follow the guest's programming on the MMIO bus, capability
 * list.  Locking: bus->lock serialises CONFIG_ADDRESS and every config
 * access.  A config write may re-register BARs on the MMIO bus (its
 * write lock) with bus->lock held; bus handlers run without their bus's
 * lock (hw/bus.c), so a config access that arrives over MMIO (ECAM) may
 * do so too, and the order is always bus->lock -> MMIO.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "hw/pci/msix.h"
#include "hw/pci/pci.h"
#include "util/log.h"

struct pci_bus {
	struct bus *pio, *mmio;
	const struct irq_chip *irq;
	uint64_t win_base, win_end;	/* end is exclusive */
	uint64_t win_next;		/* bump allocator for BARs */
	pthread_mutex_t lock;
	uint32_t config_address;
	struct pci_device *slot[PCI_MAX_SLOTS];
	struct pci_device host;
	bool map_error_reported;
};

#define HOST_BRIDGE_VENDOR 0x8086
#define HOST_BRIDGE_DEVICE 0x29c0
#define CLASS_HOST_BRIDGE 0x060000

void pci_device_init(struct pci_device *d, uint16_t vendor, uint16_t device,
		     uint32_t class_code, uint8_t revision,
		     uint16_t subsys_vendor, uint16_t subsys_id)
{
	*d = (struct pci_device){ .cap_free = 0x40 };
	pci_set_word(&d->cfg[PCI_VENDOR_ID], vendor);
	pci_set_word(&d->cfg[PCI_DEVICE_ID], device);
	pci_set_byte(&d->cfg[PCI_REVISION_ID], revision);
	d->cfg[PCI_CLASS_PROG] = class_code;
	d->cfg[PCI_CLASS_PROG + 1] = class_code >> 8;
	d->cfg[PCI_CLASS_PROG + 2] = class_code >> 16;
	pci_set_word(&d->cfg[PCI_SUBSYSTEM_VENDOR_ID], subsys_vendor);
	pci_set_word(&d->cfg[PCI_SUBSYSTEM_ID], subsys_id);
	/* No I/O BARs and no INTx: only memory, bus master, INTx disable. */
	pci_set_word(&d->wmask[PCI_COMMAND], PCI_COMMAND_MEMORY |
		     PCI_COMMAND_MASTER | PCI_COMMAND_INTX_DISABLE);
	/* Interrupt line is a scratch register for the OS. */
	d->wmask[PCI_INTERRUPT_LINE] = 0xff;
}

static uint64_t pow2_roundup(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

int pci_device_add_bar(struct pci_device *d, unsigned bar, uint64_t size,
		       unsigned flags, const struct bus_ops *ops, void *opaque)
{
	bool is64 = flags & PCI_BAR_MEM64;

	if (bar >= PCI_NUM_BARS || (is64 && bar + 1 >= PCI_NUM_BARS) ||
	    d->bar[bar].size || (is64 && d->bar[bar + 1].size) ||
	    size == 0 || size > (1ull << 40) || (!is64 && size > (1ull << 30)))
		return -1;
	if (bar > 0 && (d->bar[bar - 1].flags & PCI_BAR_MEM64))
		return -1;
	size = pow2_roundup(size < 4096 ? 4096 : size);
	d->bar[bar] = (struct pci_bar){
		.size = size, .flags = flags, .ops = ops, .opaque = opaque,
	};

	uint8_t low = (is64 ? PCI_BASE_ADDRESS_MEM_TYPE_64 : 0) |
		      (flags & PCI_BAR_PREFETCH ? PCI_BASE_ADDRESS_MEM_PREFETCH : 0);
	uint64_t mask = ~(size - 1);
	unsigned off = PCI_BASE_ADDRESS_0 + 4 * bar;

	pci_set_long(&d->cfg[off], low);
	pci_set_long(&d->wmask[off], (uint32_t)mask);
	if (is64)
		pci_set_long(&d->wmask[off + 4], (uint32_t)(mask >> 32));
	return 0;
}

int pci_device_add_cap(struct pci_device *d, uint8_t id, uint8_t len)
{
	unsigned off = d->cap_free;

	if (len < 2 || off + len > PCI_CFG_SPACE_SIZE)
		return -1;
	d->cfg[off] = id;
	d->cfg[off + 1] = 0;
	if (d->last_cap)
		d->cfg[d->last_cap + 1] = off;
	else
		d->cfg[PCI_CAPABILITY_LIST] = off;
	d->cfg[PCI_STATUS] |= PCI_STATUS_CAP_LIST;
	d->last_cap = off;
	/* Keep every capability dword aligned, as the spec requires. */
	d->cap_free = (off + len + 3) & ~3u;
	return off;
}

/* Guest address of BAR i as currently programmed. */
static uint64_t bar_addr(const struct pci_device *d, unsigned i)
{
	unsigned off = PCI_BASE_ADDRESS_0 + 4 * i;
	uint64_t a = pci_get_long(&d->cfg[off]) & ~0xfull;

	if (d->bar[i].flags & PCI_BAR_MEM64)
		a |= (uint64_t)pci_get_long(&d->cfg[off + 4]) << 32;
	return a;
}

static void bar_unmap(struct pci_device *d, unsigned i)
{
	struct pci_bar *b = &d->bar[i];

	if (!b->mapped)
		return;
	int ret = bus_unregister(d->bus->mmio, b->mapped_addr, b->opaque);

	assert(ret == 0);
	(void)ret;
	b->mapped = false;
}

/*
 * Bring the MMIO bus in line with the BARs and command register.  A BAR
 * the guest left at 0, at its sizing pattern, or on top of another region
 * decodes nothing, like an unassigned BAR on real hardware.
 */
static void pci_update_mappings(struct pci_device *d)
{
	bool mem_on = pci_get_word(&d->cfg[PCI_COMMAND]) & PCI_COMMAND_MEMORY;
	bool changed = false;

	for (unsigned i = 0; i < PCI_NUM_BARS; i++) {
		struct pci_bar *b = &d->bar[i];

		if (!b->size)
			continue;
		uint64_t a = bar_addr(d, i);
		bool want = mem_on && a != 0 && a + b->size - 1 > a &&
			    a != (~0ull & ~(b->size - 1)) &&
			    a != (0xffffffffull & ~(b->size - 1));

		if (b->mapped && want && b->mapped_addr == a)
			continue;
		changed |= b->mapped;
		bar_unmap(d, i);
		if (!want)
			continue;
		if (bus_register(d->bus->mmio, a, b->size, b->ops, b->opaque) < 0) {
			error_report_once(&d->bus->map_error_reported,
					  "pci: 00:%02x.0 BAR %u at %#llx overlaps another region; left unmapped",
					  d->slot, i, (unsigned long long)a);
			continue;
		}
		b->mapped = true;
		b->mapped_addr = a;
		changed = true;
	}
	if (changed && d->mapping_changed)
		d->mapping_changed(d);
}

static uint32_t pci_config_read(struct pci_device *d, unsigned off, unsigned len)
{
	uint32_t v = 0;

	if (d->config_access)
		d->config_access(d, off, len, false);
	for (unsigned i = 0; i < len; i++)
		v |= (uint32_t)d->cfg[off + i] << (8 * i);
	return v;
}

static bool overlaps(unsigned off, unsigned len, unsigned start, unsigned end)
{
	return off < end && off + len > start;
}

static void pci_config_write(struct pci_device *d, unsigned off, uint32_t val,
			     unsigned len)
{
	for (unsigned i = 0; i < len; i++) {
		uint8_t m = d->wmask[off + i];
		uint8_t b = val >> (8 * i);

		d->cfg[off + i] = (d->cfg[off + i] & ~m) | (b & m);
	}
	if (overlaps(off, len, PCI_COMMAND, PCI_COMMAND + 2) ||
	    overlaps(off, len, PCI_BASE_ADDRESS_0, PCI_BASE_ADDRESS_0 + 24))
		pci_update_mappings(d);
	if (d->msix && overlaps(off, len, d->msix_cap, d->msix_cap + 12))
		msix_config_write(d);
	if (d->config_access)
		d->config_access(d, off, len, true);
}

/* Bus 0, function 0 only; multi-function devices are not modelled. */
static struct pci_device *pci_function(struct pci_bus *bus, unsigned devfn)
{
	return devfn & 7 ? NULL : bus->slot[devfn >> 3];
}

uint32_t pci_bus_config_read(struct pci_bus *bus, unsigned devfn, unsigned reg,
			     unsigned len)
{
	uint32_t v = len == 4 ? 0xffffffffu : (1u << (len * 8)) - 1;
	struct pci_device *d;

	if (reg % len || reg + len > PCI_CFG_SPACE_SIZE || devfn > 0xff) {
		/* Extended space is empty: its first header reads 0, ending the list. */
		return reg >= PCI_CFG_SPACE_SIZE && reg < PCI_EXT_CFG_SPACE_SIZE &&
		       devfn <= 0xff && pci_function(bus, devfn) ? 0 : v;
	}
	pthread_mutex_lock(&bus->lock);
	d = pci_function(bus, devfn);
	if (d)
		v = pci_config_read(d, reg, len);
	pthread_mutex_unlock(&bus->lock);
	return v;
}

void pci_bus_config_write(struct pci_bus *bus, unsigned devfn, unsigned reg,
			  uint32_t val, unsigned len)
{
	struct pci_device *d;

	if (reg % len || reg + len > PCI_CFG_SPACE_SIZE || devfn > 0xff)
		return;
	pthread_mutex_lock(&bus->lock);
	d = pci_function(bus, devfn);
	if (d)
		pci_config_write(d, reg, val, len);
	pthread_mutex_unlock(&bus->lock);
}

/* The device CONFIG_ADDRESS selects, or NULL; register offset in *reg. */
static struct pci_device *pci_selected(struct pci_bus *bus, unsigned *reg)
{
	uint32_t a = bus->config_address;

	if (!(a & 0x80000000u) || (a >> 16) & 0xff)
		return NULL;
	*reg = a & 0xfc;
	return pci_function(bus, (a >> 8) & 0xff);
}

static uint64_t cfg_addr_read(void *opaque, uint64_t off, unsigned size)
{
	struct pci_bus *bus = opaque;
	uint32_t v;

	if (off != 0 || size != 4)
		return (1ull << (size * 8)) - 1;
	pthread_mutex_lock(&bus->lock);
	v = bus->config_address;
	pthread_mutex_unlock(&bus->lock);
	return v;
}

static void cfg_addr_write(void *opaque, uint64_t off, uint64_t val, unsigned size)
{
	struct pci_bus *bus = opaque;

	/* Only dword accesses are CONFIG_ADDRESS; byte ones are other chipset ports. */
	if (off != 0 || size != 4)
		return;
	pthread_mutex_lock(&bus->lock);
	bus->config_address = (uint32_t)val & ~3u;
	pthread_mutex_unlock(&bus->lock);
}

static uint64_t cfg_data_read(void *opaque, uint64_t off, unsigned size)
{
	struct pci_bus *bus = opaque;
	uint64_t v = (1ull << (size * 8)) - 1;
	unsigned reg = 0;

	if (size > 4 || off + size > 4)
		return v;
	pthread_mutex_lock(&bus->lock);
	struct pci_device *d = pci_selected(bus, &reg);

	if (d)
		v = pci_config_read(d, reg + off, size);
	pthread_mutex_unlock(&bus->lock);
	return v;
}

static void cfg_data_write(void *opaque, uint64_t off, uint64_t val, unsigned size)
{
	struct pci_bus *bus = opaque;
	unsigned reg = 0;

	if (size > 4 || off + size > 4)
		return;
	pthread_mutex_lock(&bus->lock);
	struct pci_device *d = pci_selected(bus, &reg);

	if (d)
		pci_config_write(d, reg + off, (uint32_t)val, size);
	pthread_mutex_unlock(&bus->lock);
}

static const struct bus_ops cfg_addr_ops = {
	.read = cfg_addr_read, .write = cfg_addr_write,
};
static const struct bus_ops cfg_data_ops = {
	.read = cfg_data_read, .write = cfg_data_write,
};

struct pci_bus *pci_bus_new(struct bus *pio, struct bus *mmio,
			    const struct irq_chip *irq,
			    uint64_t mmio_base, uint64_t mmio_size)
{
	struct pci_bus *bus = calloc(1, sizeof(*bus));

	if (!bus)
		return NULL;
	if (mmio_base + mmio_size < mmio_base) {
		error_report("pci: MMIO window %#llx+%#llx wraps",
			     (unsigned long long)mmio_base,
			     (unsigned long long)mmio_size);
		free(bus);
		return NULL;
	}
	bus->pio = pio;
	bus->mmio = mmio;
	bus->irq = irq;
	bus->win_base = bus->win_next = mmio_base;
	bus->win_end = mmio_base + mmio_size;
	pthread_mutex_init(&bus->lock, NULL);

	pci_device_init(&bus->host, HOST_BRIDGE_VENDOR, HOST_BRIDGE_DEVICE,
			CLASS_HOST_BRIDGE, 0, 0, 0);
	pci_set_word(&bus->host.wmask[PCI_COMMAND], 0);
	bus->host.wmask[PCI_INTERRUPT_LINE] = 0;
	if (pci_register_device(bus, &bus->host) < 0)
		goto fail;
	assert(bus->host.slot == 0);

	if (!pio)
		return bus;
	if (bus_register(pio, PCI_CONFIG_ADDRESS, 4, &cfg_addr_ops, bus) < 0)
		goto fail;
	if (bus_register(pio, PCI_CONFIG_DATA, 4, &cfg_data_ops, bus) < 0) {
		bus_unregister(pio, PCI_CONFIG_ADDRESS, bus);
		goto fail;
	}
	return bus;
fail:
	error_report("pci: config ports 0xcf8-0xcff are taken");
	pthread_mutex_destroy(&bus->lock);
	free(bus);
	return NULL;
}

void pci_bus_free(struct pci_bus *bus)
{
	if (!bus)
		return;
	if (bus->pio) {
		bus_unregister(bus->pio, PCI_CONFIG_DATA, bus);
		bus_unregister(bus->pio, PCI_CONFIG_ADDRESS, bus);
	}
	for (unsigned i = 0; i < PCI_MAX_SLOTS; i++)
		if (bus->slot[i])
			pci_unregister_device(bus->slot[i]);
	pthread_mutex_destroy(&bus->lock);
	free(bus);
}

/* Natural alignment keeps Linux happy to keep our assignment as is. */
static int pci_assign_bars(struct pci_bus *bus, struct pci_device *d)
{
	uint64_t next = bus->win_next;

	for (unsigned i = 0; i < PCI_NUM_BARS; i++) {
		struct pci_bar *b = &d->bar[i];
		unsigned off = PCI_BASE_ADDRESS_0 + 4 * i;

		if (!b->size)
			continue;
		uint64_t a = (next + b->size - 1) & ~(b->size - 1);

		if (a < next || a + b->size < a || a + b->size > bus->win_end)
			return -1;
		if (!(b->flags & PCI_BAR_MEM64) && a + b->size - 1 > 0xffffffffull)
			return -1;
		pci_set_long(&d->cfg[off], (pci_get_long(&d->cfg[off]) & 0xf) | (uint32_t)a);
		if (b->flags & PCI_BAR_MEM64)
			pci_set_long(&d->cfg[off + 4], a >> 32);
		next = a + b->size;
	}
	bus->win_next = next;
	return 0;
}

int pci_register_device(struct pci_bus *bus, struct pci_device *d)
{
	int ret = -1;
	const char *why = "pci: bus 0 is full";

	pthread_mutex_lock(&bus->lock);
	for (unsigned s = 0; s < PCI_MAX_SLOTS; s++) {
		if (bus->slot[s])
			continue;
		if (pci_assign_bars(bus, d) < 0) {
			why = "pci: MMIO window too small for another device";
			break;
		}
		d->bus = bus;
		d->slot = s;
		bus->slot[s] = d;
		if (d != &bus->host)
			pci_set_word(&d->cfg[PCI_COMMAND], PCI_COMMAND_MEMORY);
		pci_update_mappings(d);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&bus->lock);
	if (ret < 0)
		error_report("%s", why);
	return ret;
}

void pci_unregister_device(struct pci_device *d)
{
	struct pci_bus *bus = d->bus;

	if (!bus)
		return;
	pthread_mutex_lock(&bus->lock);
	for (unsigned i = 0; i < PCI_NUM_BARS; i++)
		bar_unmap(d, i);
	if (d->mapping_changed)
		d->mapping_changed(d);
	bus->slot[d->slot] = NULL;
	d->bus = NULL;
	pthread_mutex_unlock(&bus->lock);
}
