// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user-blk-pci, brisk's vhost-user front-end, from the guest's side
 * (tests/device/blk-guest.h drives it through config cycles and BAR MMIO,
 * as a vCPU would) and from the back-end's:
 *
 *  - a fake back-end on the other end of a socketpair (-chardev fd=) or
 *    of a listening socket (reconnect) logs every message and answers as
 *    told: the negotiation, the messages at DRIVER_OK and at reset, the
 *    kick and call eventfds, masking, config writes, bad replies, a
 *    back-end that hangs up, one that comes back;
 *  - brisk's own back-end (-export vhost-user-blk) in the same process:
 *    requests from the guest's rings to the disk file and back;
 *  - with the argument "qsd": qemu-storage-daemon, likewise (skipped,
 *    exit 77, where it is not installed).
 *
 * Expected values come from the specs: feature bits from VIRTIO 1.2 and
 * vhost-user.rst, the config layout from VIRTIO 1.2 5.2.4, the message
 * order from vhost-user.rst's ring states and QEMU's vhost start and stop,
 * the packed base layout from GET_VRING_BASE.  Every wait is bounded.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hw/virtio/vhost-user.h"

#include "check.h"
#include "capture.h"
#include "blk-guest.h"
#include "virtio-blk-int.h"

#define F(bit) (1ull << (bit))
/* VIRTIO 1.2 feature bits. */
#define F_VERSION_1 F(32)
#define F_ACCESS_PLATFORM F(33)
#define F_PACKED F(34)
#define F_IN_ORDER F(35)
#define F_RING_RESET F(40)
#define F_EVENT_IDX F(29)
#define F_INDIRECT F(28)
#define F_BLK_SEG_MAX F(2)
#define F_BLK_FLUSH F(9)
#define F_BLK_WCE F(11)
#define F_BLK_MQ F(12)
#define F_BLK_SECURE_ERASE F(16)
/* vhost-user: the protocol-features bit, protocol feature bits. */
#define F_PROTOCOL F(30)
#define P_MQ F(0)
#define P_REPLY_ACK F(3)
#define P_BACKEND_REQ F(5)
#define P_CONFIG F(9)
#define P_INFLIGHT F(12)
/* VIRTIO 1.2 5.2.4: struct virtio_blk_config. */
#define CFG_CAPACITY 0
#define CFG_SEG_MAX 12
#define CFG_WCE 32
#define CFG_NUM_QUEUES 34
#define CFG_LEN 60

/* ---- a fake back-end ---- */

#define FB_LOG 512
#define FB_RINGS 8

struct fb_msg {
	uint32_t req, flags;
	union vhost_user_payload p;
	unsigned nfds;
	unsigned conn;		/* which connection it came on, from 1 */
};

struct fake_be {
	pthread_t thread;
	pthread_mutex_t lock;
	int sock;		/* -1 between connections */
	int listen_fd;		/* -1: one connection only */
	char path[64];
	int stop_fd;
	/* what it offers */
	uint64_t features, protocol, queue_num;
	uint8_t config[CFG_LEN];
	uint32_t base[FB_RINGS];	/* GET_VRING_BASE answers */
	/* faults: request types to refuse, to answer as another, to hang up at */
	uint32_t nack, garble, hangup;
	/*
	 * hold_req's answer (GET_VRING_BASE's, or SET_VRING_ENABLE 0's ack)
	 * waits for fb_answer_held()
	 */
	uint32_t hold_req;
	bool holding;
	struct vhost_user_msg held;
	union vhost_user_payload held_reply;
	uint32_t held_size;
	/* what it was told */
	uint64_t negotiated;	/* SET_PROTOCOL_FEATURES */
	struct fb_msg log[FB_LOG];
	unsigned nlog, conns;
	int kick[FB_RINGS], call[FB_RINGS], mem_fd;
	/* INFLIGHT_SHMFD: the inode of the last region made, and of the last one given */
	ino_t ifl_made, ifl_given;
	bool ifl_none;		/* answer GET_INFLIGHT_FD with no region (size 0) */
};

static void fb_close_fds(struct fake_be *fb)
{
	for (unsigned i = 0; i < FB_RINGS; i++) {
		if (fb->kick[i] >= 0)
			close(fb->kick[i]);
		if (fb->call[i] >= 0)
			close(fb->call[i]);
		fb->kick[i] = fb->call[i] = -1;
	}
	if (fb->mem_fd >= 0)
		close(fb->mem_fd);
	fb->mem_fd = -1;
}

static void fb_reply(struct fake_be *fb, const struct vhost_user_msg *m, const void *p,
		     uint32_t size)
{
	struct vhost_user_msg r;
	struct vhost_user_err e;

	vhost_user_msg_init(&r, m->hdr.request == fb->garble ? VHOST_USER_GET_FEATURES :
			    m->hdr.request, VHOST_USER_FLAG_REPLY, size);
	memcpy(&r.payload, p, size);
	vhost_user_send(fb->sock, &r, NULL, 0, 1000, &e);
}

static void fb_keep_fd(int *slot, struct vhost_user_msg *m)
{
	if (*slot >= 0)
		close(*slot);
	*slot = vhost_user_take_fd(m, 0);
}

/* GET_INFLIGHT_FD: a region of the spec's size for a split ring, in a memfd. */
static void fb_inflight_make(struct fake_be *fb, const struct vhost_user_msg *m)
{
	struct vhost_user_inflight in = m->payload.inflight;
	int fd = memfd_create("fb-inflight", MFD_CLOEXEC);
	struct vhost_user_msg r;
	struct vhost_user_err e;
	struct stat st;

	in.mmap_size = fb->ifl_none ? 0 : in.num_queues * (16 + 16 * (uint64_t)in.queue_size);
	in.mmap_offset = 0;
	if (fd < 0 || ftruncate(fd, (off_t)in.mmap_size) < 0 || fstat(fd, &st) < 0) {
		perror("fb inflight");
		exit(1);
	}
	fb->ifl_made = st.st_ino;
	vhost_user_msg_init(&r, m->hdr.request, VHOST_USER_FLAG_REPLY, sizeof(in));
	r.payload.inflight = in;
	vhost_user_send(fb->sock, &r, &fd, !fb->ifl_none, 1000, &e);
	close(fd);
}

/* As a back-end whose disk has not yet finished the ring's requests. */
static void fb_hold(struct fake_be *fb, const struct vhost_user_msg *m, const void *p,
		    uint32_t size)
{
	fb->held = *m;
	memcpy(&fb->held_reply, p, size);
	fb->held_size = size;
	fb->holding = true;
}

