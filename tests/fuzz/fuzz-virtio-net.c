// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-net between a hostile driver and a fake network.  The harness
 * makes the NIC with vnet_create() on test-board.h's board, its main loop
 * turned by hand (iothread_poll(loop, 0)), and plays both sides: the
 * driver (virtio-pci handshake, rings in guest RAM, split or packed, the
 * features the input picks, MRG_RXBUF and EVENT_IDX among them) and the
 * back end (a struct netdev that queues frames of the input's lengths, up
 * to 70000 bytes, and takes what the guest sends; with recv, as a tap,
 * when the input says so).
 *
 * The driver posts chains the input describes.  Strict chains are laid
 * out by the harness (descriptors from a free list, buffers in the data
 * areas, never over a ring or a table), but their lengths, directions,
 * indirect tables and shape are the input's, bad ones included: a
 * receive buffer the device may read, one too short for the header, a
 * transmit buffer it may write.  Wild operations write raw descriptors,
 * ring entries and table entries anywhere (addresses outside RAM, loops,
 * bad flags, nested tables, indices ahead of the ring).
 *
 * While a queue has seen only strict chains (and, for transmitq, no raw
 * receive descriptor, which may point the device's writes at transmit
 * buffers), the harness models what the device must do (VIRTIO 1.2,
 * 5.1.6; hw/virtio/virtio-net.c's comments) and aborts when it does not:
 *   - a frame the back end gives up (take, or recv straight into the
 *     buffers, whose vector must be the next chains posted, past the
 *     header, taking more than the longest frame) is delivered whole: its chains
 *     are the next ones posted, every one but the last used in full, the
 *     used lengths adding up to 12 + its length, one chain without
 *     MRG_RXBUF; the header says num_buffers and no offload, the frame's
 *     bytes follow it (checked where no later buffer shares its memory);
 *     no used length exceeds its chain's writable bytes;
 *   - a frame is dropped only when it cannot fit: without MRG_RXBUF the
 *     chain held for it is too short, with it every slot of the ring (a
 *     descriptor of the ring's own table, split or packed) is held and
 *     together they are too short; or when VIRTIO_NET_F_MTU was
 *     negotiated and it is longer than the MTU and its Ethernet header
 *     (VIRTIO 1.2, 5.1.6.3.2), whatever the buffers; never truncated;
 *   - no receive buffer comes back without a frame, nor a frame partly;
 *   - every transmit chain comes back in order with length 0, its frame
 *     sent (header off, bytes as posted) unless no Ethernet frame could be
 *     that long; none of a chain the device must refuse;
 *   - the device asks for a reset only when the driver broke a rule, and
 *     once it has, it takes, sends and uses nothing more;
 *   - after the loop goes idle, nothing that could be done is left: no
 *     frame waits that the posted buffers could take (or that must be
 *     dropped), no kicked transmit chain waits, and unless a tx=timer
 *     wait is on, the transmit queue asks for the driver's next kick;
 *   - after a reset reads 0, a turn of the loop changes no byte of RAM;
 *   - the device's counters match what the back end saw.
 * Wild inputs check only what ASan, UBSan and the exactly-sized RAM
 * block catch: no access outside guest RAM or the device's own memory.
 *
 * Input layout:
 *   u8  the device: bit 0 packed=on, bit 1 event_idx=on, bit 2
 *       indirect_desc=on, bit 3 host_mtu=1500, bit 4 no back end (nd
 *       NULL), bit 5 rx_queue_size=1024, bit 6 tx_queue_size=512, bit 7
 *       the back end has recv
 *   u8  the driver's features (of those offered): bit 0 RING_PACKED, 1
 *       EVENT_IDX, 2 INDIRECT_DESC, 3 MRG_RXBUF, 4 MAC, STATUS and MTU,
 *       bit 5 no VERSION_1 (the device refuses FEATURES_OK), bit 6 leave
 *       the receive queue disabled, bit 7 the transmit queue
 *   u8  receive queue size, u8 transmit queue size: split 1 << (b % 9),
 *       packed b (0: 256)
 *   u8  more of the device: bit 0 tx=timer (its wait an hour, ended
 *       whenever the loop has nothing else ready); bit 1 the back end
 *       stays busy with each frame it takes (x-txhold holds the next),
 *       until the loop has nothing else ready
 *   then up to 256 operations, u8 op (mod 12) and its bytes:
 *   0 rx chain    u8 shape (bits 0-2: descriptors - 1, bit 3 indirect,
 *                 bit 4 kick after), per descriptor u8 f, u16 len: length
 *                 len | (f & 1) << 16 (at most 65536), device-readable
 *                 when (f & 6) == 6
 *   1 tx chain    u8 shape (as rx, and bit 5), u8 hi, u16 lo: header
 *                 and frame bytes (lo | (hi & 1) << 16, at most 65611),
 *                 then per descriptor but the last a u16 cut point, then
 *                 with bit 5 the u16 length of a device-writable
 *                 descriptor added last
 *   2 wild        u8 kind (bit 0 queue, bits 1-2 what), u8 where, 16 raw
 *                 bytes: a descriptor, an avail entry or index jump, a
 *                 table entry (addresses: low 32 bits mod RAM + 64 KiB,
 *                 or all 64 when the top byte is 0xff)
 *   3 kick        u8 queue (2 and 3: no such queue)
 *   4 frame       u8 hi, u16 lo: the back end queues a frame of
 *                 1 + (lo | (hi & 1) << 16) % 70000 bytes (64 at most)
 *   5 turn        the loop until idle, then the checks
 *   6 reset       u8 features, u8 rx size, u8 tx size: as the header's;
 *                 the driver resets, waits for 0 and sets up again
 *   7 config      u8 offset, u8 bit 0-1 width, bit 2 write, bit 3 ISR
 *   8 suppress    u8 queue, u16 a, u16 b: split avail flags and
 *                 used_event, packed driver event off_wrap and flags
 *   9 refuse      the back end refuses sends (toggles)
 *   10 spurious   rx_fd written with no frame queued
 *   11 fill rx    u8 count, u8 f, u16 len: up to count one-descriptor
 *                 receive chains of that length, kicked
 *   The input ends with a turn and the checks.
 */
#include <endian.h>
#include <limits.h>
#include <linux/virtio_net.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fuzz-util.h"
#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio-plug.h"
#include "net/net.h"
#include "util/compiler.h"
#include "util/iothread.h"
#include "timer-fd.h"
#include "virtio-pci-guest.h"
#include "virtio/virtio.h"
#include "virtio/virtio_ring.h"

#define NET_PCI_ID 0x1041	/* VIRTIO 1.2, 4.1.2: 0x1040 + 1 */
#define NET_CLASS 0x020000
#define HDR 12			/* struct virtio_net_hdr_v1 */
#define ETH_MIN 14
#define ETH_MAX (65535 + 14)
#define RXQ 0
#define TXQ 1
#define MAX_NUM 256
#define MAX_DESCS 8
#define MAX_OPS 256
#define MAX_RESETS 8
#define TURN_MAX 64
#define FAKE_MAX 64
#define FRAME_MAX 70000
#define TX_MAX (HDR + ETH_MAX + 50)
#define BIT(b) (1ull << (b))

/* Guest RAM: each queue's rings, the indirect tables, then the buffers. */
#define RING_AREA(q) (0x2000u * (q))
#define TABLE_BASE 0x4000u
#define TABLE_SLOT (16u * MAX_DESCS)
#define TABLE_ADDR(q, id) (TABLE_BASE + ((q) * MAX_NUM + (id)) * TABLE_SLOT)
#define RX_DATA 0x14000u
#define RX_DATA_SIZE 0x20000u
#define TX_DATA 0x34000u
#define TX_DATA_SIZE 0x18000u
#define RAM_SIZE 0x4c000u
#define WILD_SPAN (RAM_SIZE + 0x10000u)

#define P_AVAIL (1u << VRING_PACKED_DESC_F_AVAIL)
#define P_USED (1u << VRING_PACKED_DESC_F_USED)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct chain {
	bool poison;		/* the device must refuse it (NEEDS_RESET) */
	bool indirect;
	bool consumed;		/* rx: given a frame; tx: the device went past it */
	bool sent;		/* tx: the back end got its frame */
	uint16_t ndesc, desc[MAX_DESCS];	/* split: the ring's descriptors it took */
	uint16_t slots;		/* ring slots (descriptors of the ring's table) it holds */
	uint32_t writable, readable;
	uint32_t expect;	/* rx, consumed: the used length due */
	uint64_t cursor;	/* its data area's allocation count at its first buffer */
	unsigned nbuf;		/* rx: writable buffers; tx: readable ones (non-empty) */
	uint32_t buf_addr[MAX_DESCS + 1], buf_len[MAX_DESCS + 1];
	uint32_t frame_len;	/* rx: the frame it got; tx: the one it carries */
	unsigned seed, frame_pos, frame_k;
};

struct queue {
	bool ready;		/* enabled with DRIVER_OK: the device serves it */
	bool packed;
	bool checkable;		/* only strict chains since the setup */
	bool poisoned;		/* a chain the device must refuse was posted */
	bool dirty;		/* posted since the last kick */
	unsigned num;
	uint64_t desc, driver, device;
	uint16_t free_desc[MAX_NUM];	/* split */
	unsigned nfree;
	uint16_t avail_idx, used_idx;
	unsigned avail_slot, used_slot, free_slots;	/* packed */
	bool avail_wrap, used_wrap;
	uint16_t free_id[MAX_NUM];
	unsigned nfree_id;
	bool live[MAX_NUM];
	struct chain c[MAX_NUM];	/* by head (split) or buffer id (packed) */
	uint16_t fifo[MAX_NUM];	/* live chains, in posting order */
	unsigned fifo_head, fifo_n, n_consumed;
};

struct area {
	uint32_t base, size;
	uint64_t cursor;
};

struct fake {
	struct netdev nd;
	uint32_t len[FAKE_MAX];
	unsigned seed[FAKE_MAX];
	unsigned head, n, next_seed;
	bool refuse;
	bool slow;		/* each frame sent keeps it busy until the loop is idle */
	bool busy, idle_wanted;
	uint64_t takes, drops, sends_ok, sends_refused;
	uint64_t recvs;		/* of takes and drops, those recv() gave */
};

struct fz {
	struct test_board b;
	struct fuzz_ram ram;
	uint8_t *mem;
	struct vnet *n;
	struct vpci pci;
	uint64_t doorbell[2];
	struct fake f;
	bool no_nd;
	uint64_t features;
	bool mrg, indirect, running;
	unsigned host_mtu;	/* host_mtu=; 0: none */
	uint32_t rx_max;	/* with F_MTU, the longest frame the guest may get; 0: any */
	bool hostile;		/* the driver did something that may break the device */
	bool broken_seen;	/* NEEDS_RESET read since the setup */
	bool quiet;		/* nothing may be taken or sent (a reset) */
	struct area rx_data, tx_data;
	struct queue q[2];
	unsigned resets, queued_frames;
	/* rx chains of the frame being harvested */
	unsigned nframe;
	struct chain frame[MAX_NUM];
};

static struct fz z;

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-virtio-net: %s\n", what);
	abort();
}

