// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-net (VIRTIO 1.2, 5.1) on the modern PCI transport: one queue
 * pair between the guest and a network back end (include/net/net.h).
 *
 * It runs on the main loop (m->loop): a user-networking guest moves
 * little, and slirp runs there too (as in QEMU's main loop), so a frame
 * and its answer cross no thread.  The loop watches both queues' kicks
 * and the back end's rx_fd.
 *
 * Checksum and segmentation offloads are offered only with a back end
 * whose frames carry the virtio-net header (-netdev tap): the guest's
 * header then goes to it as it is, and the back end's comes to the guest
 * with num_buffers set.  With any other back end the header the guest
 * sends is skipped, and the one it receives is empty but for num_buffers.
 *
 * Receive: a frame is taken from the back end only once the buffers
 * popped for it hold header and frame; until then those buffers are held
 * by the device and the frame stays in the back end, so a driver slow to
 * post buffers loses nothing (the back end's own queue bounds what
 * waits).  A frame that can never fit is dropped, never truncated.  A
 * back end with recv (a tap) reads each frame straight into the guest's
 * buffers, no copy, while the held ones take the longest frame it gives;
 * the chains that frame does not use stay held, in order, for the next,
 * rather than go back to the ring: the next read wants them again, and
 * a chain popped twice could read differently the second time.  Frames,
 * not kicks, drive it, so the loop over them is its own, but its chains
 * go through a struct virtio_server as the transmitq's do: popped into
 * cached elements, held ones counted for a reset, each round published
 * with one flush and its interrupt.
 *
 * Each round handles at most VNET_BUDGET frames or chains and then kicks
 * itself to come back, so a flooding guest or back end never holds up the
 * other devices on the loop.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_net.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "hw/machine.h"
#include "hw/object.h"
#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio-plug.h"
#include "hw/virtio/virtio-props.h"
#include "net/net.h"
#include "util/iothread.h"
#include "util/iov.h"
#include "util/log.h"
#include "virtio/virtio-server.h"
#include "virtio/virtio.h"

#define VNET_RXQ 0
#define VNET_TXQ 1
#define VNET_HDR_LEN sizeof(struct virtio_net_hdr_v1)	/* VERSION_1: with num_buffers */
static_assert(VNET_HDR_LEN == NETDEV_VNET_HDR_LEN, "a back end's header is the device's");
/* The largest frame a guest may send: a 64 KiB packet behind its Ethernet header. */
#define VNET_MAX_FRAME (65535 + ETH_HLEN)
#define VNET_BUDGET 256
#define VNET_DEFAULT_QUEUE_SIZE 256

/* The config space up to mtu (VIRTIO 1.2, 5.1.4), little-endian. */
#define CFG_MAC 0
#define CFG_STATUS 6
#define CFG_MAX_PAIRS 8
#define CFG_MTU 10
#define VNET_CONFIG_LEN 12

/* QEMU's first default MAC; each further NIC adds one to the last byte. */
static const uint8_t vnet_default_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

struct vnet {
	struct virtio_device vdev;
	struct virtio_server rx;	/* receiveq's elements, publish, counts and kicks */
	struct virtio_server tx;	/* transmitq's rounds, publish and kicks */
	bool vdev_ready;
	struct virtio_plug *plug;
	struct iothread *loop;
	struct netdev *nd;	/* NULL: no peer */
	bool owns_nd;		/* made by the family: freed with the NIC */
	bool rx_kick_added, tx_kick_added, rx_fd_added, tx_timer_added, tx_fd_added;
	bool rx_watching;	/* the loop watches rx_fd (loop thread only) */
	int tx_timer_fd;	/* tx=timer's, on the loop; -1: kicks served at once */
	uint64_t tx_timer_ns;
	bool tx_timer_armed;	/* loop thread only */
	bool tx_hold;		/* x-txhold=on, tx=bh, and the back end has tx_busy */
	bool tx_holding;	/* kicks off until the back end is idle (loop thread only) */
	uint8_t config[VNET_CONFIG_LEN];
	unsigned held_max;	/* rx_queue_size: the most chains a ring can give */
	unsigned host_mtu;	/* 0: none offered */

	/* under vdev.lock */
	bool mrg;		/* VIRTIO_NET_F_MRG_RXBUF negotiated */
	bool guest_csum;	/* VIRTIO_NET_F_GUEST_CSUM negotiated: rx headers keep their flags */
	bool guest_gso;		/* a GUEST_TSO negotiated: frames over the MTU are segments */
	size_t rx_max;		/* the longest frame the guest takes (VIRTIO_NET_F_MTU's) */
	/* rx chains popped for a frame that does not fit yet, in order: outstanding in rx */
	struct vq_elem **held;
	unsigned nheld;
	unsigned held_slots;	/* the ring slots they take */
	struct iovec *iov;	/* a frame's buffers across chains, for take() */
	unsigned iov_cap;
	/*
	 * For recv only: the held chains' buffers in one vector, from
	 * hiov[1]: the first hiov_chains of them, hiov_n entries, hiov_len
	 * bytes.  Kept as chains come and go, so that a read into every held
	 * chain does not gather them all again; a back end without recv
	 * never pays for it.
	 */
	struct iovec *hiov;
	unsigned hiov_cap, hiov_n, hiov_chains;
	size_t hiov_len;
	struct iovec hiov_saved[2];	/* the entries a view changed, put back after */
	unsigned hiov_saved_at;
	struct vnet_stats stats;
};

static struct vnet *vdev_to_vnet(struct virtio_device *vdev)
{
	return container_of(vdev, struct vnet, vdev);
}

static struct virtqueue *vnet_vq(struct vnet *n, unsigned q)
{
	return &n->vdev.queues[q].vq;
}

/* ---- receive ---- */

enum vnet_fit {
	FIT,		/* the first k held chains take the frame */
	FIT_WAIT,	/* not yet: the driver was asked for a kick when it posts more */
	FIT_NEVER,	/* the frame cannot fit, whatever the driver posts */
	FIT_BROKEN,	/* the driver broke the rules: NEEDS_RESET */
};

/*
 * A held rx chain and its length, summed once when popped: fitting a
 * frame, reading into the chains and filling them each want it, and a
 * chain may be many buffers.
 */
struct vnet_rx_chain {
	struct vs_req r;	/* first: the server's cache holds the whole */
	size_t len;
};

static struct vs_req *vnet_rx_req(struct vq_elem *e)
{
	return container_of(e, struct vs_req, elem);
}

static size_t vnet_chain_len(const struct vq_elem *e)
{
	return container_of(e, const struct vnet_rx_chain, r.elem)->len;
}

/* A chain the driver broke the rules with: back unused, and NEEDS_RESET. */
static enum vnet_fit vnet_rx_bad(struct vnet *n, struct vq_elem *e, const char *why)
{
	virtio_server_drop_locked(&n->rx, vnet_rx_req(e));
	virtio_error(&n->vdev, "virtio-net: %s", why);
	return FIT_BROKEN;
}

/* Pops one more rx chain onto the held ones. */
static enum vnet_fit vnet_rx_pop(struct vnet *n)
{
	struct virtqueue *vq = vnet_vq(n, VNET_RXQ);
	struct vs_req *r;
	struct vq_elem *e;
	int ret = virtio_server_pop_locked(&n->rx, &r);

	if (ret == 0)
		return FIT_WAIT;
	if (ret < 0)
		return FIT_BROKEN;
	e = &r->elem;
	/* VIRTIO 1.2, 5.1.6.3.1: receive buffers are device-writable. */
	if (e->out_num)
		return vnet_rx_bad(n, e, "device-readable buffer in receiveq");
	/*
	 * 5.1.6.3.1 again: with MRG_RXBUF each buffer holds at least the
	 * header, which therefore never straddles two of them.
	 */
	container_of(r, struct vnet_rx_chain, r)->len = iov_size(e->in_sg, e->in_num);
	if (n->mrg && vnet_chain_len(e) < VNET_HDR_LEN)
		return vnet_rx_bad(n, e, "receive buffer shorter than the header");
	n->held[n->nheld++] = e;
	/* Kept in the element: the driver may rewrite its ring meanwhile. */
	e->ndescs = (uint16_t)virtqueue_elem_slots(vq, e);
	n->held_slots += e->ndescs;
	return FIT;
}

/*
 * Without MRG_RXBUF one chain takes the whole frame.  One too small is
 * kept for the next frame, as QEMU's virtqueue_unpop() does, rather than
 * returned empty: a driver posts buffers of one size, so it is as good
 * as any for a smaller frame, and an empty used buffer is a length error
 * in the guest's counters for a drop that is the host's doing.
 */
static enum vnet_fit vnet_rx_fit_one(struct vnet *n, size_t need, unsigned *k)
{
	enum vnet_fit r = n->nheld ? FIT : vnet_rx_pop(n);

	if (r != FIT)
		return r;
	*k = 1;
	return vnet_chain_len(n->held[0]) < need ? FIT_NEVER : FIT;
}

/*
 * With MRG_RXBUF as many chains as the frame needs.  Once the device
 * holds every slot of the ring (each chain says how many it holds) and
 * the chains are still too few, no posting can make them enough: the
 * frame is dropped, or every frame behind it would wait for good.
 */
static enum vnet_fit vnet_rx_fit_mrg(struct vnet *n, size_t need, unsigned *k)
{
	unsigned num = vnet_vq(n, VNET_RXQ)->num;
	size_t have = 0;

	for (unsigned i = 0;; i++) {
		if (i == n->nheld) {
			enum vnet_fit r = n->held_slots >= num || n->nheld >= n->held_max ?
					   FIT_NEVER : vnet_rx_pop(n);

			if (r != FIT)
				return r;
		}
		have += vnet_chain_len(n->held[i]);
		if (have >= need) {
			*k = i + 1;
			return FIT;
		}
	}
}

/*
 * Where take() puts a frame for the first k held chains: the back end's
 * virtio-net header (if it has one) into hdr, the frame after the
 * header's bytes of the chains.  NULL if out of memory.
 */
static struct iovec *vnet_rx_iov(struct vnet *n, unsigned k, void *hdr, unsigned *cnt)
{
	unsigned total = 1;

	for (unsigned i = 0; i < k; i++)
		total += n->held[i]->in_num;
	if (total > n->iov_cap) {
		struct iovec *iov = realloc(n->iov, total * sizeof(*iov));

		if (!iov)
			return NULL;
		n->iov = iov;
		n->iov_cap = total;
	}
	*cnt = 0;
	for (unsigned i = 0; i < k; i++) {
		memcpy(n->iov + 1 + *cnt, n->held[i]->in_sg, n->held[i]->in_num * sizeof(*n->iov));
		*cnt += n->held[i]->in_num;
	}
	struct iovec *iov = iov_skip(n->iov + 1, cnt, VNET_HDR_LEN);

	if (!n->nd->vnet_hdr_len)
		return iov;
	/* The vector's first slot is spare, so one before iov is ours. */
	iov[-1] = (struct iovec){ hdr, n->nd->vnet_hdr_len };
	++*cnt;
	return iov - 1;
}

/*
 * The first k held chains, which hold the frame of len bytes (its back
 * end's header included; the header itself in *hdr), to the guest: the
 * header in place, each chain into the round's batch with what it got.
 */
static inline void vnet_rx_complete(struct vnet *n, unsigned k, size_t len,
				    struct virtio_net_hdr_v1 *hdr, struct vs_batch *done)
{
	size_t left = VNET_HDR_LEN + len - n->nd->vnet_hdr_len;

	/*
	 * VIRTIO 1.2, 5.1.6.4.1: without GUEST_CSUM the flags are zero (the
	 * kernel's tap marks checksums it verified whatever it was told).
	 */
	if (!n->guest_csum)
		hdr->flags = 0;
	hdr->num_buffers = htole16((uint16_t)k);
	iov_copy(n->held[0]->in_sg, n->held[0]->in_num, 0, hdr, VNET_HDR_LEN, false);
	for (unsigned i = 0; i < k; i++) {
		size_t got = vnet_chain_len(n->held[i]);

		got = got < left ? got : left;
		vnet_rx_req(n->held[i])->used_len = (uint32_t)got;
		vs_batch_add(done, vnet_rx_req(n->held[i]));
		left -= got;
		n->held_slots -= n->held[i]->ndescs;
	}
	n->nheld -= k;
	memmove(n->held, n->held + k, n->nheld * sizeof(*n->held));
}

/*
 * The frame of len bytes (its back end's header included) copied into
 * the first k held chains.  false: no memory to describe the buffers,
 * nothing done.
 */
static bool vnet_rx_deliver(struct vnet *n, unsigned k, size_t len, struct vs_batch *done)
{
	struct virtio_net_hdr_v1 hdr = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	unsigned cnt;
	struct iovec *iov = vnet_rx_iov(n, k, &hdr, &cnt);

	if (!iov)
		return false;
	n->nd->ops->take(n->nd, iov, cnt);
	vnet_rx_complete(n, k, len, &hdr, done);
	/* With recv, n->hiov held those chains: the next read gathers it again. */
	n->hiov_chains = n->hiov_n = 0;
	n->hiov_len = 0;
	return true;
}

/* The back end's next frame, which fits nowhere: gone, and counted. */
static void vnet_rx_drop(struct vnet *n)
{
	n->nd->ops->take(n->nd, NULL, 0);
	n->stats.rx_dropped++;
}

/* Stops or resumes the loop's watch on the back end's rx_fd. */
static void vnet_rx_watch(struct vnet *n, bool on)
{
	if (n->rx_fd_added && n->rx_watching != on) {
		iothread_watch_fd(n->loop, n->nd->rx_fd, on);
		n->rx_watching = on;
	}
}

/*
 * Is the frame of len bytes (with the back end's header) one the guest
 * can never take?  VIRTIO 1.2, 5.1.6.3.2: with F_MTU negotiated no frame
 * longer than the MTU and its Ethernet header reaches the driver, but a
 * guest taking TSO segments takes them up to 64 KiB.
 */
static bool vnet_rx_too_long(struct vnet *n, size_t len)
{
	size_t hl = n->nd->vnet_hdr_len;

	return len < hl || (len - hl > n->rx_max && !n->guest_gso);
}

/* Every held chain's buffers in n->hiov (hiov_len is the caller's); false if out of memory. */
static bool vnet_rx_hiov_grow(struct vnet *n)
{
	unsigned total = n->hiov_n + 2;	/* the spare slot, and one past the end */

	for (unsigned i = n->hiov_chains; i < n->nheld; i++)
		total += n->held[i]->in_num;
	if (total > n->hiov_cap) {
		struct iovec *iov = realloc(n->hiov, total * sizeof(*iov));

		if (!iov)
			return false;
		n->hiov = iov;
		n->hiov_cap = total;
	}
	for (; n->hiov_chains < n->nheld; n->hiov_chains++) {
		const struct vq_elem *e = n->held[n->hiov_chains];

		memcpy(n->hiov + 1 + n->hiov_n, e->in_sg, e->in_num * sizeof(*n->hiov));
		n->hiov_n += e->in_num;
	}
	return true;
}

/*
 * Where recv() puts a frame for every held chain: as vnet_rx_iov(), but
 * in n->hiov, whose entries the view changes are the one the header's
 * bytes end in and the one before (the header's own slot):
 * vnet_rx_view_put() puts them back.
 */
static struct iovec *vnet_rx_view(struct vnet *n, void *hdr, unsigned *cnt)
{
	unsigned at = 1, c;
	size_t skip = VNET_HDR_LEN;

	for (c = n->hiov_n; c && skip >= n->hiov[at].iov_len; c--)
		skip -= n->hiov[at++].iov_len;
	n->hiov_saved_at = at;
	n->hiov_saved[0] = n->hiov[at - 1];
	n->hiov_saved[1] = n->hiov[at];
	if (c && skip) {
		n->hiov[at].iov_base = (uint8_t *)n->hiov[at].iov_base + skip;
		n->hiov[at].iov_len -= skip;
	}
	*cnt = c;
	if (!n->nd->vnet_hdr_len)
		return n->hiov + at;
	n->hiov[at - 1] = (struct iovec){ hdr, n->nd->vnet_hdr_len };
	++*cnt;
	return n->hiov + at - 1;
}

static void vnet_rx_view_put(struct vnet *n)
{
	n->hiov[n->hiov_saved_at - 1] = n->hiov_saved[0];
	n->hiov[n->hiov_saved_at] = n->hiov_saved[1];
}

/*
 * How many of the held chains a frame of need bytes (the guest's header
 * on) fills: they go to the guest, and their buffers leave n->hiov.
 */
static unsigned vnet_rx_hiov_take(struct vnet *n, size_t need)
{
	size_t have = 0;
	unsigned k = 0, m = 0;

	do {
		have += vnet_chain_len(n->held[k]);
		m += n->held[k++]->in_num;
	} while (n->mrg && have < need);
	n->hiov_len -= have;
	n->hiov_n -= m;
	n->hiov_chains -= k;
	memmove(n->hiov + 1, n->hiov + 1 + m, n->hiov_n * sizeof(*n->hiov));
	return k;
}

/*
 * Pops chains until the held ones take need bytes: with MRG_RXBUF as many
 * as that takes, without it the one chain must.  FIT_NEVER when the ring
 * cannot give that much (or there is no memory to describe it), FIT_WAIT
 * when the driver has not posted it yet.
 */
static enum vnet_fit vnet_rx_cover(struct vnet *n, size_t need)
{
	unsigned num = vnet_vq(n, VNET_RXQ)->num;
	size_t have = n->hiov_len;

	/* All the held chains go into n->hiov: those not there yet counted too. */
	for (unsigned i = n->hiov_chains; i < n->nheld; i++)
		have += vnet_chain_len(n->held[i]);
	while (have < need) {
		/* Without MRG_RXBUF the one chain must take it all. */
		enum vnet_fit r = n->nheld && (!n->mrg || n->held_slots >= num ||
					       n->nheld >= n->held_max) ? FIT_NEVER : vnet_rx_pop(n);

		if (r != FIT)
			return r;
		have += vnet_chain_len(n->held[n->nheld - 1]);
	}
	/* Once, not per chain popped: a call costs more than the chain. */
	if (!vnet_rx_hiov_grow(n))
		return FIT_NEVER;
	n->hiov_len = have;
	return FIT;
}

enum vnet_direct {
	DIRECT_DONE,	/* a frame was given to the guest, or dropped */
	DIRECT_IDLE,	/* the back end has no frame */
	DIRECT_COPY,	/* the held chains cannot take every frame: peek and take */
	DIRECT_BROKEN,	/* the driver broke the rules: NEEDS_RESET */
};

/*
 * The back end's next frame read straight into the held chains, once
 * they take the longest it may give: then no frame can be cut short, nor
 * need chains that are not there yet.  The header is read into hdr, not
 * the guest's buffer: the guest must see the one the copy would give it,
 * and its own memory is no place to read that back from.
 */
static enum vnet_direct vnet_rx_direct(struct vnet *n, struct vs_batch *done)
{
	struct virtio_net_hdr_v1 hdr = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };
	size_t hl = n->nd->vnet_hdr_len, len, cap;
	/* net.h: a byte to spare past the longest frame. */
	enum vnet_fit r = vnet_rx_cover(n, VNET_HDR_LEN + n->nd->rx_max_len - hl + 1);
	struct iovec *iov;
	unsigned cnt;

	if (r == FIT_BROKEN)
		return DIRECT_BROKEN;
	if (r != FIT)
		return DIRECT_COPY;
	iov = vnet_rx_view(n, &hdr, &cnt);
	/* What the chains hold but the header, and the back end's header. */
	cap = n->hiov_len - VNET_HDR_LEN + hl;
	len = cnt <= IOV_MAX ? n->nd->ops->recv(n->nd, iov, cnt, cap) : SIZE_MAX;
	vnet_rx_view_put(n);
	if (len == SIZE_MAX)
		return DIRECT_COPY;
	if (!len)
		return DIRECT_IDLE;
	if (len >= cap || vnet_rx_too_long(n, len)) {
		/* Nothing was used: the chains stay held for the next frame. */
		n->stats.rx_dropped++;
		return DIRECT_DONE;
	}
	vnet_rx_complete(n, vnet_rx_hiov_take(n, VNET_HDR_LEN + len - hl), len, &hdr, done);
	n->stats.rx_frames++;
	return DIRECT_DONE;
}

