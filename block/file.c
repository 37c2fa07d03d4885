// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block/block.h"
#include "util/log.h"

/* Sector size the device exposes; images must be whole sectors. */
#define BLK_SECTOR 512u

static unsigned int blk_dio_align(int fd, const struct stat *st)
{
	unsigned int align = BLK_SECTOR;

	if (S_ISBLK(st->st_mode)) {
		int lbs = 0;

		if (ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0)
			align = (unsigned int)lbs;
		return align;
	}
#ifdef STATX_DIOALIGN
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		if (stx.stx_dio_offset_align > align)
			align = stx.stx_dio_offset_align;
		if (stx.stx_dio_mem_align > align)
			align = stx.stx_dio_mem_align;
	}
#endif
	/* Anything odd (not a power of two, huge) falls back to a page. */
	if (align & (align - 1) || align > 4096)
		align = 4096;
	return align;
}

static int blk_file_check(struct blk_file *f, const char *path)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0) {
		error_report("%s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		error_report("%s: is a directory", path);
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		f->size = (uint64_t)st.st_size;
	} else if (S_ISBLK(st.st_mode)) {
		if (ioctl(f->fd, BLKGETSIZE64, &f->size) < 0) {
			error_report("%s: cannot get size: %s", path,
				     strerror(errno));
			return -1;
		}
	} else {
		error_report("%s: not a regular file or block device", path);
		return -1;
	}
	if (f->size == 0) {
		error_report("%s: is empty", path);
		return -1;
	}
	if (f->size % BLK_SECTOR) {
		error_report("%s: size %" PRIu64 " is not a multiple of %u",
			     path, f->size, BLK_SECTOR);
		return -1;
	}
	f->align = f->direct ? blk_dio_align(f->fd, &st) : 1;
	return 0;
}

struct blk_file *blk_file_open(const struct blk_file_opts *opts)
{
	struct blk_file *f;
	/* O_NONBLOCK so a FIFO cannot hang us before fstat() rejects it. */
	int flags = O_CLOEXEC | O_NONBLOCK |
		    (opts->readonly ? O_RDONLY : O_RDWR);

	if (opts->cache == BLK_CACHE_NONE)
		flags |= O_DIRECT;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(opts->path))) {
		error_report("%s: out of memory", opts->path);
		free(f);
		return NULL;
	}
	f->readonly = opts->readonly;
	f->direct = opts->cache == BLK_CACHE_NONE;
	f->fd = open(opts->path, flags);
	if (f->fd < 0) {
		if (errno == EINVAL && f->direct)
			error_report("%s: cache=none: O_DIRECT not supported "
				     "here", opts->path);
		else
			error_report("%s: %s", opts->path, strerror(errno));
		goto fail;
	}
	if (blk_file_check(f, opts->path) < 0)
		goto fail;
	if (fcntl(f->fd, F_SETFL, fcntl(f->fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		error_report("%s: %s", opts->path, strerror(errno));
		goto fail;
	}
	return f;
fail:
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	free(f);
	return NULL;
}

void blk_file_close(struct blk_file *f)
{
	if (!f)
		return;
	close(f->fd);
	free(f->path);
	free(f);
}
