// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * PCI, MSI-X, virtio-pci and the virtio core, driven the way a guest
 * driver drives them: only through port 0xcf8/0xcfc and the MMIO bus.
 * Register offsets are spelled out here from the specifications rather
 * than taken from the implementation, so a wrong layout fails.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "hw/machine.h"
#include "hw/pci/pci.h"
#include "hw/virtio/virtio-pci.h"
#include "virtio/virtio.h"

#include "check.h"
#include "virtio-pci-guest.h"

/* Reads (and so clears) an eventfd; true if it had been signalled. */
static bool fd_fired(int fd)
{
	eventfd_t v;

	return fd >= 0 && eventfd_read(fd, &v) == 0 && v > 0;
}

/* ---- a trivial virtio device ---- */

struct testdev {
	unsigned starts, resets, config_writes;
	uint8_t config[8];
};

static void td_read_config(struct virtio_device *vdev, uint32_t off, void *buf, unsigned len)
{
	struct testdev *t = vdev->opaque;

	memcpy(buf, t->config + off, len);
}

static void td_write_config(struct virtio_device *vdev, uint32_t off, const void *buf, unsigned len)
{
	struct testdev *t = vdev->opaque;

	memcpy(t->config + off, buf, len);
	t->config_writes++;
}

static int td_start(struct virtio_device *vdev)
{
	((struct testdev *)vdev->opaque)->starts++;
	return 0;
}

static void td_reset(struct virtio_device *vdev)
{
	((struct testdev *)vdev->opaque)->resets++;
}

static const struct virtio_device_ops td_ops = {
	.read_config = td_read_config,
	.write_config = td_write_config,
	.start = td_start,
	.reset = td_reset,
};

/* ---- the "guest" ---- */

#define TD_ID 0x1f
#define TD_FEATURE0 (1ull << 0)
#define F_VERSION_1 (1ull << 32)
#define F_RING_PACKED (1ull << 34)
#define F_EVENT_IDX (1ull << 29)

static struct test_board b;
static struct testdev td;
static struct virtio_device vdev;

static uint64_t mmio_read(uint64_t addr, unsigned size)
{
	return vpci_mmio_read(&b, addr, size);
}

static void mmio_write(uint64_t addr, uint64_t val, unsigned size)
{
	vpci_mmio_write(&b, addr, val, size);
}

/* What the driver learnt from config space: the BARs as it sized them... */
static struct {
	uint64_t addr[6], size[6];
} bars;
/* ...and the virtio-pci function (virtio-pci-guest.h's probe). */
static struct vpci p;

static void test_scan(void)
{
	uint64_t v;

	/* Type-1 probe as Linux does it: CONFIG_ADDRESS reads back. */
	bus_write(&b.m.pio, 0xcf8, 0x80000000u, 4);
	bus_read(&b.m.pio, 0xcf8, &v, 4);
	CHECK_EQ(v, 0x80000000u);

	CHECK_EQ(cfg_read(&b, 0, 0x00, 2), 0x8086);
	CHECK_EQ(cfg_read(&b, 0, 0x0a, 2), 0x0600);	/* host bridge */
	CHECK_EQ(cfg_read(&b, 0, 0x0e, 1) & 0x7f, 0);	/* header type 0 */

	p.devfn = 0;
	for (unsigned dev = 1; dev < 32; dev++) {
		uint32_t vendor = cfg_read(&b, dev << 3, 0x00, 2);

		if (vendor == 0xffff)
			continue;
		CHECK(p.devfn == 0);
		p.devfn = dev << 3;
	}
	CHECK_EQ(p.devfn, 1 << 3);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x00, 4), 0x1af4u | (0x1040u + TD_ID) << 16);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x08, 1), 1);	/* revision 1: modern */
	CHECK_EQ(cfg_read(&b, p.devfn, 0x08, 4) >> 8, 0xff0000);	/* class */
	CHECK_EQ(cfg_read(&b, p.devfn, 0x2c, 2), 0x1af4);
	CHECK(cfg_read(&b, p.devfn, 0x2e, 2) >= 0x40);
	/* Empty slots, other buses, other functions, and enable bit off. */
	CHECK_EQ(cfg_read(&b, 7 << 3, 0x00, 4), 0xffffffffu);
	CHECK_EQ(cfg_read(&b, 7 << 3, 0x02, 2), 0xffff);
	CHECK_EQ(cfg_read(&b, 1 << 8, 0, 4), 0xffffffffu);
	CHECK_EQ(cfg_read(&b, p.devfn | 1, 0, 2), 0xffff);
	bus_write(&b.m.pio, 0xcf8, 0, 4);
	bus_read(&b.m.pio, 0xcfc, &v, 4);
	CHECK_EQ(v, 0xffffffffu);
	/* Byte and word reads at every offset inside 0xcfc..0xcff. */
	CHECK_EQ(cfg_read(&b, p.devfn, 0x01, 1), 0x1a);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x03, 1), (0x1040 + TD_ID) >> 8);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x02, 2), 0x1040 + TD_ID);
	/* Read-only header fields stay put. */
	cfg_write(&b, p.devfn, 0x00, 0x12345678, 4);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x00, 2), 0x1af4);
	/* The interrupt line is scratch; the pin says no INTx. */
	cfg_write(&b, p.devfn, 0x3c, 0x0b, 1);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x3c, 1), 0x0b);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x3d, 1), 0);
}

