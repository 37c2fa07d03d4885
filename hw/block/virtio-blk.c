// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio-blk (VIRTIO 1.2, 5.2), plugged into the guest's board on the
 * modern PCI transport, or served to another process's guest over
 * vhost-user (-export); the same device either way.  This file is the
 * hot path's device half: decoding, submitting, completing and the
 * interrupt's timing; the queue server (virtio/virtio-server.c) pops in
 * rounds, publishes, polls and counts what is out for reset and stop.
 * The device as the transport sees it, and its construction, are
 * virtio-blk-dev.c's; the command line is virtio-blk-cmdline.c's.
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
	struct vq_elem *e = &r->req.elem;
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
		r->req.used_len = (uint32_t)(len + 1);	/* len <= VBLK_MAX_RW_LEN */
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
	iov_copy(r->req.elem.out_sg, r->req.elem.out_num, VBLK_HDR_LEN, seg, sizeof(seg), true);
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

static void vblk_complete(struct blk_req *br, int64_t res);

/*
 * Turns a chain into a backend request (1), a request answered right away
 * with r->status (0), or a guest error (-1, *why set).
 */
static BRISK_ALWAYS_INLINE int vblk_parse(struct virtio_server *sv, struct vs_req *req,
					  const char **why)
{
	struct vblk_queue *q = container_of(sv, struct vblk_queue, sv);
	struct vblk_req *r = container_of(req, struct vblk_req, req);
	struct vq_elem *e = &req->elem;
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
		r->req.used_len = (uint32_t)n + 1;
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
	if (st == VBLK_S_SUBMIT) {
		r->q = q;
		r->br.cb = vblk_complete;
		return 1;
	}
	r->status = st;
	if (st != VIRTIO_BLK_S_OK)
		r->req.used_len = 1;
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
	return __atomic_load_n(&q->sv.in_backend, __ATOMIC_RELAXED);
}

/* After a publish: the interrupt now, or held for coalescing. */
static void vblk_notify(struct virtio_server *sv)
{
	struct vblk_queue *q = container_of(sv, struct vblk_queue, sv);
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
	if (q->irq_held && q->sv.serving && !vdev->broken)
		vblk_irq_send_locked(q);
	pthread_mutex_unlock(&vdev->lock);
}

/* What a request from the backend or answered at once writes into its chain. */
static void vblk_write_status(struct virtio_server *sv, struct vs_req *req)
{
	struct vblk_req *r = container_of(req, struct vblk_req, req);

	(void)sv;
	*r->status_ptr = r->status;
}

/* Backend completion, on the queue's I/O thread: gathered for the batch's end. */
static void vblk_complete(struct blk_req *br, int64_t res)
{
	struct vblk_req *r = container_of(br, struct vblk_req, br);
	bool rw = br->op == BLK_OP_READ || br->op == BLK_OP_WRITE;

	r->status = res < 0 || (rw && (uint64_t)res != r->expect) ?
		    VIRTIO_BLK_S_IOERR : VIRTIO_BLK_S_OK;
	if (r->status != VIRTIO_BLK_S_OK)
		r->req.used_len = 1;
	virtio_server_done(&r->q->sv, &r->req);
}

/* A round popped under the lock, to the backend with one submit. */
static void vblk_submit(struct virtio_server *sv, struct vs_req *batch)
{
	struct vblk_queue *q = container_of(sv, struct vblk_queue, sv);

	while (batch) {
		struct vblk_req *r = container_of(batch, struct vblk_req, req);

		batch = batch->next;
		blk_queue_add(q->bq, &r->br);
	}
	blk_queue_submit(q->bq);
}

static bool vblk_backend_ready(struct virtio_server *sv)
{
	return blk_queue_poll_ready(container_of(sv, struct vblk_queue, sv)->bq);
}

static void vblk_backend_run(struct virtio_server *sv)
{
	blk_queue_poll_run(container_of(sv, struct vblk_queue, sv)->bq);
}

/*
 * A round of 32 at most: at a depth of 64 the driver has the first half's
 * answers, and refills, while the second half is read (a whole ring per
 * round left the I/O thread idle while the driver refilled, 1.3x fewer
 * page-cache reads a second at depth 64).
 */
#define VBLK_ROUND_MAX 32

static const struct virtio_server_ops vblk_server_ops = {
	.round_max = VBLK_ROUND_MAX,
	.parse = vblk_parse,
	.submit = vblk_submit,
	.complete = vblk_write_status,
	.notify = vblk_notify,
	.backend_ready = vblk_backend_ready,
	.backend_run = vblk_backend_run,
};

void vblk_server_init(struct vblk_queue *q, unsigned idx, unsigned queue_size)
{
	virtio_server_init(&q->sv, "virtio-blk", &q->s->vdev, idx, &vblk_server_ops,
			   sizeof(struct vblk_req), queue_size);
}

/* A kick, or the poller's turn: serve the ring. */
void vblk_serve(void *opaque)
{
	virtio_server_serve(opaque, &vblk_server_ops);
}

/*
 * The backend has run every completion it had ready: they leave together,
 * one used-ring flush and one interrupt.
 */
void vblk_batch_done(void *opaque)
{
	struct vblk_queue *q = opaque;

	virtio_server_batch_done(&q->sv, &vblk_server_ops);
}
