// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-net-pci through the whole stack, the test playing the guest on
 * blk-guest.h's machine (config cycles, BAR MMIO, its ring driver; the
 * NIC brought up by net-guest.h) and the network on the other side (a
 * fake back end of its own).  Expected values come from VIRTIO 1.2
 * (4.1.2, 5.1) and <linux/virtio_net.h>, and QEMU's defaults (the MAC,
 * the PCI class), never from the device.
 *
 * The device serves on m->loop, which no thread runs here: the test turns
 * it by hand, without waiting, after each kick or frame.  No check
 * depends on how long anything takes.
 */
#include <errno.h>
#include <limits.h>
#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "hw/device.h"
#include "hw/object.h"
#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio-plug.h"
#include "net/net.h"
#include "util/iothread.h"
#include "util/iov.h"

#include "capture.h"
#include "check.h"
#include "blk-guest.h"
#include "net-guest.h"
#include "timer-fd.h"

#define HDR_LEN 12		/* 5.1.6: struct virtio_net_hdr with num_buffers */
#define ETH_HDR 14
#define NUM 16
#define NEEDS_RESET 0x40
#define JUNK 0xcc
/* MSI-X vectors as vdev_init() sets them up: config 0, queue i at i + 1. */
#define VEC_CONFIG 0
#define VEC_RX 1
#define VEC_TX 2
#define FAKE_MAX 1024		/* frames the fake back end queues for the guest */
#define SENT_MAX 1024
#define HOUR_NS 3600000000000ull	/* tx=timer's wait in the tests: ended by the test */

#define BIT(b) (1ull << (b))

_Static_assert(sizeof(struct virtio_net_hdr_v1) == HDR_LEN, "VIRTIO 1.2, 5.1.6");

/* ---- the network: a back end that queues what the test gives it ---- */

struct fake_nd {
	struct netdev nd;
	uint8_t *rx[FAKE_MAX];	/* for the guest, oldest first */
	size_t rx_len[FAKE_MAX];
	unsigned rx_head, rx_n;
	unsigned sent;		/* frames from the guest */
	uint16_t tag[SENT_MAX];	/* each one's bytes 14 and 15 */
	uint8_t last[70000];	/* the last one */
	size_t last_len;
	bool refuse;		/* send() says its queue is full */
	unsigned offloads;	/* what set_offload() was last told */
	unsigned offload_calls;
	unsigned takes;		/* frames copied into the guest's buffers by take() */
	unsigned recvs;		/* frames read straight into them by recv() */
	bool slow;		/* each frame sent keeps it busy until fake_idle() */
	bool busy;		/* what tx_busy() says */
	bool idle_wanted;	/* tx_busy() said yes: fake_idle() makes tx_fd readable */
	unsigned busy_asked;
};

/* The header every frame carries (the tap back end's way), for fakes made while it is set. */
static unsigned fake_hdr_len;
/* Fakes made while it is set have recv(), as a tap has. */
static bool fake_direct;

static bool fake_send(struct netdev *nd, const struct iovec *iov, unsigned n, size_t len)
{
	struct fake_nd *f = container_of(nd, struct fake_nd, nd);
	size_t off = 0;

	CHECK(len <= sizeof(f->last));
	if (f->refuse || len > sizeof(f->last))
		return false;
	for (unsigned i = 0; i < n && off < len; i++) {
		size_t l = iov[i].iov_len < len - off ? iov[i].iov_len : len - off;

		memcpy(f->last + off, iov[i].iov_base, l);
		off += l;
	}
	CHECK_EQ(off, len);
	f->last_len = len;
	f->busy |= f->slow;
	if (f->sent < SENT_MAX)
		f->tag[f->sent] = (uint16_t)(f->last[14] | f->last[15] << 8);
	f->sent++;
	return true;
}

static size_t fake_peek(struct netdev *nd)
{
	struct fake_nd *f = container_of(nd, struct fake_nd, nd);
	eventfd_t cnt;

	if (f->rx_n)
		return f->rx_len[f->rx_head];
	/* A tap whose interface is gone: its fd stays readable for good. */
	if (nd->rx_gone)
		return 0;
	/* net.h: nothing waits, so rx_fd is left unreadable. */
	(void)eventfd_read(nd->rx_fd, &cnt);
	return 0;
}

static void fake_take(struct netdev *nd, const struct iovec *iov, unsigned n)
{
	struct fake_nd *f = container_of(nd, struct fake_nd, nd);
	uint8_t *p = f->rx[f->rx_head];
	size_t len = f->rx_len[f->rx_head], off = 0;

	CHECK(f->rx_n > 0);
	for (unsigned i = 0; iov && i < n && off < len; i++) {
		size_t l = iov[i].iov_len < len - off ? iov[i].iov_len : len - off;

		memcpy(iov[i].iov_base, p + off, l);
		off += l;
	}
	/* net.h: iov holds at least the frame. */
	CHECK(!iov || off == len);
	f->takes += iov != NULL;
	free(p);
	f->rx_head = (f->rx_head + 1) % FAKE_MAX;
	f->rx_n--;
}

/*
 * As a tap's: what fits of a frame lands in iov, and a frame that fills
 * it (cut short, or not: a tap's read cannot tell) is dropped.
 */
static size_t fake_recv(struct netdev *nd, const struct iovec *iov, unsigned n, size_t cap)
{
	struct fake_nd *f = container_of(nd, struct fake_nd, nd);
	eventfd_t cnt;

	/* net.h: only with room for the longest frame, in what one readv() takes. */
	CHECK(cap > nd->rx_max_len && cap == iov_size(iov, n) && n <= IOV_MAX);
	while (f->rx_n) {
		size_t len = f->rx_len[f->rx_head];

		iov_copy(iov, n, 0, f->rx[f->rx_head], len < cap ? len : cap, false);
		free(f->rx[f->rx_head]);
		f->rx_head = (f->rx_head + 1) % FAKE_MAX;
		f->rx_n--;
		if (len < cap) {
			f->recvs++;
			return len;
		}
		__atomic_fetch_add(&nd->rx_dropped, 1, __ATOMIC_RELAXED);
	}
	if (!nd->rx_gone)
		(void)eventfd_read(nd->rx_fd, &cnt);
	return 0;
}

static void fake_set_offload(struct netdev *nd, unsigned offloads)
{
	struct fake_nd *f = container_of(nd, struct fake_nd, nd);

	CHECK(nd->vnet_hdr_len);	/* net.h: only for back ends with the header */
	f->offloads = offloads;
	f->offload_calls++;
}

static bool fake_tx_busy(struct netdev *nd)
{
	struct fake_nd *f = container_of(nd, struct fake_nd, nd);

	f->busy_asked++;
	f->idle_wanted = f->busy;
	return f->busy;
}

/* The back end has sent every frame it was given, as its thread would say. */
static void fake_idle(struct fake_nd *f)
{
	f->busy = false;
	if (f->idle_wanted)
		CHECK(eventfd_write(f->nd.tx_fd, 1) == 0);
	f->idle_wanted = false;
}

/* Tests own the fake: the NIC must never free it. */
static void fake_free(struct netdev *nd)
{
	(void)nd;
	CHECK(!"the NIC freed a back end it does not own");
}

static const struct netdev_ops fake_ops = {
	.send = fake_send, .peek = fake_peek, .take = fake_take,
	.set_offload = fake_set_offload, .tx_busy = fake_tx_busy, .free = fake_free,
};

/* A tap's: recv(), and no thread of its own to be busy. */
static const struct netdev_ops fake_direct_ops = {
	.send = fake_send, .peek = fake_peek, .take = fake_take, .recv = fake_recv,
	.set_offload = fake_set_offload, .free = fake_free,
};

static void fake_init(struct fake_nd *f)
{
	memset(f, 0, sizeof(*f));
	f->nd.ops = fake_direct ? &fake_direct_ops : &fake_ops;
	f->nd.id = "fake";
	f->nd.vnet_hdr_len = fake_hdr_len;
	/* A tap's longest: the header, an Ethernet header, the largest IP packet. */
	f->nd.rx_max_len = fake_hdr_len + ETH_HDR + 65535;
	f->nd.rx_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->nd.tx_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(f->nd.rx_fd >= 0 && f->nd.tx_fd >= 0);
}

static void fake_destroy(struct fake_nd *f)
{
	while (f->rx_n) {
		free(f->rx[f->rx_head]);
		f->rx_head = (f->rx_head + 1) % FAKE_MAX;
		f->rx_n--;
	}
	close(f->nd.rx_fd);
	close(f->nd.tx_fd);
}

static uint8_t pattern(unsigned seed, size_t i)
{
	return (uint8_t)(seed * 31 + i * 7 + i / 251);
}

/* A frame of len bytes for the guest, rx_fd made readable as the back end would. */
static void fake_queue(struct fake_nd *f, size_t len, unsigned seed)
{
	uint8_t *p = malloc(len);

	CHECK(p && f->rx_n < FAKE_MAX);
	for (size_t i = 0; i < len; i++)
		p[i] = pattern(seed, i);
	f->rx[(f->rx_head + f->rx_n) % FAKE_MAX] = p;
	f->rx_len[(f->rx_head + f->rx_n) % FAKE_MAX] = len;
	f->rx_n++;
	CHECK(eventfd_write(f->nd.rx_fd, 1) == 0);
}

/* ---- the board, the NIC and its driver (net-guest.h), on the fake ---- */

static struct fake_nd *fake(struct net *g)
{
	return container_of(g->nd, struct fake_nd, nd);
}

static struct vnet_cfg cfg_default(bool packed)
{
	return (struct vnet_cfg){
		.ring = { .event_idx = true, .indirect_desc = true, .packed = packed },
		.rx_queue_size = 256, .tx_queue_size = 256, .tx_hold = true,
	};
}

/* The board and the NIC on a fake of its own. */
static bool net_new(struct net *g, const struct vnet_cfg *cfg)
{
	struct fake_nd *f = malloc(sizeof(*f));

	CHECK(f != NULL);
	fake_init(f);
	return nic_new(g, cfg, &f->nd);
}

static void net_free(struct net *g)
{
	struct fake_nd *f = fake(g);

	nic_free(g);
	fake_destroy(f);
	free(f);
}

/* Made and started; false after a failed check, all freed. */
static bool net_up(struct net *g, const struct vnet_cfg *cfg, unsigned num, uint64_t want)
{
	if (net_new(g, cfg) && nic_start(g, num, want))
		return true;
	CHECK(!"device started");
	net_free(g);
	return false;
}

static struct vnet_stats stats(struct net *g)
{
	struct vnet_stats s;

	vnet_get_stats(g->n, &s);
	return s;
}

