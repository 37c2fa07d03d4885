// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * brisk's virtio-blk served over vhost-user, driven by a small front-end
 * (vu-frontend.c) over the export's Unix socket: negotiation, I/O on split
 * and packed rings, a ring stopped with requests in flight and restarted
 * from its base, a front-end that vanishes mid-I/O, and messages a
 * hostile front-end may send, each of which must end that connection with
 * one line on stderr and leave the back-end serving the next one.
 *
 * Expected values come from the specs: feature and protocol-feature bit
 * numbers from VIRTIO 1.2 and QEMU's docs/interop/vhost-user.rst, the
 * config layout from VIRTIO 1.2 5.2.4 (capacity at 0, num_queues at 34),
 * the packed base layout from vhost-user's GET_VRING_BASE.  The device's
 * I/O and control threads run for real; every wait is bounded.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hw/block/virtio-blk.h"
#include "vu-frontend.h"

#include "capture.h"
#include "check.h"

#define DISK_SIZE (4u << 20)
#define NQ 2
#define RING 64
#define WAIT_MS 5000
#define F(bit) (1ull << (bit))

/* VIRTIO 1.2 feature bits. */
#define F_VERSION_1 F(32)
#define F_PACKED F(34)
#define F_EVENT_IDX F(29)
#define F_INDIRECT F(28)
#define F_BLK_RO F(5)
#define F_BLK_FLUSH F(9)
#define F_BLK_MQ F(12)
/* vhost-user protocol feature bits, and the protocol-features bit. */
#define P_MQ F(0)
#define P_REPLY_ACK F(3)
#define P_CONFIG F(9)
#define P_INFLIGHT F(12)
#define P_RESET_DEVICE F(13)
#define F_PROTOCOL F(30)
#define S_OK 0
#define S_IOERR 1

static char sock_path[64], disk_path[PATH_MAX];
static struct blk_cmdline *cmdline;

static uint8_t disk_byte(uint64_t off)
{
	return (uint8_t)(off / 512 + off * 7);
}

/* In the build tree when meson says where: /tmp may not take O_DIRECT. */
static void make_disk(void)
{
	const char *dir = getenv("VU_TEST_DIR");
	uint8_t *buf = malloc(DISK_SIZE);
	int fd;

	snprintf(disk_path, sizeof(disk_path), "%s/brisk-vu-disk-XXXXXX", dir ? dir : "/tmp");
	fd = mkstemp(disk_path);
	for (uint64_t i = 0; i < DISK_SIZE; i++)
		buf[i] = disk_byte(i);
	if (fd < 0 || pwrite(fd, buf, DISK_SIZE, 0) != DISK_SIZE) {
		perror("temp disk");
		exit(1);
	}
	close(fd);
	free(buf);
}

static bool disk_holds(uint64_t off, const uint8_t *want, size_t len)
{
	uint8_t buf[4096];
	int fd = open(disk_path, O_RDONLY | O_CLOEXEC);
	bool ok = fd >= 0 && len <= sizeof(buf) &&
		  pread(fd, buf, len, (off_t)off) == (ssize_t)len && !memcmp(buf, want, len);

	if (fd >= 0)
		close(fd);
	return ok;
}

static const char *cache = "writeback";

/* The export, built from command-line strings as brisk builds it. */
static void backend_start(const char *opts)
{
	char drive[PATH_MAX + 64], exp[256];

	snprintf(drive, sizeof(drive), "file=%s,if=none,id=d0,cache=%s", disk_path, cache);
	snprintf(exp, sizeof(exp), "vhost-user-blk,id=e0,drive=d0,addr.path=%s,"
		 "num-queues=%d%s", sock_path, NQ, opts);
	cmdline = blk_cmdline_new();
	if (blk_cmdline_drive(cmdline, drive) < 0 || blk_cmdline_export(cmdline, exp) < 0 ||
	    blk_cmdline_finish(cmdline) < 0 || blk_devices_create(cmdline, NULL) < 0) {
		fprintf(stderr, "cannot start the export\n");
		exit(1);
	}
}

static void backend_stop(void)
{
	blk_devices_destroy(cmdline);
	blk_cmdline_free(cmdline);
	cmdline = NULL;
}

/* ---- a front-end with NQ rings ---- */

struct conn {
	struct vuf f;
	struct vq_driver d[NQ];
	int kick[NQ], call[NQ], err[NQ];
	bool packed;
	unsigned nd;		/* drivers set up */
};

static int efd(void)
{
	return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

static uint64_t want_features(bool packed)
{
	return ~0ull & ~(packed ? 0 : F_PACKED);
}

enum stage { CONNECTED, NEGOTIATED, MEMORY };

/* Memory files that nobody can seal any more, as tmpfs and hugetlbfs files. */
static bool unsealable;

/* Rings laid out in shared memory, and the connection taken to stage. */
static int conn_prepare(struct conn *k, bool packed, enum stage stage)
{
	struct vq_driver *dp[NQ];

	memset(k, 0, sizeof(*k));
	k->packed = packed;
	for (unsigned q = 0; q < NQ; q++) {
		drv_init_shared(&k->d[q], packed, RING, 4 << 20, 0x1000000ull * (q + 1));
		if (unsealable && fcntl(k->d[q].memfd, F_ADD_SEALS, F_SEAL_SEAL) < 0)
			return -1;
		k->kick[q] = efd();
		k->call[q] = efd();
		k->err[q] = efd();
		dp[q] = &k->d[q];
	}
	k->nd = NQ;
	if (vuf_connect(&k->f, sock_path) < 0)
		return -1;
	if (stage >= NEGOTIATED && vuf_negotiate(&k->f, want_features(packed), ~0ull) < 0)
		return -1;
	return stage >= MEMORY ? vuf_set_mem(&k->f, dp, NQ) : 0;
}

/* Every ring started; ring 0 from base0 (-1: from its start). */
static int conn_start(struct conn *k, int64_t base0)
{
	for (unsigned q = 0; q < NQ; q++)
		if (vuf_request(&k->f, VHOST_USER_SET_VRING_ERR, &(uint64_t){ q }, 8,
				&k->err[q], 1, NULL) < 0 ||
		    vuf_start_ring(&k->f, q, &k->d[q], q ? -1 : base0, k->kick[q],
				   k->call[q]) < 0)
			return -1;
	return 0;
}

static int conn_open(struct conn *k, bool packed)
{
	if (conn_prepare(k, packed, MEMORY) < 0)
		return -1;
	return conn_start(k, -1);
}

static void conn_close(struct conn *k)
{
	vuf_close(&k->f);
	for (unsigned q = 0; q < k->nd; q++) {
		drv_destroy(&k->d[q]);
		close(k->kick[q]);
		close(k->call[q]);
		close(k->err[q]);
	}
	k->nd = 0;
}

static void kick(struct conn *k, unsigned q)
{
	eventfd_write(k->kick[q], 1);
}

/* Split with EVENT_IDX: ask for an interrupt at the next used entry. */
static void want_irq(struct conn *k, unsigned q)
{
	struct vq_driver *d = &k->d[q];

	if (!d->packed)
		((struct vring_avail *)drv_ptr(d, d->driver))->ring[d->num] = d->last_used_idx;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reaps up to n used buffers of ring q within timeout_ms; ids in order. */
static unsigned reap(struct conn *k, unsigned q, unsigned n, uint16_t *ids, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	unsigned got = 0;

	while (got < n) {
		struct pollfd p = { .fd = k->call[q], .events = POLLIN };
		uint32_t len;
		uint16_t id;

		if (drv_reap(&k->d[q], &id, &len) == 1) {
			if (ids)
				ids[got] = id;
			got++;
			continue;
		}
		want_irq(k, q);
		if (now_ms() >= end)
			break;
		if (poll(&p, 1, 1) == 1)
			eventfd_read(k->call[q], &(eventfd_t){ 0 });
	}
	return got;
}

/* One request on ring q in slot 0, waited for: its status, or -1. */
static int io(struct conn *k, unsigned q, uint32_t type, uint64_t sector, uint32_t len,
	      bool indirect)
{
	if (vuf_blk_add(&k->d[q], 0, type, sector, len, indirect) < 0)
		return -1;
	kick(k, q);
	if (reap(k, q, 1, NULL, WAIT_MS) != 1)
		return -1;
	return vuf_blk_status(&k->d[q], 0);
}

static bool data_is_disk(const uint8_t *p, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != disk_byte(off + i))
			return false;
	return true;
}

/* How many mappings of this process show the file behind fd. */
static int mappings_of(int fd)
{
	char line[512], path[64];
	unsigned long ino, want;
	struct stat st;
	FILE *f;
	int n = 0;

	if (fstat(fd, &st) < 0)
		return -1;
	want = (unsigned long)st.st_ino;
	f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %lu %63s", &ino, path) >= 1 && ino == want &&
		    strstr(line, "vq-driver"))
			n++;
	fclose(f);
	return n;
}

