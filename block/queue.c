// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "block-int.h"
#include "util/log.h"

struct blk_queue *blk_queue_new(struct blk_file *f, struct iothread *t,
				enum blk_aio aio)
{
	struct blk_queue *q = NULL;

	if (aio == BLK_AIO_IO_URING) {
		int err = 0;

		q = blk_uring_new(f, t, &err);
		if (!q && !err)
			return NULL;	/* already reported */
		if (!q)
			error_report_once(&f->fallback_reported,
					  "io_uring unavailable (%s), using aio=threads",
					  strerror(-err));
	}
	if (!q)
		q = blk_threads_new(f, t);
	if (q && blk_align_queue_init(q) < 0) {
		error_report("%s: cannot set up a queue: %s", f->path, strerror(errno));
		q->ops->free(q);
		return NULL;
	}
	return q;
}

void blk_queue_add(struct blk_queue *q, struct blk_req *req)
{
	struct blk_file *f = q->f;

	assert(!q->closing);
	req->done = 0;
	req->err = 0;
	req->fail = 0;
	req->syncing = false;
	req->gate = 0;
	req->next = NULL;
	if ((f->align > 1 || f->blockdev) && blk_align_add(q, req))
		return;
	blk_queue_go(q, req);
}

void blk_queue_go(struct blk_queue *q, struct blk_req *req)
{
	struct blk_file *f = q->f;

	if (req->op == BLK_OP_DISCARD && f->blockdev && q->aio == BLK_AIO_IO_URING &&
	    !__atomic_load_n(&f->no_discard, __ATOMIC_RELAXED)) {
		if (!q->aux)
			q->aux = blk_threads_new(f, q->t);
		if (q->aux)
			q->aux->owner = q;
		if (q->aux) {
			q->aux->ops->add(q->aux, req);
			return;
		}
		/* No thread for it: a hint the host cannot take is skipped. */
		__atomic_store_n(&f->no_discard, true, __ATOMIC_RELAXED);
	}
	q->ops->add(q, req);
}

void blk_queue_submit(struct blk_queue *q)
{
	q->ops->submit(q);
	if (q->aux)
		q->aux->ops->submit(q->aux);
}

bool blk_queue_poll_ready(struct blk_queue *q)
{
	return q->ops->poll_ready && q->ops->poll_ready(q);
}

void blk_queue_poll_run(struct blk_queue *q)
{
	if (q->ops->poll_run)
		q->ops->poll_run(q);
}

void blk_queue_free(struct blk_queue *q)
{
	if (!q)
		return;
	/* Read by a completion handler still running on the I/O thread. */
	__atomic_store_n(&q->closing, true, __ATOMIC_RELEASE);
	blk_align_queue_fini(q);
	blk_queue_free(q->aux);
	q->ops->free(q);
}

enum blk_aio blk_queue_aio(const struct blk_queue *q)
{
	return q->aio;
}

void *blk_zero_buf_alloc(void)
{
	/* Page aligned so it also serves O_DIRECT files. */
	void *p = aligned_alloc(4096, BLK_ZERO_BUF_SIZE);

	if (p)
		memset(p, 0, BLK_ZERO_BUF_SIZE);
	return p;
}

