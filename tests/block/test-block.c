// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * block/ against real files, for both backends: data round trips, the
 * fallocate paths and their fallbacks, batches beyond the ring depth,
 * O_DIRECT, errors, teardown with requests in flight and the fallback from
 * io_uring to threads when io_uring is forbidden.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <liburing.h>

#include "block-int.h"
#include "loop.h"
#include "util/compiler.h"
#include "util/iothread.h"

#include "check.h"

#define FILE_SIZE (1024 * 1024)

static char dir[4000];
/* Why the running case did not run, when it did not. */
static const char *skip_why;

struct treq {
	struct blk_req r;
	struct iovec iov[16];
	int64_t res;
	bool done;
	int *count;
};

static void treq_cb(struct blk_req *r, int64_t res)
{
	struct treq *t = container_of(r, struct treq, r);

	t->res = res;
	t->done = true;
	__atomic_add_fetch(t->count, 1, __ATOMIC_RELAXED);
}

struct env {
	struct iothread *t;
	struct blk_file *f;
	struct blk_queue *q;
	char path[4200];
	int count;
};

static bool make_file(char *path, size_t n, const char *name, off_t size)
{
	int fd;

	snprintf(path, n, "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, size) < 0) {
		perror(path);
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	return true;
}

static bool env_open(struct env *e, enum blk_aio aio, bool readonly,
		     enum blk_cache cache)
{
	struct blk_file_opts o = { .path = e->path, .readonly = readonly,
				   .cache = cache };

	e->count = 0;
	e->t = iothread_new("test-io");
	e->f = e->t ? blk_file_open(&o) : NULL;
	e->q = e->f ? blk_queue_new(e->f, e->t, aio) : NULL;
	return e->q != NULL;
}

static bool env_setup(struct env *e, enum blk_aio aio)
{
	return make_file(e->path, sizeof(e->path), "disk.raw", FILE_SIZE) &&
	       env_open(e, aio, false, BLK_CACHE_WRITEBACK);
}

static void env_close(struct env *e)
{
	blk_queue_free(e->q);
	blk_file_close(e->f);
	iothread_free(e->t);
	unlink(e->path);
}

/* Turns the loop by hand until `want` callbacks ran, or ten seconds. */
static bool wait_count(struct env *e, int want)
{
	for (int i = 0; i < 1000 && e->count < want; i++)
		iothread_poll(e->t, 10);
	return e->count == want;
}

static void treq_init(struct env *e, struct treq *t, enum blk_op op,
		      uint64_t off)
{
	memset(t, 0, sizeof(*t));
	t->r.op = op;
	t->r.offset = off;
	t->r.iov = t->iov;
	t->r.cb = treq_cb;
	t->count = &e->count;
	t->res = 1234567;
}

/* Adds t to q, with a READ/WRITE's len counted from its iovec. */
static void tadd(struct blk_queue *q, struct treq *t)
{
	if (t->r.op == BLK_OP_READ || t->r.op == BLK_OP_WRITE) {
		t->r.len = 0;
		for (int i = 0; i < t->r.iovcnt; i++)
			t->r.len += t->r.iov[i].iov_len;
	}
	blk_queue_add(q, &t->r);
}

/* Runs reqs as one batch; every callback must arrive exactly once. */
static bool run(struct env *e, struct treq *reqs, int n)
{
	int base = e->count;

	for (int i = 0; i < n; i++)
		tadd(e->q, &reqs[i]);
	blk_queue_submit(e->q);
	return wait_count(e, base + n);
}

static bool io1(struct env *e, enum blk_op op, uint64_t off, void *buf,
		size_t len, int64_t *res)
{
	struct treq t;

	treq_init(e, &t, op, off);
	t.iov[0] = (struct iovec){ buf, len };
	t.r.iovcnt = 1;
	if (!run(e, &t, 1))
		return false;
	*res = t.res;
	return true;
}

/* A 4 KiB write, durable before completion or not. */
static bool io1_fua(struct env *e, enum blk_op op, uint64_t off, void *buf, bool fua)
{
	struct treq t;

	treq_init(e, &t, op, off);
	t.iov[0] = (struct iovec){ buf, 4096 };
	t.r.iovcnt = 1;
	t.r.fua = fua;
	return run(e, &t, 1) && t.res == 4096;
}

static bool zero1(struct env *e, enum blk_op op, uint64_t off, uint64_t len,
		  bool unmap, int64_t *res)
{
	struct treq t;

	treq_init(e, &t, op, off);
	t.r.len = len;
	t.r.unmap = unmap;
	if (!run(e, &t, 1))
		return false;
	*res = t.res;
	return true;
}

static void fill(unsigned char *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 131 + i * 7 + (i >> 9) + 1);
}

static bool is_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* --- tests, each run for both backends --- */

static bool t_scatter(struct env *e)
{
	static unsigned char src[20480], dst[20480];
	static const size_t wcut[] = { 512, 1536, 2048, 4096, 12288 };
	static const size_t rcut[] = { 100, 412, 3000, 1, 16967 };
	struct treq t;
	size_t pos = 0;

	fill(src, sizeof(src), 3);
	treq_init(e, &t, BLK_OP_WRITE, 8192);
	for (size_t i = 0; i < ARRAY_SIZE(wcut); pos += wcut[i++])
		t.iov[i] = (struct iovec){ src + pos, wcut[i] };
	t.r.iovcnt = ARRAY_SIZE(wcut);
	REQUIRE(run(e, &t, 1));
	REQUIRE(t.res == (int64_t)sizeof(src));

	treq_init(e, &t, BLK_OP_READ, 8192);
	pos = 0;
	for (size_t i = 0; i < ARRAY_SIZE(rcut); pos += rcut[i++])
		t.iov[i] = (struct iovec){ dst + pos, rcut[i] };
	t.r.iovcnt = ARRAY_SIZE(rcut);
	REQUIRE(pos == sizeof(dst));
	REQUIRE(run(e, &t, 1));
	REQUIRE(t.res == (int64_t)sizeof(dst));
	REQUIRE(memcmp(src, dst, sizeof(src)) == 0);

	/* Nothing around the written range was touched. */
	int64_t res;

	REQUIRE(io1(e, BLK_OP_READ, 0, dst, 8192, &res) && res == 8192);
	REQUIRE(is_zero(dst, 8192));
	return true;
}

static bool t_flush(struct env *e)
{
	static unsigned char buf[4096];
	struct treq t[2];

	fill(buf, sizeof(buf), 9);
	treq_init(e, &t[0], BLK_OP_WRITE, 0);
	t[0].iov[0] = (struct iovec){ buf, sizeof(buf) };
	t[0].r.iovcnt = 1;
	treq_init(e, &t[1], BLK_OP_FLUSH, 0);
	REQUIRE(run(e, &t[0], 1));
	REQUIRE(run(e, &t[1], 1));
	REQUIRE(t[0].res == 4096 && t[1].res == 0);
	return true;
}

/* Writes a pattern over 256 KiB, zeroes [64K, 64K+len) and checks both. */
static bool zero_case(struct env *e, enum blk_op op, bool unmap,
		      uint64_t len)
{
	static unsigned char buf[256 * 1024], want[256 * 1024];
	int64_t res;

	fill(want, sizeof(want), (unsigned int)len);
	REQUIRE(io1(e, BLK_OP_WRITE, 0, want, sizeof(want), &res));
	REQUIRE(res == (int64_t)sizeof(want));
	REQUIRE(zero1(e, op, 65536, len, unmap, &res));
	REQUIRE(res == 0);
	memset(want + 65536, 0, len);
	REQUIRE(io1(e, BLK_OP_READ, 0, buf, sizeof(buf), &res));
	REQUIRE(res == (int64_t)sizeof(buf));
	REQUIRE(memcmp(buf, want, sizeof(buf)) == 0);
	return true;
}

static bool t_discard(struct env *e)
{
	return zero_case(e, BLK_OP_DISCARD, true, 32768);
}

static bool t_write_zeroes(struct env *e)
{
	return zero_case(e, BLK_OP_WRITE_ZEROES, false, 32768);
}

static bool t_write_zeroes_unmap(struct env *e)
{
	return zero_case(e, BLK_OP_WRITE_ZEROES, true, 32768);
}

/* As if the filesystem knew neither hole punching nor zero ranges. */
static bool t_write_zeroes_by_writing(struct env *e)
{
	e->f->no_punch_hole = true;
	e->f->no_zero_range = true;
	/* Larger than the zero buffer, so it takes several writes. */
	REQUIRE(zero_case(e, BLK_OP_WRITE_ZEROES, true, 3 * 65536 - 4096));
	return true;
}

static bool t_batch(struct env *e)
{
	enum { N = 600, SZ = 1024 };	/* more than the ring holds */
	static struct treq t[N];
	static unsigned char bufs[N][SZ], want[SZ];

	for (int i = 0; i < N; i++) {
		fill(bufs[i], SZ, (unsigned int)i);
		treq_init(e, &t[i], BLK_OP_WRITE, (uint64_t)i * SZ);
		t[i].iov[0] = (struct iovec){ bufs[i], SZ };
		t[i].r.iovcnt = 1;
	}
	REQUIRE(run(e, t, N));
	for (int i = 0; i < N; i++)
		REQUIRE(t[i].done && t[i].res == SZ);
	memset(bufs, 0, sizeof(bufs));
	for (int i = 0; i < N; i++) {
		treq_init(e, &t[i], BLK_OP_READ, (uint64_t)i * SZ);
		t[i].iov[0] = (struct iovec){ bufs[i], SZ };
		t[i].r.iovcnt = 1;
	}
	REQUIRE(run(e, t, N));
	for (int i = 0; i < N; i++) {
		fill(want, SZ, (unsigned int)i);
		REQUIRE(t[i].res == SZ && memcmp(bufs[i], want, SZ) == 0);
	}
	return true;
}