/* ---- capturing brisk's stderr lines ---- */

/* ---- tests ---- */

static void test_negotiation(void)
{
	struct vhost_user_config c = { .offset = 0, .size = 60 };
	struct vhost_user_msg r;
	uint64_t v, cap = 0;
	uint16_t nq = 0;
	struct vuf f;

	CHECK(vuf_connect(&f, sock_path) == 0);
	CHECK(vuf_get_u64(&f, VHOST_USER_GET_FEATURES, &v) == 0);
	CHECK((v & (F_VERSION_1 | F_PROTOCOL | F_PACKED | F_EVENT_IDX | F_INDIRECT |
		    F_BLK_MQ | F_BLK_FLUSH)) ==
	      (F_VERSION_1 | F_PROTOCOL | F_PACKED | F_EVENT_IDX | F_INDIRECT |
	       F_BLK_MQ | F_BLK_FLUSH));
	CHECK(!(v & F_BLK_RO));
	CHECK(vuf_get_u64(&f, VHOST_USER_GET_PROTOCOL_FEATURES, &v) == 0);
	CHECK((v & (P_MQ | P_REPLY_ACK | P_CONFIG | P_RESET_DEVICE)) ==
	      (P_MQ | P_REPLY_ACK | P_CONFIG | P_RESET_DEVICE));
	CHECK(vuf_get_u64(&f, VHOST_USER_GET_QUEUE_NUM, &v) == 0 && v == NQ);
	CHECK(vuf_request(&f, VHOST_USER_GET_CONFIG, &c, 12 + c.size, NULL, 0, &r) == 0);
	CHECK(r.hdr.size == 12 + 60 && r.payload.config.size == 60);
	memcpy(&cap, r.payload.config.data, 8);
	memcpy(&nq, r.payload.config.data + 34, 2);
	CHECK(cap == DISK_SIZE / 512 && nq == NQ);
	/* QEMU 7.2 asks for 57 bytes; a newer one for more than brisk knows. */
	c.size = 100;
	CHECK(vuf_request(&f, VHOST_USER_GET_CONFIG, &c, 12 + c.size, NULL, 0, &r) == 0);
	CHECK(r.hdr.size == 112);
	/* Past brisk's 60 bytes: zeros, never what lies beyond in its memory. */
	bool zeros = true;

	for (unsigned i = 60; i < 100; i++)
		zeros &= r.payload.config.data[i] == 0;
	CHECK(zeros);
	/* A range beyond any config space: an empty reply, not an error. */
	c = (struct vhost_user_config){ .offset = 250, .size = 10 };
	CHECK(vuf_request(&f, VHOST_USER_GET_CONFIG, &c, 12 + c.size, NULL, 0, &r) == 0);
	CHECK(r.hdr.size == 0);
	CHECK(vuf_get_u64(&f, VHOST_USER_GET_QUEUE_NUM, &v) == 0);
	vuf_close(&f);
}

static void test_io(bool packed)
{
	struct conn k;
	uint8_t pat[4096];

	CHECK(conn_open(&k, packed) == 0);
	for (unsigned q = 0; q < NQ; q++) {
		uint64_t sector = 3 + q;

		want_irq(&k, q);
		CHECK(io(&k, q, VUF_BLK_T_IN, sector, 4096, false) == S_OK);
		CHECK(data_is_disk(vuf_blk_data(&k.d[q], 0), sector * 512, 4096));
		CHECK(io(&k, q, VUF_BLK_T_IN, sector + 1, 4096, true) == S_OK);
		CHECK(data_is_disk(vuf_blk_data(&k.d[q], 0), (sector + 1) * 512, 4096));
		for (unsigned i = 0; i < sizeof(pat); i++)
			pat[i] = (uint8_t)(i * 13 + q + packed);
		memcpy(vuf_blk_data(&k.d[q], 0), pat, sizeof(pat));
		CHECK(io(&k, q, VUF_BLK_T_OUT, 64 + 8 * q, 4096, q == 1) == S_OK);
		CHECK(io(&k, q, VUF_BLK_T_FLUSH, 0, 0, false) == S_OK);
		CHECK(disk_holds((64 + 8 * q) * 512ull, pat, sizeof(pat)));
		/* Past the end of the disk: IOERR, and the device keeps serving. */
		CHECK(io(&k, q, VUF_BLK_T_IN, DISK_SIZE / 512, 4096, false) == S_IOERR);
		CHECK(io(&k, q, VUF_BLK_T_IN, 0, 512, false) == S_OK);
		CHECK(drv_canary_ok(&k.d[q]));
	}
	conn_close(&k);

	/* With interrupts asked for, the call fd says when. */
	CHECK(conn_open(&k, packed) == 0);
	want_irq(&k, 0);
	CHECK(vuf_blk_add(&k.d[0], 0, VUF_BLK_T_IN, 0, 4096, false) >= 0);
	kick(&k, 0);
	struct pollfd p = { .fd = k.call[0], .events = POLLIN };

	CHECK(poll(&p, 1, WAIT_MS) == 1);
	CHECK(reap(&k, 0, 1, NULL, WAIT_MS) == 1);
	conn_close(&k);
}

/*
 * GET_VRING_BASE with requests in flight: when it answers, every request
 * the back-end took is in the used ring, and the base says where the
 * ring stopped.  Started again from that base, it serves what it had not
 * taken and what the driver adds next, each request exactly once.
 */
/* Adds a 4 KiB request (indirect) in slot s and notes which id it got. */
static bool add(struct conn *k, int *slot_of, unsigned s, uint32_t type, uint64_t sector)
{
	int id = vuf_blk_add(&k->d[0], s, type, sector, type == VUF_BLK_T_FLUSH ? 0 : 4096,
			     true);

	if (id < 0 || id >= RING)
		return false;
	slot_of[id] = (int)s;
	return true;
}

/* A used id names a slot in [lo, hi) not answered before. */
static bool first_time(const int *slot_of, bool *seen, uint16_t id, unsigned lo, unsigned hi)
{
	unsigned s;

	if (id >= RING)
		return false;
	s = (unsigned)slot_of[id];
	if (s < lo || s >= hi || seen[s])
		return false;
	seen[s] = true;
	return true;
}