/* One request, logged and answered; false when it hung up on it. */
static bool fb_handle(struct fake_be *fb, struct vhost_user_msg *m)
{
	uint32_t req = m->hdr.request;
	unsigned ring = m->payload.u64 & VHOST_USER_VRING_IDX_MASK;
	bool ack = (m->hdr.flags & VHOST_USER_FLAG_NEED_REPLY) &&
		   (fb->negotiated & P_REPLY_ACK) && !vhost_user_has_reply(req);
	uint64_t nak = req == fb->nack;

	if (fb->nlog < FB_LOG)
		fb->log[fb->nlog++] = (struct fb_msg){
			req, m->hdr.flags, m->payload, m->nfds, fb->conns,
		};
	if (req == fb->hangup) {
		fb->hangup = 0;
		return false;
	}
	switch (req) {
	case VHOST_USER_GET_FEATURES:
		fb_reply(fb, m, &fb->features, 8);
		break;
	case VHOST_USER_GET_PROTOCOL_FEATURES:
		fb_reply(fb, m, &fb->protocol, 8);
		break;
	case VHOST_USER_SET_PROTOCOL_FEATURES:
		fb->negotiated = m->payload.u64;
		break;
	case VHOST_USER_GET_QUEUE_NUM:
		fb_reply(fb, m, &fb->queue_num, 8);
		break;
	case VHOST_USER_GET_CONFIG: {
		struct vhost_user_config c = m->payload.config;

		memcpy(c.data, fb->config + c.offset, c.size);
		fb_reply(fb, m, &c, VHOST_USER_CONFIG_HDR_SIZE + c.size);
		break;
	}
	case VHOST_USER_GET_VRING_BASE: {
		struct vhost_user_vring_state s = m->payload.state;

		s.num = fb->base[s.index % FB_RINGS];
		if (req == fb->hold_req)
			fb_hold(fb, m, &s, sizeof(s));
		else
			fb_reply(fb, m, &s, sizeof(s));
		break;
	}
	case VHOST_USER_SET_VRING_KICK:
		if (ring < FB_RINGS)
			fb_keep_fd(&fb->kick[ring], m);
		break;
	case VHOST_USER_SET_VRING_CALL:
		if (ring < FB_RINGS)
			fb_keep_fd(&fb->call[ring], m);
		break;
	case VHOST_USER_SET_MEM_TABLE:
		fb_keep_fd(&fb->mem_fd, m);
		break;
	case VHOST_USER_GET_INFLIGHT_FD:
		fb_inflight_make(fb, m);
		break;
	case VHOST_USER_SET_INFLIGHT_FD: {
		struct stat st;

		if (m->nfds == 1 && fstat(m->fds[0], &st) == 0)
			fb->ifl_given = st.st_ino;
		break;
	}
	}
	if (ack && req == fb->hold_req && req == VHOST_USER_SET_VRING_ENABLE &&
	    !m->payload.state.num)
		fb_hold(fb, m, &nak, 8);
	else if (ack)
		fb_reply(fb, m, &nak, 8);
	vhost_user_close_fds(m);
	return true;
}

static void *fb_thread(void *opaque)
{
	struct fake_be *fb = opaque;

	for (;;) {
		struct pollfd p[2] = {
			{ .fd = fb->stop_fd, .events = POLLIN },
			{ .fd = fb->sock >= 0 ? fb->sock : fb->listen_fd, .events = POLLIN },
		};
		struct vhost_user_msg m;
		struct vhost_user_err e;

		if (p[1].fd < 0 || poll(p, 2, -1) < 0 || p[0].revents)
			break;
		pthread_mutex_lock(&fb->lock);
		if (fb->sock < 0) {
			fb->sock = accept4(fb->listen_fd, NULL, NULL, SOCK_CLOEXEC);
			fb->conns += fb->sock >= 0;
		} else if (vhost_user_recv(fb->sock, &m, 1000, &e) <= 0 ||
			   vhost_user_check_request(&m, &e) < 0 || !fb_handle(fb, &m)) {
			close(fb->sock);
			fb->sock = -1;
			fb_close_fds(fb);
		}
		pthread_mutex_unlock(&fb->lock);
	}
	return NULL;
}

/* What a small vhost-user-blk back-end offers: split and packed, 2 queues. */
static void fb_init(struct fake_be *fb)
{
	uint64_t cap = 12345;
	uint32_t seg_max = 77;
	uint16_t nq = 2;

	memset(fb, 0, sizeof(*fb));
	pthread_mutex_init(&fb->lock, NULL);
	fb->sock = fb->listen_fd = fb->mem_fd = -1;
	for (unsigned i = 0; i < FB_RINGS; i++)
		fb->kick[i] = fb->call[i] = -1;
	fb->features = F_VERSION_1 | F_INDIRECT | F_EVENT_IDX | F_PACKED | F_BLK_FLUSH |
		       F_BLK_MQ | F_BLK_WCE | F_BLK_SEG_MAX | F_PROTOCOL;
	fb->protocol = P_MQ | P_REPLY_ACK | P_CONFIG;
	fb->queue_num = nq;
	memcpy(fb->config + CFG_CAPACITY, &cap, 8);
	memcpy(fb->config + CFG_SEG_MAX, &seg_max, 4);
	memcpy(fb->config + CFG_NUM_QUEUES, &nq, 2);
	fb->stop_fd = eventfd(0, EFD_CLOEXEC);
}

static void fb_start(struct fake_be *fb)
{
	if (pthread_create(&fb->thread, NULL, fb_thread, fb)) {
		perror("pthread_create");
		exit(1);
	}
}

/* Serves one end of a socketpair; the front-end gets the other as fd=N. */
static int fb_start_pair(struct fake_be *fb)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair");
		exit(1);
	}
	fb->sock = sv[0];
	fb->conns = 1;
	fb_start(fb);
	return sv[1];
}

/* Listens on a fresh path, accepting one front-end after another. */
static void fb_start_listen(struct fake_be *fb)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	snprintf(fb->path, sizeof(fb->path), "/tmp/brisk-vufb-%d-%p.sock", getpid(),
		 (void *)fb);
	strcpy(a.sun_path, fb->path);
	unlink(fb->path);
	fb->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fb->listen_fd < 0 || bind(fb->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fb->listen_fd, 4) < 0) {
		perror("fake back-end socket");
		exit(1);
	}
	fb_start(fb);
}