/*
 * The batch-done hook runs after the callbacks of each batch, never for
 * an empty one, and not while the queue is being freed.
 */
struct hook {
	struct env *e;
	int calls, seen;
	bool grew;
};

static void hook_fn(void *opaque)
{
	struct hook *h = opaque;

	h->grew &= h->e->count > h->seen;
	h->seen = h->e->count;
	h->calls++;
}

static bool t_batch_done(struct env *e)
{
	enum { N = 300, SZ = 512 };
	static struct treq t[N];
	static unsigned char bufs[N][SZ];
	struct hook h = { .e = e, .grew = true };
	int calls;

	blk_queue_set_batch_done(e->q, hook_fn, &h);
	for (int i = 0; i < N; i++) {
		treq_init(e, &t[i], BLK_OP_READ, (uint64_t)i * SZ);
		t[i].iov[0] = (struct iovec){ bufs[i], SZ };
		t[i].r.iovcnt = 1;
	}
	CHECK(run(e, t, N));
	/* The last batch's hook saw every callback of the run. */
	CHECK(h.calls >= 1 && h.calls <= N && h.grew && h.seen == e->count);
	calls = h.calls;
	for (int i = 0; i < 8; i++)
		blk_queue_add(e->q, &t[i].r);
	blk_queue_submit(e->q);
	blk_queue_free(e->q);
	e->q = NULL;
	CHECK(e->count == N + 8 && h.calls == calls);
	return true;
}

/*
 * io_uring: what the thread watches is the ring itself, readable exactly
 * while completions wait.  Once a poller (or the kick that submitted, as
 * virtio-blk's does) reaped them all, the thread has nothing to wake for;
 * a completion nobody reaped still wakes it.
 */
static bool t_reaped_quiet(struct env *e)
{
	static struct treq t[2];
	static unsigned char buf[2][4096];

	/* Writes: a lone read of the page cache would never reach the ring. */
	for (int i = 0; i < 2; i++) {
		treq_init(e, &t[i], BLK_OP_WRITE, (uint64_t)i * 4096);
		t[i].iov[0] = (struct iovec){ buf[i], sizeof(buf[i]) };
		t[i].r.iovcnt = 1;
	}
	tadd(e->q, &t[0]);
	blk_queue_submit(e->q);
	for (int i = 0; i < 10000 && !blk_queue_poll_ready(e->q); i++)
		usleep(1000);
	CHECK(blk_queue_poll_ready(e->q));
	blk_queue_poll_run(e->q);
	CHECK(e->count == 1 && t[0].res == 4096);
	CHECK(!blk_queue_poll_ready(e->q));
	CHECK(iothread_poll(e->t, 0) == 0);
	tadd(e->q, &t[1]);
	blk_queue_submit(e->q);
	CHECK(wait_count(e, 2) && t[1].res == 4096);
	CHECK(iothread_poll(e->t, 0) == 0);
	return true;
}

/*
 * A callback that queues more work on its own queue, as a device may.  A
 * read the page cache answers may complete within the submit, its
 * callback inside this one; but not without end, or a long chain would
 * run the thread out of stack.
 */
struct chain {
	struct treq t;
	struct blk_queue *q;
	int left;
	int depth, deepest;
};

static void chain_cb(struct blk_req *r, int64_t res)
{
	struct chain *c = container_of(r, struct chain, t.r);

	c->t.res = res;
	if (++c->depth > c->deepest)
		c->deepest = c->depth;
	if (res == 4096 && --c->left > 0) {
		c->t.iov[0].iov_len = 4096;
		c->t.r.iov = c->t.iov;
		c->t.r.iovcnt = 1;
		tadd(c->q, &c->t);
		blk_queue_submit(c->q);
		c->depth--;
		return;
	}
	c->depth--;
	__atomic_add_fetch(c->t.count, 1, __ATOMIC_RELAXED);
}

static bool t_resubmit_from_callback(struct env *e)
{
	static unsigned char buf[4096];
	struct chain c = { .q = e->q, .left = 50 };

	treq_init(e, &c.t, BLK_OP_READ, 0);
	c.t.r.cb = chain_cb;
	c.t.iov[0] = (struct iovec){ buf, sizeof(buf) };
	c.t.r.iovcnt = 1;
	REQUIRE(run(e, &c.t, 1));
	REQUIRE(c.left == 0 && c.t.res == 4096);
	REQUIRE(c.deepest <= 2);
	return true;
}

static bool t_truncated(struct env *e)
{
	static unsigned char a[4096], b[4096];
	struct treq t[3];

	/* The file shrinks behind brisk's back: reads past it must fail. */
	REQUIRE(truncate(e->path, FILE_SIZE / 2) == 0);
	treq_init(e, &t[0], BLK_OP_READ, 0);
	t[0].iov[0] = (struct iovec){ a, sizeof(a) };
	t[0].r.iovcnt = 1;
	treq_init(e, &t[1], BLK_OP_READ, FILE_SIZE - 4096);
	t[1].iov[0] = (struct iovec){ b, sizeof(b) };
	t[1].r.iovcnt = 1;
	/* Straddles the new end: the first half reads, then EOF. */
	treq_init(e, &t[2], BLK_OP_READ, FILE_SIZE / 2 - 2048);
	t[2].iov[0] = (struct iovec){ b, sizeof(b) };
	t[2].r.iovcnt = 1;
	REQUIRE(run(e, t, 3));
	REQUIRE(t[0].res == 4096);
	REQUIRE(t[1].res == -EIO);
	REQUIRE(t[2].res == -EIO);
	REQUIRE(e->f->error_reported);
	return true;
}

static bool t_bad_requests(struct env *e)
{
	static unsigned char buf[4096];
	struct treq t[4];

	treq_init(e, &t[0], BLK_OP_READ, FILE_SIZE - 512);
	t[0].iov[0] = (struct iovec){ buf, 1024 };
	t[0].r.iovcnt = 1;
	treq_init(e, &t[1], BLK_OP_WRITE_ZEROES, UINT64_MAX - 511);
	t[1].r.len = 1024;
	treq_init(e, &t[2], BLK_OP_READ, 0);
	t[2].r.iovcnt = -1;
	treq_init(e, &t[3], BLK_OP_READ, 4096);
	t[3].iov[0] = (struct iovec){ buf, 0 };
	t[3].r.iovcnt = 1;
	REQUIRE(run(e, t, 4));
	REQUIRE(t[0].res == -EINVAL && t[1].res == -EINVAL);
	REQUIRE(t[2].res == -EINVAL);
	REQUIRE(t[3].res == 0);
	return true;
}

static bool t_readonly(struct env *e, enum blk_aio aio)
{
	static unsigned char buf[4096];
	int64_t res;

	blk_queue_free(e->q);
	blk_file_close(e->f);
	iothread_free(e->t);
	REQUIRE(env_open(e, aio, true, BLK_CACHE_WRITEBACK));
	REQUIRE(e->f->readonly);
	REQUIRE(io1(e, BLK_OP_READ, 0, buf, sizeof(buf), &res) && res == 4096);
	REQUIRE(io1(e, BLK_OP_WRITE, 0, buf, sizeof(buf), &res));
	REQUIRE(res == -EBADF);
	REQUIRE(zero1(e, BLK_OP_DISCARD, 0, 4096, true, &res) && res == -EBADF);
	REQUIRE(e->f->error_reported);
	return true;
}

/* Opens e's file again with O_DIRECT: 0, 1 for a skip (said), -1. */
static int env_reopen_direct(struct env *e, enum blk_aio aio)
{
	struct blk_file_opts o = { .path = e->path, .cache = BLK_CACHE_NONE };
	struct blk_file *f = blk_file_open(&o);

	if (!f) {
		skip_why = "the test directory's filesystem rejects O_DIRECT";
		return 1;
	}
	blk_file_close(f);
	blk_queue_free(e->q);
	blk_file_close(e->f);
	iothread_free(e->t);
	return env_open(e, aio, false, BLK_CACHE_NONE) ? 0 : -1;
}

static bool t_direct(struct env *e, enum blk_aio aio)
{
	int reopen = env_reopen_direct(e, aio);
	unsigned char *w, *r;
	struct treq t;

	if (reopen)
		return reopen > 0;
	REQUIRE(e->f->direct && (e->f->align == 512 || e->f->align == 4096 ||
			       e->f->align == 1024 || e->f->align == 2048));
	w = aligned_alloc(4096, 65536);
	r = aligned_alloc(4096, 65536);
	REQUIRE(w && r);
	fill(w, 65536, 77);
	memset(r, 0, 65536);
	treq_init(e, &t, BLK_OP_WRITE, 131072);
	t.iov[0] = (struct iovec){ w, 16384 };
	t.iov[1] = (struct iovec){ w + 16384, 49152 };
	t.r.iovcnt = 2;
	REQUIRE(run(e, &t, 1) && t.res == 65536);
	treq_init(e, &t, BLK_OP_READ, 131072);
	t.iov[0] = (struct iovec){ r, 4096 };
	t.iov[1] = (struct iovec){ r + 4096, 61440 };
	t.r.iovcnt = 2;
	/* Alone, but O_DIRECT: never read within the submit, on the I/O thread. */
	tadd(e->q, &t);
	blk_queue_submit(e->q);
	REQUIRE(!t.done);
	REQUIRE(wait_count(e, 2) && t.res == 65536);
	REQUIRE(memcmp(w, r, 65536) == 0);
	free(w);
	free(r);
	return true;
}