#define REQUIRE(c, what) do { if (!(c)) fail(what); } while (0)

static uint8_t pattern(unsigned seed, size_t i)
{
	return (uint8_t)(seed * 31 + i * 7 + i / 251);
}

/* ---- guest RAM, as the driver reads and writes it ---- */

static uint16_t rd16(uint64_t a)
{
	uint16_t v;

	memcpy(&v, z.mem + a, 2);
	return le16toh(v);
}

static uint32_t rd32(uint64_t a)
{
	uint32_t v;

	memcpy(&v, z.mem + a, 4);
	return le32toh(v);
}

static void wr16(uint64_t a, uint16_t v)
{
	v = htole16(v);
	memcpy(z.mem + a, &v, 2);
}

static void wr_desc(uint64_t a, uint64_t addr, uint32_t len, uint16_t f1, uint16_t f2)
{
	uint64_t a64 = htole64(addr);
	uint32_t l32 = htole32(len);

	memcpy(z.mem + a, &a64, 8);
	memcpy(z.mem + a + 8, &l32, 4);
	wr16(a + 12, f1);
	wr16(a + 14, f2);
}

/* A split descriptor: addr, len, flags, next. */
static void split_desc(uint64_t at, uint64_t addr, uint32_t len, uint16_t flags, uint16_t next)
{
	wr_desc(at, addr, len, flags, next);
}

/* A packed descriptor: addr, len, id, flags. */
static void packed_desc(uint64_t at, uint64_t addr, uint32_t len, uint16_t id, uint16_t flags)
{
	wr_desc(at, addr, len, id, flags);
}

/* A buffer of len bytes in a data area, never across its end. */
static uint32_t area_alloc(struct area *a, uint32_t len, uint64_t *cursor)
{
	uint64_t off = a->cursor % a->size;

	if (off + len > a->size)
		a->cursor += a->size - off;
	*cursor = a->cursor;
	off = a->cursor % a->size;
	a->cursor += len;
	return a->base + (uint32_t)off;
}

/* No buffer allocated since c's first one shares its memory. */
static bool area_clean(const struct area *a, const struct chain *c)
{
	return a->cursor - c->cursor <= a->size;
}

/* ---- the fake back end ---- */

