// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-blk (VIRTIO 1.2, 5.2), plugged into the guest's board on the
 * modern PCI transport, or served to another process's guest over
 * vhost-user (-export); the same device either way.
 *
 * Every virtqueue has its own blk_queue (its own io_uring) and runs on one
 * of the device's I/O threads (iothreads=N, default 1: a polling thread
 * per queue would keep as many host CPUs spinning as the guest has
 * queues).  The device lock is taken once per batch of pops and once per
 * batch of completions, never per request.
 *
 * Guest mistakes in a request's layout come in two kinds.  Breaking the
 * rules every driver must follow (no room for the header or the status
 * byte, more buffers in use than the queue holds) is a ring-level error:
 * virtio_error() and NEEDS_RESET.  A request that is well-formed but wrong
 * for its type (IN with extra readable data, OUT with writable data, a bad
 * sector range, a length that is not a multiple of 512, more segments or
 * larger ones than seg_max and size_max allow where the driver accepted
 * them, 4 GiB or more of data) fails alone with IOERR and the device keeps
 * serving.
 *
 * A reset completes (status reads 0) only once every request taken before
 * it has come back from the backend, which may still be reading or writing
 * guest memory for it; the vCPU that wrote 0 never waits for that.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <linux/virtio_blk.h>
#include <linux/virtio_ids.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "block/block.h"
#include "hw/block/virtio-blk.h"
#include "hw/machine.h"
#include "hw/virtio/vhost-user-backend.h"
#include "hw/virtio/virtio-pci.h"
#include "util/clock.h"
#include "util/iothread.h"
#include "util/iov.h"
#include "util/log.h"
#include "virtio/virtio.h"
#include "virtio-blk-int.h"

/* Not a VIRTIO_BLK_S_* status: the request goes on to the block backend. */
#define VBLK_S_SUBMIT 0xff
#define PCI_CLASS_STORAGE_OTHER 0x018000

#define SECTOR_SHIFT 9
#define SECTOR_SIZE (1u << SECTOR_SHIFT)
#define VBLK_HDR_LEN 16
#define VBLK_SEG_LEN 16

/*
 * One range per DISCARD/WRITE_ZEROES request maps onto one blk_req; Linux
 * splits larger ones itself.  2 GiB per range keeps a single fallocate()
 * from stalling a queue for long.
 */
#define VBLK_MAX_ZERO_SEG 1
#define VBLK_MAX_ZERO_SECTORS (1u << 22)
#define VBLK_DISCARD_ALIGN 8	/* sectors: a typical host file system block */
/*
 * size_max and seg_max, which the device offers: a driver that accepts
 * them sends at most seg_max data segments of at most size_max bytes.
 * Whatever it accepted, a READ/WRITE moves less than 4 GiB (its used
 * length is 32 bits) in at most IOV_MAX segments.
 */
#define VBLK_SIZE_MAX (1u << 20)
#define VBLK_MAX_RW_LEN (UINT32_MAX - 1)

/*
 * Rounds of up to a queue's worth of requests one kick serves before the
 * I/O thread turns to its other queues (the kick is then raised again).
 */
#define VBLK_SERVE_ROUNDS 4

/* Config space layout: where <linux/virtio_blk.h> puts each field. */
#define CFG(field) offsetof(struct virtio_blk_config, field)
#define CFG_CAPACITY CFG(capacity)
#define CFG_SIZE_MAX CFG(size_max)
#define CFG_SEG_MAX CFG(seg_max)
#define CFG_BLK_SIZE CFG(blk_size)
#define CFG_PHYS_BLOCK_EXP CFG(physical_block_exp)
#define CFG_ALIGN_OFFSET CFG(alignment_offset)
#define CFG_MIN_IO_SIZE CFG(min_io_size)
#define CFG_OPT_IO_SIZE CFG(opt_io_size)
#define CFG_NUM_QUEUES CFG(num_queues)
#define CFG_MAX_DISCARD_SECTORS CFG(max_discard_sectors)
#define CFG_MAX_DISCARD_SEG CFG(max_discard_seg)
#define CFG_DISCARD_ALIGN CFG(discard_sector_alignment)
#define CFG_MAX_WZ_SECTORS CFG(max_write_zeroes_sectors)
#define CFG_MAX_WZ_SEG CFG(max_write_zeroes_seg)
#define CFG_WZ_MAY_UNMAP CFG(write_zeroes_may_unmap)
/* Up to write_zeroes_may_unmap and its padding: VIRTIO 1.1's fields. */
#define VBLK_CONFIG_LEN CFG(max_secure_erase_sectors)
_Static_assert(VBLK_CONFIG_LEN == 60, "VIRTIO 1.1 config space: 60 bytes");

struct vblk_queue;

/* A popped request; pop allocates it with the element first. */
struct vblk_req {
	struct vq_elem elem;
	struct blk_req br;
	struct vblk_queue *q;
	struct vblk_req *next;
	uint8_t *status_ptr;	/* last byte of the last writable buffer */
	uint64_t expect;	/* bytes a READ/WRITE must move */
	uint32_t used_len;	/* bytes written into the chain on success */
	uint32_t gen;
	uint8_t status;
};

struct vblk_queue {
	struct vblk *s;
	unsigned idx;
	struct iothread *t;
	struct blk_queue *bq;
	int irq_timer_fd;	/* ends a held interrupt's wait */
	uint64_t coalesce_ns;
	uint64_t interval_ns;

	int kick_fd;		/* a vhost-user front-end's, or -1 */