/*
 * O_DIRECT with buffers the kernel refuses (a header and data in one guest
 * buffer put the data at +16): the request goes through an aligned bounce
 * buffer and succeeds, and the data lands where it should.
 */
static bool t_direct_misaligned(struct env *e, enum blk_aio aio)
{
	int reopen = env_reopen_direct(e, aio);
	unsigned char *w, *r, *back;
	struct treq t;

	if (reopen)
		return reopen > 0;
	w = aligned_alloc(4096, 3 * 4096);
	r = aligned_alloc(4096, 3 * 4096);
	back = aligned_alloc(4096, 8192);
	REQUIRE(w && r && back);
	fill(w, 3 * 4096, 21);
	memset(r, 0xee, 3 * 4096);
	/* 8 KiB from +16, in two pieces of odd placement and length. */
	treq_init(e, &t, BLK_OP_WRITE, 65536);
	t.iov[0] = (struct iovec){ w + 16, 1000 };
	t.iov[1] = (struct iovec){ w + 16 + 1000, 8192 - 1000 };
	t.r.iovcnt = 2;
	REQUIRE(run(e, &t, 1) && t.res == 8192);
	treq_init(e, &t, BLK_OP_READ, 65536);
	t.iov[0] = (struct iovec){ r + 16, 8192 };
	t.r.iovcnt = 1;
	REQUIRE(run(e, &t, 1) && t.res == 8192);
	REQUIRE(memcmp(r + 16, w + 16, 8192) == 0);
	REQUIRE(r[15] == 0xee && r[16 + 8192] == 0xee);	/* not a byte more */
	/* And what the file holds, read aligned. */
	treq_init(e, &t, BLK_OP_READ, 65536);
	t.iov[0] = (struct iovec){ back, 8192 };
	t.r.iovcnt = 1;
	REQUIRE(run(e, &t, 1) && t.res == 8192);
	REQUIRE(memcmp(back, w + 16, 8192) == 0);
	REQUIRE(e->f->bounce_bytes == 0);
	free(w);
	free(r);
	free(back);
	return true;
}

/*
 * More bounce buffers than a file may hold (BLK_BOUNCE_MAX): 80 misaligned
 * reads of 1 MiB in one batch, and an 80 MiB misaligned write, larger than
 * the cap on its own.  None fails: past the cap they wait their turn, and
 * the large one moves through a bounce window at a time.  The bounce
 * bytes held never pass the cap.
 */
enum { BP_N = 80, BP_LEN = 1 << 20, BP_BIG = BP_N * BP_LEN };

static const struct blk_file *bp_file;
static uint64_t bp_peak;

/* Runs on this thread, as does every change of the count (one queue). */
static void bp_cb(struct blk_req *r, int64_t res)
{
	if (bp_peak < bp_file->bounce_bytes)
		bp_peak = bp_file->bounce_bytes;
	treq_cb(r, res);
}

static bool t_direct_backpressure(struct env *e, enum blk_aio aio)
{
	static struct treq t[BP_N + 1];
	unsigned char *big = malloc(BP_BIG + 64), *bufs = malloc((size_t)BP_N * BP_LEN + 64);
	int reopen, ok = 0;

	REQUIRE(big && bufs);
	REQUIRE(truncate(e->path, 128 << 20) == 0);
	reopen = env_reopen_direct(e, aio);
	if (reopen) {
		free(big);
		free(bufs);
		return reopen > 0;
	}
	fill(big + 16, BP_BIG, 5);
	treq_init(e, &t[0], BLK_OP_WRITE, 8 << 20);
	t[0].iov[0] = (struct iovec){ big + 16, BP_BIG };
	t[0].r.iovcnt = 1;
	REQUIRE(run(e, t, 1) && t[0].res == BP_BIG);
	for (int i = 0; i < BP_N; i++) {
		treq_init(e, &t[i], BLK_OP_READ, (8 << 20) + (uint64_t)i * BP_LEN);
		t[i].iov[0] = (struct iovec){ bufs + 16 + (size_t)i * BP_LEN, BP_LEN };
		t[i].r.iovcnt = 1;
		t[i].r.cb = bp_cb;
	}
	bp_file = e->f;
	bp_peak = 0;
	REQUIRE(run(e, t, BP_N));
	for (int i = 0; i < BP_N; i++)
		ok += t[i].res == BP_LEN;
	REQUIRE(ok == BP_N);
	REQUIRE(memcmp(bufs + 16, big + 16, (size_t)BP_N * BP_LEN) == 0);
	REQUIRE(bp_peak == BLK_BOUNCE_MAX);	/* reached: the rest waited */
	REQUIRE(e->f->bounce_bytes == 0);
	free(big);
	free(bufs);
	return true;
}

/*
 * io_uring_submit fails where nothing else is in flight, so no completion
 * is due to take the SQ along: the queue must retry on its own.
 */
struct refuse {
	int left;		/* refusals still to come */
	int calls;
	int err;		/* the refusal: 0 is -ENOMEM, one that passes */
};

static int refusing_submit(struct io_uring *ring, void *opaque)
{
	struct refuse *r = opaque;

	r->calls++;
	if (r->left > 0) {
		r->left--;
		return r->err ? r->err : -ENOMEM;
	}
	return io_uring_submit(ring);
}

/*
 * A refusal for good (io_uring_enter(2) says EINVAL: a flag or opcode the
 * kernel will never take): the request fails with an I/O error at once,
 * tried once, not retried forever; the queue serves the next one.
 */
static bool t_submit_refused_for_good(struct env *e)
{
	static unsigned char buf[4096], back[4096];
	struct refuse r = { .left = 1000, .err = -EINVAL };
	int64_t res;

	blk_uring_set_submit(e->q, refusing_submit, &r);
	fill(buf, sizeof(buf), 35);
	REQUIRE(io1(e, BLK_OP_WRITE, 16384, buf, sizeof(buf), &res));
	REQUIRE(res == -EIO && r.calls == 1);
	REQUIRE(e->f->error_reported);
	REQUIRE(io1(e, BLK_OP_FLUSH, 0, NULL, 0, &res));
	REQUIRE(res == -EIO && r.calls == 2);
	blk_uring_set_submit(e->q, NULL, NULL);
	REQUIRE(io1(e, BLK_OP_WRITE, 16384, buf, sizeof(buf), &res) && res == 4096);
	REQUIRE(io1(e, BLK_OP_READ, 16384, back, sizeof(back), &res) && res == 4096);
	REQUIRE(memcmp(buf, back, sizeof(buf)) == 0);
	return true;
}

static bool t_submit_refused(struct env *e)
{
	static unsigned char buf[4096], back[4096];
	struct refuse r = { .left = 3 };
	int64_t res;

	blk_uring_set_submit(e->q, refusing_submit, &r);
	fill(buf, sizeof(buf), 33);
	REQUIRE(io1(e, BLK_OP_WRITE, 8192, buf, sizeof(buf), &res));
	REQUIRE(res == 4096 && r.left == 0 && r.calls >= 4);
	REQUIRE(e->f->error_reported);
	blk_uring_set_submit(e->q, NULL, NULL);
	REQUIRE(io1(e, BLK_OP_READ, 8192, back, sizeof(back), &res) && res == 4096);
	REQUIRE(memcmp(buf, back, sizeof(buf)) == 0);
	return true;
}

/*
 * The kernel refuses the submit again while the queue is being freed,
 * after its retry timer is gone.  Freeing must still complete the request
 * and leave alone whatever file now has the timer's old descriptor
 * number: here a timer of the test's own, made inside the refusal.
 */
struct refuse_at_free {
	struct refuse r;
	bool freeing;
	int fd;			/* the test's timer, made while freeing */
};

static int refusing_submit_at_free(struct io_uring *ring, void *opaque)
{
	struct refuse_at_free *a = opaque;

	if (a->freeing && a->fd < 0) {
		a->fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
		a->r.left = 1;
	}
	return refusing_submit(ring, &a->r);
}

static bool t_submit_refused_at_free(struct env *e)
{
	static unsigned char buf[4096];
	struct refuse_at_free a = { .r.left = 1, .fd = -1 };
	struct itimerspec its;
	struct treq t;
	int64_t res;

	blk_uring_set_submit(e->q, refusing_submit_at_free, &a);
	/* One refusal now: the queue makes its retry timer. */
	REQUIRE(io1(e, BLK_OP_WRITE, 0, buf, sizeof(buf), &res) && res == 4096);
	treq_init(e, &t, BLK_OP_READ, 4096);
	t.iov[0] = (struct iovec){ buf, sizeof(buf) };
	t.r.iovcnt = 1;
	tadd(e->q, &t);
	a.freeing = true;
	blk_queue_free(e->q);
	e->q = NULL;
	REQUIRE(t.done && t.res == 4096);
	REQUIRE(a.fd >= 0 && timerfd_gettime(a.fd, &its) == 0);
	REQUIRE(its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0);
	close(a.fd);
	return true;
}

/* Whether each page of [off, off + len) of path is in the page cache. */
static bool resident(const char *path, off_t off, size_t len, const bool want[])
{
	long pg = sysconf(_SC_PAGESIZE);
	unsigned char vec[64];
	size_t n = len / (size_t)pg;
	int fd = open(path, O_RDONLY);
	void *m;
	bool same = fd >= 0 && n <= sizeof(vec);

	m = same ? mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off) : MAP_FAILED;
	same = m != MAP_FAILED && mincore(m, len, vec) == 0;
	for (size_t i = 0; same && i < n; i++)
		same = (vec[i] & 1) == want[i];
	if (m != MAP_FAILED)
		munmap(m, len);
	if (fd >= 0)
		close(fd);
	return same;
}

