/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_NET_QUEUE_H
#define BRISK_NET_QUEUE_H

/*
 * What the back ends with queues share (net/slirp.c, on the NIC's loop
 * or a thread of its own; net/stream.c, on its own thread): the two
 * bounded frame queues between that side and the NIC's, the eventfd
 * kicks that say a queue has frames, and the way a thread starts.  Each queue has its own lock and is held only to link or
 * unlink a frame, so neither thread ever waits on the other's work.  One
 * thread only ever adds to a queue (the NIC's to tx, the back end's to
 * rx), so a queue that has room for a frame still has it once that
 * thread has copied the frame (unless it was closed meanwhile, which the
 * push sees): room is looked at before the copy, and a flood the queue
 * refuses costs no allocation and no copy.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct netdev;

/*
 * Frames waiting either way, at most: a guest that stops reading (or a
 * flood from the back end) costs 4 MiB, and TCP backs off from the drops.
 */
#define QUEUE_FRAMES 1024
#define QUEUE_BYTES (4u << 20)
/* An Ethernet header and the largest IP datagram. */
#define FRAME_MAX (14 + 65535)

struct frame {
	struct frame *next;
	size_t len;
	uint8_t data[];
};

struct frame_queue {
	pthread_mutex_t lock;
	struct frame *head, **tail;
	unsigned n;
	size_t bytes;
	bool closed;		/* fq_close'd: takes no frame until fq_open */
	/*
	 * The popping thread still works on the frame it popped last: it
	 * pops the next only once done with it (the tx queue's back end).
	 */
	bool working;
	bool idle_wanted;	/* fq_busy said yes: kick idle_fd once idle */
	int idle_fd;		/* -1 (fq_init's): fq_busy is not used on q */
};

/* A frame of len bytes, its data not filled in; NULL when out of memory. */
struct frame *frame_new(size_t len);

/* An empty queue, open, with no idle_fd (set it before any thread uses q). */
void fq_init(struct frame_queue *q);
/*
 * Queues f; false (f not taken) when over the bound or closed.
 * *was_empty: it was.
 */
bool fq_push(struct frame_queue *q, struct frame *f, bool *was_empty);
/*
 * The oldest frame, unlinked (the caller frees it); NULL when none.  On
 * the tx queue the back end pops a frame only once done with the one
 * before, so a pop that finds q empty means it is idle: idle_fd is kicked
 * then if fq_busy asked for it.
 */
struct frame *fq_pop(struct frame_queue *q);
/* Frees every frame queued; how many there were. */
unsigned fq_clear(struct frame_queue *q);
/*
 * Closes q and frees what it holds, under one hold of its lock, so a
 * frame another thread adds at the same moment is either among those
 * freed (counted in the return) or refused: none waits in q for
 * fq_open.  How many were freed.
 */
unsigned fq_close(struct frame_queue *q);
/* Opens q again: it takes frames from now on. */
void fq_open(struct frame_queue *q);
/*
 * The NIC's side, for struct netdev_ops' tx_busy: whether q holds frames,
 * or the back end still works on the last it popped; if so, q->idle_fd is
 * kicked once it has neither (its next pop finds q empty, or q is closed).
 */
bool fq_busy(struct frame_queue *q);
void fq_destroy(struct frame_queue *q);

/*
 * The NIC's side, as struct netdev_ops has it.  fq_send copies len bytes
 * of iov into q and kicks wake_fd when q was empty (the back end empties
 * q after each wake, so one kick per batch is enough); false when
 * len is no Ethernet frame's, q is full or closed (both seen before any
 * allocation or copy), or memory ran out.
 */
bool fq_send(struct frame_queue *q, int wake_fd, const struct iovec *iov, unsigned n,
	     size_t len);
/* The length of q's oldest frame; 0 when none, rx_fd (q's kick) then cleared. */
size_t fq_peek(struct frame_queue *q, int rx_fd);
/* Copies q's oldest frame into iov (NULL: only forgets it), then frees it. */
void fq_take(struct frame_queue *q, const struct iovec *iov, unsigned n);

/*
 * The back end's side: a copy of len bytes at buf queued on rx for the
 * guest, and nd->rx_fd kicked; a frame rx has no room for (seen before
 * the copy, as fq_send's) is dropped and counted in nd->rx_dropped (false).
 */
bool fq_deliver(struct frame_queue *rx, struct netdev *nd, const void *buf, size_t len);

/*
 * Makes an eventfd readable; a full counter already is.  Any other
 * failure is a bug (a closed or wrong fd): one line, then abort().
 */
void eventfd_kick(int fd);
/* Reads an eventfd's count away, so poll() waits for the next kick; a
 * failure but EAGAIN is a bug, as eventfd_kick's. */
void eventfd_clear(int fd);

/*
 * Starts fn(arg) on a thread named name (15 bytes at most), with every
 * signal blocked there: signals are main's, and SIGPIPE is nobody's.
 * 0, or the error pthread_create gave.
 */
int net_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);

struct iothread;
/* The same for an event loop's thread: iothread_start(t)'s result. */
int net_loop_start(struct iothread *t);

#endif
