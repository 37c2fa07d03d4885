/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_VIRTIO_VIRTIO_SERVER_H
#define BRISK_VIRTIO_VIRTIO_SERVER_H

/*
 * Serving one virtqueue on an I/O thread (or the main loop, which is
 * one): for a device whose requests go to a back end and come back later
 * (virtio-blk), or are answered as they are popped (virtio-rng,
 * virtio-net's transmitq).  The server pops in rounds under the device
 * lock (round_max, or a ring's worth), and hands each round to the back
 * end with one submit; the completions ready when a round ends, or when
 * the back end's batch does, go into the used ring together, one flush
 * and at most one interrupt.  It owns what every such device would
 * otherwise write again: notification suppression and its re-check, the
 * polling hooks of an I/O thread's poller, the round limit and its
 * self-kick, and the counting that a reset (the back end may still touch
 * guest memory) and a stopped queue (every request taken is answered
 * first) wait on.
 *
 * The device says what a request is (parse), starts it (submit), what
 * a finished one writes into its chain (complete) and when the driver
 * hears of it (notify).
 *
 * A queue whose chains wait for something other than the driver
 * (virtio-net's receiveq: a frame from the back end) pops on its own
 * terms with virtio_server_pop_locked() and gives back what it popped
 * through the same publish and drop: its elements come from the same
 * cache, its interrupts are decided the same way, and what it holds is
 * outstanding as a request in flight is (so a stop waits until the
 * device has published or dropped it).  Its ops need only notify (and
 * complete if it wants it).
 */
#include <pthread.h>
#include <sys/eventfd.h>
#include <stdbool.h>
#include <stdint.h>

#include "virtio/virtio.h"

/*
 * Rounds of up to a queue's worth of requests one kick serves before the
 * I/O thread turns to its other queues (the kick is then raised again).
 */
#define VIRTIO_SERVER_ROUNDS 4

struct virtio_server;

/* A popped request; the device's own struct starts with it. */
struct vs_req {
	struct vq_elem elem;
	struct vs_req *next;
	uint32_t used_len;	/* bytes written into the chain, once answered */
	uint32_t gen;		/* the server's when popped */
};

struct virtio_server_ops {
	/*
	 * Requests one round pops at most (0: a queue's worth), and rounds
	 * one kick serves (0: VIRTIO_SERVER_ROUNDS), before the thread
	 * turns to its other work and the kick is raised again.
	 */
	unsigned round_max, rounds;
	/*
	 * Optional, under the lock, while the ring has work: whether the
	 * device takes another request now.  false ends the round with the
	 * rest left in the ring; the device serves again when it can (a
	 * rate limit's period ends, its source has bytes again).  A true
	 * is for the very next chain: the round pops nothing admit has not
	 * been asked about, and parses it before asking again.
	 */
	bool (*admit)(struct virtio_server *sv);
	/*
	 * Under the device lock, for each popped request (zeroed beyond the
	 * element, used_len 1): 1 to submit it, 0 when it is answered at
	 * once, -1 with *why when the guest broke the ring's rules (the
	 * device then needs a reset).
	 */
	int (*parse)(struct virtio_server *sv, struct vs_req *r, const char **why);
	/*
	 * Without the lock: a round's requests for the back end, in order.
	 * Only for a device whose parse returns 1.
	 */
	void (*submit)(struct virtio_server *sv, struct vs_req *batch);
	/*
	 * Optional, under the lock, as r goes into the used ring (not for a
	 * request from before a reset, nor on a broken device).
	 */
	void (*complete)(struct virtio_server *sv, struct vs_req *r);
	/* Under the lock, after a flush: the interrupt, now or later. */
	void (*notify)(struct virtio_server *sv);
	/* Optional: the back end's completions ready to run, and running them. */
	bool (*backend_ready)(struct virtio_server *sv);
	void (*backend_run)(struct virtio_server *sv);
};

struct virtio_server {
	const char *what;	/* the device, for messages */
	struct virtio_device *vdev;
	unsigned idx;		/* the queue */
	const struct virtio_server_ops *ops;
	/* Request structs for reuse: no malloc() per request. */
	struct vq_elem_cache cache;

	/* under vdev->lock */
	bool serving;		/* popping allowed */
	bool stopping;		/* stop waits on drained */
	bool polling;		/* the I/O thread spins: no kicks wanted */
	unsigned outstanding;	/* popped, neither pushed nor dropped yet */
	pthread_cond_t drained;
	uint32_t gen;		/* bumped by reset: older requests are not published */
	/*
	 * Submitted, not yet back: such a request may still write guest
	 * memory (a reset waits for 0).  Atomic; raised under the lock,
	 * lowered on the I/O thread, which then takes the lock to let a
	 * pending reset complete.
	 */
	unsigned in_backend;