static bool fake_send(struct netdev *nd, const struct iovec *iov, unsigned n, size_t len)
{
	struct fake *f = container_of(nd, struct fake, nd);
	struct queue *q = &z.q[TXQ];
	size_t total = 0;

	REQUIRE(!z.quiet && !z.broken_seen, "send() while the device must be still");
	REQUIRE(len >= ETH_MIN && len <= ETH_MAX, "send() of a length no Ethernet frame has");
	for (unsigned i = 0; i < n; i++)
		total += iov[i].iov_len;
	REQUIRE(total == len, "send()'s vector is not the frame's length");
	if (q->checkable) {
		struct chain *c = NULL;

		/* The next chain the device must send; those it must drop go by. */
		while (q->n_consumed < q->fifo_n) {
			c = &q->c[q->fifo[(q->fifo_head + q->n_consumed) % MAX_NUM]];
			REQUIRE(!c->poison, "sent past a chain the device must refuse");
			c->consumed = true;
			q->n_consumed++;
			if (c->frame_len >= ETH_MIN && c->frame_len <= ETH_MAX)
				break;
			c = NULL;
		}
		REQUIRE(c, "send() with no transmit chain posted for it");
		REQUIRE(len == c->frame_len, "sent a frame of another length than posted");
		c->sent = true;
		if (area_clean(&z.tx_data, c)) {
			size_t at = 0;

			for (unsigned i = 0; i < n; i++)
				for (size_t j = 0; j < iov[i].iov_len; j++, at++)
					REQUIRE(((const uint8_t *)iov[i].iov_base)[j] ==
						pattern(c->seed, HDR + at), "sent other bytes than posted");
		}
	}
	if (f->refuse) {
		f->sends_refused++;
		return false;
	}
	f->sends_ok++;
	f->busy |= f->slow;
	return true;
}

static bool fake_tx_busy(struct netdev *nd)
{
	struct fake *f = container_of(nd, struct fake, nd);

	f->idle_wanted = f->busy;
	return f->busy;
}

/* The back end done with what it was sent; tx_fd says so if it was asked. */
static void fake_idle(struct fake *f)
{
	f->busy = false;
	if (f->idle_wanted && eventfd_write(f->nd.tx_fd, 1) < 0)
		abort();
	f->idle_wanted = false;
}

static size_t fake_peek(struct netdev *nd)
{
	struct fake *f = container_of(nd, struct fake, nd);
	eventfd_t cnt;

	if (f->n)
		return f->len[f->head];
	/* net.h: nothing waits, so rx_fd is left unreadable. */
	(void)eventfd_read(nd->rx_fd, &cnt);
	return 0;
}

/* What the model says the next frame of len bytes must come to. */
static void model_take(struct fake *f, bool drop, uint32_t len, size_t room, bool direct)
{
	struct queue *q = &z.q[RXQ];
	uint64_t need = HDR + (uint64_t)len, have = 0, slots = 0;
	unsigned k = 0, left = q->fifo_n - q->n_consumed;

	if (!q->checkable)
		return;
	/* VIRTIO 1.2, 5.1.6.3.2: nothing longer than the MTU and its Ethernet header. */
	if (z.rx_max && len > z.rx_max) {
		REQUIRE(drop, "a frame longer than the MTU given to the driver");
		return;
	}
	if (!z.mrg) {
		struct chain *c;

		REQUIRE(left, "a frame taken with no receive chain posted");
		c = &q->c[q->fifo[(q->fifo_head + q->n_consumed) % MAX_NUM]];
		REQUIRE(!c->poison, "a frame taken for a chain the device must refuse");
		if (drop) {
			REQUIRE(c->writable < need, "dropped a frame its buffer could hold");
			return;
		}
		REQUIRE(c->writable >= need, "a frame given to a buffer too short for it");
		REQUIRE(direct || room == c->writable - HDR,
			"take()'s vector is not the chain's buffers past the header");
		k = 1;
	} else {
		for (k = 0; k < left && have < need; k++) {
			struct chain *c = &q->c[q->fifo[(q->fifo_head + q->n_consumed + k) % MAX_NUM]];

			REQUIRE(!c->poison, "a frame taken past a chain the device must refuse");
			have += c->writable;
			slots += c->slots;
		}
		if (drop) {
			REQUIRE(have < need, "dropped a frame the posted buffers could hold");
			REQUIRE(slots >= q->num, "dropped a frame while the ring had room for more");
			return;
		}
		REQUIRE(have >= need, "a frame given to buffers too short for it");
		REQUIRE(direct || room == have - HDR,
			"take()'s vector is not the chains' buffers past the header");
	}
	have = 0;
	for (unsigned i = 0; i < k; i++) {
		struct chain *c = &q->c[q->fifo[(q->fifo_head + q->n_consumed) % MAX_NUM]];
		uint64_t got = c->writable < need - have ? c->writable : need - have;

		c->consumed = true;
		c->expect = (uint32_t)got;
		c->frame_len = len;
		c->seed = f->seed[f->head];
		c->frame_pos = i;
		c->frame_k = k;
		have += got;
		q->n_consumed++;
	}
}

static void fake_take(struct netdev *nd, const struct iovec *iov, unsigned n)
{
	struct fake *f = container_of(nd, struct fake, nd);
	size_t room = 0, off = 0, len;

	REQUIRE(!z.quiet && !z.broken_seen, "take() while the device must be still");
	REQUIRE(f->n, "take() with no frame queued");
	len = f->len[f->head];
	for (unsigned i = 0; iov && i < n; i++)
		room += iov[i].iov_len;
	/* net.h: iov holds at least peek()'s length. */
	REQUIRE(!iov || room >= len, "take() into buffers shorter than the frame");
	model_take(f, !iov, (uint32_t)len, room, false);
	for (unsigned i = 0; iov && i < n && off < len; i++) {
		uint8_t *p = iov[i].iov_base;

		for (size_t j = 0; j < iov[i].iov_len && off < len; j++, off++)
			p[j] = pattern(f->seed[f->head], off);
	}
	if (iov)
		f->takes++;
	else
		f->drops++;
	f->head = (f->head + 1) % FAKE_MAX;
	f->n--;
}

/* recv()'s vector: the next chains posted (one without MRG_RXBUF), past the header. */
static void model_recv(struct fake *f, uint32_t len, size_t room)
{
	struct queue *q = &z.q[RXQ];
	unsigned left = q->fifo_n - q->n_consumed, m;
	uint64_t have = 0;

	if (!q->checkable)
		return;
	for (m = 0; m < left && have < room + HDR; m++) {
		const struct chain *c = &q->c[q->fifo[(q->fifo_head + q->n_consumed + m) % MAX_NUM]];

		REQUIRE(!c->poison, "a frame read into a chain the device must refuse");
		have += c->writable;
	}
	REQUIRE(have == room + HDR && (z.mrg || m == 1),
		"recv()'s vector is not the next chains' buffers past the header");
	/* Over the MTU: the device drops it, its chains unused. */
	if (!z.rx_max || len <= z.rx_max)
		model_take(f, false, len, room, true);
}