static void test_bars(void)
{
	uint16_t cmd = cfg_read(&b, p.devfn, 0x04, 2);

	CHECK(cmd & 0x2);	/* memory decoding on, as firmware leaves it */
	/* Size with decoding off, as Linux does. */
	cfg_write(&b, p.devfn, 0x04, cmd & ~0x2, 2);
	for (unsigned i = 0; i < 6; i++) {
		unsigned off = 0x10 + 4 * i;
		uint32_t orig = cfg_read(&b, p.devfn, off, 4);

		cfg_write(&b, p.devfn, off, 0xffffffff, 4);
		uint32_t mask = cfg_read(&b, p.devfn, off, 4);

		cfg_write(&b, p.devfn, off, orig, 4);
		if (mask == 0) {
			bars.size[i] = 0;
			continue;
		}
		CHECK((mask & 1) == 0);	/* memory, not I/O */
		uint64_t addr = orig & ~0xfu;
		uint64_t size_mask = mask & ~0xfull;

		if ((mask & 6) == 4) {	/* 64-bit */
			uint32_t orig_hi = cfg_read(&b, p.devfn, off + 4, 4);

			cfg_write(&b, p.devfn, off + 4, 0xffffffff, 4);
			size_mask |= (uint64_t)cfg_read(&b, p.devfn, off + 4, 4) << 32;
			cfg_write(&b, p.devfn, off + 4, orig_hi, 4);
			addr |= (uint64_t)orig_hi << 32;
		} else {
			size_mask |= 0xffffffff00000000ull;
		}
		bars.addr[i] = addr;
		bars.size[i] = ~size_mask + 1;
		if ((mask & 6) == 4)
			i++;
	}
	cfg_write(&b, p.devfn, 0x04, cmd, 2);

	CHECK_EQ(bars.size[0], 0);
	CHECK_EQ(bars.size[1], 0x1000);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x14, 4) & 0xf, 0);		/* 32-bit, not prefetchable */
	CHECK_EQ(cfg_read(&b, p.devfn, 0x20, 4) & 0xf, 0xc);	/* 64-bit prefetchable */
	CHECK_EQ(bars.size[4], 0x4000);
	CHECK_EQ(bars.size[2] | bars.size[3], 0);
	for (unsigned i = 1; i < 6; i += 3) {
		CHECK_EQ(bars.addr[i] % bars.size[i], 0);	/* naturally aligned */
		CHECK(bars.addr[i] >= BOARD_PCI_BASE &&
		      bars.addr[i] + bars.size[i] <= BOARD_PCI_BASE + BOARD_PCI_SIZE);
	}
	CHECK(bars.addr[1] + bars.size[1] <= bars.addr[4] ||
	      bars.addr[4] + bars.size[4] <= bars.addr[1]);
	/* Host bridge has no BARs. */
	cfg_write(&b, 0, 0x10, 0xffffffff, 4);
	CHECK_EQ(cfg_read(&b, 0, 0x10, 4), 0);
}

static void test_caps(void)
{
	struct vpci_cap c;
	unsigned guard = 0;

	CHECK(cfg_read(&b, p.devfn, 0x06, 2) & 0x10);
	/* Each virtio capability as it stands in the list... */
	for (unsigned ptr = vpci_cap_first(&b, p.devfn); ptr && guard++ < 48; ptr = c.next) {
		CHECK(ptr >= 0x40 && ptr < 0x100);
		vpci_cap_read(&b, p.devfn, ptr, &c);
		if (c.id != PCI_CAP_ID_VNDR)
			continue;
		if (c.type == VCAP_PCI_CFG) {	/* a window, not a region */
			CHECK_EQ(c.len, 20);
			continue;
		}
		CHECK_EQ(c.bar, 4);
		CHECK(c.offset + (uint64_t)c.length <= bars.size[c.bar % 6]);
		CHECK(c.len >= 16);
		if (c.type == VCAP_COMMON)
			CHECK(c.length >= 0x38);
		else if (c.type == VCAP_NOTIFY)
			CHECK_EQ(c.len, 20);
	}
	/* ...and what a driver makes of the list. */
	vpci_probe(&b, p.devfn, &p);
	CHECK_EQ(p.caps, 0x3e);	/* common, notify, ISR, device, pci_cfg */
	CHECK(p.msix_cap != 0);
	CHECK_EQ(p.msix_bir, 1);
	CHECK_EQ(cfg_read(&b, p.devfn, p.msix_cap + MSIX_CTRL, 2) & (MSIX_ENABLE | MSIX_MASKALL), 0);
	CHECK_EQ(p.msix_n, 3);		/* two queues + config */
	CHECK_EQ(p.notify_mult, 4);
	CHECK_EQ(p.notify_len, 8);
	CHECK_EQ(p.device_len, 8);
	/* The capability bytes are read-only. */
	cfg_write(&b, p.devfn, p.msix_cap + MSIX_TABLE, 0, 4);
	CHECK_EQ(cfg_read(&b, p.devfn, p.msix_cap + MSIX_TABLE, 4) & 7, 1);
}

#define MSI_ADDR 0xfee00000u
static uint32_t msi_data(unsigned v) { return 0x4020 + v; }