/* One device-writable buffer of len bytes at slot, junk in it; its id. */
static int rx_post(struct net *g, unsigned slot, uint32_t len)
{
	struct drv_seg s = { data_gpa(slot), len, true };

	memset(slot_data(g->t, slot), JUNK, len);
	return gq_add(&g->q[RXQ], &s, 1, false, 0);
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* The header the device wrote: no offload, num_buffers as given (5.1.6.4). */
static void check_rx_hdr(const uint8_t *h, uint16_t num_buffers)
{
	CHECK_EQ(h[0], 0);					/* flags */
	CHECK_EQ(h[1], VIRTIO_NET_HDR_GSO_NONE);
	CHECK_EQ(get_le16(h + 10), num_buffers);
}

static bool frame_is(const uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != pattern(seed, i))
			return false;
	return true;
}

/* The frame spread over chains of chain bytes from slot on, as the guest reassembles it. */
static bool frame_in_chains(struct net *g, unsigned slot, uint32_t chain, size_t len,
			    unsigned seed)
{
	uint8_t *buf = malloc(len + HDR_LEN + chain);
	size_t got = 0;
	bool ok;

	for (unsigned i = 0; got < len + HDR_LEN; i++, got += chain)
		memcpy(buf + got, slot_data(g->t, slot + i), chain);
	ok = frame_is(buf + HDR_LEN, len, seed);
	free(buf);
	return ok;
}

/*
 * A frame of len bytes from the guest at slot, behind a zeroed header, in
 * parts descriptors: the header itself split 5 + 7, the second sharing
 * its descriptor with the frame's start.
 */
static int tx_add(struct net *g, unsigned slot, size_t len, unsigned parts, unsigned seed)
{
	uint64_t a = data_gpa(slot);
	uint8_t *p = slot_data(g->t, slot);
	struct drv_seg s[16];
	unsigned n = 0;
	size_t off = 0, total = HDR_LEN + len;

	memset(p, 0, HDR_LEN);
	for (size_t i = 0; i < len; i++)
		p[HDR_LEN + i] = pattern(seed, i);
	s[n++] = (struct drv_seg){ a, 5, false };
	off = 5;
	for (unsigned i = 0; i < parts && off < total; i++) {
		size_t l = i + 1 < parts ? (total - off) / (parts - i) : total - off;

		if (i == 0 && l < 7 + 1)
			l = total - off < 8 ? total - off : 8;
		s[n++] = (struct drv_seg){ a + off, (uint32_t)l, false };
		off += l;
	}
	return gq_add(&g->q[TXQ], s, n, false, 0);
}

static int tx_send(struct net *g, unsigned slot, size_t len, unsigned parts, unsigned seed)
{
	int id = tx_add(g, slot, len, parts, seed);

	gq_kick(&g->q[TXQ]);
	nic_turn(g);
	return id;
}

/* ---- 1: identity, features, config space ---- */

static uint64_t dev_cfg(struct net *g, struct vdev *d, unsigned off, unsigned size)
{
	return mmio_read(g->t, d->pci.device + off, size);
}

static void check_mac(struct net *g, struct vdev *d, const uint8_t mac[6])
{
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(dev_cfg(g, d, i, 1), mac[i]);
}

static void test_identity(void)
{
	static const uint8_t qemu_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;
	uint64_t f;

	if (!net_new(&g, &cfg)) {
		CHECK(!"device found");
		net_free(&g);
		return;
	}
	CHECK_EQ(cfg_read(&g.t->b, g.d.pci.devfn, 0x00, 2), 0x1af4);
	CHECK_EQ(cfg_read(&g.t->b, g.d.pci.devfn, 0x02, 2), NET_PCI_ID);
	CHECK(cfg_read(&g.t->b, g.d.pci.devfn, 0x08, 1) >= 1);	/* 4.1.2.1: revision 1+ */
	CHECK_EQ(cfg_read(&g.t->b, g.d.pci.devfn, 0x08, 4) >> 8, NET_CLASS);
	f = dev_features(&g.d);
	CHECK(f & BIT(VIRTIO_NET_F_MAC));
	CHECK(f & BIT(VIRTIO_NET_F_STATUS));
	CHECK(f & BIT(VIRTIO_NET_F_MRG_RXBUF));
	CHECK(f & BIT(VIRTIO_F_VERSION_1));
	CHECK(f & BIT(VIRTIO_RING_F_EVENT_IDX));
	CHECK(f & BIT(VIRTIO_RING_F_INDIRECT_DESC));
	CHECK(!(f & BIT(VIRTIO_NET_F_MTU)));
	CHECK(!(f & BIT(VIRTIO_F_RING_PACKED)));
	/* No offloads the back end could not honour, no queue it does not have. */
	CHECK(!(f & (BIT(VIRTIO_NET_F_CSUM) | BIT(VIRTIO_NET_F_GUEST_CSUM) |
		     BIT(VIRTIO_NET_F_GUEST_TSO4) | BIT(VIRTIO_NET_F_HOST_TSO4) |
		     BIT(VIRTIO_NET_F_CTRL_VQ) | BIT(VIRTIO_NET_F_MQ))));
	CHECK_EQ(cc_read(&g.d.pci, CC_NUM_QUEUES, 2), 2);	/* receiveq1, transmitq1 */
	for (unsigned q = 0; q < 2; q++) {
		cc_write(&g.d.pci, CC_Q_SELECT, q, 2);
		CHECK_EQ(cc_read(&g.d.pci, CC_Q_SIZE, 2), 256);	/* QEMU's default */
	}
	/* 5.1.4: mac, status, max_virtqueue_pairs, little-endian. */
	CHECK(g.d.pci.device && g.d.pci.device_len >= 10);
	check_mac(&g, &g.d, qemu_mac);
	CHECK_EQ(dev_cfg(&g, &g.d, 6, 2), VIRTIO_NET_S_LINK_UP);
	CHECK_EQ(dev_cfg(&g, &g.d, 8, 2), 1);

	/* The board's next NIC without mac= takes the next address. */
	struct vdev d2;
	uint8_t next_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x57 };
	struct fake_nd f2;

	fake_init(&f2);
	struct vnet *n2 = vnet_create(&g.t->b.m, &cfg,
				      virtio_pci_plug(&g.t->b.m, NET_CLASS), &f2.nd);

	CHECK(n2 && vdev_find_id(g.t, NET_PCI_ID, 1, &d2));
	if (n2)
		check_mac(&g, &d2, next_mac);
	vnet_free(n2);
	fake_destroy(&f2);
	net_free(&g);
}

/* host_mtu= offers VIRTIO_NET_F_MTU with its value; mac= is the NIC's. */
static void test_mtu_mac(void)
{
	static const uint8_t mac[6] = { 0x02, 0x11, 0x22, 0xaa, 0xbb, 0xcc };
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;

	cfg.host_mtu = 1400;
	cfg.mac_set = true;
	memcpy(cfg.mac, mac, 6);
	cfg.rx_queue_size = 1024;
	cfg.tx_queue_size = 512;
	if (!net_new(&g, &cfg)) {
		CHECK(!"device found");
		net_free(&g);
		return;
	}
	CHECK(dev_features(&g.d) & BIT(VIRTIO_NET_F_MTU));
	CHECK(g.d.pci.device_len >= 12);
	CHECK_EQ(dev_cfg(&g, &g.d, 10, 2), 1400);
	check_mac(&g, &g.d, mac);
	CHECK_EQ(dev_cfg(&g, &g.d, 6, 2), VIRTIO_NET_S_LINK_UP);
	cc_write(&g.d.pci, CC_Q_SELECT, RXQ, 2);
	CHECK_EQ(cc_read(&g.d.pci, CC_Q_SIZE, 2), 1024);
	cc_write(&g.d.pci, CC_Q_SELECT, TXQ, 2);
	CHECK_EQ(cc_read(&g.d.pci, CC_Q_SIZE, 2), 512);
	/* The MAC is read-only without CTRL_MAC_ADDR: a write changes nothing. */
	mmio_write(g.t, g.d.pci.device, 0xff, 1);
	check_mac(&g, &g.d, mac);
	net_free(&g);
}

/*
 * VIRTIO 1.2, 5.1.6.3.2: with VIRTIO_NET_F_MTU negotiated, no frame longer
 * than host_mtu plus its 14-byte Ethernet header reaches the driver; one
 * that long does, and without F_MTU the longer one does too.
 */
static void test_mtu_rx(bool negotiate)
{
	struct vnet_cfg cfg = cfg_default(false);
	uint64_t want = negotiate ? ALL_FEATURES : ALL_FEATURES & ~BIT(VIRTIO_NET_F_MTU);
	struct net g;
	uint32_t len = 0;

	cfg.host_mtu = 1400;
	if (!net_up(&g, &cfg, NUM, want))
		return;
	for (unsigned i = 0; i < 4; i++)
		rx_post(&g, i, 2048);
	gq_kick(&g.q[RXQ]);
	fake_queue(fake(&g), 1400 + 14 + 1, 50);
	fake_queue(fake(&g), 1400 + 14, 51);
	nic_turn(&g);
	CHECK_EQ(stats(&g).rx_dropped, negotiate ? 1 : 0);
	if (!negotiate) {
		CHECK(gq_get_used(&g.q[RXQ], &len) >= 0 && len == HDR_LEN + 1415);
	}
	CHECK(gq_get_used(&g.q[RXQ], &len) >= 0 && len == HDR_LEN + 1414);
	CHECK_EQ(fake(&g)->rx_n, 0);
	net_free(&g);
}

/* ---- 2: transmit ---- */

static void test_tx(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	struct net g;
	uint32_t len = 1;
	int id;

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	id = tx_send(&g, 0, 1000, 4, 1);
	CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id);
	CHECK_EQ(len, 0);			/* 5.1.6.2: nothing written */
	CHECK_EQ(fake(&g)->sent, 1);
	CHECK_EQ(fake(&g)->last_len, 1000);		/* no header */
	CHECK(frame_is(fake(&g)->last, 1000, 1));
	CHECK(irq_take(&g.d, VEC_TX, 0) > 0);
	CHECK(gq_kicks_on(&g.q[TXQ]));
	/* Indirect, one descriptor for header and frame alike. */
	struct drv_seg s = { data_gpa(1), HDR_LEN + 60, false };

	memset(slot_data(g.t, 1), 0, HDR_LEN);
	for (unsigned i = 0; i < 60; i++)
		slot_data(g.t, 1)[HDR_LEN + i] = pattern(2, i);
	id = gq_add(&g.q[TXQ], &s, 1, true, IND_AREA);
	gq_kick(&g.q[TXQ]);
	nic_turn(&g);
	CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id && len == 0);
	CHECK(fake(&g)->sent == 2 && fake(&g)->last_len == 60 && frame_is(fake(&g)->last, 60, 2));
	CHECK_EQ(stats(&g).tx_frames, 2);
	CHECK_EQ(stats(&g).tx_dropped, 0);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/*
 * Frames no Ethernet can carry (shorter than its header, longer than
 * 64 KiB behind it) and frames the back end refuses are dropped and
 * counted; each chain is still used, and the device stays up.
 */
