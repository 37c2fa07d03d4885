// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The frame queues between a back end's thread and the NIC's
 * (include/net/queue.h says why they are bounded and locked as they are).
 */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/net.h"
#include "net/queue.h"
#include "util/iothread.h"
#include "util/log.h"

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

struct frame *frame_new(size_t len)
{
	struct frame *f = malloc(sizeof(*f) + len);

	if (f)
		f->len = len;
	return f;
}

void fq_init(struct frame_queue *q)
{
	pthread_mutex_init(&q->lock, NULL);
	q->head = NULL;
	q->tail = &q->head;
	q->n = 0;
	q->bytes = 0;
	q->closed = false;
	q->working = false;
	q->idle_wanted = false;
	q->idle_fd = -1;
}

/* Under q->lock: whoever waits for q to go idle is told (after the unlock). */
static bool idle_now(struct frame_queue *q)
{
	bool kick = q->idle_wanted;

	q->working = false;
	q->idle_wanted = false;
	return kick;
}

/* Whether q takes a frame of len bytes; under q->lock. */
static bool room(const struct frame_queue *q, size_t len)
{
	return !q->closed && q->n < QUEUE_FRAMES && q->bytes + len <= QUEUE_BYTES;
}

/*
 * Whether q would take a frame of len bytes now: looked at before the
 * frame is allocated and copied.  Only the one thread that adds to q
 * calls it, so the answer can turn from yes to no only by a close, which
 * fq_push sees.
 */
static bool has_room(struct frame_queue *q, size_t len)
{
	bool ok;

	pthread_mutex_lock(&q->lock);
	ok = room(q, len);
	pthread_mutex_unlock(&q->lock);
	return ok;
}

bool fq_push(struct frame_queue *q, struct frame *f, bool *was_empty)
{
	bool ok;

	pthread_mutex_lock(&q->lock);
	ok = room(q, f->len);
	*was_empty = !q->head;
	if (ok) {
		f->next = NULL;
		*q->tail = f;
		q->tail = &f->next;
		q->n++;
		q->bytes += f->len;
	}
	pthread_mutex_unlock(&q->lock);
	return ok;
}

struct frame *fq_pop(struct frame_queue *q)
{
	struct frame *f;
	bool kick = false;

	pthread_mutex_lock(&q->lock);
	f = q->head;
	if (f) {
		q->head = f->next;
		if (!q->head)
			q->tail = &q->head;
		q->n--;
		q->bytes -= f->len;
		q->working = true;
	} else {
		kick = idle_now(q);
	}
	pthread_mutex_unlock(&q->lock);
	if (kick)
		eventfd_kick(q->idle_fd);
	return f;
}

bool fq_busy(struct frame_queue *q)
{
	bool busy;

	assert(q->idle_fd >= 0);
	pthread_mutex_lock(&q->lock);
	busy = q->head || q->working;
	q->idle_wanted = busy;
	pthread_mutex_unlock(&q->lock);
	return busy;
}

unsigned fq_clear(struct frame_queue *q)
{
	struct frame *f;
	unsigned n = 0;

	while ((f = fq_pop(q))) {
		free(f);
		n++;
	}
	return n;
}

unsigned fq_close(struct frame_queue *q)
{
	struct frame *f, *next;
	unsigned n;
	bool idle;

	pthread_mutex_lock(&q->lock);
	q->closed = true;
	f = q->head;
	n = q->n;
	q->head = NULL;
	q->tail = &q->head;
	q->n = 0;
	q->bytes = 0;
	idle = idle_now(q);	/* what it worked on is dropped too */
	pthread_mutex_unlock(&q->lock);
	if (idle)
		eventfd_kick(q->idle_fd);
	for (; f; f = next) {
		next = f->next;
		free(f);
	}
	return n;
}

void fq_open(struct frame_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->closed = false;
	pthread_mutex_unlock(&q->lock);
}

void fq_destroy(struct frame_queue *q)
{
	/* The NIC is gone: nobody waits for idle_fd any more. */
	q->idle_wanted = false;
	q->idle_fd = -1;
	fq_clear(q);
	pthread_mutex_destroy(&q->lock);
}

bool fq_send(struct frame_queue *q, int wake_fd, const struct iovec *iov, unsigned n,
	     size_t len)
{
	struct frame *f;
	size_t off = 0;
	bool was_empty;

	if (len < 14 || len > FRAME_MAX || !has_room(q, len) || !(f = frame_new(len)))
		return false;
	for (unsigned i = 0; i < n && off < len; i++) {
		size_t k = min_size(iov[i].iov_len, len - off);

		memcpy(f->data + off, iov[i].iov_base, k);
		off += k;
	}
	if (off < len || !fq_push(q, f, &was_empty)) {
		free(f);
		return false;
	}
	if (was_empty)
		eventfd_kick(wake_fd);
	return true;
}

static size_t fq_head_len(struct frame_queue *q)
{
	size_t len;

	pthread_mutex_lock(&q->lock);
	len = q->head ? q->head->len : 0;
	pthread_mutex_unlock(&q->lock);
	return len;
}

size_t fq_peek(struct frame_queue *q, int rx_fd)
{
	size_t len = fq_head_len(q);

	if (len)
		return len;
	/*
	 * Cleared before the second look: a frame queued after the first
	 * is either seen now, or its kick comes after the clear and leaves
	 * rx_fd readable.
	 */
	eventfd_clear(rx_fd);
	return fq_head_len(q);
}

void fq_take(struct frame_queue *q, const struct iovec *iov, unsigned n)
{
	struct frame *f = fq_pop(q);
	size_t off = 0;

	if (!f)
		return;
	for (unsigned i = 0; iov && i < n && off < f->len; i++) {
		size_t k = min_size(iov[i].iov_len, f->len - off);

		memcpy(iov[i].iov_base, f->data + off, k);
		off += k;
	}
	free(f);
}

bool fq_deliver(struct frame_queue *rx, struct netdev *nd, const void *buf, size_t len)
{
	struct frame *f = has_room(rx, len) ? frame_new(len) : NULL;
	bool was_empty;

	if (f)
		memcpy(f->data, buf, len);
	if (!f || !fq_push(rx, f, &was_empty)) {
		free(f);
		__atomic_fetch_add(&nd->rx_dropped, 1, __ATOMIC_RELAXED);
		return false;
	}
	/* Every frame, as struct netdev promises the NIC. */
	eventfd_kick(nd->rx_fd);
	return true;
}

void eventfd_kick(int fd)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is full, so the reader wakes anyway.  Nothing
	 * else can fail an eventfd write of 1 but a bug (the fd closed). */
	if (write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN) {
		error_report("writing eventfd %d: %s", fd, strerror(errno));
		abort();
	}
}

void eventfd_clear(int fd)
{
	uint64_t n;

	/* EAGAIN: nothing to clear.  Anything else is a bug, as above. */
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN) {
		error_report("reading eventfd %d: %s", fd, strerror(errno));
		abort();
	}
}

/* A thread made between these two inherits a mask with every signal blocked. */
static void signals_off(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
}

static void signals_back(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

int net_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
	sigset_t old;
	int err;

	signals_off(&old);
	err = pthread_create(t, NULL, fn, arg);
	signals_back(&old);
	if (!err)
		pthread_setname_np(*t, name);
	return err;
}

int net_loop_start(struct iothread *t)
{
	sigset_t old;
	int err;

	signals_off(&old);
	err = iothread_start(t);
	signals_back(&old);
	return err;
}
