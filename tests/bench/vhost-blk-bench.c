// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A vhost-user-blk front-end that measures the back-end: closed-loop 4 KiB
 * random reads at a fixed depth per queue, from "guest" RAM in memfds, on
 * split or packed rings with EVENT_IDX, waiting for completions on the
 * call eventfds (as a guest waits for interrupts) or polling the used
 * rings.  The rings are tests/virtio/vq-driver's and the protocol is
 * tests/vhost-user/vu-frontend's, so any vhost-user-blk back-end can be
 * driven: brisk -export, qemu-storage-daemon --export vhost-user-blk...
 *
 *   vhost-blk-bench --socket PATH [--ring split|packed] [--queues N]
 *                   [--depth N] [--seconds S] [--warmup S] [--poll]
 *                   [--indirect] [--backend-pid PID]
 *
 * Prints one line of key=value: iops, p50_ns and p99_ns of the
 * completion latency, and with --backend-pid the back-end's CPU time
 * (user + system, all its threads, /proc/PID/stat) per I/O over the same
 * window.  Exit 3 when the back-end does not offer what was asked (e.g.
 * packed rings), 1 on any other failure, with one line on stderr: a
 * request that did not complete with status OK, a back-end that hung up
 * or died (--backend-pid), none answered for STALL_S seconds, or one
 * still unanswered STALL_S seconds after the run (every request made is
 * waited for).  "vhost-blk-bench: running" on stderr says the rings have
 * started.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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
	uint64_t start[RING];		/* per slot: when it was made available */
	uint16_t kick_old;		/* split: avail idx at the last kick check */
	uint16_t pk_old;		/* packed: slot and wrap then */
	bool pk_old_wrap;
};

static struct {
	const char *socket;
	bool packed, poll, indirect;
	unsigned queues, depth;
	double seconds, warmup;
	int pid;
} opt = { .queues = 1, .depth = 64, .seconds = 10, .warmup = 2, .pid = -1 };

static uint64_t sectors, rng = 0x9e3779b97f4a7c15ull;
static uint32_t *samples;
static size_t nsamples;
static bool draining;		/* the run is over: answers make no new requests */
static unsigned outstanding;	/* requests made and not answered */
static uint64_t last_answer;	/* when the last answer came */

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