static void test_tx_drop(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;
	uint32_t len;
	int id;

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	id = tx_send(&g, 0, ETH_HDR - 1, 1, 0);
	CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id && len == 0);
	id = tx_send(&g, 0, 0, 1, 0);		/* a header and nothing else */
	CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id && len == 0);
	id = tx_send(&g, 2, 65535 + ETH_HDR + 1, 2, 0);	/* spans slots 2 and 3 */
	CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id && len == 0);
	CHECK_EQ(fake(&g)->sent, 0);
	CHECK_EQ(stats(&g).tx_dropped, 3);
	/* The largest there may be goes through. */
	id = tx_send(&g, 2, 65535 + ETH_HDR, 2, 3);
	CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id && len == 0);
	CHECK(fake(&g)->sent == 1 && fake(&g)->last_len == 65535 + ETH_HDR &&
	      frame_is(fake(&g)->last, 65535 + ETH_HDR, 3));
	fake(&g)->refuse = true;
	id = tx_send(&g, 0, 100, 1, 0);
	CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id && len == 0);
	CHECK_EQ(stats(&g).tx_dropped, 4);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/* ---- 3: receive ---- */

/* Without MRG_RXBUF: the frame in one buffer after the header, num_buffers 1. */
static void test_rx_one(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	struct net g;
	uint32_t len = 0;
	uint8_t *p;
	int id;

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES & ~BIT(VIRTIO_NET_F_MRG_RXBUF)))
		return;
	id = rx_post(&g, 0, 2048);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);	/* nothing to give yet */
	fake_queue(fake(&g), 1000, 5);
	nic_turn(&g);
	CHECK(id >= 0 && gq_get_used(&g.q[RXQ], &len) == id);
	CHECK_EQ(len, HDR_LEN + 1000);
	p = slot_data(g.t, 0);
	check_rx_hdr(p, 1);
	CHECK(frame_is(p + HDR_LEN, 1000, 5));
	CHECK_EQ(p[HDR_LEN + 1000], JUNK);		/* nothing beyond */
	CHECK(irq_take(&g.d, VEC_RX, 0) > 0);
	CHECK_EQ(fake(&g)->rx_n, 0);
	/* A chain shorter than the longest frame: copied, never read straight in. */
	CHECK_EQ(fake(&g)->takes, 1);
	CHECK_EQ(stats(&g).rx_frames, 1);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/*
 * With MRG_RXBUF and 128-byte buffers, a 1000-byte frame takes eight of
 * them, each used with what it got, all with one interrupt (EVENT_IDX off,
 * so each flush the device made would have raised one).
 */
static void test_rx_mrg(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	struct net g;
	uint32_t len = 0;
	int id[10];

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES & ~BIT(VIRTIO_RING_F_EVENT_IDX)))
		return;
	for (unsigned i = 0; i < 10; i++)
		id[i] = rx_post(&g, i, 128);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	CHECK_EQ(irq_take(&g.d, VEC_RX, 0), 0);
	fake_queue(fake(&g), 1000, 7);
	nic_turn(&g);
	for (unsigned i = 0; i < 8; i++) {
		CHECK(id[i] >= 0 && gq_get_used(&g.q[RXQ], &len) == id[i]);
		CHECK_EQ(len, i < 7 ? 128 : HDR_LEN + 1000 - 7 * 128);
	}
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);	/* two left over */
	check_rx_hdr(slot_data(g.t, 0), 8);
	CHECK(frame_in_chains(&g, 0, 128, 1000, 7));
	CHECK_EQ(slot_data(g.t, 7)[HDR_LEN + 1000 - 7 * 128], JUNK);
	CHECK_EQ(irq_take(&g.d, VEC_RX, 0), 1);
	/* The two left over and the next frame. */
	fake_queue(fake(&g), 200, 8);
	nic_turn(&g);
	CHECK(gq_get_used(&g.q[RXQ], &len) == id[8] && len == 128);
	CHECK(gq_get_used(&g.q[RXQ], &len) == id[9] && len == HDR_LEN + 200 - 128);
	check_rx_hdr(slot_data(g.t, 8), 2);
	CHECK(frame_in_chains(&g, 8, 128, 200, 8));
	CHECK_EQ(stats(&g).rx_frames, 2);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/* ---- 4: too few buffers, too large a frame ---- */

/*
 * Three 128-byte buffers cannot take a 1000-byte frame: the device holds
 * them and waits, the frame stays in the back end; once the driver posts
 * more and kicks, the frame arrives whole.
 */
static void test_rx_wait(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	struct net g;
	uint32_t len = 0;
	int id[NUM];
	unsigned slot = 0;

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	for (; slot < 3; slot++)
		id[slot] = rx_post(&g, slot, 128);
	gq_kick(&g.q[RXQ]);
	fake_queue(fake(&g), 1000, 9);
	nic_turn(&g);
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);
	CHECK_EQ(fake(&g)->rx_n, 1);
	CHECK(gq_kicks_on(&g.q[RXQ]));
	for (; slot < 9; slot++)
		id[slot] = rx_post(&g, slot, 128);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	for (unsigned i = 0; i < 8; i++)
		CHECK(gq_get_used(&g.q[RXQ], &len) == id[i] &&
		      len == (i < 7 ? 128 : HDR_LEN + 1000 - 7 * 128));
	CHECK(frame_in_chains(&g, 0, 128, 1000, 9));
	check_rx_hdr(slot_data(g.t, 0), 8);
	CHECK_EQ(fake(&g)->rx_n, 0);

	/*
	 * A ring of NUM 128-byte buffers can never take 4000 bytes: once the
	 * device holds them all, the frame goes, counted; the next arrives.
	 */
	unsigned first = slot - 1;	/* still held since the last frame */

	for (; slot < first + NUM; slot++)
		id[slot % NUM] = rx_post(&g, slot, 128);
	CHECK(rx_post(&g, slot, 128) < 0);	/* the ring is full */
	gq_kick(&g.q[RXQ]);
	fake_queue(fake(&g), 4000, 10);
	fake_queue(fake(&g), 300, 11);
	nic_turn(&g);
	CHECK_EQ(stats(&g).rx_dropped, 1);
	CHECK_EQ(fake(&g)->rx_n, 0);
	for (unsigned i = 0; i < 2; i++)
		CHECK(gq_get_used(&g.q[RXQ], &len) == id[(first + i) % NUM] && len == 128);
	CHECK(gq_get_used(&g.q[RXQ], &len) == id[(first + 2) % NUM] &&
	      len == HDR_LEN + 300 - 2 * 128);
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);
	check_rx_hdr(slot_data(g.t, first), 3);
	CHECK(frame_in_chains(&g, first, 128, 300, 11));
	/* What the drop left held, and what the ring still has, take the next. */
	fake_queue(fake(&g), 1000, 17);
	nic_turn(&g);
	for (unsigned i = 3; i < 3 + 8; i++)
		CHECK(gq_get_used(&g.q[RXQ], &len) == id[(first + i) % NUM] &&
		      len == (i < 3 + 7 ? 128 : HDR_LEN + 1000 - 7 * 128));
	check_rx_hdr(slot_data(g.t, first + 3), 8);
	CHECK(frame_in_chains(&g, first + 3, 128, 1000, 17));
	CHECK_EQ(stats(&g).rx_dropped, 1);
	CHECK_EQ(stats(&g).rx_frames, 3);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/*
 * A ring of NUM descriptors full of two-descriptor chains: NUM / 2 chains
 * are all it can ever give, and a frame larger than they hold is
 * dropped once the device has them all; the next frame arrives.
 */
static void test_rx_never(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	struct net g;
	uint32_t len = 0;
	int id[NUM / 2];

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	for (unsigned i = 0; i < NUM / 2; i++) {
		struct drv_seg s[2] = {
			{ data_gpa(i), 64, true }, { data_gpa(i) + 64, 64, true },
		};

		memset(slot_data(g.t, i), JUNK, 128);
		id[i] = gq_add(&g.q[RXQ], s, 2, false, 0);
		CHECK(id[i] >= 0);
	}
	gq_kick(&g.q[RXQ]);
	fake_queue(fake(&g), NUM / 2 * 128, 40);	/* the header makes it too large */
	fake_queue(fake(&g), 100, 41);
	nic_turn(&g);
	CHECK_EQ(stats(&g).rx_dropped, 1);
	CHECK_EQ(fake(&g)->rx_n, 0);
	CHECK(gq_get_used(&g.q[RXQ], &len) == id[0] && len == HDR_LEN + 100);
	check_rx_hdr(slot_data(g.t, 0), 1);
	CHECK(frame_is(slot_data(g.t, 0) + HDR_LEN, 100, 41));
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);
	net_free(&g);
}

/*
 * Without MRG_RXBUF one chain must hold the frame: a frame too large for
 * it is dropped and counted, never truncated, and the chain serves the
 * next frame.
 */
static void test_rx_small_chain(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;
	uint32_t len = 0;
	int id;

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES & ~BIT(VIRTIO_NET_F_MRG_RXBUF)))
		return;
	id = rx_post(&g, 0, 256);
	gq_kick(&g.q[RXQ]);
	fake_queue(fake(&g), 1000, 12);
	fake_queue(fake(&g), 100, 13);
	nic_turn(&g);
	CHECK_EQ(stats(&g).rx_dropped, 1);
	CHECK(id >= 0 && gq_get_used(&g.q[RXQ], &len) == id);
	CHECK_EQ(len, HDR_LEN + 100);
	check_rx_hdr(slot_data(g.t, 0), 1);
	CHECK(frame_is(slot_data(g.t, 0) + HDR_LEN, 100, 13));
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);
	CHECK_EQ(fake(&g)->rx_n, 0);
	net_free(&g);
}

/* A reset drops the buffers the device held; the frame waits for the next driver. */
static void test_rx_reset_held(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;
	uint32_t len = 0;
	int id;

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	for (unsigned i = 0; i < 3; i++)
		rx_post(&g, i, 128);
	gq_kick(&g.q[RXQ]);
	fake_queue(fake(&g), 1000, 14);
	nic_turn(&g);
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);
	CHECK(vdev_reset(&g.d));
	CHECK(nic_start(&g, NUM, ALL_FEATURES));
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);
	id = rx_post(&g, 5, 2048);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	CHECK(id >= 0 && gq_get_used(&g.q[RXQ], &len) == id && len == HDR_LEN + 1000);
	check_rx_hdr(slot_data(g.t, 5), 1);
	CHECK(frame_is(slot_data(g.t, 5) + HDR_LEN, 1000, 14));
	net_free(&g);
}

/* ---- 5: buffers after the frames ---- */

static void test_rx_late_buffers(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;
	uint32_t len = 0;
	int id[2];

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	fake_queue(fake(&g), 500, 15);
	fake_queue(fake(&g), 600, 16);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->rx_n, 2);
	CHECK(gq_kicks_on(&g.q[RXQ]));
	id[0] = rx_post(&g, 0, 2048);
	id[1] = rx_post(&g, 1, 2048);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	CHECK(gq_get_used(&g.q[RXQ], &len) == id[0] && len == HDR_LEN + 500);
	CHECK(gq_get_used(&g.q[RXQ], &len) == id[1] && len == HDR_LEN + 600);
	CHECK(frame_is(slot_data(g.t, 0) + HDR_LEN, 500, 15));
	CHECK(frame_is(slot_data(g.t, 1) + HDR_LEN, 600, 16));
	CHECK_EQ(fake(&g)->rx_n, 0);
	CHECK(irq_take(&g.d, VEC_RX, 0) > 0);
	net_free(&g);
}