static bool blk_range_ok(const struct blk_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

int blk_req_check(const struct blk_file *f, const struct blk_req *req)
{
	if (req->fail)
		return req->fail;
	switch (req->op) {
	case BLK_OP_READ:
	case BLK_OP_WRITE:
		if (req->iovcnt < 0 || req->iovcnt > IOV_MAX ||
		    (req->iovcnt && !req->iov) || req->len > SSIZE_MAX)
			return -EINVAL;
		if (!blk_range_ok(f, req->offset, req->len))
			return -EINVAL;
		/* As QEMU: a guest must not make its raw disk look like an image. */
		if (unlikely(req->op == BLK_OP_WRITE && f->probed && req->offset < BLK_PROBE_LEN))
			return blk_probe_write(req);
		return 0;
	case BLK_OP_FLUSH:
		return 0;
	case BLK_OP_DISCARD:
	case BLK_OP_WRITE_ZEROES:
		return blk_range_ok(f, req->offset, req->len) ? 0 : -EINVAL;
	}
	return -EINVAL;
}

void blk_iov_advance(struct blk_req *req, size_t n)
{
	while (req->iovcnt > 0 && n >= req->iov->iov_len) {
		n -= req->iov->iov_len;
		req->iov++;
		req->iovcnt--;
	}
	if (n) {
		assert(req->iovcnt > 0);
		req->iov->iov_base = (char *)req->iov->iov_base + n;
		req->iov->iov_len -= n;
	}
	/* Empty tail elements would make the next call look like EOF. */
	while (req->iovcnt > 0 && req->iov->iov_len == 0) {
		req->iov++;
		req->iovcnt--;
	}
}

/*
 * Discard is a hint: it frees space or does nothing, never zeroes (on a
 * block device, fallocate is a zero-out, with writes where the device
 * cannot zero by itself: up to the whole range for one hint).
 */
enum blk_zero_how blk_zero_how(const struct blk_file *f,
			       const struct blk_req *req)
{
	if (req->op == BLK_OP_DISCARD) {
		if (f->blockdev)
			return __atomic_load_n(&f->no_discard, __ATOMIC_RELAXED) ?
			       BLK_ZERO_SKIP : BLK_ZERO_BLKDISCARD;
		return __atomic_load_n(&f->no_punch_hole, __ATOMIC_RELAXED) ?
		       BLK_ZERO_SKIP : BLK_ZERO_PUNCH;
	}
	if (req->unmap && !__atomic_load_n(&f->no_punch_hole, __ATOMIC_RELAXED))
		return BLK_ZERO_PUNCH;
	if (!__atomic_load_n(&f->no_zero_range, __ATOMIC_RELAXED))
		return BLK_ZERO_RANGE;
	return BLK_ZERO_WRITE;
}

int blk_discard_blkdev(struct blk_file *f, const struct blk_req *req)
{
	uint64_t start = (req->offset + f->lbs - 1) & ~(uint64_t)(f->lbs - 1);
	uint64_t end = (req->offset + req->len) & ~(uint64_t)(f->lbs - 1);
	uint64_t range[2] = { start, end - start };

	if (end <= start)
		return 0;
	while (ioctl(f->fd, BLKDISCARD, range) < 0) {
		if (errno == EINTR)
			continue;
		if (!blk_err_unsupported(-errno))
			return -errno;
		__atomic_store_n(&f->no_discard, true, __ATOMIC_RELAXED);
		break;
	}
	return 0;
}

int blk_zero_fallocate_mode(enum blk_zero_how how)
{
	if (how == BLK_ZERO_PUNCH)
		return FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE;
	return FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE;
}

void blk_zero_unsupported(struct blk_file *f, enum blk_zero_how how)
{
	if (how == BLK_ZERO_PUNCH)
		__atomic_store_n(&f->no_punch_hole, true, __ATOMIC_RELAXED);
	else if (how == BLK_ZERO_RANGE)
		__atomic_store_n(&f->no_zero_range, true, __ATOMIC_RELAXED);
	else if (how == BLK_ZERO_BLKDISCARD)
		__atomic_store_n(&f->no_discard, true, __ATOMIC_RELAXED);
}

void blk_queue_set_batch_done(struct blk_queue *q, void (*fn)(void *opaque),
			      void *opaque)
{
	q->batch_done = fn;
	q->batch_opaque = opaque;
}

void blk_queue_batch_end(struct blk_queue *q, unsigned n)
{
	if (q->owner)
		q = q->owner;
	if (n && q->batch_done && !__atomic_load_n(&q->closing, __ATOMIC_ACQUIRE))
		q->batch_done(q->batch_opaque);
}

void blk_req_finish(struct blk_queue *q, struct blk_req *req, int64_t res)
{
	uint8_t gate = req->gate;

	if (res < 0)
		error_report_once(&q->f->error_reported, "%s: I/O error: %s",
				  q->f->path, strerror((int)-res));
	req->next = NULL;
	if (gate) {
		req->gate = 0;
		blk_gate_leave(q->f, gate, 0);
	}
	req->cb(req, res);
}
