// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "block-int.h"
#include "util/compiler.h"
#include "util/iothread.h"
#include "util/log.h"

/*
 * One ring per queue, owned by the queue's I/O thread: no locks.  At most
 * BLK_URING_DEPTH requests hold a ring slot at a time (prepared or in the
 * kernel); the rest wait on an overflow list.  The completion queue is
 * twice that size, so it can never overflow, and a request that must be
 * resubmitted (short I/O, -EAGAIN) always finds the slot it just freed.
 */
#define BLK_URING_DEPTH 256

/* user_data low bit: complete with req->err, no I/O was done. */
#define BLK_URING_NOIO 1ull

/* A refused submit is tried again after this, doubling up to the max. */
#define BLK_URING_RETRY_MIN_NS 100000ull
#define BLK_URING_RETRY_MAX_NS 100000000ull

struct blk_uring {
	struct blk_queue q;
	struct io_uring ring;
	/*
	 * The file as the ring names it: registered (index 0 and
	 * IOSQE_FIXED_FILE), which spares the kernel a file lookup and
	 * reference per request, or the plain fd where registering failed.
	 */
	int fd;
	unsigned char sqe_flags;
	unsigned int inflight;
	struct blk_req *over_head, *over_tail;
	void *zbuf;
	blk_uring_submit_fn submit;
	void *submit_opaque;
	int retry_fd;		/* timerfd, made at the first refused submit */
	uint64_t retry_ns;	/* 0: no retry armed */
	/* A read added with nothing before it: read at submit if it comes alone. */
	struct blk_req *lone;
	unsigned int added;	/* since the last submit */
	/*
	 * Its callback (and batch end) is running: a read that adds is not
	 * read at once inside it, or a callback that reads again would nest
	 * without end and run the thread out of stack.
	 */
	bool in_lone_cb;
};

static struct blk_uring *to_uring(struct blk_queue *q)
{
	return container_of(q, struct blk_uring, q);
}

static void uring_prep_noio(struct io_uring_sqe *sqe, struct blk_req *req,
			    int err)
{
	req->err = err;
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, (uintptr_t)req | BLK_URING_NOIO);
}

static void uring_prep_zero(struct blk_uring *u, struct io_uring_sqe *sqe,
			    struct blk_req *req)
{
	int fd = u->fd;
	enum blk_zero_how how = blk_zero_how(u->q.f, req);
	uint64_t n;

	if (req->syncing) {
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		sqe->flags |= u->sqe_flags;
		io_uring_sqe_set_data(sqe, req);
		return;
	}
	/* Another queue may learn a flag meanwhile: remember what we did. */
	req->err = (int)how;
	switch (how) {
	case BLK_ZERO_PUNCH:
	case BLK_ZERO_RANGE:
		io_uring_prep_fallocate(sqe, fd, blk_zero_fallocate_mode(how),
					req->offset, req->len);
		break;
	case BLK_ZERO_WRITE:
		if (!u->zbuf && !(u->zbuf = blk_zero_buf_alloc())) {
			uring_prep_noio(sqe, req, -ENOMEM);
			return;
		}
		n = req->len - req->done;
		if (n > BLK_ZERO_BUF_SIZE)
			n = BLK_ZERO_BUF_SIZE;
		io_uring_prep_write(sqe, fd, u->zbuf, (unsigned int)n,
				    req->offset + req->done);
		if (req->fua)
			sqe->rw_flags = RWF_DSYNC;
		break;
	case BLK_ZERO_SKIP:
	case BLK_ZERO_BLKDISCARD:	/* blk_queue_add() hands it to workers */
		uring_prep_noio(sqe, req, 0);
		return;
	}
	sqe->flags |= u->sqe_flags;
	io_uring_sqe_set_data(sqe, req);
}

/*
 * A request of one segment (a 4 KiB read is one) goes as READ/WRITE, not
 * READV/WRITEV: the kernel then copies and checks no iovec array, about
 * 2.5% of a page-cache read's CPU.
 */
static void uring_prep_rw(struct io_uring_sqe *sqe, int fd, const struct blk_req *req)
{
	bool one = req->iovcnt == 1 && req->iov[0].iov_len <= UINT_MAX;
	bool read = req->op == BLK_OP_READ;
	int op = one ? (read ? IORING_OP_READ : IORING_OP_WRITE) :
		       (read ? IORING_OP_READV : IORING_OP_WRITEV);

	if (one)
		io_uring_prep_rw(op, sqe, fd, req->iov[0].iov_base,
				 (unsigned int)req->iov[0].iov_len, req->offset + req->done);
	else
		io_uring_prep_rw(op, sqe, fd, req->iov, (unsigned int)req->iovcnt,
				 req->offset + req->done);
	if (!read && req->fua)
		sqe->rw_flags = RWF_DSYNC;
}