static void vnet_rx_notify(struct virtio_server *sv)
{
	virtio_notify(sv->vdev, VNET_RXQ);
}

/* Publish and interrupt only: receiveq pops on its own terms. */
static const struct virtio_server_ops vnet_rx_ops = {
	.notify = vnet_rx_notify,
};

/*
 * Gives the guest what the back end has, while its buffers last: one
 * publish, so one flush and at most one interrupt, for the round.
 */
static void vnet_rx_locked(struct vnet *n)
{
	struct virtio_device *vdev = &n->vdev;
	struct vs_batch done;
	unsigned frames = 0;
	bool idle = false;	/* the back end has nothing for the guest now */

	vs_batch_init(&done);
	vnet_rx_watch(n, true);
	while (n->rx.serving && !vdev->broken && frames < VNET_BUDGET && n->nd) {
		enum vnet_direct d = n->nd->ops->recv ? vnet_rx_direct(n, &done) : DIRECT_COPY;

		if (d == DIRECT_BROKEN)
			break;
		if (d != DIRECT_COPY) {
			idle = d == DIRECT_IDLE;
			if (idle)
				break;
			frames++;
			continue;
		}
		size_t len = n->nd->ops->peek(n->nd);
		unsigned k = 0;

		if (!len) {
			idle = true;
			break;
		}
		size_t need = VNET_HDR_LEN + len - n->nd->vnet_hdr_len;
		enum vnet_fit r = vnet_rx_too_long(n, len) ? FIT_NEVER :
				  n->mrg ? vnet_rx_fit_mrg(n, need, &k) :
				  vnet_rx_fit_one(n, need, &k);

		if (r == FIT_WAIT || r == FIT_BROKEN)
			break;
		frames++;
		if (r == FIT_NEVER || !vnet_rx_deliver(n, k, len, &done))
			vnet_rx_drop(n);
		else
			n->stats.rx_frames++;
	}
	/* A broken device touches the rings no more: publish only drops. */
	if (done.head)
		virtio_server_publish_locked(&n->rx, &vnet_rx_ops, done.head);
	if (frames == VNET_BUDGET) {
		virtio_server_kick(&n->rx);
	} else if (idle && n->nd->rx_gone) {
		iothread_del_fd(n->loop, n->nd->rx_fd);
		n->rx_fd_added = false;
	} else if (!idle && n->nd) {
		/*
		 * Frames wait for buffers the driver has not posted, for
		 * DRIVER_OK or after a reset: a readable rx_fd would only spin
		 * the loop.  The driver's next kick, or start, brings it back.
		 */
		vnet_rx_watch(n, false);
	}
}