static void msix_mask(unsigned v, bool masked)
{
	mmio_write(p.msix_table + MSIX_ENTRY * v + MSIX_E_CTRL, masked, 4);
}

static void test_msix_setup(void)
{
	unsigned ctrl = p.msix_cap + MSIX_CTRL;

	/* Entries come up masked. */
	for (unsigned v = 0; v < p.msix_n; v++)
		CHECK_EQ(mmio_read(p.msix_table + MSIX_ENTRY * v + MSIX_E_CTRL, 4) & 1, 1);
	/* Enable with the function masked, program, then unmask (Linux's order). */
	vpci_msix_ctrl(&p, MSIX_ENABLE | MSIX_MASKALL);
	CHECK_EQ(cfg_read(&b, p.devfn, ctrl, 2) & (MSIX_ENABLE | MSIX_MASKALL),
		 MSIX_ENABLE | MSIX_MASKALL);
	CHECK_EQ(cfg_read(&b, p.devfn, ctrl, 2) & 0x7ff, 2);	/* table size read-only */
	for (unsigned v = 0; v < p.msix_n; v++)
		vpci_msix_entry(&p, v, MSI_ADDR, msi_data(v), false);
	CHECK_EQ(mmio_read(p.msix_table + MSIX_E_DATA, 4), msi_data(0));
	CHECK_EQ(mmio_read(p.msix_table + MSIX_ENTRY + MSIX_E_CTRL, 4), 0);
	/* No route while the function is masked... */
	CHECK(route_by_data(&b, msi_data(0)) == NULL);
	vpci_msix_ctrl(&p, MSIX_ENABLE);
	/* ...one per vector, with what the guest wrote, once unmasked. */
	for (unsigned v = 0; v < p.msix_n; v++) {
		struct board_route *r = route_by_data(&b, msi_data(v));

		CHECK(r != NULL);
		if (r) {
			CHECK_EQ(r->addr, MSI_ADDR);
			/* Bus 0: the requester id is the devfn. */
			CHECK_EQ(r->devid, p.devfn);
		}
	}
	/* Nothing pending yet, and the PBA is read-only. */
	CHECK_EQ(mmio_read(p.msix_pba, 8), 0);
	mmio_write(p.msix_pba, ~0ull, 8);
	CHECK_EQ(mmio_read(p.msix_pba, 8), 0);
	/* Out-of-table accesses are harmless. */
	mmio_write(p.msix_table + MSIX_ENTRY * p.msix_n, 1, 4);
	mmio_write(p.msix_table + 1, 1, 4);
	CHECK_EQ(mmio_read(p.msix_table + 0, 4), MSI_ADDR);
}

static void driver_handshake(uint64_t features)
{
	cc_write(&p, CC_STATUS, 0, 1);
	cc_write(&p, CC_STATUS, 1, 1);
	cc_write(&p, CC_STATUS, 1 | 2, 1);
	vpci_driver_features(&p, features);	/* offered or not */
	cc_write(&p, CC_STATUS, 1 | 2 | 8, 1);
}

static void test_features(void)
{
	CHECK_EQ(cc_read(&p, CC_NUM_QUEUES, 2), 2);
	cc_write(&p, CC_DFSELECT, 0, 4);
	CHECK_EQ(cc_read(&p, CC_DF, 4), (uint32_t)vdev.host_features);
	cc_write(&p, CC_DFSELECT, 1, 4);
	CHECK_EQ(cc_read(&p, CC_DF, 4), vdev.host_features >> 32);
	CHECK(cc_read(&p, CC_DF, 4) & 1);	/* VERSION_1 */
	cc_write(&p, CC_DFSELECT, 7, 4);
	CHECK_EQ(cc_read(&p, CC_DF, 4), 0);
	cc_write(&p, CC_DF, 0xffffffff, 4);	/* read-only */
	cc_write(&p, CC_DFSELECT, 0, 4);
	CHECK_EQ(cc_read(&p, CC_DF, 4), (uint32_t)vdev.host_features);

	/* A bit we never offered: FEATURES_OK does not stick. */
	driver_handshake(F_VERSION_1 | TD_FEATURE0 | (1ull << 5));
	CHECK_EQ(cc_read(&p, CC_STATUS, 1) & 8, 0);
	/* DRIVER_OK without FEATURES_OK does not start the device. */
	cc_write(&p, CC_STATUS, 1 | 2 | 4, 1);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1) & 4, 0);
	CHECK_EQ(td.starts, 0);
	/* A legacy driver (no VERSION_1) is refused too. */
	driver_handshake(TD_FEATURE0);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1) & 8, 0);
	/* An offered set is accepted and reads back. */
	driver_handshake(F_VERSION_1 | TD_FEATURE0 | F_RING_PACKED);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 1 | 2 | 8);
	CHECK_EQ(vdev.guest_features, F_VERSION_1 | TD_FEATURE0 | F_RING_PACKED);
	cc_write(&p, CC_GFSELECT, 1, 4);
	CHECK_EQ(cc_read(&p, CC_GF, 4), (F_VERSION_1 | F_RING_PACKED) >> 32);
	/* Features are frozen after FEATURES_OK. */
	cc_write(&p, CC_GF, 0, 4);
	CHECK_EQ(cc_read(&p, CC_GF, 4), (F_VERSION_1 | F_RING_PACKED) >> 32);
	/* Clearing status bits without reset is ignored. */
	cc_write(&p, CC_STATUS, 1, 1);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 1 | 2 | 8);
	/* Device config, little-endian, bounded. */
	CHECK_EQ(mmio_read(p.device, 8), 0x0807060504030201ull);
	CHECK_EQ(mmio_read(p.device + 4, 2), 0x0605);
	mmio_write(p.device + 6, 0xaabb, 2);
	CHECK_EQ(td.config[6], 0xbb);
	CHECK_EQ(td.config[7], 0xaa);
	mmio_write(p.device + 7, 0xaabb, 2);	/* crosses the end: dropped */
	CHECK_EQ(td.config_writes, 1);
	CHECK_EQ(mmio_read(p.device + 8, 4), 0);
	CHECK_EQ(cc_read(&p, CC_CFG_GEN, 1), 0);
}