static void fb_stop(struct fake_be *fb)
{
	eventfd_write(fb->stop_fd, 1);
	pthread_join(fb->thread, NULL);
	if (fb->sock >= 0)
		close(fb->sock);
	if (fb->listen_fd >= 0) {
		close(fb->listen_fd);
		unlink(fb->path);
	}
	fb_close_fds(fb);
	close(fb->stop_fd);
	pthread_mutex_destroy(&fb->lock);
}

/* The nth (from 0) logged message of type req on connection conn (0: any). */
static bool fb_find(struct fake_be *fb, uint32_t req, unsigned nth, unsigned conn,
		    struct fb_msg *out)
{
	bool found = false;

	pthread_mutex_lock(&fb->lock);
	for (unsigned i = 0; i < fb->nlog && !found; i++) {
		if (fb->log[i].req == req && (!conn || fb->log[i].conn == conn) && !nth--) {
			*out = fb->log[i];
			found = true;
		}
	}
	pthread_mutex_unlock(&fb->lock);
	return found;
}

/* The requests logged from index from on, in order, as a 0-terminated list. */
static bool fb_seq(struct fake_be *fb, unsigned from, const uint32_t *want)
{
	bool ok = true;
	unsigned i = from;

	pthread_mutex_lock(&fb->lock);
	for (; *want; want++, i++) {
		if (i >= fb->nlog || fb->log[i].req != *want) {
			fprintf(stderr, "message %u: got %s, expected %s\n", i,
				i < fb->nlog ? vhost_user_request_name(fb->log[i].req) : "nothing",
				vhost_user_request_name(*want));
			ok = false;
			break;
		}
	}
	ok = ok && i == fb->nlog;
	pthread_mutex_unlock(&fb->lock);
	return ok;
}

static unsigned fb_nlog(struct fake_be *fb)
{
	pthread_mutex_lock(&fb->lock);
	unsigned n = fb->nlog;
	pthread_mutex_unlock(&fb->lock);
	return n;
}

static void fb_hang_up(struct fake_be *fb)
{
	pthread_mutex_lock(&fb->lock);
	if (fb->sock >= 0)
		shutdown(fb->sock, SHUT_RDWR);
	pthread_mutex_unlock(&fb->lock);
}

static void fb_answer_held(struct fake_be *fb)
{
	pthread_mutex_lock(&fb->lock);
	if (fb->holding && fb->sock >= 0)
		fb_reply(fb, &fb->held, &fb->held_reply, fb->held_size);
	fb->holding = false;
	pthread_mutex_unlock(&fb->lock);
}

static bool fb_holding(struct fake_be *fb)
{
	pthread_mutex_lock(&fb->lock);
	bool h = fb->holding;
	pthread_mutex_unlock(&fb->lock);
	return h;
}

/* Waits for cond(fb) (bounded); its last value. */
static bool fb_wait(struct fake_be *fb, bool (*cond)(struct fake_be *))
{
	long end = now_ms() + WAIT_MS;

	while (!cond(fb) && now_ms() < end)
		usleep(2000);
	return cond(fb);
}

static bool fd_fired(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	eventfd_t v;

	return fd >= 0 && poll(&p, 1, 200) == 1 && eventfd_read(fd, &v) == 0 && v > 0;
}

static bool fd_quiet(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&p, 1, 0) == 0;
}

/* A machine whose vhost-user-blk-pci talks to fb; NULL if it failed. */
static struct tmachine *machine_fb(struct fake_be *fb, const char *props, unsigned ncpus)
{
	char chardev[128], device[128];
	const char *opts[] = { "-chardev", chardev, "-device", device, NULL };

	if (fb->listen_fd >= 0) {
		snprintf(chardev, sizeof(chardev), "socket,id=c0,path=%s,reconnect=1", fb->path);
	} else {
		int fd = fb_start_pair(fb);

		snprintf(chardev, sizeof(chardev), "socket,id=c0,fd=%d", fd);
	}
	snprintf(device, sizeof(device), "vhost-user-blk-pci,chardev=c0%s", props);
	return machine_build(NULL, opts, ncpus);
}

static uint16_t cfg16(struct vdev *d, unsigned off)
{
	return (uint16_t)mmio_read(d->t, d->pci.device + off, 2);
}

static bool status_broken(struct vdev *d)
{
	return vstatus(d) & DS_NEEDS_RESET;
}

static bool wait_broken(struct vdev *d)
{
	long end = now_ms() + WAIT_MS;

	while (!status_broken(d) && now_ms() < end)
		usleep(2000);
	return status_broken(d);
}

static uint64_t uva_of(struct tmachine *t, uint64_t gpa)
{
	return (uintptr_t)t->b.ram + gpa;
}

/* SET_VRING_* for ring q (nth = its nth start): index, values, ack wanted. */
static bool ring_started(struct fake_be *fb, struct tmachine *t, struct gq *q, unsigned nth,
			 uint32_t base)
{
	struct fb_msg m;
	bool ok = true;

	for (unsigned i = 0, n = 0; fb_find(fb, VHOST_USER_SET_VRING_NUM, i, 0, &m); i++)
		if (m.p.state.index == q->idx && n++ == nth)
			ok &= m.p.state.num == q->ring.num;
	for (unsigned i = 0, n = 0; fb_find(fb, VHOST_USER_SET_VRING_BASE, i, 0, &m); i++)
		if (m.p.state.index == q->idx && n++ == nth)
			ok &= m.p.state.num == base;
	for (unsigned i = 0, n = 0; fb_find(fb, VHOST_USER_SET_VRING_ADDR, i, 0, &m); i++)
		if (m.p.addr.index == q->idx && n++ == nth)
			ok &= m.p.addr.desc == uva_of(t, q->ring.desc) &&
			      m.p.addr.avail == uva_of(t, q->ring.driver) &&
			      m.p.addr.used == uva_of(t, q->ring.device) &&
			      (m.flags & VHOST_USER_FLAG_NEED_REPLY);
	for (unsigned i = 0, n = 0; fb_find(fb, VHOST_USER_SET_VRING_CALL, i, 0, &m); i++)
		if ((m.p.u64 & 0xff) == q->idx && n++ == nth)
			ok &= m.nfds == 1 && !(m.p.u64 & VHOST_USER_VRING_NOFD);
	for (unsigned i = 0, n = 0; fb_find(fb, VHOST_USER_SET_VRING_KICK, i, 0, &m); i++)
		if ((m.p.u64 & 0xff) == q->idx && n++ == nth)
			ok &= m.nfds == 1;
	return ok;
}

/* ---- with the fake back-end ---- */

