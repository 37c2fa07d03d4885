// SPDX-License-Identifier: GPL-2.0-or-later
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/iothread.h"
#include "util/log.h"

#define IOTHREAD_MAX_EVENTS 64
#define IOTHREAD_MAX_POLLERS 64	/* a device may run all its queues on one thread */
/* Adaptive polling: the first window, and how it grows. */
#define POLL_START_NS 4000ull
#define POLL_GROW 2
#define POLL_FITS_TO_START 2
/*
 * While pollers keep finding work, the thread's fds (timers, completions
 * of other backends, other devices' kicks) still get a look every this
 * many turns: a busy queue must not starve them.
 */
#define POLL_FD_TURNS 8

struct iothread_handler {
	uint64_t id;		/* what epoll hands back: never reused */
	int fd;
	uint32_t events;	/* watched for: EPOLLIN, edge-triggered or not */
	iothread_fn fn;
	void *opaque;
	struct iothread_handler *next;
};

/* epoll data of the stop eventfd; handler ids start at 1. */
#define IOTHREAD_STOP_ID 0

struct iothread {
	char name[16];		/* what a thread name can hold */
	int epfd;
	int stop_fd;		/* written by iothread_free() to end the loop */
	pthread_t thread;
	bool started;		/* a thread was created: join it */
	bool running;		/* atomic: cleared by the stop event */
	/*
	 * Held while handlers run, so del_fd() from another thread waits for
	 * a running handler to finish.  Recursive: a handler may add or
	 * remove fds of its own thread.
	 */
	pthread_mutex_t lock;
	struct iothread_handler *handlers;
	uint64_t next_id;	/* under lock */
	/* under lock; npollers is also read, atomically, by the loop */
	struct iothread_poller pollers[IOTHREAD_MAX_POLLERS];
	unsigned npollers;
	/* I/O thread only, after start */
	uint64_t poll_max_ns;
	struct iothread_poll_window poll;	/* adapted to the idle times seen */
};

struct iothread *iothread_new(const char *name)
{
	struct iothread *t = calloc(1, sizeof(*t));
	pthread_mutexattr_t attr;

	if (!t)
		return NULL;
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (t->epfd < 0 || t->stop_fd < 0) {
		error_report("iothread %s: %s", name, strerror(errno));
		if (t->epfd >= 0)
			close(t->epfd);
		if (t->stop_fd >= 0)
			close(t->stop_fd);
		free(t);
		return NULL;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = IOTHREAD_STOP_ID };

	epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->stop_fd, &ev);
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&t->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	return t;
}

static int add_fd(struct iothread *t, int fd, uint32_t edge, iothread_fn fn,
		  void *opaque)
{
	struct iothread_handler *h = calloc(1, sizeof(*h));

	if (!h)
		return -1;
	pthread_mutex_lock(&t->lock);
	*h = (struct iothread_handler){
		.id = ++t->next_id, .fd = fd, .events = EPOLLIN | edge, .fn = fn,
		.opaque = opaque,
	};
	struct epoll_event ev = { .events = h->events, .data.u64 = h->id };

	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		pthread_mutex_unlock(&t->lock);
		free(h);
		return -1;
	}
	h->next = t->handlers;
	t->handlers = h;
	pthread_mutex_unlock(&t->lock);
	return 0;
}

int iothread_add_fd(struct iothread *t, int fd, iothread_fn fn, void *opaque)
{
	return add_fd(t, fd, 0, fn, opaque);
}

int iothread_add_event(struct iothread *t, int fd, iothread_fn fn, void *opaque)
{
	return add_fd(t, fd, EPOLLET, fn, opaque);
}

void iothread_del_fd(struct iothread *t, int fd)
{
	pthread_mutex_lock(&t->lock);
	for (struct iothread_handler **p = &t->handlers; *p; p = &(*p)->next) {
		struct iothread_handler *h = *p;

		if (h->fd != fd)
			continue;
		epoll_ctl(t->epfd, EPOLL_CTL_DEL, fd, NULL);
		*p = h->next;
		/*
		 * Events already fetched by a running poll may still carry
		 * h's id; it is looked up again before each call and no
		 * later handler gets the same id, so freeing is safe.
		 */
		free(h);
		break;
	}
	pthread_mutex_unlock(&t->lock);
}