/*
 * VIRTIO 1.2, 3.1.1: nothing is used before DRIVER_OK; what the driver
 * queued and the back end holds meanwhile is served once it is set,
 * without another kick.
 */
static void test_before_driver_ok(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;
	uint32_t len = 0;
	uint64_t f;
	int rx, tx;

	if (!net_new(&g, &cfg)) {
		CHECK(!"device found");
		net_free(&g);
		return;
	}
	/* vdev_init() up to FEATURES_OK and the queues, DRIVER_OK left out. */
	f = vpci_negotiate(&g.d.pci, ALL_FEATURES);
	cc_write(&g.d.pci, CC_MSIX_CONFIG, VEC_CONFIG, 2);
	msix_setup(&g.d, 3);
	for (unsigned q = 0; q < 2; q++)
		gq_init(&g.d, &g.q[q], q, NUM, f >> VIRTIO_F_RING_PACKED & 1,
			f >> VIRTIO_RING_F_EVENT_IDX & 1);
	rx = rx_post(&g, 0, 2048);
	tx = tx_add(&g, 1, 100, 1, 30);
	gq_kick(&g.q[RXQ]);
	gq_kick(&g.q[TXQ]);
	fake_queue(fake(&g), 200, 31);
	nic_turn(&g);
	CHECK(gq_get_used(&g.q[RXQ], &len) < 0);
	CHECK(gq_get_used(&g.q[TXQ], &len) < 0);
	CHECK(fake(&g)->sent == 0 && fake(&g)->rx_n == 1);
	vpci_set_status(&g.d.pci, DS_ACKNOWLEDGE | DS_DRIVER | DS_FEATURES_OK | DS_DRIVER_OK);
	nic_turn(&g);
	CHECK(rx >= 0 && gq_get_used(&g.q[RXQ], &len) == rx && len == HDR_LEN + 200);
	CHECK(frame_is(slot_data(g.t, 0) + HDR_LEN, 200, 31));
	CHECK(tx >= 0 && gq_get_used(&g.q[TXQ], &len) == tx && len == 0);
	CHECK(fake(&g)->sent == 1 && frame_is(fake(&g)->last, 100, 30));
	net_free(&g);
}

/* ---- 6: a hostile driver ---- */

/* NEEDS_RESET with a config interrupt; after a reset the NIC sends again. */
static void check_broken_then_reset(struct net *g)
{
	uint32_t len;
	unsigned sent = fake(g)->sent;
	int id;

	CHECK(vstatus(&g->d) & NEEDS_RESET);
	CHECK(irq_take(&g->d, VEC_CONFIG, 0) > 0);
	CHECK(gq_get_used(&g->q[RXQ], &len) < 0);
	CHECK(gq_get_used(&g->q[TXQ], &len) < 0);
	/* Kicking a broken device serves nothing and breaks nothing. */
	gq_kick(&g->q[RXQ]);
	gq_kick(&g->q[TXQ]);
	nic_turn(g);
	CHECK(gq_get_used(&g->q[TXQ], &len) < 0);
	CHECK(vdev_reset(&g->d));
	CHECK(nic_start(g, NUM, ALL_FEATURES));
	id = tx_send(g, 20, 100, 2, 20);
	CHECK(id >= 0 && gq_get_used(&g->q[TXQ], &len) == id && len == 0);
	CHECK(fake(g)->sent == sent + 1 && frame_is(fake(g)->last, 100, 20));
}

enum hostile { RX_READABLE, TX_WRITABLE, TX_SHORT, RX_TINY_MRG };

static void test_hostile(enum hostile h)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct drv_seg s[2] = {
		{ data_gpa(0), HDR_LEN, false }, { data_gpa(1), 100, true },
	};
	struct net g;
	uint32_t len;
	int id;

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	memset(slot_data(g.t, 1), 0, 100);
	if (h == RX_READABLE || h == RX_TINY_MRG) {
		s[0].len = h == RX_TINY_MRG ? HDR_LEN - 1 : 2048;
		s[0].write = h == RX_TINY_MRG;
		CHECK(gq_add(&g.q[RXQ], s, 1, false, 0) >= 0);
		gq_kick(&g.q[RXQ]);
		fake_queue(fake(&g), 100, 21);
	} else {
		/* The header alone, writable; or 8 bytes, short of the header. */
		s[0].len = h == TX_SHORT ? 8 : HDR_LEN;
		CHECK(gq_add(&g.q[TXQ], s, h == TX_SHORT ? 1 : 2, false, 0) >= 0);
		gq_kick(&g.q[TXQ]);
	}
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 0);
	check_broken_then_reset(&g);
	if (h == RX_READABLE || h == RX_TINY_MRG) {
		/* The frame waited in the back end through it all. */
		id = rx_post(&g, 2, 2048);
		gq_kick(&g.q[RXQ]);
		nic_turn(&g);
		CHECK(id >= 0 && gq_get_used(&g.q[RXQ], &len) == id && len == HDR_LEN + 100);
		CHECK(frame_is(slot_data(g.t, 2) + HDR_LEN, 100, 21));
	}
	net_free(&g);
}

/*
 * n transmit chains of one descriptor each, header and a frame of len
 * bytes, frame i's bytes 14 and 15 holding i (the fake's tag); no kick.
 */
static void tx_add_tagged(struct net *g, unsigned n, unsigned len)
{
	size_t stride = HDR_LEN + len;

	for (unsigned i = 0; i < n; i++) {
		uint8_t *p = slot_data(g->t, 0) + i * stride;
		struct drv_seg s = { data_gpa(0) + i * stride, (uint32_t)stride, false };

		memset(p, 0, stride);
		p[HDR_LEN + 14] = (uint8_t)i;
		p[HDR_LEN + 15] = (uint8_t)(i >> 8);
		CHECK(gq_add(&g->q[TXQ], &s, 1, false, 0) >= 0);
	}
}

/*
 * tx=timer, as QEMU's: a kick starts the wait (x-txtimer's, nearly an
 * hour here, ended by the test) and turns kicks off; what the driver
 * queues meanwhile goes out with the first frame when the wait ends, in
 * order, in one publish with one interrupt, and kicks are wanted again.
 * A kick during the wait sends at once.
 */
static void test_tx_timer(bool event_idx)
{
	const uint64_t wait = HOUR_NS - 100000001u;	/* 3599.899999999 s */
	struct vnet_cfg cfg = cfg_default(false);
	uint64_t want = event_idx ? ALL_FEATURES : ALL_FEATURES & ~BIT(VIRTIO_RING_F_EVENT_IDX);
	uint64_t left;
	struct net g;
	uint32_t len = 1;
	int fd, id[3];

	cfg.tx = VNET_TX_TIMER;
	cfg.tx_timer_ns = wait;
	if (!net_up(&g, &cfg, NUM, want))
		return;
	fd = vnet_tx_timer_fd(g.n);
	CHECK(fd >= 0 && !timerfd_armed(fd));
	CHECK(gq_kicks_on(&g.q[TXQ]));
	id[0] = tx_send(&g, 0, 100, 1, 1);
	CHECK_EQ(fake(&g)->sent, 0);
	/* The whole wait, less what passed since: more than half of it. */
	left = timerfd_left_ns(fd);
	CHECK(left > wait / 2 && left <= wait);
	CHECK(!gq_kicks_on(&g.q[TXQ]));
	id[1] = tx_add(&g, 1, 200, 2, 2);
	id[2] = tx_add(&g, 2, 300, 3, 3);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 0);
	CHECK_EQ(gq_get_used(&g.q[TXQ], &len), -1);
	CHECK_EQ(irq_take(&g.d, VEC_TX, 0), 0);

	CHECK(timerfd_fire(fd, WAIT_MS));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 3);
	for (unsigned i = 0; i < 3; i++) {
		len = 1;
		CHECK(id[i] >= 0 && gq_get_used(&g.q[TXQ], &len) == id[i]);
		CHECK_EQ(len, 0);
	}
	CHECK(fake(&g)->last_len == 300 && frame_is(fake(&g)->last, 300, 3));
	CHECK_EQ(irq_take(&g.d, VEC_TX, 0), 1);
	CHECK(gq_kicks_on(&g.q[TXQ]));
	CHECK(!timerfd_armed(fd));
	CHECK_EQ(stats(&g).tx_frames, 3);

	/* The next kick waits again; a kick during the wait sends both now. */
	tx_send(&g, 3, 64, 1, 4);
	CHECK(fake(&g)->sent == 3 && timerfd_armed(fd));
	tx_send(&g, 4, 80, 1, 5);
	CHECK(fake(&g)->sent == 5 && frame_is(fake(&g)->last, 80, 5));
	CHECK(!timerfd_armed(fd));
	CHECK(gq_kicks_on(&g.q[TXQ]));
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/* x-txtimer=0, QEMU's next turn of its loop: no timer, each kick served at once. */
static void test_tx_timer_zero(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;

	cfg.tx = VNET_TX_TIMER;
	cfg.tx_timer_ns = 0;
	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	CHECK_EQ(vnet_tx_timer_fd(g.n), -1);
	tx_send(&g, 0, 100, 1, 1);
	CHECK(fake(&g)->sent == 1 && frame_is(fake(&g)->last, 100, 1));
	CHECK(gq_kicks_on(&g.q[TXQ]));
	net_free(&g);
}

/*
 * tx=timer with no fd left for its timer: one line, no NIC (the ASan
 * build finds what the failure would leak).
 */
static void test_tx_timer_no_fd(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct tmachine *t = machine_board(1, false);
	struct rlimit old, low;
	struct virtio_plug *plug;
	struct fake_nd f;
	struct vnet *n = NULL;
	char line[256];
	int next;

	fake_init(&f);
	cfg.tx = VNET_TX_TIMER;
	cfg.tx_timer_ns = HOUR_NS;
	t->b.m.loop = iothread_new("main");
	plug = virtio_pci_plug(&t->b.m, NET_CLASS);
	capture_begin();
	/* The lowest free number becomes the limit: the next fd made fails. */
	next = dup(0);
	if (t->b.m.loop && plug && next >= 0 && getrlimit(RLIMIT_NOFILE, &old) == 0) {
		low = old;
		low.rlim_cur = (rlim_t)next;
		close(next);
		if (setrlimit(RLIMIT_NOFILE, &low) == 0) {
			n = vnet_create(&t->b.m, &cfg, plug, &f.nd);
			CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
			plug = NULL;
		}
	}
	CHECK_EQ(capture_end(line, sizeof(line)), 1);
	CHECK(plug == NULL && n == NULL);
	CHECK(strstr(line, "virtio-net: tx=timer: no timer: Too many open files"));
	vnet_free(n);
	iothread_free(t->b.m.loop);
	machine_free(t);
	fake_destroy(&f);
}

