// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Image locking, byte for byte as QEMU's file driver locks (so that
 * brisk, QEMU and qemu-storage-daemon see each other's locks): open file
 * description (OFD) read locks on single bytes far past any header, one
 * byte per permission held (LOCK_PERM_BASE + bit) and one per permission
 * the holder does not let others have (LOCK_SHARED_BASE + bit).  Read
 * locks never conflict with each other, so taking them always works; a
 * conflict is found by asking whether a write lock could be had on the
 * byte that would tell of it.  OFD locks belong to the open file, not the
 * process: two -drive of one brisk on one file meet as two processes
 * would, and the locks go when the file's last descriptor closes.
 *
 * So the locks are held by an open file of their own, which nothing else
 * shares: the file that serves I/O may outlive brisk for a moment (a
 * SIGKILLed process's io_uring lets go of its files only once the
 * kernel's teardown of the ring is done, after the process is reaped),
 * and a daemon restarted at once would find its own ghost's locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "block-int.h"
#include "util/log.h"

#define LOCK_PERM_BASE 100
#define LOCK_SHARED_BASE 200

/* QEMU's permission bits, in its order (include/block/block-common.h). */
static const char *const perm_names[BLK_PERM_BITS] = {
	"consistent read", "write", "write unchanged", "resize",
};

static int lock_byte(int fd, int cmd, short type, off_t byte, struct flock *fl)
{
	*fl = (struct flock){ .l_type = type, .l_whence = SEEK_SET, .l_start = byte,
			      .l_len = 1 };
	return fcntl(fd, cmd, fl);
}

/* Whether some other open file holds a lock on byte. */
static int byte_taken(int fd, off_t byte, bool *taken)
{
	struct flock fl;

	if (lock_byte(fd, F_OFD_GETLK, F_WRLCK, byte, &fl) < 0)
		return -1;
	*taken = fl.l_type != F_UNLCK;
	return 0;
}

/*
 * 1 after one line if another open file holds byte (QEMU's "Failed to get
 * ... lock"), 0 if none does, -1 with errno if the file cannot tell.
 */
static int conflict(int fd, const char *what, off_t byte, const char *kind,
		    const char *perm, const char *why)
{
	bool taken;

	if (byte_taken(fd, byte, &taken) < 0)
		return -1;
	if (taken)
		error_report("%s: Failed to get %s\"%s\" lock: another process (or -drive) "
			     "has the image and %s (file.locking=off skips the check)", what,
			     kind, perm, why);
	return taken;
}

int blk_lock_open(int fd, const char *what, unsigned perm, unsigned shared)
{
	unsigned unshared = ~shared & ((1u << BLK_PERM_BITS) - 1);
	struct flock fl;
	/* Read-only whatever the image's mode: a read lock needs no more. */
	int lfd = blk_reopen(fd, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (lfd < 0)
		goto fail;
	for (unsigned i = 0; i < BLK_PERM_BITS; i++) {
		if (((perm >> i) & 1) &&
		    lock_byte(lfd, F_OFD_SETLK, F_RDLCK, LOCK_PERM_BASE + i, &fl) < 0)
			goto fail;
		if (((unshared >> i) & 1) &&
		    lock_byte(lfd, F_OFD_SETLK, F_RDLCK, LOCK_SHARED_BASE + i, &fl) < 0)
			goto fail;
	}
	/*
	 * Taken first, checked after, as QEMU does: of two openers racing,
	 * each sees the other's locks and both refuse, never both proceed.
	 */
	for (unsigned i = 0; i < BLK_PERM_BITS; i++) {
		int r = 0;

		if ((perm >> i) & 1)
			r = conflict(lfd, what, LOCK_SHARED_BASE + i, "", perm_names[i],
				     "does not share that");
		if (!r && ((unshared >> i) & 1))
			r = conflict(lfd, what, LOCK_PERM_BASE + i, "shared ", perm_names[i],
				     "uses it for that");
		if (r < 0)
			goto fail;
		if (r) {
			close(lfd);
			return -1;
		}
	}
	return lfd;
fail:
	error_report("%s: cannot lock the image: %s (file.locking=off does without)",
		     what, strerror(errno));
	if (lfd >= 0)
		close(lfd);
	return -1;
}