static void test_negotiation(bool packed)
{
	static const uint32_t at_create[] = {
		VHOST_USER_GET_FEATURES, VHOST_USER_GET_PROTOCOL_FEATURES,
		VHOST_USER_SET_PROTOCOL_FEATURES, VHOST_USER_GET_QUEUE_NUM,
		VHOST_USER_SET_OWNER, VHOST_USER_GET_CONFIG, 0,
	};
	static const uint32_t at_driver_ok[] = {
		VHOST_USER_GET_INFLIGHT_FD, VHOST_USER_SET_INFLIGHT_FD,
		VHOST_USER_SET_FEATURES, VHOST_USER_SET_MEM_TABLE,
		VHOST_USER_SET_VRING_NUM, VHOST_USER_SET_VRING_BASE, VHOST_USER_SET_VRING_ADDR,
		VHOST_USER_SET_VRING_CALL, VHOST_USER_SET_VRING_KICK,
		VHOST_USER_SET_VRING_NUM, VHOST_USER_SET_VRING_BASE, VHOST_USER_SET_VRING_ADDR,
		VHOST_USER_SET_VRING_CALL, VHOST_USER_SET_VRING_KICK,
		VHOST_USER_SET_VRING_ENABLE, VHOST_USER_SET_VRING_ENABLE, 0,
	};
	static const uint32_t at_reset[] = {
		VHOST_USER_SET_VRING_ENABLE, VHOST_USER_SET_VRING_ENABLE,
		VHOST_USER_GET_VRING_BASE, VHOST_USER_GET_VRING_BASE, 0,
	};
	struct fake_be fb;
	struct tmachine *t;
	struct fb_msg m;
	struct vdev d;
	struct gq q[2];
	uint64_t f, want = F_VERSION_1 | F_INDIRECT | F_EVENT_IDX | F_BLK_FLUSH | F_BLK_MQ |
			   F_BLK_WCE | F_BLK_SEG_MAX | (packed ? F_PACKED : 0);

	fb_init(&fb);
	/* What brisk cannot carry must not reach the guest. */
	fb.features |= F_IN_ORDER | F_RING_RESET | F_ACCESS_PLATFORM | F_BLK_SECURE_ERASE;
	fb.protocol |= P_INFLIGHT | P_BACKEND_REQ;
	t = machine_fb(&fb, packed ? ",num-queues=2,packed=on" : ",num-queues=2", 1);
	CHECK(t != NULL);
	if (!t)
		goto out;
	CHECK(fb_seq(&fb, 0, at_create));
	CHECK(fb.negotiated == (P_MQ | P_REPLY_ACK | P_CONFIG | P_INFLIGHT));
	CHECK(fb_find(&fb, VHOST_USER_GET_CONFIG, 0, 0, &m) && m.p.config.offset == 0 &&
	      m.p.config.size == CFG_LEN);

	CHECK(vdev_find(t, 0, &d));
	CHECK(dev_features(&d) == want);
	CHECK(mmio_read(t, d.pci.device + CFG_CAPACITY, 8) == 12345);
	CHECK(mmio_read(t, d.pci.device + CFG_SEG_MAX, 4) == 77);
	CHECK(cfg16(&d, CFG_NUM_QUEUES) == 2);

	unsigned before = fb_nlog(&fb);

	f = vdev_init(&d, q, 2, 64, ~0ull);
	CHECK(f == want);
	CHECK(!status_broken(&d));
	CHECK(fb_seq(&fb, before, at_driver_ok));
	/* A region for both queues of the largest ring, handed back as it came. */
	CHECK(fb_find(&fb, VHOST_USER_GET_INFLIGHT_FD, 0, 0, &m) && m.nfds == 0 &&
	      m.p.inflight.num_queues == 2 && m.p.inflight.queue_size == 256);
	CHECK(fb_find(&fb, VHOST_USER_SET_INFLIGHT_FD, 0, 0, &m) && m.nfds == 1 &&
	      m.p.inflight.num_queues == 2 && m.p.inflight.queue_size == 256 &&
	      m.p.inflight.mmap_size == 2 * (16 + 16 * 256) && m.p.inflight.mmap_offset == 0);
	CHECK(fb.ifl_given == fb.ifl_made);
	CHECK(fb_find(&fb, VHOST_USER_SET_FEATURES, 0, 0, &m) && m.p.u64 == (want | F_PROTOCOL));
	CHECK(fb_find(&fb, VHOST_USER_SET_MEM_TABLE, 0, 0, &m) && m.nfds == 1 &&
	      m.p.mem.nregions == 1 && m.p.mem.region[0].gpa == 0 &&
	      m.p.mem.region[0].size == RAM_SIZE &&
	      m.p.mem.region[0].uva == (uintptr_t)t->b.ram &&
	      m.p.mem.region[0].mmap_offset == CANARY_LEN);
	/* The table's fd is the guest's RAM. */
	t->b.ram[0x1234] = 0x5c;
	uint8_t seen = 0;

	CHECK(pread(fb.mem_fd, &seen, 1, CANARY_LEN + 0x1234) == 1 && seen == 0x5c);
	for (unsigned i = 0; i < 2; i++)
		CHECK(ring_started(&fb, t, &q[i], 0, packed ? 0x80008000u : 0));
	for (unsigned i = 0; i < 2; i++)
		CHECK(fb_find(&fb, VHOST_USER_SET_VRING_ENABLE, i, 0, &m) &&
		      m.p.state.index == i && m.p.state.num == 1);

	/* The guest's doorbell reaches the back-end's kick eventfd... */
	gq_kick(&q[1]);
	CHECK(fd_fired(fb.kick[1]));
	CHECK(fd_quiet(fb.kick[0]));
	/* ... and the back-end's call eventfd is the queue's MSI-X vector. */
	eventfd_write(fb.call[1], 1);
	CHECK(irq_take(&d, 2, 1000) > 0);
	CHECK(irq_take(&d, 1, 0) == 0);

	/* Masked, the vector has no route: a call waits for the unmask. */
	uint64_t ctrl = d.pci.msix_table + MSIX_ENTRY * 2 + MSIX_E_CTRL;

	mmio_write(t, ctrl, 1, 4);
	CHECK(vector_efd(t, d.nth * 64 + 2) < 0);
	eventfd_write(fb.call[1], 1);
	mmio_write(t, ctrl, 0, 4);
	CHECK(irq_take(&d, 2, 1000) > 0);

	/* The cache mode goes to the back-end; nothing else does. */
	mmio_write(t, d.pci.device + CFG_CAPACITY, 7, 4);
	CHECK(!fb_find(&fb, VHOST_USER_SET_CONFIG, 0, 0, &m));
	mmio_write(t, d.pci.device + CFG_WCE, 1, 1);
	CHECK(fb_find(&fb, VHOST_USER_SET_CONFIG, 0, 0, &m) && m.p.config.offset == CFG_WCE &&
	      m.p.config.size == 1 && m.p.config.data[0] == 1);
	CHECK(mmio_read(t, d.pci.device + CFG_WCE, 1) == 1);
	CHECK(mmio_read(t, d.pci.device + CFG_CAPACITY, 8) == 12345);

	/* Reset: each ring disabled, then stopped with its requests done. */
	before = fb_nlog(&fb);
	vpci_set_status(&d.pci, 0);
	CHECK(vstatus(&d) == 0);
	CHECK(fb_seq(&fb, before, at_reset));
	CHECK(fb_find(&fb, VHOST_USER_SET_VRING_ENABLE, 2, 0, &m) && m.p.state.num == 0);

	/* And a fresh start after it. */
	before = fb_nlog(&fb);
	CHECK(vdev_init(&d, q, 2, 32, ~0ull) == want);
	CHECK(fb_seq(&fb, before, at_driver_ok));
	for (unsigned i = 0; i < 2; i++)
		CHECK(ring_started(&fb, t, &q[i], 1, packed ? 0x80008000u : 0));
	CHECK(!status_broken(&d));
	machine_free(t);
out:
	fb_stop(&fb);
}