/* Puts req (new or resubmitted) in a ring slot; the caller made room. */
static void uring_prep(struct blk_uring *u, struct blk_req *req)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	int fd = u->fd;
	int err;

	assert(sqe && u->inflight < BLK_URING_DEPTH);
	u->inflight++;
	err = blk_req_check(u->q.f, req);
	if (err || ((req->op == BLK_OP_READ || req->op == BLK_OP_WRITE) &&
		    req->len == 0)) {
		uring_prep_noio(sqe, req, err);
		return;
	}
	switch (req->op) {
	case BLK_OP_READ:
	case BLK_OP_WRITE:
		uring_prep_rw(sqe, fd, req);
		break;
	case BLK_OP_FLUSH:
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
		break;
	case BLK_OP_DISCARD:
	case BLK_OP_WRITE_ZEROES:
		uring_prep_zero(u, sqe, req);
		return;
	}
	sqe->flags |= u->sqe_flags;
	io_uring_sqe_set_data(sqe, req);
}

static int uring_submit_real(struct io_uring *ring, void *opaque)
{
	(void)opaque;
	return io_uring_submit(ring);
}

static void uring_retry_handler(void *opaque);
static void uring_unkeep(struct blk_uring *u);

/*
 * The kernel refused the SQ (short of memory, or something unexpected).
 * The entries stay there; nothing else may come to submit them (no other
 * request in flight, no completion due), so a timer does, backing off
 * while the refusals go on.  The I/O thread keeps serving meanwhile.
 */
static void uring_retry_later(struct blk_uring *u, int err)
{
	uint64_t ns = u->retry_ns ? u->retry_ns * 2 : BLK_URING_RETRY_MIN_NS;
	struct itimerspec its = { 0 };

	if (err != -EAGAIN && err != -EBUSY)
		error_report_once(&u->q.f->error_reported, "%s: io_uring submit: %s; retrying",
				  u->q.f->path, strerror(-err));
	/* Freeing: its own loop submits and waits; no timer outlives the queue. */
	if (u->q.closing)
		return;
	if (u->retry_fd < 0) {
		u->retry_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (u->retry_fd >= 0 &&
		    iothread_add_fd(u->q.t, u->retry_fd, uring_retry_handler, u) < 0) {
			close(u->retry_fd);
			u->retry_fd = -1;
		}
	}
	if (ns > BLK_URING_RETRY_MAX_NS)
		ns = BLK_URING_RETRY_MAX_NS;
	u->retry_ns = ns;
	its.it_value.tv_sec = ns / 1000000000;
	its.it_value.tv_nsec = ns % 1000000000;
	if (u->retry_fd < 0 || timerfd_settime(u->retry_fd, 0, &its, NULL) < 0) {
		/* No timer to be had: a completion is then the only hope. */
		error_report("%s: io_uring submit retry: %s", u->q.f->path,
			     strerror(errno));
		u->retry_ns = 0;
	}
}

/* What io_uring_enter() may answer and yet take the SQ later. */
static bool uring_refusal_passes(int err)
{
	return err == -EAGAIN || err == -EBUSY || err == -ENOMEM || err == -EINTR;
}

static void uring_fill_from_overflow(struct blk_uring *u);

/*
 * The kernel will not take the SQ, and says so for good (a broken ring, a
 * kernel that refuses an opcode or flag): the requests still in it fail
 * with an I/O error, and their entries become NOPs that nobody waits for,
 * which a later submit may carry through or not.  Completions run once
 * every entry is dealt with: their callbacks may queue new requests.
 */