	/* I/O thread only */
	struct vs_req *done;	/* completed, not yet in the used ring */
	bool in_kick;
	bool closing;		/* atomic: the device is going away */
};

/* size: the device's request struct, a struct vs_req first. */
void virtio_server_init(struct virtio_server *sv, const char *what, struct virtio_device *vdev,
			unsigned idx, const struct virtio_server_ops *ops, size_t size,
			unsigned max_cached);
/* After the back end is gone (its callbacks ran): frees what is left. */
void virtio_server_destroy(struct virtio_server *sv);

/*
 * A poller's hooks but run (which is virtio_server_serve()): work on
 * the ring or in the back end, and kicks off while the thread spins.
 */
bool virtio_server_poll_ready(void *opaque);
void virtio_server_poll_quiesce(void *opaque, bool quiet);

/*
 * On the I/O thread: the back end finished r (used_len set); it goes
 * into the used ring with the rest at virtio_server_batch_done().
 */
static inline void virtio_server_done(struct virtio_server *sv, struct vs_req *r)
{
	if (__atomic_load_n(&sv->closing, __ATOMIC_ACQUIRE)) {
		vq_elem_put(&sv->cache, &r->elem);
		return;
	}
	__atomic_sub_fetch(&sv->in_backend, 1, __ATOMIC_RELEASE);
	r->next = sv->done;
	sv->done = r;
}
/* Before the back end is freed: its last callbacks only free. */
void virtio_server_close(struct virtio_server *sv);

/*
 * Under the lock.  start: serve (or not) from DRIVER_OK on; restart: a
 * queue started alone (vhost-user), kicks asked for unless polling;
 * reset: drop what is out.
 */
void virtio_server_start_locked(struct virtio_server *sv, bool serving);
void virtio_server_restart_locked(struct virtio_server *sv);
void virtio_server_reset_locked(struct virtio_server *sv);
/* Requests still in the back end (a reset waits for 0). */
unsigned virtio_server_busy(const struct virtio_server *sv);
/*
 * Under the lock: take nothing more, and return once every request taken
 * has been pushed or dropped.  The lock is released while waiting.
 */
void virtio_server_stop_locked(struct virtio_server *sv);

/*
 * The request path, inline, with the device's ops (sv->ops) passed as a
 * constant: its parse, submit and complete are inlined into the loop.  A
 * call through a pointer per request cost nearly 4% of a page-cache 4 KiB
 * read's instructions (tests/bench/iothread-instructions.sh), so serving
 * costs what it cost written out in the device.
 *
 * A device's kick handler and its poller's run call
 * virtio_server_serve() (a kick's eventfd is watched edge-triggered and
 * never read: a read per request is a syscall for nothing); its back
 * end's end of a batch of completions calls virtio_server_batch_done().
 */

/* Requests in the order they go into the used ring, for one publish. */
struct vs_batch {
	struct vs_req *head, **tail;
};

static inline void vs_batch_init(struct vs_batch *b)
{
	b->head = NULL;
	b->tail = &b->head;
}

/* r->next is NULL, as the pop leaves it. */
static inline void vs_batch_add(struct vs_batch *b, struct vs_req *r)
{
	*b->tail = r;
	b->tail = &r->next;
}

/* Kicks the queue as the driver would: served again, after other work. */
static inline void virtio_server_kick(struct virtio_server *sv)
{
	/* Cannot fail short of the counter's overflow, which a set one cannot reach. */
	(void)eventfd_write(sv->vdev->queues[sv->idx].kick_fd, 1);
}

/* n popped requests were pushed or dropped: a stop may be waiting. */
static inline void virtio_server_settled_locked(struct virtio_server *sv, unsigned n)
{
	sv->outstanding -= n;
	if (!sv->outstanding && sv->stopping)
		pthread_cond_broadcast(&sv->drained);
}

/*
 * Under the lock, for a device that pops on its own terms: the ring's
 * next chain in an element of the cache, as a round pops it, which
 * counts as outstanding (a stop waits for it) until it is published or
 * dropped.  1 with *req set, 0 when the ring has none, -1 when the
 * driver broke the ring's rules (said here; the device is then broken).
 */