/* Guest RAM layout for the rings. */
#define DESC_GPA 0x10000
#define DRIVER_GPA 0x20000
#define DEVICE_GPA 0x30000
#define BUF_GPA 0x40000

/*
 * vpci_queue_setup()'s writes, but queue_driver in one 8-byte access:
 * the device must take both widths the spec allows (4.1.3.1).
 */
static void queue_setup(unsigned q, unsigned size, uint64_t desc, uint64_t drv,
			uint64_t dev, unsigned vector)
{
	cc_write(&p, CC_Q_SELECT, q, 2);
	cc_write(&p, CC_Q_SIZE, size, 2);
	cc_write(&p, CC_Q_VECTOR, vector, 2);
	cc_write(&p, CC_Q_DESC, (uint32_t)desc, 4);
	cc_write(&p, CC_Q_DESC + 4, desc >> 32, 4);
	cc_write(&p, CC_Q_DRIVER, drv, 8);
	cc_write(&p, CC_Q_DEVICE, (uint32_t)dev, 4);
	cc_write(&p, CC_Q_DEVICE + 4, dev >> 32, 4);
}

static void test_packed_queue_and_kick(void)
{
	cc_write(&p, CC_Q_SELECT, 0, 2);
	CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 256);
	CHECK_EQ(cc_read(&p, CC_Q_VECTOR, 2), 0xffff);
	CHECK_EQ(cc_read(&p, CC_Q_ENABLE, 2), 0);
	cc_write(&p, CC_Q_SIZE, 512, 2);		/* grow: refused */
	CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 256);
	cc_write(&p, CC_Q_SIZE, 0, 2);
	CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 256);
	cc_write(&p, CC_Q_SIZE, 100, 2);		/* packed: any size */
	CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 100);
	cc_write(&p, CC_Q_VECTOR, 3, 2);		/* beyond the table */
	CHECK_EQ(cc_read(&p, CC_Q_VECTOR, 2), 0xffff);
	cc_write(&p, CC_MSIX_CONFIG, 0, 2);
	CHECK_EQ(cc_read(&p, CC_MSIX_CONFIG, 2), 0);

	queue_setup(0, 100, DESC_GPA, DRIVER_GPA, DEVICE_GPA, 1);
	CHECK_EQ(cc_read(&p, CC_Q_VECTOR, 2), 1);
	CHECK_EQ(cc_read(&p, CC_Q_DESC, 8), DESC_GPA);
	CHECK_EQ(cc_read(&p, CC_Q_DRIVER + 4, 4), 0);
	CHECK_EQ(cc_read(&p, CC_Q_DRIVER, 4), DRIVER_GPA);
	CHECK_EQ(cc_read(&p, CC_Q_NOTIFY_OFF, 2), 0);
	cc_write(&p, CC_Q_ENABLE, 1, 2);
	CHECK_EQ(cc_read(&p, CC_Q_ENABLE, 2), 1);
	CHECK(vdev.queues[0].vq.packed);
	/* A live queue's layout is frozen. */
	cc_write(&p, CC_Q_SIZE, 64, 2);
	cc_write(&p, CC_Q_DESC, 0x50000, 4);
	CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 100);
	CHECK_EQ(cc_read(&p, CC_Q_DESC, 4), DESC_GPA);

	queue_setup(1, 8, DESC_GPA + 0x2000, DRIVER_GPA + 0x100, DEVICE_GPA + 0x100, 2);
	CHECK_EQ(cc_read(&p, CC_Q_NOTIFY_OFF, 2), 1);
	cc_write(&p, CC_Q_ENABLE, 1, 2);
	/* An unknown queue reads as absent. */
	cc_write(&p, CC_Q_SELECT, 9, 2);
	CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 0);
	cc_write(&p, CC_Q_ENABLE, 1, 2);
	CHECK_EQ(cc_read(&p, CC_Q_ENABLE, 2), 0);

	unsigned before = b.ioeventfd_calls;

	cc_write(&p, CC_STATUS, 1 | 2 | 8 | 4, 1);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 1 | 2 | 8 | 4);
	CHECK_EQ(td.starts, 1);
	/* Both doorbells offered to the accelerator, 2 bytes wide. */
	CHECK_EQ(b.ioeventfd_calls - before, 2);
	CHECK_EQ(b.ioeventfd_last_len, 2);
	CHECK(b.ioeventfd_last_addr == p.notify + 4 || b.ioeventfd_last_addr == p.notify);

	/* It refused, so the kick exits to us and reaches kick_fd. */
	CHECK(!fd_fired(vdev.queues[0].kick_fd));
	mmio_write(p.notify + 0 * p.notify_mult, 0, 2);
	CHECK(fd_fired(vdev.queues[0].kick_fd));
	CHECK(!fd_fired(vdev.queues[1].kick_fd));
	mmio_write(p.notify + 1 * p.notify_mult, 1, 2);
	CHECK(fd_fired(vdev.queues[1].kick_fd));
	CHECK(!fd_fired(vdev.queues[0].kick_fd));
	mmio_write(p.notify + 2, 1, 2);		/* between doorbells */
	CHECK(!fd_fired(vdev.queues[0].kick_fd) && !fd_fired(vdev.queues[1].kick_fd));
}

