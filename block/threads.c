// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "block-int.h"
#include "util/compiler.h"
#include "util/iothread.h"
#include "util/log.h"

/*
 * aio=threads: a few workers per queue make the blocking calls.  Finished
 * requests go back on a locked list and an eventfd wakes the I/O thread,
 * so callbacks still run there, as with io_uring.
 */
#define BLK_THREADS_WORKERS 4

struct blk_list {
	struct blk_req *head, *tail;
};

struct blk_threads {
	struct blk_queue q;
	int efd;
	/* Owned by the queue's thread. */
	struct blk_list staged;
	unsigned int inflight;	/* added, callback not yet run */
	/* Under lock. */
	pthread_mutex_t lock;
	pthread_cond_t work_cond;
	pthread_cond_t done_cond;
	struct blk_list work, done;
	bool stop;
	int nworkers;
	pthread_t workers[BLK_THREADS_WORKERS];
	void *zbuf;		/* read-only once allocated */
};

static struct blk_threads *to_threads(struct blk_queue *q)
{
	return container_of(q, struct blk_threads, q);
}

static void list_push(struct blk_list *l, struct blk_req *req)
{
	req->next = NULL;
	if (l->tail)
		l->tail->next = req;
	else
		l->head = req;
	l->tail = req;
}

static struct blk_req *list_pop(struct blk_list *l)
{
	struct blk_req *req = l->head;

	if (req) {
		l->head = req->next;
		if (!l->head)
			l->tail = NULL;
		req->next = NULL;
	}
	return req;
}

static int64_t do_rw(struct blk_file *f, struct blk_req *req)
{
	while (req->iovcnt > 0) {
		off_t off = (off_t)(req->offset + req->done);
		ssize_t n = req->op == BLK_OP_READ ?
			    preadv(f->fd, req->iov, req->iovcnt, off) :
			    pwritev2(f->fd, req->iov, req->iovcnt, off,
				     req->fua ? RWF_DSYNC : 0);

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* EOF: the file shrank */
		req->done += (uint64_t)n;
		blk_iov_advance(req, (size_t)n);
	}
	return (int64_t)req->done;
}