/* Serves under the device lock. */
static void vnet_serve(struct vnet *n, void (*locked)(struct vnet *n))
{
	pthread_mutex_lock(&n->vdev.lock);
	locked(n);
	pthread_mutex_unlock(&n->vdev.lock);
}

/* A kick: clear it (a read that finds it already clear is fine), then serve. */
static void vnet_kicked(struct vnet *n, unsigned q, void (*locked)(struct vnet *n))
{
	eventfd_t cnt;

	if (eventfd_read(n->vdev.queues[q].kick_fd, &cnt) < 0 && errno != EAGAIN)
		return;
	vnet_serve(n, locked);
}

static void vnet_rx_kick(void *opaque)
{
	struct vnet *n = opaque;

	vnet_kicked(n, VNET_RXQ, vnet_rx_locked);
}

/* The back end has frames: rx_fd is the back end's to clear (in peek). */
static void vnet_rx_ready(void *opaque)
{
	vnet_serve(opaque, vnet_rx_locked);
}

/* ---- transmit ---- */

/*
 * One chain's frame to the back end, answered at once with nothing
 * written (0); -1 with *why when the driver broke the rules.
 */
static int vnet_tx_parse(struct virtio_server *sv, struct vs_req *req, const char **why)
{
	struct vnet *n = container_of(sv, struct vnet, tx);
	struct vq_elem *e = &req->elem;
	size_t size = iov_size(e->out_sg, e->out_num);
	unsigned cnt = e->out_num;
	struct iovec *iov;

	/* VIRTIO 1.2, 5.1.6.2.1: nothing in transmitq is for the device to write. */
	if (e->in_num) {
		*why = "device-writable buffer in transmitq";
		return -1;
	}
	if (size < VNET_HDR_LEN) {
		*why = "transmit buffer shorter than the header";
		return -1;
	}
	req->used_len = 0;
	size -= VNET_HDR_LEN;
	if (size < ETH_HLEN || size > VNET_MAX_FRAME || !n->nd) {
		n->stats.tx_dropped++;
		return 0;
	}
	/*
	 * The element is ours to the end: its vector may be cut in place.  A
	 * back end that carries the header gets the driver's as it is: the
	 * kernel checks its offload fields as it checks any tap writer's.
	 */
	iov = iov_skip(e->out_sg, &cnt, VNET_HDR_LEN - n->nd->vnet_hdr_len);
	if (!n->nd->ops->send(n->nd, iov, cnt, size + n->nd->vnet_hdr_len))
		n->stats.tx_dropped++;
	else
		n->stats.tx_frames++;
	return 0;
}