static void notify_queue0(void)
{
	pthread_mutex_lock(&vdev.lock);
	vdev.transport->notify_queue(&vdev, 0);
	pthread_mutex_unlock(&vdev.lock);
}

static void test_msix_delivery(void)
{
	struct board_route *r1 = route_by_data(&b, msi_data(1));
	int efd = r1 ? r1->efd : -1;

	CHECK(r1 != NULL);
	/* Unmasked: straight to the eventfd. */
	notify_queue0();
	CHECK(fd_fired(efd));
	CHECK_EQ(mmio_read(p.isr, 1), 1);	/* ISR bit 0, read-to-clear */
	CHECK_EQ(mmio_read(p.isr, 1), 0);

	/* Vector masked: pending bit, no interrupt; unmask delivers. */
	msix_mask(1, true);
	notify_queue0();
	CHECK(!fd_fired(efd));
	CHECK_EQ(mmio_read(p.msix_pba, 8), 1u << 1);
	CHECK_EQ(mmio_read(p.msix_pba, 4), 1u << 1);
	msix_mask(1, false);
	CHECK(fd_fired(efd));
	CHECK_EQ(mmio_read(p.msix_pba, 8), 0);

	/* Function mask: the same through the control register. */
	vpci_msix_ctrl(&p, MSIX_ENABLE | MSIX_MASKALL);
	notify_queue0();
	CHECK(!fd_fired(efd));
	CHECK_EQ(mmio_read(p.msix_pba, 4), 1u << 1);
	vpci_msix_ctrl(&p, MSIX_ENABLE);
	CHECK(fd_fired(efd));
	CHECK_EQ(mmio_read(p.msix_pba, 4), 0);

	/* Retargeting a live vector updates its route. */
	unsigned sets = b.route_sets;

	mmio_write(p.msix_table + MSIX_ENTRY * 1, MSI_ADDR | 0x1000, 4);
	CHECK_EQ(b.route_sets, sets + 1);
	CHECK(r1 && r1->addr == (MSI_ADDR | 0x1000));
	/* Masked rewrite: the route follows on unmask. */
	msix_mask(1, true);
	mmio_write(p.msix_table + MSIX_ENTRY * 1 + MSIX_E_DATA, msi_data(1) + 0x100, 4);
	CHECK(r1 && r1->data == msi_data(1));
	msix_mask(1, false);
	CHECK(r1 && r1->data == msi_data(1) + 0x100);
	mmio_write(p.msix_table + MSIX_ENTRY * 1 + MSIX_E_DATA, msi_data(1), 4);
	CHECK(r1 && r1->data == msi_data(1));

	/* MSI-X disabled: nothing is sent (brisk has no INTx). */
	vpci_msix_ctrl(&p, 0);
	notify_queue0();
	CHECK(!fd_fired(efd));
	vpci_msix_ctrl(&p, MSIX_ENABLE);
	CHECK(!fd_fired(efd));
}

static void test_reset(void)
{
	unsigned resets = td.resets;

	mmio_write(p.notify, 0, 2);	/* a stale kick */
	cc_write(&p, CC_STATUS, 0, 1);
	CHECK_EQ(td.resets, resets + 1);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 0);
	CHECK_EQ(cc_read(&p, CC_MSIX_CONFIG, 2), 0xffff);
	CHECK_EQ(vdev.guest_features, 0);
	cc_write(&p, CC_GFSELECT, 1, 4);
	CHECK_EQ(cc_read(&p, CC_GF, 4), 0);
	CHECK_EQ(cc_read(&p, CC_GFSELECT, 4), 1);
	cc_write(&p, CC_GFSELECT, 0, 4);
	for (unsigned q = 0; q < 2; q++) {
		cc_write(&p, CC_Q_SELECT, q, 2);
		CHECK_EQ(cc_read(&p, CC_Q_ENABLE, 2), 0);
		CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 256);
		CHECK_EQ(cc_read(&p, CC_Q_VECTOR, 2), 0xffff);
		CHECK_EQ(cc_read(&p, CC_Q_DESC, 8), 0);
		CHECK_EQ(cc_read(&p, CC_Q_DEVICE, 8), 0);
		CHECK(!fd_fired(vdev.queues[q].kick_fd));
	}
}