/* One queue: no MQ for the guest; a queue it leaves disabled is not started. */
static void test_one_queue(void)
{
	struct fake_be fb;
	struct tmachine *t;
	struct fb_msg m;
	struct vdev d;
	struct gq q;

	fb_init(&fb);
	t = machine_fb(&fb, "", 1);
	CHECK(t && vdev_find(t, 0, &d));
	if (t) {
		CHECK(!(dev_features(&d) & F_BLK_MQ));
		CHECK(cfg16(&d, CFG_NUM_QUEUES) == 1);
		machine_free(t);
	}
	fb_stop(&fb);

	/* Two offered, the driver enables one. */
	fb_init(&fb);
	t = machine_fb(&fb, ",num-queues=2", 1);
	CHECK(t && vdev_find(t, 0, &d));
	if (t) {
		vdev_init(&d, &q, 1, 16, ~0ull);
		CHECK(ring_started(&fb, t, &q, 0, 0));
		CHECK(fb_find(&fb, VHOST_USER_SET_VRING_KICK, 0, 0, &m) && (m.p.u64 & 0xff) == 0);
		CHECK(!fb_find(&fb, VHOST_USER_SET_VRING_KICK, 1, 0, &m));
		CHECK(fb_find(&fb, VHOST_USER_SET_VRING_ENABLE, 0, 0, &m) && m.p.state.index == 0);
		CHECK(!fb_find(&fb, VHOST_USER_SET_VRING_ENABLE, 1, 0, &m));
		/*
		 * The second, enabled after DRIVER_OK: started beside the
		 * first, which runs on, with no second SET_FEATURES or
		 * SET_MEM_TABLE and nothing said to ring 0.
		 */
		struct gq q1;

		msix_setup(&d, 3);
		gq_init(&d, &q1, 1, 16, q.ring.packed, q.event_idx);
		CHECK(fb_find(&fb, VHOST_USER_SET_VRING_KICK, 1, 0, &m) && (m.p.u64 & 0xff) == 1);
		CHECK(ring_started(&fb, t, &q1, 0, 0));
		CHECK(fb_find(&fb, VHOST_USER_SET_VRING_ENABLE, 1, 0, &m) && m.p.state.index == 1);
		CHECK(!fb_find(&fb, VHOST_USER_SET_FEATURES, 1, 0, &m));
		CHECK(!fb_find(&fb, VHOST_USER_SET_MEM_TABLE, 1, 0, &m));
		CHECK(!fb_find(&fb, VHOST_USER_SET_VRING_NUM, 2, 0, &m));
		CHECK(!fb_find(&fb, VHOST_USER_GET_VRING_BASE, 0, 0, &m));
		CHECK(!status_broken(&d));
		machine_free(t);
	}
	fb_stop(&fb);
}

/* A back-end brisk cannot use is refused at start, with one line. */
static void test_refused(void)
{
	static const struct {
		const char *why;
		uint64_t drop_features, drop_protocol;
		const char *props;
	} cases[] = {
		{ "no protocol features", F_PROTOCOL, 0, "" },
		{ "no config", 0, P_CONFIG, "" },
		{ "no VIRTIO 1", F_VERSION_1, 0, "" },
		{ "more queues than served", 0, 0, ",num-queues=3" },
		{ "two queues without multi-queue", F_BLK_MQ, 0, ",num-queues=2" },
	};

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		struct fake_be fb;
		struct tmachine *t;
		char line[512];

		fb_init(&fb);
		fb.features &= ~cases[i].drop_features;
		fb.protocol &= ~cases[i].drop_protocol;
		capture_begin();
		t = machine_fb(&fb, cases[i].props, 1);
		int n = capture_end(line, sizeof(line));

		if (t || n != 1)
			fprintf(stderr, "%s: %d lines: %s", cases[i].why, n, line);
		CHECK(!t && n == 1);
		fb_stop(&fb);
	}
}

/* A back-end that answers wrong breaks the device: NEEDS_RESET, one line. */
static void test_bad_reply(uint32_t nack, uint32_t garble)
{
	struct fake_be fb;
	struct tmachine *t;
	struct vdev d;
	struct gq q;
	char line[512];

	fb_init(&fb);
	t = machine_fb(&fb, "", 1);
	CHECK(t && vdev_find(t, 0, &d));
	if (!t)
		goto out;
	fb.nack = nack;
	fb.garble = garble;
	capture_begin();
	vdev_init(&d, &q, 1, 16, ~0ull);
	bool broken = status_broken(&d);
	/* The config interrupt tells the driver. */
	bool irq = irq_take(&d, 0, 1000) > 0;
	int n = capture_end(line, sizeof(line));

	CHECK(broken);
	CHECK(irq);
	CHECK(n == 1 && strstr(line, "needs reset"));
	/* A reset does not bring back a back-end that was cut off. */
	vpci_set_status(&d.pci, 0);
	capture_begin();
	vdev_init(&d, &q, 1, 16, ~0ull);
	capture_end(line, sizeof(line));
	CHECK(status_broken(&d));
	machine_free(t);
out:
	fb_stop(&fb);
}

