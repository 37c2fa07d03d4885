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
/* Adaptive polling: the first window, and how it grows and shrinks. */
#define POLL_START_NS 4000ull
#define POLL_GROW 2
#define POLL_SHRINK 2
/*
 * While pollers keep finding work, the thread's fds (timers, completions
 * of other backends, other devices' kicks) still get a look every this
 * many turns: a busy queue must not starve them.
 */
#define POLL_FD_TURNS 8

struct iothread_handler {
	uint64_t id;		/* what epoll hands back: never reused */
	int fd;
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
	uint64_t poll_ns;	/* current window, adapted to the idle times seen */
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

int iothread_add_fd(struct iothread *t, int fd, iothread_fn fn, void *opaque)
{
	struct iothread_handler *h = calloc(1, sizeof(*h));

	if (!h)
		return -1;
	pthread_mutex_lock(&t->lock);
	*h = (struct iothread_handler){
		.id = ++t->next_id, .fd = fd, .fn = fn, .opaque = opaque,
	};
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = h->id };

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
		struct epoll_event ev = { .events = on ? EPOLLIN : 0, .data.u64 = h->id };

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
	uint64_t end = since + t->poll_ns;
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
			end = since + t->poll_ns;
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
 * Polling pays when the thread would otherwise sleep only briefly: grow the
 * window while idle periods fit under the maximum, shrink it when they do
 * not, so an idle device stops spinning.
 */
static void adapt_poll(struct iothread *t, uint64_t idle_ns)
{
	if (idle_ns <= t->poll_ns)
		return;
	if (idle_ns > t->poll_max_ns) {
		t->poll_ns /= POLL_SHRINK;
		if (t->poll_ns < POLL_START_NS)
			t->poll_ns = 0;
	} else if (t->poll_ns < t->poll_max_ns) {
		t->poll_ns = t->poll_ns ? t->poll_ns * POLL_GROW : POLL_START_NS;
		if (t->poll_ns > t->poll_max_ns)
			t->poll_ns = t->poll_max_ns;
	}
}

static void *iothread_main(void *arg)
{
	struct iothread *t = arg;

	while (__atomic_load_n(&t->running, __ATOMIC_ACQUIRE)) {
		uint64_t idle_since = 0;

		if (t->poll_max_ns && __atomic_load_n(&t->npollers, __ATOMIC_RELAXED)) {
			idle_since = clock_now_ns();
			if (t->poll_ns)
				idle_since = iothread_spin(t, idle_since);
		}
		if (iothread_poll(t, -1) < 0)
			break;
		if (idle_since)
			adapt_poll(t, clock_now_ns() - idle_since);
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