/*
 * tx=timer with a round's worth or more queued: the wait's end sends one
 * round (256, QEMU's burst); more than that waits again with kicks off,
 * exactly that turns kicks back on.  A reset during a wait leaves nothing
 * for its end to send, and the device set up again sends as before.
 */
static void test_tx_timer_rounds(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	enum { CHAINS = 300, FRAME = 64 };
	struct net g;
	uint32_t len;
	unsigned used = 0;
	int fd;

	cfg.rx_queue_size = cfg.tx_queue_size = 1024;
	cfg.tx = VNET_TX_TIMER;
	cfg.tx_timer_ns = HOUR_NS;
	if (!net_up(&g, &cfg, 1024, ALL_FEATURES))
		return;
	fd = vnet_tx_timer_fd(g.n);
	tx_add_tagged(&g, CHAINS, FRAME);
	gq_kick(&g.q[TXQ]);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 0);
	CHECK(timerfd_fire(fd, WAIT_MS));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 256);
	CHECK(timerfd_armed(fd));
	CHECK(!gq_kicks_on(&g.q[TXQ]));
	CHECK(timerfd_fire(fd, WAIT_MS));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, CHAINS);
	for (unsigned i = 0; i < CHAINS; i++)
		CHECK_EQ(fake(&g)->tag[i], i);
	while (gq_get_used(&g.q[TXQ], &len) >= 0)
		used += len == 0;
	CHECK_EQ(used, CHAINS);
	CHECK(gq_kicks_on(&g.q[TXQ]) && !timerfd_armed(fd));

	/* Exactly a round: sent, and the ring, empty, wants kicks again. */
	tx_add_tagged(&g, 256, FRAME);
	gq_kick(&g.q[TXQ]);
	nic_turn(&g);
	CHECK(timerfd_fire(fd, WAIT_MS));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, CHAINS + 256);
	CHECK(gq_kicks_on(&g.q[TXQ]) && !timerfd_armed(fd));

	/* A frame, its kick, then a reset before the wait ends: nothing goes. */
	tx_send(&g, 0, 64, 1, 1);
	CHECK(timerfd_armed(fd));
	CHECK(vdev_reset(&g.d));
	CHECK(timerfd_fire(fd, WAIT_MS));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, CHAINS + 256);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	/* Set up again, it waits and sends as before. */
	CHECK(nic_start(&g, NUM, ALL_FEATURES));
	tx_send(&g, 0, 70, 1, 7);
	CHECK(fake(&g)->sent == CHAINS + 256 && timerfd_armed(fd));
	CHECK(timerfd_fire(fd, WAIT_MS));
	nic_turn(&g);
	CHECK(fake(&g)->sent == CHAINS + 257 && frame_is(fake(&g)->last, 70, 7));
	net_free(&g);
}

/*
 * Split ring with EVENT_IDX: the driver asks for an interrupt at the next
 * used entry (used_event, VIRTIO 1.2, 2.7.10), as Linux's does when it
 * turns callbacks back on.  Without EVENT_IDX the field is unused.
 */
static void want_next_irq(struct gq *q)
{
	struct vq_driver *d = &q->ring;
	struct vring_avail *a = drv_ptr(d, d->driver);

	if (!d->packed)
		__atomic_store_n(&a->ring[d->num], d->last_used_idx, __ATOMIC_RELEASE);
}

/*
 * tx=bh on a back end whose thread is still busy with what it was sent
 * (x-txhold, the default): the kick's frame goes at once, then kicks are
 * off until the back end is idle; what the driver queues meanwhile (a
 * kick that comes anyway included) waits, and goes in one round, in
 * order, with one interrupt, once it is.  Idle with nothing queued, the
 * device wants kicks again; a back end already idle at the kick sends
 * each frame at once and leaves kicks on.
 */
static void test_tx_hold(bool packed, bool event_idx)
{
	struct vnet_cfg cfg = cfg_default(packed);
	uint64_t want = event_idx ? ALL_FEATURES : ALL_FEATURES & ~BIT(VIRTIO_RING_F_EVENT_IDX);
	struct net g;
	uint32_t len = 1;
	int id[3];

	if (!net_up(&g, &cfg, NUM, want))
		return;
	fake(&g)->slow = true;
	id[0] = tx_send(&g, 0, 100, 1, 1);
	CHECK(fake(&g)->sent == 1 && frame_is(fake(&g)->last, 100, 1));
	CHECK(id[0] >= 0 && gq_get_used(&g.q[TXQ], &len) == id[0] && len == 0);
	CHECK_EQ(irq_take(&g.d, VEC_TX, 0), 1);
	want_next_irq(&g.q[TXQ]);
	CHECK(!gq_kicks_on(&g.q[TXQ]));
	id[1] = tx_send(&g, 1, 200, 2, 2);
	id[2] = tx_add(&g, 2, 300, 3, 3);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 1);
	CHECK_EQ(gq_get_used(&g.q[TXQ], &len), -1);
	CHECK_EQ(irq_take(&g.d, VEC_TX, 0), 0);

	fake_idle(fake(&g));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 3);
	for (unsigned i = 1; i < 3; i++) {
		len = 1;
		CHECK(id[i] >= 0 && gq_get_used(&g.q[TXQ], &len) == id[i]);
		CHECK_EQ(len, 0);
	}
	CHECK(fake(&g)->last_len == 300 && frame_is(fake(&g)->last, 300, 3));
	CHECK_EQ(irq_take(&g.d, VEC_TX, 0), 1);
	/* Busy with those two now: still held, until it is idle again. */
	CHECK(!gq_kicks_on(&g.q[TXQ]));
	fake_idle(fake(&g));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 3);
	CHECK(gq_kicks_on(&g.q[TXQ]));
	CHECK_EQ(irq_take(&g.d, VEC_TX, 0), 0);

	/* Idle by the next kick: at once, kicks on. */
	fake(&g)->slow = false;
	tx_send(&g, 3, 64, 1, 4);
	CHECK(fake(&g)->sent == 4 && frame_is(fake(&g)->last, 64, 4));
	CHECK(gq_kicks_on(&g.q[TXQ]));
	tx_send(&g, 4, 65, 1, 5);
	CHECK(fake(&g)->sent == 5 && gq_kicks_on(&g.q[TXQ]));
	CHECK_EQ(stats(&g).tx_frames, 5);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/* x-txhold=off: a busy back end changes nothing; it is not even asked. */
static void test_tx_hold_off(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;

	cfg.tx_hold = false;
	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	fake(&g)->slow = true;
	for (unsigned i = 0; i < 3; i++) {
		tx_send(&g, i, 100 + i, 1, i);
		CHECK(fake(&g)->sent == i + 1 && frame_is(fake(&g)->last, 100 + i, i));
		CHECK(gq_kicks_on(&g.q[TXQ]));
	}
	CHECK_EQ(fake(&g)->busy_asked, 0);
	net_free(&g);
}

/*
 * Held with more than a round queued: the round's own kick to itself
 * waits for the back end as the driver's would, and the rest goes once it
 * is idle, every frame once and in order.  A reset during a hold leaves
 * nothing for its end to send, and the device set up again holds as
 * before.
 */
static void test_tx_hold_rounds(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	enum { CHAINS = 300, FRAME = 64 };
	struct net g;

	cfg.rx_queue_size = cfg.tx_queue_size = 1024;
	if (!net_up(&g, &cfg, 1024, ALL_FEATURES))
		return;
	fake(&g)->slow = true;
	tx_add_tagged(&g, CHAINS, FRAME);
	gq_kick(&g.q[TXQ]);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, 256);
	CHECK(!gq_kicks_on(&g.q[TXQ]));
	fake_idle(fake(&g));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, CHAINS);
	for (unsigned i = 0; i < CHAINS; i++)
		CHECK_EQ(fake(&g)->tag[i], i);
	fake_idle(fake(&g));
	nic_turn(&g);
	CHECK(gq_kicks_on(&g.q[TXQ]));

	/* A frame, held after it; a reset; the hold's end sends nothing. */
	tx_send(&g, 0, 64, 1, 1);
	CHECK_EQ(fake(&g)->sent, CHAINS + 1);
	tx_add(&g, 1, 64, 1, 2);
	CHECK(vdev_reset(&g.d));
	fake_idle(fake(&g));
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, CHAINS + 1);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	CHECK(nic_start(&g, NUM, ALL_FEATURES));
	tx_send(&g, 0, 70, 1, 7);
	CHECK(fake(&g)->sent == CHAINS + 2 && frame_is(fake(&g)->last, 70, 7));
	CHECK(!gq_kicks_on(&g.q[TXQ]));
	tx_send(&g, 1, 71, 1, 8);
	CHECK_EQ(fake(&g)->sent, CHAINS + 2);
	fake_idle(fake(&g));
	nic_turn(&g);
	CHECK(fake(&g)->sent == CHAINS + 3 && frame_is(fake(&g)->last, 71, 8));

	/*
	 * Reset during a hold and set up again before its end: the start's
	 * kick comes while it holds, and the hold's end sends what was queued.
	 */
	fake_idle(fake(&g));
	nic_turn(&g);
	tx_send(&g, 0, 72, 1, 9);
	CHECK_EQ(fake(&g)->sent, CHAINS + 4);
	CHECK(vdev_reset(&g.d));
	CHECK(nic_start(&g, NUM, ALL_FEATURES));
	tx_send(&g, 0, 73, 1, 10);
	CHECK_EQ(fake(&g)->sent, CHAINS + 4);
	fake_idle(fake(&g));
	nic_turn(&g);
	CHECK(fake(&g)->sent == CHAINS + 5 && frame_is(fake(&g)->last, 73, 10));
	net_free(&g);
}

/*
 * More chains than one round takes: the device yields to the loop's other
 * handlers after one round and comes back by itself, so everything is
 * sent, each once, after the loop has turned.
 */
static void test_tx_flood(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	enum { CHAINS = 600, FRAME = 64 };
	static bool seen[CHAINS];
	struct net g;
	uint32_t len;
	unsigned used = 0;

	cfg.rx_queue_size = cfg.tx_queue_size = 1024;
	if (!net_up(&g, &cfg, 1024, ALL_FEATURES))
		return;
	tx_add_tagged(&g, CHAINS, FRAME);
	gq_kick(&g.q[TXQ]);
	CHECK(iothread_poll(g.t->b.m.loop, 0) > 0);
	CHECK(fake(&g)->sent > 0 && fake(&g)->sent < CHAINS);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->sent, CHAINS);
	memset(seen, 0, sizeof(seen));
	for (unsigned i = 0; i < CHAINS && i < SENT_MAX; i++)
		if (fake(&g)->tag[i] < CHAINS && !seen[fake(&g)->tag[i]])
			seen[fake(&g)->tag[i]] = true;
	for (unsigned i = 0; i < CHAINS; i++)
		CHECK(seen[i]);
	while (gq_get_used(&g.q[TXQ], &len) >= 0)
		used += len == 0;
	CHECK_EQ(used, CHAINS);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/*
 * A back end with more frames than one round takes, and buffers for all:
 * one call of the device's handler gives the guest some but not all (the
 * loop's other devices get their turn between rounds), and the loop
 * turning on gives it the rest, each frame once, whole and in order.
 */