static void test_stop_restart(bool packed)
{
	enum { N = 16 };
	struct vhost_user_vring_state st = { 0, 0 };
	struct vhost_user_msg r;
	uint16_t ids[3 * N];
	int slot_of[RING];	/* ids are reused: which slot each one is now */
	bool seen[3 * N] = { false };
	unsigned taken, got;
	uint32_t base;
	int kick2;
	struct conn k;

	CHECK(conn_open(&k, packed) == 0);
	/* A first batch, all answered: the ring is somewhere in the middle. */
	for (unsigned i = 0; i < N; i++)
		CHECK(add(&k, slot_of, i, VUF_BLK_T_IN, 2048 + i * 8));
	kick(&k, 0);
	CHECK(reap(&k, 0, N, ids, WAIT_MS) == N);
	/*
	 * A second batch, a flush and writes, stopped once one of it is
	 * answered.  Chains are taken in order, so the flush (writing back
	 * what the first batches dirtied, slow) was taken, and is likely
	 * still in the backend when the stop comes.
	 */
	CHECK(add(&k, slot_of, N, VUF_BLK_T_FLUSH, 0));
	for (unsigned i = 1; i < N; i++) {
		memset(vuf_blk_data(&k.d[0], N + i), 0x20 + i + packed, 4096);
		CHECK(add(&k, slot_of, N + i, VUF_BLK_T_OUT, 3072 + i * 8));
	}
	kick(&k, 0);
	CHECK(reap(&k, 0, 1, ids, WAIT_MS) == 1);
	CHECK(first_time(slot_of, seen, ids[0], N, 2 * N));
	CHECK(vuf_request(&k.f, VHOST_USER_GET_VRING_BASE, &st, sizeof(st), NULL, 0, &r) == 0);
	CHECK(r.payload.state.index == 0);
	base = r.payload.state.num;
	/* Indirect chains take one slot each; no wrap yet. */
	taken = (base & 0x7fff) - N;
	if (packed)
		CHECK((base & 1u << 15) && (base >> 31) && ((base >> 16) & 0x7fff) == (base & 0x7fff));
	else
		CHECK(base <= 0xffff);
	CHECK(taken >= 1 && taken <= N);
	/* No waiting: all that was taken is answered, nothing else is. */
	got = 1 + reap(&k, 0, N, ids + 1, 0);
	CHECK(got == taken);
	for (unsigned i = 1; i < got; i++)
		CHECK(first_time(slot_of, seen, ids[i], N, 2 * N));
	/* Started again from the base with a new kick fd: a third batch. */
	kick2 = efd();
	CHECK(vuf_state(&k.f, VHOST_USER_SET_VRING_BASE, 0, base) == 0);
	CHECK(vuf_request(&k.f, VHOST_USER_SET_VRING_KICK, &(uint64_t){ 0 }, 8, &kick2, 1,
			  NULL) == 0);
	for (unsigned i = 2 * N; i < 3 * N; i++)
		CHECK(add(&k, slot_of, i, VUF_BLK_T_IN, 2048 + i * 8));
	eventfd_write(kick2, 1);
	got = reap(&k, 0, 2 * N - taken, ids, WAIT_MS);
	CHECK(got == 2 * N - taken);
	for (unsigned i = 0; i < got; i++)
		CHECK(first_time(slot_of, seen, ids[i], N, 3 * N));
	/* Nothing more comes: each request was served once. */
	CHECK(reap(&k, 0, 1, NULL, 100) == 0);
	for (unsigned i = 0; i < 3 * N; i++)
		CHECK(vuf_blk_status(&k.d[0], i) == S_OK);
	for (unsigned i = 1; i < N; i++)
		CHECK(disk_holds((3072 + i * 8) * 512ull, vuf_blk_data(&k.d[0], N + i), 4096));
	for (unsigned i = 2 * N; i < 3 * N; i++)
		CHECK(data_is_disk(vuf_blk_data(&k.d[0], i), (2048 + i * 8) * 512ull, 4096));
	close(kick2);
	conn_close(&k);
}

/*
 * A front-end that disconnects with writes in flight: the back-end
 * finishes them (answering into the ring, which this process can still
 * read), every acknowledged write is on the disk, and the next front-end
 * is served.
 */
static void test_disconnect_mid_io(bool packed)
{
	enum { N = 48 };
	struct conn k, k2;
	struct vuf probe;
	uint16_t ids[N];
	int head_slot[RING];
	unsigned got;

	CHECK(conn_open(&k, packed) == 0);
	for (unsigned i = 0; i < N; i++) {
		memset(vuf_blk_data(&k.d[0], i), 0x40 + i, 4096);
		int h = vuf_blk_add(&k.d[0], i, VUF_BLK_T_OUT, 1024 + i * 8, 4096, true);

		CHECK(h >= 0);
		if (h >= 0)
			head_slot[h] = (int)i;
	}
	kick(&k, 0);
	got = reap(&k, 0, 1, ids, WAIT_MS);
	CHECK(got == 1);
	vuf_close(&k.f);
	/*
	 * The next front-end is taken once the back-end has cleaned up, and
	 * by then it has let go of the old front-end's memory.
	 */
	CHECK(vuf_connect(&probe, sock_path) == 0);
	CHECK(vuf_get_u64(&probe, VHOST_USER_GET_QUEUE_NUM, &(uint64_t){ 0 }) == 0);
	CHECK(mappings_of(k.d[0].memfd) == 1 && mappings_of(k.d[1].memfd) == 1);
	vuf_close(&probe);
	CHECK(conn_open(&k2, packed) == 0);
	CHECK(io(&k2, 1, VUF_BLK_T_IN, 0, 4096, false) == S_OK);
	conn_close(&k2);
	/* Everything answered, before or after the hang-up, is on the disk. */
	got += reap(&k, 0, N - got, ids + got, 0);
	CHECK(got >= 1);
	for (unsigned i = 0; i < got; i++) {
		unsigned s = (unsigned)head_slot[ids[i]];
		uint8_t want[4096];

		memset(want, 0x40 + s, sizeof(want));
		CHECK(vuf_blk_status(&k.d[0], s) == S_OK);
		CHECK(disk_holds((1024 + s * 8) * 512ull, want, sizeof(want)));
	}
	conn_close(&k);
}

/*
 * A front-end shrinks the memory it shared, with requests in flight.  Its
 * file could not be sealed (vq-driver's memfd is made without sealing, as
 * a tmpfs or hugetlbfs file would be): the back-end's next access past the
 * end must not raise SIGBUS, which would end this process, the daemon.
 * That front-end's connection ends, with one line; the next is served.
 */
