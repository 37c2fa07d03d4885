// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The limit a vhost-user-blk back end is measured against: the same 4 KiB
 * random reads of the same file at the same depth, issued by the least
 * code io_uring allows, with nothing else to do: a registered file,
 * fixed buffers, every free slot submitted and every completion reaped in
 * one io_uring_enter.  No latency statistics (they would cost what the
 * back ends pay for the front end's clock): a count and the process's CPU
 * time over the measured seconds.
 *
 * With --rate IOPS, read k is due at start + k / IOPS (at most N in
 * flight), and between them the loop sleeps in io_uring_enter until the
 * next one is due or a read completes: a reference for a back end's CPU
 * per I/O at that rate, which also has to wake for each request and read
 * it (not a lower bound: a timer wakes this loop, a kick the back end).
 *
 *   uring-limit --file F [--depth N] [--seconds S] [--warmup S] [--direct]
 *               [--rate IOPS] [--unregistered] [--notify write|sqe]
 *               [--notify-cpu N] [--preadv2]
 *
 * --unregistered reads into ordinary buffers (READ, not READ_FIXED), as a
 * back end whose buffers are the guest's memory does: what fixed buffers
 * are worth, measured against the default in the same run.
 *
 * --notify write|sqe wakes a thread asleep in poll(2) on an eventfd, on
 * --notify-cpu (default 0), after each batch of completions, as a back
 * end wakes its front end: by write(2), or by an IORING_OP_WRITE that
 * the loop's next io_uring_enter submits before it waits (one system
 * call fewer).  The eventfd is non-blocking, as brisk's call eventfds
 * are: io_uring writes a blocking one from a worker thread instead, at
 * many times the cost.  The woken thread's CPU time is not counted.
 *
 * --preadv2 (depth 1, no --rate, --notify or --direct) reads one block at
 * a time with preadv2(RWF_NOWAIT) instead, as brisk reads a request that
 * comes alone to its submit: what the ring costs for one read is the
 * difference from `--depth 1 --unregistered`.
 *
 * Prints "iops=... ios=... seconds=... backend_cpu_ns_per_io=...".
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <getopt.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail(const char *what, int err)
{
	fprintf(stderr, "uring-limit: %s: %s\n", what, strerror(err));
	exit(1);
}

static bool unregistered;
static bool use_preadv2;

/* --notify: the front end's stand-in, and how it is woken. */
enum { NOTIFY_NONE, NOTIFY_WRITE, NOTIFY_SQE };
#define NOTIFY_TAG UINT64_MAX
static int notify_fd = -1, notify_cpu;

static void *notify_reader(void *arg)
{
	struct pollfd pfd = { .fd = notify_fd, .events = POLLIN };
	cpu_set_t set;
	uint64_t v;
	int ret;

	(void)arg;
	CPU_ZERO(&set);
	CPU_SET(notify_cpu, &set);
	/* On the loop's CPU it would be the loop's cost: refuse to measure that. */
	if ((ret = pthread_setaffinity_np(pthread_self(), sizeof(set), &set)))
		fail("--notify-cpu", ret);
	for (;;) {
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			fail("poll", errno);
		if (read(notify_fd, &v, sizeof(v)) < 0 && errno != EAGAIN && errno != EINTR)
			fail("read", errno);
	}
	return NULL;
}

static void notify(struct io_uring *ring, int how)
{
	static const uint64_t one = 1;
	struct io_uring_sqe *sqe;

	if (how == NOTIFY_WRITE) {
		if (eventfd_write(notify_fd, 1) < 0)
			fail("eventfd_write", errno);
		return;
	}
	/* No completion on success: a CQE would end the next wait at once. */
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_write(sqe, notify_fd, &one, sizeof(one), 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	sqe->user_data = NOTIFY_TAG;
}

/* The offset of a random 4 KiB block. */
static uint64_t next_offset(uint64_t blocks)
{
	static uint64_t rng = 0x9e3779b97f4a7c15ull;

	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return (rng % blocks) * 4096;
}

/* A read of a random 4 KiB block into slot i's buffer. */
static void queue_read(struct io_uring *ring, struct iovec *iov, unsigned i, uint64_t blocks)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (unregistered)
		io_uring_prep_read(sqe, 0, iov[i].iov_base, 4096, next_offset(blocks));
	else
		io_uring_prep_read_fixed(sqe, 0, iov[i].iov_base, 4096, next_offset(blocks), (int)i);
	sqe->flags |= IOSQE_FIXED_FILE;
	sqe->user_data = i;
}

