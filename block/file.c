// SPDX-License-Identifier: GPL-2.0-or-later
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "block-int.h"
#include "util/log.h"

/* Sector size the device exposes; images must be whole sectors. */
#define BLK_SECTOR 512u

static bool blk_pow2(unsigned int v, unsigned int max)
{
	return v && !(v & (v - 1)) && v <= max;
}

/* What a host block device says of itself; 0 where it says nothing. */
static void blk_bdev_geometry(struct blk_file *f)
{
	int lbs = 0;
	unsigned int pbs = 0, io_min = 0, io_opt = 0;

	if (ioctl(f->fd, BLKSSZGET, &lbs) == 0 && lbs > 0)
		f->lbs = (unsigned int)lbs;
	if (ioctl(f->fd, BLKPBSZGET, &pbs) == 0)
		f->pbs = pbs;
	if (ioctl(f->fd, BLKIOMIN, &io_min) == 0)
		f->io_min = io_min;
	if (ioctl(f->fd, BLKIOOPT, &io_opt) == 0)
		f->io_opt = io_opt;
}

/*
 * The host's blocks and, with O_DIRECT, the alignment the kernel demands
 * of offsets, lengths and buffers.  Odd values (not a power of two, or
 * beyond a page) are not trusted: a page is.
 */
static void blk_file_geometry(struct blk_file *f, const struct stat *st)
{
	unsigned int offset = 0, mem = 0;

	f->lbs = BLK_SECTOR;
	if (S_ISBLK(st->st_mode))
		blk_bdev_geometry(f);
#ifdef STATX_DIOALIGN
	struct statx stx;

	if (f->direct && statx(f->fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) == 0 &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		offset = stx.stx_dio_offset_align;
		mem = stx.stx_dio_mem_align;
	}
#endif
	if (!blk_pow2(f->lbs, 4096))
		f->lbs = 4096;
	if (!f->direct) {
		f->align = f->mem_align = 1;
	} else {
		f->align = offset > f->lbs && blk_pow2(offset, 4096) ? offset : f->lbs;
		f->mem_align = blk_pow2(mem, 4096) ? mem : f->align;
	}
	/* What the host writes whole, as far as brisk can tell. */
	if (!blk_pow2(f->pbs, 1u << 20) || f->pbs < f->lbs || f->pbs < f->align)
		f->pbs = f->lbs > f->align ? f->lbs : f->align;
	if (f->io_min % f->lbs)
		f->io_min = 0;
	if (f->io_opt % f->lbs)
		f->io_opt = 0;
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
	f->blockdev = S_ISBLK(st.st_mode);
	blk_file_geometry(f, &st);
	/* A block device serves whole logical blocks: a tail past the last is not there. */
	if (f->blockdev)
		f->size &= ~(uint64_t)(f->lbs - 1);
	if (f->size == 0) {
		error_report("%s: is empty", path);
		return -1;
	}
	if (f->size % BLK_SECTOR) {
		error_report("%s: size %" PRIu64 " is not a multiple of %u",
			     path, f->size, BLK_SECTOR);
		return -1;
	}
	/*
	 * O_DIRECT reaches the last block only whole, and writing it whole
	 * would grow the file past the size the guest was given.
	 */
	if (f->size % f->align) {
		error_report("%s: cache=none: size %" PRIu64 " is not a multiple of "
			     "the %u-byte blocks O_DIRECT takes here (use cache=writeback, "
			     "or resize the image)", path, f->size, f->align);
		return -1;
	}
	return 0;
}

/*
 * Bytes [from, to) of src into dst at the same offsets: in the kernel
 * where it can, through a buffer where it cannot (across filesystems,
 * say, from 9p to tmpfs).
 */