void iothread_watch_fd(struct iothread *t, int fd, bool on)
{
	pthread_mutex_lock(&t->lock);
	for (struct iothread_handler *h = t->handlers; h; h = h->next) {
		if (h->fd != fd)
			continue;
		struct epoll_event ev = { .events = on ? h->events : 0, .data.u64 = h->id };

		/* MOD allocates nothing: it fails only for an fd closed while watched, a bug. */
		int ret = epoll_ctl(t->epfd, EPOLL_CTL_MOD, fd, &ev);

		assert(ret == 0);
		(void)ret;
		break;
	}
	pthread_mutex_unlock(&t->lock);
}

static struct iothread_handler *iothread_lookup(struct iothread *t, uint64_t id)
{
	for (struct iothread_handler *h = t->handlers; h; h = h->next)
		if (h->id == id)
			return h;
	return NULL;
}

int iothread_poll(struct iothread *t, int timeout_ms)
{
	/*
	 * 768 bytes that epoll_wait() fills before any is read: zeroing them
	 * cost a request at depth 1 about 200 instructions (docs/benchmarks.md,
	 * "What the hardening still cost").
	 */
	struct epoll_event ev[IOTHREAD_MAX_EVENTS] BRISK_UNINITIALIZED;
	int n, ran = 0;

	n = epoll_wait(t->epfd, ev, IOTHREAD_MAX_EVENTS, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -1;
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < n; i++) {
		struct iothread_handler *h;

		if (ev[i].data.u64 == IOTHREAD_STOP_ID) {
			__atomic_store_n(&t->running, false, __ATOMIC_RELEASE);
			continue;
		}
		/*
		 * A handler earlier in this batch may have removed this one,
		 * and added another that now sits at the same address.
		 */
		h = iothread_lookup(t, ev[i].data.u64);
		if (!h)
			continue;
		h->fn(h->opaque);
		ran++;
	}
	pthread_mutex_unlock(&t->lock);
	return ran;
}