/*
 * As a tap's: the next frame straight into iov.  No frame fills it (the
 * NIC leaves a byte past the longest), so none is cut.
 */
static size_t fake_recv(struct netdev *nd, const struct iovec *iov, unsigned n, size_t cap)
{
	struct fake *f = container_of(nd, struct fake, nd);
	size_t room = 0, off = 0, len;
	eventfd_t cnt;

	REQUIRE(!z.quiet && !z.broken_seen, "recv() while the device must be still");
	for (unsigned i = 0; i < n; i++)
		room += iov[i].iov_len;
	REQUIRE(room == cap && cap > nd->rx_max_len && n <= IOV_MAX,
		"recv() into a vector that cannot take the longest frame and a byte");
	if (!f->n) {
		(void)eventfd_read(nd->rx_fd, &cnt);
		return 0;
	}
	len = f->len[f->head];
	model_recv(f, (uint32_t)len, room);
	for (unsigned i = 0; i < n && off < len; i++) {
		uint8_t *p = iov[i].iov_base;

		for (size_t j = 0; j < iov[i].iov_len && off < len; j++, off++)
			p[j] = pattern(f->seed[f->head], off);
	}
	if (z.rx_max && len > z.rx_max)
		f->drops++;
	else
		f->takes++;
	f->recvs++;
	f->head = (f->head + 1) % FAKE_MAX;
	f->n--;
	return len;
}

static void fake_free(struct netdev *nd)
{
	(void)nd;
	fail("the NIC freed a back end it does not own");
}

static const struct netdev_ops fake_ops = {
	.send = fake_send, .peek = fake_peek, .take = fake_take, .tx_busy = fake_tx_busy,
	.free = fake_free,
};

static const struct netdev_ops fake_recv_ops = {
	.send = fake_send, .peek = fake_peek, .take = fake_take, .recv = fake_recv,
	.tx_busy = fake_tx_busy, .free = fake_free,
};

static void fake_queue(uint32_t len)
{
	struct fake *f = &z.f;

	if (f->n == FAKE_MAX || z.queued_frames >= FAKE_MAX)
		return;
	f->len[(f->head + f->n) % FAKE_MAX] = len;
	f->seed[(f->head + f->n) % FAKE_MAX] = f->next_seed++;
	f->n++;
	z.queued_frames++;
	if (eventfd_write(f->nd.rx_fd, 1) < 0)
		abort();
}

/* ---- the driver's rings ---- */

static void queue_layout(struct queue *q, unsigned idx, bool packed, unsigned num)
{
	uint64_t base = RING_AREA(idx);

	memset(q, 0, sizeof(*q));
	q->packed = packed;
	q->num = num;
	q->checkable = true;
	q->desc = base;
	q->driver = base + 16ull * num;
	q->device = packed ? q->driver + 4 : (q->driver + 6 + 2ull * num + 3) & ~3ull;
	for (unsigned i = 0; i < num; i++) {
		q->free_desc[i] = (uint16_t)(num - 1 - i);
		q->free_id[i] = (uint16_t)(num - 1 - i);
	}
	q->nfree = q->nfree_id = q->free_slots = num;
	q->avail_wrap = q->used_wrap = true;
}

static void fifo_push(struct queue *q, uint16_t id)
{
	q->fifo[(q->fifo_head + q->fifo_n++) % MAX_NUM] = id;
}

/* Gives back what chain id took, and forgets it. */
static void chain_free(struct queue *q, uint16_t id)
{
	struct chain *c = &q->c[id];

	q->live[id] = false;
	if (q->packed) {
		q->free_id[q->nfree_id++] = id;
		q->free_slots += c->slots;
	} else {
		for (unsigned i = 0; i < c->ndesc; i++)
			q->free_desc[q->nfree++] = c->desc[i];
	}
	/* Out of the posting order, wherever it is (wild rings use out of order). */
	for (unsigned i = 0; i < q->fifo_n; i++) {
		if (q->fifo[(q->fifo_head + i) % MAX_NUM] != id)
			continue;
		for (unsigned j = i; j + 1 < q->fifo_n; j++)
			q->fifo[(q->fifo_head + j) % MAX_NUM] = q->fifo[(q->fifo_head + j + 1) % MAX_NUM];
		q->fifo_n--;
		if (i < q->n_consumed)
			q->n_consumed--;
		break;
	}
}

struct seg {
	uint32_t addr, len;
	bool write;
};

/*
 * Posts a chain of n segments (in a table when indirect) and returns its
 * record; NULL when the ring has no room for it.
 */
static struct chain *post(unsigned qi, const struct seg *s, unsigned n, bool indirect)
{
	struct queue *q = &z.q[qi];
	unsigned ring_descs = indirect ? 1 : n;
	struct chain *c;
	uint16_t id;

	if (!q->num || n == 0 || n > MAX_DESCS)
		return NULL;
	if (q->packed ? q->free_slots < ring_descs || !q->nfree_id : q->nfree < ring_descs)
		return NULL;
	if (q->packed) {
		id = q->free_id[--q->nfree_id];
	} else {
		id = q->free_desc[q->nfree - 1];
	}
	c = &q->c[id];
	memset(c, 0, sizeof(*c));
	c->indirect = indirect;
	if (indirect) {
		for (unsigned i = 0; i < n; i++) {
			uint64_t at = TABLE_ADDR(qi, id) + 16ull * i;
			uint16_t wf = s[i].write ? VRING_DESC_F_WRITE : 0;

			if (q->packed)
				packed_desc(at, s[i].addr, s[i].len, 0, wf);
			else
				split_desc(at, s[i].addr, s[i].len,
					   (uint16_t)(wf | (i + 1 < n ? VRING_DESC_F_NEXT : 0)),
					   (uint16_t)(i + 1));
		}
	}
	if (q->packed) {
		unsigned slot = q->avail_slot;
		uint16_t head_flags = 0;

		for (unsigned i = 0; i < ring_descs; i++) {
			uint16_t f = (uint16_t)(q->avail_wrap ? P_AVAIL : P_USED);

			if (indirect)
				f |= VRING_DESC_F_INDIRECT;
			else
				f |= (uint16_t)((s[i].write ? VRING_DESC_F_WRITE : 0) |
						(i + 1 < n ? VRING_DESC_F_NEXT : 0));
			if (i == 0) {
				/* The head's flags last: they make the chain available. */
				head_flags = f;
				f = 0;
			}
			packed_desc(q->desc + 16ull * slot, indirect ? TABLE_ADDR(qi, id) : s[i].addr,
				    indirect ? 16u * n : s[i].len, id, f);
			if (++slot == q->num) {
				slot = 0;
				q->avail_wrap = !q->avail_wrap;
			}
		}
		wr16(q->desc + 16ull * q->avail_slot + 14, head_flags);
		q->avail_slot = slot;
		q->free_slots -= ring_descs;
		c->slots = (uint16_t)ring_descs;
	} else {
		for (unsigned i = 0; i < ring_descs; i++)
			c->desc[i] = q->free_desc[--q->nfree];
		c->ndesc = (uint16_t)ring_descs;
		for (unsigned i = 0; i < ring_descs; i++) {
			uint16_t f = indirect ? VRING_DESC_F_INDIRECT :
				     (uint16_t)((s[i].write ? VRING_DESC_F_WRITE : 0) |
						(i + 1 < n ? VRING_DESC_F_NEXT : 0));

			split_desc(q->desc + 16ull * c->desc[i],
				   indirect ? TABLE_ADDR(qi, id) : s[i].addr,
				   indirect ? 16u * n : s[i].len, f,
				   i + 1 < ring_descs ? c->desc[i + 1] : 0);
		}
		wr16(q->driver + 4 + 2ull * (q->avail_idx % q->num), id);
		q->avail_idx++;
		wr16(q->driver + 2, q->avail_idx);
		c->slots = (uint16_t)ring_descs;
	}
	/* What the device must make of it (virtio/virtqueue*.c, virtio-net.c). */
	bool seen_w = false;

