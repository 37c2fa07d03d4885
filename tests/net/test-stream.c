// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -netdev stream (net/stream.c) driven as a NIC drives it, against a peer
 * the test plays on a unix socket, on TCP at 127.0.0.1 (each case that
 * meets its peer at an address runs over both) or on a socketpair,
 * speaking QEMU's and
 * passt's framing: a 4-byte big-endian length, then the frame.  Nothing
 * waits on time: a case waits on a socket, rx_fd or a counter, bounded by
 * WAIT_MS only to turn a hang into a failure.  reconnect=1 takes its
 * second, and a failed accept() its pause, which no check measures.
 *
 * With --passt PATH ADDR GATEWAY (tests/net/passt.sh, inside a network
 * namespace of its own) the peer is passt itself, listening at PATH: a
 * DHCP DISCOVER gets an OFFER of ADDR, an ARP request for GATEWAY a
 * reply.  Those frames are built and read byte for byte from RFC 826,
 * 791, 768 and 2131/2132 (tests/lib/net-frames.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "net/net.h"
#include "util/opts.h"

#include "capture.h"
#include "check.h"
#include "net-frames.h"
#include "opts-refused.h"

#define WAIT_MS 20000
/* net/queue.h's bounds, from the docs: 1024 frames or 4 MiB each way. */
#define QUEUE_FRAMES 1024
#define QUEUE_BYTES (4u << 20)

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/* ---- time ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t deadline(void)
{
	return now_ms() + WAIT_MS;
}

/*
 * Frame seq of len bytes: to the guest from the peer (or back), of an
 * experimental EtherType (IEEE 802 local), the rest a pattern of seq and
 * offset, seq itself at 14 where it fits.
 */
static void pattern(uint8_t *f, size_t len, uint32_t seq)
{
	memcpy(f, guest_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	put16(f + 12, 0x88b5);
	for (size_t i = 14; i < len; i++)
		f[i] = (uint8_t)(seq * 131 + i * 7 + (i >> 8));
	if (len >= 18)
		put32(f + 14, seq);
}

/* ---- the peer's side: a unix socket, non-blocking, every wait bounded ---- */

static bool wait_fd(int fd, short events, int64_t until)
{
	struct pollfd pfd = { fd, events, 0 };
	int64_t left = until - now_ms();

	return left > 0 && poll(&pfd, 1, (int)left) == 1;
}

static socklen_t unix_addr(struct sockaddr_un *sun, const char *name, bool abstract)
{
	size_t len = strlen(name);

	*sun = (struct sockaddr_un){ .sun_family = AF_UNIX };
	memcpy(sun->sun_path + abstract, name, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + len + !abstract);
}

static int peer_socket(void)
{
	return socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

static int peer_listen(const char *name, bool abstract)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, name, abstract);
	int fd = peer_socket();

	if (fd >= 0 && (bind(fd, (struct sockaddr *)&sun, len) < 0 || listen(fd, 4) < 0)) {
		close(fd);
		fd = -1;
	}
	CHECK(fd >= 0);
	return fd;
}

static int peer_connect(const char *name, bool abstract)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, name, abstract);
	int fd = peer_socket();

	if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, len) < 0) {
		close(fd);
		fd = -1;
	}
	CHECK(fd >= 0);
	return fd;
}

static int peer_accept(int lfd)
{
	int fd = -1;

	if (wait_fd(lfd, POLLIN, deadline()))
		fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	CHECK(fd >= 0);
	return fd;
}

static void close_fd(int fd)
{
	if (fd >= 0)
		close(fd);
}

/*
 * Where a case's peer and back end meet: a unix socket's path, or a TCP
 * port of 127.0.0.1.  The port is the kernel's pick, and reserve holds it
 * bound, not listening, with SO_REUSEADDR: no other program takes it,
 * a connect() there is refused until the test listens, and a back end
 * with server=on (SO_REUSEADDR too) may still bind and listen there.
 */
enum over { OVER_UNIX, OVER_TCP };

struct where {
	enum over over;
	char path[128];			/* OVER_UNIX */
	struct sockaddr_in sin;		/* OVER_TCP */
	int reserve;
	char opts[192];			/* the back end's addr.* */
};