static void test_memory_shrinks(bool packed)
{
	struct conn k, k2;
	uint16_t ids[8];
	char line[256];

	unsealable = true;
	CHECK(conn_open(&k, packed) == 0);
	unsealable = false;
	CHECK(!(fcntl(k.d[0].memfd, F_GET_SEALS) & F_SEAL_SHRINK));
	for (unsigned i = 0; i < 8; i++)
		CHECK(vuf_blk_add(&k.d[0], i, VUF_BLK_T_IN, i * 8, 4096, true) >= 0);
	kick(&k, 0);
	CHECK(reap(&k, 0, 8, ids, WAIT_MS) == 8);
	for (unsigned i = 0; i < 8; i++)
		CHECK(vuf_blk_add(&k.d[0], i, VUF_BLK_T_OUT, 512 + i * 8, 4096, true) >= 0);
	capture_begin();
	CHECK(ftruncate(k.d[0].memfd, 0) == 0);
	kick(&k, 0);
	CHECK(vuf_closed(&k.f, WAIT_MS));
	CHECK(capture_wait_for("memory shrank under a request; closing the connection", 5));
	/*
	 * What the zeros read in its place made of the ring, and the kernel
	 * of a write it was handed from the vanished pages (EFAULT), if the
	 * device took one before the fault: either may come, nothing else.
	 * All are said before the connection closes (it closes once the
	 * requests taken are done).
	 */
	CHECK(capture_only((const char *const[]){ "memory shrank under a request",
						  "needs reset", "I/O error: Bad address",
						  NULL }));
	CHECK(capture_count("memory shrank") == 1);
	capture_end(line, sizeof(line));
	CHECK(conn_open(&k2, packed) == 0);
	CHECK(io(&k2, 1, VUF_BLK_T_IN, 9, 4096, false) == S_OK);
	CHECK(data_is_disk(vuf_blk_data(&k2.d[1], 0), 9 * 512, 4096));
	CHECK(io(&k2, 0, VUF_BLK_T_IN, 10, 4096, true) == S_OK);
	CHECK(data_is_disk(vuf_blk_data(&k2.d[0], 0), 10 * 512, 4096));
	conn_close(&k2);
	/* The truncated driver's own pages are gone: only close what it has. */
	conn_close(&k);
}

/* A memfd that may be sealed is sealed by the back-end: it cannot shrink. */
static void test_memory_sealed(void)
{
	struct conn k;
	int fd;

	CHECK(conn_open(&k, false) == 0);
	fd = k.d[1].memfd;
	CHECK(fcntl(fd, F_GET_SEALS) & F_SEAL_SHRINK);
	CHECK(ftruncate(fd, 0) == -1 && errno == EPERM);
	CHECK(io(&k, 1, VUF_BLK_T_IN, 3, 4096, false) == S_OK);
	CHECK(data_is_disk(vuf_blk_data(&k.d[1], 0), 3 * 512, 4096));
	conn_close(&k);
}

/* A new memory table while the rings run: they go on where they were. */
static void test_mem_table_again(void)
{
	struct vq_driver *dp[NQ];
	struct conn k;

	CHECK(conn_open(&k, false) == 0);
	CHECK(io(&k, 0, VUF_BLK_T_IN, 1, 4096, false) == S_OK);
	for (unsigned q = 0; q < NQ; q++)
		dp[q] = &k.d[q];
	CHECK(vuf_set_mem(&k.f, dp, NQ) == 0);
	for (unsigned q = 0; q < NQ; q++) {
		CHECK(io(&k, q, VUF_BLK_T_IN, 2, 4096, true) == S_OK);
		CHECK(data_is_disk(vuf_blk_data(&k.d[q], 0), 2 * 512, 4096));
	}
	conn_close(&k);
}

/* RESET_DEVICE: back to a device that knows no rings or features. */
static void test_reset_device(void)
{
	struct vq_driver *dp[NQ];
	struct conn k;

	CHECK(conn_open(&k, true) == 0);
	CHECK(io(&k, 0, VUF_BLK_T_IN, 1, 4096, false) == S_OK);
	CHECK(vuf_request(&k.f, VHOST_USER_RESET_DEVICE, NULL, 0, NULL, 0, NULL) == 0);
	/* The old rings are gone: a kick does nothing. */
	CHECK(vuf_blk_add(&k.d[0], 1, VUF_BLK_T_IN, 0, 4096, false) >= 0);
	kick(&k, 0);
	CHECK(reap(&k, 0, 1, NULL, 100) == 0);
	/* Fresh rings after a fresh negotiation work. */
	for (unsigned q = 0; q < NQ; q++) {
		drv_destroy(&k.d[q]);
		drv_init_shared(&k.d[q], false, RING, 4 << 20, 0x1000000ull * (q + 1));
		dp[q] = &k.d[q];
	}
	CHECK(vuf_set_u64(&k.f, VHOST_USER_SET_FEATURES,
			  k.f.features & (want_features(false) | F_PROTOCOL)) == 0);
	CHECK(vuf_set_mem(&k.f, dp, NQ) == 0);
	for (unsigned q = 0; q < NQ; q++)
		CHECK(vuf_start_ring(&k.f, q, &k.d[q], -1, k.kick[q], k.call[q]) == 0);
	CHECK(io(&k, 1, VUF_BLK_T_IN, 5, 4096, false) == S_OK);
	CHECK(data_is_disk(vuf_blk_data(&k.d[1], 0), 5 * 512, 4096));
	conn_close(&k);
}

/*
 * The inflight region, as QEMU's docs/interop/vhost-user.rst lays it out
 * for a split ring ("Inflight I/O tracking"), host byte order.
 */
struct ifl_desc {
	uint8_t inflight;
	uint8_t padding[5];
	uint16_t next;
	uint64_t counter;
};

struct ifl_ring {
	uint64_t features;
	uint16_t version;
	uint16_t desc_num;
	uint16_t last_batch_head;
	uint16_t used_idx;
	struct ifl_desc desc[];
};

struct ifl {
	int fd;
	uint64_t size;
	uint8_t *map;
};

/* GET_INFLIGHT_FD for NQ rings of RING entries, mapped here too. */
static bool ifl_get(struct conn *k, struct ifl *i)
{
	struct vhost_user_inflight in = { .num_queues = NQ, .queue_size = RING };
	struct vhost_user_msg r = { 0 };

	memset(i, 0, sizeof(*i));
	i->fd = -1;
	if (vuf_request(&k->f, VHOST_USER_GET_INFLIGHT_FD, &in, sizeof(in), NULL, 0, &r) < 0)
		return false;
	i->size = r.payload.inflight.mmap_size;
	i->fd = vhost_user_take_fd(&r, 0);
	vhost_user_close_fds(&r);
	if (i->fd < 0 || r.payload.inflight.mmap_offset != 0 ||
	    r.payload.inflight.num_queues != NQ || r.payload.inflight.queue_size != RING)
		return false;
	i->map = mmap(NULL, i->size, PROT_READ | PROT_WRITE, MAP_SHARED, i->fd, 0);
	return i->map != MAP_FAILED;
}

static int ifl_set(struct conn *k, const struct ifl *i, uint64_t size, uint16_t queues)
{
	struct vhost_user_inflight in = { .mmap_size = size, .num_queues = queues,
					  .queue_size = RING };

	return vuf_request(&k->f, VHOST_USER_SET_INFLIGHT_FD, &in, sizeof(in), &i->fd, 1, NULL);
}

/* Ring q's part: the size divided among the rings, as back-ends read it. */
static struct ifl_ring *ifl_ring(const struct ifl *i, unsigned q)
{
	return (struct ifl_ring *)(i->map + q * (i->size / NQ));
}

static void ifl_put(struct ifl *i)
{
	if (i->map && i->map != MAP_FAILED)
		munmap(i->map, i->size);
	if (i->fd >= 0)
		close(i->fd);
}

static unsigned ifl_taken(const struct ifl_ring *r)
{
	unsigned n = 0;

	for (unsigned d = 0; d < RING; d++)
		n += r->desc[d].inflight != 0;
	return n;
}

/*
 * A fresh region: sealed against shrinking, big enough for the rings by
 * the spec's layout; as requests are served it records the order their
 * heads were taken, and ends with none taken and the ring's used index.
 */