	for (unsigned i = 0; i < n; i++) {
		if (!s[i].write && seen_w)
			c->poison = true;	/* readable after writable */
		if (s[i].write && s[i].len) {
			seen_w = true;
			c->writable += s[i].len;
		} else if (!s[i].write) {
			c->readable += s[i].len;
		}
		if (s[i].len && s[i].write == (qi == RXQ) && c->nbuf < MAX_DESCS + 1) {
			c->buf_addr[c->nbuf] = s[i].addr;
			c->buf_len[c->nbuf++] = s[i].len;
		}
	}
	if (indirect && !z.indirect)
		c->poison = true;
	if (qi == RXQ && (c->readable || (z.mrg && c->writable < HDR)))
		c->poison = true;
	if (qi == TXQ && (c->writable || c->readable < HDR))
		c->poison = true;
	q->live[id] = true;
	q->poisoned |= c->poison;
	q->dirty = true;
	fifo_push(q, id);
	return c;
}

static void kick(unsigned qi)
{
	if (qi < 2) {
		z.q[qi].dirty = false;
		vpci_mmio_write(&z.b, z.doorbell[qi], qi, 2);
	} else {
		z.hostile = true;
		vpci_mmio_write(&z.b, z.doorbell[0], qi, 2);
	}
}

/* ---- harvesting used buffers, and the model's checks ---- */

static void check_frame(void)
{
	struct chain *first = &z.frame[0];
	uint8_t hdr[HDR];
	size_t at = 0;

	for (unsigned i = 0; i < z.nframe; i++)
		if (!area_clean(&z.rx_data, &z.frame[i]))
			return;
	/* The chains' buffers in order, as the guest reassembles them. */
	for (unsigned i = 0; i < z.nframe; i++) {
		const struct chain *c = &z.frame[i];
		uint32_t left = c->expect;

		for (unsigned b = 0; b < c->nbuf && left; b++) {
			uint32_t l = c->buf_len[b] < left ? c->buf_len[b] : left;
			const uint8_t *p = z.mem + c->buf_addr[b];

			for (uint32_t j = 0; j < l; j++, at++) {
				if (at < HDR)
					hdr[at] = p[j];
				else
					REQUIRE(p[j] == pattern(first->seed, at - HDR),
						"a frame's bytes are not the back end's");
			}
			left -= l;
		}
	}
	REQUIRE(at == HDR + (size_t)first->frame_len, "a frame's buffers hold another length");
	REQUIRE(hdr[0] == 0 && hdr[1] == VIRTIO_NET_HDR_GSO_NONE,
		"receive header with flags or GSO");
	for (unsigned i = 2; i < 10; i++)
		REQUIRE(hdr[i] == 0, "receive header with offload fields set");
	REQUIRE((unsigned)(hdr[10] | hdr[11] << 8) == first->frame_k, "num_buffers is not the chains used");
}

static void used_one(unsigned qi, uint32_t id, uint32_t len)
{
	struct queue *q = &z.q[qi];
	struct chain *c;

	REQUIRE(!q->checkable || !z.broken_seen, "a buffer used after NEEDS_RESET");
	if (!q->checkable) {
		if (id < q->num && q->live[id])
			chain_free(q, (uint16_t)id);
		return;
	}
	REQUIRE(id < q->num && q->live[id], "used a buffer id not in flight");
	REQUIRE(q->fifo_n && q->fifo[q->fifo_head] == id, "used out of posting order");
	c = &q->c[id];
	REQUIRE(len <= c->writable, "used length beyond the chain's writable bytes");
	REQUIRE(!c->poison, "used a chain the device must refuse");
	if (qi == RXQ) {
		REQUIRE(c->consumed, "a receive buffer used without a frame");
		REQUIRE(len == c->expect, "a frame's used lengths are not the model's");
		REQUIRE(c->frame_pos == z.nframe, "a frame's chains out of order");
		z.frame[z.nframe++] = *c;
		if (z.nframe == c->frame_k) {
			check_frame();
			z.nframe = 0;
		}
	} else {
		bool sendable = c->frame_len >= ETH_MIN && c->frame_len <= ETH_MAX && !z.no_nd;

		REQUIRE(len == 0, "a transmit buffer used with a length");
		REQUIRE(c->sent == sendable, sendable ? "a transmit chain used, its frame not sent" :
			"a frame sent that must be dropped");
		if (!c->consumed) {
			/* Dropped without send(): the model goes past it now. */
			REQUIRE(q->n_consumed == 0, "a dropped chain used before those sent");
			c->consumed = true;
			q->n_consumed++;
		}
	}
	chain_free(q, (uint16_t)id);
}

static void harvest(unsigned qi)
{
	struct queue *q = &z.q[qi];

	if (!q->num)
		return;
	if (!q->packed) {
		uint16_t idx = rd16(q->device + 2), n = (uint16_t)(idx - q->used_idx);

		if (q->checkable)
			REQUIRE(n <= q->fifo_n, "used index ahead of the buffers in flight");
		if (n > q->num)
			n = (uint16_t)q->num;
		for (unsigned i = 0; i < n; i++) {
			uint64_t e = q->device + 4 + 8ull * (q->used_idx % q->num);

			used_one(qi, rd32(e), rd32(e + 4));
			q->used_idx++;
		}
		q->used_idx = idx;
	} else {
		for (unsigned i = 0; i < q->num; i++) {
			uint64_t d = q->desc + 16ull * q->used_slot;
			uint16_t fl = rd16(d + 14), id = rd16(d + 12);
			unsigned adv = 1;

			if (!!(fl & P_AVAIL) != q->used_wrap || !!(fl & P_USED) != q->used_wrap)
				break;
			if (id < q->num && q->live[id])
				adv = q->c[id].slots;
			else
				REQUIRE(!q->checkable, "used a buffer id not in flight");
			used_one(qi, id, rd32(d + 8));
			q->used_slot += adv;
			if (q->used_slot >= q->num) {
				q->used_slot -= q->num;
				q->used_wrap = !q->used_wrap;
			}
		}
	}
	if (qi == RXQ && q->checkable) {
		/* A round's used buffers all appear at once: never part of a frame. */
		REQUIRE(z.nframe == 0, "part of a frame's buffers used");
		REQUIRE(!q->n_consumed || z.broken_seen || (vpci_status(&z.pci) & DS_NEEDS_RESET),
			"a frame taken and its buffers never used");
	}
}