static int tcp_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;

	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static bool where_new(struct where *w, const char *dir, const char *name, enum over over)
{
	socklen_t len = sizeof(w->sin);

	*w = (struct where){ .over = over, .reserve = -1 };
	if (over == OVER_UNIX) {
		snprintf(w->path, sizeof(w->path), "%s/%s", dir, name);
		unlink(w->path);
		snprintf(w->opts, sizeof(w->opts), "addr.type=unix,addr.path=%s", w->path);
		return true;
	}
	w->sin = (struct sockaddr_in){ .sin_family = AF_INET,
				       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	w->reserve = tcp_socket();
	if (w->reserve < 0 || bind(w->reserve, (struct sockaddr *)&w->sin, len) < 0 ||
	    getsockname(w->reserve, (struct sockaddr *)&w->sin, &len) < 0) {
		CHECK(!"a TCP port of 127.0.0.1");
		return false;
	}
	snprintf(w->opts, sizeof(w->opts), "addr.type=inet,addr.host=127.0.0.1,addr.port=%u",
		 ntohs(w->sin.sin_port));
	return true;
}

static void where_free(struct where *w)
{
	close_fd(w->reserve);
	w->reserve = -1;
	if (w->over == OVER_UNIX)
		unlink(w->path);
}

/* The test listening at w; over TCP on the reserved port itself. */
static int w_listen(const struct where *w)
{
	int fd;

	if (w->over == OVER_UNIX)
		return peer_listen(w->path, false);
	fd = w->reserve >= 0 ? fcntl(w->reserve, F_DUPFD_CLOEXEC, 0) : -1;
	if (fd >= 0 && (listen(fd, 4) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0)) {
		close(fd);
		fd = -1;
	}
	CHECK(fd >= 0);
	return fd;
}

/* A connected socket to w, blocking or not (O_NONBLOCK after connect()). */
static int w_connect_flags(const struct where *w, int flags)
{
	int fd;

	if (w->over == OVER_UNIX) {
		fd = peer_connect(w->path, false);
		if (fd >= 0 && !(flags & O_NONBLOCK))
			fcntl(fd, F_SETFL, 0);
		return fd;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && (connect(fd, (const struct sockaddr *)&w->sin, sizeof(w->sin)) < 0 ||
			fcntl(fd, F_SETFL, flags) < 0)) {
		close(fd);
		fd = -1;
	}
	CHECK(fd >= 0);
	return fd;
}

static int w_connect(const struct where *w)
{
	return w_connect_flags(w, O_NONBLOCK);
}

/*
 * The back end's end of the test's TCP connection fd, found among the
 * process's descriptors by its addresses (the one whose own address is
 * fd's peer's, and the other way round); -1 for a unix socket.
 */
static int other_end(int fd)
{
	struct sockaddr_in me, peer, a, b;
	socklen_t len = sizeof(me), len2 = sizeof(peer);

	if (getsockname(fd, (struct sockaddr *)&me, &len) < 0 || me.sin_family != AF_INET ||
	    getpeername(fd, (struct sockaddr *)&peer, &len2) < 0)
		return -1;
	for (int i = 0; i < 4096; i++) {
		socklen_t la = sizeof(a), lb = sizeof(b);

		if (i != fd && !getsockname(i, (struct sockaddr *)&a, &la) &&
		    a.sin_family == AF_INET && !getpeername(i, (struct sockaddr *)&b, &lb) &&
		    a.sin_port == peer.sin_port && b.sin_port == me.sin_port &&
		    a.sin_addr.s_addr == peer.sin_addr.s_addr &&
		    b.sin_addr.s_addr == me.sin_addr.s_addr)
			return i;
	}
	CHECK(!"the back end's end of a TCP connection");
	return -1;
}

/* TCP_NODELAY on the back end's end of fd's connection. */
static bool nodelay(int fd)
{
	int end = other_end(fd), on = 0;
	socklen_t len = sizeof(on);

	return end >= 0 && !getsockopt(end, IPPROTO_TCP, TCP_NODELAY, &on, &len) && on;
}

static bool peer_write(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	int64_t until = deadline();

	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0 && errno == EAGAIN && wait_fd(fd, POLLOUT, until))
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

/* Exactly n bytes; false at the end of the stream or after WAIT_MS. */
static bool peer_read(int fd, void *buf, size_t n, int64_t until)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = read(fd, p, n);

		if (k < 0 && errno == EAGAIN && wait_fd(fd, POLLIN, until))
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

/* A frame, its length before it, in one call. */
static bool peer_send(int fd, const uint8_t *f, size_t len)
{
	uint8_t h[4];
	struct iovec iov[2] = { { h, 4 }, { (void *)f, len } };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t k;

	put32(h, (uint32_t)len);
	k = sendmsg(fd, &m, MSG_NOSIGNAL);
	if (k < 0 && errno == EAGAIN)
		k = 0;
	if (k < 0)
		return false;
	/* What the socket had no room for yet, waited for. */
	if ((size_t)k < 4 && !peer_write(fd, h + k, 4 - (size_t)k))
		return false;
	k = k < 4 ? 0 : k - 4;
	return peer_write(fd, f + k, len - (size_t)k);
}

/* The next frame from the back end into f; its length, 0 on none. */
static size_t peer_recv(int fd, uint8_t *f, int64_t until)
{
	uint8_t h[4];
	uint32_t len;

	if (!peer_read(fd, h, 4, until))
		return 0;
	len = get32(h);
	CHECK(len >= 14 && len <= FRAME_MAX);
	if (len < 14 || len > FRAME_MAX || !peer_read(fd, f, len, until))
		return 0;
	return len;
}

/* Whether the back end closed the connection (what it sent read away). */
static bool peer_sees_eof(int fd)
{
	int64_t until = deadline();
	uint8_t buf[4096];

	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));

		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return true;
		if (k < 0 && (errno != EAGAIN || !wait_fd(fd, POLLIN, until)))
			return false;
	}
}

/*
 * Whether the back end has read every byte the peer wrote (spun on,
 * bounded).  A unix socket's queue empties as the reader reads; a TCP
 * one's as the other end acknowledges, which it does on taking the bytes
 * into its own queue: that one must be empty too.
 */
static bool consumed(int fd)
{
	int64_t until = deadline();
	int end = other_end(fd), n = -1, m = 0;

	for (;;) {
		if (ioctl(fd, SIOCOUTQ, &n) < 0 || (!n && end >= 0 && ioctl(end, SIOCINQ, &m) < 0))
			return false;
		if ((!n && !m) || now_ms() >= until)
			return !n && !m;
		sched_yield();
	}
}

/*
 * How many frames of len bytes the sockets between back end and peer may
 * hold beyond the queue, generously: a unix socket's buffers hold far
 * fewer than 4096; TCP's grow up to the sysctls' maxima, each way.
 */
static unsigned slack(int fd, size_t len)
{
	unsigned long w = 0, r = 0, x, y;
	FILE *f;

	if (other_end(fd) < 0)
		return 4096;
	if ((f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r"))) {
		CHECK(fscanf(f, "%lu %lu %lu", &x, &y, &w) == 3);
		fclose(f);
	}
	if ((f = fopen("/proc/sys/net/ipv4/tcp_rmem", "r"))) {
		CHECK(fscanf(f, "%lu %lu %lu", &x, &y, &r) == 3);
		fclose(f);
	}
	CHECK(w && r);
	return (unsigned)(2 * (w + r) / len) + 4096;
}

/* ---- the NIC's side ---- */

/* In two pieces, as a NIC's descriptor chain may hold it. */
static bool nic_send(struct netdev *nd, const uint8_t *f, size_t len)
{
	struct iovec iov[2] = { { (void *)f, len / 3 }, { (void *)(f + len / 3), len - len / 3 } };

	return nd->ops->send(nd, iov, 2, len);
}

/* The next frame for the guest, taken into f in two pieces; 0 after until. */
static size_t nic_recv(struct netdev *nd, uint8_t *f, int64_t until)
{
	for (;;) {
		size_t len = nd->ops->peek(nd);
		uint64_t n;

		if (len) {
			struct iovec iov[2] = { { f, 7 }, { f + 7, FRAME_MAX - 7 } };

			CHECK(len >= 14 && len <= FRAME_MAX);
			nd->ops->take(nd, len <= FRAME_MAX ? iov : NULL, 2);
			return len;
		}
		if (!wait_fd(nd->rx_fd, POLLIN, until))
			return 0;
		if (read(nd->rx_fd, &n, sizeof(n)) < 0)
			CHECK(errno == EAGAIN);
	}
}

/* Frame seq of len bytes from the NIC to the peer, byte for byte. */
static bool to_peer(struct netdev *nd, int fd, size_t len, uint32_t seq)
{
	uint8_t f[FRAME_MAX], got[FRAME_MAX];

	pattern(f, len, seq);
	REQUIRE(nic_send(nd, f, len));
	REQUIRE(peer_recv(fd, got, deadline()) == len);
	REQUIRE(!memcmp(f, got, len));
	return true;
}

/* And from the peer to the NIC. */
static bool to_nic(struct netdev *nd, int fd, size_t len, uint32_t seq)
{
	uint8_t f[FRAME_MAX], got[FRAME_MAX];

	pattern(f, len, seq);
	REQUIRE(peer_send(fd, f, len));
	REQUIRE(nic_recv(nd, got, deadline()) == len);
	REQUIRE(!memcmp(f, got, len));
	return true;
}

static const size_t sizes[] = { 14, 60, 64, 1514, 9014, 65535, FRAME_MAX };

/*
 * Every size each way.  The peer's frame goes first: a server has taken
 * the connection once it reads from it, and until then send() refuses.
 */
static bool both_ways(struct netdev *nd, int fd)
{
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		REQUIRE(to_nic(nd, fd, sizes[i], 100 + i));
		REQUIRE(to_peer(nd, fd, sizes[i], i));
	}
	CHECK_EQ(nd->rx_dropped, 0);
	CHECK_EQ(nd->tx_dropped, 0);
	return true;
}