static bool test_inflight_tracks(void)
{
	struct conn k;
	struct ifl i;
	struct ifl_ring *r;
	int head[8];

	CHECK(conn_prepare(&k, false, MEMORY) == 0);
	CHECK(k.f.protocol & P_INFLIGHT);
	REQUIRE(ifl_get(&k, &i));
	CHECK(fcntl(i.fd, F_GET_SEALS) & F_SEAL_SHRINK);
	CHECK(i.size >= NQ * (16 + 16 * (uint64_t)RING));
	CHECK(ifl_set(&k, &i, i.size, NQ) == 0);
	CHECK(conn_start(&k, -1) == 0);
	for (unsigned s = 0; s < 8; s++)
		head[s] = vuf_blk_add(&k.d[0], s, VUF_BLK_T_IN, s * 8, 4096, false);
	kick(&k, 0);
	CHECK(reap(&k, 0, 8, NULL, WAIT_MS) == 8);
	r = ifl_ring(&i, 0);
	CHECK_EQ(r->version, 1);
	CHECK_EQ(r->desc_num, RING);
	CHECK_EQ(r->used_idx, ((struct vring_used *)drv_ptr(&k.d[0], k.d[0].device))->idx);
	CHECK_EQ(r->used_idx, 8);
	CHECK_EQ(ifl_taken(r), 0);
	for (unsigned s = 1; s < 8; s++)
		CHECK(head[s] >= 0 && r->desc[head[s]].counter > r->desc[head[s - 1]].counter);
	CHECK_EQ(ifl_ring(&i, 1)->version, 1);
	conn_close(&k);
	ifl_put(&i);
	return true;
}

static void fill_slot(struct conn *k, unsigned s, uint8_t v)
{
	memset(vuf_blk_data(&k->d[0], s), v, 4096);
}

static bool disk_all(uint64_t off, uint8_t v)
{
	uint8_t want[4096];

	memset(want, v, sizeof(want));
	return disk_holds(off, want, sizeof(want));
}

/*
 * A back-end crashed with five writes made available: it had taken four,
 * used two (h1, h3) and had two in flight (h0, h2).  Since h1 and h3 were
 * used, their sectors were written again by others.  The next back-end,
 * given the region, must serve h0, h2 and then h4, each once, and never
 * h1 or h3 again, whatever base the front-end sends (the used index, as
 * QEMU's does).  Unsettled: the crash came between publishing h3 as used
 * and clearing its mark, which the region's used index and batch list tell.
 */
static bool test_inflight_resubmits(bool settled)
{
	static const uint8_t fill[5] = { 0x10, 0x11, 0x12, 0x13, 0x14 };
	struct conn k;
	struct ifl i;
	struct ifl_ring *r;
	struct vring_used *used;
	uint16_t ids[3], id;
	uint32_t len;
	int h[5];
	bool seen[5] = { false };

	CHECK(conn_prepare(&k, false, MEMORY) == 0);
	REQUIRE(ifl_get(&k, &i));
	for (unsigned s = 0; s < 5; s++) {
		fill_slot(&k, s, fill[s]);
		h[s] = vuf_blk_add(&k.d[0], s, VUF_BLK_T_OUT, 1024 + s * 8, 4096, false);
		REQUIRE(h[s] >= 0);
	}
	used = drv_ptr(&k.d[0], k.d[0].device);
	used->ring[0] = (struct vring_used_elem){ (uint32_t)h[1], 1 };
	used->ring[1] = (struct vring_used_elem){ (uint32_t)h[3], 1 };
	used->idx = 2;
	for (unsigned n = 0; n < 2; n++)
		CHECK(drv_reap(&k.d[0], &id, &len) == 1);
	for (unsigned s = 1; s < 5; s += 2) {
		uint8_t later[4096];
		int fd = open(disk_path, O_WRONLY | O_CLOEXEC);

		memset(later, 0x77, sizeof(later));
		CHECK(fd >= 0 && pwrite(fd, later, 4096, (1024 + s * 8) * 512) == 4096);
		close(fd);
	}
	r = ifl_ring(&i, 0);
	r->version = 1;
	r->desc_num = RING;
	r->used_idx = settled ? 2 : 1;
	r->last_batch_head = (uint16_t)h[3];
	r->desc[h[3]].next = (uint16_t)h[1];
	for (unsigned s = 0; s < 4; s++)
		r->desc[h[s]].counter = 10 + s;
	r->desc[h[0]].inflight = r->desc[h[2]].inflight = 1;
	r->desc[h[3]].inflight = !settled;

	CHECK(ifl_set(&k, &i, i.size, NQ) == 0);
	CHECK(conn_start(&k, 2) == 0);
	CHECK(reap(&k, 0, 3, ids, WAIT_MS) == 3);
	for (unsigned n = 0; n < 3; n++)
		for (unsigned s = 0; s < 5; s++)
			if (ids[n] == h[s])
				seen[s] = true;
	CHECK(seen[0] && seen[2] && seen[4] && !seen[1] && !seen[3]);
	for (unsigned s = 0; s < 5; s += 2)
		CHECK(vuf_blk_status(&k.d[0], s) == S_OK);
	CHECK(disk_all(1024 * 512, 0x10));
	CHECK(disk_all((1024 + 8) * 512, 0x77));
	CHECK(disk_all((1024 + 16) * 512, 0x12));
	CHECK(disk_all((1024 + 24) * 512, 0x77));
	CHECK(disk_all((1024 + 32) * 512, 0x14));
	/* Nothing more comes: h1 and h3 stay used once. */
	CHECK(reap(&k, 0, 1, NULL, 200) == 0);
	CHECK_EQ(ifl_taken(r), 0);
	CHECK_EQ(r->used_idx, 5);
	conn_close(&k);
	ifl_put(&i);
	return true;
}

/*
 * A region taken up with nothing left to serve still brings the ring's
 * interrupt once: the old back-end may have published a used batch and
 * died before it signalled it.
 */
static bool test_inflight_signals(void)
{
	struct pollfd p;
	struct conn k;
	struct ifl i;
	struct ifl_ring *r;
	struct vring_used *used;
	int h[2];

	CHECK(conn_prepare(&k, false, MEMORY) == 0);
	REQUIRE(ifl_get(&k, &i));
	for (unsigned s = 0; s < 2; s++) {
		h[s] = vuf_blk_add(&k.d[0], s, VUF_BLK_T_IN, s * 8, 4096, false);
		REQUIRE(h[s] >= 0);
	}
	used = drv_ptr(&k.d[0], k.d[0].device);
	used->ring[0] = (struct vring_used_elem){ (uint32_t)h[0], 4097 };
	used->ring[1] = (struct vring_used_elem){ (uint32_t)h[1], 4097 };
	used->idx = 2;
	r = ifl_ring(&i, 0);
	r->version = 1;
	r->desc_num = RING;
	r->used_idx = 2;
	CHECK(ifl_set(&k, &i, i.size, NQ) == 0);
	CHECK(conn_start(&k, 2) == 0);
	p = (struct pollfd){ .fd = k.call[0], .events = POLLIN };
	CHECK(poll(&p, 1, WAIT_MS) == 1);
	/* Nothing was served again. */
	CHECK(reap(&k, 0, 3, NULL, 200) == 2);
	conn_close(&k);
	ifl_put(&i);
	return true;
}

/*
 * A fresh region takes the ring where SET_VRING_BASE says: the two
 * requests before the base were the front-end's to forget.
 */
static bool test_inflight_fresh_keeps_base(void)
{
	struct conn k;
	struct ifl i;
	uint16_t id;
	int h[3];

	CHECK(conn_prepare(&k, false, MEMORY) == 0);
	REQUIRE(ifl_get(&k, &i));
	for (unsigned s = 0; s < 3; s++) {
		h[s] = vuf_blk_add(&k.d[0], s, VUF_BLK_T_IN, s * 8, 4096, false);
		REQUIRE(h[s] >= 0);
	}
	CHECK(ifl_set(&k, &i, i.size, NQ) == 0);
	CHECK(conn_start(&k, 2) == 0);
	kick(&k, 0);
	CHECK(reap(&k, 0, 1, &id, WAIT_MS) == 1 && id == h[2]);
	CHECK(reap(&k, 0, 1, NULL, 200) == 0);
	conn_close(&k);
	ifl_put(&i);
	return true;
}