/* Without reconnect=, a back-end that hangs up breaks the device. */
static void test_hang_up(void)
{
	struct fake_be fb;
	struct tmachine *t;
	struct vdev d;
	struct gq q;
	char line[512];

	fb_init(&fb);
	t = machine_fb(&fb, "", 1);
	CHECK(t && vdev_find(t, 0, &d));
	if (!t)
		goto out;
	vdev_init(&d, &q, 1, 16, ~0ull);
	CHECK(!status_broken(&d));
	capture_begin();
	fb_hang_up(&fb);
	bool broken = wait_broken(&d);
	int n = capture_end(line, sizeof(line));

	CHECK(broken);
	CHECK(n == 1 && strstr(line, "closed the connection"));
	CHECK(irq_take(&d, 0, 1000) > 0);
	/* The guest's reset still completes, with nobody to tell. */
	vpci_set_status(&d.pci, 0);
	CHECK(vstatus(&d) == 0);
	machine_free(t);
out:
	fb_stop(&fb);
}

struct resetter {
	struct vdev *d;
	pthread_t thread;
	bool done;
};

/* The driver's reset, on a vCPU of its own: it returns once the reset is. */
static void *resetter_run(void *opaque)
{
	struct resetter *r = opaque;

	vpci_set_status(&r->d->pci, 0);
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	return NULL;
}

static bool resetter_done(struct resetter *r)
{
	return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);
}

enum held_end { ANSWERED, HUNG_UP, VM_STOPPED };

/*
 * Until it answers GET_VRING_BASE (or, as brisk's does, the ack of
 * SET_VRING_ENABLE 0, held_req) the back-end may still write guest
 * memory: the guest's reset waits for that answer however long it takes,
 * past the front-end's reply timeout (100 ms here).  It ends with the
 * answer; with the back-end hanging up (its process is gone, and its
 * mappings with it); or once brisk stops the VM, then after the timeout,
 * so that the vCPU can stop.
 */
static void test_reset_held(enum held_end end, uint32_t held_req)
{
	struct resetter r = { 0 };
	struct fake_be fb;
	struct tmachine *t;
	struct vdev d;
	struct gq q;
	char line[512];
	int n, hung_up, stalled;

	fb_init(&fb);
	fb.hold_req = held_req;
	t = machine_fb(&fb, "", 1);
	CHECK(t && vdev_find(t, 0, &d));
	if (!t)
		goto out;
	vublk_set_reply_timeout(t->c, 0, 100);
	vdev_init(&d, &q, 1, 16, ~0ull);
	CHECK(!status_broken(&d));
	r.d = &d;
	capture_begin();
	if (pthread_create(&r.thread, NULL, resetter_run, &r)) {
		perror("pthread_create");
		exit(1);
	}
	CHECK(fb_wait(&fb, fb_holding));
	/* Ten of its timeouts: a reset that gave up on the answer is over by now. */
	usleep(1000 * 1000);
	CHECK(!resetter_done(&r));
	switch (end) {
	case ANSWERED:
		fb_answer_held(&fb);
		break;
	case HUNG_UP:
		fb_hang_up(&fb);
		break;
	case VM_STOPPED:
		t->b.m.shutdown(&t->b.m, 0, "the VM stops");
		break;
	}
	for (long until = now_ms() + WAIT_MS; !resetter_done(&r) && now_ms() < until;)
		usleep(2000);
	CHECK(resetter_done(&r));
	if (!resetter_done(&r)) {
		/* Let the stuck reset go, so that the other cases still run. */
		fb_answer_held(&fb);
		fb_hang_up(&fb);
	}
	pthread_join(r.thread, NULL);
	hung_up = capture_count("GET_VRING_BASE: the back-end closed the connection");
	stalled = capture_count("GET_VRING_BASE: peer stalled for 100 ms before a message");
	n = capture_end(line, sizeof(line));
	CHECK(vstatus(&d) == 0);
	if (end == ANSWERED)
		CHECK(n == 0 && !fb_holding(&fb));
	else if (end == HUNG_UP)
		CHECK(n == 1 && hung_up == 1);
	else	/* the shutdown's own line, then the stall that ended the wait */
		CHECK(n == 2 && stalled == 1);
	/* Whatever ended the wait, the guest's reset is complete. */
	machine_free(t);
out:
	fb_stop(&fb);
}

/*
 * A back-end that offers INFLIGHT_SHMFD and then has no region to give
 * (size 0, no fd, as libvhost-user answers when it cannot make one) is
 * served without one, as QEMU's front-end does.
 */
static void test_inflight_none(void)
{
	struct fake_be fb;
	struct tmachine *t;
	struct fb_msg m;
	struct vdev d;
	struct gq q;

	fb_init(&fb);
	fb.protocol |= P_INFLIGHT;
	fb.ifl_none = true;
	t = machine_fb(&fb, "", 1);
	CHECK(t && vdev_find(t, 0, &d));
	if (!t)
		goto out;
	vdev_init(&d, &q, 1, 16, ~0ull);
	CHECK(!status_broken(&d));
	CHECK(fb_find(&fb, VHOST_USER_GET_INFLIGHT_FD, 0, 0, &m));
	CHECK(!fb_find(&fb, VHOST_USER_SET_INFLIGHT_FD, 0, 0, &m));
	CHECK(fb_find(&fb, VHOST_USER_SET_VRING_ENABLE, 0, 0, &m) && m.p.state.num == 1);
	machine_free(t);
out:
	fb_stop(&fb);
}

static bool second_conn_enabled(struct fake_be *fb)
{
	struct fb_msg m;

	return fb_find(fb, VHOST_USER_SET_VRING_ENABLE, 0, 2, &m);
}

static bool second_conn_up(struct fake_be *fb)
{
	struct fb_msg m;

	return fb_find(fb, VHOST_USER_GET_CONFIG, 0, 2, &m);
}

enum ring_past { SPLIT_USED, PACKED_UNUSED, PACKED_USED };

/*
 * reconnect=1: the back-end restarts (closes, is connected to again); a
 * running split ring resumes where the guest's used ring says, the
 * device never breaks.  A packed ring keeps no such index: it resumes
 * from its start (VIRTIO 1.2, 2.8: both wrap counters 1) if the old
 * back-end used none of it, and breaks the device if it used any.
 */
