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
		if (q)
			return q;
		if (!err)
			return NULL;	/* already reported */
		error_report_once(&f->fallback_reported,
				  "io_uring unavailable (%s), using aio=threads",
				  strerror(-err));
	}
	return blk_threads_new(f, t);
}

/*
 * O_DIRECT bounce buffer (the host's request alignment): the backend sees
 * an aligned request of its own over an aligned buffer.
 */
struct blk_bounce {
	struct blk_req req;
	struct blk_req *orig;
	struct blk_file *f;
	struct iovec iov;
	size_t skip;		/* where orig's bytes start in the buffer */
	uint64_t len;		/* orig's bytes */
};

static bool blk_req_aligned(const struct blk_file *f, const struct blk_req *req,
			    uint64_t total)
{
	if ((req->offset | total) & (f->align - 1))
		return false;
	for (int i = 0; i < req->iovcnt; i++)
		if (((uintptr_t)req->iov[i].iov_base & (f->mem_align - 1)) ||
		    (req->iov[i].iov_len & (f->align - 1)))
			return false;
	return true;
}

static void blk_iov_copy(const struct iovec *iov, int n, uint8_t *buf, uint64_t len,
			 bool to_buf)
{
	for (int i = 0; i < n && len; i++) {
		size_t l = iov[i].iov_len < len ? iov[i].iov_len : len;

		if (to_buf)
			memcpy(buf, iov[i].iov_base, l);
		else
			memcpy(iov[i].iov_base, buf, l);
		buf += l;
		len -= l;
	}
}

static void blk_bounce_done(struct blk_req *r, int64_t res)
{
	struct blk_bounce *b = container_of(r, struct blk_bounce, req);
	struct blk_req *orig = b->orig;

	if (res >= 0 && (uint64_t)res != b->iov.iov_len)
		res = -EIO;
	if (res >= 0 && orig->op == BLK_OP_READ)
		blk_iov_copy(orig->iov, orig->iovcnt, (uint8_t *)b->iov.iov_base + b->skip,
			     b->len, false);
	if (res >= 0)
		res = (int64_t)b->len;
	__atomic_sub_fetch(&b->f->bounce_bytes, b->iov.iov_len, __ATOMIC_RELAXED);
	free(b->iov.iov_base);
	free(b);
	orig->cb(orig, res);
}

/*
 * Returns the request the backend should see instead of req, or NULL when
 * req cannot be carried out (a write of part of a host block, no memory,
 * more than BLK_BOUNCE_MAX of bounce buffers in flight for the file): req
 * then goes to the backend broken, and fails there -EINVAL.
 */
static struct blk_req *blk_bounce(struct blk_file *f, struct blk_req *req,
				  uint64_t total)
{
	uint64_t start = req->offset & ~(uint64_t)(f->align - 1);
	uint64_t end = (req->offset + total + f->align - 1) & ~(uint64_t)(f->align - 1);
	size_t balign = f->align > f->mem_align ? f->align : f->mem_align;
	struct blk_bounce *b;

	if (req->op == BLK_OP_WRITE && (start != req->offset || end != req->offset + total))
		return NULL;
	/* Guests choose how much of this there is: host memory stays bounded. */
	if (__atomic_add_fetch(&f->bounce_bytes, end - start, __ATOMIC_RELAXED) > BLK_BOUNCE_MAX ||
	    !(b = calloc(1, sizeof(*b)))) {
		__atomic_sub_fetch(&f->bounce_bytes, end - start, __ATOMIC_RELAXED);
		return NULL;
	}
	b->iov.iov_len = end - start;
	b->iov.iov_base = aligned_alloc(balign, b->iov.iov_len);
	if (!b->iov.iov_base) {
		__atomic_sub_fetch(&f->bounce_bytes, end - start, __ATOMIC_RELAXED);
		free(b);
		return NULL;
	}
	b->f = f;
	b->orig = req;
	b->skip = req->offset - start;
	b->len = total;
	if (req->op == BLK_OP_WRITE)
		blk_iov_copy(req->iov, req->iovcnt, b->iov.iov_base, total, true);
	b->req = (struct blk_req){
		.op = req->op, .offset = start, .fua = req->fua,
		.iov = &b->iov, .iovcnt = 1, .cb = blk_bounce_done,
	};
	return &b->req;
}

void blk_queue_add(struct blk_queue *q, struct blk_req *req)
{
	struct blk_file *f = q->f;
	uint64_t total;

	assert(!q->closing);
	if (f->align > 1 && (req->op == BLK_OP_READ || req->op == BLK_OP_WRITE) &&
	    blk_req_check(f, req, &total) == 0 && total && !blk_req_aligned(f, req, total)) {
		struct blk_req *b = blk_bounce(f, req, total);

		if (b)
			req = b;
		else
			req->iovcnt = -1;	/* blk_req_check() fails it */
	}
	req->done = 0;
	req->err = 0;
	req->syncing = false;
	req->next = NULL;
	if (req->op == BLK_OP_DISCARD && f->blockdev && q->aio == BLK_AIO_IO_URING &&
	    !__atomic_load_n(&f->no_discard, __ATOMIC_RELAXED)) {
		if (!q->aux)
			q->aux = blk_threads_new(f, q->t);
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
	q->closing = true;
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

int blk_req_check(const struct blk_file *f, const struct blk_req *req,
		  uint64_t *total)
{
	uint64_t sum = 0;

	*total = 0;
	switch (req->op) {
	case BLK_OP_READ:
	case BLK_OP_WRITE:
		if (req->iovcnt < 0 || req->iovcnt > IOV_MAX ||
		    (req->iovcnt && !req->iov))
			return -EINVAL;
		for (int i = 0; i < req->iovcnt; i++) {
			if (req->iov[i].iov_len > SSIZE_MAX - sum)
				return -EINVAL;
			sum += req->iov[i].iov_len;
		}
		if (!blk_range_ok(f, req->offset, sum))
			return -EINVAL;
		*total = sum;
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

void blk_req_finish(struct blk_queue *q, struct blk_req *req, int64_t res)
{
	if (res < 0)
		error_report_once(&q->f->error_reported, "%s: I/O error: %s",
				  q->f->path, strerror((int)-res));
	req->next = NULL;
	req->cb(req, res);
}
