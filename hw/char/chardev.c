// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "hw/char/chardev.h"
#include "hw/machine.h"
#include "util/log.h"

#define CTRL_A 0x01

struct chardev {
	struct machine *m;
	int in_fd, out_fd;
	int wake_fd;		/* eventfd: kick or stop */
	bool tty;		/* in_fd is our raw-mode terminal: escapes apply */
	bool escape;		/* the previous input byte was Ctrl-A */
	bool stop;
	bool write_failed;
	bool started;
	pthread_t thread;
	chardev_rx_fn rx;
	void *opaque;
	uint8_t buf[256];	/* input read but not yet taken by rx */
	size_t head, tail;
};

/*
 * The terminal state to restore.  It lives outside any chardev because
 * atexit() and signal handlers take no argument; there is only one
 * controlling terminal per process anyway.
 */
static struct {
	struct termios saved;
	volatile sig_atomic_t raw;
	int fd;
} term;

void chardev_term_restore(void)
{
	if (term.raw) {
		term.raw = 0;
		tcsetattr(term.fd, TCSANOW, &term.saved);
	}
}

static void term_signal(int sig)
{
	chardev_term_restore();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void term_catch(int sig)
{
	struct sigaction old;

	/* Leave alone any handler the rest of brisk installed first. */
	if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
		struct sigaction sa = { .sa_handler = term_signal };

		sigemptyset(&sa.sa_mask);
		sigaction(sig, &sa, NULL);
	}
}

static void term_make_raw(int fd)
{
	struct termios t;

	/*
	 * A background job touching the terminal gets SIGTTOU/SIGTTIN and is
	 * stopped; such a brisk simply takes no input.
	 */
	if (term.raw || tcgetpgrp(fd) != getpgrp() || tcgetattr(fd, &t) < 0)
		return;
	term.saved = t;
	term.fd = fd;
	cfmakeraw(&t);
	/* Keep output processing: brisk's own messages end in a bare \n. */
	t.c_oflag |= OPOST;
	if (tcsetattr(fd, TCSANOW, &t) < 0)
		return;
	term.raw = 1;
	atexit(chardev_term_restore);
	term_catch(SIGTERM);
	term_catch(SIGINT);
	term_catch(SIGHUP);
	term_catch(SIGQUIT);
}

static struct chardev *chardev_alloc(struct machine *m, int in_fd, int out_fd)
{
	struct chardev *cd = calloc(1, sizeof(*cd));

	if (!cd) {
		error_report("serial: out of memory");
		goto fail;
	}
	cd->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cd->wake_fd < 0) {
		error_report("serial: eventfd: %s", strerror(errno));
		free(cd);
		goto fail;
	}
	cd->m = m;
	cd->in_fd = in_fd;
	cd->out_fd = out_fd;
	return cd;
fail:
	if (in_fd >= 0)
		close(in_fd);
	if (out_fd >= 0)
		close(out_fd);
	return NULL;
}

struct chardev *chardev_open_fds(struct machine *m, int in_fd, int out_fd)
{
	return chardev_alloc(m, in_fd, out_fd);
}

static struct chardev *chardev_open_stdio(struct machine *m)
{
	/* Own copies, so chardev_close() never closes fd 0 or 1 themselves. */
	int in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
	int out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	bool tty = in >= 0 && isatty(in);
	struct chardev *cd = chardev_alloc(m, in, out);

	if (!cd)
		return NULL;
	if (tty) {
		term_make_raw(STDIN_FILENO);
		cd->tty = term.raw;
		if (!cd->tty) {
			close(cd->in_fd);
			cd->in_fd = -1;
		}
	}
	return cd;
}

struct chardev *chardev_open(struct machine *m, const char *spec)
{
	if (!strcmp(spec, "stdio"))
		return chardev_open_stdio(m);
	if (!strcmp(spec, "none"))
		return chardev_alloc(m, -1, -1);
	if (!strcmp(spec, "file:")) {
		error_report("serial: file: needs a path");
		return NULL;
	}
	if (!strncmp(spec, "file:", 5)) {
		int fd = open(spec + 5, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd < 0) {
			error_report("serial: cannot open '%s': %s", spec + 5,
				     strerror(errno));
			return NULL;
		}
		return chardev_alloc(m, -1, fd);
	}
	error_report("serial: unknown backend '%s' (stdio, file:PATH or none)", spec);
	return NULL;
}

int chardev_check(const char *spec)
{
	const char *path = spec + 5;
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int r;

	if (strncmp(spec, "file:", 5) || !*path)
		return 0;
	if (stat(path, &st) == 0)
		r = S_ISDIR(st.st_mode) ? (errno = EISDIR, -1) : access(path, W_OK);
	else if (errno != ENOENT)
		r = -1;
	else if (!slash)
		r = access(".", W_OK | X_OK);
	else if (slash - path >= (ptrdiff_t)sizeof(dir))
		r = (errno = ENAMETOOLONG, -1);
	else {
		/* "/x" lies in "/" */
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
		r = access(dir, W_OK | X_OK);
	}
	if (r < 0)
		error_report("serial: cannot open '%s': %s", path, strerror(errno));
	return r;
}