enum ifl_bad { IFL_SIZE, IFL_FLAG, IFL_BATCH, IFL_UNSEALED, IFL_SHORT, IFL_QUEUES, IFL_ALIGN };

/* A region that cannot be the ring's ends the connection with one line. */
static bool test_inflight_hostile(enum ifl_bad bad, const char *says)
{
	struct conn k;
	struct ifl i;
	struct ifl_ring *r;
	char line[512];
	int lines;
	uint64_t size;
	uint16_t queues = NQ;

	CHECK(conn_prepare(&k, false, MEMORY) == 0);
	REQUIRE(ifl_get(&k, &i));
	r = ifl_ring(&i, 0);
	r->version = 1;
	r->desc_num = RING;
	size = i.size;
	switch (bad) {
	case IFL_SIZE:
		r->desc_num = RING / 2;
		break;
	case IFL_FLAG:
		r->desc[3].inflight = 2;
		break;
	case IFL_BATCH:
		r->used_idx = (uint16_t)-1;	/* one batch of one to settle */
		r->last_batch_head = 0xffff;
		break;
	case IFL_UNSEALED:
		close(i.fd);
		i.fd = memfd_create("unsealed", MFD_CLOEXEC);
		CHECK(i.fd >= 0 && ftruncate(i.fd, (off_t)i.size) == 0);
		break;
	case IFL_SHORT:
		size = NQ * 16;
		break;
	case IFL_QUEUES:
		queues = NQ + 1;
		break;
	case IFL_ALIGN:
		/* Big enough for each ring, but the second one's counters unaligned. */
		size = NQ * (16 + 16 * (uint64_t)RING) + 2;
		break;
	}
	capture_begin();
	if (ifl_set(&k, &i, size, queues) == 0)
		conn_start(&k, -1);
	CHECK(vuf_closed(&k.f, WAIT_MS));
	lines = capture_end(line, sizeof(line));
	CHECK(lines == 1 && strstr(line, says) && strstr(line, "closing the connection"));
	if (lines != 1 || !strstr(line, says))
		fprintf(stderr, "inflight case %d: %d lines: %s", bad, lines, line);
	conn_close(&k);
	ifl_put(&i);
	/* The next front-end is served as if nothing happened. */
	CHECK(conn_open(&k, false) == 0);
	CHECK(io(&k, 0, VUF_BLK_T_IN, 9, 512, false) == S_OK);
	conn_close(&k);
	return true;
}

/*
 * A guest's bad descriptor is a device error, not a protocol one: the
 * error eventfd fires, the connection stays, and after the front-end
 * stops the rings and negotiates again the device serves once more.
 */
static void test_guest_error(void)
{
	struct vhost_user_vring_state st = { 0, 0 };
	struct vhost_user_msg r;
	struct pollfd p;
	struct drv_seg bad = { 0x10, 16, false };	/* outside every region */
	uint64_t v;
	struct conn k;
	char line[256];

	CHECK(conn_open(&k, false) == 0);
	capture_begin();
	CHECK(drv_add(&k.d[0], &bad, 1, false) >= 0);
	kick(&k, 0);
	p = (struct pollfd){ .fd = k.err[0], .events = POLLIN };
	CHECK(poll(&p, 1, WAIT_MS) == 1);
	CHECK(capture_end(line, sizeof(line)) == 1 && strstr(line, "outside guest RAM"));
	CHECK(vuf_get_u64(&k.f, VHOST_USER_GET_QUEUE_NUM, &v) == 0);
	for (unsigned q = 0; q < NQ; q++) {
		st.index = q;
		CHECK(vuf_request(&k.f, VHOST_USER_GET_VRING_BASE, &st, sizeof(st), NULL, 0,
				  &r) == 0);
	}
	conn_close(&k);
	CHECK(conn_open(&k, false) == 0);
	CHECK(io(&k, 0, VUF_BLK_T_IN, 7, 4096, false) == S_OK);
	conn_close(&k);
}

static void test_readonly(void)
{
	struct conn k;
	uint64_t v;

	backend_stop();
	backend_start(",writable=off");
	CHECK(conn_open(&k, false) == 0);
	CHECK(vuf_get_u64(&k.f, VHOST_USER_GET_FEATURES, &v) == 0 && (v & F_BLK_RO));
	memset(vuf_blk_data(&k.d[0], 0), 0x77, 4096);
	/*
	 * Refused by the device, as VIRTIO_BLK_F_RO has it: the file (open
	 * read-only anyway) never sees the write, so no I/O error is said.
	 */
	char line[256];

	capture_begin();
	CHECK(io(&k, 0, VUF_BLK_T_OUT, 0, 4096, false) == S_IOERR);
	CHECK(capture_end(line, sizeof(line)) == 0);
	uint8_t orig[512];

	for (unsigned i = 0; i < 512; i++)
		orig[i] = disk_byte(i);
	CHECK(disk_holds(0, orig, sizeof(orig)));
	conn_close(&k);
	backend_stop();
	backend_start(",writable=on");
}

/* ---- hostile front-ends ---- */

/* Sends one raw message; -1 only when the socket itself failed. */
static int raw(struct conn *k, uint32_t req, uint32_t flags, const void *p, uint32_t size,
	       const int *fds, unsigned nfds)
{
	struct vhost_user_msg m;

	m.hdr = (struct vhost_user_hdr){ req, flags, size };
	if (size)
		memcpy(&m.payload, p, size < sizeof(m.payload) ? size : sizeof(m.payload));
	return vhost_user_send(k->f.sock, &m, fds, nfds, 1000, &k->f.err);
}

static int ring_addr(struct conn *k, unsigned q, uint64_t desc, uint64_t avail, uint64_t used)
{
	struct vhost_user_vring_addr a = { q, 0, desc, used, avail, 0 };

	return vuf_request(&k->f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0, NULL);
}

static uint64_t uva(struct conn *k, unsigned q, uint64_t gpa)
{
	return (uintptr_t)drv_ptr(&k->d[q], gpa);
}

static int start0(struct conn *k)
{
	return vuf_start_ring(&k->f, 0, &k->d[0], -1, k->kick[0], k->call[0]);
}

static int set_kick(struct conn *k, unsigned q, int fd)
{
	return vuf_request(&k->f, VHOST_USER_SET_VRING_KICK, &(uint64_t){ q }, 8, &fd, 1, NULL);
}

static int h_bad_version(struct conn *k)
{
	return raw(k, VHOST_USER_GET_QUEUE_NUM, 2, NULL, 0, NULL, 0);
}

static int h_unknown(struct conn *k)
{
	return raw(k, 99, 1, NULL, 0, NULL, 0);
}

static int h_short_payload(struct conn *k)
{
	return raw(k, VHOST_USER_SET_VRING_NUM, 1, &(uint32_t){ 0 }, 4, NULL, 0);
}

static int h_truncated(struct conn *k)
{
	uint8_t hdr[12] = { VHOST_USER_SET_FEATURES, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0 };

	/* Announces 8 bytes and hangs up after 3. */
	if (send(k->f.sock, hdr, sizeof(hdr), MSG_NOSIGNAL) != sizeof(hdr) ||
	    send(k->f.sock, "abc", 3, MSG_NOSIGNAL) != 3)
		return -1;
	shutdown(k->f.sock, SHUT_WR);
	return 0;
}