/* ---- configs ---- */

struct backend {
	struct netdev_stream_cfg *cfg;
	struct netdev *nd;
};

static struct netdev_stream_cfg *stream_cfg(const char *arg)
{
	return opts_parse_new(&netdev_stream_spec, sizeof(struct netdev_stream_cfg),
			      &netdev_stream_defaults, arg, netdev_stream_check);
}

static void cfg_free(struct netdev_stream_cfg *cfg)
{
	if (cfg) {
		opts_free(&netdev_stream_spec, cfg);
		free(cfg);
	}
}

__attribute__((format(printf, 1, 2)))
static struct backend backend_new(const char *fmt, ...)
{
	struct backend b = { NULL, NULL };
	char arg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(arg, sizeof(arg), fmt, ap);
	va_end(ap);
	b.cfg = stream_cfg(arg);
	b.nd = b.cfg ? netdev_stream_new(b.cfg) : NULL;
	CHECK(b.nd);
	return b;
}

static void backend_free(struct backend *b)
{
	netdev_free(b->nd);
	cfg_free(b->cfg);
	b->nd = NULL;
	b->cfg = NULL;
}

/* A fresh socket path in the test's directory. */
static const char *sock_path(const char *dir, const char *name, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", dir, name);
	unlink(buf);
	return buf;
}

/* ---- 1: frames both ways ---- */

/* server=off: the back end connects to the test; over TCP without Nagle. */
static void test_client(const char *dir, enum over over)
{
	struct where w;
	int lfd = -1, fd = -1;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "c.sock", over) && (lfd = w_listen(&w)) >= 0)
		b = backend_new("id=c0,server=off,%s", w.opts);
	if (b.nd && lfd >= 0 && (fd = peer_accept(lfd)) >= 0) {
		CHECK(over == OVER_UNIX || nodelay(fd));
		both_ways(b.nd, fd);
	}
	backend_free(&b);
	if (fd >= 0)
		CHECK(peer_sees_eof(fd));
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/* server=on: the test connects; the socket file goes at free(), the port is free again. */
static void test_server(const char *dir, enum over over)
{
	struct where w;
	struct backend b = { NULL, NULL };
	int fd = -1, again;

	if (where_new(&w, dir, "s.sock", over))
		b = backend_new("id=s0,server=on,%s", w.opts);
	/* Taken once the back end reads the peer's first frame, as both_ways() waits. */
	if (b.nd && (fd = w_connect(&w)) >= 0 && both_ways(b.nd, fd))
		CHECK(over == OVER_UNIX || nodelay(fd));
	backend_free(&b);
	if (over == OVER_UNIX)
		CHECK(access(w.path, F_OK) < 0 && errno == ENOENT);
	close_fd(fd);
	/* Nobody listens there now: a connect() is refused. */
	again = over == OVER_TCP ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
	if (again >= 0)
		CHECK(connect(again, (struct sockaddr *)&w.sin, sizeof(w.sin)) < 0 &&
		      errno == ECONNREFUSED);
	close_fd(again);
	where_free(&w);
}

/* addr.abstract=on: Linux's abstract namespace, tight as QEMU's default. */
static void test_abstract(void)
{
	char name[64];
	struct backend b;
	int fd = -1;

	snprintf(name, sizeof(name), "brisk-test-stream-%d", (int)getpid());
	b = backend_new("id=a0,server=on,addr.type=unix,addr.path=%s,addr.abstract=on", name);
	if (b.nd && (fd = peer_connect(name, true)) >= 0)
		both_ways(b.nd, fd);
	backend_free(&b);
	close_fd(fd);
}

/* addr.type=fd: a connected socket inherited, and closed at free(). */
static void test_fd_client(void)
{
	int sv[2] = { -1, -1 };
	struct backend b;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		CHECK(!"socketpair");
		return;
	}
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	b = backend_new("id=f0,addr.type=fd,addr.str=%d", sv[0]);
	if (b.nd)
		both_ways(b.nd, sv[1]);
	backend_free(&b);
	CHECK(fcntl(sv[0], F_GETFD) < 0 && errno == EBADF);
	close(sv[1]);
}

/* addr.type=fd,server=on: a listening socket inherited. */
static void test_fd_server(const char *dir)
{
	char p[128];
	int lfd = peer_listen(sock_path(dir, "fd.sock", p, sizeof(p)), false), fd = -1;
	struct backend b = backend_new("id=f1,server=on,addr.type=fd,addr.str=%d", lfd);

	if (b.nd && (fd = peer_connect(p, false)) >= 0)
		both_ways(b.nd, fd);
	backend_free(&b);
	CHECK(fcntl(lfd, F_GETFD) < 0 && errno == EBADF);
	close_fd(fd);
	unlink(p);
}

/* ---- 2: a frame in pieces ---- */

/*
 * Each piece read by the back end (the peer's socket empty again) before
 * the next is written: the frame reaches the NIC whole, and only then.
 */
static bool pieces(struct netdev *nd, int fd)
{
	uint8_t buf[4 + 1514], got[FRAME_MAX];
	const size_t len = 1514, cut[] = { 0, 1, 3, 4, 5, 700, 4 + len - 1, 4 + len };
	const unsigned n = sizeof(cut) / sizeof(cut[0]);

	put32(buf, (uint32_t)len);
	pattern(buf + 4, len, 7);
	for (unsigned i = 0; i + 1 < n; i++) {
		REQUIRE(peer_write(fd, buf + cut[i], cut[i + 1] - cut[i]));
		if (i + 2 == n)
			break;
		REQUIRE(consumed(fd));
		CHECK_EQ(nd->ops->peek(nd), 0);
	}
	REQUIRE(nic_recv(nd, got, deadline()) == len);
	CHECK(!memcmp(got, buf + 4, len));
	return true;
}

/* Several frames in one write, the last of them the largest: each whole, in order. */
static bool one_write(struct netdev *nd, int fd)
{
	uint8_t buf[3 * (4 + FRAME_MAX)], want[FRAME_MAX], got[FRAME_MAX];
	const size_t len[3] = { 60, 1514, FRAME_MAX };
	size_t off = 0;

	for (unsigned i = 0; i < 3; i++) {
		put32(buf + off, (uint32_t)len[i]);
		pattern(buf + off + 4, len[i], 20 + i);
		off += 4 + len[i];
	}
	REQUIRE(peer_write(fd, buf, off));
	for (unsigned i = 0; i < 3; i++) {
		pattern(want, len[i], 20 + i);
		REQUIRE(nic_recv(nd, got, deadline()) == len[i]);
		CHECK(!memcmp(got, want, len[i]));
	}
	return true;
}

/* The back end connected to a peer the test listens as at w, its connection in *fd. */
static struct backend client_of(const struct where *w, const char *id, int *lfd, int *fd)
{
	struct backend b = { NULL, NULL };

	*fd = -1;
	if ((*lfd = w_listen(w)) >= 0)
		b = backend_new("id=%s,%s", id, w->opts);
	if (b.nd)
		*fd = peer_accept(*lfd);
	return b;
}