	/* under s->vdev.lock */
	bool serving;		/* popping allowed */
	bool stopping;		/* stop_queue waits on drained */
	unsigned outstanding;	/* popped, neither pushed nor dropped yet */
	pthread_cond_t drained;
	/* Request structs for reuse: no malloc() per request. */
	struct vq_elem_cache cache;
	uint32_t gen;		/* bumped by reset: older requests are not published */
	bool irq_held;		/* used entries published, interrupt not sent */
	uint64_t last_irq_ns;	/* CLOCK_MONOTONIC of the last interrupt sent */
	/*
	 * Popped for the backend, callback not yet run: such a request may
	 * still write guest memory (a reset waits for 0).  Atomic; raised
	 * under the lock, lowered by the I/O thread, which then takes the
	 * lock to let a pending reset complete.
	 */
	unsigned in_backend;

	/* I/O thread only */
	struct vblk_req *done;	/* completed, not yet in the used ring */
	bool in_kick;
	bool polling;		/* under s->vdev.lock: the I/O thread spins */
	bool closing;		/* atomic: destroy has begun */
};

struct vblk {
	struct virtio_device vdev;
	bool vdev_ready;
	struct virtio_pci *pci;
	struct vu_backend *vu;
	struct guest_mem shared_mem;	/* what a vhost-user front-end maps in */
	struct blk_file *file;
	bool readonly;
	bool writethrough;	/* under vdev.lock: the driver took no FLUSH */
	uint64_t capacity;	/* sectors */
	unsigned seg_max;
	/* Under vdev.lock: seg_max and size_max where the driver took them. */
	unsigned seg_limit;
	uint32_t size_limit;
	uint64_t ops_taken;	/* under vdev.lock: 1 << VIRTIO_BLK_T_* the driver took */
	unsigned nq;
	struct vblk_queue *q;
	unsigned nt;
	struct iothread **t;	/* queue i is served by t[i % nt] */
	uint8_t serial[VBLK_SERIAL_LEN];
	uint8_t config[VBLK_CONFIG_LEN];
};

static size_t iov_size(const struct iovec *iov, unsigned n)
{
	size_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += iov[i].iov_len;
	return sum;
}

/* Drops the first skip bytes of iov in place; returns the new start. */
static struct iovec *iov_skip(struct iovec *iov, unsigned *n, size_t skip)
{
	while (*n && skip >= iov->iov_len) {
		skip -= iov->iov_len;
		iov++;
		(*n)--;
	}
	if (*n && skip) {
		iov->iov_base = (uint8_t *)iov->iov_base + skip;
		iov->iov_len -= skip;
	}
	return iov;
}

static bool vblk_range_ok(const struct vblk *s, uint64_t sector, uint64_t nsec)
{
	return sector <= s->capacity && nsec <= s->capacity - sector;
}

/*
 * The bytes of a READ/WRITE's data segments, in the one walk over them
 * that also checks the segment limits; above VBLK_MAX_RW_LEN when they
 * are broken.
 */
static uint64_t vblk_data_len(const struct vblk *s, const struct iovec *iov, unsigned n)
{
	uint64_t len = 0;

	if (n > s->seg_limit)
		return UINT64_MAX;
	for (unsigned i = 0; i < n; i++) {
		if (iov[i].iov_len > s->size_limit)
			return UINT64_MAX;
		len += iov[i].iov_len;
	}
	return len;
}

static uint8_t vblk_rw(struct vblk_queue *q, struct vblk_req *r, bool write,
		       uint64_t sector, size_t out_size, unsigned in_num)
{
	struct vblk *s = q->s;
	struct vq_elem *e = &r->elem;
	struct iovec *iov;
	unsigned n;
	uint64_t len;

	if (write) {
		if (in_num || s->readonly)
			return VIRTIO_BLK_S_IOERR;
		n = e->out_num;
		iov = iov_skip(e->out_sg, &n, VBLK_HDR_LEN);
	} else {
		if (out_size != VBLK_HDR_LEN)
			return VIRTIO_BLK_S_IOERR;
		iov = e->in_sg;
		n = in_num;
	}
	len = vblk_data_len(s, iov, n);
	if (len > VBLK_MAX_RW_LEN || len % SECTOR_SIZE ||
	    !vblk_range_ok(s, sector, len >> SECTOR_SHIFT))
		return VIRTIO_BLK_S_IOERR;
	if (!len)
		return VIRTIO_BLK_S_OK;
	r->br.op = write ? BLK_OP_WRITE : BLK_OP_READ;
	r->br.offset = sector << SECTOR_SHIFT;
	r->br.len = len;
	r->br.iov = iov;
	r->br.iovcnt = (int)n;
	r->br.fua = write && s->writethrough;
	if (!write)
		r->used_len = (uint32_t)(len + 1);	/* len <= VBLK_MAX_RW_LEN */
	r->expect = len;
	return VBLK_S_SUBMIT;
}

static uint8_t vblk_zeroes(struct vblk_queue *q, struct vblk_req *r, uint32_t type,
			   size_t out_size, unsigned in_num)
{
	struct vblk *s = q->s;
	uint8_t seg[VBLK_SEG_LEN];
	size_t segs = out_size - VBLK_HDR_LEN;
	uint64_t sector;
	uint32_t nsec, flags;

	if (!(s->ops_taken & (1ull << type)))
		return VIRTIO_BLK_S_UNSUPP;
	if (in_num || s->readonly || !segs || segs % VBLK_SEG_LEN)
		return VIRTIO_BLK_S_IOERR;
	if (segs / VBLK_SEG_LEN > VBLK_MAX_ZERO_SEG)
		return VIRTIO_BLK_S_UNSUPP;
	iov_copy(r->elem.out_sg, r->elem.out_num, VBLK_HDR_LEN, seg, sizeof(seg), true);
	memcpy(&sector, seg, 8);
	memcpy(&nsec, seg + 8, 4);
	memcpy(&flags, seg + 12, 4);
	sector = le64toh(sector);
	nsec = le32toh(nsec);
	flags = le32toh(flags);
	/* Discard must not carry the unmap flag; no other flag exists. */
	if (flags & ~(type == VIRTIO_BLK_T_WRITE_ZEROES ? VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP : 0))
		return VIRTIO_BLK_S_UNSUPP;
	if (nsec > VBLK_MAX_ZERO_SECTORS || !vblk_range_ok(s, sector, nsec))
		return VIRTIO_BLK_S_IOERR;
	if (!nsec)
		return VIRTIO_BLK_S_OK;
	r->br.op = type == VIRTIO_BLK_T_DISCARD ? BLK_OP_DISCARD : BLK_OP_WRITE_ZEROES;
	r->br.offset = sector << SECTOR_SHIFT;
	r->br.len = (uint64_t)nsec << SECTOR_SHIFT;
	r->br.unmap = flags & VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP;
	r->br.fua = type == VIRTIO_BLK_T_WRITE_ZEROES && s->writethrough;
	return VBLK_S_SUBMIT;
}