/*
 * NULL when a read of a page the cache does not hold returns without it,
 * else why not: no RWF_NOWAIT at all, or a disk that answers within the
 * read (a RAM disk, a hole).
 */
static const char *nowait_misses(const char *path, off_t off)
{
	static unsigned char page[4096];
	struct iovec iov = { page, sizeof(page) };
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? preadv2(fd, &iov, 1, off, RWF_NOWAIT) : -1;
	int err = errno;

	if (fd >= 0)
		close(fd);
	if (n >= 0)
		return "a page-cache miss here is read within preadv2(RWF_NOWAIT)";
	return err == EAGAIN ? NULL : "no preadv2(RWF_NOWAIT) on the test directory's file system";
}

/* Drops the file's clean pages, then reads [keep, keep + 4096) back in alone. */
static bool evict_but(struct env *e, off_t keep)
{
	static unsigned char page[4096];
	int fd = open(e->path, O_RDONLY);
	bool ok = fd >= 0 && blk_file_flush(e->f) == 0 &&
		  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 &&
		  posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0 &&
		  (keep < 0 || pread(fd, page, sizeof(page), keep) == sizeof(page));

	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * io_uring: a read that comes alone to its submit, of bytes the page
 * cache holds, completes within the submit (its callback has run when
 * blk_queue_submit() returns) without an io_uring submit.  A batch goes
 * to the ring (the callbacks come later, from its reap).
 */
static bool t_read_at_once(struct env *e)
{
	static unsigned char w[65536], r[2][4096];
	struct refuse calls = { 0 };
	struct treq t[2];
	int64_t res;

	blk_uring_set_submit(e->q, refusing_submit, &calls);
	fill(w, sizeof(w), 41);
	REQUIRE(io1(e, BLK_OP_WRITE, 0, w, sizeof(w), &res) && res == 65536);
	REQUIRE(calls.calls == 1);

	treq_init(e, &t[0], BLK_OP_READ, 8192);
	t[0].iov[0] = (struct iovec){ r[0], 4096 };
	t[0].r.iovcnt = 1;
	tadd(e->q, &t[0]);
	blk_queue_submit(e->q);
	if (e->f->no_nowait) {
		/* The ring read it: what RWF_NOWAIT's refusal is for. */
		CHECK(wait_count(e, 2) && t[0].res == 4096);
		skip_why = "the test directory's file system has no preadv2(RWF_NOWAIT) (tmpfs?)";
		return true;
	}
	CHECK(t[0].done && t[0].res == 4096 && calls.calls == 1);
	CHECK(memcmp(r[0], w + 8192, 4096) == 0);

	for (int i = 0; i < 2; i++) {
		treq_init(e, &t[i], BLK_OP_READ, 4096 + (uint64_t)i * 8192);
		t[i].iov[0] = (struct iovec){ r[i], 4096 };
		t[i].r.iovcnt = 1;
		tadd(e->q, &t[i]);
	}
	blk_queue_submit(e->q);
	CHECK(!t[0].done && !t[1].done && calls.calls == 2);
	CHECK(wait_count(e, 4) && t[0].res == 4096 && t[1].res == 4096);
	CHECK(memcmp(r[0], w + 4096, 4096) == 0 && memcmp(r[1], w + 12288, 4096) == 0);
	blk_uring_set_submit(e->q, NULL, NULL);
	return true;
}

/*
 * Each case drops the file's pages first: a read the page cache missed
 * starts a readahead, which would bring in the next case's.  The first
 * case keeps none; the second keeps its first page, which is read within
 * the submit, the rest in the ring (the split falls inside an iovec).
 */
static bool t_read_at_once_uncached(struct env *e)
{
	static unsigned char w[65536], r[8192];
	static const struct { off_t keep; bool cached[2]; int iov0; } cases[] = {
		{ -1, { false, false }, 8192 },
		{ 0, { true, false }, 1000 },
	};
	struct refuse calls = { 0 };
	struct treq t;
	int64_t res;

	blk_uring_set_submit(e->q, refusing_submit, &calls);
	fill(w, sizeof(w), 43);
	REQUIRE(io1(e, BLK_OP_WRITE, 0, w, sizeof(w), &res) && res == 65536);
	if (sysconf(_SC_PAGESIZE) != 4096) {
		skip_why = "pages are not 4 KiB: the cases evict and keep 4 KiB";
		return true;
	}
	/* A miss the disk answers within the read is no miss here: that case is skipped. */
	REQUIRE(evict_but(e, -1));
	skip_why = nowait_misses(e->path, 49152);
	if (skip_why)
		return true;
	for (int i = 0; i < 2; i++) {
		off_t at = 16384 + i * 16384;
		int before;

		/* What the host keeps after DONTNEED decides whether this runs. */
		if (!evict_but(e, cases[i].keep < 0 ? -1 : at + cases[i].keep) ||
		    !resident(e->path, at, 8192, cases[i].cached)) {
			skip_why = "the page cache kept the file's pages after "
				   "POSIX_FADV_DONTNEED";
			break;
		}
		before = calls.calls;
		memset(r, 0, sizeof(r));
		treq_init(e, &t, BLK_OP_READ, (uint64_t)at);
		t.iov[0] = (struct iovec){ r, (size_t)cases[i].iov0 };
		t.iov[1] = (struct iovec){ r + cases[i].iov0, 8192 - (size_t)cases[i].iov0 };
		t.r.iovcnt = cases[i].iov0 < 8192 ? 2 : 1;
		tadd(e->q, &t);
		blk_queue_submit(e->q);
		CHECK(!t.done && calls.calls == before + 1);
		CHECK(wait_count(e, 2 + i) && t.res == 8192 && memcmp(r, w + at, 8192) == 0);
	}
	blk_uring_set_submit(e->q, NULL, NULL);
	return true;
}

/*
 * Teardown with requests in flight and the I/O thread running: a "kick"
 * handler on the I/O thread submits, as a device's virtqueue handler
 * would, and the main thread frees the queue while the I/O is under way.
 */
enum { FREE_N = 300, FREE_SZ = 2048 };

struct kick {
	struct env *e;
	struct treq *t;
	int efd;
	bool ran;
};

static void kick_handler(void *opaque)
{
	struct kick *k = opaque;
	eventfd_t v;

	(void)eventfd_read(k->efd, &v);
	for (int i = 0; i < FREE_N; i++) {
		tadd(k->e->q, &k->t[i]);
		if (i % 50 == 49)
			blk_queue_submit(k->e->q);
	}
	blk_queue_submit(k->e->q);
	__atomic_store_n(&k->ran, true, __ATOMIC_RELEASE);
}

static bool t_free_inflight(struct env *e)
{
	static struct treq t[FREE_N];
	static unsigned char bufs[FREE_N][FREE_SZ];
	struct kick k = { .e = e, .t = t };

	for (int i = 0; i < FREE_N; i++) {
		treq_init(e, &t[i], i % 2 ? BLK_OP_WRITE : BLK_OP_READ,
			  (uint64_t)i * FREE_SZ);
		t[i].iov[0] = (struct iovec){ bufs[i], FREE_SZ };
		t[i].r.iovcnt = 1;
	}
	k.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	REQUIRE(k.efd >= 0);
	REQUIRE(iothread_add_fd(e->t, k.efd, kick_handler, &k) == 0);
	REQUIRE(iothread_start(e->t) == 0);
	REQUIRE(eventfd_write(k.efd, 1) == 0);
	while (!__atomic_load_n(&k.ran, __ATOMIC_ACQUIRE))
		usleep(10);
	iothread_del_fd(e->t, k.efd);
	close(k.efd);
	blk_queue_free(e->q);
	e->q = NULL;
	REQUIRE(__atomic_load_n(&e->count, __ATOMIC_RELAXED) == FREE_N);
	for (int i = 0; i < FREE_N; i++)
		REQUIRE(t[i].done && t[i].res == FREE_SZ);
	return true;
}

static bool t_open_rejects(void)
{
	char p[4200];
	struct blk_file_opts o = { .path = p };

	snprintf(p, sizeof(p), "%s", dir);
	REQUIRE(!blk_file_open(&o));			/* a directory */
	o.readonly = true;
	REQUIRE(!blk_file_open(&o));
	o.readonly = false;
	REQUIRE(make_file(p, sizeof(p), "empty.raw", 0));
	REQUIRE(!blk_file_open(&o));
	unlink(p);
	REQUIRE(make_file(p, sizeof(p), "odd.raw", 1000));
	REQUIRE(!blk_file_open(&o));
	unlink(p);
	snprintf(p, sizeof(p), "%s/missing.raw", dir);
	REQUIRE(!blk_file_open(&o));
	snprintf(p, sizeof(p), "%s/fifo", dir);
	unlink(p);
	REQUIRE(mkfifo(p, 0600) == 0);
	REQUIRE(!blk_file_open(&o));			/* and did not hang */
	unlink(p);
	o.path = "/dev/null";
	REQUIRE(!blk_file_open(&o));
	/* And a good one opens with the size it has. */
	o.path = p;
	REQUIRE(make_file(p, sizeof(p), "good.raw", 4096 * 3));
	struct blk_file *f = blk_file_open(&o);

	REQUIRE(f && f->size == 4096 * 3 && !f->readonly && !f->direct);
	blk_file_close(f);
	unlink(p);
	return true;
}

/*
 * Whether an open file other than f's own holds a lock on byte: what
 * QEMU asks of an image before it takes it.
 */
static bool byte_held(const char *path, off_t byte)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = byte,
			    .l_len = 1 };
	bool held = fd >= 0 && fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;

	if (fd >= 0)
		close(fd);
	return held;
}

