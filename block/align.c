// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * O_DIRECT as a guest uses it.  The host's device takes offsets, lengths
 * and buffers aligned to its blocks (f->align, f->mem_align); a guest
 * sends whole 512-byte sectors from wherever its buffers are, whatever
 * block size it was told (VIRTIO 1.2, 5.2: blk_size does not change the
 * protocol's units).
 *
 * - Buffers off the alignment: the request goes through an aligned bounce
 *   buffer, at most BLK_BOUNCE_WINDOW of it at a time.
 * - A read off the block grid is widened to whole blocks in the bounce.
 * - A write off the block grid (align > 512) is a read-modify-write: the
 *   blocks at its ends are read into the bounce first.  Meanwhile no other
 *   write may touch them, or one of the two would be lost: writes pass
 *   the file's gate, where a read-modify-write goes alone and other writes
 *   go together.  That is coarse (a read-modify-write waits for every
 *   write in flight, not only those overlapping it), and cheap: a driver
 *   that follows blk_size never sends one.
 * - Bounce buffers held are capped per file (BLK_BOUNCE_MAX): a guest
 *   chooses how many misaligned requests it sends, not how much host
 *   memory brisk takes.  A request past the cap waits at the gate.
 *
 * A request that must wait is parked on the file's wait list, first come
 * first served: whoever leaves the gate lets the next ones through, onto
 * their own queue's resume list, and wakes that queue's I/O thread, which
 * hands them to its backend.  Every request let through completes, so
 * every one parked gets its turn.
 *
 * And for host block devices, with or without O_DIRECT: fallocate there
 * refuses a range off the device's logical blocks, so a WRITE_ZEROES off
 * them writes zeros at its ends (a read-modify-write under O_DIRECT) and
 * zeroes the whole blocks between as before.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "block-int.h"
#include "util/iothread.h"
#include "util/iov.h"
#include "util/log.h"

/* What a request holds of the gate (blk_req.gate). */
#define GATE_WRITE 1	/* a write, with others */
#define GATE_RMW 2	/* a read-modify-write, alone */
#define GATE_BOUNCE 4	/* budget: it is a bounce's req */

/* The zeros a WRITE_ZEROES writes at its ends: less than a block each. */
static const uint8_t blk_zero_block[4096] __attribute__((aligned(4096)));

/* An aligned request of its own over an aligned buffer, window by window. */
enum bounce_stage { B_HEAD, B_TAIL, B_MOVE };

struct blk_bounce {
	struct blk_req req;	/* what the backend sees: a block or a window */
	struct blk_req *orig;
	struct blk_queue *q;
	struct iovec iov;
	uint8_t *buf;
	uint64_t size;		/* buf's bytes: the budget held */
	uint64_t start, end;	/* orig's range widened to whole blocks */
	uint64_t pos, win;	/* the window under way */
	uint64_t total;		/* orig's bytes */
	enum bounce_stage stage;
	uint8_t gate;		/* held from admission to the end */
};

/* A WRITE_ZEROES off a block device's blocks: its ends, its middle. */
struct blk_split_part {
	struct blk_req req;
	struct iovec iov;
	struct blk_split *s;
};

struct blk_split {
	struct blk_split_part part[3];
	struct blk_req *orig;
	unsigned int pending;
	int64_t res;
};

void blk_align_file_init(struct blk_file *f)
{
	pthread_mutex_init(&f->lock, NULL);
	f->serialise = f->align > 512;
}

/* ---- the gate ---- */

static bool gate_fits(const struct blk_file *f, const struct blk_req *r)
{
	uint64_t need = r->gate & GATE_BOUNCE ?
			container_of(r, struct blk_bounce, req)->size : 0;

	if (need && f->bounce_bytes + need > BLK_BOUNCE_MAX)
		return false;
	if (r->gate & GATE_RMW)
		return !f->rmw && !f->writes;
	return !(r->gate & GATE_WRITE) || !f->rmw;
}

static void gate_take(struct blk_file *f, const struct blk_req *r)
{
	if (r->gate & GATE_BOUNCE)
		f->bounce_bytes += container_of(r, struct blk_bounce, req)->size;
	if (r->gate & GATE_RMW)
		f->rmw = true;
	else if (r->gate & GATE_WRITE)
		f->writes++;
}

static void req_append(struct blk_req **head, struct blk_req **tail, struct blk_req *r)
{
	r->next = NULL;
	if (*tail)
		(*tail)->next = r;
	else
		*head = r;
	*tail = r;
}

/* Lets parked requests through, in order, while they fit.  Under f->lock. */
static void gate_admit(struct blk_file *f)
{
	struct blk_req *r;

	while ((r = f->wait_head) && gate_fits(f, r)) {
		struct blk_queue *q = r->owner;

		f->wait_head = r->next;
		if (!f->wait_head)
			f->wait_tail = NULL;
		gate_take(f, r);
		req_append(&q->resume_head, &q->resume_tail, r);
		/* A counter that cannot overflow here: a failure is a lost request. */
		if (eventfd_write(q->resume_fd, 1) < 0)
			abort();
	}
}

/* False: r may go now (it holds its part of the gate).  True: parked. */
static bool gate_enter(struct blk_queue *q, struct blk_req *r)
{
	struct blk_file *f = q->f;
	bool parked;

	pthread_mutex_lock(&f->lock);
	parked = f->wait_head || !gate_fits(f, r);
	if (parked) {
		r->owner = q;
		req_append(&f->wait_head, &f->wait_tail, r);
	} else {
		gate_take(f, r);
	}
	pthread_mutex_unlock(&f->lock);
	return parked;
}

void blk_gate_leave(struct blk_file *f, uint8_t gate, uint64_t bytes)
{
	pthread_mutex_lock(&f->lock);
	f->bounce_bytes -= bytes;
	if (gate & GATE_RMW)
		f->rmw = false;
	else if (gate & GATE_WRITE)
		f->writes--;
	gate_admit(f);
	pthread_mutex_unlock(&f->lock);
}

/* ---- bounce buffers ---- */

static bool blk_aligned(const struct blk_file *f, const struct blk_req *req)
{
	if ((req->offset | req->len) & (f->align - 1))
		return false;
	for (int i = 0; i < req->iovcnt; i++)
		if (((uintptr_t)req->iov[i].iov_base & (f->mem_align - 1)) ||
		    (req->iov[i].iov_len & (f->align - 1)))
			return false;
	return true;
}

static void bounce_step(struct blk_req *r, int64_t res);

/* Hands the backend a read or write of [off, off + len) of the buffer. */
static void bounce_io(struct blk_bounce *b, enum blk_op op, uint64_t off, uint64_t len)
{
	b->iov = (struct iovec){ b->buf + (off - b->pos), len };
	b->req = (struct blk_req){
		.op = op, .offset = off, .len = len, .iov = &b->iov, .iovcnt = 1,
		.fua = op == BLK_OP_WRITE && b->orig->fua, .cb = bounce_step,
	};
	b->q->ops->add(b->q, &b->req);
	b->q->ops->submit(b->q);
}

/* The request's own bytes of the window, between the buffer and its iovec. */
static void bounce_copy(struct blk_bounce *b, bool to_buf)
{
	struct blk_req *o = b->orig;
	uint64_t oend = o->offset + b->total, wend = b->pos + b->win;
	uint64_t from = o->offset > b->pos ? o->offset : b->pos;
	uint64_t to = oend < wend ? oend : wend;

	iov_copy(o->iov, (unsigned int)o->iovcnt, from - o->offset, b->buf + (from - b->pos),
		 to - from, to_buf);
}

static void bounce_finish(struct blk_bounce *b, int64_t res)
{
	struct blk_req *orig = b->orig;

	if (b->gate)
		blk_gate_leave(b->q->f, b->gate, b->size);
	free(b->buf);
	free(b);
	orig->cb(orig, res);
}

/*
 * The window [pos, pos + win): for a write, its edge blocks that the
 * request covers only in part are read first (B_HEAD, B_TAIL); then the
 * window moves (B_MOVE).  Starts the first of these from b->stage on.
 */
static void bounce_stage_io(struct blk_bounce *b)
{
	struct blk_req *o = b->orig;
	uint64_t align = b->q->f->align, wend = b->pos + b->win;
	uint64_t oend = o->offset + b->total;

	switch (b->stage) {
	case B_HEAD:
		if (o->op == BLK_OP_WRITE && o->offset > b->pos) {
			bounce_io(b, BLK_OP_READ, b->pos, align);
			return;
		}
		b->stage = B_TAIL;
		/* fall through */
	case B_TAIL:
		/* The tail block, unless the head read just brought it. */
		if (o->op == BLK_OP_WRITE && oend < wend &&
		    !(o->offset > b->pos && wend - align == b->pos)) {
			bounce_io(b, BLK_OP_READ, wend - align, align);
			return;
		}
		b->stage = B_MOVE;
		/* fall through */
	case B_MOVE:
		break;
	}
	if (o->op == BLK_OP_WRITE)
		bounce_copy(b, true);
	bounce_io(b, o->op, b->pos, b->win);
}

static void bounce_window(struct blk_bounce *b)
{
	b->win = b->end - b->pos < b->size ? b->end - b->pos : b->size;
	b->stage = B_HEAD;
	bounce_stage_io(b);
}

/* A stage's I/O came back: the next stage, window, or the end. */
static void bounce_step(struct blk_req *r, int64_t res)
{
	struct blk_bounce *b = container_of(r, struct blk_bounce, req);
	struct blk_req *o = b->orig;

	if (res >= 0 && (uint64_t)res != b->iov.iov_len)
		res = -EIO;
	if (res < 0) {
		bounce_finish(b, res);
		return;
	}
	if (b->stage != B_MOVE) {
		b->stage++;
		bounce_stage_io(b);
		return;
	}
	if (o->op == BLK_OP_READ)
		bounce_copy(b, false);
	b->pos += b->win;
	if (b->pos < b->end)
		bounce_window(b);
	else
		bounce_finish(b, (int64_t)b->total);
}

/* Admitted: the buffer, then the first window; false if it failed at once. */
static bool bounce_start(struct blk_bounce *b)
{
	size_t balign = b->q->f->align > b->q->f->mem_align ? b->q->f->align :
							      b->q->f->mem_align;

	b->buf = aligned_alloc(balign, b->size);
	if (!b->buf) {
		bounce_finish(b, -ENOMEM);
		return false;
	}
	bounce_window(b);
	return true;
}

/* req through a bounce buffer; false (req failed -ENOMEM) without memory. */
static bool bounce(struct blk_queue *q, struct blk_req *req)
{
	uint64_t total = req->len;
	struct blk_file *f = q->f;
	uint64_t mask = f->align - 1;
	struct blk_bounce *b = calloc(1, sizeof(*b));

	if (!b) {
		req->fail = -ENOMEM;
		return false;
	}
	b->orig = req;
	b->q = q;
	b->total = total;
	b->start = req->offset & ~mask;
	b->end = (req->offset + total + mask) & ~mask;
	b->pos = b->start;
	b->size = b->end - b->start < BLK_BOUNCE_WINDOW ? b->end - b->start : BLK_BOUNCE_WINDOW;
	b->gate = GATE_BOUNCE;
	if (req->op == BLK_OP_WRITE && f->serialise)
		b->gate |= b->start != req->offset || b->end != req->offset + total ?
			   GATE_RMW : GATE_WRITE;
	b->req.gate = b->gate;
	if (!gate_enter(q, &b->req))
		bounce_start(b);
	return true;
}

/* ---- WRITE_ZEROES off a block device's blocks ---- */

/* The parts complete on the queue's thread, one at a time. */
static void split_done(struct blk_req *r, int64_t res)
{
	struct blk_split *s = container_of(r, struct blk_split_part, req)->s;
	struct blk_req *orig = s->orig;

	if (res < 0 && !s->res)
		s->res = res;
	if (--s->pending)
		return;
	res = s->res;
	free(s);
	orig->cb(orig, res);
}

static void split_part(struct blk_split *s, enum blk_op op, uint64_t from, uint64_t to)
{
	struct blk_split_part *p = &s->part[s->pending++];

	p->s = s;
	/* The zeros are only read: a WRITE's iovec is not const. */
	p->iov = (struct iovec){ (void *)blk_zero_block, to - from };
	p->req = (struct blk_req){
		.op = op, .offset = from, .len = to - from, .unmap = s->orig->unmap,
		.fua = s->orig->fua, .cb = split_done,
	};
	if (op == BLK_OP_WRITE) {
		p->req.iov = &p->iov;
		p->req.iovcnt = 1;
	}
}

/*
 * A WRITE_ZEROES off the blocks fallocate takes (a block device's
 * logical block; under O_DIRECT, those it writes) becomes writes of zeros
 * at its ends, less than a block each, and a WRITE_ZEROES of the whole
 * blocks between.  False: req needs no split (or failed -ENOMEM).
 */
static bool zero_split(struct blk_queue *q, struct blk_req *req)
{
	struct blk_file *f = q->f;
	uint64_t g = f->blockdev && f->lbs > f->align ? f->lbs : f->align;
	uint64_t end = req->offset + req->len, a, z;
	struct blk_split *s;

	if (!((req->offset | req->len) & (g - 1)) || end < req->offset || end > f->size)
		return false;
	s = calloc(1, sizeof(*s));
	if (!s) {
		req->fail = -ENOMEM;
		return false;
	}
	s->orig = req;
	a = (req->offset + g - 1) & ~(g - 1);
	z = end & ~(g - 1);
	if (req->offset < a)
		split_part(s, BLK_OP_WRITE, req->offset, a < end ? a : end);
	if (a < z)
		split_part(s, BLK_OP_WRITE_ZEROES, a, z);
	if ((z > a ? z : a) < end)
		split_part(s, BLK_OP_WRITE, z > a ? z : a, end);
	/* pending counts them all before the first can complete. */
	for (unsigned int i = 0, n = s->pending; i < n; i++)
		blk_queue_add(q, &s->part[i].req);
	return true;
}

/* ---- requests and queues ---- */

static void resume_handler(void *opaque);

bool blk_align_add(struct blk_queue *q, struct blk_req *req)
{
	struct blk_file *f = q->f;

	if (req->op == BLK_OP_WRITE_ZEROES && zero_split(q, req))
		return true;
	if ((req->op == BLK_OP_READ || req->op == BLK_OP_WRITE) && f->align > 1 &&
	    req->len && !blk_req_check(f, req) && !blk_aligned(f, req))
		return bounce(q, req);
	if (!f->serialise || req->fail || req->op == BLK_OP_READ || req->op == BLK_OP_FLUSH)
		return false;
	req->gate = GATE_WRITE;
	return gate_enter(q, req);
}

int blk_align_queue_init(struct blk_queue *q)
{
	q->resume_fd = -1;
	if (!q->f->direct)
		return 0;
	q->resume_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->resume_fd < 0)
		return -1;
	if (iothread_add_fd(q->t, q->resume_fd, resume_handler, q) < 0) {
		close(q->resume_fd);
		q->resume_fd = -1;
		return -1;
	}
	return 0;
}