/*
 * Turns a chain into a backend request (1), a request answered right away
 * with r->status (0), or a guest error (-1, *why set).
 */
static int vblk_parse(struct vblk_queue *q, struct vblk_req *r, const char **why)
{
	struct vq_elem *e = &r->elem;
	size_t out_size = iov_size(e->out_sg, e->out_num);
	unsigned in_num = e->in_num;
	uint8_t hdr[VBLK_HDR_LEN];
	uint32_t type;
	uint64_t sector;
	uint8_t st;

	if (out_size < VBLK_HDR_LEN) {
		*why = "request header shorter than 16 bytes";
		return -1;
	}
	while (in_num && !e->in_sg[in_num - 1].iov_len)
		in_num--;
	if (!in_num) {
		*why = "request without a status byte";
		return -1;
	}
	struct iovec *last = &e->in_sg[in_num - 1];

	r->status_ptr = (uint8_t *)last->iov_base + last->iov_len - 1;
	if (!--last->iov_len)
		in_num--;

	iov_copy(e->out_sg, e->out_num, 0, hdr, sizeof(hdr), true);
	memcpy(&type, hdr, 4);
	memcpy(&sector, hdr + 8, 8);
	type = le32toh(type);
	sector = le64toh(sector);

	switch (type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT:
		st = vblk_rw(q, r, type == VIRTIO_BLK_T_OUT, sector, out_size, in_num);
		break;
	case VIRTIO_BLK_T_FLUSH:
		r->br.op = BLK_OP_FLUSH;
		st = VBLK_S_SUBMIT;
		break;
	case VIRTIO_BLK_T_GET_ID: {
		size_t n = iov_size(e->in_sg, in_num);

		if (n > VBLK_SERIAL_LEN)
			n = VBLK_SERIAL_LEN;
		iov_copy(e->in_sg, in_num, 0, q->s->serial, n, false);
		r->used_len = (uint32_t)n + 1;
		st = VIRTIO_BLK_S_OK;
		break;
	}
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES:
		st = vblk_zeroes(q, r, type, out_size, in_num);
		break;
	default:
		st = VIRTIO_BLK_S_UNSUPP;
		break;
	}
	if (st == VBLK_S_SUBMIT)
		return 1;
	r->status = st;
	if (st != VIRTIO_BLK_S_OK)
		r->used_len = 1;
	return 0;
}

/*
 * Interrupt coalescing: the entries are in the used ring at once; only the
 * interrupt waits, so that one interrupt (one or two VM exits) covers
 * several completions.
 *
 * irq-coalesce-us: while more of the queue's requests are in the backend,
 * the interrupt waits, up to the window, for theirs.  The last request out
 * never waits, so a guest with one request in flight sees no added latency.
 *
 * irq-interval-us: a queue's interrupts are at least this far apart.  This
 * is for a guest slower than its disk: each completion would otherwise
 * interrupt it alone, right after it submitted the request, and the
 * guest's time goes to taking interrupts.  It costs a request finishing
 * inside the gap up to the gap in latency.
 */
static void vblk_irq_send_locked(struct vblk_queue *q)
{
	q->irq_held = false;
	if (virtio_notify(&q->s->vdev, q->idx) && q->interval_ns)
		q->last_irq_ns = clock_now_ns();
}

static unsigned vblk_in_backend(const struct vblk_queue *q)
{
	return __atomic_load_n(&q->in_backend, __ATOMIC_RELAXED);
}

static void vblk_irq_locked(struct vblk_queue *q)
{
	uint64_t wait = 0;

	if (q->coalesce_ns && vblk_in_backend(q))
		wait = q->coalesce_ns;
	if (q->interval_ns) {
		uint64_t since = clock_now_ns() - q->last_irq_ns;

		if (since < q->interval_ns && q->interval_ns - since > wait)
			wait = q->interval_ns - since;
	}
	if (!wait) {
		vblk_irq_send_locked(q);
		return;
	}
	if (q->irq_held)
		return;
	struct itimerspec its = {
		.it_value = { .tv_sec = wait / 1000000000,
			      .tv_nsec = wait % 1000000000 },
	};

	q->irq_held = true;
	/* Cannot fail for a valid fd and time; should it, send now. */
	if (timerfd_settime(q->irq_timer_fd, 0, &its, NULL) < 0)
		vblk_irq_send_locked(q);
}