/*
 * The bytes held, as QEMU's file driver lays them out (block/file-posix.c:
 * permission bit i at 100 + i, "not shared" bit i at 200 + i; bits: 0
 * consistent read, 1 write, 2 write unchanged, 3 resize): a writer holds
 * read and write and shares only read and write-unchanged, a reader
 * holds read and shares the same; nothing else, and nothing at all
 * without lock or once closed.
 */
static bool t_locks(void)
{
	static const off_t writer[] = { 100, 101, 201, 203 }, reader[] = { 100, 201, 203 };
	static const off_t none[] = { 102, 103, 200, 202 };
	char p[4200];
	struct blk_file_opts o = { .path = p, .lock = true };
	struct blk_file *f, *g;

	REQUIRE(make_file(p, sizeof(p), "locked.raw", 4096));
	REQUIRE((f = blk_file_open(&o)));
	for (size_t i = 0; i < ARRAY_SIZE(writer); i++)
		REQUIRE(byte_held(p, writer[i]));
	for (size_t i = 0; i < ARRAY_SIZE(none); i++)
		REQUIRE(!byte_held(p, none[i]));
	/* Neither a second writer nor a reader, as two processes would find. */
	REQUIRE(!blk_file_open(&o));
	o.readonly = true;
	REQUIRE(!blk_file_open(&o));
	blk_file_close(f);
	for (size_t i = 0; i < ARRAY_SIZE(writer); i++)
		REQUIRE(!byte_held(p, writer[i]));
	/* Readers share; a writer beside them is refused. */
	REQUIRE((f = blk_file_open(&o)) && (g = blk_file_open(&o)));
	for (size_t i = 0; i < ARRAY_SIZE(reader); i++)
		REQUIRE(byte_held(p, reader[i]));
	REQUIRE(!byte_held(p, 101));
	o.readonly = false;
	REQUIRE(!blk_file_open(&o));
	/* Without lock nothing is held and nothing is checked. */
	o.lock = false;
	struct blk_file *h = blk_file_open(&o);

	REQUIRE(h);
	blk_file_close(f);
	blk_file_close(g);
	REQUIRE(!byte_held(p, 100) && !byte_held(p, 101));
	blk_file_close(h);
	unlink(p);
	return true;
}

/* Another format's header is refused unless probing is off (format=raw). */
static bool t_probe(void)
{
	static const struct {
		unsigned off;
		const char *magic;
	} heads[] = {
		{ 0, "QFI\xfb\0\0\0\3" }, { 0, "QED" }, { 0, "KDMV" },
		{ 0, "# Disk DescriptorFile\n" }, { 0x40, "\x7f\x10\xda\xbe" },
		{ 0, "vhdxfile" }, { 0, "conectix" }, { 0, "LUKS\xba\xbe" },
		{ 0, "\n# a VMDK descriptor without its usual first line\nversion=2\r\n" },
	};
	static const char zeros[512];
	char p[4200];
	struct blk_file_opts o = { .path = p, .probe = true };
	struct blk_file *f;
	int fd;

	REQUIRE(make_file(p, sizeof(p), "probed.raw", 4096));
	REQUIRE((f = blk_file_open(&o)));	/* zeros: raw */
	blk_file_close(f);
	for (size_t i = 0; i < ARRAY_SIZE(heads); i++) {
		size_t len = strlen(heads[i].magic) + (i == 1);	/* QED's NUL */

		REQUIRE((fd = open(p, O_WRONLY)) >= 0);
		REQUIRE(pwrite(fd, heads[i].magic, len, heads[i].off) == (ssize_t)len);
		o.probe = true;
		o.cache = BLK_CACHE_WRITEBACK;
		REQUIRE(!blk_file_open(&o));
		o.cache = BLK_CACHE_NONE;	/* the header read through O_DIRECT */
		REQUIRE(!blk_file_open(&o));
		o.probe = false;
		o.cache = BLK_CACHE_WRITEBACK;
		REQUIRE((f = blk_file_open(&o)));
		blk_file_close(f);
		/* Zeros again for the next. */
		REQUIRE(len <= sizeof(zeros) &&
			pwrite(fd, zeros, len, heads[i].off) == (ssize_t)len);
		close(fd);
	}
	unlink(p);
	return true;
}

/*
 * A probed (raw by its header) image's first sector cannot be made
 * another format's header by a write, as QEMU refuses it (EPERM); any
 * other write there, and a header written anywhere else or into an
 * image whose format was given, goes through.
 */
static bool t_probe_write(void)
{
	static uint8_t qcow2[512] = "QFI\xfb\0\0\0\3", text[512] = "# a comment\nversion=1\n";
	static uint8_t zeros[512], back[512];
	struct blk_file_opts o = { .probe = true };
	struct env e = { 0 };
	int64_t res;
	int fd;

	REQUIRE(make_file(e.path, sizeof(e.path), "probed-w.raw", 8192));
	o.path = e.path;
	e.t = iothread_new("test-io");
	REQUIRE(e.t && (e.f = blk_file_open(&o)) && (e.q = blk_queue_new(e.f, e.t, BLK_AIO_IO_URING)));
	REQUIRE(io1(&e, BLK_OP_WRITE, 0, qcow2, 512, &res) && res == -EPERM);
	REQUIRE(io1(&e, BLK_OP_WRITE, 0, text, 512, &res) && res == -EPERM);
	REQUIRE(io1(&e, BLK_OP_WRITE, 0, zeros, 512, &res) && res == 512);
	REQUIRE(io1(&e, BLK_OP_WRITE, 512, qcow2, 512, &res) && res == 512);
	REQUIRE((fd = open(e.path, O_RDONLY)) >= 0);
	REQUIRE(pread(fd, back, 512, 0) == 512 && !memcmp(back, zeros, 512));
	close(fd);
	blk_queue_free(e.q);
	blk_file_close(e.f);
	/* format=raw given: the guest's bytes are its own business. */
	o.probe = false;
	REQUIRE((e.f = blk_file_open(&o)) && (e.q = blk_queue_new(e.f, e.t, BLK_AIO_IO_URING)));
	REQUIRE(io1(&e, BLK_OP_WRITE, 0, qcow2, 512, &res) && res == 512);
	env_close(&e);
	return true;
}

/* Bytes of f at off, all equal to c? */
static bool all_are(int fd, off_t off, size_t len, char c)
{
	char buf[4096];

	if (len > sizeof(buf) || pread(fd, buf, len, off) != (ssize_t)len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (buf[i] != c)
			return false;
	return true;
}

/*
 * -snapshot's contract (include/block/block.h): the guest sees the image,
 * its writes go to a private copy in $TMPDIR that leaves nothing behind,
 * and the image is never written.
 */
static bool t_snapshot(void)
{
	char p[4200], tmp[4200], a[4096], b[4096], c[4096];
	const char *old_tmp = getenv("TMPDIR");
	struct blk_file_opts o = { .path = p, .snapshot = true };
	struct blk_file *f;
	int fd;

	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	memset(c, 'C', sizeof(c));
	/* Data, a hole, data: the copy must hold both, and zeros between. */
	REQUIRE(make_file(p, sizeof(p), "snap.raw", 2 << 20));
	fd = open(p, O_WRONLY);
	REQUIRE(fd >= 0);
	REQUIRE(pwrite(fd, a, sizeof(a), 0) == sizeof(a));
	REQUIRE(pwrite(fd, b, sizeof(b), 1 << 20) == sizeof(b));
	close(fd);
	snprintf(tmp, sizeof(tmp), "%s/snap-tmp", dir);
	REQUIRE(mkdir(tmp, 0700) == 0);
	setenv("TMPDIR", tmp, 1);
	f = blk_file_open(&o);
	REQUIRE(f && f->size == 2 << 20 && !f->readonly);
	CHECK(all_are(f->fd, 0, sizeof(a), 'A'));
	CHECK(all_are(f->fd, 8192, 4096, 0));
	CHECK(all_are(f->fd, 1 << 20, sizeof(b), 'B'));
	CHECK(pwrite(f->fd, c, sizeof(c), 0) == sizeof(c));
	CHECK(pwrite(f->fd, c, sizeof(c), (2 << 20) - 4096) == sizeof(c));
	CHECK(all_are(f->fd, 0, sizeof(c), 'C'));
	/* Nothing named in TMPDIR, even while the copy is open. */
	CHECK(rmdir(tmp) == 0);
	blk_file_close(f);
	fd = open(p, O_RDONLY);
	REQUIRE(fd >= 0);
	CHECK(all_are(fd, 0, sizeof(a), 'A'));
	CHECK(all_are(fd, (2 << 20) - 4096, 4096, 0));
	close(fd);
	/*
	 * A TMPDIR on another filesystem (/dev/shm, a tmpfs), where the
	 * kernel will not copy between the two: the copy goes through a
	 * buffer and is as good.
	 */
	snprintf(tmp, sizeof(tmp), "/dev/shm/brisk-snap.%d", (int)getpid());
	if (mkdir(tmp, 0700) == 0) {
		setenv("TMPDIR", tmp, 1);
		f = blk_file_open(&o);
		CHECK(f && f->size == 2 << 20);
		CHECK(f && all_are(f->fd, 0, sizeof(a), 'A'));
		CHECK(f && all_are(f->fd, 1 << 20, sizeof(b), 'B'));
		CHECK(f && all_are(f->fd, (2 << 20) - 4096, 4096, 0));
		blk_file_close(f);
		CHECK(rmdir(tmp) == 0);
	}
	/* A TMPDIR that cannot hold the copy fails the open, in one line. */
	snprintf(tmp, sizeof(tmp), "%s/snap-tmp", dir);
	setenv("TMPDIR", tmp, 1);
	f = blk_file_open(&o);
	CHECK(!f);
	blk_file_close(f);
	if (old_tmp)
		setenv("TMPDIR", old_tmp, 1);
	else
		unsetenv("TMPDIR");
	unlink(p);
	return true;
}

static bool t_iov_advance(void)
{
	struct iovec iov[4];
	char b[100];
	struct blk_req r = { .iov = iov, .iovcnt = 4 };

	iov[0] = (struct iovec){ b, 10 };
	iov[1] = (struct iovec){ b + 10, 0 };
	iov[2] = (struct iovec){ b + 10, 20 };
	iov[3] = (struct iovec){ b + 30, 5 };
	blk_iov_advance(&r, 10);	/* skips the empty element too */
	REQUIRE(r.iovcnt == 2 && r.iov == &iov[2]);
	blk_iov_advance(&r, 7);
	REQUIRE(r.iovcnt == 2 && r.iov->iov_base == b + 17 &&
	      r.iov->iov_len == 13);
	blk_iov_advance(&r, 15);
	REQUIRE(r.iovcnt == 1 && r.iov->iov_base == b + 32 &&
	      r.iov->iov_len == 3);
	blk_iov_advance(&r, 3);
	REQUIRE(r.iovcnt == 0);
	return true;
}

/*
 * In a child, forbid io_uring_setup as a seccomp profile would: an
 * io_uring queue must come up as threads and still do I/O.
 */
static bool fallback_child(void)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fp = { .len = ARRAY_SIZE(prog), .filter = prog };
	struct env e = { 0 };
	static unsigned char buf[4096], want[4096];
	int64_t res;

	REQUIRE(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	REQUIRE(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) == 0);
	REQUIRE(make_file(e.path, sizeof(e.path), "fallback.raw", FILE_SIZE));
	REQUIRE(env_open(&e, BLK_AIO_IO_URING, false, BLK_CACHE_WRITEBACK));
	REQUIRE(blk_queue_aio(e.q) == BLK_AIO_THREADS);
	REQUIRE(e.f->fallback_reported);
	fill(want, sizeof(want), 5);
	REQUIRE(io1(&e, BLK_OP_WRITE, 4096, want, 4096, &res) && res == 4096);
	REQUIRE(io1(&e, BLK_OP_READ, 4096, buf, 4096, &res) && res == 4096);
	REQUIRE(memcmp(buf, want, 4096) == 0);
	env_close(&e);
	return true;
}