/* What the gate let through for this queue goes to its backend. */
static void resume_run(struct blk_queue *q)
{
	unsigned failed = 0;
	struct blk_req *r;

	pthread_mutex_lock(&q->f->lock);
	r = q->resume_head;
	q->resume_head = q->resume_tail = NULL;
	pthread_mutex_unlock(&q->f->lock);
	while (r) {
		struct blk_req *next = r->next;

		r->next = NULL;
		if (!(r->gate & GATE_BOUNCE))
			blk_queue_go(q, r);
		else if (!bounce_start(container_of(r, struct blk_bounce, req)))
			failed++;
		r = next;
	}
	blk_queue_submit(q);
	/* Completed here, outside any backend's batch: their batch ends now. */
	blk_queue_batch_end(q, failed);
}

static void resume_handler(void *opaque)
{
	struct blk_queue *q = opaque;
	eventfd_t v;

	(void)eventfd_read(q->resume_fd, &v);
	resume_run(q);
}

/* The parked requests of q leave the wait list; returns them. */
static struct blk_req *unpark(struct blk_queue *q)
{
	struct blk_file *f = q->f;
	struct blk_req *mine = NULL, **tail = &mine, **pp = &f->wait_head, *r;

	f->wait_tail = NULL;
	while ((r = *pp)) {
		if (r->owner == q) {
			*pp = r->next;
			*tail = r;
			tail = &r->next;
			r->next = NULL;
		} else {
			f->wait_tail = r;
			pp = &r->next;
		}
	}
	return mine;
}

void blk_align_queue_fini(struct blk_queue *q)
{
	struct blk_req *r;

	if (q->resume_fd < 0)
		return;
	/* Waits out a running handler: the resume list is ours from here. */
	iothread_del_fd(q->t, q->resume_fd);
	pthread_mutex_lock(&q->f->lock);
	r = unpark(q);
	/* Those behind ours may go now; none of ours is left to wake us. */
	gate_admit(q->f);
	pthread_mutex_unlock(&q->f->lock);
	close(q->resume_fd);
	q->resume_fd = -1;
	/* Never let through: they hold nothing, and no one was told of them. */
	while (r) {
		struct blk_req *next = r->next;

		if (r->gate & GATE_BOUNCE) {
			struct blk_bounce *b = container_of(r, struct blk_bounce, req);

			b->gate = 0;
			bounce_finish(b, -ECANCELED);
		} else {
			r->gate = 0;
			r->cb(r, -ECANCELED);
		}
		r = next;
	}
	/* Let through already: they run, and the backend's free waits for them. */
	resume_run(q);
}