/* Split ring, no EVENT_IDX: one request all the way to an interrupt. */
static void test_split_roundtrip(void)
{
	driver_handshake(F_VERSION_1);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1) & 8, 8);
	cc_write(&p, CC_MSIX_CONFIG, 0, 2);
	cc_write(&p, CC_Q_SELECT, 0, 2);
	cc_write(&p, CC_Q_SIZE, 100, 2);		/* split: power of two only */
	CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 256);
	queue_setup(0, 16, DESC_GPA, DRIVER_GPA, DEVICE_GPA, 1);
	CHECK_EQ(cc_read(&p, CC_Q_SIZE, 2), 16);
	cc_write(&p, CC_Q_ENABLE, 1, 2);
	CHECK_EQ(cc_read(&p, CC_Q_ENABLE, 2), 1);
	CHECK(!vdev.queues[0].vq.packed);

	/* One device-writable 64-byte buffer in descriptor 0. */
	memset(b.ram + DESC_GPA, 0, 0x1000);
	memset(b.ram + DRIVER_GPA, 0, 0x1000);
	memset(b.ram + DEVICE_GPA, 0, 0x1000);
	uint8_t *d = b.ram + DESC_GPA;
	uint64_t addr = BUF_GPA;
	uint32_t len = 64;
	uint16_t flags = 2, idx = 1, head = 0;	/* VIRTQ_DESC_F_WRITE */

	memcpy(d, &addr, 8);
	memcpy(d + 8, &len, 4);
	memcpy(d + 12, &flags, 2);
	memcpy(b.ram + DRIVER_GPA + 4, &head, 2);	/* ring[0] */
	memcpy(b.ram + DRIVER_GPA + 2, &idx, 2);	/* avail idx */

	cc_write(&p, CC_STATUS, 1 | 2 | 8 | 4, 1);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 0xf);
	mmio_write(p.notify, 0, 2);
	CHECK(fd_fired(vdev.queues[0].kick_fd));

	struct vq_elem *e = NULL;
	struct board_route *r1 = route_by_data(&b, msi_data(1));

	pthread_mutex_lock(&vdev.lock);
	int ret = virtqueue_pop(&vdev.queues[0].vq, sizeof(*e), &e);

	CHECK_EQ(ret, 1);
	if (ret == 1) {
		CHECK_EQ(e->in_num, 1);
		virtqueue_push(&vdev.queues[0].vq, e, 64);
		free(e);
	}
	virtio_notify(&vdev, 0);
	pthread_mutex_unlock(&vdev.lock);
	CHECK(r1 && fd_fired(r1->efd));
	uint16_t used_idx;

	memcpy(&used_idx, b.ram + DEVICE_GPA + 2, 2);
	CHECK_EQ(used_idx, 1);

	/* The driver suppresses interrupts: virtio_notify stays quiet. */
	flags = 1;	/* VRING_AVAIL_F_NO_INTERRUPT */
	memcpy(b.ram + DRIVER_GPA, &flags, 2);
	pthread_mutex_lock(&vdev.lock);
	virtio_notify(&vdev, 0);
	pthread_mutex_unlock(&vdev.lock);
	CHECK(r1 && !fd_fired(r1->efd));
	(void)mmio_read(p.isr, 1);
}

static void test_bar_move(void)
{
	uint64_t old = bars.addr[4];
	uint64_t new = BOARD_PCI_BASE + 0x08000000;	/* 16K aligned, free */
	uint64_t nq = p.common - old + CC_NUM_QUEUES;	/* from the BAR's start */
	unsigned bar = 0x20;

	CHECK_EQ(mmio_read(old + nq, 2), 2);
	uint16_t cmd = cfg_read(&b, p.devfn, 0x04, 2);

	cfg_write(&b, p.devfn, 0x04, cmd & ~2, 2);
	CHECK_EQ(mmio_read(old + nq, 2), 0xffff);	/* decoding off */
	cfg_write(&b, p.devfn, bar, (uint32_t)new | 0xc, 4);
	cfg_write(&b, p.devfn, bar + 4, new >> 32, 4);
	cfg_write(&b, p.devfn, 0x04, cmd, 2);
	CHECK_EQ(cfg_read(&b, p.devfn, bar, 4), (uint32_t)new | 0xc);
	CHECK_EQ(mmio_read(old + nq, 2), 0xffff);
	CHECK_EQ(mmio_read(new + nq, 2), 2);
	/* The doorbell followed. */
	mmio_write(new + (p.notify - old), 0, 2);
	CHECK(fd_fired(vdev.queues[0].kick_fd));
	/* Moved with decoding on, too; onto the MSI-X BAR it decodes nothing. */
	cfg_write(&b, p.devfn, bar, (uint32_t)bars.addr[1] | 0xc, 4);
	CHECK_EQ(mmio_read(new + nq, 2), 0xffff);
	CHECK_EQ(mmio_read(p.msix_table + MSIX_E_DATA, 4), msi_data(0));
	cfg_write(&b, p.devfn, bar, (uint32_t)old | 0xc, 4);
	CHECK_EQ(mmio_read(old + nq, 2), 2);
	bars.addr[4] = old;
}