static int h_features_not_offered(struct conn *k)
{
	return vuf_set_u64(&k->f, VHOST_USER_SET_FEATURES, F_VERSION_1 | F(63));
}

static int h_features_legacy(struct conn *k)
{
	return vuf_set_u64(&k->f, VHOST_USER_SET_FEATURES, F_EVENT_IDX);
}

static int h_protocol_not_offered(struct conn *k)
{
	return vuf_set_u64(&k->f, VHOST_USER_SET_PROTOCOL_FEATURES, F(1));
}

static int h_ring_index(struct conn *k)
{
	return vuf_state(&k->f, VHOST_USER_SET_VRING_NUM, NQ, RING);
}

static int h_ring_index_huge(struct conn *k)
{
	struct vhost_user_vring_state st = { 0xffffffffu, 0 };

	return vuf_request(&k->f, VHOST_USER_GET_VRING_BASE, &st, sizeof(st), NULL, 0, NULL);
}

static int h_ring_size_zero(struct conn *k)
{
	return vuf_state(&k->f, VHOST_USER_SET_VRING_NUM, 0, 0);
}

static int h_ring_size_big(struct conn *k)
{
	return vuf_state(&k->f, VHOST_USER_SET_VRING_NUM, 0, 512);	/* queue-size=256 */
}

static int h_ring_size_odd(struct conn *k)
{
	struct vq_driver *d = &k->d[0];

	/* Fine for packed, not for split: refused when the ring starts. */
	return vuf_state(&k->f, VHOST_USER_SET_VRING_NUM, 0, 3) ||
	       ring_addr(k, 0, uva(k, 0, d->desc), uva(k, 0, d->driver), uva(k, 0, d->device)) ||
	       set_kick(k, 0, k->kick[0]);
}

static int h_ring_outside_table(struct conn *k)
{
	struct vq_driver *d = &k->d[0];

	return vuf_state(&k->f, VHOST_USER_SET_VRING_NUM, 0, RING) ||
	       ring_addr(k, 0, uva(k, 0, d->desc) + (4 << 20), uva(k, 0, d->driver),
			 uva(k, 0, d->device)) ||
	       set_kick(k, 0, k->kick[0]);
}

static int h_ring_straddles_table(struct conn *k)
{
	struct vq_driver *d = &k->d[0];

	/* The used ring starts inside RAM and runs off its end. */
	return vuf_state(&k->f, VHOST_USER_SET_VRING_NUM, 0, RING) ||
	       ring_addr(k, 0, uva(k, 0, d->desc), uva(k, 0, d->driver),
			 uva(k, 0, d->gpa + d->ram_size - 8)) ||
	       set_kick(k, 0, k->kick[0]);
}

static int h_ring_misaligned(struct conn *k)
{
	struct vq_driver *d = &k->d[0];

	return vuf_state(&k->f, VHOST_USER_SET_VRING_NUM, 0, RING) ||
	       ring_addr(k, 0, uva(k, 0, d->desc) + 8, uva(k, 0, d->driver),
			 uva(k, 0, d->device)) ||
	       set_kick(k, 0, k->kick[0]);
}

static int h_ring_log_flag(struct conn *k)
{
	struct vhost_user_vring_addr a = { 0, 1, 0, 0, 0, 0 };

	return vuf_request(&k->f, VHOST_USER_SET_VRING_ADDR, &a, sizeof(a), NULL, 0, NULL);
}

static int h_kick_before_features(struct conn *k)
{
	/* A fresh connection that skips SET_FEATURES. */
	return set_kick(k, 0, k->kick[0]);
}

static int h_kick_nofd(struct conn *k)
{
	return vuf_request(&k->f, VHOST_USER_SET_VRING_KICK,
			   &(uint64_t){ VHOST_USER_VRING_NOFD }, 8, NULL, 0, NULL);
}

static int h_kick_not_eventfd(struct conn *k)
{
	int p[2], r;

	if (pipe(p) < 0)
		return -1;
	r = set_kick(k, 0, p[0]);
	close(p[0]);
	close(p[1]);
	return r;
}

static int h_kick_extra_bits(struct conn *k)
{
	return vuf_request(&k->f, VHOST_USER_SET_VRING_CALL, &(uint64_t){ 0x10000 }, 8,
			   &k->call[0], 1, NULL);
}

static int h_kick_missing_fd(struct conn *k)
{
	return raw(k, VHOST_USER_SET_VRING_KICK, 1, &(uint64_t){ 0 }, 8, NULL, 0);
}

static int h_base_beyond_ring(struct conn *k)
{
	/* Packed: avail slot 100 of a 64-entry ring. */
	return vuf_start_ring(&k->f, 0, &k->d[0], 100 | 1u << 15 | 1u << 31, k->kick[0],
			      k->call[0]);
}

static int h_enable_state(struct conn *k)
{
	return start0(k) || vuf_state(&k->f, VHOST_USER_SET_VRING_ENABLE, 0, 2);
}

static int h_num_while_running(struct conn *k)
{
	return start0(k) || vuf_state(&k->f, VHOST_USER_SET_VRING_NUM, 0, 32);
}

static int h_features_while_running(struct conn *k)
{
	return start0(k) || vuf_set_u64(&k->f, VHOST_USER_SET_FEATURES, F_VERSION_1 | F_PROTOCOL);
}

static int h_unsupported(struct conn *k)
{
	return vuf_set_u64(&k->f, VHOST_USER_SET_STATUS, 0xf);
}

static int h_set_config(struct conn *k)
{
	struct vhost_user_config c = { .offset = 200, .size = 100 };

	return vuf_request(&k->f, VHOST_USER_SET_CONFIG, &c, 12 + c.size, NULL, 0, NULL);
}

/* Memory tables: k has negotiated but given no table yet. */
static int mem1(struct conn *k, struct vhost_user_region r0, int fd)
{
	struct vhost_user_mem_table t = { .nregions = 1, .region = { r0 } };

	return vuf_request(&k->f, VHOST_USER_SET_MEM_TABLE, &t, 8 + 32, &fd, 1, NULL);
}

static struct vhost_user_region region_of(struct conn *k, unsigned q)
{
	struct vq_driver *d = &k->d[q];

	return (struct vhost_user_region){ d->gpa, d->ram_size, (uintptr_t)d->ram,
					   (uint64_t)(d->ram - d->map) };
}

static int h_mem_overlap_gpa(struct conn *k)
{
	struct vhost_user_mem_table t = { .nregions = 2,
		.region = { region_of(k, 0), region_of(k, 1) } };
	int fds[2] = { k->d[0].memfd, k->d[1].memfd };

	t.region[1].gpa = t.region[0].gpa + 4096;
	return vuf_request(&k->f, VHOST_USER_SET_MEM_TABLE, &t, 8 + 64, fds, 2, NULL);
}

static int h_mem_overlap_uva(struct conn *k)
{
	struct vhost_user_mem_table t = { .nregions = 2,
		.region = { region_of(k, 0), region_of(k, 1) } };
	int fds[2] = { k->d[0].memfd, k->d[1].memfd };

	t.region[1].uva = t.region[0].uva + 4096;
	return vuf_request(&k->f, VHOST_USER_SET_MEM_TABLE, &t, 8 + 64, fds, 2, NULL);
}

static int h_mem_wraps(struct conn *k)
{
	struct vhost_user_region r = region_of(k, 0);

	r.gpa = ~0ull - 4096;
	return mem1(k, r, k->d[0].memfd);
}

static int h_mem_beyond_file(struct conn *k)
{
	struct vhost_user_region r = region_of(k, 0);

	r.mmap_offset += 8192;	/* the file has one canary page after RAM */
	return mem1(k, r, k->d[0].memfd);
}

