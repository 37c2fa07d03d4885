/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_BLOCK_BLOCK_INT_H
#define BRISK_BLOCK_BLOCK_INT_H

/* Shared by the backends of block/; nothing outside block/ includes it. */
#include <errno.h>
#include <stddef.h>

#include "block/block.h"

struct blk_file {
	int fd;
	int lock_fd;		/* holds the image's locks (block/lock.c); -1: none */
	uint64_t size;		/* bytes */
	bool readonly;
	bool direct;		/* opened O_DIRECT */
	bool probed;		/* raw by its header: the first sector's writes are probed too */
	bool blockdev;		/* a host block device, not a regular file */
	/*
	 * The host's logical block (512 to 4096): a block device's own, 512
	 * for a regular file.  pbs: what the host writes whole, as far as
	 * brisk can tell (a block device's physical block, at least lbs and
	 * align).  io_min, io_opt: a block device's I/O sizes, 0 when it
	 * says nothing.  All in bytes.
	 */
	unsigned int lbs, pbs, io_min, io_opt;
	/*
	 * What O_DIRECT demands (1 without it): offsets and lengths in
	 * multiples of align, buffers on mem_align.  block/align.c makes
	 * any request of whole 512-byte sectors fit (see there).
	 */
	unsigned int align, mem_align;
	/*
	 * align > 512: a write of part of a host block is a read-modify-write,
	 * and writes pass the file's gate (block/align.c).
	 */
	bool serialise;
	/* The gate: under lock, shared by every queue of the file. */
	pthread_mutex_t lock;
	uint64_t bounce_bytes;	/* bounce buffers taken */
	unsigned int writes;	/* tracked writes in flight */
	bool rmw;		/* a read-modify-write in flight: alone */
	struct blk_req *wait_head, *wait_tail;	/* parked, first come first served */
	char *path;
	bool error_reported;	/* error_report_once() flag */
	bool fallback_reported;	/* "io_uring unavailable" said once */
	/* Learnt from EOPNOTSUPP, never cleared; read and set atomically. */
	bool no_punch_hole;
	bool no_zero_range;
	bool no_discard;	/* BLKDISCARD, block devices */
	bool no_nowait;		/* preadv2(RWF_NOWAIT) refused for good (EOPNOTSUPP...) */
};

/* QEMU's block permissions, the bits block/lock.c locks bytes for. */
enum {
	BLK_PERM_CONSISTENT_READ = 1 << 0,
	BLK_PERM_WRITE = 1 << 1,
	BLK_PERM_WRITE_UNCHANGED = 1 << 2,
	BLK_PERM_RESIZE = 1 << 3,
	BLK_PERM_BITS = 4,
};

/*
 * A new open file of what fd is open on (not a dup: its own offset and
 * locks), with flags; -1 with errno.
 */
int blk_reopen(int fd, int flags);

/*
 * Locks fd's image for perm, letting others have shared (and nothing
 * else): returns the descriptor of a new open file of the image that
 * holds the locks until it is closed, or -1 after one line naming what
 * (a conflict, or a file system that cannot lock).
 */
int blk_lock_open(int fd, const char *what, unsigned perm, unsigned shared);

/* block/probe.c: what QEMU probes of an image, its first 512 bytes. */
#define BLK_PROBE_LEN 512
/* The format whose header starts buf (n bytes), or NULL: none, raw. */
const char *blk_probe_format(const uint8_t *buf, size_t n);
/*
 * A WRITE of a probed file that reaches its first sector (checked by
 * blk_req_check()): 0, or -EPERM when the sector would then carry another
 * format's header (-EINVAL when the write is not of whole sectors from 0).
 */
int blk_probe_write(const struct blk_req *req);

struct blk_queue_ops {
	void (*add)(struct blk_queue *q, struct blk_req *req);
	void (*submit)(struct blk_queue *q);
	void (*free)(struct blk_queue *q);
	/* Optional: completions found without a syscall, and running them. */
	bool (*poll_ready)(struct blk_queue *q);
	void (*poll_run)(struct blk_queue *q);
};