static void vnet_tx_notify(struct virtio_server *sv)
{
	virtio_notify(sv->vdev, VNET_TXQ);
}

/* One round of VNET_BUDGET chains a kick, as the receive side's. */
static const struct virtio_server_ops vnet_tx_ops = {
	.round_max = VNET_BUDGET,
	.rounds = 1,
	.parse = vnet_tx_parse,
	.notify = vnet_tx_notify,
};

/*
 * tx=timer, as QEMU's: a kick turns kicks off and starts the wait; the
 * frames the driver queues meanwhile cost it no exit, and go out with
 * the first when the wait ends, answered with one interrupt.  A kick
 * during the wait (the driver had not seen kicks turned off) sends at
 * once.  The round that serves them turns kicks back on once the ring is
 * empty; a full round (256, QEMU's burst) kicks itself, which starts
 * another wait if more are queued (QEMU waits again even if none are),
 * and so does a frame the round finds as it turns kicks back on (QEMU
 * sends that one first).  A guest sending a frame at a time pays a kick,
 * an interrupt and a wait each.
 *
 * True when the wait started; false when there is nothing to wait for.
 */
static bool vnet_tx_defer(struct vnet *n)
{
	struct itimerspec its = {
		.it_value = { (time_t)(n->tx_timer_ns / 1000000000u),
			      (long)(n->tx_timer_ns % 1000000000u) },
	};
	bool wait;

	pthread_mutex_lock(&n->vdev.lock);
	wait = n->tx.serving && !n->vdev.broken && virtqueue_has_work(vnet_vq(n, VNET_TXQ));
	if (wait)
		virtqueue_set_notification(vnet_vq(n, VNET_TXQ), false);
	pthread_mutex_unlock(&n->vdev.lock);
	/* Cannot fail with a valid time; if it did, late is worse than now. */
	if (!wait || timerfd_settime(n->tx_timer_fd, 0, &its, NULL) < 0)
		return false;
	n->tx_timer_armed = true;
	return true;
}