static void vblk_irq_timer_handler(void *opaque)
{
	struct vblk_queue *q = opaque;
	struct virtio_device *vdev = &q->s->vdev;
	uint64_t cnt;

	if (read(q->irq_timer_fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&vdev->lock);
	if (q->irq_held && q->serving && !vdev->broken)
		vblk_irq_send_locked(q);
	pthread_mutex_unlock(&vdev->lock);
}

/* n popped requests were pushed or dropped: a stop_queue may be waiting. */
static void vblk_settled_locked(struct vblk_queue *q, unsigned n)
{
	q->outstanding -= n;
	if (!q->outstanding && q->stopping)
		pthread_cond_broadcast(&q->drained);
}

/*
 * Puts completed requests into the used ring: one flush and at most one
 * interrupt for the whole list.  Requests from before a reset are only
 * freed; the last of them to come back completes the reset.  Called with
 * the device lock held.
 */
static void vblk_publish_locked(struct vblk_queue *q, struct vblk_req *list)
{
	struct virtio_device *vdev = &q->s->vdev;
	struct virtqueue *vq = &vdev->queues[q->idx].vq;
	unsigned n = 0;

	/*
	 * A stopped queue still answers what it took: stop_queue waits for
	 * that.  Only a reset (a new generation) or a broken device drops.
	 */
	while (list) {
		struct vblk_req *r = list;

		list = r->next;
		if (!vdev->broken && r->gen == q->gen) {
			*r->status_ptr = r->status;
			virtqueue_fill(vq, &r->elem, r->used_len, n++);
		}
		vq_elem_put(&q->cache, &r->elem);
		vblk_settled_locked(q, 1);
	}
	if (n) {
		virtqueue_flush(vq, n);
		vblk_irq_locked(q);
	}
	virtio_reset_check(vdev);
}

static void vblk_publish(struct vblk_queue *q)
{
	struct vblk_req *list = q->done;

	q->done = NULL;
	if (!list)
		return;
	pthread_mutex_lock(&q->s->vdev.lock);
	vblk_publish_locked(q, list);
	pthread_mutex_unlock(&q->s->vdev.lock);
}

/*
 * The backend has run every completion it had ready: they leave together,
 * one used-ring flush and one interrupt, unless a kick handler is running
 * (it publishes when it ends, with what it answered itself).
 */
static void vblk_batch_done(void *opaque)
{
	struct vblk_queue *q = opaque;

	if (!q->in_kick && !__atomic_load_n(&q->closing, __ATOMIC_ACQUIRE))
		vblk_publish(q);
}

/* Backend completion, on the queue's I/O thread: gathered for the batch's end. */
static void vblk_complete(struct blk_req *br, int64_t res)
{
	struct vblk_req *r = container_of(br, struct vblk_req, br);
	struct vblk_queue *q = r->q;
	bool rw = br->op == BLK_OP_READ || br->op == BLK_OP_WRITE;

	if (__atomic_load_n(&q->closing, __ATOMIC_ACQUIRE)) {
		vq_elem_put(&q->cache, &r->elem);
		return;
	}
	__atomic_sub_fetch(&q->in_backend, 1, __ATOMIC_RELEASE);
	r->status = res < 0 || (rw && (uint64_t)res != r->expect) ?
		    VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
	if (r->status != VIRTIO_BLK_S_OK)
		r->used_len = 1;
	r->next = q->done;
	q->done = r;
}

/*
 * Hands a batch popped under the lock to the backend, with one submit.  A
 * reset may have come in between: the batch is counted in in_backend, so
 * the reset completes only once it is back, and its completions are not
 * published (their generation is gone).
 */
static void vblk_submit(struct vblk_queue *q, struct vblk_req *batch)
{
	while (batch) {
		struct vblk_req *r = batch;

		batch = r->next;
		blk_queue_add(q->bq, &r->br);
	}
	blk_queue_submit(q->bq);
}

/*
 * One round: pop up to a ring's worth of requests under the lock, then
 * hand them to the kernel with one submit.  Returns true when the ring may
 * hold more work.
 */
static bool vblk_kick_round(struct vblk_queue *q)
{
	struct virtio_device *vdev = &q->s->vdev;
	struct virtqueue *vq = &vdev->queues[q->idx].vq;
	struct vblk_req *now = NULL, *batch = NULL, **tail = &batch;
	unsigned n, added = 0;
	bool more = false;

	pthread_mutex_lock(&vdev->lock);
	if (!q->serving || vdev->broken) {
		pthread_mutex_unlock(&vdev->lock);
		return false;
	}
	virtqueue_set_notification(vq, false);
	for (n = 0; n < vq->num; n++) {
		struct vq_elem *e;
		const char *why = NULL;
		int ret = virtqueue_pop_cached(vq, &q->cache, &e);

		if (ret == 0)
			break;
		if (ret < 0) {
			virtio_error(vdev, "virtio-blk: queue %u: %s", q->idx,
				     vq->error ? vq->error : "malformed ring");
			break;
		}
		struct vblk_req *r = (struct vblk_req *)e;

		q->outstanding++;
		/* Zeroed by the pop beyond the element. */
		r->q = q;
		r->gen = q->gen;
		r->used_len = 1;
		r->br.cb = vblk_complete;
		ret = vblk_parse(q, r, &why);
		if (ret < 0) {
			vq_elem_put(&q->cache, &r->elem);
			vblk_settled_locked(q, 1);
			virtio_error(vdev, "virtio-blk: queue %u: %s", q->idx, why);
			break;
		}
		if (ret == 0) {
			r->next = now;
			now = r;
			continue;
		}
		*tail = r;
		tail = &r->next;
		added++;
	}
	/* Counted before the unlock: a reset from now on waits for them. */
	__atomic_add_fetch(&q->in_backend, added, __ATOMIC_RELAXED);
	if (!vdev->broken) {
		more = n == vq->num;
		/* A spinning I/O thread looks again itself: no kicks. */
		if (!more && !q->polling) {
			/* Re-check after re-enabling, or a kick could be lost. */
			virtqueue_set_notification(vq, true);
			more = virtqueue_has_work(vq);
		}
	}
	vblk_publish_locked(q, now);
	pthread_mutex_unlock(&vdev->lock);
	if (added)
		vblk_submit(q, batch);
	return more;
}

/*
 * Pops until the ring is empty, or for VBLK_SERVE_ROUNDS rounds: a driver
 * that keeps its ring full must not keep the I/O thread from its other
 * queues.  The kick is then raised again, to be served after them.  When
 * polling, also reaps the backend's ready completions; everything that
 * completed meanwhile (also inside add and submit) leaves in one publish.
 */
static void vblk_serve(struct vblk_queue *q, bool reap)
{
	unsigned rounds = 0;
	bool more;

	q->in_kick = true;
	while ((more = vblk_kick_round(q)) && ++rounds < VBLK_SERVE_ROUNDS)
		;
	if (reap)
		blk_queue_poll_run(q->bq);
	q->in_kick = false;
	vblk_publish(q);
	if (more)
		(void)eventfd_write(q->s->vdev.queues[q->idx].kick_fd, 1);
}

static void vblk_kick_read(struct vblk_queue *q, int fd)
{
	uint64_t cnt;

	if (read(fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
		return;
	vblk_serve(q, false);
}

static void vblk_kick(void *opaque)
{
	struct vblk_queue *q = opaque;

	vblk_kick_read(q, q->s->vdev.queues[q->idx].kick_fd);
}

/* A kick on the eventfd a vhost-user front-end gave the queue. */
static void vblk_kick_ext(void *opaque)
{
	struct vblk_queue *q = opaque;

	vblk_kick_read(q, q->kick_fd);
}

/*
 * Polling: the I/O thread checks the avail ring and the backend's
 * completions itself while it spins, so the guest needs no kick (no VM
 * exit) for requests it adds meanwhile.
 */
static bool vblk_poll_ready(void *opaque)
{
	struct vblk_queue *q = opaque;
	struct virtio_device *vdev = &q->s->vdev;
	bool work;

	if (blk_queue_poll_ready(q->bq))
		return true;
	pthread_mutex_lock(&vdev->lock);
	work = q->serving && !vdev->broken &&
	       virtqueue_has_work(&vdev->queues[q->idx].vq);
	pthread_mutex_unlock(&vdev->lock);
	return work;
}

static void vblk_poll_run(void *opaque)
{
	vblk_serve(opaque, true);
}

static void vblk_poll_quiesce(void *opaque, bool quiet)
{
	struct vblk_queue *q = opaque;
	struct virtio_device *vdev = &q->s->vdev;

	pthread_mutex_lock(&vdev->lock);
	q->polling = quiet;
	if (q->serving && !vdev->broken)
		virtqueue_set_notification(&vdev->queues[q->idx].vq, !quiet);
	pthread_mutex_unlock(&vdev->lock);
}

static struct vblk *vdev_to_vblk(struct virtio_device *vdev)
{
	return container_of(vdev, struct vblk, vdev);
}

static void vblk_read_config(struct virtio_device *vdev, uint32_t off, void *buf,
			     unsigned len)
{
	struct vblk *s = vdev_to_vblk(vdev);

	memset(buf, 0, len);
	if (off < VBLK_CONFIG_LEN)
		memcpy(buf, s->config + off,
		       len < VBLK_CONFIG_LEN - off ? len : VBLK_CONFIG_LEN - off);
}

/* Only the writeback field is writable, and only with CONFIG_WCE: ignore. */
static void vblk_write_config(struct virtio_device *vdev, uint32_t off,
			      const void *buf, unsigned len)
{
	(void)vdev;
	(void)off;
	(void)buf;
	(void)len;
}

/* What the driver's features decide for the requests to come; under the lock. */
static void vblk_apply_features(struct vblk *s)
{
	uint64_t f = s->vdev.guest_features;

	/* VIRTIO 1.2, 5.2: without FLUSH, a completed write is on stable storage. */
	s->writethrough = !(f & (1ull << VIRTIO_BLK_F_FLUSH));
	s->seg_limit = f & (1ull << VIRTIO_BLK_F_SEG_MAX) ? s->seg_max : IOV_MAX;
	s->size_limit = f & (1ull << VIRTIO_BLK_F_SIZE_MAX) ? VBLK_SIZE_MAX : UINT32_MAX;
	/* VIRTIO 1.2, 5.2.6: a command whose feature was not negotiated is not offered. */
	s->ops_taken = 0;
	if (f & (1ull << VIRTIO_BLK_F_DISCARD))
		s->ops_taken |= 1ull << VIRTIO_BLK_T_DISCARD;
	if (f & (1ull << VIRTIO_BLK_F_WRITE_ZEROES))
		s->ops_taken |= 1ull << VIRTIO_BLK_T_WRITE_ZEROES;
}

static int vblk_start(struct virtio_device *vdev)
{
	struct vblk *s = vdev_to_vblk(vdev);
	uint64_t one = 1;

	vblk_apply_features(s);
	for (unsigned i = 0; i < s->nq; i++) {
		struct virtio_queue *vq = &vdev->queues[i];

		s->q[i].serving = vq->ready;
		/* Serve what the driver queued before DRIVER_OK. */
		if (vq->ready && write(vq->kick_fd, &one, sizeof(one)) < 0)
			return -1;
	}
	return 0;
}

static void vblk_reset(struct virtio_device *vdev)
{
	struct vblk *s = vdev_to_vblk(vdev);

	for (unsigned i = 0; i < s->nq; i++) {
		s->q[i].serving = false;
		s->q[i].gen++;
		s->q[i].irq_held = false;
	}
}

/* Requests from before a reset are still out there (VIRTIO 1.2, 2.4). */
static unsigned vblk_busy(struct virtio_device *vdev)
{
	struct vblk *s = vdev_to_vblk(vdev);
	unsigned n = 0;

	for (unsigned i = 0; i < s->nq; i++)
		n += __atomic_load_n(&s->q[i].in_backend, __ATOMIC_ACQUIRE);
	return n;
}

static int vblk_start_queue(struct virtio_device *vdev, unsigned qi, int kick_fd)
{
	struct vblk *s = vdev_to_vblk(vdev);
	struct vblk_queue *q = &s->q[qi];
	uint64_t one = 1;

	assert(qi < s->nq && q->kick_fd < 0);
	/* Set before the handler can run: add_fd orders it for the thread. */
	q->kick_fd = kick_fd;
	if (iothread_add_fd(q->t, kick_fd, vblk_kick_ext, q) < 0) {
		q->kick_fd = -1;
		return -1;
	}
	pthread_mutex_lock(&vdev->lock);
	/* No DRIVER_OK on this transport: a ring's start is the device's. */
	vblk_apply_features(s);
	q->serving = true;
	/* The ring may still say "no kicks" from a poll before the stop. */
	virtqueue_set_notification(&vdev->queues[qi].vq, !q->polling);
	pthread_mutex_unlock(&vdev->lock);
	/* Serve what the driver queued before the queue started. */
	return write(vdev->queues[qi].kick_fd, &one, sizeof(one)) < 0 ? -1 : 0;
}

static void vblk_stop_queue(struct virtio_device *vdev, unsigned qi)
{
	struct vblk *s = vdev_to_vblk(vdev);
	struct vblk_queue *q = &s->q[qi];

	assert(qi < s->nq);
	pthread_mutex_lock(&vdev->lock);
	q->serving = false;
	q->stopping = true;
	while (q->outstanding)
		pthread_cond_wait(&q->drained, &vdev->lock);
	q->stopping = false;
	/* An interrupt held back for coalescing goes now, not never. */
	if (q->irq_held && !vdev->broken)
		vblk_irq_send_locked(q);
	q->irq_held = false;
	pthread_mutex_unlock(&vdev->lock);
	if (q->kick_fd >= 0) {
		iothread_del_fd(q->t, q->kick_fd);
		q->kick_fd = -1;
	}
}

static const struct virtio_device_ops vblk_ops = {
	.read_config = vblk_read_config,
	.write_config = vblk_write_config,
	.start = vblk_start,
	.reset = vblk_reset,
	.busy = vblk_busy,
	.start_queue = vblk_start_queue,
	.stop_queue = vblk_stop_queue,
};

static void put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

/*
 * The block geometry the guest sees: blk_size is its logical block, the
 * smallest unit Linux then reads and writes.  That stays 512 unless
 * O_DIRECT wants more (cache=none on a 4 KiB-sector host) or the command
 * line says otherwise, since a guest's partitions and file systems may
 * depend on it (a 1 KiB ext4, a GPT made with 512-byte sectors).  The
 * host's physical block and I/O sizes go into the topology, which Linux
 * follows without changing its logical block.
 */
static void vblk_config_geometry(struct vblk *s, const struct blk_device_cfg *cfg)
{
	const struct blk_file *f = s->file;
	unsigned lbs = cfg->logical_block_size ? cfg->logical_block_size :
		       f->direct ? f->align : SECTOR_SIZE;
	unsigned pbs = cfg->physical_block_size ? cfg->physical_block_size :
		       f->pbs > lbs ? f->pbs : lbs;
	unsigned exp = 0, dalign = (f->lbs > lbs ? f->lbs : lbs) / SECTOR_SIZE;
	uint16_t min_io = htole16((uint16_t)(f->io_min / lbs > 0xffff ? 0 : f->io_min / lbs));

	while ((lbs << (exp + 1)) <= pbs && exp < 15)
		exp++;
	put_le32(s->config + CFG_BLK_SIZE, lbs);
	s->config[CFG_PHYS_BLOCK_EXP] = (uint8_t)exp;
	s->config[CFG_ALIGN_OFFSET] = 0;
	memcpy(s->config + CFG_MIN_IO_SIZE, &min_io, 2);
	put_le32(s->config + CFG_OPT_IO_SIZE, f->io_opt / lbs);
	put_le32(s->config + CFG_DISCARD_ALIGN,
		 dalign > VBLK_DISCARD_ALIGN ? dalign : VBLK_DISCARD_ALIGN);
}

static void vblk_config_init(struct vblk *s, const struct blk_device_cfg *cfg)
{
	uint64_t cap = htole64(s->capacity);
	uint16_t nq = htole16((uint16_t)s->nq);

	s->seg_max = cfg->queue_size > 2 ? cfg->queue_size - 2 : 1;
	memcpy(s->config + CFG_CAPACITY, &cap, 8);
	put_le32(s->config + CFG_SIZE_MAX, VBLK_SIZE_MAX);
	put_le32(s->config + CFG_SEG_MAX, s->seg_max);
	vblk_config_geometry(s, cfg);
	memcpy(s->config + CFG_NUM_QUEUES, &nq, 2);
	put_le32(s->config + CFG_MAX_DISCARD_SECTORS, VBLK_MAX_ZERO_SECTORS);
	put_le32(s->config + CFG_MAX_DISCARD_SEG, VBLK_MAX_ZERO_SEG);
	put_le32(s->config + CFG_MAX_WZ_SECTORS, VBLK_MAX_ZERO_SECTORS);
	put_le32(s->config + CFG_MAX_WZ_SEG, VBLK_MAX_ZERO_SEG);
	s->config[CFG_WZ_MAY_UNMAP] = 1;
}

static uint64_t vblk_features(const struct vblk *s, const struct blk_device_cfg *cfg)
{
	uint64_t f = 1ull << VIRTIO_F_VERSION_1 | 1ull << VIRTIO_BLK_F_SIZE_MAX |
		     1ull << VIRTIO_BLK_F_SEG_MAX | 1ull << VIRTIO_BLK_F_BLK_SIZE |
		     1ull << VIRTIO_BLK_F_TOPOLOGY |
		     1ull << VIRTIO_BLK_F_FLUSH | 1ull << VIRTIO_BLK_F_DISCARD |
		     1ull << VIRTIO_BLK_F_WRITE_ZEROES;

	if (s->readonly)
		f |= 1ull << VIRTIO_BLK_F_RO;
	if (s->nq > 1)
		f |= 1ull << VIRTIO_BLK_F_MQ;
	if (cfg->indirect_desc)
		f |= 1ull << VIRTIO_F_RING_INDIRECT_DESC;
	if (cfg->event_idx)
		f |= 1ull << VIRTIO_F_RING_EVENT_IDX;
	if (cfg->packed)
		f |= 1ull << VIRTIO_F_RING_PACKED;
	return f;
}

static int vblk_queue_init(struct vblk *s, unsigned i, enum blk_aio aio,
			   const struct blk_device_cfg *cfg)
{
	bool poll = cfg->poll_us != 0;
	bool timer = cfg->irq_coalesce_us || cfg->irq_interval_us;
	struct vblk_queue *q = &s->q[i];
	struct iothread_poller poller = {
		.ready = vblk_poll_ready, .run = vblk_poll_run,
		.quiesce = vblk_poll_quiesce, .opaque = q,
	};

	q->s = s;
	q->idx = i;
	q->t = s->t[i % s->nt];
	q->bq = blk_queue_new(s->file, q->t, aio);
	if (!q->bq)
		return -1;
	blk_queue_set_batch_done(q->bq, vblk_batch_done, q);
	q->coalesce_ns = (uint64_t)cfg->irq_coalesce_us * 1000;
	q->interval_ns = (uint64_t)cfg->irq_interval_us * 1000;
	if (timer)
		q->irq_timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if ((timer && (q->irq_timer_fd < 0 ||
			     iothread_add_fd(q->t, q->irq_timer_fd, vblk_irq_timer_handler, q) < 0)) ||
	    iothread_add_fd(q->t, s->vdev.queues[i].kick_fd, vblk_kick, q) < 0 ||
	    (poll && iothread_add_poller(q->t, &poller) < 0)) {
		error_report("virtio-blk %s: cannot set up queue %u: %s",
			     s->file->path, i, strerror(errno));
		return -1;
	}
	return 0;
}

static int vblk_threads_init(struct vblk *s, const struct blk_device_cfg *cfg)
{
	assert(cfg->iothreads > 0);	/* the command line defaults it to 1 */
	s->nt = cfg->iothreads;
	if (s->nt > s->nq) {
		error_report("virtio-blk %s: iothreads=%u exceeds num-queues=%u",
			     s->file->path, s->nt, s->nq);
		return -1;
	}
	s->t = calloc(s->nt, sizeof(*s->t));
	if (!s->t)
		return -1;
	for (unsigned j = 0; j < s->nt; j++) {
		char name[16];

		snprintf(name, sizeof(name), "vblk%u", j);
		s->t[j] = iothread_new(name);
		if (!s->t[j])
			return -1;
		iothread_set_poll_max(s->t[j], (uint64_t)cfg->poll_us * 1000);
	}
	return 0;
}

/* Leaves the I/O thread running: it may serve other queues. */
static void vblk_queue_destroy(struct vblk_queue *q)
{
	if (!q->t)
		return;
	iothread_del_poller(q->t, q);
	if (q->kick_fd >= 0)
		iothread_del_fd(q->t, q->kick_fd);
	if (q->s->vdev_ready)
		iothread_del_fd(q->t, q->s->vdev.queues[q->idx].kick_fd);
	if (q->irq_timer_fd >= 0)
		iothread_del_fd(q->t, q->irq_timer_fd);
	__atomic_store_n(&q->closing, true, __ATOMIC_RELEASE);
	/* Runs the callbacks of everything in flight: they only free. */
	blk_queue_free(q->bq);
	/* Nothing of this queue's is left on the thread to touch q->done. */
	while (q->done) {
		struct vblk_req *r = q->done;

		q->done = r->next;
		vq_elem_put(&q->cache, &r->elem);
	}
	if (q->irq_timer_fd >= 0)
		close(q->irq_timer_fd);
}

void vblk_destroy(struct vblk *s)
{
	if (!s)
		return;
	if (s->pci)
		virtio_pci_free(s->pci);
	/* Its requests in flight complete first; then its memory goes. */
	vu_backend_free(s->vu);
	if (s->vdev_ready) {
		pthread_mutex_lock(&s->vdev.lock);
		vblk_reset(&s->vdev);
		pthread_mutex_unlock(&s->vdev.lock);
	}
	for (unsigned i = 0; s->q && i < s->nq; i++) {
		vblk_queue_destroy(&s->q[i]);
		pthread_cond_destroy(&s->q[i].drained);
		vq_elem_cache_destroy(&s->q[i].cache);
	}
	for (unsigned j = 0; s->t && j < s->nt; j++)
		if (s->t[j])
			iothread_free(s->t[j]);
	free(s->t);
	free(s->q);
	if (s->vdev_ready)
		virtio_device_destroy(&s->vdev);
	if (s->file) {
		if (!s->file->readonly && fdatasync(s->file->fd) < 0)
			error_report("%s: flush failed: %s", s->file->path, strerror(errno));
		blk_file_close(s->file);
	}
	free(s);
}

/*
 * The device without a transport: its file, queues and running I/O
 * threads.  mem is the guest memory it serves; NULL for s->shared_mem.
 */
static struct vblk *vblk_new(const struct guest_mem *mem, unsigned ncpus,
			     const struct blk_drive_cfg *d, const struct blk_device_cfg *cfg)
{
	struct vblk *s = calloc(1, sizeof(*s));
	struct blk_file_opts o = {
		.path = d->file, .readonly = d->readonly, .cache = d->cache,
		.snapshot = d->snapshot,
	};

	if (!s)
		return NULL;
	s->file = blk_file_open(&o);
	if (!s->file)
		goto fail;
	s->readonly = d->readonly || s->file->readonly ||
		      (cfg->socket_path && !cfg->writable);
	s->capacity = s->file->size >> SECTOR_SHIFT;
	s->nq = cfg->num_queues ? cfg->num_queues : ncpus;
	if (s->nq < 1)
		s->nq = 1;
	if (s->nq > VBLK_MAX_QUEUES)
		s->nq = VBLK_MAX_QUEUES;
	memcpy(s->serial, cfg->serial, strnlen(cfg->serial, VBLK_SERIAL_LEN));
	if (cfg->physical_block_size && cfg->physical_block_size < s->file->align &&
	    !cfg->logical_block_size) {
		error_report("virtio-blk %s: physical_block_size=%u is smaller than the "
			     "logical block cache=none needs here (%u)", d->file,
			     cfg->physical_block_size, s->file->align);
		goto fail;
	}
	vblk_config_init(s, cfg);
	if (virtio_device_init(&s->vdev, VIRTIO_ID_BLOCK, vblk_features(s, cfg),
			       VBLK_CONFIG_LEN, s->nq, (uint16_t)cfg->queue_size,
			       mem ? mem : &s->shared_mem, &vblk_ops, s) < 0) {
		error_report("virtio-blk %s: cannot create the device", d->file);
		goto fail;
	}
	s->vdev_ready = true;
	s->vdev.name = s->file->path;
	s->q = calloc(s->nq, sizeof(*s->q));
	if (!s->q)
		goto fail;
	for (unsigned i = 0; i < s->nq; i++) {
		s->q[i].s = s;
		s->q[i].irq_timer_fd = -1;
		s->q[i].kick_fd = -1;
		pthread_cond_init(&s->q[i].drained, NULL);
		vq_elem_cache_init(&s->q[i].cache, sizeof(struct vblk_req), cfg->queue_size);
	}
	if (vblk_threads_init(s, cfg) < 0)
		goto fail;
	for (unsigned i = 0; i < s->nq; i++)
		if (vblk_queue_init(s, i, d->aio, cfg) < 0)
			goto fail;
	for (unsigned j = 0; j < s->nt; j++) {
		if (iothread_start(s->t[j]) < 0) {
			error_report("virtio-blk %s: cannot start I/O thread %u: %s",
				     s->file->path, j, strerror(errno));
			goto fail;
		}
	}
	return s;
fail:
	vblk_destroy(s);
	return NULL;
}

struct vblk *vblk_create(struct machine *m, const struct blk_drive_cfg *d,
			 const struct blk_device_cfg *cfg)
{
	struct vblk *s = vblk_new(&m->mem, m->ncpus, d, cfg);

	if (!s)
		return NULL;
	s->pci = virtio_pci_create(m, &s->vdev, VIRTIO_PCI_DEVICE_ID(VIRTIO_ID_BLOCK),
				   PCI_CLASS_STORAGE_OTHER);
	if (!s->pci) {
		vblk_destroy(s);
		return NULL;
	}
	return s;
}

struct vblk *vblk_export_create(const struct blk_drive_cfg *d,
				const struct blk_device_cfg *cfg)
{
	struct vblk *s = vblk_new(NULL, 1, d, cfg);

	if (!s)
		return NULL;
	s->vu = vu_backend_new(&s->vdev, &s->shared_mem, cfg->socket_path);
	if (!s->vu) {
		vblk_destroy(s);
		return NULL;
	}
	return s;
}

int blk_drives_check(const struct blk_cmdline *c)
{
	if (vublk_chardevs_check(c) < 0)
		return -1;
	for (unsigned i = 0; i < c->nr_drives; i++) {
		const struct blk_drive_cfg *d = &c->drives[i];
		/* A snapshot's image is only read: checked without a copy. */
		struct blk_file_opts o = {
			.path = d->file, .readonly = d->readonly || d->snapshot,
			.cache = d->cache,
		};
		struct blk_file *f = blk_file_open(&o);

		if (!f)
			return -1;
		blk_file_close(f);
	}
	return 0;
}

int blk_devices_create(struct blk_cmdline *c, struct machine *m)
{
	if (!c->finished && blk_cmdline_finish(c) < 0)
		return -1;
	for (unsigned i = 0; i < c->nr_devs; i++) {
		struct blk_device_cfg *dc = &c->devs[i];

		if (dc->socket_path)
			dc->dev = vblk_export_create(&c->drives[dc->drive], dc);
		else
			dc->dev = vblk_create(m, &c->drives[dc->drive], dc);
		if (!dc->dev)
			return -1;
	}
	for (unsigned i = 0; i < c->nr_vublks; i++) {
		struct vublk_cfg *vc = &c->vublks[i];

		vc->dev = vublk_create(m, &c->chardevs[vc->chardev], vc);
		if (!vc->dev)
			return -1;
	}
	return 0;
}

void blk_devices_destroy(struct blk_cmdline *c)
{
	if (!c)
		return;
	/* A front-end lets go of its back-end before the back-end goes. */
	for (unsigned i = 0; i < c->nr_vublks; i++) {
		vublk_destroy(c->vublks[i].dev);
		c->vublks[i].dev = NULL;
	}
	for (unsigned i = 0; i < c->nr_devs; i++) {
		vblk_destroy(c->devs[i].dev);
		c->devs[i].dev = NULL;
	}
}