/*
 * Whether the device asks for the driver's next kick (VIRTIO 1.2: 2.7.7
 * the flag, 2.7.10 avail_event, 2.8.10 the device's event suppression).
 */
static bool wants_kicks(const struct queue *q)
{
	if (q->packed)
		return rd16(q->device + 2) != VRING_PACKED_EVENT_FLAG_DISABLE;
	if (z.features & BIT(VIRTIO_F_RING_EVENT_IDX))
		return rd16(q->device + 4 + 8ull * q->num) == q->avail_idx;
	return !(rd16(q->device) & VRING_USED_F_NO_NOTIFY);
}

static void check_idle(void)
{
	struct queue *rx = &z.q[RXQ], *tx = &z.q[TXQ];

	if (!z.running || z.broken_seen)
		return;
	if (rx->ready && !z.no_nd && z.f.n)
		REQUIRE(!z.rx_max || z.f.len[z.f.head] <= z.rx_max,
			"a frame longer than the MTU waits (to be dropped)");
	if (rx->ready && rx->checkable && !rx->dirty && !z.no_nd && z.f.n) {
		uint64_t need = HDR + (uint64_t)z.f.len[z.f.head], have = 0, slots = 0;
		unsigned left = rx->fifo_n - rx->n_consumed;

		if (!z.mrg) {
			REQUIRE(!left, "a frame waits with a receive buffer posted");
		} else {
			for (unsigned k = 0; k < left; k++) {
				const struct chain *c =
					&rx->c[rx->fifo[(rx->fifo_head + rx->n_consumed + k) % MAX_NUM]];

				have += c->writable;
				slots += c->slots;
			}
			REQUIRE(have < need, "a frame waits that the posted buffers hold");
			REQUIRE(slots < rx->num, "a frame waits that can never fit (not dropped)");
		}
	}
	if (tx->ready && tx->checkable && !tx->dirty) {
		REQUIRE(!tx->fifo_n, "a kicked transmit chain was not used");
		if (!timerfd_armed(vnet_tx_timer_fd(z.n)))
			REQUIRE(wants_kicks(tx), "the transmit queue is idle with kicks off");
	}
}

/*
 * The loop until idle; false if it was not idle after TURN_MAX rounds.
 * With tx=timer the wait is an hour: it ends once the loop has nothing
 * else ready, so that an idle loop still means nothing left undone; and
 * so does a slow back end's business.
 */
static bool loop_turn(void)
{
	int fd = vnet_tx_timer_fd(z.n);

	for (unsigned i = 0; i < TURN_MAX; i++) {
		if (iothread_poll(z.b.m.loop, 0) > 0)
			continue;
		if (z.f.busy) {
			fake_idle(&z.f);
			continue;
		}
		if (fd < 0 || !timerfd_armed(fd))
			return true;
		if (!timerfd_fire(fd, 1000))
			abort();
	}
	return false;
}

static void turn(void)
{
	bool idle = loop_turn();

	harvest(RXQ);
	harvest(TXQ);
	if (vpci_status(&z.pci) & DS_NEEDS_RESET) {
		if (!z.broken_seen)
			REQUIRE(z.hostile || z.q[RXQ].poisoned || z.q[TXQ].poisoned ||
				!z.q[RXQ].checkable || !z.q[TXQ].checkable,
				"NEEDS_RESET though the driver broke no rule");
		z.broken_seen = true;
	}
	if (idle)
		check_idle();
}

/* ---- the driver: setup, reset ---- */

static unsigned queue_size(uint8_t b, bool packed)
{
	return packed ? (b ? b : 256u) : 1u << (b % 9);
}

static void setup(uint8_t feat, uint8_t rxs, uint8_t txs)
{
	uint64_t want = BIT(VIRTIO_NET_F_MRG_RXBUF) * !!(feat & 8);
	bool packed;

	memset(z.q, 0, sizeof(z.q));
	z.running = z.broken_seen = z.hostile = false;
	z.nframe = 0;
	if (!(feat & 0x20))
		want |= BIT(VIRTIO_F_VERSION_1);
	if (feat & 1)
		want |= BIT(VIRTIO_F_RING_PACKED);
	if (feat & 2)
		want |= BIT(VIRTIO_F_RING_EVENT_IDX);
	if (feat & 4)
		want |= BIT(VIRTIO_F_RING_INDIRECT_DESC);
	if (feat & 16)
		want |= BIT(VIRTIO_NET_F_MAC) | BIT(VIRTIO_NET_F_STATUS) | BIT(VIRTIO_NET_F_MTU);
	vpci_set_status(&z.pci, DS_ACKNOWLEDGE);
	z.features = vpci_negotiate(&z.pci, want);
	if (!(vpci_status(&z.pci) & DS_FEATURES_OK)) {
		/* Only a driver without VERSION_1 is refused. */
		REQUIRE(!(z.features & BIT(VIRTIO_F_VERSION_1)), "features refused");
		return;
	}
	packed = z.features & BIT(VIRTIO_F_RING_PACKED);
	z.mrg = z.features & BIT(VIRTIO_NET_F_MRG_RXBUF);
	z.rx_max = z.features & BIT(VIRTIO_NET_F_MTU) ? z.host_mtu + ETH_MIN : 0;
	z.indirect = z.features & BIT(VIRTIO_F_RING_INDIRECT_DESC);
	for (unsigned qi = 0; qi < 2; qi++) {
		struct queue *q = &z.q[qi];

		if (feat & (0x40 << qi))
			continue;
		queue_layout(q, qi, packed, queue_size(qi ? txs : rxs, packed));
		vpci_queue_setup(&z.pci, qi, q->num, VIRTIO_NO_VECTOR, q->desc, q->driver, q->device);
		REQUIRE(cc_read(&z.pci, CC_Q_SIZE, 2) == q->num, "queue size refused");
		cc_write(&z.pci, CC_Q_ENABLE, 1, 2);
		REQUIRE(cc_read(&z.pci, CC_Q_ENABLE, 2) == 1, "a queue set up right was refused");
	}
	vpci_set_status(&z.pci, DS_ACKNOWLEDGE | DS_DRIVER | DS_FEATURES_OK | DS_DRIVER_OK);
	REQUIRE(vpci_status(&z.pci) & DS_DRIVER_OK, "DRIVER_OK refused");
	z.running = true;
	z.q[RXQ].ready = z.q[RXQ].num != 0;
	z.q[TXQ].ready = z.q[TXQ].num != 0;
}