static void test_pieces(const char *dir, enum over over)
{
	struct where w;
	int lfd = -1, fd = -1;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "p.sock", over))
		b = client_of(&w, "p0", &lfd, &fd);
	if (b.nd && fd >= 0 && pieces(b.nd, fd))
		one_write(b.nd, fd);
	backend_free(&b);
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/* ---- 3: lengths that break the stream ---- */

/* len from the peer: the back end closes that connection. */
static bool peer_breaks(int fd, uint32_t len)
{
	uint8_t h[4];

	put32(h, len);
	REQUIRE(peer_write(fd, h, 4));
	REQUIRE(peer_sees_eof(fd));
	return true;
}

/*
 * server=on: a length of 0 closes the connection, with one line; the next
 * peer works, and one sending a length over FRAME_MAX is closed without
 * another line (a peer can repeat it at will).  A length under 14 is no
 * Ethernet frame but breaks nothing: dropped, counted, and the next
 * frame arrives.
 */
static bool bad_lengths_server(struct netdev *nd, const struct where *w)
{
	char line[512];
	int fd = w_connect(w), lines;
	uint8_t tiny[5] = { 1, 2, 3, 4, 5 };

	REQUIRE(fd >= 0 && to_nic(nd, fd, 60, 1));
	capture_begin();
	CHECK(peer_breaks(fd, 0));
	lines = capture_end(line, sizeof(line));
	close(fd);
	CHECK_EQ(lines, 1);
	CHECK(strstr(line, "-netdev stream,id=b0: the peer sent a frame length of 0"));
	REQUIRE((fd = w_connect(w)) >= 0);
	REQUIRE(to_nic(nd, fd, 1514, 2) && to_peer(nd, fd, 1514, 3));
	capture_begin();
	CHECK(peer_breaks(fd, FRAME_MAX + 1));
	CHECK_EQ(capture_end(line, sizeof(line)), 0);
	close(fd);
	REQUIRE((fd = w_connect(w)) >= 0);
	CHECK(peer_send(fd, tiny, sizeof(tiny)) && to_nic(nd, fd, 60, 4));
	CHECK_EQ(nd->rx_dropped, 1);
	CHECK(to_peer(nd, fd, 60, 5));
	close(fd);
	return true;
}

/* The back end listening at w for the test. */
static struct backend server_at(const struct where *w, const char *id)
{
	return backend_new("id=%s,server=on,%s", id, w->opts);
}

static void test_bad_lengths_server(const char *dir, enum over over)
{
	struct where w;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "b.sock", over))
		b = server_at(&w, "b0");
	if (b.nd)
		bad_lengths_server(b.nd, &w);
	backend_free(&b);
	where_free(&w);
}

/*
 * server=off without reconnect=: a length past FRAME_MAX closes the
 * connection for good, in one line; send() refuses from then on.
 */
static void test_bad_length_client(const char *dir, enum over over)
{
	char line[512];
	struct where w;
	int lfd = -1, fd = -1;
	struct backend b = { NULL, NULL };
	uint8_t f[60];

	if (where_new(&w, dir, "bc.sock", over))
		b = client_of(&w, "b1", &lfd, &fd);
	if (b.nd && fd >= 0 && to_nic(b.nd, fd, 60, 1)) {
		capture_begin();
		CHECK(peer_breaks(fd, 0x7fffffff));
		CHECK_EQ(capture_end(line, sizeof(line)), 1);
		CHECK(strstr(line, "frame length of 2147483647 (1 to 65549); the link stays "
			  "down (no reconnect=)"));
		pattern(f, sizeof(f), 2);
		CHECK(!nic_send(b.nd, f, sizeof(f)));
		CHECK_EQ(b.nd->tx_dropped, 0);
	}
	backend_free(&b);
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/* ---- 4: one peer at a time, and reconnect= ---- */

/*
 * server=on: a second peer waits in the backlog, unread, while the first
 * is served; once the first goes, the second's frame arrives and the
 * NIC's go to it.
 */
static bool one_peer(struct netdev *nd, const struct where *w)
{
	uint8_t f[1514], got[FRAME_MAX];
	int a = w_connect(w), b = -1;

	REQUIRE(a >= 0 && to_nic(nd, a, 60, 1));
	REQUIRE((b = w_connect(w)) >= 0);
	pattern(f, sizeof(f), 500);
	CHECK(peer_send(b, f, sizeof(f)));
	CHECK(to_peer(nd, a, 60, 2) && to_nic(nd, a, 60, 3));
	CHECK_EQ(nd->ops->peek(nd), 0);
	close(a);
	CHECK(nic_recv(nd, got, deadline()) == sizeof(f) && !memcmp(got, f, sizeof(f)));
	CHECK(to_peer(nd, b, 1514, 4));
	close(b);
	return true;
}

static void test_one_peer(const char *dir, enum over over)
{
	struct where w;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "o.sock", over))
		b = server_at(&w, "o0");
	if (b.nd)
		one_peer(b.nd, &w);
	backend_free(&b);
	where_free(&w);
}

/* The peer closes; the back end says so once and connects again. */
static bool reconnects(struct netdev *nd, int lfd, int *fd)
{
	char line[512];
	int lines;

	REQUIRE(to_nic(nd, *fd, 60, 1) && to_peer(nd, *fd, 60, 2));
	capture_begin();
	close(*fd);
	*fd = peer_accept(lfd);
	lines = capture_end(line, sizeof(line));
	REQUIRE(*fd >= 0);
	CHECK_EQ(lines, 1);
	CHECK(strstr(line, "-netdev stream,id=r0: the peer closed the connection; "
		     "connecting again every 1 s (reconnect=)"));
	/* The peer's frame first: the back end is up once it reads. */
	REQUIRE(to_nic(nd, *fd, 1514, 3) && to_peer(nd, *fd, 1514, 4));
	return true;
}

/*
 * reconnect=1: nobody listens at first (one line, and send() refuses),
 * then the test does and the back end comes; it comes again after the
 * peer closes.
 */
