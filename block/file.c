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
#include "util/compiler.h"
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
 * The snapshot's copy of src: a clone where the filesystem shares
 * extents (FICLONE), else the image's data extents copied, holes left
 * holes, so a sparse image costs what it holds.  Returns the copy's fd,
 * open O_RDWR.
 */
static int blk_snapshot_copy(int src, const char *what)
{
	const char *dir = getenv("TMPDIR");
	bool fallback = !dir || !*dir;
	int dst = -1;
	struct stat st;
	off_t pos = 0;

	if (fallback)
		dir = "/var/tmp";
	if (fstat(src, &st) < 0 || !S_ISREG(st.st_mode)) {
		error_report("%s: snapshot=on needs a regular file", what);
		return -1;
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
		error_report("%s: snapshot=on: no temporary file in %s: %s", what,
			     dir, strerror(errno));
		return -1;
	}
	if (!ioctl(dst, FICLONE, src))
		return dst;
	if (ftruncate(dst, st.st_size) < 0)
		goto fail;
	while (pos < st.st_size) {
		off_t data = lseek(src, pos, SEEK_DATA), end;

		if (data < 0 && errno == ENXIO)
			break;		/* only a hole is left */
		end = data < 0 ? -1 : lseek(src, data, SEEK_HOLE);
		if (end < 0)
			goto fail;
		if (blk_copy_range(src, dst, data, end) < 0)
			goto fail;
		pos = end;
	}
	return dst;
fail:
	error_report("%s: snapshot=on: copying the image to %s: %s", what, dir,
		     strerror(errno));
	close(dst);
	return -1;
}

int blk_reopen(int fd, int flags)
{
	char self[32];

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	return open(self, flags);
}

/*
 * f, open on the image read-only, becomes its private copy, open with
 * flags (O_RDWR, O_DIRECT...).  Closing the image lets go of its lock:
 * nothing reads it after the copy.
 */
static int blk_snapshot(struct blk_file *f, int flags, bool direct, const char *what)
{
	int copy = blk_snapshot_copy(f->fd, what), fd;

	if (copy < 0)
		return -1;
	fd = blk_reopen(copy, flags);
	if (fd < 0)
		error_report("%s: snapshot=on: reopening the copy: %s", what,
			     strerror(errno));
	close(copy);
	if (fd < 0)
		return -1;
	close(f->fd);
	if (f->lock_fd >= 0)
		close(f->lock_fd);
	f->lock_fd = -1;
	f->fd = fd;
	f->readonly = false;
	f->direct = direct;
	return blk_file_check(f, what);
}

#define PROBE_READ 4096u	/* a multiple of any O_DIRECT block brisk takes */

static int blk_probe(struct blk_file *f, const char *what)
{
	const char *format;
	uint8_t *buf;
	ssize_t n;

	if (posix_memalign((void **)&buf, PROBE_READ, PROBE_READ)) {
		error_report("%s: out of memory", what);
		return -1;
	}
	n = pread(f->fd, buf, PROBE_READ, 0);
	if (n < 0) {
		error_report("%s: reading its first sector: %s", what, strerror(errno));
		free(buf);
		return -1;
	}
	format = blk_probe_format(buf, (size_t)n);
	free(buf);
	if (format) {
		error_report("%s: looks like a %s image, and brisk serves raw images only "
			     "(format=raw serves its bytes as they are)", what, format);
		return -1;
	}
	f->probed = true;
	return 0;
}

struct blk_file *blk_file_open(const struct blk_file_opts *opts)
{
	const char *what = opts->label ? opts->label : opts->path;
	struct blk_file *f;
	/* A snapshot reads the image once, for its copy, not through O_DIRECT. */
	bool copy = opts->snapshot && !opts->readonly;
	bool direct = opts->cache == BLK_CACHE_NONE;
	/* O_NONBLOCK so a FIFO cannot hang us before fstat() rejects it. */
	int flags = O_CLOEXEC | O_NONBLOCK | (direct ? O_DIRECT : 0) |
		    (opts->readonly ? O_RDONLY : O_RDWR);
	unsigned perm = BLK_PERM_CONSISTENT_READ;

	f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(opts->path))) {
		error_report("%s: out of memory", what);
		free(f);
		return NULL;
	}
	f->lock_fd = -1;
	f->readonly = opts->readonly || copy;
	f->direct = direct && !copy;
	f->fd = open(opts->path, copy ? O_CLOEXEC | O_NONBLOCK | O_RDONLY : flags);
	if (f->fd < 0) {
		if (errno == EINVAL && f->direct)
			error_report("%s: cache=none: O_DIRECT not supported "
				     "here", what);
		else if ((errno == EACCES || errno == EROFS) && !f->readonly &&
			 opts->ro_hint)
			error_report("%s: %s (%s)", what, strerror(errno), opts->ro_hint);
		else
			error_report("%s: %s", what, strerror(errno));
		goto fail;
	}
	if (blk_file_check(f, what) < 0)
		goto fail;
	if (!f->readonly)
		perm |= BLK_PERM_WRITE;
	if (opts->lock &&
	    (f->lock_fd = blk_lock_open(f->fd, what, perm,
					BLK_PERM_CONSISTENT_READ | BLK_PERM_WRITE_UNCHANGED)) < 0)
		goto fail;
	if (opts->probe && blk_probe(f, what) < 0)
		goto fail;
	if (copy && blk_snapshot(f, flags, direct, what) < 0)
		goto fail;
	blk_align_file_init(f);
	if (fcntl(f->fd, F_SETFL, fcntl(f->fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		error_report("%s: %s", what, strerror(errno));
		goto fail;
	}
	return f;
fail:
	if (f->fd >= 0)
		close(f->fd);
	if (f->lock_fd >= 0)
		close(f->lock_fd);
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
	if (f->lock_fd >= 0)
		close(f->lock_fd);
	free(f->path);
	free(f);
}
