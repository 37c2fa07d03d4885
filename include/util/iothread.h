/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_UTIL_IOTHREAD_H
#define BRISK_UTIL_IOTHREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * An I/O thread: an epoll loop over eventfds (virtqueue kicks, io_uring
 * completions).  Request processing runs here, never on vCPU threads.
 * Tests may skip iothread_start() and turn the loop by hand with
 * iothread_poll().
 */
typedef void (*iothread_fn)(void *opaque);

struct iothread;

struct iothread *iothread_new(const char *name);
/* Handlers of one iothread never run concurrently with each other. */
int iothread_add_fd(struct iothread *t, int fd, iothread_fn fn, void *opaque);
/*
 * An eventfd whose handler does not read it (edge-triggered), sparing a
 * read per wakeup: a write runs fn once more after it, however many
 * writes came before the thread looked, and a write from inside fn (a
 * handler that stops early and asks to be run again) runs it again.  fn
 * must take all the work there is, as nothing calls it again for work it
 * leaves without such a write.
 */
int iothread_add_event(struct iothread *t, int fd, iothread_fn fn, void *opaque);
/* Once this returns, fn is not running and will not run again for fd. */
void iothread_del_fd(struct iothread *t, int fd);
/*
 * Stops (on false) or resumes watching an added fd for input, keeping its
 * handler: for a level-triggered source whose consumer cannot take what
 * waits yet.  An error or hangup on fd still calls the handler.
 */
void iothread_watch_fd(struct iothread *t, int fd, bool on);
/*
 * Polling.  A poller is a source of work that can be checked without a
 * syscall (a virtqueue's avail ring, an io_uring completion ring).  Before
 * it sleeps, a thread with pollers and a nonzero maximum spins for a while
 * checking them, with their wakeups turned off (quiesce(true): a virtqueue
 * stops asking for kicks), and turns the wakeups back on before sleeping.
 * The window adapts between 0 and the maximum to how long the thread
 * actually sat idle (iothread_poll_adapt()).  ready() and run() run with the thread's handlers,
 * never concurrently with them.
 */
struct iothread_poller {
	bool (*ready)(void *opaque);
	void (*run)(void *opaque);
	void (*quiesce)(void *opaque, bool quiet);
	void *opaque;
};

/* At most 64 per thread; -1 with ENOSPC beyond. */
int iothread_add_poller(struct iothread *t, const struct iothread_poller *p);
void iothread_del_poller(struct iothread *t, void *opaque);
/*
 * The polling window, adapted after each idle period of idle_ns spent
 * with it (from the loop's last work to the end of the handlers its wait
 * ran): unchanged when it covered the period; 0 past max; otherwise
 * grown (4 us, then doubling, up to max), from 0 only once two periods in
 * a row fit under max.
 */
struct iothread_poll_window {
	uint64_t ns;
	unsigned fits;		/* periods in a row that fit, while ns is 0 */
};
void iothread_poll_adapt(struct iothread_poll_window *w, uint64_t idle_ns, uint64_t max);
/* Before iothread_start(); 0 (the default) never polls. */
void iothread_set_poll_max(struct iothread *t, uint64_t ns);
/*
 * Before iothread_start(), for tests: the window open at max from the
 * start, so that no preemption of the thread outlasts it and ends a spin
 * the test is judging.
 */
void iothread_open_poll_window(struct iothread *t);
int iothread_start(struct iothread *t);
/* Runs ready handlers once, waiting up to timeout_ms; returns how many ran. */
int iothread_poll(struct iothread *t, int timeout_ms);
/* Stops and joins the thread, then frees it. */
void iothread_free(struct iothread *t);

#endif