static int blk_copy_range(int src, int dst, off_t from, off_t to)
{
	const size_t bufsz = 1 << 20;
	char *buf = NULL;
	bool in_kernel = true;

	while (from < to) {
		size_t want = (size_t)(to - from);
		ssize_t n;

		if (in_kernel) {
			off_t out = from;

			n = copy_file_range(src, &from, dst, &out, want, 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL ||
				      errno == EOPNOTSUPP || errno == ENOSYS)) {
				in_kernel = false;
				continue;
			}
		} else {
			if (!buf && !(buf = malloc(bufsz)))
				return -1;
			n = pread(src, buf, want < bufsz ? want : bufsz, from);
			if (n > 0 && pwrite(dst, buf, (size_t)n, from) != n)
				n = -1;
			if (n > 0)
				from += n;
		}
		if (n <= 0) {
			errno = n ? errno : EIO;	/* 0: the image shrank */
			free(buf);
			return -1;
		}
	}
	free(buf);
	return 0;
}

/*
 * The snapshot's copy: a clone where the filesystem shares extents
 * (FICLONE), else the image's data extents copied, holes left holes, so a
 * sparse image costs what it holds.  Returns the copy's fd, open O_RDWR.
 */
static int blk_snapshot_copy(const char *path)
{
	const char *dir = getenv("TMPDIR");
	bool fallback = !dir || !*dir;
	int src, dst = -1;
	struct stat st;
	off_t pos = 0;

	if (fallback)
		dir = "/var/tmp";
	src = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (src < 0) {
		error_report("%s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(src, &st) < 0 || !S_ISREG(st.st_mode)) {
		error_report("%s: snapshot=on needs a regular file", path);
		goto fail;
	}
	dst = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	/*
	 * Minimal roots (containers, initramfs) often lack a writable
	 * /var/tmp; an explicit $TMPDIR is honoured as given.
	 */
	if (dst < 0 && fallback) {
		dir = "/tmp";
		dst = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	}
	if (dst < 0) {
		error_report("%s: snapshot=on: no temporary file in %s: %s", path,
			     dir, strerror(errno));
		goto fail;
	}
	if (!ioctl(dst, FICLONE, src))
		goto done;
	if (ftruncate(dst, st.st_size) < 0)
		goto io_fail;
	while (pos < st.st_size) {
		off_t data = lseek(src, pos, SEEK_DATA), end;

		if (data < 0 && errno == ENXIO)
			break;		/* only a hole is left */
		end = data < 0 ? -1 : lseek(src, data, SEEK_HOLE);
		if (end < 0)
			goto io_fail;
		if (blk_copy_range(src, dst, data, end) < 0)
			goto io_fail;
		pos = end;
	}
done:
	close(src);
	return dst;
io_fail:
	error_report("%s: snapshot=on: copying the image to %s: %s", path, dir,
		     strerror(errno));
fail:
	if (dst >= 0)
		close(dst);
	close(src);
	return -1;
}

/* The copy, again with the open flags a file gets (O_DIRECT...). */
static int blk_snapshot_open(const char *path, int flags)
{
	char self[32];
	int copy = blk_snapshot_copy(path), fd;

	if (copy < 0)
		return -1;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", copy);
	fd = open(self, flags);
	if (fd < 0)
		error_report("%s: snapshot=on: reopening the copy: %s", path,
			     strerror(errno));
	close(copy);
	return fd;
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
	if (opts->snapshot && !opts->readonly) {
		f->fd = blk_snapshot_open(opts->path, flags);
		if (f->fd < 0)
			goto fail;
	} else {
		f->fd = open(opts->path, flags);
	}
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
	blk_align_file_init(f);
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

void blk_file_info(const struct blk_file *f, struct blk_file_info *info)
{
	*info = (struct blk_file_info){
		.path = f->path, .size = f->size, .readonly = f->readonly,
		.direct = f->direct, .lbs = f->lbs, .pbs = f->pbs,
		.io_min = f->io_min, .io_opt = f->io_opt, .align = f->align,
	};
}

int blk_file_flush(struct blk_file *f)
{
	return f->readonly ? 0 : fdatasync(f->fd);
}

void blk_file_close(struct blk_file *f)
{
	if (!f)
		return;
	pthread_mutex_destroy(&f->lock);
	close(f->fd);
	free(f->path);
	free(f);
}