static bool t_fallback(void)
{
	pid_t pid;
	int st;

	fflush(NULL);	/* or the child prints our buffered lines again */
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(fallback_child() ? 0 : 1);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	REQUIRE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return true;
}

/*
 * A full filesystem, a 64 KiB tmpfs (for in_mount_ns()).  Writing past
 * its room must fail -ENOSPC, for both backends, while a write that fits
 * still succeeds.
 */
static int enospc_child(void)
{
	static unsigned char buf[256 * 1024];
	char mnt[4100];
	struct env e = { 0 };
	int64_t res;

	snprintf(mnt, sizeof(mnt), "%s/full", dir);
	if (mkdir(mnt, 0700) < 0)
		return 1;
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") < 0) {
		printf("# cannot mount a small tmpfs: %s\n", strerror(errno));
		fflush(stdout);	/* the child leaves by _exit */
		rmdir(mnt);
		return 2;
	}
	for (int aio = BLK_AIO_IO_URING; aio <= BLK_AIO_THREADS; aio++) {
		snprintf(e.path, sizeof(e.path), "%s/disk.raw", mnt);
		int fd = open(e.path, O_RDWR | O_CREAT | O_TRUNC, 0600);

		if (fd < 0 || ftruncate(fd, FILE_SIZE) < 0)
			return 1;
		close(fd);
		if (!env_open(&e, (enum blk_aio)aio, false,
			      BLK_CACHE_WRITEBACK))
			return 1;
		if (!io1(&e, BLK_OP_WRITE, 0, buf, 4096, &res) || res != 4096)
			return 1;
		if (!io1(&e, BLK_OP_WRITE, 8192, buf, sizeof(buf), &res) ||
		    res != -ENOSPC)
			return 1;
		env_close(&e);
	}
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	return 0;
}

/*
 * Runs child (0 ok, 1 fail, 2 cannot set up) in a process with its own
 * mount namespace, so what it mounts is gone with it; a 2 is a skip.
 */
static bool in_mount_ns(int (*child)(void))
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
			printf("# no mount namespace: %s\n", strerror(errno));
			fflush(stdout);	/* the child leaves by _exit */
			_exit(2);
		}
		_exit(child());
	}
	REQUIRE(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
	if (WEXITSTATUS(st) == 2)
		skip_why = "no private mount namespace with a tmpfs "
			   "(needs CAP_SYS_ADMIN)";
	REQUIRE(WEXITSTATUS(st) != 1);
	return true;
}

static bool t_enospc(void)
{
	return in_mount_ns(enospc_child);
}

static void report(const char *name, bool ok);

/* --- on a host block device: a loop device over a file (root) --- */

/* What lenv_open() writes to the backing file. */
static const unsigned char *loop_pattern(void)
{
	static unsigned char p[FILE_SIZE];

	fill(p, sizeof(p), 1);
	return p;
}

struct lenv {
	struct env e;
	struct loopdev l;
	char backing[4200];
};

/* NULL, or why the test cannot run here.  extra: bytes past FILE_SIZE. */
static const char *lenv_open(struct lenv *le, enum blk_aio aio, unsigned bs,
			     enum blk_cache cache, off_t extra)
{
	const char *why = NULL;
	int fd;

	memset(le, 0, sizeof(*le));
	le->l.fd = -1;
	if (!make_file(le->backing, sizeof(le->backing), "loop.raw", FILE_SIZE + extra))
		return "cannot make the backing file";
	fd = open(le->backing, O_WRONLY);
	if (fd < 0 || pwrite(fd, loop_pattern(), FILE_SIZE, 0) != FILE_SIZE || fsync(fd) < 0)
		why = "cannot fill the backing file";
	if (fd >= 0)
		close(fd);
	if (!why && loop_attach(&le->l, le->backing, bs, &why) == 0) {
		snprintf(le->e.path, sizeof(le->e.path), "%s", le->l.path);
		if (!env_open(&le->e, aio, false, cache))
			why = "cannot open the loop device";
	}
	return why;
}

static void lenv_close(struct lenv *le)
{
	blk_queue_free(le->e.q);
	blk_file_close(le->e.f);
	iothread_free(le->e.t);
	loop_detach(&le->l);
	unlink(le->backing);
}

/* What the device holds at [off, off + len), read whole blocks, aligned. */
static bool loop_holds(struct env *e, uint64_t off, const unsigned char *want, size_t len)
{
	uint64_t start = off & ~4095ull, end = (off + len + 4095) & ~4095ull;
	unsigned char *buf = aligned_alloc(4096, end - start);
	int64_t res;
	bool ok = buf && io1(e, BLK_OP_READ, start, buf, end - start, &res) &&
		  res == (int64_t)(end - start) && !memcmp(buf + (off - start), want, len);

	free(buf);
	return ok;
}

/*
 * A 4 KiB-sector device with O_DIRECT: brisk reports its logical block,
 * a 512-byte read at a 512-byte offset into an odd buffer is widened to
 * the block around it, a whole-block write from an odd buffer bounces,
 * and a 512-byte write is a read-modify-write of its block: the other
 * seven sectors keep their data.  So is one across three blocks.
 */
static bool t_loop_4k(struct lenv *le)
{
	struct env *e = &le->e;
	unsigned char want[3 * 4096], *buf = aligned_alloc(4096, 16384);
	int64_t res;

	REQUIRE(buf);
	REQUIRE(e->f->blockdev && e->f->lbs == 4096 && e->f->align == 4096);
	REQUIRE(e->f->pbs >= 4096 && e->f->serialise);
	memcpy(want, loop_pattern(), sizeof(want));
	memset(buf, 0xee, 16384);
	REQUIRE(io1(e, BLK_OP_READ, 512, buf + 16, 512, &res) && res == 512);
	REQUIRE(memcmp(buf + 16, want + 512, 512) == 0);
	REQUIRE(buf[15] == 0xee && buf[16 + 512] == 0xee);
	fill(buf + 16, 512, 9);
	REQUIRE(io1(e, BLK_OP_WRITE, 512, buf + 16, 512, &res) && res == 512);
	memcpy(want + 512, buf + 16, 512);
	REQUIRE(loop_holds(e, 0, want, 4096));
	/* Sectors 7 to 16: the end of block 0, all of block 1, the start of 2. */
	fill(buf + 16, 5120, 10);
	REQUIRE(io1(e, BLK_OP_WRITE, 3584, buf + 16, 5120, &res) && res == 5120);
	memcpy(want + 3584, buf + 16, 5120);
	REQUIRE(loop_holds(e, 0, want, sizeof(want)));
	fill(buf + 16, 4096, 44);
	REQUIRE(io1(e, BLK_OP_WRITE, 8192, buf + 16, 4096, &res) && res == 4096);
	REQUIRE(loop_holds(e, 8192, buf + 16, 4096));
	free(buf);
	return true;
}

/*
 * Read-modify-writes in one batch: the eight sectors of one block, each
 * written alone, and a whole-block write beside a one-sector write of the
 * same block.  Without writes kept apart, each read-modify-write would
 * read the block before the others wrote it, and write the old data back
 * over them.  Each sector must hold its own write; the block written whole
 * and in part must be one of the two orders, not a mix.
 */