/*
 * tx=bh (and x-txtimer=0): frames go to the back end as the kick comes.
 * A back end with queues (user at the loop's next turn, stream on its
 * thread) then works on them while the driver queues the next; were kicks on meanwhile, each frame
 * would cost the guest a kick and an interrupt of its own.  So while the back end is
 * busy with what it was given, kicks stay off (x-txhold): what the driver
 * queues goes in one round once it is idle, and a stream costs a kick
 * and an interrupt per such round.  QEMU's bottom half gets the same by
 * running its back end inside the round.  A lone frame still goes at
 * once: the hold starts after it.
 */
static void vnet_tx_serve(struct vnet *n)
{
	struct virtqueue *vq = vnet_vq(n, VNET_TXQ);

	virtio_server_serve(&n->tx, &vnet_tx_ops);
	if (!n->tx_hold || !n->nd->ops->tx_busy(n->nd))
		return;
	/* Held even when not serving: the back end's idle kick ends it. */
	n->tx_holding = true;
	pthread_mutex_lock(&n->vdev.lock);
	if (n->tx.serving && !n->vdev.broken)
		virtqueue_set_notification(vq, false);
	pthread_mutex_unlock(&n->vdev.lock);
}

/* The back end has taken every frame it was given: serve what the driver queued meanwhile. */
static void vnet_tx_idle(void *opaque)
{
	struct vnet *n = opaque;
	eventfd_t cnt;

	/* EAGAIN: a handler already due after the clear finds nothing to do but serve. */
	(void)eventfd_read(n->nd->tx_fd, &cnt);
	n->tx_holding = false;
	vnet_tx_serve(n);
}

static void vnet_tx_kick(void *opaque)
{
	static const struct itimerspec off;
	struct vnet *n = opaque;

	/* A driver that had not seen kicks turned off: the hold's end serves it. */
	if (n->tx_holding)
		return;

	if (n->tx_timer_fd >= 0 && !n->tx_timer_armed && vnet_tx_defer(n))
		return;
	if (n->tx_timer_armed) {
		/* Disarmed, its count cleared: a handler already due reads nothing. */
		(void)timerfd_settime(n->tx_timer_fd, 0, &off, NULL);
		n->tx_timer_armed = false;
	}
	/*
	 * Also after a full round's self-kick that finds the ring empty:
	 * serving an empty ring turns kicks back on, or they stay off.
	 */
	vnet_tx_serve(n);
}

static void vnet_tx_timer(void *opaque)
{
	struct vnet *n = opaque;
	uint64_t ticks;

	if (read(n->tx_timer_fd, &ticks, sizeof(ticks)) < 0)
		return;		/* not expired after all (EAGAIN) */
	n->tx_timer_armed = false;
	virtio_server_serve(&n->tx, &vnet_tx_ops);
}

/* ---- the virtio device ---- */

static void vnet_read_config(struct virtio_device *vdev, uint32_t off, void *buf,
			     unsigned len)
{
	struct vnet *n = vdev_to_vnet(vdev);

	if (off < VNET_CONFIG_LEN)
		memcpy(buf, n->config + off,
		       len < VNET_CONFIG_LEN - off ? len : VNET_CONFIG_LEN - off);
}

/* The MAC is the driver's to write only with CTRL_MAC_ADDR, never offered: ignore. */
static void vnet_write_config(struct virtio_device *vdev, uint32_t off,
			      const void *buf, unsigned len)
{
	(void)vdev;
	(void)off;
	(void)buf;
	(void)len;
}

