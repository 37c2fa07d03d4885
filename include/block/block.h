/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_BLOCK_BLOCK_H
#define BRISK_BLOCK_BLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

struct iothread;

/*
 * block/ knows files, not virtio.  A blk_file is an open image; a
 * blk_queue is one submission/completion channel on one I/O thread
 * (virtio-blk uses one per virtqueue).  Requests are staged with
 * blk_queue_add() and go to the kernel together at blk_queue_submit(), so
 * a batch of popped requests costs one syscall.  Every add is followed by
 * a submit before the handler that added returns: a request added and
 * never submitted waits until the queue is freed.  Completions run
 * req->cb on the queue's I/O thread; a read the page cache answers may
 * complete within blk_queue_submit() itself (its callback and its batch's
 * end run before the submit returns).
 */
enum blk_aio { BLK_AIO_IO_URING, BLK_AIO_THREADS };
enum blk_cache { BLK_CACHE_WRITEBACK, BLK_CACHE_NONE };

struct blk_file_opts {
	const char *path;
	/* What messages call the file ("-drive file=disk.raw"); path if NULL. */
	const char *label;
	/*
	 * Appended to a refused read-write open (EACCES, EROFS): how the
	 * caller's user asks for a read-only one.  NULL: nothing.
	 */
	const char *ro_hint;
	bool readonly;
	/*
	 * QEMU's image locks (block/lock.c), held while the file is open: a
	 * writer takes read and write and shares read, a reader takes read;
	 * neither shares write or resize.  An image another process (QEMU,
	 * qemu-storage-daemon, another brisk) holds in a way that conflicts
	 * is refused with one line.
	 */
	bool lock;
	/*
	 * The format was not given: refuse a file whose first bytes are
	 * another image format's header (qcow2, vmdk, LUKS...), which served
	 * raw would let the guest overwrite the image's metadata; and fail
	 * (EPERM) a write that would put such a header in its first sector,
	 * as QEMU does, lest a later open without a format follow what the
	 * guest wrote there.
	 */
	bool probe;
	enum blk_cache cache;
	/*
	 * Serve a private copy of the image (QEMU's -snapshot): the guest's
	 * writes go to an unlinked file in $TMPDIR (default /var/tmp, else
	 * /tmp), gone at exit; the image is only read, while the copy is made
	 * (with a reader's lock, the copy then holding none).
	 */
	bool snapshot;
};

/*
 * O_DIRECT bounce buffers: at most BLK_BOUNCE_MAX bytes of them in flight
 * per file, each at most BLK_BOUNCE_WINDOW bytes (a larger request moves
 * through its buffer a window at a time).
 */
#define BLK_BOUNCE_MAX (64ull << 20)
#define BLK_BOUNCE_WINDOW (1ull << 20)

struct blk_file;
struct blk_queue;
struct blk_req;

/*
 * What a device may know of its file; the rest of struct blk_file is
 * block/'s own (block/block-int.h).  Sizes in bytes.
 */
struct blk_file_info {
	const char *path;
	uint64_t size;
	bool readonly;
	bool direct;		/* opened O_DIRECT (cache=none) */
	/*
	 * The host's logical and physical block, a block device's I/O sizes
	 * (0: it says nothing), and what O_DIRECT demands of offsets and
	 * lengths (1 without it).
	 */
	unsigned int lbs, pbs, io_min, io_opt, align;
};

/* Opens and checks the file; on failure one error_report() line and NULL. */
struct blk_file *blk_file_open(const struct blk_file_opts *opts);
void blk_file_close(struct blk_file *f);
void blk_file_info(const struct blk_file *f, struct blk_file_info *info);
/* fdatasync() unless read-only; -1 with errno if it fails. */
int blk_file_flush(struct blk_file *f);