/* user + system CPU of a whole process, in ns; 0 if unknown. */
static uint64_t proc_cpu_ns(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;
	size_t n;

	if (pid < 0)
		return 0;
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

/* One 4 KiB read at a random aligned offset in slot s. */
static void submit(struct bq *q, unsigned s)
{
	uint64_t sector = (rand64() % (sectors / 8)) * 8;
	int id = vuf_blk_add(&q->d, s, VUF_BLK_T_IN, sector, 4096, opt.indirect);

	if (id < 0 || id >= RING)
		die(1, "%s", "ring full: depth too large for the ring");
	q->slot_of[id] = (int)s;
	q->start[s] = now_ns();
	outstanding++;
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

/* Interrupts on for the next used entry, or off while polling. */
static void want_interrupts(struct bq *q, bool on)
{
	struct vq_driver *d = &q->d;

	if (!d->packed) {
		struct vring_avail *a = drv_ptr(d, d->driver);

		__atomic_store_n(&a->ring[d->num],
				 (uint16_t)(on ? d->last_used_idx : d->last_used_idx - 1),
				 __ATOMIC_RELAXED);
	} else {
		struct vring_packed_desc_event *e = drv_ptr(d, d->driver);

		__atomic_store_n(&e->flags, on ? VRING_PACKED_EVENT_FLAG_ENABLE :
				 VRING_PACKED_EVENT_FLAG_DISABLE, __ATOMIC_RELAXED);
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Takes every used entry, resubmits its slot; returns how many. */
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
		if (draining)
			continue;
		if (measuring && nsamples < MAX_SAMPLES) {
			uint64_t lat = t - q->start[s];

			samples[nsamples++] = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
		}
		submit(q, s);
		n++;
	}
	if (n)
		kick_if_wanted(q);
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

/* Sleeps until some call eventfd fires, at most 100 ms. */
static void wait_call(struct bq *qs, int sock)
{
	struct pollfd p[MAX_QUEUES + 1];
	eventfd_t v;

	for (unsigned i = 0; i < opt.queues; i++)
		p[i] = (struct pollfd){ .fd = qs[i].call, .events = POLLIN };
	p[opt.queues] = (struct pollfd){ .fd = sock, .events = POLLIN | POLLRDHUP };
	if (poll(p, opt.queues + 1, 100) < 0 && errno != EINTR)
		die(1, "%s", "poll failed");
	for (unsigned i = 0; i < opt.queues; i++)
		if (p[i].revents)
			eventfd_read(qs[i].call, &v);
	check_backend(sock, p[opt.queues].revents);
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
		default: exit(2);
		}
	}
	/* A direct chain takes 3 descriptors, and packed rings count them. */
	if (!opt.socket || opt.queues < 1 || opt.queues > MAX_QUEUES || opt.depth < 1 ||
	    opt.depth * (opt.indirect ? 1 : 3) > RING || opt.seconds <= 0)
		die(2, "%s", "usage: --socket PATH [--ring split|packed] [--queues 1|2] "
		    "[--depth N (3N <= 256 without --indirect)] [--seconds S] [--warmup S] "
		    "[--poll] [--indirect] [--backend-pid PID]");
}

int main(int argc, char **argv)
{
	struct bq qs[MAX_QUEUES] = { 0 };
	uint64_t t0, t_start = 0, t_end, cpu0 = 0, cpu1, ios = 0, t_check = 0;
	bool measuring = false;
	struct vuf f;

	parse(argc, argv);
	samples = malloc(MAX_SAMPLES * sizeof(*samples));
	if (!samples)
		die(1, "%s", "out of memory");
	connect_backend(&f, qs);
	fprintf(stderr, "vhost-blk-bench: running\n");
	for (unsigned i = 0; i < opt.queues; i++) {
		want_interrupts(&qs[i], !opt.poll);
		for (unsigned s = 0; s < opt.depth; s++)
			submit(&qs[i], s);
		kick_if_wanted(&qs[i]);
	}
	t0 = last_answer = now_ns();
	t_end = t0 + (uint64_t)((opt.warmup + opt.seconds) * 1e9);
	for (;;) {
		unsigned n = 0;
		uint64_t t = now_ns();

		if (!measuring && t >= t0 + (uint64_t)(opt.warmup * 1e9)) {
			measuring = true;
			t_start = t;
			cpu0 = proc_cpu_ns(opt.pid);
		}
		if (t >= t_end)
			break;
		for (unsigned i = 0; i < opt.queues; i++)
			n += reap(&qs[i], measuring);
		if (measuring)
			ios += n;
		if (n)
			continue;
		if (opt.poll) {
			/* Idle: a look at the back-end every millisecond or so. */
			if (t - t_check > 1000000) {
				struct pollfd p = { .fd = f.sock, .events = POLLIN | POLLRDHUP };

				check_backend(f.sock, poll(&p, 1, 0) > 0);
				t_check = t;
			}
			continue;
		}
		/* Interrupts on, one more look (a completion may have slipped in), sleep. */
		for (unsigned i = 0; i < opt.queues; i++) {
			want_interrupts(&qs[i], true);
			n += reap(&qs[i], measuring);
		}
		if (measuring)
			ios += n;
		if (!n)
			wait_call(qs, f.sock);
	}
	cpu1 = proc_cpu_ns(opt.pid);
	t_end = now_ns();
	/* Every request made is answered, or the run failed. */
	draining = true;
	while (outstanding) {
		unsigned n = 0;

		for (unsigned i = 0; i < opt.queues; i++) {
			want_interrupts(&qs[i], true);
			n += reap(&qs[i], false);
		}
		if (!n && outstanding)
			wait_call(qs, f.sock);
	}
	check_backend(f.sock, false);
	qsort(samples, nsamples, sizeof(*samples), cmp_u32);
	printf("iops=%.0f ios=%llu seconds=%.3f p50_ns=%u p99_ns=%u",
	       ios / ((t_end - t_start) / 1e9), (unsigned long long)ios,
	       (t_end - t_start) / 1e9, nsamples ? samples[nsamples / 2] : 0,
	       nsamples ? samples[nsamples * 99 / 100] : 0);
	if (opt.pid >= 0 && ios)
		printf(" backend_cpu_ns_per_io=%.0f", (double)(cpu1 - cpu0) / ios);
	printf("\n");
	vuf_close(&f);
	return 0;
}