/* The held chains back unused: the driver that posted them is gone. */
static void vnet_rx_drop_held(struct vnet *n)
{
	for (unsigned i = 0; i < n->nheld; i++)
		virtio_server_drop_locked(&n->rx, vnet_rx_req(n->held[i]));
	n->nheld = 0;
	n->held_slots = 0;
	n->hiov_n = 0;
	n->hiov_chains = 0;
	n->hiov_len = 0;
}

static bool has(uint64_t features, unsigned bit)
{
	return features >> bit & 1;
}

/*
 * What the guest takes, in the back end's terms.  VIRTIO 1.2, 5.1.3.1:
 * TSO and ECN only with what they depend on; a driver that acked them
 * alone gets none (the kernel's tap refuses TSO without checksums).
 */
static unsigned vnet_rx_offloads(uint64_t f)
{
	unsigned o = 0;

	if (!has(f, VIRTIO_NET_F_GUEST_CSUM))
		return 0;
	o |= NETDEV_OFFLOAD_CSUM;
	if (has(f, VIRTIO_NET_F_GUEST_TSO4))
		o |= NETDEV_OFFLOAD_TSO4;
	if (has(f, VIRTIO_NET_F_GUEST_TSO6))
		o |= NETDEV_OFFLOAD_TSO6;
	if (o & (NETDEV_OFFLOAD_TSO4 | NETDEV_OFFLOAD_TSO6) && has(f, VIRTIO_NET_F_GUEST_ECN))
		o |= NETDEV_OFFLOAD_ECN;
	return o;
}

static int vnet_start(struct virtio_device *vdev)
{
	struct vnet *n = vdev_to_vnet(vdev);
	unsigned offloads = vnet_rx_offloads(vdev->guest_features);

	/* Offered only with a header to carry them: a bare back end sees none. */
	if (n->nd && n->nd->vnet_hdr_len)
		n->nd->ops->set_offload(n->nd, offloads);
	n->guest_csum = offloads & NETDEV_OFFLOAD_CSUM;
	n->guest_gso = offloads & (NETDEV_OFFLOAD_TSO4 | NETDEV_OFFLOAD_TSO6);
	n->mrg = vdev->guest_features >> VIRTIO_NET_F_MRG_RXBUF & 1;
	n->rx_max = vdev->guest_features >> VIRTIO_NET_F_MTU & 1 ?
		    n->host_mtu + (size_t)ETH_HLEN : SIZE_MAX;
	virtio_server_start_locked(&n->rx, vdev->queues[VNET_RXQ].ready);
	virtio_server_start_locked(&n->tx, vdev->queues[VNET_TXQ].ready);
	/* What the driver queued before DRIVER_OK, and frames waiting, are served on the loop. */
	if (n->rx.serving)
		virtio_server_kick(&n->rx);
	if (n->tx.serving)
		virtio_server_kick(&n->tx);
	return 0;
}

static void vnet_reset(struct virtio_device *vdev)
{
	struct vnet *n = vdev_to_vnet(vdev);

	virtio_server_reset_locked(&n->rx);
	virtio_server_reset_locked(&n->tx);
	vnet_rx_drop_held(n);
}

static const struct virtio_device_ops vnet_ops = {
	.read_config = vnet_read_config,
	.write_config = vnet_write_config,
	.start = vnet_start,
	.reset = vnet_reset,
};

/* Checksum and segmentation offloads: with a back end whose frames carry the header. */
#define VNET_OFFLOAD_FEATURES \
	(1ull << VIRTIO_NET_F_CSUM | 1ull << VIRTIO_NET_F_GUEST_CSUM | \
	 1ull << VIRTIO_NET_F_GUEST_TSO4 | 1ull << VIRTIO_NET_F_GUEST_TSO6 | \
	 1ull << VIRTIO_NET_F_GUEST_ECN | 1ull << VIRTIO_NET_F_HOST_TSO4 | \
	 1ull << VIRTIO_NET_F_HOST_TSO6 | 1ull << VIRTIO_NET_F_HOST_ECN)

static uint64_t vnet_features(const struct vnet_cfg *cfg, const struct netdev *nd)
{
	uint64_t f = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_NET_F_MAC |
		     1ull << VIRTIO_NET_F_STATUS | 1ull << VIRTIO_NET_F_MRG_RXBUF;

	if (nd && nd->vnet_hdr_len)
		f |= VNET_OFFLOAD_FEATURES;

	/* As QEMU's: the MTU is advice only when host_mtu= gave one. */
	if (cfg->host_mtu)
		f |= 1ull << VIRTIO_NET_F_MTU;
	return f | virtio_ring_features(&cfg->ring);
}

static void put_le16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

/* mac= or the board's next default, which only NICs without mac= use up, as QEMU's. */
static void vnet_config_init(struct vnet *n, struct machine *m, const struct vnet_cfg *cfg)
{
	if (cfg->mac_set) {
		memcpy(n->config + CFG_MAC, cfg->mac, 6);
	} else {
		memcpy(n->config + CFG_MAC, vnet_default_mac, 6);
		n->config[CFG_MAC + 5] = (uint8_t)(vnet_default_mac[5] + m->nic_macs++);
	}
	put_le16(n->config + CFG_STATUS, VIRTIO_NET_S_LINK_UP);
	put_le16(n->config + CFG_MAX_PAIRS, 1);
	put_le16(n->config + CFG_MTU, (uint16_t)cfg->host_mtu);
}

static unsigned vnet_queue_size(unsigned size)
{
	return size ? size : VNET_DEFAULT_QUEUE_SIZE;
}

static int vnet_watch(struct vnet *n)
{
	if (iothread_add_fd(n->loop, n->vdev.queues[VNET_RXQ].kick_fd, vnet_rx_kick, n) < 0)
		return -1;
	n->rx_kick_added = true;
	if (iothread_add_event(n->loop, n->vdev.queues[VNET_TXQ].kick_fd, vnet_tx_kick, n) < 0)
		return -1;
	n->tx_kick_added = true;
	if (n->tx_timer_fd >= 0 &&
	    iothread_add_fd(n->loop, n->tx_timer_fd, vnet_tx_timer, n) < 0)
		return -1;
	n->tx_timer_added = n->tx_timer_fd >= 0;
	if (n->tx_hold && iothread_add_fd(n->loop, n->nd->tx_fd, vnet_tx_idle, n) < 0)
		return -1;
	n->tx_fd_added = n->tx_hold;
	if (n->nd && iothread_add_fd(n->loop, n->nd->rx_fd, vnet_rx_ready, n) < 0)
		return -1;
	n->rx_fd_added = n->nd != NULL;
	n->rx_watching = n->rx_fd_added;
	return 0;
}

