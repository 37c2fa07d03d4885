/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_VIRTIO_PCI_GUEST_H
#define BRISK_TESTS_VIRTIO_PCI_GUEST_H

/*
 * The guest's side of a modern virtio-pci function on test-board.h's
 * board, for every test and fuzzer that drives one as a driver would:
 * its capabilities found through config cycles, then the common
 * configuration through BAR MMIO (status, feature negotiation, queue
 * layout).  virtio's layouts and values, and MSI-X's, are spelled here
 * from the specifications (VIRTIO 1.2 section 4.1, PCI 3.0 6.8.2), never
 * taken from brisk, so a wrong layout fails; the PCI header's few names
 * come from hw/pci/pci.h, as in test-board.h.  Fuzzers include it too,
 * so nothing here CHECKs: callers judge what the helpers return.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "test-board.h"

/* VIRTIO 1.2, 4.1.4.3: struct virtio_pci_common_cfg, by offset. */
enum {
	CC_DFSELECT = 0x00,	/* device_feature_select */
	CC_DF = 0x04,		/* device_feature */
	CC_GFSELECT = 0x08,	/* driver_feature_select */
	CC_GF = 0x0c,		/* driver_feature */
	CC_MSIX_CONFIG = 0x10,	/* config_msix_vector */
	CC_NUM_QUEUES = 0x12,
	CC_STATUS = 0x14,	/* device_status */
	CC_CFG_GEN = 0x15,	/* config_generation */
	CC_Q_SELECT = 0x16,
	CC_Q_SIZE = 0x18,
	CC_Q_VECTOR = 0x1a,	/* queue_msix_vector */
	CC_Q_ENABLE = 0x1c,
	CC_Q_NOTIFY_OFF = 0x1e,
	CC_Q_DESC = 0x20,
	CC_Q_DRIVER = 0x28,
	CC_Q_DEVICE = 0x30,
};

/* VIRTIO 1.2, 2.1: device status bits. */
#define DS_ACKNOWLEDGE 0x01
#define DS_DRIVER 0x02
#define DS_DRIVER_OK 0x04
#define DS_FEATURES_OK 0x08
#define DS_NEEDS_RESET 0x40

/* VIRTIO 1.2, 4.1.4: struct virtio_pci_cap after PCI's id and next bytes. */
#define VCAP_LEN 2		/* cap_len */
#define VCAP_TYPE 3		/* cfg_type */
#define VCAP_BAR 4
#define VCAP_OFFSET 8
#define VCAP_LENGTH 12
#define VCAP_NOTIFY_MULT 16	/* notify_off_multiplier (4.1.4.4) */
#define VCAP_PCI_CFG_DATA 16	/* pci_cfg_data (4.1.4.9) */
/* cfg_type values */
#define VCAP_COMMON 1
#define VCAP_NOTIFY 2
#define VCAP_ISR 3
#define VCAP_DEVICE 4
#define VCAP_PCI_CFG 5

/* PCI 3.0, 6.8.2: the MSI-X capability and a table entry. */
#define MSIX_CTRL 2		/* message control */
#define MSIX_TABLE 4		/* table offset and BIR */
#define MSIX_PBA 8		/* PBA offset and BIR */
#define MSIX_ENABLE 0x8000
#define MSIX_MASKALL 0x4000
#define MSIX_ENTRY 16		/* bytes per table entry */
#define MSIX_E_DATA 8
#define MSIX_E_CTRL 12		/* vector control: bit 0 masks */

/* What a driver learns of one function from its capability list. */
struct vpci {
	struct test_board *b;
	unsigned devfn;
	uint64_t common, isr, device, notify;	/* guest addresses; 0: none found */
	uint32_t device_len, notify_len, notify_mult;
	unsigned caps;		/* bit n: a virtio capability of cfg_type n */
	unsigned pci_cfg;	/* where VCAP_PCI_CFG's capability is; 0: nowhere */
	unsigned msix_cap, msix_n, msix_bir;	/* msix_bir: the table's BAR */
	uint64_t msix_table, msix_pba;
};

