// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The storage daemon against front-ends that misbehave, for as long as
 * asked: one `brisk -export` process serving DISKS disks, FRONTENDS
 * front-end processes (two per disk, taking turns on its socket) that
 * connect, run verified reads and writes on split or packed rings, and
 * end each session in one of four ways: hang up cleanly, die by SIGKILL
 * with requests in flight (their own, or the harness's at any moment),
 * RESET_DEVICE with requests in flight and go on, or truncate their
 * memory under the daemon's requests.  Every few seconds of the run's
 * first half the harness SIGKILLs the daemon itself and starts another
 * on the same disks: a front-end on a split ring carries its
 * INFLIGHT_SHMFD region to the new daemon and goes on, and each request
 * it had out must be answered by the new one exactly once (one answered
 * twice, or never, fails); a session on a packed ring, which is not
 * tracked, ends there.
 *
 *   vhost-user-soak --brisk PATH [--dir DIR] [--seconds S] [--seed N]
 *
 * Each front-end owns half of its disk and keeps, in memory the harness
 * shares with it (so that it survives the front-end's death), the
 * generation of every 4 KiB block: what was acknowledged, and what a
 * write not yet acknowledged may have left.  Every block a front-end
 * reads, and at the end every block of every front-end, must hold one of
 * those; a write whose front-end truncated its own memory under it may
 * have left anything, so such a block is written again before it is read.
 *
 * TAP: the daemon ended only when killed, and exits 0 on SIGTERM; every
 * request that completed had status OK; every read and the final pass
 * verified; the daemon's fds are back to where they were before the
 * first front-end; its resident memory at the end is within 16 MiB of
 * what it was then; its stderr holds only the lines these sessions call
 * for.  Then the figures, as "# key=value" lines.  The run's length and
 * the moments of the harness's kills are the only things time decides,
 * besides the bounds on a hang (an answer 10 s late, a front-end without
 * progress for 60 s), which correct code never comes near.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "vu-frontend.h"

#define DISKS 4
#define FRONTENDS (2 * DISKS)
#define NQ 2
#define RING 64
#define DEPTH 8			/* requests in flight per ring */
#define BLOCK 4096u
#define BLOCKS 512		/* per front-end: 2 MiB */
#define DISK_SIZE (2ull * BLOCKS * BLOCK)
#define RAM (1u << 20)		/* per ring */
#define WAIT_MS 10000
#define STUCK_S 60		/* a front-end that long without progress hangs */
#define MAGIC 0x4b414f53u
#define F(bit) (1ull << (bit))

enum fate { CLEAN, SELF_KILL, RESET, TRUNCATE, NFATES };

struct fe_state {
	uint32_t gen[BLOCKS];		/* acknowledged */
	uint32_t pending[BLOCKS];	/* a write not acknowledged, 0: none */
	uint8_t unknown[BLOCKS];	/* a write from memory that vanished */
	uint64_t sessions, fates[NFATES], harness_kills;
	uint64_t completed, reads_verified, writes_acked, blocks_final;
	uint64_t progress;		/* bumped by every completion and session */
	/*
	 * Requests out when this front-end's daemon died, not yet answered by
	 * the next: while any are, the harness kills neither this front-end
	 * nor the daemon, so that a request lost on the way fails the run.
	 */
	volatile unsigned resume_wait;
	char why[256];			/* the first failure */
};

struct shared {
	struct fe_state fe[FRONTENDS];
	volatile int stop;		/* end after the current session */
	volatile int failures;
	/*
	 * Daemons started, and kills begun: a session that began with
	 * daemon_gen g and fails once daemon_kills > g lost its daemon.
	 */
	volatile unsigned daemon_gen, daemon_kills;
	uint64_t resumed, resubmitted;	/* sessions that outlived a daemon, requests */
};

static struct shared *sh;
static char dir[PATH_MAX];
static unsigned long long seed;

static char *sock_path(unsigned disk)
{
	static char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/d%u.sock", dir, disk);
	return p;
}

static uint64_t rnd(uint64_t *s)
{
	/* splitmix64: reproducible per front-end and session from --seed */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fail(unsigned f, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED) == 0 || !sh->fe[f].why[0]) {
		va_start(ap, fmt);
		vsnprintf(sh->fe[f].why, sizeof(sh->fe[f].why), fmt, ap);
		va_end(ap);
	}
	_exit(1);
}

/* Generation 0 is the zeroed disk; any other one a pattern naming it. */
static void fill(uint8_t *p, unsigned f, unsigned blk, uint32_t gen)
{
	uint64_t s = (uint64_t)f << 48 ^ (uint64_t)blk << 32 ^ gen;
	uint32_t hdr[4] = { MAGIC, f, blk, gen };

	if (!gen) {
		memset(p, 0, BLOCK);
		return;
	}
	for (unsigned i = 0; i < BLOCK; i += 8) {
		uint64_t v = rnd(&s);

		memcpy(p + i, &v, 8);
	}
	memcpy(p, hdr, sizeof(hdr));
}

/* Which of the block's allowed generations p holds; -1: none of them. */
static int64_t holds(const uint8_t *p, unsigned f, unsigned blk)
{
	struct fe_state *st = &sh->fe[f];
	uint32_t cand[2] = { st->gen[blk], st->pending[blk] };
	static uint8_t want[BLOCK];

	for (unsigned i = 0; i < 2; i++) {
		if (i && !cand[i])
			break;
		fill(want, f, blk, cand[i]);
		if (!memcmp(p, want, BLOCK))
			return cand[i];
	}
	return -1;
}

/* ---- one front-end ---- */

struct req {
	bool busy;
	bool resumed;			/* out when the daemon died */
	uint32_t type;
	unsigned blk;
	uint32_t gen;
};

struct fe {
	unsigned f, disk;
	uint64_t rng;
	struct vuf v;
	struct vq_driver d[NQ];
	int kick[NQ], call[NQ];
	bool packed, sealable;
	struct req slot[NQ][DEPTH];
	int slot_of[NQ][RING];		/* buffer id -> slot */
	bool busy_blk[BLOCKS];
	unsigned inflight;
	int ifl_fd;			/* INFLIGHT_SHMFD region, kept across daemons */
	struct vhost_user_inflight ifl;
	unsigned gen;			/* the daemon's generation this session began in */
};

static void rings_init(struct fe *e)
{
	for (unsigned q = 0; q < NQ; q++) {
		drv_init_shared(&e->d[q], e->packed, RING, RAM, 0x1000000ull * (q + 1));
		/* Memory the daemon cannot seal is memory it must watch. */
		if (!e->sealable && fcntl(e->d[q].memfd, F_ADD_SEALS, F_SEAL_SEAL) < 0)
			fail(e->f, "F_SEAL_SEAL: %s", strerror(errno));
		memset(e->slot[q], 0, sizeof(e->slot[q]));
	}
}

/*
 * A request to the daemon failed.  If the harness killed the daemon since
 * this session began, that is why: the session ends, its writes still out
 * left pending for the next one to read.  Otherwise it is a failure.
 */
static void lost(struct fe *e, const char *what)
{
	if (sh->daemon_kills != e->gen)
		_exit(0);
	fail(e->f, "%s: %s", what, e->v.err.msg);
}

/* Memory and rings; resumed, each ring from its used index, as QEMU's front-end does. */
static void rings_start(struct fe *e, bool resumed)
{
	struct vq_driver *dp[NQ] = { &e->d[0], &e->d[1] };

	if (vuf_set_mem(&e->v, dp, NQ) < 0)
		lost(e, "SET_MEM_TABLE");
	for (unsigned q = 0; q < NQ; q++) {
		struct vring_used *u = drv_ptr(&e->d[q], e->d[q].device);

		if (vuf_start_ring(&e->v, q, &e->d[q], resumed ? u->idx : -1, e->kick[q],
				   e->call[q]) < 0)
			lost(e, "starting a ring");
	}
}

/* The region a daemon records this session's requests in: fresh, or kept. */
static void fe_inflight(struct fe *e)
{
	struct vhost_user_msg r;

	if (e->ifl_fd < 0) {
		struct vhost_user_inflight in = { .num_queues = NQ, .queue_size = RING };

		if (vuf_request(&e->v, VHOST_USER_GET_INFLIGHT_FD, &in, sizeof(in), NULL, 0,
				&r) < 0)
			lost(e, "GET_INFLIGHT_FD");
		e->ifl = r.payload.inflight;
		e->ifl_fd = vhost_user_take_fd(&r, 0);
		vhost_user_close_fds(&r);
	}
	if (vuf_request(&e->v, VHOST_USER_SET_INFLIGHT_FD, &e->ifl, sizeof(e->ifl), &e->ifl_fd, 1,
			NULL) < 0)
		lost(e, "SET_INFLIGHT_FD");
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Connects, waiting while the daemon restarts (the socket refuses) and,
 * in the backlog, while the other front-end of this disk has its turn
 * (its sessions are short).  Then negotiates and hands over the inflight
 * region: a fresh one, or the one kept from the daemon that died.
 */
static void fe_connect(struct fe *e)
{
	uint64_t want = ~0ull & ~(e->packed ? 0 : F(VIRTIO_F_RING_PACKED));
	double until = now_s() + STUCK_S;

	e->gen = sh->daemon_gen;
	while (vuf_connect(&e->v, sock_path(e->disk)) < 0) {
		if (errno != ECONNREFUSED && errno != ENOENT)
			fail(e->f, "connect %s: %s", sock_path(e->disk), strerror(errno));
		if (now_s() > until)
			fail(e->f, "the daemon did not come back in %d s", STUCK_S);
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
		e->gen = sh->daemon_gen;
	}
	if (vuf_negotiate(&e->v, want, ~0ull) < 0)
		lost(e, "negotiation");
	if (!(e->v.protocol & F(VHOST_USER_PROTOCOL_F_RESET_DEVICE)) ||
	    !(e->v.protocol & F(VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD)))
		fail(e->f, "RESET_DEVICE or INFLIGHT_SHMFD not offered");
	fe_inflight(e);
}

static void fe_open(struct fe *e)
{
	e->ifl_fd = -1;
	for (unsigned q = 0; q < NQ; q++) {
		e->kick[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		e->call[q] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	}
	rings_init(e);
	fe_connect(e);
	rings_start(e, false);
}

/*
 * The daemon died under this session's requests, and another came up: a
 * split ring goes on where its used ring says, and the new daemon, given
 * the region, must serve each request still out exactly once.  A packed
 * ring is not tracked: that session ends, its writes left pending.
 */
static void fe_resume(struct fe *e)
{
	if (e->packed)
		_exit(0);
	vuf_close(&e->v);
	for (unsigned q = 0; q < NQ; q++)
		for (unsigned s = 0; s < DEPTH; s++)
			e->slot[q][s].resumed = e->slot[q][s].busy;
	sh->fe[e->f].resume_wait = e->inflight;
	fe_connect(e);
	rings_start(e, true);
	__atomic_fetch_add(&sh->resumed, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&sh->resubmitted, e->inflight, __ATOMIC_RELAXED);
}

/* Adds one request on ring q, if it has room; a block no request holds. */
static void add_one(struct fe *e, unsigned q)
{
	struct fe_state *st = &sh->fe[e->f];
	unsigned s, blk;
	struct req *r;
	int id;

	for (s = 0; s < DEPTH && e->slot[q][s].busy; s++)
		;
	if (s == DEPTH)
		return;
	do
		blk = (unsigned)(rnd(&e->rng) % BLOCKS);
	while (e->busy_blk[blk]);
	r = &e->slot[q][s];
	/*
	 * A block a dead session may have written is read before it is
	 * written again, which keeps its candidates to two; one that may
	 * hold anything is written first.
	 */
	*r = (struct req){ .busy = true, .blk = blk, .type = VUF_BLK_T_IN };
	if (st->unknown[blk] || (!st->pending[blk] && (rnd(&e->rng) & 1)))
		r->type = VUF_BLK_T_OUT;
	if (r->type == VUF_BLK_T_OUT) {
		r->gen = (st->gen[blk] > st->pending[blk] ? st->gen[blk] : st->pending[blk]) + 1;
		fill(vuf_blk_data(&e->d[q], s), e->f, blk, r->gen);
		st->pending[blk] = r->gen;	/* before the daemon can see it */
	} else {
		memset(vuf_blk_data(&e->d[q], s), 0xee, BLOCK);
	}
	id = vuf_blk_add(&e->d[q], s, r->type,
			 ((uint64_t)(e->f / DISKS) * BLOCKS + blk) * (BLOCK / 512), BLOCK,
			 rnd(&e->rng) & 1);
	if (id < 0)
		fail(e->f, "ring %u full with %u of %u slots busy", q, s, DEPTH);
	e->slot_of[q][id] = (int)s;
	e->busy_blk[blk] = true;
	e->inflight++;
	eventfd_write(e->kick[q], 1);
}

static void complete(struct fe *e, unsigned q, unsigned s)
{
	struct fe_state *st = &sh->fe[e->f];
	struct req *r = &e->slot[q][s];
	uint8_t status = vuf_blk_status(&e->d[q], s);
	int64_t g;

	if (status != 0)
		fail(e->f, "%s of block %u on ring %u: status %u",
		     r->type == VUF_BLK_T_OUT ? "write" : "read", r->blk, q, status);
	if (r->type == VUF_BLK_T_OUT) {
		st->gen[r->blk] = r->gen;
		st->pending[r->blk] = 0;
		st->unknown[r->blk] = 0;
		st->writes_acked++;
	} else {
		g = holds(vuf_blk_data(&e->d[q], s), e->f, r->blk);
		if (g < 0)
			fail(e->f, "block %u holds neither generation %u nor %u", r->blk,
			     st->gen[r->blk], st->pending[r->blk]);
		/* What a write that died with its front-end left: now known. */
		st->gen[r->blk] = (uint32_t)g;
		st->pending[r->blk] = 0;
		st->reads_verified++;
	}
	if (r->resumed)
		st->resume_wait--;
	r->busy = r->resumed = false;
	e->busy_blk[r->blk] = false;
	e->inflight--;
	st->completed++;
	st->progress++;
}

/*
 * Takes what the rings used; waits for an interrupt when nothing was, or
 * for the daemon to hang up: killed by the harness, the session resumes
 * on the next one; otherwise the daemon had no reason to.
 */
static unsigned take_used(struct fe *e)
{
	unsigned got = 0;

	for (unsigned q = 0; q < NQ; q++) {
		uint32_t len;
		uint16_t id;

		while (drv_reap(&e->d[q], &id, &len) == 1) {
			if (id >= RING || e->slot_of[q][id] < 0 || !e->slot[q][e->slot_of[q][id]].busy)
				fail(e->f, "ring %u used buffer %u, which is not out", q, id);
			complete(e, q, (unsigned)e->slot_of[q][id]);
			e->slot_of[q][id] = -1;
			got++;
		}
	}
	return got;
}

static void reap(struct fe *e)
{
	struct pollfd p[NQ + 1];

	if (take_used(e))
		return;
	for (unsigned q = 0; q < NQ; q++) {
		struct vq_driver *d = &e->d[q];

		/* EVENT_IDX on a split ring: an interrupt at the next used entry. */
		if (!d->packed)
			__atomic_store_n(&((struct vring_avail *)drv_ptr(d, d->driver))->ring[d->num],
					 d->last_used_idx, __ATOMIC_RELAXED);
		p[q] = (struct pollfd){ .fd = e->call[q], .events = POLLIN };
	}
	/*
	 * An entry the daemon used before it could see that request (it read
	 * the old used_event) comes with no interrupt: look again, after the
	 * store, before sleeping, as a driver must.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (take_used(e))
		return;
	p[NQ] = (struct pollfd){ .fd = e->v.sock, .events = POLLRDHUP };
	if (poll(p, NQ + 1, WAIT_MS) == 0)
		fail(e->f, "%u requests out and no interrupt for %d ms", e->inflight, WAIT_MS);
	for (unsigned q = 0; q < NQ; q++)
		eventfd_read(e->call[q], &(eventfd_t){ 0 });
	if (p[NQ].revents) {
		if (sh->daemon_kills == e->gen)
			fail(e->f, "the daemon hung up with %u requests out", e->inflight);
		fe_resume(e);
	}
}

static void run_requests(struct fe *e, unsigned n)
{
	for (unsigned done = 0; done < n; done++) {
		for (unsigned q = 0; q < NQ; q++)
			while (e->inflight < NQ * DEPTH - 1 && (rnd(&e->rng) & 3))
				add_one(e, q);
		if (e->inflight)
			reap(e);
	}
}

static void drain(struct fe *e)
{
	while (e->inflight)
		reap(e);
}

/* Whatever the rings still hold is forgotten: the slots start afresh. */
static void forget_inflight(struct fe *e, bool unknown)
{
	for (unsigned q = 0; q < NQ; q++)
		for (unsigned s = 0; s < DEPTH; s++)
			if (e->slot[q][s].busy && e->slot[q][s].type == VUF_BLK_T_OUT && unknown)
				sh->fe[e->f].unknown[e->slot[q][s].blk] = 1;
	memset(e->busy_blk, 0, sizeof(e->busy_blk));
	memset(e->slot_of, 0xff, sizeof(e->slot_of));
	e->inflight = 0;
}

static void session(unsigned f, uint64_t n)
{
	struct fe_state *st = &sh->fe[f];
	struct fe e = { .f = f, .disk = f % DISKS };
	enum fate fate;

	/* A session that died resuming left nothing this one waits for. */
	st->resume_wait = 0;
	e.rng = seed ^ (uint64_t)f << 56 ^ n;
	memset(e.slot_of, 0xff, sizeof(e.slot_of));
	fate = sh->stop ? CLEAN : (enum fate)(rnd(&e.rng) % NFATES);
	e.packed = rnd(&e.rng) & 1;
	e.sealable = fate != TRUNCATE;
	fe_open(&e);
	st->sessions++;
	st->progress++;
	run_requests(&e, 32 + (unsigned)(rnd(&e.rng) % 480));
	/* What a dead daemon left is answered, each once, before anything else. */
	while (st->resume_wait)
		reap(&e);
	st->fates[fate]++;
	switch (fate) {
	case CLEAN:
		drain(&e);
		break;
	case SELF_KILL:
		raise(SIGKILL);
		break;
	case RESET:
		/* The reset's answer comes once the old requests are done. */
		if (vuf_request(&e.v, VHOST_USER_RESET_DEVICE, NULL, 0, NULL, 0, NULL) < 0)
			lost(&e, "RESET_DEVICE");
		forget_inflight(&e, false);
		for (unsigned q = 0; q < NQ; q++)
			drv_destroy(&e.d[q]);
		rings_init(&e);
		/* Nothing of the old rings counts: a new region for the new ones. */
		close(e.ifl_fd);
		e.ifl_fd = -1;
		fe_inflight(&e);
		if (vuf_set_u64(&e.v, VHOST_USER_SET_FEATURES, e.v.features &
				~(e.packed ? 0 : F(VIRTIO_F_RING_PACKED))) < 0)
			lost(&e, "SET_FEATURES after reset");
		rings_start(&e, false);
		run_requests(&e, 32 + (unsigned)(rnd(&e.rng) % 256));
		drain(&e);
		break;
	case TRUNCATE:
		/*
		 * With requests out, ring 0's memory goes: the daemon must end
		 * this connection, and only it.  This process may not touch
		 * that memory any more either.
		 */
		forget_inflight(&e, true);
		if (ftruncate(e.d[0].memfd, 0) < 0)
			fail(f, "ftruncate: %s", strerror(errno));
		eventfd_write(e.kick[0], 1);
		if (!vuf_closed(&e.v, WAIT_MS))
			fail(f, "the daemon kept a connection whose memory shrank");
		_exit(0);
	default:
		break;
	}
	vuf_close(&e.v);
	close(e.ifl_fd);
	for (unsigned q = 0; q < NQ; q++) {
		drv_destroy(&e.d[q]);
		close(e.kick[q]);
		close(e.call[q]);
	}
}

/* Reads every block of front-end f through a fresh session. */
static void final_pass(unsigned f)
{
	struct fe e = { .f = f, .disk = f % DISKS, .sealable = true };
	struct fe_state *st = &sh->fe[f];

	memset(e.slot_of, 0xff, sizeof(e.slot_of));
	fe_open(&e);
	for (unsigned blk = 0; blk < BLOCKS; blk++) {
		if (st->unknown[blk])
			continue;	/* written again by no session since */
		int id = vuf_blk_add(&e.d[0], 0, VUF_BLK_T_IN,
				     ((uint64_t)(f / DISKS) * BLOCKS + blk) * (BLOCK / 512),
				     BLOCK, false);

		if (id < 0)
			fail(f, "final pass: ring full");
		e.slot_of[0][id] = 0;
		e.slot[0][0] = (struct req){ .busy = true, .blk = blk, .type = VUF_BLK_T_IN };
		e.inflight = 1;
		eventfd_write(e.kick[0], 1);
		drain(&e);
		st->blocks_final++;
	}
	vuf_close(&e.v);
}

static void worker(unsigned f, bool final)
{
	signal(SIGTERM, SIG_DFL);
	if (final) {
		final_pass(f);
		_exit(0);
	}
	for (uint64_t n = 0; !sh->stop; n++)
		session(f, sh->fe[f].sessions * 1000003 + n);
	_exit(0);
}

/* ---- the harness ---- */

static pid_t daemon_pid;
static const char *brisk_path;

/* The disks' files, zeroed: generation 0 of every block. */
static void make_disks(void)
{
	char p[PATH_MAX + 16];
	int fd;

	for (unsigned i = 0; i < DISKS; i++) {
		snprintf(p, sizeof(p), "%s/d%u.img", dir, i);
		fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)DISK_SIZE) < 0) {
			fprintf(stderr, "%s: %s\n", p, strerror(errno));
			exit(1);
		}
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/daemon.log", dir);
	unlink(p);
}

static void start_daemon(void)
{
	char log[PATH_MAX + 16], *argv[4 * DISKS + 2];
	static char args[2 * DISKS][PATH_MAX + 200];
	static const char *const drive_opts[DISKS] = {
		"aio=io_uring,cache=none", "aio=threads", "", "cache=writeback",
	};
	static const char *const export_opts[DISKS] = {
		"", ",iothreads=2", ",poll-us=0", ",queue-size=64,iothreads=2",
	};
	unsigned n = 0;
	int fd;

	argv[n] = (char *)"brisk";
	n++;
	for (unsigned i = 0; i < DISKS; i++) {
		snprintf(args[2 * i], sizeof(args[0]),
			 "file=%s/d%u.img,if=none,id=d%u%s%s", dir, i, i,
			 *drive_opts[i] ? "," : "", drive_opts[i]);
		snprintf(args[2 * i + 1], sizeof(args[0]),
			 "vhost-user-blk,id=e%u,drive=d%u,addr.path=%s,num-queues=%u,"
			 "writable=on%s", i, i, sock_path(i), NQ, export_opts[i]);
		argv[n++] = (char *)"-drive";
		argv[n++] = args[2 * i];
		argv[n++] = (char *)"-export";
		argv[n++] = args[2 * i + 1];
	}
	argv[n] = NULL;
	snprintf(log, sizeof(log), "%s/daemon.log", dir);
	daemon_pid = fork();
	if (daemon_pid == 0) {
		/* One log for every daemon of the run. */
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execv(brisk_path, argv);
		_exit(127);
	}
}


static long fd_count(pid_t pid)
{
	char p[64];
	struct dirent *de;
	long n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/fd", pid);
	d = opendir(p);
	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A field of /proc/PID/status, in kB; -1 if it cannot be read. */
static long status_kb(pid_t pid, const char *field)
{
	char p[64], line[256];
	size_t len = strlen(field);
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':')
			v = atol(line + len + 1);
	fclose(f);
	return v;
}

static void nap_ms(long ms)
{
	nanosleep(&(struct timespec){ ms / 1000, ms % 1000 * 1000000 }, NULL);
}

static bool daemon_up(void)
{
	int status;

	return daemon_pid > 0 && waitpid(daemon_pid, &status, WNOHANG) == 0;
}

static bool sockets_ready(void)
{
	struct stat sb;

	for (unsigned i = 0; i < DISKS; i++)
		if (stat(sock_path(i), &sb) < 0 || !S_ISSOCK(sb.st_mode))
			return false;
	return true;
}

static bool resuming(void)
{
	for (unsigned f = 0; f < FRONTENDS; f++)
		if (sh->fe[f].resume_wait)
			return true;
	return false;
}

static pid_t spawn(unsigned f, bool final)
{
	pid_t pid = fork();

	if (pid == 0)
		worker(f, final);
	return pid;
}

/* One worker ended: true when that is how a worker may end. */
static bool worker_ended_well(unsigned f, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return true;
	if (!sh->fe[f].why[0])
		snprintf(sh->fe[f].why, sizeof(sh->fe[f].why), "ended with status %#x", status);
	return false;
}

/*
 * Every line the daemon wrote is one these sessions call for: a memory
 * that shrank (its count in *shrank), what the zeros read in its place
 * made of a ring, a write the kernel was handed from the vanished pages,
 * and a message or reply cut short by a front-end that was killed.
 */
static bool log_expected(unsigned *lines, unsigned *shrank)
{
	static const char *const allowed[] = {
		"memory shrank under a request; closing the connection",
		"needs reset",
		"I/O error: Bad address",
		"sendmsg: Broken pipe; closing the connection",
		"recvmsg: Connection reset by peer; closing the connection",
		NULL,
	};
	char p[PATH_MAX + 16], line[1024];
	bool ok = true;
	FILE *f;

	snprintf(p, sizeof(p), "%s/daemon.log", dir);
	f = fopen(p, "r");
	if (!f)
		return false;
	*lines = *shrank = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned i;

		++*lines;
		*shrank += !!strstr(line, allowed[0]);
		for (i = 0; allowed[i] && !strstr(line, allowed[i]); i++)
			;
		if (!allowed[i]) {
			fprintf(stderr, "# unexpected from the daemon: %s", line);
			ok = false;
		}
	}
	fclose(f);
	return ok;
}

static void usage(void)
{
	fprintf(stderr, "usage: vhost-user-soak --brisk PATH [--dir DIR] [--seconds S] "
		"[--seed N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "brisk", required_argument, NULL, 'b' },
		{ "dir", required_argument, NULL, 'd' },
		{ "seconds", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	pid_t pid[FRONTENDS] = { 0 };
	double seconds = 20, start, ran, next_kill, last_progress[FRONTENDS];
	uint64_t seen[FRONTENDS] = { 0 }, rs = 0;
	long fds0, fds1, rss0, rss1 = -1, hwm = -1;
	unsigned lines = 0, shrank = 0, alive;
	uint64_t sum[10] = { 0 };
	bool made_dir = false;
	int c, status;

	seed = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'b': brisk_path = optarg; break;
		case 'd': snprintf(dir, sizeof(dir), "%s", optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'r': seed = strtoull(optarg, NULL, 0); break;
		default: usage();
		}
	}
	if (!brisk_path || optind != argc || seconds <= 0)
		usage();
	if (!dir[0]) {
		const char *base = getenv("VU_TEST_DIR") ? getenv("VU_TEST_DIR") : "/var/tmp";

		snprintf(dir, sizeof(dir), "%s/vu-soak.XXXXXX", base);
		made_dir = true;
		if (!mkdtemp(dir)) {
			fprintf(stderr, "%s: %s\n", dir, strerror(errno));
			return 1;
		}
	}
	/* A front-end's hang-up must not end the harness. */
	signal(SIGPIPE, SIG_IGN);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	rs = seed;
	printf("# seed %llu, %u disks, %u front-ends, %.0f s, in %s\n", seed, DISKS, FRONTENDS,
	       seconds, dir);
	make_disks();
	start_daemon();
	for (start = now_s(); !sockets_ready() && daemon_up() && now_s() < start + 10;)
		nap_ms(10);
	CHECK(sockets_ready() && daemon_up());
	check_case("the daemon serves %u sockets", DISKS);
	if (!sockets_ready()) {
		if (daemon_pid > 0)
			kill(daemon_pid, SIGKILL);
		return check_done();
	}
	fds0 = fd_count(daemon_pid);
	rss0 = status_kb(daemon_pid, "VmRSS");

	start = now_s();
	next_kill = start + 2;
	for (unsigned f = 0; f < FRONTENDS; f++) {
		pid[f] = spawn(f, false);
		last_progress[f] = start;
	}
	while (now_s() < start + seconds && daemon_up() && !sh->failures) {
		nap_ms(20);
		for (unsigned f = 0; f < FRONTENDS; f++) {
			if (waitpid(pid[f], &status, WNOHANG) == pid[f]) {
				if (!worker_ended_well(f, status))
					sh->failures++;
				pid[f] = spawn(f, false);
			}
			if (sh->fe[f].progress != seen[f]) {
				seen[f] = sh->fe[f].progress;
				last_progress[f] = now_s();
			} else if (now_s() > last_progress[f] + STUCK_S) {
				snprintf(sh->fe[f].why, sizeof(sh->fe[f].why),
					 "no progress for %d s", STUCK_S);
				sh->failures++;
			}
		}
		/*
		 * Every few seconds the daemon dies, wherever it is, and the next
		 * one comes up on the same disks.  The front-ends' sessions go on.
		 * In the run's second half the last daemon serves them all, so
		 * that what it leaks per session adds up where the end sees it.
		 */
		if (now_s() > next_kill && now_s() < start + seconds / 2 && !resuming()) {
			sh->daemon_kills++;
			kill(daemon_pid, SIGKILL);
			waitpid(daemon_pid, &status, 0);
			sh->daemon_gen++;
			start_daemon();
			next_kill = now_s() + 1 + (double)(rnd(&rs) % 3000) / 1000;
		}
		/* About one kill a second, of whichever front-end, wherever it is. */
		if (rnd(&rs) % 50 == 0) {
			unsigned f = (unsigned)(rnd(&rs) % FRONTENDS);

			if (!sh->fe[f].resume_wait) {
				kill(pid[f], SIGKILL);
				sh->fe[f].harness_kills++;
			}
		}
	}
	ran = now_s() - start;
	sh->stop = 1;
	for (unsigned f = 0; f < FRONTENDS; f++) {
		/* Its last session, ended cleanly, bounded as every session is. */
		for (double end = now_s() + STUCK_S; waitpid(pid[f], &status, WNOHANG) == 0;) {
			if (now_s() > end) {
				snprintf(sh->fe[f].why, sizeof(sh->fe[f].why), "its last session hangs");
				kill(pid[f], SIGKILL);
			}
			nap_ms(10);
		}
		if (!worker_ended_well(f, status))
			sh->failures++;
	}
	for (unsigned f = 0; f < FRONTENDS; f++)
		if (sh->fe[f].why[0])
			fprintf(stderr, "front-end %u: %s\n", f, sh->fe[f].why);
	CHECK(sh->failures == 0);
	check_case("front-ends: every request OK, every read verified");

	CHECK(daemon_up());
	check_case("the daemon outlived every front-end, and ended only when killed");

	sh->failures = 0;
	for (unsigned f = 0; f < FRONTENDS; f++)
		pid[f] = spawn(f, true);
	alive = FRONTENDS;
	for (double end = now_s() + STUCK_S; alive && now_s() < end; nap_ms(10))
		for (unsigned f = 0; f < FRONTENDS; f++)
			if (pid[f] > 0 && waitpid(pid[f], &status, WNOHANG) == pid[f]) {
				if (!WIFEXITED(status) || WEXITSTATUS(status))
					sh->failures++;
				pid[f] = 0;
				alive--;
			}
	for (unsigned f = 0; f < FRONTENDS; f++) {
		if (pid[f] > 0)
			kill(pid[f], SIGKILL);
		if (sh->fe[f].why[0])
			fprintf(stderr, "final pass, front-end %u: %s\n", f, sh->fe[f].why);
	}
	CHECK(alive == 0 && sh->failures == 0);
	check_case("every block of every front-end holds what it was told");

	/* The last hang-ups may still be closing: a bound, not a verdict. */
	for (double end = now_s() + 10; fd_count(daemon_pid) != fds0 && now_s() < end;)
		nap_ms(10);
	fds1 = fd_count(daemon_pid);
	rss1 = status_kb(daemon_pid, "VmRSS");
	hwm = status_kb(daemon_pid, "VmHWM");
	CHECK_EQ(fds1, fds0);
	check_case("the daemon's fds are back to %ld", fds0);
	CHECK(rss0 > 0 && rss1 > 0 && rss1 <= rss0 + 16 * 1024);
	check_case("the daemon's resident memory is back within 16 MiB");

	kill(daemon_pid, SIGTERM);
	CHECK(waitpid(daemon_pid, &status, 0) == daemon_pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	check_case("SIGTERM ends the daemon with 0");
	CHECK(log_expected(&lines, &shrank));
	check_case("the daemon said only what these sessions call for");

	for (unsigned f = 0; f < FRONTENDS; f++) {
		struct fe_state *st = &sh->fe[f];

		sum[0] += st->sessions;
		for (unsigned i = 0; i < NFATES; i++)
			sum[1 + i] += st->fates[i];
		sum[5] += st->harness_kills;
		sum[6] += st->completed;
		sum[7] += st->reads_verified;
		sum[8] += st->writes_acked;
		sum[9] += st->blocks_final;
	}
	/* A session that did not shrink its memory cannot be said to have. */
	CHECK(shrank <= sum[1 + TRUNCATE]);
	check_case("the daemon saw memory shrink only where it did (%u of %llu)", shrank,
		   (unsigned long long)sum[1 + TRUNCATE]);
	printf("# seconds=%.0f sessions=%llu clean=%llu self_kill=%llu reset=%llu "
	       "truncate=%llu harness_kills=%llu\n", ran,
	       (unsigned long long)sum[0], (unsigned long long)sum[1],
	       (unsigned long long)sum[2], (unsigned long long)sum[3],
	       (unsigned long long)sum[4], (unsigned long long)sum[5]);
	printf("# daemon_kills=%u sessions_resumed=%llu requests_in_flight_at_resume=%llu\n",
	       sh->daemon_kills, (unsigned long long)sh->resumed,
	       (unsigned long long)sh->resubmitted);
	printf("# requests=%llu reads_verified=%llu writes_acked=%llu final_blocks=%llu\n",
	       (unsigned long long)sum[6], (unsigned long long)sum[7],
	       (unsigned long long)sum[8], (unsigned long long)sum[9]);
	printf("# daemon: fds %ld -> %ld, rss_kb %ld -> %ld, peak_rss_kb=%ld, stderr_lines=%u\n",
	       fds0, fds1, rss0, rss1, hwm, lines);
	if (made_dir && !failed) {
		char p[PATH_MAX + 16];

		for (unsigned i = 0; i < DISKS; i++) {
			snprintf(p, sizeof(p), "%s/d%u.img", dir, i);
			unlink(p);
		}
		snprintf(p, sizeof(p), "%s/daemon.log", dir);
		unlink(p);
		rmdir(dir);
	}
	return check_done();
}
