/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_LOOP_H
#define BRISK_TESTS_LOOP_H

/*
 * A host block device for tests: a loop device over a file, with the
 * logical block size the test asks for, and the device's own I/O
 * counters (/sys/block/loopN/stat), which tell a discard from a write and
 * count the flushes that reach it.  Needs root; loop_attach() says why
 * not otherwise, for the test to report as a skip.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct loopdev {
	int fd;
	int nr;
	char path[32];
	bool dirty;		/* a queue limit was changed: remake the device */
};

/* Fields of /sys/block/<dev>/stat (Documentation/block/stat.rst). */
enum loop_stat {
	LOOP_STAT_WRITES = 4,
	LOOP_STAT_DISCARDS = 11,
	LOOP_STAT_FLUSHES = 15,
};

/* 0, or -1 with *why set to a reason to skip. */
static inline int loop_attach(struct loopdev *l, const char *file,
			      unsigned block_size, const char **why)
{
	int ctl, bfd;

	memset(l, 0, sizeof(*l));
	l->fd = -1;
	if (geteuid() != 0) {
		*why = "needs root for a loop device";
		return -1;
	}
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0) {
		*why = "no loop device support (/dev/loop-control)";
		return -1;
	}
	bfd = open(file, O_RDWR | O_CLOEXEC);
	/* Another process may take the free device first: ask again. */
	for (int tries = 0; bfd >= 0 && tries < 20; tries++) {
		struct loop_config c = {
			.fd = (unsigned)bfd, .block_size = block_size,
			.info.lo_flags = LO_FLAGS_AUTOCLEAR,
		};

		l->nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (l->nr < 0)
			break;
		snprintf(l->path, sizeof(l->path), "/dev/loop%d", l->nr);
		l->fd = open(l->path, O_RDWR | O_CLOEXEC);
		if (l->fd >= 0 && ioctl(l->fd, LOOP_CONFIGURE, &c) == 0)
			break;
		if (l->fd >= 0)
			close(l->fd);
		l->fd = -1;
		if (errno != EBUSY)
			break;
	}
	if (bfd >= 0)
		close(bfd);
	close(ctl);
	if (l->fd < 0) {
		*why = "cannot set up a loop device (LOOP_CONFIGURE)";
		return -1;
	}
	return 0;
}

/*
 * Limits written through sysfs outlive the backing file (some, like a
 * zero discard_max_bytes, cannot even be written back): a device whose
 * limits were changed is removed and made afresh under its number.
 */
static inline void loop_detach(struct loopdev *l)
{
	int ctl;

	if (l->fd < 0)
		return;
	ioctl(l->fd, LOOP_CLR_FD, 0);
	close(l->fd);
	l->fd = -1;
	if (!l->dirty)
		return;
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return;
	for (int tries = 0; tries < 100; tries++) {
		if (ioctl(ctl, LOOP_CTL_REMOVE, l->nr) >= 0 || errno != EBUSY)
			break;
		usleep(10000);
	}
	ioctl(ctl, LOOP_CTL_ADD, l->nr);
	close(ctl);
}

/* One counter of the device's stat file; -1 if unreadable. */
static inline long long loop_stat(const struct loopdev *l, enum loop_stat field)
{
	char path[64];
	long long v[17] = { 0 };
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/block/loop%d/stat", l->nr);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
		   &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15], &v[16]);
	fclose(f);
	return n > (int)field ? v[field] : -1;
}

/* Writes a queue limit of the device (e.g. "discard_max_bytes"). */
static inline bool loop_set_queue(struct loopdev *l, const char *attr,
				  const char *val)
{
	char path[96];
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "/sys/block/loop%d/queue/%s", l->nr, attr);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	l->dirty = true;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok;
}

#endif