/* One capability: PCI's id and next, and a virtio capability's fields. */
struct vpci_cap {
	unsigned id, next;
	unsigned len, type, bar;	/* cap_len, cfg_type, bar: virtio's only */
	uint32_t offset, length;
};

static inline uint64_t vpci_mmio_read(struct test_board *b, uint64_t a, unsigned size)
{
	uint64_t v = 0;

	bus_read(&b->m.mmio, a, &v, size);
	return v;
}

static inline void vpci_mmio_write(struct test_board *b, uint64_t a, uint64_t v, unsigned size)
{
	bus_write(&b->m.mmio, a, v, size);
}

/* The first capability's position; 0 when the function has none. */
static inline unsigned vpci_cap_first(struct test_board *b, unsigned devfn)
{
	return cfg_read(b, devfn, PCI_CAPABILITY_LIST, 1) & 0xfc;
}

static inline void vpci_cap_read(struct test_board *b, unsigned devfn, unsigned pos,
				 struct vpci_cap *c)
{
	memset(c, 0, sizeof(*c));
	c->id = cfg_read(b, devfn, pos, 1);
	c->next = cfg_read(b, devfn, pos + 1, 1) & 0xfc;
	if (c->id != PCI_CAP_ID_VNDR)
		return;
	c->len = cfg_read(b, devfn, pos + VCAP_LEN, 1);
	c->type = cfg_read(b, devfn, pos + VCAP_TYPE, 1);
	c->bar = cfg_read(b, devfn, pos + VCAP_BAR, 1);
	c->offset = cfg_read(b, devfn, pos + VCAP_OFFSET, 4);
	c->length = cfg_read(b, devfn, pos + VCAP_LENGTH, 4);
}

/*
 * Walks devfn's capability list and fills p with what it finds, addresses
 * from where the BARs are now; reads only, so it changes nothing in the
 * device.  The walk ends after 48 capabilities (all that fit in config
 * space), so a list that loops cannot hang it.
 */
static inline void vpci_probe(struct test_board *b, unsigned devfn, struct vpci *p)
{
	struct vpci_cap c;
	unsigned n = 0;

	memset(p, 0, sizeof(*p));
	p->b = b;
	p->devfn = devfn;
	for (unsigned pos = vpci_cap_first(b, devfn); pos && n++ < 48; pos = c.next) {
		vpci_cap_read(b, devfn, pos, &c);
		if (c.id == PCI_CAP_ID_MSIX) {
			uint32_t tbl = cfg_read(b, devfn, pos + MSIX_TABLE, 4);
			uint32_t pba = cfg_read(b, devfn, pos + MSIX_PBA, 4);

			p->msix_cap = pos;
			p->msix_n = (cfg_read(b, devfn, pos + MSIX_CTRL, 2) & 0x7ff) + 1;
			p->msix_bir = tbl & 7;
			p->msix_table = bar_addr(b, devfn, tbl & 7) + (tbl & ~7u);
			p->msix_pba = bar_addr(b, devfn, pba & 7) + (pba & ~7u);
			continue;
		}
		if (c.id != PCI_CAP_ID_VNDR || c.type >= 32)
			continue;
		p->caps |= 1u << c.type;
		if (c.type == VCAP_PCI_CFG) {	/* a window, not a region */
			p->pci_cfg = pos;
			continue;
		}
		uint64_t a = bar_addr(b, devfn, c.bar % PCI_NUM_BARS) + c.offset;

		if (c.type == VCAP_COMMON) {
			p->common = a;
		} else if (c.type == VCAP_NOTIFY) {
			p->notify = a;
			p->notify_len = c.length;
			p->notify_mult = cfg_read(b, devfn, pos + VCAP_NOTIFY_MULT, 4);
		} else if (c.type == VCAP_ISR) {
			p->isr = a;
		} else if (c.type == VCAP_DEVICE) {
			p->device = a;
			p->device_len = c.length;
		}
	}
}

static inline void vpci_msix_ctrl(struct vpci *p, uint16_t ctrl)
{
	cfg_write(p->b, p->devfn, p->msix_cap + MSIX_CTRL, ctrl, 2);
}