static void test_reconnect(enum ring_past past)
{
	const bool packed = past != SPLIT_USED;
	/* After SET_VRING_BASE's num: where the back-end takes the ring up. */
	const uint32_t base = packed ? 1u << 15 | 1u << 31 : 7;
	struct fake_be fb;
	struct tmachine *t;
	struct fb_msg m;
	struct vdev d;
	struct gq q;
	char line[512];
	uint16_t seven = 7;

	fb_init(&fb);
	fb.protocol |= P_INFLIGHT;
	fb_start_listen(&fb);
	t = machine_fb(&fb, packed ? ",packed=on" : "", 1);
	CHECK(t && vdev_find(t, 0, &d));
	if (!t)
		goto out;
	CHECK(vdev_init(&d, &q, 1, 16, ~0ull) & F_PACKED ? packed : !packed);
	CHECK(fb.conns == 1);
	ino_t region = fb.ifl_made;

	CHECK(region && fb.ifl_given == region);
	if (!packed) {
		/* Seven requests made and used while the old back-end lived. */
		memcpy(t->b.ram + q.ring.driver + 2, &seven, 2);
		memcpy(t->b.ram + q.ring.device + 2, &seven, 2);
	} else if (past == PACKED_USED) {
		/* Slot 0 used in the first lap: AVAIL and USED both set. */
		uint16_t used = htole16(1u << 7 | 1u << 15);

		memcpy(t->b.ram + q.ring.desc + 14, &used, 2);
	}
	const bool resumes = past != PACKED_USED;

	capture_begin();
	fb_hang_up(&fb);
	bool up = fb_wait(&fb, second_conn_up);
	bool broken = !resumes && wait_broken(&d);
	bool enabled = resumes ? fb_wait(&fb, second_conn_enabled) : second_conn_enabled(&fb);
	/* Printed after the rings are enabled: wait for it, not for a time. */
	bool said = resumes && capture_wait_for("reconnected to the back-end", 5);
	/* A resume the fake cut short is retried: "went away" again. */
	static const char *const expected[] = { "went away", "reconnected to the back-end", NULL };
	bool only = !resumes || capture_only(expected);
	int n = capture_end(line, sizeof(line));

	CHECK(up);
	if (!resumes) {
		CHECK(broken);
		CHECK(!enabled);
		CHECK(n >= 1 && strstr(line, "went away"));
	} else {
		CHECK(enabled);
		CHECK(!status_broken(&d));
		CHECK(said && only && n >= 2 && strstr(line, "went away"));
		CHECK(fb_find(&fb, VHOST_USER_SET_VRING_BASE, 0, 2, &m) &&
		      m.p.state.index == 0 && m.p.state.num == base);
		CHECK(fb_find(&fb, VHOST_USER_SET_FEATURES, 0, 2, &m) &&
		      m.p.u64 == (d.features | F_PROTOCOL));
		/* The same doorbell and vector, now the new back-end's. */
		pthread_mutex_lock(&fb.lock);
		int kick = fb.kick[0], call = fb.call[0];

		pthread_mutex_unlock(&fb.lock);
		/* What the old back-end used and did not signal: the driver looks once. */
		CHECK(irq_take(&d, 1, WAIT_MS) > 0);
		gq_kick(&q);
		CHECK(fd_fired(kick));
		eventfd_write(call, 1);
		CHECK(irq_take(&d, 1, 1000) > 0);
		/*
		 * The new back-end got the old one's inflight region, to take up
		 * what it left, before anything else of the rings.
		 */
		CHECK(!fb_find(&fb, VHOST_USER_GET_INFLIGHT_FD, 0, 2, &m));
		CHECK(fb_find(&fb, VHOST_USER_SET_INFLIGHT_FD, 0, 2, &m) && m.nfds == 1);
		CHECK(fb.ifl_given == region);
		/* After the driver's reset nothing of it counts: a new region. */
		vpci_set_status(&d.pci, 0);
		vdev_init(&d, &q, 1, 16, ~0ull);
		CHECK(fb_find(&fb, VHOST_USER_GET_INFLIGHT_FD, 0, 2, &m));
		CHECK(fb.ifl_made != region && fb.ifl_given == fb.ifl_made);
	}
	machine_free(t);
out:
	fb_stop(&fb);
}

/* ---- with real back-ends ---- */

/* Requests from the guest's rings to the disk file and back, on queue q. */
static void io_roundtrips(struct tmachine *t, struct vdev *d, struct gq *q, unsigned base)
{
	uint32_t len = 0;
	bool same = true;
	unsigned got = 0;

	memset(slot_data(t, base), 0, 4096);
	CHECK(do_req(q, (struct breq){ T_IN, 5, 4096, 3, false, base, 0, 0 }, &len) == S_OK);
	CHECK(len == 4097);
	for (unsigned i = 0; i < 4096; i++)
		same &= slot_data(t, base)[i] == disk_byte(5 * 512 + i);
	CHECK(same);
	for (unsigned i = 0; i < 8192; i++)
		slot_data(t, base + 1)[i] = (uint8_t)(i * 13 + base);
	CHECK(do_req(q, (struct breq){ T_OUT, 100 + 16 * base, 8192, 2, true, base + 1, 0, 0 },
		     &len) == S_OK);
	CHECK(file_is(t, (100 + 16 * base) * 512, slot_data(t, base + 1), 8192));
	CHECK(do_req(q, (struct breq){ T_FLUSH, 0, 0, 0, false, base + 2, 0, 0 }, NULL) == S_OK);
	/* A batch in one kick, its interrupts straight from the back-end. */
	for (unsigned i = 0; i < 16; i++)
		CHECK(breq_add(q, &(struct breq){ T_IN, (base + i) * 8, 4096, 1, i & 1,
						  base + 3 + i, 0, 0 }) >= 0);
	gq_kick(q);
	for (unsigned i = 0; i < 16; i++)
		got += gq_wait_used(q, &len) >= 0 && len == 4097;
	CHECK(got == 16);
	same = true;
	for (unsigned i = 0; i < 16; i++)
		same &= breq_status(t, base + 3 + i) == S_OK &&
			file_is(t, (base + i) * 8 * 512, slot_data(t, base + 3 + i), 4096);
	CHECK(same);
	(void)d;
}