static int64_t do_write_zeros(struct blk_threads *th, struct blk_req *req)
{
	while (req->done < req->len) {
		uint64_t n = req->len - req->done;
		ssize_t r;

		struct iovec iov = { th->zbuf, BLK_ZERO_BUF_SIZE };

		if (n < iov.iov_len)
			iov.iov_len = n;
		r = pwritev2(th->q.f->fd, &iov, 1, (off_t)(req->offset + req->done),
			     req->fua ? RWF_DSYNC : 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		req->done += (uint64_t)r;
	}
	return 0;
}

static int64_t do_fdatasync(struct blk_file *f)
{
	while (fdatasync(f->fd) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int64_t do_zero(struct blk_threads *th, struct blk_req *req)
{
	struct blk_file *f = th->q.f;

	for (;;) {
		enum blk_zero_how how = blk_zero_how(f, req);

		if (how == BLK_ZERO_SKIP)
			return 0;
		if (how == BLK_ZERO_BLKDISCARD)
			return blk_discard_blkdev(f, req);
		if (how == BLK_ZERO_WRITE)
			return th->zbuf ? do_write_zeros(th, req) : -ENOMEM;
		if (fallocate(f->fd, blk_zero_fallocate_mode(how),
			      (off_t)req->offset, (off_t)req->len) == 0)
			return req->fua ? do_fdatasync(f) : 0;
		if (errno == EINTR || errno == EAGAIN)
			continue;
		if (!blk_err_unsupported(-errno))
			return -errno;
		blk_zero_unsupported(f, how);
	}
}

static int64_t do_req(struct blk_threads *th, struct blk_req *req)
{
	int err = blk_req_check(th->q.f, req);

	if (err)
		return err;
	switch (req->op) {
	case BLK_OP_READ:
	case BLK_OP_WRITE:
		return req->len ? do_rw(th->q.f, req) : 0;
	case BLK_OP_FLUSH:
		return do_fdatasync(th->q.f);
	case BLK_OP_DISCARD:
	case BLK_OP_WRITE_ZEROES:
		return do_zero(th, req);
	}
	return -EINVAL;
}

static void *worker_main(void *opaque)
{
	struct blk_threads *th = opaque;

	pthread_mutex_lock(&th->lock);
	for (;;) {
		struct blk_req *req = list_pop(&th->work);
		bool wake;

		if (!req) {
			if (th->stop)
				break;
			pthread_cond_wait(&th->work_cond, &th->lock);
			continue;
		}
		pthread_mutex_unlock(&th->lock);
		/* Bytes moved are in req->done; only the error needs keeping. */
		int64_t res = do_req(th, req);

		req->err = res < 0 ? (int)res : 0;
		pthread_mutex_lock(&th->lock);
		/* Only the first entry needs a wakeup: the reader takes all. */
		wake = !th->done.head;
		list_push(&th->done, req);
		pthread_cond_signal(&th->done_cond);
		if (wake && eventfd_write(th->efd, 1) < 0)
			abort();	/* a counter that cannot overflow here */
	}
	pthread_mutex_unlock(&th->lock);
	return NULL;
}

static void threads_run_done(struct blk_threads *th, struct blk_req *list)
{
	while (list) {
		struct blk_req *req = list;
		int64_t res;

		list = req->next;
		th->inflight--;
		if (req->err)
			res = req->err;
		else if (req->op == BLK_OP_READ || req->op == BLK_OP_WRITE)
			res = (int64_t)req->done;
		else
			res = 0;
		blk_req_finish(&th->q, req, res);
	}
}

static void threads_handler(void *opaque)
{
	struct blk_threads *th = opaque;
	struct blk_req *list;
	eventfd_t v;

	(void)eventfd_read(th->efd, &v);
	pthread_mutex_lock(&th->lock);
	list = th->done.head;
	th->done.head = th->done.tail = NULL;
	pthread_mutex_unlock(&th->lock);
	threads_run_done(th, list);
	blk_queue_batch_end(&th->q, list != NULL);
}

static void threads_add(struct blk_queue *q, struct blk_req *req)
{
	struct blk_threads *th = to_threads(q);

	th->inflight++;
	list_push(&th->staged, req);
}

static void threads_submit(struct blk_queue *q)
{
	struct blk_threads *th = to_threads(q);

	if (!th->staged.head)
		return;
	pthread_mutex_lock(&th->lock);
	if (th->work.tail)
		th->work.tail->next = th->staged.head;
	else
		th->work.head = th->staged.head;
	th->work.tail = th->staged.tail;
	pthread_cond_broadcast(&th->work_cond);
	pthread_mutex_unlock(&th->lock);
	th->staged.head = th->staged.tail = NULL;
}

static void threads_stop_workers(struct blk_threads *th)
{
	pthread_mutex_lock(&th->lock);
	th->stop = true;
	pthread_cond_broadcast(&th->work_cond);
	pthread_mutex_unlock(&th->lock);
	for (int i = 0; i < th->nworkers; i++)
		pthread_join(th->workers[i], NULL);
}

static void threads_destroy(struct blk_threads *th)
{
	pthread_cond_destroy(&th->done_cond);
	pthread_cond_destroy(&th->work_cond);
	pthread_mutex_destroy(&th->lock);
	if (th->efd >= 0)
		close(th->efd);
	free(th->zbuf);
	free(th);
}

static void threads_free(struct blk_queue *q)
{
	struct blk_threads *th = to_threads(q);

	/* Waits out a running handler; the done list is then ours to run. */
	iothread_del_fd(q->t, th->efd);
	while (th->inflight) {
		struct blk_req *list;

		/* Also what callbacks added meanwhile (a bounce's next window). */
		threads_submit(q);
		pthread_mutex_lock(&th->lock);
		while (!th->done.head)
			pthread_cond_wait(&th->done_cond, &th->lock);
		list = th->done.head;
		th->done.head = th->done.tail = NULL;
		pthread_mutex_unlock(&th->lock);
		threads_run_done(th, list);
	}
	threads_stop_workers(th);
	threads_destroy(th);
}

static const struct blk_queue_ops threads_ops = {
	.add = threads_add,
	.submit = threads_submit,
	.free = threads_free,
};

struct blk_queue *blk_threads_new(struct blk_file *f, struct iothread *t)
{
	struct blk_threads *th = calloc(1, sizeof(*th));
	int err;

	if (!th) {
		error_report("%s: out of memory", f->path);
		return NULL;
	}
	th->q = (struct blk_queue){ .ops = &threads_ops, .f = f, .t = t,
				    .aio = BLK_AIO_THREADS, .resume_fd = -1 };
	pthread_mutex_init(&th->lock, NULL);
	pthread_cond_init(&th->work_cond, NULL);
	pthread_cond_init(&th->done_cond, NULL);
	/* Allocated up front so workers share it without a lock. */
	th->zbuf = blk_zero_buf_alloc();
	th->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (!th->zbuf || th->efd < 0) {
		err = th->efd < 0 ? errno : ENOMEM;
		goto fail;
	}
	for (; th->nworkers < BLK_THREADS_WORKERS; th->nworkers++) {
		err = pthread_create(&th->workers[th->nworkers], NULL,
				     worker_main, th);
		if (err)
			goto fail;
	}
	if (iothread_add_fd(t, th->efd, threads_handler, th) < 0) {
		err = errno;
		goto fail;
	}
	return &th->q;
fail:
	error_report("%s: aio=threads setup: %s", f->path, strerror(err));
	threads_stop_workers(th);
	threads_destroy(th);
	return NULL;
}