/* The device and its queues, each with the size its property gave. */
static int vnet_device_init(struct vnet *n, struct machine *m, const struct vnet_cfg *cfg)
{
	unsigned rx = vnet_queue_size(cfg->rx_queue_size);
	unsigned tx = vnet_queue_size(cfg->tx_queue_size);

	n->held_max = rx;
	n->held = calloc(rx, sizeof(*n->held));
	if (!n->held) {
		error_report("virtio-net: out of memory");
		return -1;
	}
	if (virtio_device_init(&n->vdev, VIRTIO_ID_NET, vnet_features(cfg, n->nd), VNET_CONFIG_LEN,
			       2, (uint16_t)rx, &m->mem, &vnet_ops, n) < 0)
		return -1;
	virtio_server_init(&n->rx, "virtio-net", &n->vdev, VNET_RXQ, &vnet_rx_ops,
			   sizeof(struct vnet_rx_chain), rx);
	virtio_server_init(&n->tx, "virtio-net", &n->vdev, VNET_TXQ, &vnet_tx_ops,
			   sizeof(struct vs_req), tx);
	n->vdev_ready = true;
	/* init gave both rx's size; a reset brings the queue back to max_size. */
	assert(tx && tx <= VIRTQUEUE_MAX_SIZE && !(tx & (tx - 1)));
	n->vdev.queues[VNET_TXQ].max_size = (uint16_t)tx;
	n->vdev.queues[VNET_TXQ].vq.num = (uint16_t)tx;
	return 0;
}

struct vnet *vnet_create(struct machine *m, const struct vnet_cfg *cfg,
			 struct virtio_plug *plug, struct netdev *nd)
{
	struct vnet *n = calloc(1, sizeof(*n));

	assert(plug);
	if (!n || !m->loop) {
		error_report("virtio-net: %s", n ? "no main loop to serve it" : "out of memory");
		virtio_unplug(plug);
		free(n);
		return NULL;
	}
	n->plug = plug;
	n->loop = m->loop;
	n->nd = nd;
	n->host_mtu = cfg->host_mtu;
	n->tx_timer_fd = -1;
	/* x-txtimer=0 is QEMU's next turn of its loop: served at once here. */
	if (cfg->tx == VNET_TX_TIMER && cfg->tx_timer_ns) {
		assert(cfg->tx_timer_ns <= VNET_TX_TIMER_MAX_NS);
		n->tx_timer_ns = cfg->tx_timer_ns;
		n->tx_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (n->tx_timer_fd < 0) {
			error_report("virtio-net: tx=timer: no timer: %s", strerror(errno));
			goto fail;
		}
	}
	n->tx_hold = n->tx_timer_fd < 0 && cfg->tx_hold && nd && nd->ops->tx_busy;
	vnet_config_init(n, m, cfg);
	if (vnet_device_init(n, m, cfg) < 0)
		goto fail;
	if (vnet_watch(n) < 0) {
		error_report("virtio-net: cannot watch its queues: %s", strerror(errno));
		goto fail;
	}
	if (virtio_plug(n->plug, &n->vdev, NULL) < 0)
		goto fail;
	return n;
fail:
	vnet_free(n);
	return NULL;
}

void vnet_free(struct vnet *n)
{
	if (!n)
		return;
	/* No register access after this: nothing starts serving again. */
	virtio_unplug(n->plug);
	/* Each returns once its handler is not running, and it runs no more. */
	if (n->rx_kick_added)
		iothread_del_fd(n->loop, n->vdev.queues[VNET_RXQ].kick_fd);
	if (n->tx_kick_added)
		iothread_del_fd(n->loop, n->vdev.queues[VNET_TXQ].kick_fd);
	if (n->rx_fd_added)
		iothread_del_fd(n->loop, n->nd->rx_fd);
	if (n->tx_timer_added)
		iothread_del_fd(n->loop, n->tx_timer_fd);
	if (n->tx_fd_added)
		iothread_del_fd(n->loop, n->nd->tx_fd);
	if (n->tx_timer_fd >= 0)
		close(n->tx_timer_fd);
	vnet_rx_drop_held(n);
	free(n->held);
	free(n->iov);
	free(n->hiov);
	if (n->vdev_ready) {
		virtio_server_destroy(&n->rx);
		virtio_server_destroy(&n->tx);
		virtio_device_destroy(&n->vdev);
	}
	if (n->owns_nd)
		netdev_free(n->nd);
	free(n);
}

int vnet_tx_timer_fd(const struct vnet *n)
{
	return n->tx_timer_fd;
}

void vnet_get_stats(struct vnet *n, struct vnet_stats *s)
{
	pthread_mutex_lock(&n->vdev.lock);
	*s = n->stats;
	pthread_mutex_unlock(&n->vdev.lock);
}

/* ---- -device virtio-net-pci ---- */