static bool t_loop_rmw_batch(struct lenv *le)
{
	struct env *e = &le->e;
	static struct treq t[10];
	static unsigned char data[10][4096] __attribute__((aligned(4096)));
	unsigned char want[4096], other[4096];

	for (int i = 0; i < 8; i++) {
		fill(data[i], 512, 20 + i);
		memcpy(want + 512 * i, data[i], 512);
		treq_init(e, &t[i], BLK_OP_WRITE, 4 * 4096 + 512 * i);
		t[i].iov[0] = (struct iovec){ data[i], 512 };
		t[i].r.iovcnt = 1;
	}
	fill(data[8], 4096, 40);
	treq_init(e, &t[8], BLK_OP_WRITE, 5 * 4096);
	t[8].iov[0] = (struct iovec){ data[8], 4096 };
	t[8].r.iovcnt = 1;
	fill(data[9], 512, 41);
	treq_init(e, &t[9], BLK_OP_WRITE, 5 * 4096 + 1024);
	t[9].iov[0] = (struct iovec){ data[9], 512 };
	t[9].r.iovcnt = 1;
	REQUIRE(run(e, t, 10));
	for (int i = 0; i < 10; i++)
		REQUIRE(t[i].res == (i == 8 ? 4096 : 512));
	REQUIRE(loop_holds(e, 4 * 4096, want, 4096));
	memcpy(other, data[8], 4096);
	memcpy(other + 1024, data[9], 512);
	REQUIRE(loop_holds(e, 5 * 4096, data[8], 4096) || loop_holds(e, 5 * 4096, other, 4096));
	REQUIRE(e->f->writes == 0 && !e->f->rmw && e->f->bounce_bytes == 0 && !e->f->wait_head);
	return true;
}

/*
 * Freeing a queue while writes wait at the gate behind a read-modify-write:
 * the read-modify-write completes, the waiting writes fail -ECANCELED
 * without touching the device, and every callback runs once.
 */
static bool t_loop_free_parked(struct lenv *le)
{
	struct env *e = &le->e;
	static struct treq t[5];
	static unsigned char data[5][4096] __attribute__((aligned(4096)));
	unsigned char want[4096];
	enum blk_aio aio = blk_queue_aio(e->q);
	int canceled = 0;

	for (int i = 0; i < 5; i++) {
		fill(data[i], 4096, 50 + i);
		treq_init(e, &t[i], BLK_OP_WRITE, (uint64_t)(12 + i) * 4096 + (i ? 0 : 512));
		t[i].iov[0] = (struct iovec){ data[i], i ? 4096 : 512 };
		t[i].r.iovcnt = 1;
		tadd(e->q, &t[i]);
	}
	blk_queue_submit(e->q);
	REQUIRE(e->f->rmw && e->f->wait_head);
	blk_queue_free(e->q);
	e->q = blk_queue_new(e->f, e->t, aio);
	REQUIRE(e->q && e->count == 5);
	REQUIRE(t[0].done && t[0].res == 512);
	for (int i = 1; i < 5; i++)
		canceled += t[i].done && t[i].res == -ECANCELED;
	REQUIRE(canceled == 4);
	memcpy(want, loop_pattern() + 12 * 4096, 4096);
	memcpy(want + 512, data[0], 512);
	REQUIRE(loop_holds(e, 12 * 4096, want, 4096));
	REQUIRE(loop_holds(e, 13 * 4096, loop_pattern() + 13 * 4096, 4 * 4096));
	REQUIRE(!e->f->rmw && !e->f->writes && !e->f->wait_head && !e->f->bounce_bytes);
	return true;
}

/*
 * WRITE_ZEROES off a 4 KiB-sector device's blocks, which fallocate there
 * refuses: the ends are written as zeros, the whole blocks between zeroed,
 * and nothing around them changes.  With and without O_DIRECT.
 */
static bool t_loop_zero_partial(struct lenv *le)
{
	struct env *e = &le->e;
	unsigned char want[4 * 4096];
	int64_t res;

	memcpy(want, loop_pattern() + 8 * 4096, sizeof(want));
	REQUIRE(zero1(e, BLK_OP_WRITE_ZEROES, 8 * 4096 + 512, 512, false, &res) && res == 0);
	memset(want + 512, 0, 512);
	REQUIRE(loop_holds(e, 8 * 4096, want, sizeof(want)));
	/* From sector 7 of the first block to sector 2 of the fourth: head, middle, tail. */
	REQUIRE(zero1(e, BLK_OP_WRITE_ZEROES, 8 * 4096 + 3584, 2 * 4096 + 512 + 1024, true,
		    &res) && res == 0);
	memset(want + 3584, 0, 2 * 4096 + 512 + 1024);
	REQUIRE(loop_holds(e, 8 * 4096, want, sizeof(want)));
	return true;
}

/* A device whose last block is partial serves whole blocks only. */
static bool t_loop_odd_size(struct lenv *le)
{
	REQUIRE(le->e.f->size == FILE_SIZE);	/* the backing file: FILE_SIZE + 512 */
	return true;
}

/*
 * DISCARD reaches the device as a discard (the device's own counters),
 * never as a zero-out that writes; on a device that takes no discards it
 * does nothing at all.  WRITE_ZEROES still zeroes there.
 */
static bool t_loop_discard(struct lenv *le)
{
	struct env *e = &le->e;
	long long w0 = loop_stat(&le->l, LOOP_STAT_WRITES);
	long long d0 = loop_stat(&le->l, LOOP_STAT_DISCARDS);
	static unsigned char buf[65536];
	int64_t res;

	REQUIRE(w0 >= 0 && d0 >= 0);
	/* A range off the 4 KiB grid: only the whole blocks inside go. */
	REQUIRE(zero1(e, BLK_OP_DISCARD, 65536 - 512, 65536 + 1024, false, &res) && res == 0);
	REQUIRE(loop_stat(&le->l, LOOP_STAT_DISCARDS) > d0);
	REQUIRE(loop_stat(&le->l, LOOP_STAT_WRITES) == w0);

	/* Discard turned off in the device: skipped, nothing written. */
	REQUIRE(loop_set_queue(&le->l, "discard_max_bytes", "0"));
	d0 = loop_stat(&le->l, LOOP_STAT_DISCARDS);
	REQUIRE(zero1(e, BLK_OP_DISCARD, 4 * 65536, 65536, false, &res) && res == 0);
	REQUIRE(loop_stat(&le->l, LOOP_STAT_DISCARDS) == d0);
	REQUIRE(loop_stat(&le->l, LOOP_STAT_WRITES) == w0 && e->f->no_discard);
	memset(buf, 0x77, sizeof(buf));
	REQUIRE(zero1(e, BLK_OP_WRITE_ZEROES, 8 * 65536, 65536, false, &res) && res == 0);
	REQUIRE(io1(e, BLK_OP_READ, 8 * 65536, buf, sizeof(buf), &res) && res == 65536);
	REQUIRE(is_zero(buf, sizeof(buf)));
	return true;
}

/* A write with fua set reaches the device with a flush; one without, not. */
static bool t_loop_fua(struct lenv *le)
{
	struct env *e = &le->e;
	static unsigned char buf[4096];
	struct treq t;
	long long f0;

	fill(buf, sizeof(buf), 8);
	f0 = loop_stat(&le->l, LOOP_STAT_FLUSHES);
	REQUIRE(f0 >= 0);
	REQUIRE(io1_fua(e, BLK_OP_WRITE, 4096, buf, false));
	REQUIRE(loop_stat(&le->l, LOOP_STAT_FLUSHES) == f0);
	REQUIRE(io1_fua(e, BLK_OP_WRITE, 4096, buf, true));
	REQUIRE(loop_stat(&le->l, LOOP_STAT_FLUSHES) > f0);
	f0 = loop_stat(&le->l, LOOP_STAT_FLUSHES);
	treq_init(e, &t, BLK_OP_WRITE_ZEROES, 65536);
	t.r.len = 65536;
	t.r.fua = true;
	REQUIRE(run(e, &t, 1) && t.res == 0);
	REQUIRE(loop_stat(&le->l, LOOP_STAT_FLUSHES) > f0);
	return true;
}

typedef bool (*loop_test)(struct lenv *le);

/* Returns false when the test could not run here (said why). */
static bool run_loop_test(const char *name, enum blk_aio aio, unsigned bs,
			  enum blk_cache cache, off_t extra, loop_test fn)
{
	char full[128];
	struct lenv le;
	const char *why;
	bool ok;

	snprintf(full, sizeof(full), "%s/%s",
		 aio == BLK_AIO_IO_URING ? "io_uring" : "threads", name);
	why = lenv_open(&le, aio, bs, cache, extra);
	if (why) {
		check_skip(full, why);
		lenv_close(&le);
		return false;
	}
	ok = fn(&le);
	lenv_close(&le);
	report(full, ok);
	return true;
}

/* A case that gave up without a failed check (a setup step) still fails. */
static void report(const char *name, bool ok)
{
	if (skip_why && ok) {
		check_skip(name, skip_why);
	} else {
		CHECK(ok || failed != tap_failed_before);
		check_case("%s", name);
	}
	skip_why = NULL;
}

/* Why io_uring cannot serve the io_uring cases here, or NULL. */
static char uring_why_buf[160];
static const char *uring_why = "brisk's io_uring queue fell back to threads";

static void probe_uring(void)
{
	struct io_uring ring;
	int r = io_uring_queue_init(8, &ring, 0);

	if (r == 0) {
		io_uring_queue_exit(&ring);
		return;
	}
	snprintf(uring_why_buf, sizeof(uring_why_buf),
		 "io_uring_setup fails here (%s): a seccomp filter, "
		 "kernel.io_uring_disabled or an old kernel", strerror(-r));
	uring_why = uring_why_buf;
}