static void test_rx_flood(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	enum { FRAMES = 600, BUF = 128, FRAME = 60 };
	static int ids[FRAMES];
	struct net g;
	uint32_t len = 0;
	unsigned used = 0;
	int id;

	cfg.rx_queue_size = cfg.tx_queue_size = 1024;
	if (!net_up(&g, &cfg, 1024, ALL_FEATURES))
		return;
	for (unsigned i = 0; i < FRAMES; i++) {
		struct drv_seg s = { data_gpa(0) + i * BUF, BUF, true };

		ids[i] = gq_add(&g.q[RXQ], &s, 1, false, 0);
		CHECK(ids[i] >= 0);
	}
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	for (unsigned i = 0; i < FRAMES; i++)
		fake_queue(fake(&g), FRAME, i);
	CHECK(iothread_poll(g.t->b.m.loop, 0) > 0);
	CHECK(fake(&g)->rx_n > 0 && fake(&g)->rx_n < FRAMES);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->rx_n, 0);
	while ((id = gq_get_used(&g.q[RXQ], &len)) >= 0 && used < FRAMES) {
		const uint8_t *p = gpa(g.t, data_gpa(0) + used * BUF);

		CHECK_EQ(id, ids[used]);
		CHECK_EQ(len, HDR_LEN + FRAME);
		CHECK(frame_is(p + HDR_LEN, FRAME, used));
		used++;
	}
	CHECK_EQ(used, FRAMES);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/* ---- 7: offloads, with a back end whose frames carry the header ---- */

#define OFFLOAD_BITS \
	(BIT(VIRTIO_NET_F_CSUM) | BIT(VIRTIO_NET_F_GUEST_CSUM) | BIT(VIRTIO_NET_F_GUEST_TSO4) | \
	 BIT(VIRTIO_NET_F_GUEST_TSO6) | BIT(VIRTIO_NET_F_GUEST_ECN) | BIT(VIRTIO_NET_F_HOST_TSO4) | \
	 BIT(VIRTIO_NET_F_HOST_TSO6) | BIT(VIRTIO_NET_F_HOST_ECN))

static bool net_up_hdr(struct net *g, uint64_t want)
{
	struct vnet_cfg cfg = cfg_default(false);
	bool ok;

	cfg.host_mtu = 1500;
	fake_hdr_len = HDR_LEN;
	ok = net_up(g, &cfg, NUM, want);
	fake_hdr_len = 0;
	return ok;
}

/*
 * Offered in full; the back end is told what the guest took, TSO and ECN
 * only with what VIRTIO 1.2 5.1.3.1 says they depend on.
 */
static void test_offload_features(void)
{
	static const struct {
		uint64_t want;
		unsigned told;
	} cases[] = {
		{ ALL_FEATURES, NETDEV_OFFLOAD_CSUM | NETDEV_OFFLOAD_TSO4 | NETDEV_OFFLOAD_TSO6 |
				NETDEV_OFFLOAD_ECN },
		{ ALL_FEATURES & ~OFFLOAD_BITS, 0 },
		{ (ALL_FEATURES & ~OFFLOAD_BITS) | BIT(VIRTIO_NET_F_GUEST_CSUM), NETDEV_OFFLOAD_CSUM },
		{ (ALL_FEATURES & ~OFFLOAD_BITS) | BIT(VIRTIO_NET_F_GUEST_CSUM) |
		  BIT(VIRTIO_NET_F_GUEST_TSO6), NETDEV_OFFLOAD_CSUM | NETDEV_OFFLOAD_TSO6 },
		/* TSO without checksums, ECN without TSO: nothing they need */
		{ (ALL_FEATURES & ~OFFLOAD_BITS) | BIT(VIRTIO_NET_F_GUEST_TSO4), 0 },
		{ (ALL_FEATURES & ~OFFLOAD_BITS) | BIT(VIRTIO_NET_F_GUEST_CSUM) |
		  BIT(VIRTIO_NET_F_GUEST_ECN), NETDEV_OFFLOAD_CSUM },
	};

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct net g;

		if (!net_up_hdr(&g, cases[i].want))
			return;
		CHECK_EQ(dev_features(&g.d) & OFFLOAD_BITS, OFFLOAD_BITS);
		CHECK_EQ(fake(&g)->offload_calls, 1);
		CHECK_EQ(fake(&g)->offloads, cases[i].told);
		net_free(&g);
	}
}

/* The driver's header reaches the back end as the driver wrote it, and the frame behind it. */
static void test_offload_tx(void)
{
	static const uint8_t h[HDR_LEN] = {
		VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_TCPV4,
		54, 0,		/* hdr_len */
		0xa8, 0x05,	/* gso_size 1448 */
		34, 0,		/* csum_start */
		16, 0,		/* csum_offset */
		0, 0,
	};
	struct net g;
	uint32_t len;
	int id;

	if (!net_up_hdr(&g, ALL_FEATURES))
		return;
	id = tx_add(&g, 0, 3000, 3, 4);
	memcpy(slot_data(g.t, 0), h, HDR_LEN);
	gq_kick(&g.q[TXQ]);
	nic_turn(&g);
	CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id && len == 0);
	CHECK_EQ(fake(&g)->sent, 1);
	CHECK_EQ(fake(&g)->last_len, HDR_LEN + 3000);
	CHECK(!memcmp(fake(&g)->last, h, HDR_LEN));
	CHECK(frame_is(fake(&g)->last + HDR_LEN, 3000, 4));
	CHECK_EQ(stats(&g).tx_frames, 1);
	net_free(&g);
}

/* A frame for the guest of len bytes behind the header h, from the fake back end. */
static void fake_queue_hdr(struct fake_nd *f, const uint8_t *h, size_t len, unsigned seed)
{
	uint8_t *p;

	fake_queue(f, HDR_LEN + len, seed);
	p = f->rx[(f->rx_head + f->rx_n - 1) % FAKE_MAX];
	memcpy(p, h, HDR_LEN);
	for (size_t i = 0; i < len; i++)
		p[HDR_LEN + i] = pattern(seed, i);
}

/*
 * The back end's header reaches the guest with num_buffers set, its flags
 * only for a guest that took GUEST_CSUM (5.1.6.4.1); a TCP segment over
 * the MTU reaches a guest that took TSO (5.1.6.3.2 bounds only frames
 * without GSO).
 */
static void test_offload_rx(bool csum)
{
	uint8_t h[HDR_LEN] = {
		VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID, VIRTIO_NET_HDR_GSO_TCPV4,
		54, 0, 0xa8, 0x05, 34, 0, 16, 0,
		0x77, 0x77,	/* num_buffers: whatever the back end left there */
	};
	uint64_t want = csum ? ALL_FEATURES : ALL_FEATURES & ~OFFLOAD_BITS;
	struct net g;
	uint32_t len;
	uint8_t *p;

	if (!net_up_hdr(&g, want))
		return;
	for (unsigned i = 0; i < 4; i++)
		rx_post(&g, i, 4096);
	gq_kick(&g.q[RXQ]);
	if (!csum)
		h[1] = VIRTIO_NET_HDR_GSO_NONE;	/* a back end told no TSO sends none */
	fake_queue_hdr(fake(&g), h, csum ? 9000 : 1000, 12);
	nic_turn(&g);
	p = slot_data(g.t, 0);
	CHECK_EQ(p[0], csum ? h[0] : 0);
	CHECK_EQ(p[1], h[1]);
	CHECK(!memcmp(p + 2, h + 2, 8));
	CHECK_EQ(get_le16(p + 10), csum ? 3 : 1);
	if (csum) {
		for (unsigned i = 0; i < 3; i++)
			CHECK(gq_get_used(&g.q[RXQ], &len) >= 0 &&
			      len == (i < 2 ? 4096 : HDR_LEN + 9000 - 2 * 4096));
		CHECK(frame_in_chains(&g, 0, 4096, 9000, 12));
	} else {
		CHECK(gq_get_used(&g.q[RXQ], &len) >= 0 && len == HDR_LEN + 1000);
		CHECK(frame_is(p + HDR_LEN, 1000, 12));
	}
	CHECK_EQ(stats(&g).rx_frames, 1);
	CHECK_EQ(stats(&g).rx_dropped, 0);
	/* Without TSO the MTU bounds every frame, the header's length aside. */
	if (!csum) {
		fake_queue_hdr(fake(&g), h, 1500 + 14 + 1, 13);
		fake_queue_hdr(fake(&g), h, 1500 + 14, 14);
		nic_turn(&g);
		CHECK_EQ(stats(&g).rx_dropped, 1);
		CHECK(gq_get_used(&g.q[RXQ], &len) >= 0 && len == HDR_LEN + 1514);
	}
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/*
 * Frames waiting while the guest has posted nothing: the NIC stops
 * watching the back end (else its readable fd would spin the loop) and
 * takes them once the driver posts buffers and kicks.
 */
static void test_rx_pause(void)
{
	struct vnet_cfg cfg = cfg_default(false);
	struct net g;
	uint32_t len;

	if (!net_up(&g, &cfg, NUM, ALL_FEATURES))
		return;
	fake_queue(fake(&g), 100, 20);
	CHECK_EQ(iothread_poll(g.t->b.m.loop, 0), 1);
	CHECK_EQ(fake(&g)->rx_n, 1);
	/* rx_fd is still readable: only the NIC's pause keeps the loop quiet. */
	CHECK_EQ(iothread_poll(g.t->b.m.loop, 0), 0);
	rx_post(&g, 0, 2048);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->rx_n, 0);
	CHECK(gq_get_used(&g.q[RXQ], &len) >= 0 && len == HDR_LEN + 100);
	/* Watching again: the next frame needs no kick. */
	rx_post(&g, 1, 2048);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	fake_queue(fake(&g), 60, 21);
	nic_turn(&g);
	CHECK(gq_get_used(&g.q[RXQ], &len) >= 0 && len == HDR_LEN + 60);
	/* A back end gone for good, its fd readable for ever: watched no more. */
	fake(&g)->nd.rx_gone = true;
	CHECK(eventfd_write(fake(&g)->nd.rx_fd, 1) == 0);
	CHECK_EQ(iothread_poll(g.t->b.m.loop, 0), 1);
	CHECK_EQ(iothread_poll(g.t->b.m.loop, 0), 0);
	net_free(&g);
}

/* ---- 8: frames read straight into the guest's buffers, by a back end with recv ---- */

/*
 * The longest frame a tap gives, as the guest receives it: the header,
 * an Ethernet header and the largest IP packet (VIRTIO 1.2, 5.1.6).
 */