void chardev_write(struct chardev *cd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len && cd->out_fd >= 0) {
		ssize_t n = write(cd->out_fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			error_report_once(&cd->write_failed, "serial: write: %s",
					  n < 0 ? strerror(errno) : "no progress");
			return;
		}
		p += n;
		len -= n;
	}
}

void chardev_kick(struct chardev *cd)
{
	uint64_t one = 1;

	if (write(cd->wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, a wake-up is pending anyway. */
	}
}

/*
 * Strips the Ctrl-A escapes out of buf[head, tail) in place.  Returns false
 * when the user asked to quit.
 */
static bool chardev_escapes(struct chardev *cd, size_t start)
{
	size_t out = start;

	for (size_t i = start; i < cd->tail; i++) {
		uint8_t c = cd->buf[i];

		if (cd->escape) {
			cd->escape = false;
			if (c == 'x' || c == 'X') {
				cd->tail = out;
				return false;
			}
			if (c == CTRL_A)
				cd->buf[out++] = c;
			/* Anything else after Ctrl-A is swallowed. */
		} else if (c == CTRL_A) {
			cd->escape = true;
		} else {
			cd->buf[out++] = c;
		}
	}
	cd->tail = out;
	return true;
}

static void chardev_quit(struct chardev *cd)
{
	chardev_term_restore();
	error_report("terminated by Ctrl-A x");
	cd->m->shutdown(cd->m, BRISK_EXIT_OK, NULL);
}

/* Reads what is there; false when input has ended for good. */
static bool chardev_fill(struct chardev *cd)
{
	ssize_t n;

	cd->head = cd->tail = 0;
	do
		n = read(cd->in_fd, cd->buf, sizeof(cd->buf));
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return true;
	if (n <= 0)
		return false;
	cd->tail = n;
	if (cd->tty && !chardev_escapes(cd, 0)) {
		chardev_quit(cd);
		return false;
	}
	return true;
}

static void *chardev_thread(void *opaque)
{
	struct chardev *cd = opaque;
	bool input = cd->in_fd >= 0;

	for (;;) {
		if (cd->head < cd->tail)
			cd->head += cd->rx(cd->opaque, cd->buf + cd->head,
					   cd->tail - cd->head);
		/* Pending bytes the consumer refused: wait for a kick only. */
		bool want_input = input && cd->head == cd->tail;
		struct pollfd pfd[2] = {
			{ .fd = cd->wake_fd, .events = POLLIN },
			{ .fd = cd->in_fd, .events = POLLIN },
		};

		if (poll(pfd, want_input ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			error_report("serial: poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents) {
			uint64_t v;

			if (read(cd->wake_fd, &v, sizeof(v)) < 0) {
				/* EAGAIN: another reader of the counter, none. */
			}
			if (__atomic_load_n(&cd->stop, __ATOMIC_ACQUIRE))
				break;
		}
		/* POLLHUP without data is EOF too: read() tells. */
		if (want_input && pfd[1].revents)
			input = chardev_fill(cd);
	}
	return NULL;
}

int chardev_start(struct chardev *cd, chardev_rx_fn rx, void *opaque)
{
	int err;

	cd->rx = rx;
	cd->opaque = opaque;
	if (cd->in_fd < 0)
		return 0;
	err = pthread_create(&cd->thread, NULL, chardev_thread, cd);
	if (err) {
		error_report("serial: cannot start input thread: %s", strerror(err));
		return -1;
	}
	cd->started = true;
	return 0;
}

void chardev_close(struct chardev *cd)
{
	if (!cd)
		return;
	if (cd->started) {
		__atomic_store_n(&cd->stop, true, __ATOMIC_RELEASE);
		chardev_kick(cd);
		pthread_join(cd->thread, NULL);
	}
	if (cd->tty)
		chardev_term_restore();
	if (cd->in_fd >= 0)
		close(cd->in_fd);
	if (cd->out_fd >= 0)
		close(cd->out_fd);
	close(cd->wake_fd);
	free(cd);
}

int chardev_attach(struct chardev *cd, const char *what, struct bus *bus,
		   uint64_t base, uint64_t len, const struct bus_ops *ops,
		   chardev_rx_fn rx, void *opaque)
{
	if (bus_register(bus, base, len, ops, opaque) < 0) {
		error_report("%s: %s %#llx-%#llx is taken", what, bus->name,
			     (unsigned long long)base,
			     (unsigned long long)(base + len - 1));
		return -1;
	}
	if (chardev_start(cd, rx, opaque) < 0) {
		bus_unregister(bus, base, opaque);
		return -1;
	}
	return 0;
}

void chardev_detach(struct chardev *cd, struct bus *bus, uint64_t base,
		    void *opaque)
{
	bus_unregister(bus, base, opaque);
	/* Joins the reader, so rx cannot run past this. */
	chardev_close(cd);
}