static void run_io(struct tmachine *t, unsigned nq, bool packed, const char *serial)
{
	struct vdev d;
	struct gq q[2];
	uint32_t len;

	CHECK(vdev_find(t, 0, &d));
	CHECK(mmio_read(t, d.pci.device + CFG_CAPACITY, 8) == DISK_SIZE / 512);
	CHECK(cfg16(&d, CFG_NUM_QUEUES) == nq);
	uint64_t f = vdev_init(&d, q, nq, 64, ~0ull);

	CHECK(!!(f & F_PACKED) == packed);
	CHECK(!status_broken(&d));
	for (unsigned i = 0; i < nq; i++)
		io_roundtrips(t, &d, &q[i], 20 * i);
	if (serial) {
		memset(slot_data(t, 60), 0xff, 32);
		CHECK(do_req(&q[0], (struct breq){ T_GET_ID, 0, 20, 1, false, 60, 0, 0 }, &len) ==
		      S_OK);
		CHECK(!memcmp(slot_data(t, 60), serial, strlen(serial)));
	}
	/* Reset and start again: the back-end serves the new rings. */
	vpci_set_status(&d.pci, 0);
	CHECK(vstatus(&d) == 0);
	vdev_init(&d, q, nq, 32, ~0ull);
	for (unsigned i = 0; i < nq; i++)
		io_roundtrips(t, &d, &q[i], 20 * i);
	CHECK(!status_broken(&d));
	CHECK(canaries_intact(&t->b));
}

/* brisk's own back-end, in this process, on a socket. */
static void test_brisk_backend(bool packed, unsigned nq)
{
	char sock[64], exp[192], chardev[128], device[128];
	const char *opts[] = { "-export", exp, "-chardev", chardev, "-device", device, NULL };
	struct tmachine *t;

	snprintf(sock, sizeof(sock), "/tmp/brisk-vufe-%d.sock", getpid());
	snprintf(exp, sizeof(exp), "vhost-user-blk,id=e0,drive=d0,addr.path=%s,writable=on,"
		 "num-queues=%u,serial=vu-disk", sock, nq);
	snprintf(chardev, sizeof(chardev), "socket,id=c0,path=%s", sock);
	snprintf(device, sizeof(device), "vhost-user-blk-pci,chardev=c0,num-queues=%u%s", nq,
		 packed ? ",packed=on" : "");
	t = machine_build("file=%s,if=none,id=d0", opts, nq);
	CHECK(t != NULL);
	if (!t)
		return;
	run_io(t, nq, packed, "vu-disk");
	machine_free(t);
}

/*
 * The driver enables its second queue after DRIVER_OK: brisk's back-end
 * serves it beside the first, which keeps running (no second SET_FEATURES
 * or SET_MEM_TABLE restarts the rings under it).
 */
static void test_late_queue(void)
{
	char sock[64], exp[192], chardev[128];
	const char *opts[] = { "-export", exp, "-chardev", chardev, "-device",
			       "vhost-user-blk-pci,chardev=c0,num-queues=2", NULL };
	struct tmachine *t;
	struct vdev d;
	struct gq q[2];
	uint64_t f;

	snprintf(sock, sizeof(sock), "/tmp/brisk-vufe-%d.sock", getpid());
	snprintf(exp, sizeof(exp), "vhost-user-blk,id=e0,drive=d0,addr.path=%s,writable=on,"
		 "num-queues=2", sock);
	snprintf(chardev, sizeof(chardev), "socket,id=c0,path=%s", sock);
	t = machine_build("file=%s,if=none,id=d0", opts, 2);
	CHECK(t != NULL);
	if (!t)
		return;
	CHECK(vdev_find(t, 0, &d));
	f = vdev_init(&d, q, 1, 64, ~0ull);
	io_roundtrips(t, &d, &q[0], 0);
	msix_setup(&d, 3);
	gq_init(&d, &q[1], 1, 64, f & F_PACKED, !!(f & F_EVENT_IDX));
	io_roundtrips(t, &d, &q[1], 20);
	io_roundtrips(t, &d, &q[0], 40);
	CHECK(!status_broken(&d));
	CHECK(canaries_intact(&t->b));
	machine_free(t);
}

/* qemu-storage-daemon's, in a child process; a skip where there is none. */
static int test_qsd(void)
{
	char sock[64], chardev[128], node[256];
	const char *opts[] = { "-chardev", chardev, "-device", "vhost-user-blk-pci,chardev=c0,"
			       "num-queues=2", NULL };
	struct tmachine *t;
	struct stat st;
	long end;
	pid_t pid;
	int status;

	if (system("command -v qemu-storage-daemon >/dev/null 2>&1")) {
		check_skip("qemu-storage-daemon",
			   "no qemu-storage-daemon (apt-get install qemu-system-common)");
		return check_done();
	}
	t = machine_board(2, false);
	snprintf(sock, sizeof(sock), "/tmp/brisk-vuqsd-%d.sock", getpid());
	snprintf(node, sizeof(node), "driver=file,node-name=d0,filename=%s", t->path);
	snprintf(chardev, sizeof(chardev), "socket,id=c0,path=%s", sock);
	unlink(sock);
	pid = fork();
	if (pid == 0) {
		char exp[192];

		snprintf(exp, sizeof(exp), "type=vhost-user-blk,id=e0,node-name=d0,addr.type=unix,"
			 "addr.path=%s,writable=on,num-queues=2", sock);
		execlp("qemu-storage-daemon", "qemu-storage-daemon", "--blockdev", node,
		       "--export", exp, (char *)NULL);
		_exit(127);
	}
	for (end = now_ms() + WAIT_MS; stat(sock, &st) < 0 && now_ms() < end;)
		usleep(10000);
	t = machine_devices(t, NULL, opts);
	CHECK(t != NULL);
	if (t) {
		run_io(t, 2, false, NULL);
		machine_free(t);
	}
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	unlink(sock);
	check_case("qemu-storage-daemon");
	return check_done();
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && !strcmp(argv[1], "qsd"))
		return test_qsd();
	RUN(test_negotiation(false));
	RUN(test_negotiation(true));
	RUN(test_one_queue());
	RUN(test_refused());
	RUN(test_bad_reply(VHOST_USER_SET_VRING_ADDR, 0));
	RUN(test_bad_reply(0, VHOST_USER_SET_FEATURES));
	RUN(test_hang_up());
	RUN(test_reset_held(ANSWERED, VHOST_USER_GET_VRING_BASE));
	RUN(test_reset_held(ANSWERED, VHOST_USER_SET_VRING_ENABLE));
	RUN(test_reset_held(HUNG_UP, VHOST_USER_GET_VRING_BASE));
	RUN(test_reset_held(VM_STOPPED, VHOST_USER_GET_VRING_BASE));
	RUN(test_inflight_none());
	RUN(test_reconnect(SPLIT_USED));
	RUN(test_reconnect(PACKED_UNUSED));
	RUN(test_reconnect(PACKED_USED));
	RUN(test_brisk_backend(false, 1));
	RUN(test_brisk_backend(true, 1));
	RUN(test_brisk_backend(false, 2));
	RUN(test_brisk_backend(true, 2));
	RUN(test_late_queue());
	return check_done();
}