/* Every backend embeds this first and reaches its own with container_of. */
struct blk_queue {
	const struct blk_queue_ops *ops;
	struct blk_file *f;
	struct iothread *t;
	enum blk_aio aio;
	bool closing;		/* blk_queue_free() has begun */
	/* blk_queue_set_batch_done(); also run for aux's completions. */
	void (*batch_done)(void *opaque);
	void *batch_opaque;
	struct blk_queue *owner;	/* aux: the queue it works for */
	/*
	 * Worker threads on the same I/O thread for what io_uring cannot
	 * do without blocking (BLKDISCARD), made at first need.
	 */
	struct blk_queue *aux;
	/*
	 * Requests the file's gate let through on another thread, for this
	 * one to hand to the backend (under f->lock); resume_fd wakes it.
	 * -1 where nothing can wait at the gate (no O_DIRECT).
	 */
	int resume_fd;
	struct blk_req *resume_head, *resume_tail;
};

/* Hands req to the backend now (the discard worker threads included). */
void blk_queue_go(struct blk_queue *q, struct blk_req *req);

/*
 * block/align.c: O_DIRECT for requests of any 512-byte sectors from any
 * buffers (bounce buffers, read-modify-write, the file's gate), and
 * WRITE_ZEROES of part of a block a host block device would refuse.
 */
void blk_align_file_init(struct blk_file *f);
/* True when it took req (parked, bounced or split); false: go on with it. */
bool blk_align_add(struct blk_queue *q, struct blk_req *req);
/* The resume eventfd of a queue on f, where requests may wait. */
int blk_align_queue_init(struct blk_queue *q);
/* Before the backend is freed: its waiters fail -ECANCELED, the let-through go. */
void blk_align_queue_fini(struct blk_queue *q);
/* A tracked write is done: the gate lets the next ones through. */
void blk_gate_leave(struct blk_file *f, uint8_t gate, uint64_t bytes);

/* Returns NULL with -errno in *err when io_uring itself is unusable. */
struct blk_queue *blk_uring_new(struct blk_file *f, struct iothread *t,
				int *err);
struct blk_queue *blk_threads_new(struct blk_file *f, struct iothread *t);

/* Size of the zero buffer used when fallocate cannot zero a range. */
#define BLK_ZERO_BUF_SIZE (64 * 1024)
void *blk_zero_buf_alloc(void);

/*
 * Checks a request against the file before it reaches the kernel; returns
 * 0, or the -errno the request completes with without any I/O.
 */
int blk_req_check(const struct blk_file *f, const struct blk_req *req);

/* Drops n transferred bytes from the front of req->iov. */
void blk_iov_advance(struct blk_req *req, size_t n);

/* How a DISCARD or WRITE_ZEROES request is carried out right now. */
enum blk_zero_how { BLK_ZERO_PUNCH, BLK_ZERO_RANGE, BLK_ZERO_WRITE,
		    BLK_ZERO_SKIP, BLK_ZERO_BLKDISCARD };
enum blk_zero_how blk_zero_how(const struct blk_file *f,
			       const struct blk_req *req);
int blk_zero_fallocate_mode(enum blk_zero_how how);
/* The file said EOPNOTSUPP to `how`: never try it again. */
void blk_zero_unsupported(struct blk_file *f, enum blk_zero_how how);
static inline bool blk_err_unsupported(int err)
{
	return err == -EOPNOTSUPP || err == -ENOSYS;
}

/*
 * A block device's discard: BLKDISCARD on the whole logical blocks inside
 * the range (it refuses others).  Blocks; for worker threads.
 */
int blk_discard_blkdev(struct blk_file *f, const struct blk_req *req);

/* Final step of every request, on the thread that owns the queue. */
void blk_req_finish(struct blk_queue *q, struct blk_req *req, int64_t res);
/* After a backend has run a batch of completions (n of them). */
void blk_queue_batch_end(struct blk_queue *q, unsigned n);

/*
 * Test seam: an io_uring queue hands its submission queue to fn instead
 * of io_uring_submit(), so a test can make the kernel refuse it.
 */
struct io_uring;
typedef int (*blk_uring_submit_fn)(struct io_uring *ring, void *opaque);
void blk_uring_set_submit(struct blk_queue *q, blk_uring_submit_fn fn,
			  void *opaque);

#endif