static void test_reconnect(const char *dir, enum over over)
{
	char line[512], want[256];
	struct where w;
	struct backend b = { NULL, NULL };
	int lfd = -1, fd = -1, lines;
	uint8_t f[60];

	if (!where_new(&w, dir, "r.sock", over))
		return;
	snprintf(want, sizeof(want), "%s: cannot connect: %s; trying again every 1 s "
		 "(reconnect=)", strchr(w.opts, ',') + 1,
		 strerror(over == OVER_UNIX ? ENOENT : ECONNREFUSED));
	capture_begin();
	b = backend_new("id=r0,server=off,reconnect=1,%s", w.opts);
	lines = capture_end(line, sizeof(line));
	CHECK_EQ(lines, 1);
	CHECK(strstr(line, want));
	pattern(f, sizeof(f), 0);
	CHECK(!b.nd || !nic_send(b.nd, f, sizeof(f)));
	if (b.nd && (lfd = w_listen(&w)) >= 0 && (fd = peer_accept(lfd)) >= 0)
		reconnects(b.nd, lfd, &fd);
	backend_free(&b);
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/* server=on without a peer: send() refuses, for the NIC to count. */
static void test_no_peer(const char *dir, enum over over)
{
	struct where w;
	struct backend b = { NULL, NULL };
	uint8_t f[60];

	if (where_new(&w, dir, "n.sock", over))
		b = server_at(&w, "n0");
	pattern(f, sizeof(f), 0);
	CHECK(b.nd && !nic_send(b.nd, f, sizeof(f)));
	CHECK(!b.nd || b.nd->tx_dropped == 0);
	backend_free(&b);
	where_free(&w);
}

/*
 * server=on, accept() failing with EMFILE (the peer connected, the
 * process out of descriptors, so the listening socket stays readable):
 * one line, and the back end leaves the socket alone for a second rather
 * than spin on it; once descriptors are free again the waiting peer is
 * taken.  The line is waited for, since the thread says it; the peer's
 * frame then arrives after the pause, bounded as every wait.
 */
static bool accept_fails(struct netdev *nd, const struct where *w)
{
	struct sockaddr_un sun;
	socklen_t len = w->over == OVER_UNIX ? unix_addr(&sun, w->path, false) : sizeof(w->sin);
	const struct sockaddr *to = w->over == OVER_UNIX ? (const struct sockaddr *)&sun :
				    (const struct sockaddr *)&w->sin;
	struct rlimit old, low;
	int fd = socket(to->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0), probe = dup(2), lines;
	char line[512];
	bool said;

	REQUIRE(fd >= 0 && probe >= 0 && !getrlimit(RLIMIT_NOFILE, &old));
	close(probe);
	capture_begin();
	/* The lowest free descriptor is probe's: none is left to accept() with. */
	low = (struct rlimit){ (rlim_t)probe, old.rlim_max };
	CHECK(!setrlimit(RLIMIT_NOFILE, &low));
	CHECK(!connect(fd, to, len));
	said = capture_wait_for("cannot accept a peer: Too many open files; trying again "
				"every 1 s (said once)", WAIT_MS / 1000);
	CHECK(!setrlimit(RLIMIT_NOFILE, &old));
	lines = capture_end(line, sizeof(line));
	CHECK(said);
	CHECK_EQ(lines, 1);
	CHECK(strstr(line, "-netdev stream,id=e0: cannot accept a peer"));
	CHECK(!fcntl(fd, F_SETFL, O_NONBLOCK));
	CHECK(to_nic(nd, fd, 60, 1) && to_peer(nd, fd, 60, 2));
	close(fd);
	return true;
}

static void test_accept_fails(const char *dir, enum over over)
{
	struct where w;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "e.sock", over))
		b = server_at(&w, "e0");
	if (b.nd)
		accept_fails(b.nd, &w);
	backend_free(&b);
	where_free(&w);
}

/* ---- 5: the queues ---- */

/* Frames seq 0... of len bytes until send() refuses (or max): how many it took. */
static unsigned fill_tx(struct netdev *nd, size_t len, unsigned max)
{
	uint8_t f[FRAME_MAX];
	unsigned n = 0;

	for (pattern(f, len, 0); n < max && nic_send(nd, f, len); pattern(f, len, ++n))
		;
	return n;
}

/* The peer reads frames seq 0 to n - 1, each byte for byte; how many came whole. */
static unsigned drain_peer(int fd, size_t len, unsigned n)
{
	uint8_t want[FRAME_MAX], got[FRAME_MAX];
	unsigned i;

	for (i = 0; i < n; i++) {
		pattern(want, len, i);
		if (peer_recv(fd, got, deadline()) != len || memcmp(got, want, len))
			break;
	}
	return i;
}

/*
 * A peer that reads nothing: send() refuses once the transmit queue holds
 * bound frames (some more sit in the socket, or half written); then the
 * peer reads every one, in order, and send() takes frames again.
 */
static bool tx_bound(struct netdev *nd, int fd, size_t len, unsigned bound)
{
	unsigned more = slack(fd, len), n = fill_tx(nd, len, bound + more);

	CHECK(n >= bound && n < bound + more);
	CHECK_EQ(drain_peer(fd, len, n), n);
	REQUIRE(to_peer(nd, fd, len, 7));
	CHECK_EQ(nd->tx_dropped, 0);
	return true;
}

static void test_tx_bound(const char *dir, enum over over)
{
	struct where w;
	int lfd = -1, fd = -1;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "t.sock", over))
		b = client_of(&w, "t0", &lfd, &fd);
	if (b.nd && fd >= 0 &&
	    tx_bound(b.nd, fd, 1000, QUEUE_FRAMES))
		tx_bound(b.nd, fd, FRAME_MAX, QUEUE_BYTES / FRAME_MAX);
	backend_free(&b);
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/* rx_dropped has no event of its own: spun on, bounded as the rest. */
static bool dropped_reaches(struct netdev *nd, uint64_t want)
{
	int64_t until = deadline();

	while (__atomic_load_n(&nd->rx_dropped, __ATOMIC_RELAXED) < want && now_ms() < until)
		sched_yield();
	return __atomic_load_n(&nd->rx_dropped, __ATOMIC_RELAXED) == want;
}

/*
 * A guest that takes nothing: of n frames from the peer the receive queue
 * keeps the first bound, drops the rest and counts them; the NIC then
 * takes the kept ones in order.
 */
static bool rx_bound(struct netdev *nd, int fd, size_t len, unsigned n, unsigned bound)
{
	uint8_t f[FRAME_MAX], got[FRAME_MAX];
	uint64_t before = nd->rx_dropped;

	for (unsigned i = 0; i < n; i++) {
		pattern(f, len, i);
		REQUIRE(peer_send(fd, f, len));
	}
	REQUIRE(dropped_reaches(nd, before + n - bound));
	for (unsigned i = 0; i < bound; i++) {
		pattern(f, len, i);
		REQUIRE(nic_recv(nd, got, deadline()) == len);
		REQUIRE(!memcmp(got, f, len));
	}
	CHECK_EQ(nd->ops->peek(nd), 0);
	REQUIRE(to_nic(nd, fd, len, 9));
	CHECK_EQ(nd->rx_dropped, before + n - bound);
	return true;
}

static void test_rx_bound(const char *dir, enum over over)
{
	struct where w;
	int lfd = -1, fd = -1;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "q.sock", over))
		b = client_of(&w, "q0", &lfd, &fd);
	if (b.nd && fd >= 0 &&
	    rx_bound(b.nd, fd, 60, QUEUE_FRAMES + 76, QUEUE_FRAMES))
		rx_bound(b.nd, fd, FRAME_MAX, QUEUE_BYTES / FRAME_MAX + 2,
			 QUEUE_BYTES / FRAME_MAX);
	backend_free(&b);
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/*
 * Over TCP both ends' buffers fixed (which turns their autotuning off):
 * a send buffer grown after the queue filled would take the whole queue
 * before the link goes down, and leave the case nothing to drop.
 */
static void fixed_buffers(int fd)
{
	int end = other_end(fd), size = 256 * 1024;

	if (end < 0)
		return;
	CHECK(setsockopt(end, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)) == 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) == 0);
}