static inline int virtio_server_pop_locked(struct virtio_server *sv, struct vs_req **req)
{
	struct virtqueue *vq = &sv->vdev->queues[sv->idx].vq;
	struct vq_elem *e;
	int ret = virtqueue_pop_cached(vq, &sv->cache, &e);

	if (ret == 0)
		return 0;
	if (ret < 0) {
		virtio_error(sv->vdev, "%s: queue %u: %s", sv->what, sv->idx,
			     vq->error ? vq->error : "malformed ring");
		return -1;
	}
	*req = (struct vs_req *)e;
	/* Zeroed by the pop beyond the element. */
	(*req)->gen = sv->gen;
	(*req)->used_len = 1;
	sv->outstanding++;
	return 1;
}

/* Under the lock: r, popped, goes back unused (a reset, a broken chain). */
static inline void virtio_server_drop_locked(struct virtio_server *sv, struct vs_req *r)
{
	vq_elem_put(&sv->cache, &r->elem);
	virtio_server_settled_locked(sv, 1);
}

/*
 * Puts completed requests into the used ring: one flush and at most one
 * interrupt for the whole list.  Requests from before a reset are only
 * freed; the last of them to come back completes the reset.
 */
static inline void virtio_server_publish_locked(struct virtio_server *sv,
						const struct virtio_server_ops *ops,
						struct vs_req *list)
{
	struct virtio_device *vdev = sv->vdev;
	struct virtqueue *vq = &vdev->queues[sv->idx].vq;
	unsigned n = 0, freed = 0;

	/*
	 * A stopped queue still answers what it took: stop waits for that.
	 * Only a reset (a new generation) or a broken device drops.
	 */
	while (list) {
		struct vs_req *r = list;

		list = r->next;
		if (!vdev->broken && r->gen == sv->gen) {
			if (ops->complete)
				ops->complete(sv, r);
			virtqueue_fill(vq, &r->elem, r->used_len, n++);
		}
		vq_elem_put(&sv->cache, &r->elem);
		freed++;
	}
	virtio_server_settled_locked(sv, freed);
	if (n) {
		virtqueue_flush(vq, n);
		ops->notify(sv);
	}
	virtio_reset_check(vdev);
}

static inline void virtio_server_publish(struct virtio_server *sv,
					 const struct virtio_server_ops *ops)
{
	struct vs_req *list = sv->done;

	sv->done = NULL;
	if (!list)
		return;
	pthread_mutex_lock(&sv->vdev->lock);
	virtio_server_publish_locked(sv, ops, list);
	pthread_mutex_unlock(&sv->vdev->lock);
}

/*
 * The back end has run every completion it had ready: they leave
 * together, unless a kick is being served (it publishes when it ends,
 * with what it answered itself).
 */
static inline void virtio_server_batch_done(struct virtio_server *sv,
					    const struct virtio_server_ops *ops)
{
	if (!sv->in_kick && !__atomic_load_n(&sv->closing, __ATOMIC_ACQUIRE))
		virtio_server_publish(sv, ops);
}

/*
 * Parses a popped request onto the round's list for now (answered at
 * once) or for the back end: 0 or 1, or -1 if it is bad (the device is
 * then broken).  The counts stay in the round's own locals, not behind
 * a pointer: parse's stores through guest pointers would make the
 * compiler reload them.
 */
static inline int virtio_server_take(struct virtio_server *sv,
				     const struct virtio_server_ops *ops, struct vs_req *r,
				     uint32_t gen, struct vs_batch *now, struct vs_batch *batch)
{
	const char *why = NULL;
	int ret;

	/* Zeroed by the pop beyond the element. */
	r->gen = gen;
	r->used_len = 1;
	r->next = NULL;
	ret = ops->parse(sv, r, &why);
	if (ret < 0) {
		/* Never counted as outstanding: nothing waits for it. */
		vq_elem_put(&sv->cache, &r->elem);
		virtio_error(sv->vdev, "%s: queue %u: %s", sv->what, sv->idx, why);
		return -1;
	}
	/* Answered at once: in the used ring in the order taken. */
	if (ret == 0)
		vs_batch_add(now, r);
	else
		vs_batch_add(batch, r);
	return ret > 0;
}

/*
 * One round: pop up to round_max requests under the lock, then hand them
 * to the back end with one submit.  A reset may come in between: the
 * round is counted in in_backend, so the reset completes only once it is
 * back, and its completions are not published (their generation is
 * gone).  True when the ring may hold more work.
 *
 * The round is popped first and parsed after: the driver wrote each
 * request's header on its own CPU, and reading it is a cache miss (a
 * tenth of a page-cache read's CPU); prefetched as each chain is popped,
 * the misses overlap instead of following one another.  A device that
 * admits requests one by one (what it admits depends on what parse
 * took) has each parsed as it is popped.
 */
