// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

void blk_queue_add(struct blk_queue *q, struct blk_req *req)
{
	assert(!q->closing);
	req->done = 0;
	req->err = 0;
	req->next = NULL;
	q->ops->add(q, req);
}

void blk_queue_submit(struct blk_queue *q)
{
	q->ops->submit(q);
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

enum blk_zero_how blk_zero_how(const struct blk_file *f,
			       const struct blk_req *req)
{
	bool unmap = req->op == BLK_OP_DISCARD || req->unmap;

	if (unmap && !__atomic_load_n(&f->no_punch_hole, __ATOMIC_RELAXED))
		return BLK_ZERO_PUNCH;
	if (!__atomic_load_n(&f->no_zero_range, __ATOMIC_RELAXED))
		return BLK_ZERO_RANGE;
	/* Discard is a hint: writing zeros for it would be all cost. */
	return req->op == BLK_OP_DISCARD ? BLK_ZERO_SKIP : BLK_ZERO_WRITE;
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
}

void blk_req_finish(struct blk_queue *q, struct blk_req *req, int64_t res)
{
	if (res < 0)
		error_report_once(&q->f->error_reported, "%s: I/O error: %s",
				  q->f->path, strerror((int)-res));
	req->next = NULL;
	req->cb(req, res);
}