/*
 * The peer stops writing and then reading (shutdown, then close): every
 * frame the socket took reaches it whole, and the rest, queued or half
 * written, are dropped and counted, to the frame.  One line says the link
 * is down.  The peer reads only once the back end has said so: a peer
 * reading as fast as the back end writes (TCP's buffers are large) could
 * otherwise take the whole queue before the end of its stream is seen.
 */
static bool lost_with_queue(struct netdev *nd, int fd)
{
	char line[512];
	unsigned n, got;
	int lines;

	fixed_buffers(fd);
	n = fill_tx(nd, 1514, QUEUE_FRAMES + slack(fd, 1514));

	REQUIRE(n >= QUEUE_FRAMES);
	capture_begin();
	shutdown(fd, SHUT_WR);
	CHECK(capture_wait_for("the link stays down", WAIT_MS / 1000));
	got = drain_peer(fd, 1514, n);
	CHECK(peer_sees_eof(fd));
	lines = capture_end(line, sizeof(line));
	CHECK_EQ(lines, 1);
	CHECK(strstr(line, "the peer closed the connection; the link stays down"));
	CHECK(got < n);
	CHECK_EQ(__atomic_load_n(&nd->tx_dropped, __ATOMIC_RELAXED), n - got);
	return true;
}

static void test_lost_with_queue(const char *dir, enum over over)
{
	struct where w;
	int lfd = -1, fd = -1;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "l.sock", over))
		b = client_of(&w, "l0", &lfd, &fd);
	if (b.nd && fd >= 0)
		lost_with_queue(b.nd, fd);
	backend_free(&b);
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/* Whether the back end says it is idle (tx_fd) now, without waiting. */
static bool idle_said(struct netdev *nd)
{
	struct pollfd pfd = { nd->tx_fd, POLLIN, 0 };

	return poll(&pfd, 1, 0) == 1;
}

/*
 * tx_busy: busy while frames send() took wait for a peer that reads
 * nothing, and tx_fd stays quiet; once the peer has read them all, tx_fd
 * says so (once) and the back end is idle.  The peer gone with frames
 * queued also ends the business: they are dropped.
 */
static bool tx_busy(struct netdev *nd, int fd)
{
	unsigned n = fill_tx(nd, 1000, QUEUE_FRAMES + slack(fd, 1000));
	eventfd_t cnt;

	REQUIRE(n >= QUEUE_FRAMES);
	CHECK(nd->ops->tx_busy(nd));
	CHECK(!idle_said(nd));
	CHECK_EQ(drain_peer(fd, 1000, n), n);
	CHECK(wait_fd(nd->tx_fd, POLLIN, deadline()));
	CHECK_EQ(eventfd_read(nd->tx_fd, &cnt), 0);
	CHECK(!nd->ops->tx_busy(nd));
	/* Asked while idle: nothing to say later. */
	REQUIRE(to_peer(nd, fd, 60, 1));
	CHECK(!idle_said(nd));

	fixed_buffers(fd);
	n = fill_tx(nd, 1514, QUEUE_FRAMES + slack(fd, 1514));
	REQUIRE(n >= QUEUE_FRAMES);
	CHECK(nd->ops->tx_busy(nd));
	shutdown(fd, SHUT_WR);
	CHECK(wait_fd(nd->tx_fd, POLLIN, deadline()));
	CHECK(!nd->ops->tx_busy(nd));
	return true;
}

static void test_tx_busy(const char *dir, enum over over)
{
	char line[512];
	struct where w;
	int lfd = -1, fd = -1;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "b.sock", over))
		b = client_of(&w, "b0", &lfd, &fd);
	capture_begin();	/* the link's down line, said by the second case */
	if (b.nd && fd >= 0)
		tx_busy(b.nd, fd);
	capture_end(line, sizeof(line));
	backend_free(&b);
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/*
 * free() with frames everywhere: the transmit queue full and one half
 * written, frames for the guest queued, half a frame read.  The ASan
 * build finds what leaks.
 */
static bool in_flight(struct netdev *nd, int fd)
{
	uint8_t f[4 + 1514];

	REQUIRE(to_nic(nd, fd, 60, 1));
	REQUIRE(fill_tx(nd, 1514, QUEUE_FRAMES + slack(fd, 1514)) >= QUEUE_FRAMES);
	for (unsigned i = 0; i < 100; i++) {
		pattern(f, 1514, i);
		REQUIRE(peer_send(fd, f, 1514));
	}
	put32(f, 1514);
	REQUIRE(peer_write(fd, f, 4 + 700));
	REQUIRE(consumed(fd));
	CHECK(nd->ops->peek(nd) == 1514);
	return true;
}

static void test_free_in_flight(const char *dir, enum over over)
{
	struct where w;
	int lfd = -1, fd = -1;
	struct backend b = { NULL, NULL };

	if (where_new(&w, dir, "i.sock", over))
		b = client_of(&w, "i0", &lfd, &fd);
	if (b.nd && fd >= 0)
		in_flight(b.nd, fd);
	backend_free(&b);
	if (fd >= 0)
		CHECK(peer_sees_eof(fd));
	close_fd(fd);
	close_fd(lfd);
	where_free(&w);
}

/* ---- 6: options ---- */

/* arg refused, before /dev/kvm, with exactly one line holding says. */
static void refused(const char *arg, const char *says)
{
	opts_refused(&netdev_stream_spec, sizeof(struct netdev_stream_cfg), &netdev_stream_defaults, netdev_stream_check, arg, says);
}