/* Entry v of the MSI-X table: the message and its mask. */
static inline void vpci_msix_entry(struct vpci *p, unsigned v, uint32_t addr, uint32_t data,
				   bool masked)
{
	uint64_t e = p->msix_table + MSIX_ENTRY * v;

	vpci_mmio_write(p->b, e, addr, 4);
	vpci_mmio_write(p->b, e + 4, 0, 4);
	vpci_mmio_write(p->b, e + MSIX_E_DATA, data, 4);
	vpci_mmio_write(p->b, e + MSIX_E_CTRL, masked, 4);
}

/* ---- the common configuration ---- */

static inline uint64_t cc_read(struct vpci *p, unsigned off, unsigned size)
{
	return vpci_mmio_read(p->b, p->common + off, size);
}

static inline void cc_write(struct vpci *p, unsigned off, uint64_t v, unsigned size)
{
	vpci_mmio_write(p->b, p->common + off, v, size);
}

static inline uint8_t vpci_status(struct vpci *p)
{
	return (uint8_t)cc_read(p, CC_STATUS, 1);
}

static inline void vpci_set_status(struct vpci *p, uint8_t s)
{
	cc_write(p, CC_STATUS, s, 1);
}

/* The 64 feature bits the device offers, both halves. */
static inline uint64_t vpci_features(struct vpci *p)
{
	cc_write(p, CC_DFSELECT, 0, 4);
	uint64_t lo = cc_read(p, CC_DF, 4);

	cc_write(p, CC_DFSELECT, 1, 4);
	return lo | cc_read(p, CC_DF, 4) << 32;
}

/* The driver's feature bits, both halves, whatever the device offered. */
static inline void vpci_driver_features(struct vpci *p, uint64_t f)
{
	cc_write(p, CC_GFSELECT, 0, 4);
	cc_write(p, CC_GF, (uint32_t)f, 4);
	cc_write(p, CC_GFSELECT, 1, 4);
	cc_write(p, CC_GF, f >> 32, 4);
}

/*
 * VIRTIO 1.2, 3.1.1 steps 2 to 5 from ACKNOWLEDGE on: DRIVER, the offered
 * features that want holds, FEATURES_OK.  Returns the features written;
 * whether the device took them, FEATURES_OK reading back, is the
 * caller's to judge.
 */
static inline uint64_t vpci_negotiate(struct vpci *p, uint64_t want)
{
	uint64_t f;

	vpci_set_status(p, DS_ACKNOWLEDGE | DS_DRIVER);
	f = vpci_features(p) & want;
	vpci_driver_features(p, f);
	vpci_set_status(p, DS_ACKNOWLEDGE | DS_DRIVER | DS_FEATURES_OK);
	return f;
}

/*
 * Queue q's size, MSI-X vector and ring addresses (4.1.5.1.3), each
 * address in two 32-bit halves (4.1.3.1); queue_enable is left to the
 * caller.  Returns the queue's doorbell.
 */
static inline uint64_t vpci_queue_setup(struct vpci *p, unsigned q, unsigned size,
					unsigned vector, uint64_t desc, uint64_t driver,
					uint64_t device)
{
	cc_write(p, CC_Q_SELECT, q, 2);
	cc_write(p, CC_Q_SIZE, size, 2);
	cc_write(p, CC_Q_VECTOR, vector, 2);
	cc_write(p, CC_Q_DESC, (uint32_t)desc, 4);
	cc_write(p, CC_Q_DESC + 4, desc >> 32, 4);
	cc_write(p, CC_Q_DRIVER, (uint32_t)driver, 4);
	cc_write(p, CC_Q_DRIVER + 4, driver >> 32, 4);
	cc_write(p, CC_Q_DEVICE, (uint32_t)device, 4);
	cc_write(p, CC_Q_DEVICE + 4, device >> 32, 4);
	return p->notify + cc_read(p, CC_Q_NOTIFY_OFF, 2) * p->notify_mult;
}

#endif