enum blk_op {
	BLK_OP_READ,
	BLK_OP_WRITE,
	BLK_OP_FLUSH,		/* fdatasync */
	/*
	 * A hint, skipped where the host cannot: a hole punched in a file,
	 * BLKDISCARD on a block device (whole logical blocks within the
	 * range); never zeros written in its place.
	 */
	BLK_OP_DISCARD,
	BLK_OP_WRITE_ZEROES,	/* unmap: may punch a hole instead of writing */
};

struct blk_req {
	enum blk_op op;
	uint64_t offset;	/* bytes */
	/*
	 * Bytes: the range of a DISCARD / WRITE_ZEROES; for a READ / WRITE,
	 * the sum of its iovec, which the caller counted (block/ trusts it
	 * and does not walk the vector again).
	 */
	uint64_t len;
	bool unmap;		/* WRITE_ZEROES only */
	/*
	 * WRITE / WRITE_ZEROES: on stable storage before it completes
	 * (RWF_DSYNC, or an fdatasync after zeroing), for a guest that was
	 * not told of a volatile cache.
	 */
	bool fua;
	struct iovec *iov;	/* READ / WRITE; the backend may advance it */
	int iovcnt;
	/*
	 * res: bytes transferred (whole request), 0, or -errno.  A read that
	 * meets the end of the file is -EIO: the device checked the range, so
	 * the file shrank under us.
	 */
	void (*cb)(struct blk_req *req, int64_t res);
	/* backend-private */
	uint64_t done;
	int err;
	int fail;		/* -errno: complete with it, without any I/O */
	bool syncing;		/* fua: the zeroing is done, its sync is not */
	uint8_t gate;		/* what it holds of, or waits for at, the file's gate */
	struct blk_queue *owner;	/* while parked: the queue to resume it on */
	struct blk_req *next;
};

/*
 * Adds the queue's completion eventfd to t.  blk_queue_add() and
 * blk_queue_submit() belong to t: call them from its handlers (or from one
 * thread while t is not running).  The queue takes no locks on that path.
 * With BLK_AIO_IO_URING, a kernel that refuses io_uring (sysctl, seccomp)
 * gets aio=threads instead, said once on stderr.  NULL after one
 * error_report() line on failure.
 */
struct blk_queue *blk_queue_new(struct blk_file *f, struct iothread *t,
				enum blk_aio aio);
void blk_queue_add(struct blk_queue *q, struct blk_req *req);
void blk_queue_submit(struct blk_queue *q);
/*
 * For an I/O thread that polls: whether completions are waiting (checked
 * without a syscall; always false for a backend that cannot tell), and
 * running them now rather than when the completion eventfd is served.
 */
bool blk_queue_poll_ready(struct blk_queue *q);
void blk_queue_poll_run(struct blk_queue *q);
/*
 * Optional: fn(opaque) runs on the queue's I/O thread right after each
 * batch of completion callbacks (everything the backend had ready at
 * once), so a device can answer them together: one flush, one interrupt,
 * and no wakeup of its own to find them.  Not after blk_queue_free().
 */
void blk_queue_set_batch_done(struct blk_queue *q, void (*fn)(void *opaque),
			      void *opaque);
/*
 * Waits for everything in flight to complete (callbacks run), then frees.
 * Call it from any thread once nothing else will add to q (the device has
 * removed its kick handlers).  It first detaches q from its I/O thread,
 * which waits for a running completion handler to return; from then on q
 * belongs to the caller, and the callbacks of the remaining requests run on
 * the calling thread, so they must only touch what the caller may touch at
 * teardown (a reset device just marks them dropped).  Requests still
 * waiting at the file's gate (block/align.c) complete -ECANCELED without
 * any I/O.  No callback runs after it returns.  Callbacks must not call
 * blk_queue_free() themselves, and the queue's iothread must outlive it
 * (free the queue first).
 */
void blk_queue_free(struct blk_queue *q);
/* The backend really in use (io_uring may fall back to threads). */
enum blk_aio blk_queue_aio(const struct blk_queue *q);

#endif
