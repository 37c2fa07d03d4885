/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_UTIL_IOTHREAD_H
#define BRISK_UTIL_IOTHREAD_H

#include <pthread.h>
#include <stdbool.h>

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
/* Once this returns, fn is not running and will not run again for fd. */
void iothread_del_fd(struct iothread *t, int fd);
int iothread_start(struct iothread *t);
/* Runs ready handlers once, waiting up to timeout_ms; returns how many ran. */
int iothread_poll(struct iothread *t, int timeout_ms);
/* Stops and joins the thread, then frees it. */
void iothread_free(struct iothread *t);

#endif