static void test_virtio_error(void)
{
	struct board_route *r0 = route_by_data(&b, msi_data(0));

	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 0xf);
	CHECK(r0 && !fd_fired(r0->efd));
	pthread_mutex_lock(&vdev.lock);
	virtio_error(&vdev, "test: bad request %d", 1);
	pthread_mutex_unlock(&vdev.lock);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 0x4f);
	CHECK(r0 && fd_fired(r0->efd));
	CHECK_EQ(mmio_read(p.isr, 1) & 2, 2);
	/* Once: a second error sends nothing more. */
	pthread_mutex_lock(&vdev.lock);
	virtio_error(&vdev, "test: again");
	pthread_mutex_unlock(&vdev.lock);
	CHECK(r0 && !fd_fired(r0->efd));
	/* The driver cannot clear NEEDS_RESET; broken devices send no queue interrupts. */
	cc_write(&p, CC_STATUS, 0xf, 1);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 0x4f);
	struct board_route *r1 = route_by_data(&b, msi_data(1));

	pthread_mutex_lock(&vdev.lock);
	virtio_notify(&vdev, 0);
	pthread_mutex_unlock(&vdev.lock);
	CHECK(r1 && !fd_fired(r1->efd));
	/* Reset clears it. */
	cc_write(&p, CC_STATUS, 0, 1);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1), 0);
	CHECK(!vdev.broken);

	/* A queue pointing outside guest RAM: NEEDS_RESET, not a crash. */
	driver_handshake(F_VERSION_1);
	cc_write(&p, CC_MSIX_CONFIG, 0, 2);
	queue_setup(1, 8, 0x7fff0000, DRIVER_GPA, DEVICE_GPA, 2);
	cc_write(&p, CC_Q_ENABLE, 1, 2);
	CHECK_EQ(cc_read(&p, CC_Q_ENABLE, 2), 0);
	CHECK_EQ(cc_read(&p, CC_STATUS, 1) & 0x40, 0x40);
	CHECK(r0 && fd_fired(r0->efd));
	/* Queue set up before FEATURES_OK is refused the same way. */
	cc_write(&p, CC_STATUS, 0, 1);
	cc_write(&p, CC_STATUS, 1 | 2, 1);
	queue_setup(0, 8, DESC_GPA, DRIVER_GPA, DEVICE_GPA, 1);
	cc_write(&p, CC_Q_ENABLE, 1, 2);
	CHECK_EQ(cc_read(&p, CC_Q_ENABLE, 2), 0);
	cc_write(&p, CC_STATUS, 0, 1);
	(void)mmio_read(p.isr, 1);
}

/* The config-space window into BAR 4 (VIRTIO_PCI_CAP_PCI_CFG). */
static void pci_cfg_window(unsigned bar, uint32_t off, uint32_t len)
{
	cfg_write(&b, p.devfn, p.pci_cfg + VCAP_BAR, bar, 1);
	cfg_write(&b, p.devfn, p.pci_cfg + VCAP_OFFSET, off, 4);
	cfg_write(&b, p.devfn, p.pci_cfg + VCAP_LENGTH, len, 4);
}

static void test_pci_cfg(void)
{
	unsigned data = p.pci_cfg + VCAP_PCI_CFG_DATA;
	uint32_t cc = p.common - bars.addr[4];	/* in BAR 4, as the window counts */

	pci_cfg_window(4, cc + CC_NUM_QUEUES, 2);
	CHECK_EQ(cfg_read(&b, p.devfn, data, 2), 2);
	pci_cfg_window(4, cc + CC_Q_SELECT, 2);
	cfg_write(&b, p.devfn, data, 1, 4);
	CHECK_EQ(cc_read(&p, CC_Q_SELECT, 2), 1);
	pci_cfg_window(4, p.device - bars.addr[4], 4);
	CHECK_EQ(cfg_read(&b, p.devfn, data, 4), 0x04030201);
	/* Bad bar, length, alignment or range: reads 0, writes go nowhere. */
	pci_cfg_window(1, cc + CC_NUM_QUEUES, 2);
	CHECK_EQ(cfg_read(&b, p.devfn, data, 4), 0);
	pci_cfg_window(4, cc + CC_NUM_QUEUES, 3);
	CHECK_EQ(cfg_read(&b, p.devfn, data, 4), 0);
	pci_cfg_window(4, cc + CC_NUM_QUEUES + 1, 2);
	CHECK_EQ(cfg_read(&b, p.devfn, data, 4), 0);
	pci_cfg_window(4, 0x3ffe, 4);
	CHECK_EQ(cfg_read(&b, p.devfn, data, 4), 0);
	pci_cfg_window(4, 0xfffffffc, 4);
	cfg_write(&b, p.devfn, data, 0, 4);
	CHECK_EQ(cc_read(&p, CC_Q_SELECT, 2), 1);
	cc_write(&p, CC_Q_SELECT, 0, 2);
}

/*
 * An I/O thread sends queue interrupts while vCPU threads mask and unmask
 * the vector and flip memory decoding: no deadlock, and nothing is lost
 * once everything is unmasked again.
 */
static bool stress_stop;

static void *stress_notifier(void *arg)
{
	(void)arg;
	/*
	 * At least once: on a loaded host this thread may first run after
	 * the others are done, and the checks below expect an interrupt.
	 */
	do
		notify_queue0();
	while (!__atomic_load_n(&stress_stop, __ATOMIC_RELAXED));
	return NULL;
}