#define LONGEST (HDR_LEN + ETH_HDR + 65535)
#define RX_BUF 4096		/* Linux's page-sized mergeable buffers */
/* Without MRG_RXBUF a chain for the longest frame, as Linux's "big packets" are. */
#define BIG_CHAIN (RX_BUF * 17)
#define BIG_CHAINS 4		/* posted at most at once; their room in RAM */
#define POSTED_MAX 64

/* The driver's rx chains, in the order it made them available. */
struct posted {
	int id[POSTED_MAX];
	uint64_t at[POSTED_MAX];	/* each one's bytes, contiguous in RAM */
	unsigned head, n, next;		/* the oldest not yet used; how many; the next buffer */
	bool big;			/* BIG_CHAIN chains, else RX_BUF ones */
	bool dirty;			/* a dropped frame was read in: no junk to check after a frame */
};

static void post(struct net *g, struct posted *p)
{
	uint32_t size = p->big ? BIG_CHAIN : RX_BUF;
	uint64_t at = data_gpa(0) + (uint64_t)(p->next++ % (p->big ? BIG_CHAINS : 2 * POSTED_MAX)) * size;
	/* A big chain as Linux's: the header in a descriptor of its own. */
	struct drv_seg s[2] = { { at, p->big ? HDR_LEN : RX_BUF, true },
				{ at + HDR_LEN, BIG_CHAIN - HDR_LEN, true } };
	unsigned i = (p->head + p->n++) % POSTED_MAX;

	CHECK(p->n <= (p->big ? BIG_CHAINS : POSTED_MAX));
	memset(gpa(g->t, at), JUNK, size);
	p->at[i] = at;
	p->id[i] = gq_add(&g->q[RXQ], s, p->big ? 2 : 1, false, 0);
	CHECK(p->id[i] >= 0);
}

/*
 * The next frame the guest gets, of len bytes behind the header h (NULL:
 * a back end without one): in the oldest chains, in order, each full but
 * the last and nothing written beyond; num_buffers of them; h's flags
 * only with GUEST_CSUM (5.1.6.4.1), its other fields as they were.
 */
static void check_frame(struct net *g, struct posted *p, size_t len, unsigned seed,
			const uint8_t *h, bool csum)
{
	uint32_t size = p->big ? BIG_CHAIN : RX_BUF, got = 0;
	size_t want = HDR_LEN + len, off = 0;
	unsigned k = p->big ? 1 : (unsigned)((want + size - 1) / size);
	uint8_t *buf = malloc(want);
	uint64_t last = 0;

	CHECK(buf != NULL);
	for (unsigned i = 0; i < k && p->n; i++) {
		int id = gq_get_used(&g->q[RXQ], &got);

		CHECK_EQ(id, p->id[p->head]);
		CHECK_EQ(got, i + 1 < k ? size : want - off);
		if (id != p->id[p->head] || got > want - off)
			break;
		last = p->at[p->head];
		memcpy(buf + off, gpa(g->t, last), got);
		off += got;
		p->head = (p->head + 1) % POSTED_MAX;
		p->n--;
	}
	CHECK_EQ(off, want);
	if (off == want) {
		CHECK_EQ(buf[0], h && csum ? h[0] : 0);
		CHECK_EQ(buf[1], h ? h[1] : VIRTIO_NET_HDR_GSO_NONE);
		CHECK(!h || !memcmp(buf + 2, h + 2, 8));
		CHECK_EQ(get_le16(buf + 10), k);
		CHECK(frame_is(buf + HDR_LEN, len, seed));
		CHECK(p->dirty || got == size || ((uint8_t *)gpa(g->t, last))[got] == JUNK);
	}
	free(buf);
}

static void queue_frame(struct net *g, const uint8_t *h, size_t len, unsigned seed)
{
	if (h)
		fake_queue_hdr(fake(g), h, len, seed);
	else
		fake_queue(fake(g), len, seed);
}

enum direct_hdr { HDR_NONE, HDR_CSUM, HDR_NO_CSUM };

/*
 * While the posted chains take the longest frame a back end with recv
 * gives, every frame is read straight into them, whatever its length,
 * and reaches the guest as the copy would bring it; the chains a frame
 * does not fill go to the frames after it, in the order they were
 * posted.  Once the driver stops posting, frames go by take() as soon as
 * the chains left cannot take the longest frame, and none is cut short;
 * once it posts enough again, they are read straight in again, into the
 * chains then held.
 */