static int h_mem_not_a_file(struct conn *k)
{
	return mem1(k, region_of(k, 0), k->kick[0]);
}

static int h_mem_fd_count(struct conn *k)
{
	struct vhost_user_mem_table t = { .nregions = 2,
		.region = { region_of(k, 0), region_of(k, 1) } };

	return raw(k, VHOST_USER_SET_MEM_TABLE, 1, &t, 8 + 64, &k->d[0].memfd, 1);
}

static int h_mem_too_many(struct conn *k)
{
	struct vhost_user_mem_table t = { .nregions = 9 };

	return raw(k, VHOST_USER_SET_MEM_TABLE, 1, &t, 8, NULL, 0);
}

struct hostile {
	const char *name;
	int (*send)(struct conn *k);
	enum stage stage;
	bool packed;
	const char *says;	/* in brisk's line */
};

static const struct hostile hostile_cases[] = {
	{ "bad version", h_bad_version, CONNECTED, false, "version" },
	{ "unknown request", h_unknown, CONNECTED, false, "unknown request 99" },
	{ "short payload", h_short_payload, CONNECTED, false, "payload of 4 bytes" },
	{ "truncated", h_truncated, CONNECTED, false, "middle of a message" },
	{ "features not offered", h_features_not_offered, CONNECTED, false, "not offered" },
	{ "legacy driver", h_features_legacy, CONNECTED, false, "VERSION_1" },
	{ "protocol not offered", h_protocol_not_offered, NEGOTIATED, false, "not offered" },
	{ "ring index", h_ring_index, NEGOTIATED, false, "ring 2, but the device has 2" },
	{ "ring index huge", h_ring_index_huge, NEGOTIATED, false, "ring 4294967295" },
	{ "ring size 0", h_ring_size_zero, NEGOTIATED, false, "size 0" },
	{ "ring size too big", h_ring_size_big, NEGOTIATED, false, "size 512" },
	{ "split size not 2^n", h_ring_size_odd, MEMORY, false, "wrong for a split ring" },
	{ "ring outside table", h_ring_outside_table, MEMORY, false, "outside the memory table" },
	{ "ring straddles table", h_ring_straddles_table, MEMORY, false, "outside the memory table" },
	{ "ring misaligned", h_ring_misaligned, MEMORY, true, "wrong for a packed ring" },
	{ "ring log flag", h_ring_log_flag, NEGOTIATED, false, "flags 0x1" },
	{ "kick before features", h_kick_before_features, CONNECTED, false, "before SET_FEATURES" },
	{ "kick without fd", h_kick_nofd, MEMORY, false, "polling" },
	{ "kick not an eventfd", h_kick_not_eventfd, MEMORY, false, "not an eventfd" },
	{ "call extra bits", h_kick_extra_bits, MEMORY, false, "unknown bits" },
	{ "kick fd missing", h_kick_missing_fd, MEMORY, false, "0 file descriptors" },
	{ "base beyond ring", h_base_beyond_ring, MEMORY, true, "beyond a 64-entry ring" },
	{ "enable state 2", h_enable_state, MEMORY, false, "state 2" },
	{ "size while running", h_num_while_running, MEMORY, false, "is running" },
	{ "features while running", h_features_while_running, MEMORY, false, "running rings" },
	{ "unsupported request", h_unsupported, NEGOTIATED, false, "SET_STATUS is not supported" },
	{ "set config range", h_set_config, NEGOTIATED, false, "SET_CONFIG" },
	{ "mem gpa overlap", h_mem_overlap_gpa, NEGOTIATED, false, "overlap in guest-physical" },
	{ "mem uva overlap", h_mem_overlap_uva, NEGOTIATED, false, "front-end's address space" },
	{ "mem wraps", h_mem_wraps, NEGOTIATED, false, "wraps" },
	{ "mem beyond file", h_mem_beyond_file, NEGOTIATED, false, "end of its file" },
	{ "mem not a file", h_mem_not_a_file, NEGOTIATED, false, "not a regular file" },
	{ "mem fd count", h_mem_fd_count, NEGOTIATED, false, "file descriptors" },
	{ "mem 9 regions", h_mem_too_many, NEGOTIATED, false, "9 memory regions" },
};

static void test_hostile(const struct hostile *h)
{
	struct conn k;
	char line[512];
	int lines, st = 0;
	bool closed;

	capture_begin();
	st = conn_prepare(&k, h->packed, h->stage);
	h->send(&k);
	closed = vuf_closed(&k.f, WAIT_MS);
	lines = capture_end(line, sizeof(line));
	if (st || !closed || lines != 1 || !strstr(line, h->says) ||
	    !strstr(line, "closing the connection")) {
		fprintf(stderr, "hostile '%s': setup %d, closed %d, %d lines: %s", h->name,
			st, closed, lines, line);
		CHECK(!"hostile case");
	} else {
		CHECK(true);
	}
	conn_close(&k);
	/* The back-end serves the next front-end as if nothing happened. */
	CHECK(conn_open(&k, h->packed) == 0);
	CHECK(io(&k, 0, VUF_BLK_T_IN, 9, 512, false) == S_OK);
	conn_close(&k);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	make_disk();
	snprintf(sock_path, sizeof(sock_path), "/tmp/brisk-vu-%d.sock", (int)getpid());
	backend_start(",writable=on");
	RUN(test_negotiation());
	for (int p = 0; p < 2; p++) {
		RUN(test_io(p));
		RUN(test_stop_restart(p));
		RUN(test_disconnect_mid_io(p));
	}
	/* Again where requests stay in flight longer: O_DIRECT, if the disk takes it. */
	int direct = open(disk_path, O_RDONLY | O_DIRECT | O_CLOEXEC);

	if (direct >= 0) {
		close(direct);
		backend_stop();
		cache = "none";
		backend_start(",writable=on");
		for (int p = 0; p < 2; p++) {
			RUN(test_stop_restart(p));
			RUN(test_disconnect_mid_io(p));
		}
		backend_stop();
		cache = "writeback";
		backend_start(",writable=on");
	} else {
		check_skip("O_DIRECT rounds", "the test disk's file system takes no O_DIRECT");
	}
	RUN(test_mem_table_again());
	RUN(test_memory_sealed());
	RUN(test_memory_shrinks(false));
	RUN(test_memory_shrinks(true));
	RUN(test_reset_device());
	RUN(test_inflight_tracks());
	RUN(test_inflight_resubmits(true));
	RUN(test_inflight_resubmits(false));
	RUN(test_inflight_hostile(IFL_SIZE, "made for a ring of another size"));
	RUN(test_inflight_hostile(IFL_FLAG, "neither taken nor free"));
	RUN(test_inflight_hostile(IFL_BATCH, "names a head beyond the ring"));
	RUN(test_inflight_hostile(IFL_UNSEALED, "could shrink"));
	RUN(test_inflight_hostile(IFL_SHORT, "too few"));
	RUN(test_inflight_hostile(IFL_QUEUES, "3 queues of 64 entries"));
	RUN(test_inflight_hostile(IFL_ALIGN, "aligned rings"));
	RUN(test_inflight_signals());
	RUN(test_inflight_fresh_keeps_base());
	RUN(test_guest_error());
	for (size_t i = 0; i < sizeof(hostile_cases) / sizeof(hostile_cases[0]); i++)
		RUN(test_hostile(&hostile_cases[i]));
	RUN(test_readonly());
	backend_stop();
	CHECK(access(sock_path, F_OK) < 0);	/* the socket goes with the export */
	unlink(disk_path);
	return check_done();
}
