// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-blk (VIRTIO 1.2, 5.2), plugged into the guest's board on the
 * modern PCI transport, or served to another process's guest over
 * vhost-user (-export); the same device either way.  This file serves
 * requests, the hot path: decoding, submitting, completing, interrupts
 * and polling.  The device as the transport sees it, and its
 * construction, are virtio-blk-dev.c's; the command line is
 * virtio-blk-cmdline.c's.
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
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "block/block.h"
#include "hw/block/virtio-blk.h"
#include "util/clock.h"
#include "util/iothread.h"
#include "util/iov.h"
#include "util/log.h"
#include "virtio/virtio.h"
#include "virtio-blk-dev.h"

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
	/* Copied whole from the guest before it is read (out_size >= its size). */
	uint8_t hdr[VBLK_HDR_LEN] BRISK_UNINITIALIZED;
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
void vblk_irq_send_locked(struct vblk_queue *q)
{
	/* The time it was decided: a gap counts from there. */
	uint64_t now = q->interval_ns ? q->s->now_ns() : 0;

	q->irq_held = false;
	if (virtio_notify(&q->s->vdev, q->idx) && q->interval_ns)
		q->last_irq_ns = now;
}

static unsigned vblk_in_backend(const struct vblk_queue *q)
{
	return __atomic_load_n(&q->in_backend, __ATOMIC_RELAXED);
}

static void vblk_irq_locked(struct vblk_queue *q)
{
	uint64_t wait = 0, now = 0;

	if (q->coalesce_ns && vblk_in_backend(q))
		wait = q->coalesce_ns;
	if (q->interval_ns) {
		now = q->s->now_ns();
		uint64_t since = now - q->last_irq_ns;

		if (since < q->interval_ns && q->interval_ns - since > wait)
			wait = q->interval_ns - since;
	}
	if (!wait) {
		vblk_irq_send_locked(q);
		return;
	}
	if (q->irq_held)
		return;
	/*
	 * An absolute time on the device's clock: the real one but in a
	 * test, whose clock is far ahead, so the timer goes off only when
	 * the test says.
	 */
	uint64_t at = (q->interval_ns ? now : q->s->now_ns()) + wait;
	struct itimerspec its = {
		.it_value = { .tv_sec = at / 1000000000, .tv_nsec = at % 1000000000 },
	};

	q->irq_held = true;
	/* Cannot fail for a valid fd and time; should it, send now. */
	if (timerfd_settime(q->irq_timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
		vblk_irq_send_locked(q);
}

void vblk_irq_timer_handler(void *opaque)
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
void vblk_batch_done(void *opaque)
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
 * queues.  The kick is then raised again, to be served after them.  The
 * backend's ready completions are reaped too (a read the page cache
 * answered within the submit, what completed while polling), so
 * everything leaves in one publish instead of waking the thread again.
 */
static void vblk_serve(struct vblk_queue *q)
{
	unsigned rounds = 0;
	bool more;

	q->in_kick = true;
	while ((more = vblk_kick_round(q)) && ++rounds < VBLK_SERVE_ROUNDS)
		;
	if (blk_queue_poll_ready(q->bq))
		blk_queue_poll_run(q->bq);
	q->in_kick = false;
	vblk_publish(q);
	if (more)
		(void)eventfd_write(q->s->vdev.queues[q->idx].kick_fd, 1);
}

/*
 * A kick: its eventfd is watched edge-triggered and never read (a read
 * per request is a syscall for nothing).
 */
void vblk_kick(void *opaque)
{
	vblk_serve(opaque);
}

/*
 * Polling: the I/O thread checks the avail ring and the backend's
 * completions itself while it spins, so the guest needs no kick (no VM
 * exit) for requests it adds meanwhile.
 */
bool vblk_poll_ready(void *opaque)
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

void vblk_poll_run(void *opaque)
{
	vblk_serve(opaque);
}

void vblk_poll_quiesce(void *opaque, bool quiet)
{
	struct vblk_queue *q = opaque;
	struct virtio_device *vdev = &q->s->vdev;

	pthread_mutex_lock(&vdev->lock);
	q->polling = quiet;
	if (q->serving && !vdev->broken)
		virtqueue_set_notification(&vdev->queues[q->idx].vq, !quiet);
	pthread_mutex_unlock(&vdev->lock);
}