static inline bool virtio_server_round(struct virtio_server *sv,
				       const struct virtio_server_ops *ops)
{
	struct virtio_device *vdev = sv->vdev;
	struct virtqueue *vq = &vdev->queues[sv->idx].vq;
	struct vs_batch popped, now, batch;
	struct vs_req *r;
	unsigned n, max, added = 0, answered = 0;
	uint32_t gen;
	int ret = 0;
	bool more = false, held = false;

	vs_batch_init(&popped);
	vs_batch_init(&now);
	vs_batch_init(&batch);
	pthread_mutex_lock(&vdev->lock);
	if (!sv->serving || vdev->broken) {
		pthread_mutex_unlock(&vdev->lock);
		return false;
	}
	/* In locals: parse's stores through guest pointers would reload them. */
	gen = sv->gen;
	max = ops->round_max && ops->round_max < vq->num ? ops->round_max : vq->num;
	virtqueue_set_notification(vq, false);
	for (n = 0; n < max; n++) {
		struct vq_elem *e;

		/*
		 * Only a chain admit saw may be popped: one the driver posts
		 * between a look that finds none and the pop would be parsed
		 * unadmitted (virtio-rng would answer it with no bytes, and
		 * Linux's driver then never asks again).  What is posted
		 * meanwhile is found by the re-check below.
		 */
		if (ops->admit) {
			if (!virtqueue_has_work(vq))
				break;
			if (!ops->admit(sv)) {
				held = true;
				break;
			}
		}
		/*
		 * Written out, not virtio_server_pop_locked(): a request's
		 * count and its generation are the round's locals, and GCC
		 * gave the blk and tx rounds a few instructions more a
		 * request through a shared helper.
		 */
		ret = virtqueue_pop_cached(vq, &sv->cache, &e);
		if (ret == 0)
			break;
		if (ret < 0) {
			virtio_error(vdev, "%s: queue %u: %s", sv->what, sv->idx,
				     vq->error ? vq->error : "malformed ring");
			break;
		}
		if (ops->admit) {
			ret = virtio_server_take(sv, ops, (struct vs_req *)e, gen,
						 &now, &batch);
			if (ret < 0)
				break;
			added += ret;
			answered += !ret;
			continue;
		}
		if (e->out_num)
			__builtin_prefetch(e->out_sg[0].iov_base);
		vs_batch_add(&popped, (struct vs_req *)e);
	}
	for (struct vs_req *next = popped.head; (r = next); ) {
		next = r->next;
		/* After a bad request the device is broken: the rest is dropped. */
		if (ret < 0) {
			vq_elem_put(&sv->cache, &r->elem);
			continue;
		}
		ret = virtio_server_take(sv, ops, r, gen, &now, &batch);
		added += ret > 0;
		answered += !ret;
	}
	sv->outstanding += added + answered;
	/* Counted before the unlock: a reset from now on waits for them. */
	__atomic_add_fetch(&sv->in_backend, added, __ATOMIC_RELAXED);
	if (!vdev->broken) {
		more = n == max;
		/* A spinning I/O thread looks again itself: no kicks. */
		if (!more && !sv->polling) {
			virtqueue_set_notification(vq, true);
			/*
			 * Re-check after re-enabling, or a kick could be lost;
			 * what the device did not admit waits until it serves
			 * again itself.
			 */
			more = !held && virtqueue_has_work(vq);
		}
	}
	if (now.head)
		virtio_server_publish_locked(sv, ops, now.head);
	pthread_mutex_unlock(&vdev->lock);
	if (ops->submit && added)
		ops->submit(sv, batch.head);
	return more;
}

/*
 * Pops until the ring is empty, or for VIRTIO_SERVER_ROUNDS rounds: a
 * driver that keeps its ring full must not keep the I/O thread from its
 * other queues.  The kick is then raised again, to be served after them.
 * After each round the back end's ready completions are reaped (a read
 * the page cache answered within the submit, what completed while
 * polling) and published with the round's own: the driver has the first
 * answers, and refills, while the thread serves the next round, and
 * nothing waits for the thread to wake again.
 */
static inline void virtio_server_serve(struct virtio_server *sv,
				       const struct virtio_server_ops *ops)
{
	unsigned rounds = 0;
	bool more;

	sv->in_kick = true;
	do {
		more = virtio_server_round(sv, ops);
		if (ops->backend_ready && ops->backend_ready(sv))
			ops->backend_run(sv);
		virtio_server_publish(sv, ops);
	} while (more && ++rounds < (ops->rounds ? ops->rounds : VIRTIO_SERVER_ROUNDS));
	sv->in_kick = false;
	if (more)
		virtio_server_kick(sv);
}

#endif