static const struct {
	const char *arg, *says;
} bad_args[] = {
	{ "id=s0", "addr.type= is missing" },
	{ "id=s0,addr.type=vsock", "addr.type=vsock" },
	{ "id=s0,addr.type=inet", "addr.type=inet needs addr.host= and addr.port=" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1", "addr.type=inet needs addr.host= and "
	  "addr.port=" },
	{ "id=s0,addr.type=inet,addr.port=5555", "addr.type=inet needs addr.host= and addr.port=" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=0",
	  "addr.port=0: not a port number (1 to 65535)" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=65536",
	  "addr.port=65536: not a port number (1 to 65535)" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=http", "addr.port=http: not a port" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=-1", "addr.port=-1: not a port" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=80x", "addr.port=80x: not a port" },
	{ "id=s0,addr.type=inet,addr.host=localhost,addr.port=5555",
	  "addr.host=localhost: not a numeric IPv4 or IPv6 address (brisk looks no names up)" },
	{ "id=s0,addr.type=inet,addr.host=[::1],addr.port=5555",
	  "addr.host=[::1]: not a numeric IPv4 or IPv6 address" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.256,addr.port=5555",
	  "addr.host=127.0.0.256: not a numeric" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=5555,addr.path=/tmp/x",
	  "addr.path= and addr.abstract= are addr.type=unix's" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=5555,addr.abstract=on",
	  "addr.path= and addr.abstract= are addr.type=unix's" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=5555,addr.str=3",
	  "addr.str= is addr.type=fd's (addr.type=inet takes addr.host= and addr.port=)" },
	{ "id=s0,addr.type=inet,addr.host=127.0.0.1,addr.port=5555,server=on,reconnect=1",
	  "reconnect= is server=off's" },
	{ "id=s0,addr.type=fd,addr.str=0,addr.host=127.0.0.1", "addr.host= and addr.port=" },
	{ "id=s0,addr.type=unix", "addr.type=unix needs addr.path=" },
	{ "id=s0,addr.type=unix,addr.path=/tmp/x,addr.port=1", "addr.host= and addr.port=" },
	{ "id=s0,addr.type=unix,addr.path=/tmp/x,addr.str=3", "addr.str= is addr.type=fd's" },
	{ "id=s0,addr.type=unix,addr.path=/tmp/x,server=on,reconnect=1",
	  "reconnect= is server=off's" },
	{ "id=s0,addr.type=unix,addr.path=/tmp/x,reconnect=3601", "reconnect=3601" },
	{ "id=s0,addr.type=unix,addr.path=/tmp/x,server=maybe", "server=maybe" },
	{ "id=s0,addr.type=fd", "addr.type=fd needs addr.str=" },
	{ "id=s0,addr.type=fd,addr.str=x3", "addr.str=x3: not a file descriptor's number" },
	{ "id=s0,addr.type=fd,addr.str=99999999999", "not a file descriptor's number" },
	{ "id=s0,addr.type=fd,addr.str=0,addr.path=/tmp/x", "addr.path= and addr.abstract=" },
	{ "id=s0,addr.type=fd,addr.str=0,reconnect=5", "reconnect= needs addr.type=unix or inet" },
	{ "id=s0,addr.type=unix,addr.path=/tmp/x,bogus=1", "bogus" },
};

/* Paths one byte too long for sun_path, plain and abstract. */
static void refused_long(void)
{
	char arg[512], path[109];

	memset(path, 'a', 108);
	path[0] = '/';
	path[108] = '\0';
	snprintf(arg, sizeof(arg), "id=s0,addr.type=unix,addr.path=%s", path);
	refused(arg, "longer than 107 bytes (a unix socket's sun_path)");
	/* An abstract name has sun_path's first byte (a NUL) before it. */
	snprintf(arg, sizeof(arg), "id=s0,addr.type=unix,addr.abstract=on,addr.path=%s", path);
	refused(arg, "longer than 107 bytes");
}

/* What addr.str= may not be: closed, no socket, no stream, the wrong side. */
static void refused_fds(const char *dir)
{
	char arg[128], p[128];
	/* High: capturing stderr takes the lowest free numbers. */
	int closed = fcntl(0, F_DUPFD_CLOEXEC, 500), file = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int dgram = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int lfd = peer_listen(sock_path(dir, "x.sock", p, sizeof(p)), false);
	int con = peer_connect(p, false);

	close(closed);
	snprintf(arg, sizeof(arg), "id=s0,addr.type=fd,addr.str=%d", closed);
	refused(arg, strerror(EBADF));
	snprintf(arg, sizeof(arg), "id=s0,addr.type=fd,addr.str=%d", file);
	refused(arg, "not a stream socket");
	snprintf(arg, sizeof(arg), "id=s0,addr.type=fd,addr.str=%d", dgram);
	refused(arg, "not a stream socket");
	snprintf(arg, sizeof(arg), "id=s0,addr.type=fd,addr.str=%d", lfd);
	refused(arg, "a listening socket, for server=on");
	snprintf(arg, sizeof(arg), "id=s0,server=on,addr.type=fd,addr.str=%d", con);
	refused(arg, "not listening: server=on takes a listening socket");
	snprintf(arg, sizeof(arg), "id=s0,server=on,addr.type=unix,addr.path=%s", dir);
	refused(arg, "exists and is not a socket");
	close_fd(file);
	close_fd(dgram);
	close_fd(con);
	close_fd(lfd);
	unlink(p);
}

/* arg passes the check, and making the back end fails with one line holding says. */
static void new_refused(const char *arg, const char *says)
{
	struct netdev_stream_cfg *cfg = stream_cfg(arg);
	struct netdev *nd = NULL;
	char line[512];
	int lines = 0;

	CHECK(cfg);
	if (cfg) {
		capture_begin();
		nd = netdev_stream_new(cfg);
		lines = capture_end(line, sizeof(line));
		CHECK(!nd);
		CHECK_EQ(lines, 1);
		CHECK(strstr(line, says));
		if (!strstr(line, says))
			printf("# %s: %s", arg, line);
	}
	netdev_free(nd);
	cfg_free(cfg);
	check_case("refused when made: -netdev stream,%s", arg);
}

static void refused_at_new(const char *dir)
{
	char arg[256], p[128];
	int lfd = peer_listen(sock_path(dir, "busy.sock", p, sizeof(p)), false);

	snprintf(arg, sizeof(arg), "id=s0,addr.type=unix,addr.path=%s/none.sock", dir);
	new_refused(arg, "cannot connect: No such file or directory (reconnect= would keep "
		    "trying)");
	snprintf(arg, sizeof(arg), "id=s0,server=on,addr.type=unix,addr.path=%s", p);
	new_refused(arg, "another server listens there");
	snprintf(arg, sizeof(arg), "id=s0,server=on,addr.type=unix,addr.path=%s/no/dir.sock",
		 dir);
	new_refused(arg, "cannot listen there: No such file or directory");
	close_fd(lfd);
	unlink(p);
}

/* The same over TCP: nobody listening at a port, and a port taken. */
static void refused_at_new_tcp(const char *dir)
{
	char arg[256], want[256];
	struct where w;
	int lfd = -1;

	if (!where_new(&w, dir, "", OVER_TCP))
		return;
	snprintf(arg, sizeof(arg), "id=s0,%s", w.opts);
	snprintf(want, sizeof(want), "%s: cannot connect: Connection refused (reconnect= "
		 "would keep trying)", strchr(w.opts, ',') + 1);
	new_refused(arg, want);
	snprintf(arg, sizeof(arg), "id=s0,server=on,%s", w.opts);
	if ((lfd = w_listen(&w)) >= 0)
		new_refused(arg, "cannot listen there: Address already in use");
	close_fd(lfd);
	where_free(&w);
}

/* A stale socket file (its server gone) is replaced, as QEMU does. */
static void test_stale(const char *dir)
{
	char p[128];
	int lfd = peer_listen(sock_path(dir, "stale.sock", p, sizeof(p)), false), fd = -1;
	struct backend b;

	close_fd(lfd);
	b = backend_new("id=st0,server=on,addr.type=unix,addr.path=%s", p);
	if (b.nd && (fd = peer_connect(p, false)) >= 0)
		to_nic(b.nd, fd, 60, 1);
	backend_free(&b);
	close_fd(fd);
}

/* -netdev stream,help names every key. */
static void test_help(void)
{
	char buf[4096];
	FILE *f = tmpfile();
	size_t n;

	CHECK(f);
	if (!f)
		return;
	opts_print_help(f, &netdev_stream_spec);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	for (const char *k = "id=\0server=\0addr.type=\0addr.path=\0addr.abstract=\0"
			     "addr.tight=\0addr.str=\0addr.host=\0addr.port=\0reconnect=\0";
	     *k; k += strlen(k) + 1)
		CHECK(strstr(buf, k));
}

/*
 * IPv6 at ::1, each side: the back end listens at a port the test holds
 * (as where_new() holds 127.0.0.1's) and the test connects; then the
 * test listens there and the back end connects.  Without ::1 (no IPv6
 * here) it skips, saying so.
 */
static void test_ipv6(void)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	socklen_t len = sizeof(a);
	int on = 1, r = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), fd = -1;
	struct backend b = { NULL, NULL };

	if (r < 0 || setsockopt(r, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0 ||
	    bind(r, (struct sockaddr *)&a, len) < 0) {
		check_skip_case("no IPv6 loopback here (%s)", strerror(errno));
		close_fd(r);
		return;
	}
	CHECK(!getsockname(r, (struct sockaddr *)&a, &len));
	b = backend_new("id=v6s,server=on,addr.type=inet,addr.host=::1,addr.port=%u",
			ntohs(a.sin6_port));
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0 && !connect(fd, (struct sockaddr *)&a, len) &&
	      !fcntl(fd, F_SETFL, O_NONBLOCK));
	if (b.nd && fd >= 0)
		CHECK(to_nic(b.nd, fd, 60, 1) && to_peer(b.nd, fd, 1514, 2));
	backend_free(&b);
	close_fd(fd);
	fd = -1;
	CHECK(!listen(r, 4) && !fcntl(r, F_SETFL, O_NONBLOCK));
	b = backend_new("id=v6,addr.type=inet,addr.host=::1,addr.port=%u", ntohs(a.sin6_port));
	if (b.nd && (fd = peer_accept(r)) >= 0)
		CHECK(to_nic(b.nd, fd, 60, 3) && to_peer(b.nd, fd, 1514, 4));
	backend_free(&b);
	close_fd(fd);
	close_fd(r);
}