static uint8_t snapshot[RAM_SIZE];

static void reset(uint8_t feat, uint8_t rxs, uint8_t txs)
{
	unsigned tries = 0;

	harvest(RXQ);
	harvest(TXQ);
	vpci_set_status(&z.pci, 0);
	while (vpci_status(&z.pci))
		REQUIRE(++tries < 1000, "reset never completes");
	if (z.resets++ < MAX_RESETS) {
		/* VIRTIO 1.2, 2.4: once status reads 0, hands off the rings and buffers. */
		z.quiet = true;
		memcpy(snapshot, z.mem, RAM_SIZE);
		eventfd_write(z.f.nd.rx_fd, 1);
		loop_turn();
		REQUIRE(!memcmp(snapshot, z.mem, RAM_SIZE), "guest RAM written after reset");
		z.quiet = false;
	}
	/* The driver starts its rings afresh. */
	memset(z.mem, 0, RX_DATA);
	setup(feat, rxs, txs);
}

/* ---- the operations ---- */

static uint32_t desc_len(uint8_t f, uint16_t v)
{
	uint32_t len = v | (uint32_t)(f & 1) << 16;

	return len > 65536 ? 65536 : len;
}

static void op_rx(struct fuzz_in *in)
{
	uint8_t shape = fuzz_u8(in);
	unsigned n = (shape & 7) + 1;
	struct seg s[MAX_DESCS];
	uint64_t first = 0;

	for (unsigned i = 0; i < n; i++) {
		uint8_t f = fuzz_u8(in);
		uint64_t cur;

		s[i].len = desc_len(f, fuzz_u16(in));
		s[i].write = (f & 6) != 6;
		s[i].addr = area_alloc(&z.rx_data, s[i].len, &cur);
		if (i == 0)
			first = cur;
	}
	struct chain *c = post(RXQ, s, n, shape & 8);

	if (c)
		c->cursor = first;
	if (shape & 16)
		kick(RXQ);
}

static void op_fill(struct fuzz_in *in)
{
	unsigned count = fuzz_u8(in) % 64 + 1;
	uint8_t f = fuzz_u8(in);
	uint32_t len = desc_len(f, fuzz_u16(in));

	for (unsigned i = 0; i < count; i++) {
		struct seg s = { 0, len, true };
		uint64_t cur;
		struct chain *c;

		s.addr = area_alloc(&z.rx_data, len, &cur);
		if (!(c = post(RXQ, &s, 1, false)))
			break;
		c->cursor = cur;
	}
	kick(RXQ);
}

static void op_tx(struct fuzz_in *in)
{
	uint8_t shape = fuzz_u8(in), hi = fuzz_u8(in);
	unsigned n = (shape & 7) + 1, nseg = n;
	uint32_t total = fuzz_u16(in) | (uint32_t)(hi & 1) << 16, cuts[MAX_DESCS + 1];
	struct seg s[MAX_DESCS + 1];
	uint64_t cur;
	uint32_t addr;
	unsigned seed = z.f.next_seed++;

	if (total > TX_MAX)
		total = TX_MAX;
	addr = area_alloc(&z.tx_data, total, &cur);
	for (uint32_t i = 0; i < total; i++)
		z.mem[addr + i] = pattern(seed, i);
	/* n parts at sorted cut points (empty parts included). */
	cuts[0] = 0;
	cuts[n] = total;
	for (unsigned i = 1; i < n; i++)
		cuts[i] = fuzz_u16(in) % (total + 1);
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			if (cuts[j] < cuts[i]) {
				uint32_t t = cuts[i];

				cuts[i] = cuts[j];
				cuts[j] = t;
			}
	for (unsigned i = 0; i < n; i++)
		s[i] = (struct seg){ addr + cuts[i], cuts[i + 1] - cuts[i], false };
	if (shape & 32) {
		/* A device-writable buffer in transmitq: to be refused. */
		uint32_t wl = fuzz_u16(in), wa = area_alloc(&z.tx_data, wl, &(uint64_t){ 0 });

		if (nseg < MAX_DESCS)
			s[nseg++] = (struct seg){ wa, wl, true };
	}
	struct chain *c = post(TXQ, s, nseg, shape & 8);

	if (c) {
		c->cursor = cur;
		c->seed = seed;
		c->frame_len = total >= HDR ? total - HDR : 0;
	}
	if (shape & 16)
		kick(TXQ);
}

static uint64_t wild_addr(uint64_t v)
{
	return v >> 56 == 0xff ? v : (v & 0xffffffffu) % WILD_SPAN;
}

/* Raw writes into a queue's rings and tables: the model steps aside. */
static void op_wild(struct fuzz_in *in)
{
	uint8_t kind = fuzz_u8(in), where = fuzz_u8(in);
	unsigned qi = kind & 1;
	struct queue *q = &z.q[qi];
	uint64_t addr = wild_addr(fuzz_u64(in));
	uint32_t len = fuzz_u32(in);
	uint16_t a = fuzz_u16(in), b = fuzz_u16(in);
	unsigned what = (kind >> 1) & 3;

	if (!q->num)
		return;
	q->checkable = false;
	z.hostile = true;
	/*
	 * A raw receive descriptor or table entry (or packed ring entry,
	 * which is a descriptor) may name, device-writable, memory that
	 * posted transmit chains or the transmit ring's areas hold.  The
	 * device writes a frame there as told (VIRTIO 1.2, 2.7.5.1 forbids it
	 * only device-readable buffers) and reads a transmit chain's memory
	 * when it gets to it (2.7.13.3), so the frame it sends is what that
	 * memory then holds, not what was posted, and the transmit ring's
	 * suppression flags may be a frame's bytes.
	 */
	if (qi == RXQ && (what == 0 || what == 3 || (what == 1 && q->packed)))
		z.q[TXQ].checkable = false;
	switch (what) {
	case 0:	/* a descriptor anywhere in the ring */
		wr_desc(q->desc + 16ull * (where % q->num), addr, len, a, b);
		break;
	case 1:	/* a ring entry offered */
		if (q->packed) {
			packed_desc(q->desc + 16ull * q->avail_slot, addr, len, a,
				    (uint16_t)((b & ~(P_AVAIL | P_USED)) |
					       (q->avail_wrap ? P_AVAIL : P_USED)));
			if (++q->avail_slot == q->num) {
				q->avail_slot = 0;
				q->avail_wrap = !q->avail_wrap;
			}
		} else {
			wr16(q->driver + 4 + 2ull * (q->avail_idx % q->num), a);
			q->avail_idx++;
			wr16(q->driver + 2, q->avail_idx);
		}
		break;
	case 2:	/* the avail index jumps; the packed driver loses its lap */
		if (q->packed) {
			q->avail_wrap = !q->avail_wrap;
		} else {
			q->avail_idx = (uint16_t)(q->avail_idx + where);
			wr16(q->driver + 2, q->avail_idx);
		}
		break;
	case 3:	/* an indirect table entry */
		wr_desc(TABLE_ADDR(qi, where) + 16ull * (a % MAX_DESCS), addr, len,
			(uint16_t)(b >> 8), b);
		break;
	}
}