typedef bool (*env_test)(struct env *e);
typedef bool (*aio_test)(struct env *e, enum blk_aio aio);

static void run_env_test(const char *name, enum blk_aio aio, env_test fn,
			 aio_test afn)
{
	char full[128];
	struct env e = { 0 };
	bool ok;

	snprintf(full, sizeof(full), "%s/%s",
		 aio == BLK_AIO_IO_URING ? "io_uring" : "threads", name);
	ok = env_setup(&e, aio);
	if (ok && aio == BLK_AIO_IO_URING &&
	    blk_queue_aio(e.q) != BLK_AIO_IO_URING) {
		check_skip(full, uring_why);
		env_close(&e);
		return;
	}
	if (ok)
		ok = fn ? fn(&e) : afn(&e, aio);
	env_close(&e);
	report(full, ok);
}

/*
 * Image files on a file system over a 4 KiB-sector device (ext4 on a loop
 * device), where O_DIRECT takes whole 4 KiB blocks: an image whose size
 * is not a multiple of them is refused with cache=none, as its last block
 * could only be written whole, past the image's end; one that is takes a
 * 512-byte write as a read-modify-write.  Returns false when it could not
 * run here (said why).
 */
static bool t_fs_4k(void)
{
	char mnt[4200], img[4200], cmd[128];
	struct lenv le = { .l.fd = -1 };
	const char *why = NULL;
	unsigned char data[512], want[4096];
	struct blk_file_opts o = { .path = img, .cache = BLK_CACHE_NONE };
	struct blk_file *f;
	bool ok = false;
	int64_t res;

	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	if (!make_file(le.backing, sizeof(le.backing), "fs.raw", 64 << 20) ||
	    loop_attach(&le.l, le.backing, 4096, &why) < 0) {
		check_skip("fs-4k", why ? why : "cannot make the backing file");
		unlink(le.backing);
		return false;
	}
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F -b 4096 %s", le.l.path);
	if (system(cmd) != 0 || mkdir(mnt, 0700) < 0 ||
	    mount(le.l.path, mnt, "ext4", 0, NULL) < 0) {
		check_skip("fs-4k", "cannot make and mount ext4 on a loop device "
			   "(mkfs.ext4: e2fsprogs)");
		rmdir(mnt);
		loop_detach(&le.l);
		unlink(le.backing);
		return false;
	}
	ok = make_file(img, sizeof(img), "mnt/odd.raw", FILE_SIZE + 512);
	for (int i = 0; ok && i < 3; i++) {
		o.readonly = i == 1;
		o.cache = i == 2 ? BLK_CACHE_WRITEBACK : BLK_CACHE_NONE;
		f = blk_file_open(&o);
		ok = !f == (o.cache == BLK_CACHE_NONE);
		blk_file_close(f);
	}
	ok = ok && make_file(le.e.path, sizeof(le.e.path), "mnt/even.raw", FILE_SIZE) &&
	     env_open(&le.e, BLK_AIO_IO_URING, false, BLK_CACHE_NONE) &&
	     le.e.f->align == 4096 && le.e.f->serialise;
	fill(data, sizeof(data), 3);
	memset(want, 0, sizeof(want));
	memcpy(want + 1536, data, sizeof(data));
	ok = ok && io1(&le.e, BLK_OP_WRITE, 4096 + 1536, data, sizeof(data), &res) &&
	     res == 512 && loop_holds(&le.e, 4096, want, sizeof(want));
	blk_queue_free(le.e.q);
	blk_file_close(le.e.f);
	iothread_free(le.e.t);
	umount(mnt);
	rmdir(mnt);
	loop_detach(&le.l);
	unlink(le.backing);
	report("fs-4k", ok);
	return true;
}

/*
 * -snapshot with no $TMPDIR (include/block/block.h): /var/tmp, else /tmp,
 * as in a container or initramfs whose /var/tmp is missing or read-only.
 * For in_mount_ns().
 */
static int snapshot_dir_child(void)
{
	char p[4200], img[64], link[64], where[4200];
	struct blk_file_opts o = { .path = img, .snapshot = true };
	struct blk_file *f;
	ssize_t n;
	int fd;

	/* The image stays reachable whatever is mounted over its folder. */
	if (!make_file(p, sizeof(p), "snapdir.raw", 1 << 20))
		return 1;
	fd = open(p, O_RDONLY);
	unlink(p);
	if (fd < 0)
		return 1;
	snprintf(img, sizeof(img), "/proc/self/fd/%d", fd);
	if (mount("tmpfs", "/var/tmp", "tmpfs", MS_RDONLY, "size=64k") < 0) {
		printf("# cannot mount a read-only /var/tmp: %s\n", strerror(errno));
		fflush(stdout);
		return 2;
	}
	unsetenv("TMPDIR");
	f = blk_file_open(&o);
	if (!f)
		return 1;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", f->fd);
	n = readlink(link, where, sizeof(where) - 1);
	blk_file_close(f);
	if (n < 5 || strncmp(where, "/tmp/", 5))
		return 1;
	/* Neither writable: the open fails (in one line, said on stderr). */
	if (mount("tmpfs", "/tmp", "tmpfs", MS_RDONLY, "size=64k") < 0)
		return 2;
	f = blk_file_open(&o);
	blk_file_close(f);
	return f ? 1 : 0;
}

/*
 * --root: the tests that need a host block device; exit 77 (skip) when
 * none could run here.
 */
static int main_root(void)
{
	static const struct {
		const char *name;
		unsigned bs;
		enum blk_cache cache;
		loop_test fn;
		off_t extra;
	} tests[] = {
		{ "loop-4k-direct", 4096, BLK_CACHE_NONE, t_loop_4k },
		{ "loop-rmw-batch", 4096, BLK_CACHE_NONE, t_loop_rmw_batch },
		{ "loop-free-parked", 4096, BLK_CACHE_NONE, t_loop_free_parked },
		{ "loop-zero-partial", 4096, BLK_CACHE_WRITEBACK, t_loop_zero_partial },
		{ "loop-zero-partial-direct", 4096, BLK_CACHE_NONE, t_loop_zero_partial },
		{ "loop-odd-size", 4096, BLK_CACHE_WRITEBACK, t_loop_odd_size, 512 },
		{ "loop-odd-size-direct", 4096, BLK_CACHE_NONE, t_loop_odd_size, 512 },
		{ "loop-discard", 4096, BLK_CACHE_WRITEBACK, t_loop_discard },
		{ "loop-fua", 512, BLK_CACHE_WRITEBACK, t_loop_fua },
		{ "loop-fua-direct", 512, BLK_CACHE_NONE, t_loop_fua },
	};
	int ran = 0;
	bool ok;

	for (int aio = BLK_AIO_IO_URING; aio <= BLK_AIO_THREADS; aio++)
		for (size_t i = 0; i < ARRAY_SIZE(tests); i++)
			ran += run_loop_test(tests[i].name, (enum blk_aio)aio, tests[i].bs,
					     tests[i].cache, tests[i].extra, tests[i].fn);
	ran += t_fs_4k();
	ok = in_mount_ns(snapshot_dir_child);
	ran += !skip_why;
	report("snapshot-default-dir", ok);
	rmdir(dir);
	(void)ran;
	return check_done();
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		env_test fn;
		aio_test afn;
		bool uring_only;
	} tests[] = {
		{ "scatter", t_scatter, NULL },
		{ "flush", t_flush, NULL },
		{ "discard", t_discard, NULL },
		{ "write-zeroes", t_write_zeroes, NULL },
		{ "write-zeroes-unmap", t_write_zeroes_unmap, NULL },
		{ "write-zeroes-by-writing", t_write_zeroes_by_writing, NULL },
		{ "batch", t_batch, NULL },
		{ "resubmit-from-callback", t_resubmit_from_callback, NULL },
		{ "truncated", t_truncated, NULL },
		{ "bad-requests", t_bad_requests, NULL },
		{ "readonly", NULL, t_readonly },
		{ "direct", NULL, t_direct },
		{ "direct-misaligned", NULL, t_direct_misaligned },
		{ "direct-backpressure", NULL, t_direct_backpressure },
		{ "submit-refused", t_submit_refused, NULL, true },
		{ "submit-refused-at-free", t_submit_refused_at_free, NULL, true },
		{ "submit-refused-for-good", t_submit_refused_for_good, NULL, true },
		{ "free-inflight", t_free_inflight, NULL },
		{ "batch-done", t_batch_done, NULL },
		{ "reaped-quiet", t_reaped_quiet, NULL, true },
		{ "read-at-once", t_read_at_once, NULL, true },
		{ "read-at-once-uncached", t_read_at_once_uncached, NULL, true },
	};
	const char *d = getenv("BLK_TEST_DIR");

	if (!d)
		d = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/blk-test.%d", d ? d : "/tmp",
		 (int)getpid());
	if (mkdir(dir, 0700) < 0) {
		perror(dir);
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "--root"))
		return main_root();
	probe_uring();
	for (int aio = BLK_AIO_IO_URING; aio <= BLK_AIO_THREADS; aio++)
		for (size_t i = 0; i < ARRAY_SIZE(tests); i++)
			if (aio == BLK_AIO_IO_URING || !tests[i].uring_only)
				run_env_test(tests[i].name, (enum blk_aio)aio,
					     tests[i].fn, tests[i].afn);
	report("open-rejects", t_open_rejects());
	report("locks", t_locks());
	report("probe", t_probe());
	report("probe-write", t_probe_write());
	report("snapshot", t_snapshot());
	report("iov-advance", t_iov_advance());
	report("fallback-to-threads", t_fallback());
	report("enospc", t_enospc());
	rmdir(dir);
	return check_done();
}