#define V(f, t) OPT_AT(struct vnet_cfg, f, t)
static const struct opt_prop vnet_props[] = {
	{ "netdev", OPT_ID, V(netdev, char *),
	  .def = "none: no peer, the guest's frames are dropped",
	  .help = "the -netdev that carries the NIC's frames" },
	{ "mac", OPT_STRBUF, V(mac_str, char[18]), .max = 17,
	  .def = "52:54:00:12:34:56, one more for each further NIC",
	  .help = "the NIC's MAC address, xx:xx:xx:xx:xx:xx" },
	{ "host_mtu", OPT_UINT, V(host_mtu, unsigned), .min = VNET_MIN_MTU,
	  .max = VNET_MAX_MTU, .def = "none (no VIRTIO_NET_F_MTU)",
	  .help = "the MTU offered to the guest" },
	VIRTIO_RING_PROPS(struct vnet_cfg, ring),
	{ "rx_queue_size", OPT_UINT, V(rx_queue_size, unsigned), OPT_POW2,
	  .min = VNET_MIN_QUEUE_SIZE, .max = VNET_MAX_QUEUE_SIZE, .def = "256",
	  .help = "receive ring entries" },
	{ "tx_queue_size", OPT_UINT, V(tx_queue_size, unsigned), OPT_POW2,
	  .min = VNET_MIN_QUEUE_SIZE, .max = VNET_MAX_QUEUE_SIZE, .def = "256",
	  .help = "transmit ring entries" },
	{ "tx", OPT_ENUM, V(tx, int), .names = (const char *const[]){ "bh", "timer", NULL },
	  .def = "bh", .help = "bh: a kick's frames are sent at once; timer: x-txtimer "
	  "ns later, kicks off meanwhile, so frames go in batches" },
	{ "x-txtimer", OPT_U64, V(tx_timer_ns, uint64_t),
	  .max = VNET_TX_TIMER_MAX_NS, .def = "150000 (150 us)",
	  .help = "tx=timer's wait in ns, 0: none (ignored without tx=timer, as QEMU's)" },
	{ "x-txhold", OPT_BOOL, V(tx_hold, bool), .def = "on",
	  .help = "tx=bh (and tx=timer,x-txtimer=0): while the back end is busy "
	  "with frames, kicks stay off and the driver's next frames go in one round "
	  "once it is idle" },
	{ NULL },
};
#undef V

static const struct opt_spec vnet_pci_spec = { "-device virtio-net-pci", NULL, vnet_props };
static const struct opt_spec vnet_alias_spec = { "-device virtio-net", NULL, vnet_props };

static const struct vnet_cfg vnet_defaults = {
	.ring = VIRTIO_RING_DEFAULTS,
	.rx_queue_size = VNET_DEFAULT_QUEUE_SIZE,
	.tx_queue_size = VNET_DEFAULT_QUEUE_SIZE,
	.tx = VNET_TX_BH,
	.tx_timer_ns = VNET_TX_TIMER_NS,
	.tx_hold = true,
};

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* xx:xx:xx:xx:xx:xx, exactly; false otherwise. */
static bool parse_mac(const char *s, uint8_t mac[6])
{
	if (strlen(s) != 17)
		return false;
	for (unsigned i = 0; i < 6; i++, s += 3) {
		int hi = hex_digit(s[0]), lo = hex_digit(s[1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[2] != ':'))
			return false;
		mac[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static int vnet_check(void *cfg, const char *what)
{
	struct vnet_cfg *c = cfg;

	if (!c->mac_str[0])
		return 0;
	if (!parse_mac(c->mac_str, c->mac)) {
		error_report("%s: mac=%s: not a MAC address (xx:xx:xx:xx:xx:xx)", what, c->mac_str);
		return -1;
	}
	/* A NIC's own address is unicast: the group bit is the first byte's lowest. */
	if (c->mac[0] & 1) {
		error_report("%s: mac=%s: a multicast address (odd first byte)", what, c->mac_str);
		return -1;
	}
	c->mac_set = true;
	return 0;
}

static int vnet_pci_check(void *cfg)
{
	return vnet_check(cfg, vnet_pci_spec.what);
}

static int vnet_alias_check(void *cfg)
{
	return vnet_check(cfg, vnet_alias_spec.what);
}

static int vnet_resolve(void *cfg, const struct object_set *objects, const char *what)
{
	struct vnet_cfg *c = cfg;
	char who[96];

	if (!c->netdev)
		return 0;
	snprintf(who, sizeof(who), "%s: netdev=%s", what, c->netdev);
	c->backend = (const struct netdev_cfg *)object_find(objects, c->netdev,
		(const char *const[]){ "user", "stream", "tap", NULL }, who);
	return c->backend ? 0 : -1;
}

/* A -netdev carries one NIC's frames, as QEMU's has one peer. */
static const void *vnet_claims(const void *cfg)
{
	return ((const struct vnet_cfg *)cfg)->backend;
}

static int vnet_pci_resolve(void *cfg, const struct object_set *objects)
{
	return vnet_resolve(cfg, objects, vnet_pci_spec.what);
}

static int vnet_alias_resolve(void *cfg, const struct object_set *objects)
{
	return vnet_resolve(cfg, objects, vnet_alias_spec.what);
}

/*
 * The back end netdev= named, owned by the NIC.  Without netdev= the NIC
 * runs with its link up and no peer, as QEMU's does after its warning.
 */
static void *vnet_family_create(struct machine *m, const void *cfg,
				struct virtio_plug *plug)
{
	const struct vnet_cfg *c = cfg;
	struct netdev *nd = NULL;
	struct vnet *n;

	/* m->loop, where the NIC runs: slirp's too, as in QEMU's main loop. */
	if (c->backend && !(nd = netdev_new(c->backend, m->loop))) {
		virtio_unplug(plug);
		return NULL;
	}
	if (!nd)
		error_report("warning: virtio-net: no netdev=, so the NIC has no peer: "
			     "the guest's frames are dropped");
	n = vnet_create(m, c, plug, nd);
	if (!n) {
		netdev_free(nd);
		return NULL;
	}
	n->owns_nd = true;
	return n;
}

static void vnet_family_destroy(void *dev)
{
	vnet_free(dev);
}

const struct device_family virtio_net_pci_family = {
	.name = "virtio-net-pci",
	.help = "a NIC for a -netdev (VIRTIO 1.2, 5.1)",
	.spec = &vnet_pci_spec,
	.cfg_size = sizeof(struct vnet_cfg),
	.defaults = &vnet_defaults,
	.check = vnet_pci_check,
	.resolve = vnet_pci_resolve,
	.claims = vnet_claims,
	.pci_class = 0x020000,	/* network controller, Ethernet */
	.create = vnet_family_create,
	.destroy = vnet_family_destroy,
};

const struct device_family virtio_net_family = {
	.name = "virtio-net",
	.help = "virtio-net-pci, by QEMU's alias",
	.spec = &vnet_alias_spec,
	.cfg_size = sizeof(struct vnet_cfg),
	.defaults = &vnet_defaults,
	.check = vnet_alias_check,
	.resolve = vnet_alias_resolve,
	.claims = vnet_claims,
	.pci_class = 0x020000,
	.create = vnet_family_create,
	.destroy = vnet_family_destroy,
};
