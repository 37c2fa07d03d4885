// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A vhost-user-blk front-end that measures the back-end: 4 KiB random reads
 * at a fixed depth per queue, from "guest" RAM in memfds, on split or
 * packed rings with EVENT_IDX, waiting for completions on the call
 * eventfds (as a guest waits for interrupts) or polling the used rings.
 * Closed loop by default (an answered slot is reused at once); --rate
 * makes it open loop: request k is due at start + k / IOPS whatever
 * happened before, goes to queue k mod QUEUES, waits in the front end
 * while all DEPTH slots of that queue are busy, and its latency counts
 * from when it was due, so a back end that falls behind shows as
 * queueing instead of as fewer requests (no coordinated omission).
 * The rings are tests/virtio/vq-driver's and the protocol is
 * tests/vhost-user/vu-frontend's, so any vhost-user-blk back-end can be
 * driven: brisk -export, qemu-storage-daemon --export vhost-user-blk...
 *
 *   vhost-blk-bench --socket PATH [--ring split|packed] [--queues N]
 *                   [--depth N] [--seconds S] [--warmup S] [--poll]
 *                   [--indirect] [--backend-pid PID] [--rate IOPS]
 *                   [--ios N [--warmup-ios N]] [--step] [--window-cmd CMD]
 *
 * --ios stops after N answers (after the warm-up ones) instead of after
 * --seconds; --window-cmd runs "CMD on" before the measured I/Os and
 * "CMD off" after them, each with nothing in flight.  --step (split
 * rings, needs --backend-pid) makes DEPTH requests available at once,
 * only once the last batch is answered and every thread of the back end
 * sleeps, and asks for one call per batch: the back end then sees the
 * same events in every run, which is what makes an instruction count
 * (callgrind, through --window-cmd) repeat exactly; a closed loop races
 * the back end's re-check of the ring and its choice to notify.
 *
 * Prints one line of key=value: iops, p50_ns and p99_ns of the
 * completion latency, and with --backend-pid the back-end's CPU time
 * (user + system, all its threads, its process CPU clock) per I/O over the same
 * window.  Exit 3 when the back-end does not offer what was asked (e.g.
 * packed rings), 1 on any other failure, with one line on stderr: a
 * request that did not complete with status OK, a back-end that hung up
 * or died (--backend-pid), none answered for STALL_S seconds, or one
 * still unanswered STALL_S seconds after the run (every request made is
 * waited for), or under --step one that never goes idle (it polls).
 * "vhost-blk-bench: running" on stderr says the rings have started.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vu-frontend.h"

#define RING 256
#define MAX_QUEUES 2
#define F(bit) (1ull << (bit))
#define STR_(x) #x
#define STR(x) STR_(x)
#define MAX_SAMPLES (8u << 20)
#define STALL_S 10		/* no answer for this long: the run failed */

struct bq {
	struct vq_driver d;
	int kick, call;
	unsigned depth;
	int slot_of[RING];		/* buffer id -> request slot */
	uint64_t start[RING];		/* per slot: when it was made available (due) */
	unsigned free_slot[RING], nfree;
	uint16_t kick_old;		/* split: avail idx at the last kick check */
	uint16_t pk_old;		/* packed: slot and wrap then */
	bool pk_old_wrap;
};

static struct {
	const char *socket;
	bool packed, poll, indirect, step;
	unsigned queues, depth;
	double seconds, warmup, rate;
	uint64_t ios, warmup_ios;
	const char *window_cmd;
	int pid;
} opt = { .queues = 1, .depth = 64, .seconds = 10, .warmup = 2, .pid = -1 };