static void uring_fail_sq(struct blk_uring *u, int err)
{
	struct io_uring_sq *sq = &u->ring.sq;
	unsigned head = io_uring_smp_load_acquire(sq->khead);
	uint64_t failed[BLK_URING_DEPTH];
	unsigned n = 0;

	error_report_once(&u->q.f->error_reported, "%s: io_uring submit: %s; failing the "
			  "requests it refused", u->q.f->path, strerror(-err));
	for (; head != sq->sqe_tail; head++) {
		struct io_uring_sqe *sqe = &sq->sqes[head & sq->ring_mask];
		uint64_t data = sqe->user_data;

		io_uring_prep_nop(sqe);
		sqe->flags = 0;
		io_uring_sqe_set_data64(sqe, 0);
		if (data) {
			assert(n < BLK_URING_DEPTH);
			failed[n++] = data;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		u->inflight--;
		blk_req_finish(&u->q, (struct blk_req *)(uintptr_t)(failed[i] & ~BLK_URING_NOIO),
			       -EIO);
	}
	blk_queue_batch_end(&u->q, n);
}

static void uring_flush_sq(struct blk_uring *u)
{
	while (io_uring_sq_ready(&u->ring)) {
		int r = u->submit(&u->ring, u->submit_opaque);

		if (r > 0 || r == -EINTR)
			continue;
		/* Nothing taken and no reason given: as good as "try later". */
		if (r == 0 || uring_refusal_passes(r)) {
			uring_retry_later(u, r ? r : -EAGAIN);
			return;
		}
		uring_fail_sq(u, r);
		/* Requests waiting for a slot: theirs now, tried (once) in turn. */
		if (!u->over_head)
			return;
		uring_fill_from_overflow(u);
	}
	u->retry_ns = 0;
}

static void uring_retry_handler(void *opaque)
{
	struct blk_uring *u = opaque;
	uint64_t n;

	if (read(u->retry_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	uring_flush_sq(u);
}

static void uring_queue(struct blk_uring *u, struct blk_req *req)
{
	if (u->inflight < BLK_URING_DEPTH && !u->over_head) {
		uring_prep(u, req);
		return;
	}
	if (u->over_tail)
		u->over_tail->next = req;
	else
		u->over_head = req;
	u->over_tail = req;
}

/*
 * A read that comes alone to its submit, from a file that is not
 * O_DIRECT, is tried at once with preadv2(RWF_NOWAIT), which copies what
 * the page cache holds and never waits for the disk.  io_uring's own
 * first try of a buffered read is the same copy, but one 4 KiB
 * page-cache read through the ring (prepare, submit, reap) took 1.35x
 * the CPU of the same read by preadv2 (docs/benchmarks.md).  A batch
 * goes to the ring, where one system call carries it all.  What the page
 * cache does not hold (-EAGAIN, or a short read: the rest) goes to the
 * ring as before, and so does every read of a file system without
 * RWF_NOWAIT (tmpfs, a memfd: EOPNOTSUPP, learnt once).
 */
static bool uring_lone_ok(struct blk_uring *u, const struct blk_req *req)
{
	return req->op == BLK_OP_READ && !u->q.f->direct && !u->in_lone_cb &&
	       !io_uring_sq_ready(&u->ring) && !u->over_head &&
	       !__atomic_load_n(&u->q.f->no_nowait, __ATOMIC_RELAXED);
}

/*
 * A read kept to be read at once goes to the ring after all: a second
 * request joined it, or the queue is freed before its submit.
 */
static void uring_unkeep(struct blk_uring *u)
{
	if (u->lone) {
		uring_queue(u, u->lone);
		u->lone = NULL;
	}
}

/*
 * The first two requests of a submit: the first may be kept to be read
 * at once, and the second sends it to the ring after all.  True when req
 * was kept.  Out of line: the rest of a batch pays one count.
 */
static __attribute__((noinline)) bool uring_add_first(struct blk_uring *u,
						      struct blk_req *req)
{
	if (u->added == 1) {
		if (!uring_lone_ok(u, req))
			return false;
		u->lone = req;
		return true;
	}
	uring_unkeep(u);
	return false;
}

static void uring_add(struct blk_queue *q, struct blk_req *req)
{
	struct blk_uring *u = to_uring(q);

	if (unlikely(u->added++ < 2) && uring_add_first(u, req))
		return;
	uring_queue(u, req);
}

/* True when req completed here; false: the ring takes it (what is left). */
static bool uring_read_now(struct blk_uring *u, struct blk_req *req)
{
	struct blk_file *f = u->q.f;
	ssize_t n;

	if (blk_req_check(f, req) || !req->len)
		return false;
	n = preadv2(f->fd, req->iov, req->iovcnt, (off_t)req->offset, RWF_NOWAIT);
	if (n <= 0) {
		/*
		 * A file system without it (or a kernel, or a seccomp filter)
		 * says so for every read: stop asking.
		 */
		if (n < 0 && (errno == EOPNOTSUPP || errno == ENOSYS || errno == EPERM ||
			      errno == EINVAL))
			__atomic_store_n(&f->no_nowait, true, __ATOMIC_RELAXED);
		return false;
	}
	req->done = (uint64_t)n;
	/* As a ring read that came back short: the rest goes on from there. */
	if ((uint64_t)n != req->len) {
		blk_iov_advance(req, (size_t)n);
		if (req->iovcnt > 0)
			return false;
	}
	u->in_lone_cb = true;
	blk_req_finish(&u->q, req, n);
	blk_queue_batch_end(&u->q, 1);
	u->in_lone_cb = false;
	return true;
}

static void uring_submit(struct blk_queue *q)
{
	struct blk_uring *u = to_uring(q);
	struct blk_req *lone = u->lone;

	u->lone = NULL;
	u->added = 0;
	if (lone && !uring_read_now(u, lone))
		uring_queue(u, lone);
	uring_flush_sq(u);
}

static void uring_fill_from_overflow(struct blk_uring *u)
{
	while (u->over_head && u->inflight < BLK_URING_DEPTH) {
		struct blk_req *req = u->over_head;

		u->over_head = req->next;
		if (!u->over_head)
			u->over_tail = NULL;
		req->next = NULL;
		uring_prep(u, req);
	}
}

static void uring_rw_done(struct blk_uring *u, struct blk_req *req, int res)
{
	if (res == -EAGAIN || res == -EINTR) {
		uring_prep(u, req);
		return;
	}
	if (res < 0) {
		blk_req_finish(&u->q, req, res);
		return;
	}
	/* Zero bytes: EOF on a read, a device that takes nothing on a write. */
	if (res == 0) {
		blk_req_finish(&u->q, req, -EIO);
		return;
	}
	req->done += (unsigned int)res;
	blk_iov_advance(req, (unsigned int)res);
	if (req->iovcnt > 0)
		uring_prep(u, req);
	else
		blk_req_finish(&u->q, req, (int64_t)req->done);
}

static void uring_zero_done(struct blk_uring *u, struct blk_req *req, int res)
{
	enum blk_zero_how how = (enum blk_zero_how)req->err;

	if (res == -EAGAIN || res == -EINTR) {
		uring_prep(u, req);
		return;
	}
	if (req->syncing) {
		blk_req_finish(&u->q, req, res < 0 ? res : 0);
		return;
	}
	/* Written with RWF_DSYNC; a fallocate needs its own sync. */
	if (res >= 0 && req->fua && how != BLK_ZERO_WRITE && how != BLK_ZERO_SKIP) {
		req->syncing = true;
		uring_prep(u, req);
		return;
	}
	if (blk_err_unsupported(res) && how != BLK_ZERO_WRITE) {
		blk_zero_unsupported(u->q.f, how);
		uring_prep(u, req);
		return;
	}
	if (res < 0 || how != BLK_ZERO_WRITE) {
		blk_req_finish(&u->q, req, res < 0 ? res : 0);
		return;
	}
	if (res == 0) {
		blk_req_finish(&u->q, req, -EIO);
		return;
	}
	req->done += (unsigned int)res;
	if (req->done < req->len)
		uring_prep(u, req);
	else
		blk_req_finish(&u->q, req, 0);
}

static void uring_complete(struct blk_uring *u, uint64_t data, int res)
{
	struct blk_req *req = (struct blk_req *)(uintptr_t)
			      (data & ~BLK_URING_NOIO);

	u->inflight--;
	if (data & BLK_URING_NOIO) {
		blk_req_finish(&u->q, req, req->err);
		return;
	}
	switch (req->op) {
	case BLK_OP_READ:
	case BLK_OP_WRITE:
		uring_rw_done(u, req, res);
		break;
	case BLK_OP_FLUSH:
		if (res == -EAGAIN || res == -EINTR)
			uring_prep(u, req);
		else
			blk_req_finish(&u->q, req, res < 0 ? res : 0);
		break;
	case BLK_OP_DISCARD:
	case BLK_OP_WRITE_ZEROES:
		uring_zero_done(u, req, res);
		break;
	}
}

/*
 * Each CQE is released before its callback runs, so a callback may add and
 * submit new requests to this queue.
 */
static void uring_reap(struct blk_uring *u)
{
	struct io_uring_cqe *cqe;
	unsigned n = 0;

	while (io_uring_peek_cqe(&u->ring, &cqe) == 0) {
		uint64_t data = io_uring_cqe_get_data64(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&u->ring, cqe);
		/* 0: an entry uring_fail_sq() already answered for. */
		if (!data)
			continue;
		uring_complete(u, data, res);
		uring_fill_from_overflow(u);
		n++;
	}
	uring_flush_sq(u);
	blk_queue_batch_end(&u->q, n);
}

/*
 * The ring's own fd is what the thread watches: it polls readable exactly
 * while completions wait, so a reap that took them all (in the kick that
 * submitted them, or in a poller) leaves nothing to wake for, where an
 * eventfd would stay set and cost a wakeup and a read.  That holds for
 * the ring uring_init() makes: with DEFER_TASKRUN the fd would also poll
 * readable for completion work that only io_uring_get_events() runs.
 */
static void uring_handler(void *opaque)
{
	uring_reap(opaque);
}

static bool uring_poll_ready(struct blk_queue *q)
{
	return io_uring_cq_ready(&to_uring(q)->ring) > 0;
}

static void uring_poll_run(struct blk_queue *q)
{
	uring_reap(to_uring(q));
}

static void uring_free(struct blk_queue *q)
{
	struct blk_uring *u = to_uring(q);

	/* Waits out a running handler; after this the ring is ours alone. */
	iothread_del_fd(q->t, u->ring.ring_fd);
	if (u->retry_fd >= 0) {
		iothread_del_fd(q->t, u->retry_fd);
		close(u->retry_fd);
		u->retry_fd = -1;
	}
	/* Added and never submitted: the ring waits for it with the rest. */
	uring_unkeep(u);
	uring_fill_from_overflow(u);
	uring_flush_sq(u);
	while (u->inflight || u->over_head) {
		struct io_uring_cqe *cqe;
		int r = io_uring_submit_and_wait(&u->ring, 1);

		if (r < 0 && !uring_refusal_passes(r) && r != -ETIME) {
			/* What the kernel would not take fails; what it took is waited for. */
			uring_fail_sq(u, r);
			r = u->inflight ? io_uring_wait_cqe(&u->ring, &cqe) : 0;
			if (r < 0 && !uring_refusal_passes(r) && r != -ETIME) {
				/* Freeing the ring with I/O in the kernel is worse. */
				error_report("%s: io_uring wait: %s", q->f->path,
					     strerror(-r));
				abort();
			}
		} else if (r < 0 && r != -EINTR && r != -ETIME) {
			/* Short of memory or CQ room: give completions a moment, not a spin. */
			usleep(1000);
		}
		uring_reap(u);
	}
	/*
	 * The ring's own teardown is deferred in the kernel: let go of the
	 * file now, or it stays open (and its blocks taken) for a while.
	 */
	if (u->sqe_flags & IOSQE_FIXED_FILE)
		io_uring_unregister_files(&u->ring);
	io_uring_queue_exit(&u->ring);
	free(u->zbuf);
	free(u);
}

static const struct blk_queue_ops uring_ops = {
	.add = uring_add,
	.submit = uring_submit,
	.free = uring_free,
	.poll_ready = uring_poll_ready,
	.poll_run = uring_poll_run,
};

static int uring_init(struct io_uring *ring)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL,
		.cq_entries = 2 * BLK_URING_DEPTH,
	};
	int r = io_uring_queue_init_params(BLK_URING_DEPTH, ring, &p);

	if (r == -EINVAL) {
		/* Older kernel without SUBMIT_ALL. */
		p = (struct io_uring_params){
			.flags = IORING_SETUP_CQSIZE,
			.cq_entries = 2 * BLK_URING_DEPTH,
		};
		r = io_uring_queue_init_params(BLK_URING_DEPTH, ring, &p);
	}
	return r;
}

struct blk_queue *blk_uring_new(struct blk_file *f, struct iothread *t,
				int *err)
{
	struct blk_uring *u = calloc(1, sizeof(*u));
	int r;

	*err = 0;
	if (!u) {
		error_report("%s: out of memory", f->path);
		return NULL;
	}
	r = uring_init(&u->ring);
	if (r < 0) {
		free(u);
		*err = r;
		return NULL;
	}
	if (iothread_add_fd(t, u->ring.ring_fd, uring_handler, u) < 0) {
		error_report("%s: io_uring setup: %s", f->path, strerror(errno));
		io_uring_queue_exit(&u->ring);
		free(u);
		return NULL;
	}
	u->q = (struct blk_queue){ .ops = &uring_ops, .f = f, .t = t,
				   .aio = BLK_AIO_IO_URING, .resume_fd = -1 };
	u->fd = f->fd;
	if (io_uring_register_files(&u->ring, &f->fd, 1) == 0) {
		u->fd = 0;
		u->sqe_flags = IOSQE_FIXED_FILE;
	}
	u->submit = uring_submit_real;
	u->retry_fd = -1;
	return &u->q;
}

void blk_uring_set_submit(struct blk_queue *q, blk_uring_submit_fn fn, void *opaque)
{
	struct blk_uring *u = to_uring(q);

	assert(q->aio == BLK_AIO_IO_URING);
	u->submit = fn ? fn : uring_submit_real;
	u->submit_opaque = opaque;
}