static void op_config(struct fuzz_in *in)
{
	uint8_t off = fuzz_u8(in), f = fuzz_u8(in);
	unsigned width = 1u << (f & 3);

	if (width == 8)
		width = 4;
	if (f & 8) {
		if (z.pci.isr)
			(void)vpci_mmio_read(&z.b, z.pci.isr, 1);
		return;
	}
	if (!z.pci.device)
		return;
	if (f & 4) {
		z.hostile = true;
		vpci_mmio_write(&z.b, z.pci.device + off % 32, off, width);
	} else {
		(void)vpci_mmio_read(&z.b, z.pci.device + off % 32, width);
	}
}

static void op_suppress(struct fuzz_in *in)
{
	struct queue *q = &z.q[fuzz_u8(in) & 1];
	uint16_t a = fuzz_u16(in), b = fuzz_u16(in);

	if (!q->num)
		return;
	if (q->packed) {
		wr16(q->driver, a);
		wr16(q->driver + 2, b);
	} else {
		wr16(q->driver, a);
		wr16(q->driver + 4 + 2ull * q->num, b);
	}
}

/* ---- the board ---- */

static void board_up(uint8_t dev, uint8_t more)
{
	bool tx_timer = more & 1;
	struct vnet_cfg cfg = {
		.ring = { .packed = dev & 1, .event_idx = dev & 2, .indirect_desc = dev & 4 },
		.host_mtu = dev & 8 ? 1500 : 0,
		.rx_queue_size = dev & 32 ? 1024 : 256, .tx_queue_size = dev & 64 ? 512 : 256,
		.tx = tx_timer ? VNET_TX_TIMER : VNET_TX_BH, .tx_timer_ns = 3600000000000ull,
		.tx_hold = true,
	};
	unsigned devfn = 0;
	bool found = false;

	if (fuzz_ram_init(&z.ram, NULL, 0, RAM_SIZE, 0) < 0)
		abort();
	z.mem = z.ram.block[0];
	board_init(&z.b, 1, 0);
	board_ram_mem(&z.b, &z.ram.mem);
	board_pci(&z.b, BOARD_PCI_BASE, BOARD_PCI_SIZE);
	z.b.m.loop = iothread_new("main");
	z.f.nd.ops = dev & 128 ? &fake_recv_ops : &fake_ops;
	z.f.nd.rx_max_len = FRAME_MAX;
	z.f.nd.id = "fuzz";
	z.f.nd.rx_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	z.f.nd.tx_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	z.f.slow = more & 2;
	z.no_nd = dev & 16;
	z.host_mtu = cfg.host_mtu;
	if (!z.b.m.loop || z.f.nd.rx_fd < 0 || z.f.nd.tx_fd < 0)
		abort();
	z.n = vnet_create(&z.b.m, &cfg, virtio_pci_plug(&z.b.m, NET_CLASS),
			  z.no_nd ? NULL : &z.f.nd);
	if (!z.n)
		abort();	/* a valid configuration must make a device */
	for (unsigned slot = 0; slot < 32 && !found; slot++) {
		devfn = slot << 3;
		found = cfg_read(&z.b, devfn, 0, 4) == ((uint32_t)NET_PCI_ID << 16 | 0x1af4);
	}
	if (!found)
		abort();
	cfg_write(&z.b, devfn, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 2);
	vpci_probe(&z.b, devfn, &z.pci);
	if (!z.pci.common || !z.pci.notify)
		abort();
	for (unsigned qi = 0; qi < 2; qi++) {
		cc_write(&z.pci, CC_Q_SELECT, qi, 2);
		z.doorbell[qi] = z.pci.notify + cc_read(&z.pci, CC_Q_NOTIFY_OFF, 2) * z.pci.notify_mult;
	}
	z.rx_data = (struct area){ RX_DATA, RX_DATA_SIZE, 0 };
	z.tx_data = (struct area){ TX_DATA, TX_DATA_SIZE, 0 };
}

static void board_down(void)
{
	struct vnet_stats s;

	vnet_get_stats(z.n, &s);
	REQUIRE(s.rx_frames == z.f.takes, "rx_frames is not the frames taken");
	REQUIRE(s.rx_dropped == z.f.drops, "rx_dropped is not the frames dropped");
	REQUIRE(s.tx_frames == z.f.sends_ok, "tx_frames is not the frames sent");
	REQUIRE(s.tx_dropped >= z.f.sends_refused, "tx_dropped misses refused sends");
	vnet_free(z.n);
	close(z.f.nd.rx_fd);
	close(z.f.nd.tx_fd);
	iothread_free(z.b.m.loop);
	board_destroy(&z.b);
	fuzz_ram_free(&z.ram);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t dev = fuzz_u8(&in), feat = fuzz_u8(&in), rxs = fuzz_u8(&in), txs = fuzz_u8(&in);
	uint8_t more = fuzz_u8(&in);

	memset(&z, 0, sizeof(z));
	board_up(dev, more);
	setup(feat, rxs, txs);
	for (unsigned i = 0; i < MAX_OPS && in.n; i++) {
		uint8_t op = fuzz_u8(&in);

		switch (op % 12) {
		case 0: op_rx(&in); break;
		case 1: op_tx(&in); break;
		case 2: op_wild(&in); break;
		case 3: kick(fuzz_u8(&in) & 3); break;
		case 4: {
			uint8_t hi = fuzz_u8(&in);
			uint32_t lo = fuzz_u16(&in);

			fake_queue(1 + (lo | (uint32_t)(hi & 1) << 16) % FRAME_MAX);
			break;
		}
		case 5: turn(); break;
		case 6: {
			uint8_t f = fuzz_u8(&in), r = fuzz_u8(&in), t = fuzz_u8(&in);

			reset(f, r, t);
			break;
		}
		case 7: op_config(&in); break;
		case 8: op_suppress(&in); break;
		case 9: z.f.refuse = !z.f.refuse; break;
		case 10:
			if (eventfd_write(z.f.nd.rx_fd, 1) < 0)
				abort();
			break;
		case 11: op_fill(&in); break;
		}
	}
	turn();
	board_down();
	return 0;
}