static uint64_t sectors, rng = 0x9e3779b97f4a7c15ull;
static uint32_t *samples;
static size_t nsamples;
static uint64_t budget;		/* requests still to be made in this phase */
static uint64_t due, period;	/* --rate: when the next request is due, ns between */
static unsigned next_q;		/* --rate: the queue the next request goes to */
static unsigned outstanding;	/* requests made and not answered */
static uint64_t last_answer;	/* when the last answer came (or the first request went) */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rand64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int die(int rc, const char *fmt, const char *arg)
{
	fprintf(stderr, "vhost-blk-bench: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(rc);
}

/*
 * This front end's own CPU: where it is near one CPU per second, the
 * figures measure the front end, not the back end.
 */
static uint64_t self_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * user + system CPU of a whole process, threads gone included, in ns; 0
 * if unknown.  Its CPU clock counts in ns, where /proc/PID/stat counts
 * clock ticks (10 ms: 2 us per I/O over 1 s at 5000 IOPS).
 */
static uint64_t proc_cpu_ns(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	struct timespec ts;
	clockid_t clk;
	FILE *f;
	size_t n;

	if (pid < 0)
		return 0;
	if (!clock_getcpuclockid(pid, &clk) && !clock_gettime(clk, &ts))
		return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces: fields count from its ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* One 4 KiB read at a random aligned offset in slot s, counted from t. */
static void submit(struct bq *q, unsigned s, uint64_t t)
{
	uint64_t sector = (rand64() % (sectors / 8)) * 8;
	int id = vuf_blk_add(&q->d, s, VUF_BLK_T_IN, sector, 4096, opt.indirect);

	if (id < 0 || id >= RING)
		die(1, "%s", "ring full: depth too large for the ring");
	q->slot_of[id] = (int)s;
	q->start[s] = t;
	if (!outstanding++)
		last_answer = now_ns();
	budget--;
}

/* EVENT_IDX: kick only when the back-end asked to hear of these entries. */
static void kick_if_wanted(struct bq *q)
{
	struct vq_driver *d = &q->d;
	bool kick;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!d->packed) {
		struct vring_used *u = drv_ptr(d, d->device);
		uint16_t ev = __atomic_load_n((uint16_t *)&u->ring[d->num], __ATOMIC_RELAXED);

		kick = vring_need_event(ev, d->avail_idx, q->kick_old);
		q->kick_old = d->avail_idx;
	} else {
		struct vring_packed_desc_event *e = drv_ptr(d, d->device);
		uint16_t flags = __atomic_load_n(&e->flags, __ATOMIC_RELAXED);
		unsigned n = 2 * d->num, old = q->pk_old + (q->pk_old_wrap ? 0 : d->num);
		unsigned cur = d->next_avail + (d->avail_wrap ? 0 : d->num);

		if (flags == VRING_PACKED_EVENT_FLAG_DESC) {
			uint16_t ow = __atomic_load_n(&e->off_wrap, __ATOMIC_RELAXED);
			unsigned ev = (ow & 0x7fff) + ((ow >> 15) ? 0 : d->num);

			/* The event slot is among those made available since. */
			kick = (ev + n - old) % n < (cur + n - old) % n;
		} else {
			kick = flags == VRING_PACKED_EVENT_FLAG_ENABLE;
		}
		q->pk_old = d->next_avail;
		q->pk_old_wrap = d->avail_wrap;
	}
	if (kick)
		eventfd_write(q->kick, 1);
}

/* Interrupts on for the next used entry (split: skip more on), or off while polling. */
static void want_interrupts(struct bq *q, bool on, uint16_t skip)
{
	struct vq_driver *d = &q->d;

	if (!d->packed) {
		struct vring_avail *a = drv_ptr(d, d->driver);

		__atomic_store_n(&a->ring[d->num],
				 (uint16_t)(on ? d->last_used_idx + skip : d->last_used_idx - 1),
				 __ATOMIC_RELAXED);
	} else {
		struct vring_packed_desc_event *e = drv_ptr(d, d->driver);

		__atomic_store_n(&e->flags, on ? VRING_PACKED_EVENT_FLAG_ENABLE :
				 VRING_PACKED_EVENT_FLAG_DISABLE, __ATOMIC_RELAXED);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Takes every used entry and frees its slot; returns how many. */
static unsigned reap(struct bq *q, bool measuring)
{
	unsigned n = 0;
	uint16_t id;
	uint32_t len;

	while (drv_reap(&q->d, &id, &len) == 1) {
		unsigned s = (unsigned)q->slot_of[id];
		uint64_t t = now_ns();

		if (vuf_blk_status(&q->d, s) != 0)
			die(1, "%s", "a read failed");
		outstanding--;
		last_answer = t;
		q->free_slot[q->nfree++] = s;
		if (measuring && nsamples < MAX_SAMPLES) {
			uint64_t lat = t - q->start[s];

			samples[nsamples++] = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
		}
		n++;
	}
	return n;
}

/*
 * Fails the run when the back-end is gone (it hung up, or --backend-pid
 * is no more) or has answered nothing for STALL_S seconds while requests
 * wait.  sock_ready: poll() found the socket readable; the back-end says
 * nothing on it unasked, so that is a hang-up or garbage.
 */
static void check_backend(int sock, bool sock_ready)
{
	char c;

	if (sock_ready && recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)
		die(1, "%s", "the back-end hung up");
	if (opt.pid >= 0 && kill(opt.pid, 0) < 0 && errno == ESRCH)
		die(1, "%s", "the back-end process is gone");
	if (outstanding && now_ns() - last_answer > STALL_S * 1000000000ull)
		die(1, "requests unanswered for %s s", STR(STALL_S));
}

/* Sleeps until some call eventfd fires, at most timeout ns. */
static void wait_call(struct bq *qs, int sock, uint64_t timeout)
{
	struct timespec ts = { (time_t)(timeout / 1000000000u), (long)(timeout % 1000000000u) };
	struct pollfd p[MAX_QUEUES + 1];
	eventfd_t v;

	for (unsigned i = 0; i < opt.queues; i++)
		p[i] = (struct pollfd){ .fd = qs[i].call, .events = POLLIN };
	p[opt.queues] = (struct pollfd){ .fd = sock, .events = POLLIN | POLLRDHUP };
	if (ppoll(p, opt.queues + 1, &ts, NULL) < 0 && errno != EINTR)
		die(1, "%s", "poll failed");
	for (unsigned i = 0; i < opt.queues; i++)
		if (p[i].revents)
			eventfd_read(qs[i].call, &v);
	check_backend(sock, p[opt.queues].revents);
}

/* True when every thread of the back end sleeps (S, or I for io_uring's). */
static bool backend_asleep(void)
{
	char path[64], buf[512], *p;
	struct dirent *e;
	bool asleep = true;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", opt.pid);
	d = opendir(path);
	if (!d)
		return false;
	while (asleep && (e = readdir(d))) {
		FILE *f;
		size_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/stat", opt.pid, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;	/* a thread that just ended */
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		p = strrchr(buf, ')');
		asleep = p && (p[2] == 'S' || p[2] == 'I');
	}
	closedir(d);
	return asleep;
}

/*
 * --step: waits until the back end has finished with the last batch (it
 * may still be re-checking the ring after its last answer): all its
 * threads asleep in two looks 100 us apart, as one look reads the threads
 * one by one and one may wake another in between.
 */
static void wait_idle(int sock)
{
	struct timespec gap = { 0, 100000 };
	uint64_t t0 = now_ns();

	for (int seen = 0; (seen = backend_asleep() ? seen + 1 : 0) < 2;) {
		check_backend(sock, false);
		if (now_ns() - t0 > STALL_S * 1000000000ull)
			die(1, "the back-end never went idle in %s s (does it poll?)", STR(STALL_S));
		nanosleep(&gap, NULL);
	}
}

/* --window-cmd: "CMD on" / "CMD off", with nothing in flight. */
static void window(int sock, const char *arg)
{
	char cmd[4096];

	if (!opt.window_cmd)
		return;
	if (opt.step)
		wait_idle(sock);
	snprintf(cmd, sizeof(cmd), "%s %s", opt.window_cmd, arg);
	if (system(cmd) != 0)
		die(1, "window command failed: %s", cmd);
}

/*
 * Makes requests in the free slots while the phase's budget lasts: all of
 * them (closed loop), those due by now (--rate: round robin over the
 * queues, a due request whose queue is full waits), or a whole batch once
 * the last one is answered and the back end sleeps (--step).
 */
static void fill(struct bq *qs, int sock, uint64_t t)
{
	unsigned made[MAX_QUEUES] = { 0 };

	if (opt.step) {
		if (outstanding || !budget)
			return;
		wait_idle(sock);
		t = now_ns();
	}
	if (opt.rate > 0) {
		for (; budget && due <= t; next_q = (next_q + 1) % opt.queues) {
			struct bq *q = &qs[next_q];

			if (!q->nfree)
				break;
			submit(q, q->free_slot[--q->nfree], due);
			made[next_q]++;
			due += period;
		}
	} else {
		for (unsigned i = 0; i < opt.queues; i++)
			for (; budget && qs[i].nfree; made[i]++)
				submit(&qs[i], qs[i].free_slot[--qs[i].nfree], t);
	}
	for (unsigned i = 0; i < opt.queues; i++) {
		if (!made[i])
			continue;
		/*
		 * --step: one call, for the batch's last answer; a front end
		 * that re-armed as answers came would race the back end's
		 * choice to notify each of them.
		 */
		if (opt.step && !opt.poll)
			want_interrupts(&qs[i], true, (uint16_t)(made[i] - 1));
		kick_if_wanted(&qs[i]);
	}
}

/* What a phase measured: answers, and the window's time and back-end CPU. */
struct window {
	uint64_t ios, t0, t1, cpu0, cpu1, self0, self1;
	bool on;
};

static void measure(struct window *w, bool on)
{
	uint64_t t = now_ns(), cpu = proc_cpu_ns(opt.pid), self = self_cpu_ns();

	if (on)
		w->t0 = t, w->cpu0 = cpu, w->self0 = self;
	else
		w->t1 = t, w->cpu1 = cpu, w->self1 = self;
	w->on = on;
}

/*
 * One phase: makes n requests (or, when until is not 0, stops making them
 * then) and waits for every one made; the answers count from measure_at
 * to until (or to the last).
 */
static void run(struct bq *qs, int sock, uint64_t n, uint64_t measure_at, uint64_t until,
		struct window *w)
{
	uint64_t t_check = 0;

	budget = n;
	due = now_ns();
	for (;;) {
		uint64_t t = now_ns(), wait = 100000000;
		unsigned got = 0;

		if (!w->on && !w->t1 && t >= measure_at)
			measure(w, true);
		if (until && t >= until && budget) {
			budget = 0;	/* the run is over: answers make no new requests */
			if (w->on)
				measure(w, false);
		}
		fill(qs, sock, t);
		for (unsigned i = 0; i < opt.queues; i++)
			got += reap(&qs[i], w->on);
		if (w->on)
			w->ios += got;
		if (!budget && !outstanding) {
			if (w->on)
				measure(w, false);
			return;
		}
		if (got)
			continue;
		/*
		 * Nothing answered: wait for an answer on the call (--poll:
		 * spin), under --rate at most until the next request is due,
		 * else at most 100 ms, so that check_backend runs.  A request
		 * already due found its queue full: it waits as a driver
		 * waits for its interrupt.  Spinning instead (interrupts off
		 * on a split ring) would spare the back end the call it pays
		 * for each answer, and on a CPU shared with the back end
		 * would keep it from running.
		 */
		if (opt.rate > 0 && budget && due > t)
			wait = due - t;
		if (opt.poll) {
			/* Idle: a look at the back-end every millisecond or so. */
			if (t - t_check > 1000000) {
				struct pollfd p = { .fd = sock, .events = POLLIN | POLLRDHUP };

				check_backend(sock, poll(&p, 1, 0) > 0);
				t_check = t;
			}
			continue;
		}
		/* Interrupts on, one more look (a completion may have slipped in), sleep. */
		for (unsigned i = 0; i < opt.queues; i++) {
			if (!opt.step)
				want_interrupts(&qs[i], true, 0);
			got += reap(&qs[i], w->on);
		}
		if (w->on)
			w->ios += got;
		if (!got)
			wait_call(qs, sock, wait);
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void connect_backend(struct vuf *f, struct bq *qs)
{
	uint64_t want = F(32) | F(29) | (opt.packed ? F(34) : 0) |
			(opt.indirect ? F(28) : 0) | (opt.queues > 1 ? F(12) : 0);
	struct vhost_user_config c = { .offset = 0, .size = 8 };
	struct vq_driver *dp[MAX_QUEUES];
	struct vhost_user_msg r;
	uint64_t nq = 1;

	if (vuf_connect(f, opt.socket) < 0)
		die(1, "cannot connect to %s", opt.socket);
	if (vuf_negotiate(f, want, F(0) | F(3) | F(9)) < 0)
		die(1, "negotiation failed: %s", f->err.msg);
	if ((f->features & want) != want)
		die(3, "%s", "the back-end does not offer the features asked for");
	if ((f->protocol & F(0)) && vuf_get_u64(f, VHOST_USER_GET_QUEUE_NUM, &nq) < 0)
		die(1, "GET_QUEUE_NUM: %s", f->err.msg);
	if (nq < opt.queues)
		die(3, "%s", "the back-end has fewer queues than asked for");
	if (!(f->protocol & F(9)) ||
	    vuf_request(f, VHOST_USER_GET_CONFIG, &c, 12 + c.size, NULL, 0, &r) < 0 ||
	    r.hdr.size != 12 + c.size)
		die(1, "%s", "cannot read the disk size (GET_CONFIG)");
	memcpy(&sectors, r.payload.config.data, 8);
	if (sectors < 8)
		die(1, "%s", "disk smaller than 4 KiB");
	for (unsigned i = 0; i < opt.queues; i++) {
		drv_init_shared(&qs[i].d, opt.packed, RING, 4 << 20, 0x100000000ull * (i + 1));
		qs[i].kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		qs[i].call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		qs[i].pk_old_wrap = true;
		dp[i] = &qs[i].d;
	}
	if (vuf_set_mem(f, dp, opt.queues) < 0)
		die(1, "SET_MEM_TABLE: %s", f->err.msg);
	for (unsigned i = 0; i < opt.queues; i++)
		if (vuf_start_ring(f, i, &qs[i].d, opt.packed ? 0x80008000ll : 0, qs[i].kick,
				   qs[i].call) < 0)
			die(1, "ring setup: %s", f->err.msg);
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", 1, 0, 's' }, { "ring", 1, 0, 'r' }, { "queues", 1, 0, 'q' },
		{ "depth", 1, 0, 'd' }, { "seconds", 1, 0, 't' }, { "warmup", 1, 0, 'w' },
		{ "poll", 0, 0, 'p' }, { "indirect", 0, 0, 'i' }, { "backend-pid", 1, 0, 'P' },
		{ "rate", 1, 0, 'R' }, { "ios", 1, 0, 'n' }, { "warmup-ios", 1, 0, 'W' },
		{ "step", 0, 0, 'S' }, { "window-cmd", 1, 0, 'c' },
		{ 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': opt.socket = optarg; break;
		case 'r': opt.packed = !strcmp(optarg, "packed"); break;
		case 'q': opt.queues = (unsigned)atoi(optarg); break;
		case 'd': opt.depth = (unsigned)atoi(optarg); break;
		case 't': opt.seconds = atof(optarg); break;
		case 'w': opt.warmup = atof(optarg); break;
		case 'p': opt.poll = true; break;
		case 'i': opt.indirect = true; break;
		case 'P': opt.pid = atoi(optarg); break;
		case 'R': opt.rate = atof(optarg); break;
		case 'n': opt.ios = strtoull(optarg, NULL, 0); break;
		case 'W': opt.warmup_ios = strtoull(optarg, NULL, 0); break;
		case 'S': opt.step = true; break;
		case 'c': opt.window_cmd = optarg; break;
		default: exit(2);
		}
	}
	/* A direct chain takes 3 descriptors, and packed rings count them. */
	if (!opt.socket || opt.queues < 1 || opt.queues > MAX_QUEUES || opt.depth < 1 ||
	    opt.depth * (opt.indirect ? 1 : 3) > RING || opt.seconds <= 0 || opt.rate < 0 ||
	    (opt.step && (opt.pid < 0 || opt.packed)))
		die(2, "%s", "usage: --socket PATH [--ring split|packed] [--queues 1|2] "
		    "[--depth N (3N <= 256 without --indirect)] [--seconds S] [--warmup S] "
		    "[--poll] [--indirect] [--backend-pid PID] [--rate IOPS] "
		    "[--ios N [--warmup-ios N]] [--step (split, with --backend-pid)] [--window-cmd CMD]");
}

int main(int argc, char **argv)
{
	struct bq qs[MAX_QUEUES] = { 0 };
	struct window w = { 0 }, warm = { 0 };
	struct vuf f;

	parse(argc, argv);
	samples = malloc(MAX_SAMPLES * sizeof(*samples));
	if (!samples)
		die(1, "%s", "out of memory");
	/* --rate sleeps until each request is due: the default 50 us slack would delay it. */
	if (opt.rate > 0) {
		prctl(PR_SET_TIMERSLACK, 1ul, 0ul, 0ul, 0ul);
		period = (uint64_t)(1e9 / opt.rate);
	}
	connect_backend(&f, qs);
	fprintf(stderr, "vhost-blk-bench: running\n");
	for (unsigned i = 0; i < opt.queues; i++) {
		want_interrupts(&qs[i], !opt.poll, 0);
		for (unsigned s = opt.depth; s-- > 0;)
			qs[i].free_slot[qs[i].nfree++] = s;
	}
	if (opt.ios) {
		/* Warm-up and measured I/Os apart, nothing in flight between. */
		run(qs, f.sock, opt.warmup_ios, UINT64_MAX, 0, &warm);
		window(f.sock, "on");
		run(qs, f.sock, opt.ios, 0, 0, &w);
		window(f.sock, "off");
	} else {
		uint64_t t0 = now_ns(), t_warm = t0 + (uint64_t)(opt.warmup * 1e9);

		if (opt.window_cmd)
			die(2, "%s", "--window-cmd needs --ios");
		run(qs, f.sock, UINT64_MAX, t_warm, t_warm + (uint64_t)(opt.seconds * 1e9), &w);
	}
	/* Every request made is answered (run waits for them), or the run failed. */
	check_backend(f.sock, false);
	qsort(samples, nsamples, sizeof(*samples), cmp_u32);
	printf("iops=%.0f ios=%llu seconds=%.3f p50_ns=%u p99_ns=%u",
	       w.ios / ((w.t1 - w.t0) / 1e9), (unsigned long long)w.ios,
	       (w.t1 - w.t0) / 1e9, nsamples ? samples[nsamples / 2] : 0,
	       nsamples ? samples[nsamples * 99 / 100] : 0);
	if (opt.pid >= 0 && w.ios)
		printf(" backend_cpu_ns_per_io=%.0f", (double)(w.cpu1 - w.cpu0) / w.ios);
	if (w.ios)
		printf(" frontend_cpu_ns_per_io=%.0f", (double)(w.self1 - w.self0) / w.ios);
	printf("\n");
	vuf_close(&f);
	return 0;
}