/*
 * --preadv2: each read by preadv2(RWF_NOWAIT); one the page cache misses
 * by pread(2) (brisk's ring reads those), which on a page-cached file
 * never happens.
 */
static void preadv2_loop(int fd, struct iovec *iov, uint64_t blocks, double warmup,
			 double seconds)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), t_meas = t0 + (uint64_t)(warmup * 1e9);
	uint64_t t_end = t_meas + (uint64_t)(seconds * 1e9), t = t0, ios = 0, cpu0 = 0;
	bool measuring = false;

	for (;;) {
		uint64_t off = next_offset(blocks);
		ssize_t n = preadv2(fd, iov, 1, (off_t)off, RWF_NOWAIT);

		if (n < 0 && errno == EAGAIN)
			n = pread(fd, iov->iov_base, 4096, (off_t)off);
		if (n != 4096)
			fail("read", n < 0 ? errno : EIO);
		ios += measuring;
		/*
		 * Measuring, the clock every 64 reads: it would cost about as
		 * much as the read.  In the warm-up (ios stays 0) every read.
		 */
		if (ios % 64)
			continue;
		t = clock_ns(CLOCK_MONOTONIC);
		if (!measuring && t >= t_meas) {
			measuring = true;
			cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
			t_meas = t;
		} else if (measuring && t >= t_end) {
			break;
		}
	}
	printf("iops=%.0f ios=%llu seconds=%.3f backend_cpu_ns_per_io=%.0f\n",
	       ios / ((t - t_meas) / 1e9), (unsigned long long)ios, (t - t_meas) / 1e9,
	       (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / ios);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "file", 1, 0, 'f' }, { "depth", 1, 0, 'd' }, { "seconds", 1, 0, 't' },
		{ "warmup", 1, 0, 'w' }, { "direct", 0, 0, 'D' }, { "rate", 1, 0, 'r' },
		{ "unregistered", 0, 0, 'u' }, { "notify", 1, 0, 'n' },
		{ "notify-cpu", 1, 0, 'c' }, { "preadv2", 0, 0, 'p' }, { 0 },
	};
	const char *file = NULL;
	unsigned depth = 64;
	double seconds = 5, warmup = 1, rate = 0;
	int c, fd, flags = O_RDONLY, ret;
	uint64_t blocks, ios = 0, t0, t_meas, t_end, t1 = 0;
	uint64_t cpu0 = 0, cpu1 = 0;
	struct io_uring ring;
	struct iovec *iov;
	struct stat st;
	bool measuring = false;
	int how = NOTIFY_NONE;
	pthread_t reader;
	clockid_t reader_clock;
	uint64_t rcpu0 = 0, rcpu1 = 0;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'f': file = optarg; break;
		case 'd': depth = (unsigned)atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 'w': warmup = atof(optarg); break;
		case 'D': flags |= O_DIRECT; break;
		case 'r': rate = atof(optarg); break;
		case 'u': unregistered = true; break;
		case 'n':
			how = !strcmp(optarg, "write") ? NOTIFY_WRITE :
			      !strcmp(optarg, "sqe") ? NOTIFY_SQE : -1;
			break;
		case 'c': notify_cpu = atoi(optarg); break;
		case 'p': use_preadv2 = true; break;
		default: exit(2);
		}
	}
	if (!file || depth < 1 || depth > 4096 || seconds <= 0 || rate < 0 || how < 0 ||
	    (use_preadv2 && (depth != 1 || rate || how != NOTIFY_NONE || (flags & O_DIRECT)))) {
		fprintf(stderr, "usage: uring-limit --file F [--depth N] [--seconds S] [--warmup S] "
			"[--direct] [--rate IOPS] [--unregistered] [--notify write|sqe] "
			"[--notify-cpu N] [--preadv2 (--depth 1, no --rate, --notify, --direct)]\n");
		return 2;
	}
	fd = open(file, flags);
	if (fd < 0 || fstat(fd, &st) < 0)
		fail(file, errno);
	/* A block device's size is not in st_size. */
	blocks = (S_ISBLK(st.st_mode) ? (uint64_t)lseek(fd, 0, SEEK_END) : (uint64_t)st.st_size) / 4096;
	if (!blocks)
		fail(file, EINVAL);
	iov = calloc(depth, sizeof(*iov));
	for (unsigned i = 0; iov && i < depth; i++) {
		iov[i].iov_len = 4096;
		if (posix_memalign(&iov[i].iov_base, 4096, 4096))
			iov = NULL;
	}
	if (!iov)
		fail("buffers", ENOMEM);
	if (use_preadv2) {
		preadv2_loop(fd, iov, blocks, warmup, seconds);
		return 0;
	}
	/* Room for a notify beside every read. */
	if ((ret = io_uring_queue_init(how == NOTIFY_NONE ? depth : 2 * depth, &ring, 0)) < 0)
		fail("io_uring_queue_init", -ret);
	if ((ret = io_uring_register_files(&ring, &fd, 1)) < 0)
		fail("register_files", -ret);
	if (!unregistered && (ret = io_uring_register_buffers(&ring, iov, depth)) < 0)
		fail("register_buffers", -ret);

	if (how != NOTIFY_NONE) {
		notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (notify_fd < 0)
			fail("eventfd", errno);
		if ((ret = pthread_create(&reader, NULL, notify_reader, NULL)) ||
		    (ret = pthread_getcpuclockid(reader, &reader_clock)))
			fail("notify thread", ret);
	}

	unsigned *free_slots = calloc(depth, sizeof(*free_slots)), nfree = 0;
	uint64_t due = 0, k = 0;

	if (!free_slots)
		fail("slots", ENOMEM);
	/* Closed loop: every slot busy from the start.  At a rate: all free. */
	for (unsigned i = 0; i < depth; i++) {
		if (rate)
			free_slots[nfree++] = i;
		else
			queue_read(&ring, iov, i, blocks);
	}
	t0 = clock_ns(CLOCK_MONOTONIC);
	t_meas = t0 + (uint64_t)(warmup * 1e9);
	t_end = t_meas + (uint64_t)(seconds * 1e9);
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, got = 0;
		uint64_t t;

		if (rate) {
			t = clock_ns(CLOCK_MONOTONIC);
			due = t0 + (uint64_t)(k * 1e9 / rate);
			if (due <= t && nfree) {
				queue_read(&ring, iov, free_slots[--nfree], blocks);
				k++;
				continue;
			}
			/* Submits what is queued, then sleeps until a read is due or done. */
			uint64_t wait = due > t ? due - t : 1000000;
			struct __kernel_timespec ts = { .tv_sec = (long long)(wait / 1000000000),
							.tv_nsec = (long long)(wait % 1000000000) };

			ret = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
			if (ret < 0 && ret != -ETIME && ret != -EINTR)
				fail("io_uring_enter", -ret);
		} else if ((ret = io_uring_submit_and_wait(&ring, 1)) < 0) {
			/* Submits what the last reap queued, and waits for one or more. */
			fail("io_uring_enter", -ret);
		}
		io_uring_for_each_cqe(&ring, head, cqe) {
			/* A notify posts a completion only when it failed. */
			if (cqe->user_data == NOTIFY_TAG)
				fail("notify write", cqe->res < 0 ? -cqe->res : EIO);
			if (cqe->res != 4096)
				fail("read", cqe->res < 0 ? -cqe->res : EIO);
			if (rate)
				free_slots[nfree++] = (unsigned)cqe->user_data;
			else
				queue_read(&ring, iov, (unsigned)cqe->user_data, blocks);
			got++;
		}
		io_uring_cq_advance(&ring, got);
		if (got && how != NOTIFY_NONE)
			notify(&ring, how);
		t = clock_ns(CLOCK_MONOTONIC);
		if (measuring)
			ios += got;
		if (!measuring && t >= t_meas) {
			measuring = true;
			cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
			if (how != NOTIFY_NONE)
				rcpu0 = clock_ns(reader_clock);
			t_meas = t;
		} else if (measuring && t >= t_end) {
			cpu1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
			if (how != NOTIFY_NONE)
				rcpu1 = clock_ns(reader_clock);
			t1 = t;
			break;
		}
	}
	printf("iops=%.0f ios=%llu seconds=%.3f backend_cpu_ns_per_io=%.0f\n",
	       ios / ((t1 - t_meas) / 1e9), (unsigned long long)ios, (t1 - t_meas) / 1e9,
	       ios ? (double)(cpu1 - cpu0 - (rcpu1 - rcpu0)) / ios : 0.0);
	return 0;
}