static void test_rx_direct(bool packed, bool mrg, bool event_idx, enum direct_hdr hdr)
{
	static const size_t sizes[] = {
		60, ETH_HDR, 1000, RX_BUF - HDR_LEN, RX_BUF - HDR_LEN + 1, 1514, 9000, 32768,
		65535 + ETH_HDR, 100, 2 * RX_BUF - HDR_LEN, 65535 + ETH_HDR, 61,
	};
	static const uint8_t h0[HDR_LEN] = {
		VIRTIO_NET_HDR_F_DATA_VALID, VIRTIO_NET_HDR_GSO_NONE, 54, 0, 0, 0, 34, 0, 16, 0,
		0x77, 0x77,	/* num_buffers: whatever the back end left there */
	};
	const uint8_t *h = hdr == HDR_NONE ? NULL : h0;
	struct vnet_cfg cfg = cfg_default(packed);
	uint64_t want = ALL_FEATURES;
	/*
	 * Enough for the longest frame and a byte to spare (net.h): 17 pages
	 * with MRG_RXBUF, one big chain without.
	 */
	unsigned chains = mrg ? 40 : 2, cover = mrg ? (LONGEST + 1 + RX_BUF - 1) / RX_BUF : 1;
	unsigned n = sizeof(sizes) / sizeof(sizes[0]);
	struct posted p = { .big = !mrg };
	struct net g;
	bool ok;

	if (!mrg)
		want &= ~BIT(VIRTIO_NET_F_MRG_RXBUF);
	if (!event_idx)
		want &= ~BIT(VIRTIO_RING_F_EVENT_IDX);
	if (hdr == HDR_NO_CSUM)
		want &= ~OFFLOAD_BITS;
	fake_direct = true;
	fake_hdr_len = h ? HDR_LEN : 0;
	ok = net_up(&g, &cfg, POSTED_MAX, want);
	fake_direct = false;
	fake_hdr_len = 0;
	if (!ok)
		return;
	for (unsigned i = 0; i < chains; i++)
		post(&g, &p);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	for (unsigned i = 0; i < n; i++) {
		queue_frame(&g, h, sizes[i], i);
		nic_turn(&g);
		check_frame(&g, &p, sizes[i], i, h, hdr == HDR_CSUM);
		while (p.n < chains)
			post(&g, &p);
		gq_kick(&g.q[RXQ]);
		nic_turn(&g);
	}
	CHECK_EQ(fake(&g)->recvs, n);
	CHECK_EQ(fake(&g)->takes, 0);
	for (unsigned i = 0; i < chains; i++) {
		unsigned recvs = fake(&g)->recvs, takes = fake(&g)->takes;

		queue_frame(&g, h, 1000, 100 + i);
		nic_turn(&g);
		check_frame(&g, &p, 1000, 100 + i, h, hdr == HDR_CSUM);
		CHECK_EQ(fake(&g)->recvs - recvs, chains - i >= cover);
		CHECK_EQ(fake(&g)->takes - takes, chains - i < cover);
	}
	/* No chain left: the next frame waits in the back end for the driver's. */
	queue_frame(&g, h, 1000, 200);
	nic_turn(&g);
	CHECK(gq_get_used(&g.q[RXQ], &(uint32_t){ 0 }) < 0);
	CHECK_EQ(fake(&g)->rx_n, 1);
	post(&g, &p);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	check_frame(&g, &p, 1000, 200, h, hdr == HDR_CSUM);
	while (p.n < chains)
		post(&g, &p);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	unsigned recvs = fake(&g)->recvs;

	queue_frame(&g, h, 1000, 201);
	nic_turn(&g);
	check_frame(&g, &p, 1000, 201, h, hdr == HDR_CSUM);
	CHECK_EQ(fake(&g)->recvs - recvs, 1);
	CHECK_EQ(stats(&g).rx_frames, n + chains + 2);
	CHECK_EQ(stats(&g).rx_dropped, 0);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/*
 * A chain that holds the header and the longest frame, and not a byte
 * more: a read into it could not tell the longest frame from a longer one
 * cut to fit (net.h), so the frame is copied, and arrives whole.
 */
static void test_rx_direct_exact(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	struct drv_seg s[2] = { { data_gpa(0), HDR_LEN, true },
				{ data_gpa(0) + HDR_LEN, LONGEST - HDR_LEN, true } };
	struct net g;
	uint32_t len = 0;
	bool ok;
	int id;

	fake_direct = true;
	ok = net_up(&g, &cfg, NUM, ALL_FEATURES & ~BIT(VIRTIO_NET_F_MRG_RXBUF));
	fake_direct = false;
	if (!ok)
		return;
	memset(slot_data(g.t, 0), JUNK, LONGEST);
	id = gq_add(&g.q[RXQ], s, 2, false, 0);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	fake_queue(fake(&g), 65535 + ETH_HDR, 3);
	nic_turn(&g);
	CHECK(id >= 0 && gq_get_used(&g.q[RXQ], &len) == id);
	CHECK_EQ(len, LONGEST);
	check_rx_hdr(slot_data(g.t, 0), 1);
	CHECK(frame_is(slot_data(g.t, 0) + HDR_LEN, 65535 + ETH_HDR, 3));
	CHECK_EQ(fake(&g)->recvs, 0);
	CHECK_EQ(fake(&g)->takes, 1);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/*
 * A frame read straight in that the guest cannot take (over the MTU it
 * was offered, no TSO) is dropped and counted; the chains it was read
 * into were not used, and the next frame goes into the first of them.
 */
static void test_rx_direct_too_long(bool packed)
{
	struct vnet_cfg cfg = cfg_default(packed);
	struct posted p = { 0 };
	struct net g;
	bool ok;

	cfg.host_mtu = 1500;
	fake_direct = true;
	ok = net_up(&g, &cfg, POSTED_MAX, ALL_FEATURES);
	fake_direct = false;
	if (!ok)
		return;
	for (unsigned i = 0; i < 20; i++)
		post(&g, &p);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	fake_queue(fake(&g), 1500 + ETH_HDR + 1, 1);
	fake_queue(fake(&g), 1500 + ETH_HDR, 2);
	nic_turn(&g);
	CHECK_EQ(fake(&g)->recvs, 2);
	CHECK_EQ(stats(&g).rx_dropped, 1);
	p.dirty = true;
	check_frame(&g, &p, 1500 + ETH_HDR, 2, NULL, false);
	CHECK(gq_get_used(&g.q[RXQ], &(uint32_t){ 0 }) < 0);
	CHECK_EQ(stats(&g).rx_frames, 1);
	CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	net_free(&g);
}

/* ---- 9: the command line ---- */

static const struct device_family *family(void)
{
	return device_find("virtio-net-pci", strlen("virtio-net-pci"));
}

/* The family's parse and check, as device_set_add() runs them; NULL after one line. */
static struct vnet_cfg *parse(const char *arg)
{
	const struct device_family *f = family();

	return opts_parse_new(f->spec, f->cfg_size, f->defaults, arg, f->check);
}

static void cfg_free(struct vnet_cfg *c)
{
	if (c)
		opts_free(family()->spec, c);
	free(c);
}

/* arg is refused with exactly one line. */
static void check_refused(const char *arg)
{
	char line[256];
	struct vnet_cfg *c;

	capture_begin();
	c = parse(arg);
	CHECK_EQ(capture_end(line, sizeof(line)), 1);
	CHECK(!c);
	if (c)
		printf("# accepted: %s\n", arg);
	cfg_free(c);
}

static void test_cmdline(void)
{
	const struct device_family *f = family();
	struct vnet_cfg *c, tmp;
	char *help = NULL;
	size_t help_len = 0;
	FILE *mf;

	CHECK(f && f->kind == DEVICE_PLUGGED && f->pci_class == NET_CLASS);
	CHECK(f && f->create && f->destroy && f->resolve);
	if (!f)
		return;
	CHECK(device_find("virtio-net", strlen("virtio-net")) != NULL);
	memcpy(&tmp, f->defaults, f->cfg_size);
	CHECK(opts_parse(f->spec, "help", &tmp) == OPTS_HELP);
	opts_free(f->spec, &tmp);
	mf = open_memstream(&help, &help_len);
	CHECK(mf != NULL);
	if (mf) {
		opts_print_help(mf, f->spec);
		fclose(mf);
		for (const char *const *k = (const char *const[]){ "netdev", "mac", "host_mtu",
				"packed", "event_idx", "indirect_desc", "rx_queue_size",
				"tx_queue_size", "x-txtimer", "x-txhold", NULL }; *k; k++)
			CHECK(help && strstr(help, *k));
	}
	free(help);

	/* QEMU's defaults. */
	c = parse("");
	CHECK(c && !c->netdev && !c->mac_set && !c->host_mtu && !c->ring.packed &&
	      c->ring.event_idx && c->ring.indirect_desc && c->rx_queue_size == 256 &&
	      c->tx_queue_size == 256 && c->tx == VNET_TX_BH && c->tx_hold);
	cfg_free(c);
	c = parse("x-txhold=off");
	CHECK(c && c->tx == VNET_TX_BH && !c->tx_hold);
	cfg_free(c);
	/* QEMU's tx=timer and its wait in ns, 150 us unless x-txtimer= says. */
	c = parse("tx=timer");
	CHECK(c && c->tx == VNET_TX_TIMER && c->tx_timer_ns == 150000);
	cfg_free(c);
	c = parse("tx=timer,x-txtimer=500000");
	CHECK(c && c->tx == VNET_TX_TIMER && c->tx_timer_ns == 500000);
	cfg_free(c);
	c = parse("tx=timer,x-txtimer=0");
	CHECK(c && c->tx == VNET_TX_TIMER && c->tx_timer_ns == 0);
	cfg_free(c);
	c = parse("tx=bh,x-txtimer=1");
	CHECK(c && c->tx == VNET_TX_BH);
	cfg_free(c);
	c = parse("mac=52:54:00:Ab:cD:01,host_mtu=9000,rx_queue_size=1024,tx_queue_size=512,"
		  "packed=on,event_idx=off,indirect_desc=off");
	CHECK(c && c->mac_set && !memcmp(c->mac, "\x52\x54\x00\xab\xcd\x01", 6) &&
	      c->host_mtu == 9000 && c->rx_queue_size == 1024 && c->tx_queue_size == 512 &&
	      c->ring.packed && !c->ring.event_idx && !c->ring.indirect_desc);
	cfg_free(c);
	c = parse("host_mtu=68");
	CHECK(c && c->host_mtu == 68);
	cfg_free(c);

	check_refused("mac=01:00:00:00:00:00");		/* multicast */
	check_refused("mac=52:54:00:12:34");
	check_refused("mac=52:54:00:12:34:5g");
	check_refused("mac=52-54-00-12-34-56");
	check_refused("host_mtu=10");
	check_refused("host_mtu=65536");
	check_refused("rx_queue_size=128");
	check_refused("tx_queue_size=2048");
	check_refused("rx_queue_size=300");
	check_refused("bogus=1");
	check_refused("tx=later");
	check_refused("tx=timer,x-txtimer=3600000000001");
	check_refused("x-txhold=maybe");
}

/* netdev= names a -netdev user; nothing else will do. */
static void check_resolve_refused(const char *arg, const struct object_set *objs)
{
	const struct device_family *f = family();
	struct vnet_cfg *c = parse(arg);
	char line[256];

	CHECK(c != NULL);
	if (!c)
		return;
	capture_begin();
	CHECK(f->resolve(c, objs) < 0);
	CHECK_EQ(capture_end(line, sizeof(line)), 1);
	cfg_free(c);
}

static void test_netdev_refused(void)
{
	struct object_set *objs = object_set_new();

	CHECK(objs && object_set_add(objs, object_type_find("rng-builtin", 11), "id=r0") == 0);
	check_resolve_refused("netdev=n0", NULL);
	check_resolve_refused("netdev=n0", objs);
	check_resolve_refused("netdev=r0", objs);	/* an -object, not a -netdev */
	object_set_free(objs);
}

static void test_netdev_user(void)
{
	const struct object_type *t = netdev_type_find("user", 4);
	const struct device_family *f = family();
	struct object_set *objs;
	struct vnet_cfg *c;
	char line[256];

	if (!t) {
		check_skip_case("no -netdev user in the object table yet");
		return;
	}
	objs = object_set_new();
	capture_begin();
	int r = objs ? object_set_add(objs, t, "id=n0") : -1;

	capture_end(line, sizeof(line));
	if (r < 0) {
		check_skip_case("-netdev user,id=n0 refused here: %.*s",
				(int)strcspn(line, "\n"), line);
		object_set_free(objs);
		return;
	}
	c = parse("netdev=n0");
	CHECK(c && f->resolve(c, objs) == 0);
	CHECK(c && c->backend && c->backend->id && !strcmp(c->backend->id, "n0") &&
	      c->backend->type && !strcmp(c->backend->type, "user"));
	cfg_free(c);
	object_set_free(objs);
}

/*
 * No netdev=: as QEMU's, a warning and a NIC with its link up whose
 * frames go nowhere, counted as dropped.
 */
static void test_no_netdev(void)
{
	const struct device_family *f = family();
	struct vnet_cfg *c = parse("");
	struct tmachine *t = machine_board(1, false);
	struct net g = { .t = t };
	char line[256];
	uint32_t len;
	int id;

	t->b.m.loop = iothread_new("main");
	capture_begin();
	g.n = c && t->b.m.loop ? f->create(&t->b.m, c, virtio_pci_plug(&t->b.m, f->pci_class))
			       : NULL;
	CHECK_EQ(capture_end(line, sizeof(line)), 1);
	CHECK(strstr(line, "netdev") != NULL);
	CHECK(g.n && vdev_find_id(t, NET_PCI_ID, 0, &g.d));
	if (g.n && nic_start(&g, NUM, ALL_FEATURES)) {
		CHECK_EQ(dev_cfg(&g, &g.d, 6, 2), VIRTIO_NET_S_LINK_UP);
		id = tx_send(&g, 0, 100, 1, 0);
		CHECK(id >= 0 && gq_get_used(&g.q[TXQ], &len) == id && len == 0);
		CHECK_EQ(stats(&g).tx_dropped, 1);
		CHECK(!(vstatus(&g.d) & NEEDS_RESET));
	}
	if (g.n)
		f->destroy(g.n);
	cfg_free(c);
	iothread_free(t->b.m.loop);
	machine_free(t);
}

int main(void)
{
	RUN(test_identity());
	RUN(test_mtu_mac());
	RUN(test_tx(false));
	RUN(test_tx_drop());
	RUN(test_rx_one(false));
	RUN(test_rx_mrg(false));
	RUN(test_rx_wait(false));
	RUN(test_rx_small_chain());
	RUN(test_rx_reset_held());
	RUN(test_rx_late_buffers());
	RUN(test_before_driver_ok());
	RUN(test_hostile(RX_READABLE));
	RUN(test_hostile(TX_WRITABLE));
	RUN(test_hostile(TX_SHORT));
	RUN(test_hostile(RX_TINY_MRG));
	RUN(test_rx_never(false));
	RUN(test_mtu_rx(true));
	RUN(test_mtu_rx(false));
	RUN(test_tx_flood(false));
	RUN(test_rx_flood(false));
	RUN(test_tx_timer(true));
	RUN(test_tx_timer(false));
	RUN(test_tx_timer_zero());
	RUN(test_tx_timer_no_fd());
	RUN(test_tx_timer_rounds());
	RUN(test_tx_hold(false, true));
	RUN(test_tx_hold(false, false));
	RUN(test_tx_hold(true, true));
	RUN(test_tx_hold_off());
	RUN(test_tx_hold_rounds());
	RUN(test_tx(true));
	RUN(test_rx_one(true));
	RUN(test_rx_mrg(true));
	RUN(test_rx_wait(true));
	RUN(test_rx_never(true));
	RUN(test_tx_flood(true));
	RUN(test_rx_flood(true));
	RUN(test_offload_features());
	RUN(test_offload_tx());
	RUN(test_offload_rx(true));
	RUN(test_offload_rx(false));
	RUN(test_rx_pause());
	for (unsigned i = 0; i < 16; i++)
		RUN(test_rx_direct(i & 1, i & 2, i & 4, i & 8 ? HDR_CSUM : HDR_NONE));
	RUN(test_rx_direct(false, true, true, HDR_NO_CSUM));
	RUN(test_rx_direct(true, false, true, HDR_NO_CSUM));
	RUN(test_rx_direct_exact(false));
	RUN(test_rx_direct_exact(true));
	RUN(test_rx_direct_too_long(false));
	RUN(test_rx_direct_too_long(true));
	/* The tests of short buffers again, on a back end with recv: the copy serves them. */
	fake_direct = true;
	RUN(test_rx_one(false));
	RUN(test_rx_one(true));
	RUN(test_rx_mrg(false));
	RUN(test_rx_mrg(true));
	RUN(test_rx_wait(false));
	RUN(test_rx_never(true));
	RUN(test_rx_small_chain());
	RUN(test_rx_reset_held());
	RUN(test_rx_late_buffers());
	RUN(test_hostile(RX_READABLE));
	RUN(test_hostile(RX_TINY_MRG));
	RUN(test_rx_flood(false));
	RUN(test_rx_pause());
	fake_direct = false;
	RUN(test_cmdline());
	RUN(test_netdev_refused());
	RUN(test_netdev_user());
	RUN(test_no_netdev());
	return check_done();
}