static void *stress_decoder(void *arg)
{
	uint16_t cmd = *(uint16_t *)arg;

	for (unsigned i = 0; i < 2000; i++) {
		/* Config access goes through the shared CONFIG_ADDRESS latch. */
		cfg_write(&b, p.devfn, 0x04, cmd & ~2, 2);
		cfg_write(&b, p.devfn, 0x04, cmd, 2);
	}
	return NULL;
}

static void test_threads(void)
{
	struct board_route *r1 = route_by_data(&b, msi_data(1));
	uint16_t cmd = cfg_read(&b, p.devfn, 0x04, 2);
	pthread_t n, d;

	driver_handshake(F_VERSION_1);
	queue_setup(0, 16, DESC_GPA, DRIVER_GPA, DEVICE_GPA, 1);
	cc_write(&p, CC_Q_ENABLE, 1, 2);
	cc_write(&p, CC_STATUS, 0xf, 1);
	__atomic_store_n(&stress_stop, false, __ATOMIC_RELAXED);
	pthread_create(&n, NULL, stress_notifier, NULL);
	pthread_create(&d, NULL, stress_decoder, &cmd);
	for (unsigned i = 0; i < 2000; i++) {
		msix_mask(1, true);
		(void)mmio_read(p.msix_pba, 8);
		msix_mask(1, false);
		(void)cc_read(&p, CC_NUM_QUEUES, 2);
	}
	pthread_join(d, NULL);
	__atomic_store_n(&stress_stop, true, __ATOMIC_RELAXED);
	pthread_join(n, NULL);
	/* An unmask that hit a decoding-off window was dropped: redo it. */
	msix_mask(1, false);
	CHECK_EQ(mmio_read(p.msix_pba, 8), 0);
	CHECK(r1 && fd_fired(r1->efd));
	CHECK(r1 && !fd_fired(r1->efd));
	CHECK_EQ(cc_read(&p, CC_NUM_QUEUES, 2), 2);
	cc_write(&p, CC_STATUS, 0, 1);
	(void)mmio_read(p.isr, 1);
}

/* Hostile guest: garbage everywhere must neither crash nor escape. */
static void test_garbage(void)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	static const unsigned sizes[] = { 1, 2, 4, 8 };

	for (unsigned i = 0; i < 20000; i++) {
		s ^= s << 13; s ^= s >> 7; s ^= s << 17;
		unsigned size = sizes[s & 3];
		uint64_t val = s * 0x2545f4914f6cdd1dull;

		switch ((s >> 2) % 4) {
		case 0:
			cfg_write(&b, p.devfn, (s >> 8) & 0xff, val, size > 4 ? 4 : size);
			break;
		case 1:
			mmio_write(bars.addr[4] + ((s >> 8) & 0x3fff), val, size);
			break;
		case 2:
			mmio_write(p.msix_table + ((s >> 8) & 0xfff), val, size);
			break;
		default:
			(void)mmio_read(bars.addr[4] + ((s >> 8) & 0x3fff), size);
			break;
		}
	}
	/* The header still identifies the device. */
	CHECK_EQ(cfg_read(&b, p.devfn, 0x00, 4), 0x1af4u | (0x1040u + TD_ID) << 16);
	CHECK_EQ(cfg_read(&b, p.devfn, 0x34, 1), 0x40);
}

int main(void)
{
	board_init(&b, 1, BOARD_RAM_SIZE);
	board_pci(&b, BOARD_PCI_BASE, BOARD_PCI_SIZE);
	/* The ports are taken now: a second bus cannot claim them. */
	struct pci_bus *dup = pci_bus_new(&b.m.pio, &b.m.mmio, &b.m.irq, BOARD_PCI_BASE,
					  BOARD_PCI_SIZE);

	CHECK(dup == NULL);
	check_case("one bus per port range");

	for (unsigned i = 0; i < 8; i++)
		td.config[i] = i + 1;
	if (virtio_device_init(&vdev, TD_ID,
			       F_VERSION_1 | F_RING_PACKED | F_EVENT_IDX | TD_FEATURE0,
			       8, 2, 256, &b.m.mem, &td_ops, &td) < 0)
		return 1;
	struct virtio_pci *vp = virtio_pci_create(&b.m, &vdev, VIRTIO_PCI_DEVICE_ID(TD_ID), 0xff0000);

	if (!vp) {
		fprintf(stderr, "virtio_pci_create failed\n");
		return 1;
	}

	RUN(test_scan());
	RUN(test_bars());
	RUN(test_caps());
	RUN(test_msix_setup());
	RUN(test_features());
	RUN(test_pci_cfg());
	RUN(test_packed_queue_and_kick());
	RUN(test_msix_delivery());
	RUN(test_reset());
	RUN(test_split_roundtrip());
	RUN(test_bar_move());
	RUN(test_virtio_error());
	RUN(test_threads());
	RUN(test_garbage());

	virtio_pci_free(vp);
	/* Unplugged: the slot is empty and the BAR gone. */
	CHECK_EQ(cfg_read(&b, 1 << 3, 0x00, 2), 0xffff);
	CHECK_EQ(cc_read(&p, CC_NUM_QUEUES, 2), 0xffff);
	virtio_device_destroy(&vdev);
	board_destroy(&b);

	check_case("unplug");
	return check_done();
}