int iothread_add_poller(struct iothread *t, const struct iothread_poller *p)
{
	int ret = -1;

	pthread_mutex_lock(&t->lock);
	if (t->npollers < IOTHREAD_MAX_POLLERS) {
		t->pollers[t->npollers] = *p;
		__atomic_store_n(&t->npollers, t->npollers + 1, __ATOMIC_RELAXED);
		ret = 0;
	} else {
		errno = ENOSPC;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void iothread_del_poller(struct iothread *t, void *opaque)
{
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->npollers; i++) {
		if (t->pollers[i].opaque != opaque)
			continue;
		t->pollers[i] = t->pollers[t->npollers - 1];
		__atomic_store_n(&t->npollers, t->npollers - 1, __ATOMIC_RELAXED);
		break;
	}
	pthread_mutex_unlock(&t->lock);
}

void iothread_set_poll_max(struct iothread *t, uint64_t ns)
{
	assert(!t->started);
	t->poll_max_ns = ns;
}

void iothread_open_poll_window(struct iothread *t)
{
	assert(!t->started);
	t->poll.ns = t->poll_max_ns;
}

/* Runs every poller that has work; returns how many did. */
static unsigned run_ready_pollers(struct iothread *t)
{
	unsigned ran = 0;

	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->npollers; i++) {
		struct iothread_poller *p = &t->pollers[i];

		if (p->ready(p->opaque)) {
			p->run(p->opaque);
			ran++;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return ran;
}

static void quiesce_pollers(struct iothread *t, bool quiet)
{
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->npollers; i++)
		t->pollers[i].quiesce(t->pollers[i].opaque, quiet);
	pthread_mutex_unlock(&t->lock);
}

/*
 * Spins with the pollers' wakeups turned off until poll_ns pass without
 * work, so a driver that keeps adding work never has to kick.  Other fds
 * are still served (epoll with no timeout) at least every POLL_FD_TURNS
 * turns, however busy the pollers are, and an idle turn yields:
 * on a host with fewer CPUs than busy threads the vCPUs must keep running,
 * or there is nothing to find.  Returns when work was last seen (since, if
 * none turned up).  A spin that ran out means a whole window passed idle:
 * the thread sleeps next, and that idle time sizes the next window.
 */
static uint64_t iothread_spin(struct iothread *t, uint64_t since)
{
	uint64_t end = since + t->poll.ns;
	unsigned busy_turns = 0;

	quiesce_pollers(t, true);
	do {
		bool work = run_ready_pollers(t);

		if (!work || ++busy_turns == POLL_FD_TURNS) {
			busy_turns = 0;
			work |= iothread_poll(t, 0) > 0;
		}
		if (work) {
			since = clock_now_ns();
			end = since + t->poll.ns;
		} else {
			sched_yield();
		}
	} while (__atomic_load_n(&t->running, __ATOMIC_ACQUIRE) && clock_now_ns() < end);
	/* Wakeups back on, then one last look: work may have come meanwhile. */
	quiesce_pollers(t, false);
	if (run_ready_pollers(t))
		since = clock_now_ns();
	return since;
}

/*
 * Polling pays when the thread would otherwise sleep only briefly: the
 * window grows while idle periods fit under the maximum.  One idle period
 * past it ends polling, and polling starts again only once two in a row
 * fit: a device whose gaps alternate (a short one for the driver's next
 * request, a long one for a disk) would otherwise spin a window's worth
 * for nothing on every request, and a driver that comes less often than
 * the maximum would pay a window each time.
 */
void iothread_poll_adapt(struct iothread_poll_window *w, uint64_t idle_ns, uint64_t max)
{
	if (idle_ns <= w->ns)
		return;
	if (idle_ns > max) {
		w->ns = 0;
		w->fits = 0;
		return;
	}
	if (!w->ns && ++w->fits < POLL_FITS_TO_START)
		return;
	w->ns = w->ns ? w->ns * POLL_GROW : POLL_START_NS;
	if (w->ns > max)
		w->ns = max;
}

static void *iothread_main(void *arg)
{
	struct iothread *t = arg;

	while (__atomic_load_n(&t->running, __ATOMIC_ACQUIRE)) {
		uint64_t idle_since = 0;
		int ran;

		if (t->poll_max_ns && __atomic_load_n(&t->npollers, __ATOMIC_RELAXED)) {
			idle_since = clock_now_ns();
			if (t->poll.ns)
				idle_since = iothread_spin(t, idle_since);
		}
		/*
		 * Nothing run (a signal, an event whose handler went): still
		 * the same idle period.  io_uring's completion work comes as a
		 * signal-like wakeup that ends the wait empty-handed: counted
		 * as an idle period of its own, it would make a disk's wait
		 * look like two short ones.
		 */
		do
			ran = iothread_poll(t, -1);
		while (ran == 0 && __atomic_load_n(&t->running, __ATOMIC_ACQUIRE));
		if (ran < 0)
			break;
		if (idle_since)
			iothread_poll_adapt(&t->poll, clock_now_ns() - idle_since,
					    t->poll_max_ns);
	}
	return NULL;
}

int iothread_start(struct iothread *t)
{
	__atomic_store_n(&t->running, true, __ATOMIC_RELEASE);
	if (pthread_create(&t->thread, NULL, iothread_main, t)) {
		__atomic_store_n(&t->running, false, __ATOMIC_RELEASE);
		return -1;
	}
	t->started = true;
	pthread_setname_np(t->thread, t->name);
	return 0;
}

void iothread_free(struct iothread *t)
{
	if (!t)
		return;
	if (t->started) {
		uint64_t one = 1;

		if (write(t->stop_fd, &one, sizeof(one)) < 0)
			abort();
		pthread_join(t->thread, NULL);
	}
	while (t->handlers) {
		struct iothread_handler *h = t->handlers;

		t->handlers = h->next;
		free(h);
	}
	close(t->stop_fd);
	close(t->epfd);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