/* ---- passt (tests/net/passt.sh) ---- */

static uint32_t ip4(const char *s)
{
	unsigned a, b, c, d;

	return sscanf(s, "%u.%u.%u.%u", &a, &b, &c, &d) == 4 ?
	       (uint32_t)a << 24 | b << 16 | c << 8 | d : 0;
}

/* DISCOVER gets an OFFER of the namespace's address, with its gateway and mask. */
static bool passt_dhcp(struct netdev *nd, uint32_t addr, uint32_t gw)
{
	const uint32_t xid = 0x5a17b00f;
	uint8_t f[FRAME_MAX];
	struct dhcp d = { 0 };
	int64_t until = deadline();
	size_t len;

	REQUIRE(nic_send(nd, f, dhcp_frame(f, guest_mac, DHCP_DISCOVER, xid, 0, 0)));
	while ((len = nic_recv(nd, f, until)) &&
	       !(parse_dhcp(f, len, guest_mac, xid, &d) && d.type == DHCP_OFFER))
		;
	REQUIRE(len);
	CHECK_EQ(d.yiaddr, addr);
	CHECK_EQ(d.router, gw);
	CHECK_EQ(d.mask, 0xffffff00);
	return true;
}

/* gw's reply to the guest at addr, to its MAC in both layers. */
static bool is_gw_reply(const uint8_t *f, size_t len, uint32_t addr, uint32_t gw)
{
	struct arp a;

	return parse_arp(f, len, &a) && a.op == 2 && a.spa == gw && a.tpa == addr &&
	       !memcmp(a.tha, guest_mac, 6) && !memcmp(f, guest_mac, 6);
}

/* Who has the gateway?  passt answers for it. */
static bool passt_arp(struct netdev *nd, uint32_t addr, uint32_t gw)
{
	static const uint8_t zero_mac[6];
	uint8_t f[FRAME_MAX];
	int64_t until = deadline();
	size_t len;

	REQUIRE(nic_send(nd, f, arp_frame(f, 1, bcast, guest_mac, addr, zero_mac, gw)));
	while ((len = nic_recv(nd, f, until)) && !is_gw_reply(f, len, addr, gw))
		;
	CHECK(len);
	return true;
}

static int passt_main(const char *path, const char *addr, const char *gw)
{
	struct backend b = backend_new("id=passt,server=off,addr.type=unix,addr.path=%s", path);
	uint32_t a = ip4(addr), g = ip4(gw);

	CHECK(a && g);
	if (b.nd) {
		RUN(passt_dhcp(b.nd, a, g));
		RUN(passt_arp(b.nd, a, g));
	}
	backend_free(&b);
	return check_done();
}

/* The test's directory, and the sockets its own listeners left there. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[512];

	while (d && (e = readdir(d))) {
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlink(p);
	}
	if (d)
		closedir(d);
	CHECK(rmdir(dir) == 0);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/brisk-stream-XXXXXX";

	if (argc == 5 && !strcmp(argv[1], "--passt"))
		return passt_main(argv[2], argv[3], argv[4]);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(test_client(dir, OVER_UNIX));
	RUN(test_client(dir, OVER_TCP));
	RUN(test_server(dir, OVER_UNIX));
	RUN(test_server(dir, OVER_TCP));
	RUN(test_abstract());
	RUN(test_fd_client());
	RUN(test_fd_server(dir));
	RUN(test_pieces(dir, OVER_UNIX));
	RUN(test_pieces(dir, OVER_TCP));
	RUN(test_bad_lengths_server(dir, OVER_UNIX));
	RUN(test_bad_lengths_server(dir, OVER_TCP));
	RUN(test_bad_length_client(dir, OVER_UNIX));
	RUN(test_bad_length_client(dir, OVER_TCP));
	RUN(test_one_peer(dir, OVER_UNIX));
	RUN(test_one_peer(dir, OVER_TCP));
	RUN(test_reconnect(dir, OVER_UNIX));
	RUN(test_reconnect(dir, OVER_TCP));
	RUN(test_no_peer(dir, OVER_UNIX));
	RUN(test_no_peer(dir, OVER_TCP));
	RUN(test_accept_fails(dir, OVER_UNIX));
	RUN(test_accept_fails(dir, OVER_TCP));
	RUN(test_tx_bound(dir, OVER_UNIX));
	RUN(test_tx_bound(dir, OVER_TCP));
	RUN(test_rx_bound(dir, OVER_UNIX));
	RUN(test_rx_bound(dir, OVER_TCP));
	RUN(test_lost_with_queue(dir, OVER_UNIX));
	RUN(test_lost_with_queue(dir, OVER_TCP));
	RUN(test_tx_busy(dir, OVER_UNIX));
	RUN(test_tx_busy(dir, OVER_TCP));
	RUN(test_free_in_flight(dir, OVER_UNIX));
	RUN(test_free_in_flight(dir, OVER_TCP));
	for (unsigned i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++)
		refused(bad_args[i].arg, bad_args[i].says);
	refused_long();
	refused_fds(dir);
	refused_at_new(dir);
	refused_at_new_tcp(dir);
	RUN(test_ipv6());
	RUN(test_stale(dir));
	RUN(test_help());
	remove_dir(dir);
	return check_done();
}
