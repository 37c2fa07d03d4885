// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Frames through virtio-net-pci, for counting the device's instructions
 * per frame under callgrind (net-instructions.sh): the NIC on the test
 * board (net-guest.h), a guest driver in this process, and a null back
 * end that swallows what the guest sends unread and has a frame for the
 * guest whenever asked (copying it into the guest's buffers, as every
 * back end's take() must), and says it is idle when the NIC asks after a
 * round (tx_busy, as user networking's back end that has caught up).
 * rx-copy and rx-direct have a tap's way instead: frames wait in a
 * socket (a SOCK_SEQPACKET pair, which keeps each frame whole as a tap
 * does), rx-copy reading each into a buffer of its own (peek) and
 * copying it into the guest's (take), rx-direct
 * reading it straight into the guest's buffers (recv, one readv()), as
 * net/tap.c does.  The kernel's copy out of the socket is the same both
 * ways and is not counted (callgrind counts the process's instructions).
 *
 *   virtio-net-frames tx|rx|rx-copy|rx-direct BYTES split|packed N [BATCH]
 *
 * moves N frames of BYTES (Ethernet header on, virtio-net header off) in
 * rounds of BATCH (default 1; for rx at most what the ring's buffers
 * hold, 16 frames of 65520 bytes): tx, the guest adds BATCH chains (header
 * and frame in one descriptor, as Linux sends a linear skb) and kicks;
 * rx, the back end has BATCH frames and makes rx_fd readable, the ring
 * being kept full of 4 KiB mergeable buffers (Linux's page-sized ones).
 * Either way the main loop then turns once, inside net_bench_round(),
 * all that callgrind is told to count: the device's work (epoll's
 * dispatch, its handler, virtqueue pop and push, the interrupt's eventfd
 * write, the back end's send or take), not the guest's nor the board's
 * emulation of the kick's exit.  The guest asks for an interrupt per
 * round (split: used_event; packed: its event flags stay ENABLE), as
 * Linux's driver does with callbacks on.
 *
 * Frames longer than 1514 bytes run with host_mtu=65520.  A warm-up of
 * WARM frames goes first (outside net_bench_round), so that the rings have
 * wrapped and the device's arrays have grown before the count starts.
 * Prints "frames=N rounds=R batch=B" once every frame arrived, in as many
 * used buffers and bytes as it should; exit 1 otherwise.  No clock is
 * read: this measures nothing by itself.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/queue.h"
#include "util/iov.h"

#include "check.h"
#include "net-guest.h"

#define NUM 256
#define HDR_LEN 12		/* VIRTIO 1.2, 5.1.6: struct virtio_net_hdr_v1 */
#define RXBUF 4096
#define BIG_MTU 65520
#define MAX_FRAME (65535 + 14)
#define WARM 600
#define TX_SLOTS 64		/* data_gpa() slots of 64 KiB the tx chains cycle through */
#define RX_BUFS_GPA DATA_AREA	/* NUM buffers of RXBUF */
#define TX_GPA (DATA_AREA + (uint64_t)NUM * RXBUF)

struct null_nd {
	struct netdev nd;
	struct frame_queue tx;	/* always empty: for tx_busy, as a caught-up thread's */
	uint64_t sent;		/* frames swallowed */
	uint64_t sent_bytes;
	size_t rx_len;
	unsigned rx_left;	/* frames the guest may have now */
	uint8_t frame[MAX_FRAME];
};

static bool null_send(struct netdev *nd, const struct iovec *iov, unsigned n, size_t len)
{
	struct null_nd *b = container_of(nd, struct null_nd, nd);

	(void)iov;
	(void)n;
	b->sent++;
	b->sent_bytes += len;
	return true;
}

static size_t null_peek(struct netdev *nd)
{
	struct null_nd *b = container_of(nd, struct null_nd, nd);
	eventfd_t cnt;

	if (b->rx_left)
		return b->rx_len;
	/* net.h: nothing waits, so rx_fd is left unreadable. */
	(void)eventfd_read(nd->rx_fd, &cnt);
	return 0;
}

static void null_take(struct netdev *nd, const struct iovec *iov, unsigned n)
{
	struct null_nd *b = container_of(nd, struct null_nd, nd);

	if (iov)
		iov_copy(iov, n, 0, b->frame, b->rx_len, false);
	b->rx_left--;
}

/* What user networking's NIC asks after each round (x-txhold), its back end caught up. */
static bool null_tx_busy(struct netdev *nd)
{
	return fq_busy(&container_of(nd, struct null_nd, nd)->tx);
}

static void null_free(struct netdev *nd)
{
	(void)nd;
}

static const struct netdev_ops null_ops = {
	.send = null_send, .peek = null_peek, .take = null_take, .tx_busy = null_tx_busy,
	.free = null_free,
};

static struct null_nd null_be;

/* ---- a tap's way, on a socket ---- */

struct sock_nd {
	struct netdev nd;	/* rx_fd: the socket's reading end */
	int wfd;		/* the writing end: frames for the guest */
	uint64_t copies;	/* frames copied by take() */
	uint64_t reads;		/* frames read straight into the guest's buffers by recv() */
	size_t len;		/* the frame peek() read, 0: none */
	uint8_t buf[MAX_FRAME + 1];	/* a byte to spare tells a cut frame */
};

static struct sock_nd sock_be;

static size_t sock_peek(struct netdev *nd)
{
	struct sock_nd *b = container_of(nd, struct sock_nd, nd);

	while (!b->len) {
		ssize_t r = recv(nd->rx_fd, b->buf, sizeof(b->buf), MSG_DONTWAIT);

		if (r <= 0)
			break;
		if ((size_t)r < sizeof(b->buf))
			b->len = (size_t)r;
	}
	return b->len;
}

static void sock_take(struct netdev *nd, const struct iovec *iov, unsigned n)
{
	struct sock_nd *b = container_of(nd, struct sock_nd, nd);

	if (iov) {
		iov_copy(iov, n, 0, b->buf, b->len, false);
		b->copies++;
	}
	b->len = 0;
}

static size_t sock_recv(struct netdev *nd, const struct iovec *iov, unsigned n, size_t cap)
{
	struct sock_nd *b = container_of(nd, struct sock_nd, nd);
	size_t len = b->len;

	if (len) {
		sock_take(nd, iov, n);
		return len;
	}
	for (;;) {
		ssize_t r = readv(nd->rx_fd, iov, (int)n);

		if (r <= 0)
			return 0;
		if ((size_t)r < cap) {
			b->reads++;
			return (size_t)r;
		}
	}
}

static const struct netdev_ops sock_copy_ops = {
	.send = null_send, .peek = sock_peek, .take = sock_take, .free = null_free,
};

static const struct netdev_ops sock_direct_ops = {
	.send = null_send, .peek = sock_peek, .take = sock_take, .recv = sock_recv,
	.free = null_free,
};

static bool sock_mode;	/* rx-copy or rx-direct: frames come by sock_be */
static uint64_t rx_addr[VIRTQUEUE_MAX_SIZE];	/* by buffer id: where it is */

/*
 * What callgrind counts: one turn of the main loop that finds the round's
 * fd ready and serves it, as brisk's main loop does once woken (its
 * epoll_wait() sleeps meanwhile).  How many handlers ran.
 */
/* net-instructions.sh counts by this name (--toggle-collect): never inlined or cloned. */
#ifdef __clang__
__attribute__((noinline))	/* clang has no noipa, and clones no static function */
#else
__attribute__((noinline, noipa))
#endif
static int net_bench_round(struct net *g)
{
	return iothread_poll(g->t->b.m.loop, 0);
}

/*
 * One turn serves the whole round (the warm-up's uncounted): a second
 * finding more to do would be work the count missed.
 */
static bool serve(struct net *g, bool counted)
{
	int ran = counted ? net_bench_round(g) : iothread_poll(g->t->b.m.loop, 0);

	return ran == 1 && iothread_poll(g->t->b.m.loop, 0) == 0;
}

/* Split ring: an interrupt for the next used entry (VIRTIO 1.2, 2.7.10). */
static void want_interrupt(struct gq *q)
{
	struct vq_driver *d = &q->ring;
	uint16_t ev = htole16(d->last_used_idx);

	if (!d->packed)
		memcpy(drv_ptr(d, d->driver + 4 + 2 * d->num), &ev, sizeof(ev));
}

static bool rx_post(struct gq *q, uint64_t addr)
{
	struct drv_seg s = { addr, RXBUF, true };
	int id = gq_add(q, &s, 1, false, 0);

	if (id < 0)
		return false;
	rx_addr[id] = addr;
	return true;
}

/* frames whole frames in, reaped and their buffers posted again. */
static bool rx_round(struct net *g, size_t bytes, unsigned frames, bool counted)
{
	struct gq *q = &g->q[RXQ];
	unsigned per = (unsigned)((HDR_LEN + bytes + RXBUF - 1) / RXBUF), used = 0;
	size_t got = 0;
	uint32_t len;
	int id;

	if (sock_mode) {
		for (unsigned i = 0; i < frames; i++)
			if (send(sock_be.wfd, null_be.frame, bytes, 0) != (ssize_t)bytes)
				return false;
	} else {
		null_be.rx_left = frames;
		eventfd_write(null_be.nd.rx_fd, 1);
	}
	if (!serve(g, counted))
		return false;
	while ((id = gq_get_used(q, &len)) >= 0) {
		got += len;
		used++;
		if (!rx_post(q, rx_addr[id]))
			return false;
	}
	want_interrupt(q);
	return null_be.rx_left == 0 && sock_peek(&sock_be.nd) == 0 && used == frames * per &&
	       got == frames * (HDR_LEN + bytes);
}

static bool tx_round(struct net *g, size_t bytes, unsigned frames, unsigned *slot,
		     bool counted)
{
	struct gq *q = &g->q[TXQ];
	unsigned used = 0;
	uint32_t len;

	for (unsigned i = 0; i < frames; i++, *slot = (*slot + 1) % TX_SLOTS) {
		struct drv_seg s = { TX_GPA + (uint64_t)*slot * 0x10000, (uint32_t)(HDR_LEN + bytes),
				     false };

		if (gq_add(q, &s, 1, false, 0) < 0)
			return false;
	}
	gq_kick(q);
	if (!serve(g, counted))
		return false;
	while (gq_get_used(q, &len) >= 0 && len == 0)
		used++;
	want_interrupt(q);
	return used == frames;
}

static bool run(struct net *g, bool tx, size_t bytes, uint64_t n, unsigned batch,
		bool counted)
{
	unsigned slot = 0;

	for (uint64_t done = 0; done < n; done += batch) {
		unsigned b = n - done < batch ? (unsigned)(n - done) : batch;

		if (!(tx ? tx_round(g, bytes, b, &slot, counted) : rx_round(g, bytes, b, counted)))
			return false;
	}
	return true;
}

/* A frame as a guest would carry it: Ethernet to the NIC's MAC, then bytes. */
static void fill_frames(struct net *g, size_t bytes)
{
	static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

	memcpy(null_be.frame, mac, 6);
	memset(null_be.frame + 6, 0x02, 6);
	null_be.frame[12] = 0x08;
	for (size_t i = 14; i < bytes; i++)
		null_be.frame[i] = (uint8_t)(i * 7);
	for (unsigned s = 0; s < TX_SLOTS; s++) {
		uint8_t *p = gpa(g->t, TX_GPA + (uint64_t)s * 0x10000);

		memset(p, 0, HDR_LEN);
		memcpy(p + HDR_LEN, null_be.frame, bytes);
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: virtio-net-frames tx|rx|rx-copy|rx-direct BYTES split|packed N [BATCH]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct vnet_cfg cfg = { .ring = { .event_idx = true, .indirect_desc = true },
				.rx_queue_size = NUM, .tx_queue_size = NUM, .tx_hold = true };
	struct vnet_stats st;
	struct netdev *nd = &null_be.nd;
	int sv[2] = { -1, -1 };
	struct net g;
	bool tx, ok;
	size_t bytes;
	uint64_t n;
	unsigned batch;

	if (argc < 5 || argc > 6)
		return usage();
	tx = !strcmp(argv[1], "tx");
	sock_mode = !strcmp(argv[1], "rx-copy") || !strcmp(argv[1], "rx-direct");
	bytes = strtoul(argv[2], NULL, 0);
	cfg.ring.packed = !strcmp(argv[3], "packed");
	n = strtoull(argv[4], NULL, 0);
	batch = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 0) : 1;
	if ((!tx && !sock_mode && strcmp(argv[1], "rx")) || (!cfg.ring.packed && strcmp(argv[3], "split")) ||
	    bytes < 14 || bytes > MAX_FRAME || !batch || batch > NUM)
		return usage();
	/* No more frames a round than the ring's buffers hold. */
	if (!tx && batch > NUM / ((HDR_LEN + bytes + RXBUF - 1) / RXBUF))
		batch = (unsigned)(NUM / ((HDR_LEN + bytes + RXBUF - 1) / RXBUF));
	if (bytes > 1514)
		cfg.host_mtu = BIG_MTU;

	null_be.nd.ops = &null_ops;
	null_be.nd.id = "null";
	null_be.nd.rx_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	null_be.nd.tx_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	fq_init(&null_be.tx);
	null_be.tx.idle_fd = null_be.nd.tx_fd;
	null_be.rx_len = bytes;
	if (sock_mode) {
		/* Room for a round of the largest frames, as a tap's queue has. */
		int sndbuf = 64 << 20;

		/* Non-blocking, as a tap's fd is: an empty socket reads EAGAIN. */
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0 ||
		    (setsockopt(sv[1], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) < 0 &&
		     setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)) {
			perror("virtio-net-frames: socketpair");
			return 1;
		}
		sock_be.nd.ops = strcmp(argv[1], "rx-direct") ? &sock_copy_ops : &sock_direct_ops;
		sock_be.nd.id = "sock";
		sock_be.nd.rx_fd = sv[0];
		sock_be.nd.rx_max_len = MAX_FRAME;
		sock_be.wfd = sv[1];
		nd = &sock_be.nd;
	}
	if (null_be.nd.rx_fd < 0 || !nic_new(&g, &cfg, nd) ||
	    !nic_start(&g, NUM, ALL_FEATURES)) {
		fprintf(stderr, "virtio-net-frames: the NIC did not come up\n");
		return 1;
	}
	fill_frames(&g, bytes);
	ok = true;
	for (unsigned i = 0; ok && !tx && i < NUM; i++)
		ok = rx_post(&g.q[RXQ], RX_BUFS_GPA + (uint64_t)i * RXBUF);
	gq_kick(&g.q[RXQ]);
	nic_turn(&g);
	ok = ok && run(&g, tx, bytes, WARM, batch, false);
	ok = ok && run(&g, tx, bytes, n, batch, true);
	vnet_get_stats(g.n, &st);
	ok = ok && (tx ? st.tx_frames == WARM + n && null_be.sent_bytes == (WARM + n) * bytes
		       : st.rx_frames == WARM + n) &&
	     st.tx_dropped == 0 && st.rx_dropped == 0 && !(vstatus(&g.d) & DS_NEEDS_RESET) &&
	     failed == 0;
	nic_free(&g);
	close(null_be.nd.rx_fd);
	if (sock_mode) {
		close(sv[0]);
		close(sv[1]);
		/*
		 * rx-copy copies every frame; rx-direct reads them straight in
		 * but for those that come when fewer buffers are left than
		 * the longest frame takes (a round's last ones, at 65520 bytes).
		 */
		ok = ok && sock_be.copies + sock_be.reads == WARM + n &&
		     (strcmp(argv[1], "rx-direct") ? !sock_be.reads : sock_be.reads > sock_be.copies);
		if (sock_be.reads)
			fprintf(stderr, "virtio-net-frames: %llu of %llu frames read straight in\n",
				(unsigned long long)sock_be.reads, (unsigned long long)(WARM + n));
	}
	if (!ok) {
		fprintf(stderr, "virtio-net-frames: frames lost or the device broke\n");
		return 1;
	}
	printf("frames=%llu rounds=%llu batch=%u\n", (unsigned long long)n,
	       (unsigned long long)((n + batch - 1) / batch), batch);
	return 0;
}
