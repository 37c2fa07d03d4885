// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/loader.h"
#include "util/log.h"

int loader_open_file(const char *what, const char *path, uint64_t *size)
{
	/* O_NONBLOCK: a FIFO's open() would wait for a writer, for ever. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	if (fd < 0) {
		error_report("cannot open %s '%s': %s", what, path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))) {
		error_report("%s '%s' is not a regular file or block device", what, path);
		close(fd);
		return -1;
	}
	*size = st.st_size;
	if (S_ISBLK(st.st_mode) && ioctl(fd, BLKGETSIZE64, size) < 0) {
		error_report("%s '%s': cannot get its size: %s", what, path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int loader_pread_all(const char *what, int fd, void *dst, uint64_t size)
{
	uint64_t done = 0;

	while (done < size) {
		ssize_t n = pread(fd, (uint8_t *)dst + done, size - done, done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			error_report("cannot read %s: %s", what,
				     n ? strerror(errno) : "file shrank");
			return -1;
		}
		done += n;
	}
	return 0;
}

int loader_read_file(const char *what, const char *path, size_t min,
		     size_t max, uint8_t **buf, size_t *size)
{
	uint64_t len;
	int fd = loader_open_file(what, path, &len);

	*buf = NULL;
	if (fd < 0)
		return -1;
	if (len < min || len > max) {
		error_report("%s '%s' is %llu bytes; %zu to %zu expected", what,
			     path, (unsigned long long)len, min, max);
		close(fd);
		return -1;
	}
	*buf = malloc(len ? len : 1);
	if (!*buf) {
		error_report("out of memory reading %s '%s'", what, path);
		close(fd);
		return -1;
	}
	if (loader_pread_all(what, fd, *buf, len)) {
		close(fd);
		return -1;
	}
	close(fd);
	*size = len;
	return 0;
}
