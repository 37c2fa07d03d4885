// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -netdev user (net/slirp.c) driven as a NIC drives it: frames in through
 * send(), out through rx_fd, peek() and take().  Every frame is built and
 * read byte for byte from the RFCs (ARP 826, IPv4 791, UDP 768, DHCP
 * 2131/2132, TCP 793 and checksums 1071 in tests/lib/net-frames.h; and
 * IPv6's neighbour discovery 4861/4443 here) and QEMU's documented
 * defaults, never from brisk's own constants.  Nothing waits on time: a
 * case waits on rx_fd or a socket, bounded by WAIT_MS only to turn a hang
 * into a failure, and slirp's timer fires because the back end's clock
 * is moved on (case 7), not because time passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/net.h"
#include "util/iothread.h"
#include "util/opts.h"

#include "capture.h"
#include "check.h"
#include "net-frames.h"
#include "opts-refused.h"

/* The config opts_parse_new makes of arg, check included; NULL after one line. */
static struct netdev_user_cfg *user_cfg(const char *arg, int (*check)(void *))
{
	return opts_parse_new(&netdev_user_spec, sizeof(struct netdev_user_cfg),
			      &netdev_user_defaults, arg, check);
}

static void cfg_free(struct netdev_user_cfg *cfg)
{
	if (cfg) {
		opts_free(&netdev_user_spec, cfg);
		free(cfg);
	}
}

#ifdef CONFIG_SLIRP

#define WAIT_MS 20000

/* A case run in more than one setting, reported with the setting's name. */
#define RUN_AT(where, ...) do {						\
	__VA_ARGS__;							\
	check_case("%s, %s", #__VA_ARGS__, where);			\
} while (0)

#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
/* QEMU's user network (qemu-options.hx, -netdev user): 10.0.2.0/24, the
 * host at .2, DNS at .3, the first DHCP address .15. */
#define GUEST IP(10, 0, 2, 15)
#define HOST IP(10, 0, 2, 2)
#define DNS IP(10, 0, 2, 3)

/* QEMU's default NIC address. */
static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
/* libslirp's "emulated hosts use the MAC addr 52:55:IP:IP:IP:IP" (src/slirp.c). */
static const uint8_t host_mac[6] = { 0x52, 0x55, 10, 0, 2, 2 };
static const uint8_t dns_mac[6] = { 0x52, 0x55, 10, 0, 2, 3 };
static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t zero_mac[6];

/*
 * The back end's clock, which case 7 moves on.  test-slirp is linked with
 * -Wl,--wrap=clock_gettime (tests/net/meson.build), so brisk's own calls
 * (net/slirp.c's clock, and libslirp's through its clock_get_ns callback)
 * come here and read CLOCK_MONOTONIC clock_skip_s seconds ahead; the
 * skip only ever grows, so the clock stays monotonic.  Nothing outside
 * brisk's objects is wrapped.
 */
int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);
static int64_t clock_skip_s;

int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	int r = __real_clock_gettime(id, ts);

	if (!r && id == CLOCK_MONOTONIC)
		ts->tv_sec += __atomic_load_n(&clock_skip_s, __ATOMIC_RELAXED);
	return r;
}

/* The test's own waits: on the real clock, whatever the back end's says. */
static int64_t now_ms(void)
{
	struct timespec ts;

	__real_clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- frames ---- */

/* A segment from the guest (10.0.2.15's MAC) to slirp's host MAC. */
static size_t tcp_frame(uint8_t *f, const struct seg *s)
{
	return tcp_frame_eth(f, host_mac, guest_mac, s);
}

/* ---- the NIC's side ---- */

/* In two pieces, as a NIC's descriptor chain may hold it. */
static bool send_frame(struct netdev *nd, const uint8_t *f, size_t len)
{
	struct iovec iov[2] = { { (void *)f, len / 3 }, { (void *)(f + len / 3), len - len / 3 } };

	return nd->ops->send(nd, iov, 2, len);
}

/* The next frame for the guest, taken into f in two pieces; 0 once past deadline. */
static size_t next_frame(struct netdev *nd, uint8_t *f, int64_t deadline)
{
	for (;;) {
		size_t len = nd->ops->peek(nd);
		struct pollfd pfd = { nd->rx_fd, POLLIN, 0 };
		int64_t left = deadline - now_ms();
		uint64_t n;

		if (len) {
			struct iovec iov[2] = { { f, 7 }, { f + 7, FRAME_MAX - 7 } };

			CHECK(len >= ETH && len <= FRAME_MAX);
			nd->ops->take(nd, len <= FRAME_MAX ? iov : NULL, 2);
			return len;
		}
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return 0;
		if (read(nd->rx_fd, &n, sizeof(n)) < 0)
			CHECK(errno == EAGAIN);
	}
}

/* Answers slirp's ARP request for the guest's address, if f is one. */
static void answer_arp(struct netdev *nd, const uint8_t *f, size_t len)
{
	uint8_t r[ETH + ARPL];
	struct arp a;

	if (parse_arp(f, len, &a) && a.op == 1 && a.tpa == GUEST)
		CHECK(send_frame(nd, r, arp_frame(r, 2, a.sha, guest_mac, GUEST, a.sha, a.spa)));
}

typedef bool (*frame_pred)(const uint8_t *f, size_t len, void *arg);

/* Frames until one pred takes (ARP requests for the guest answered on the
 * way): its length, or 0 after WAIT_MS. */
static size_t wait_for(struct netdev *nd, uint8_t *f, frame_pred pred, void *arg)
{
	int64_t deadline = now_ms() + WAIT_MS;
	size_t len;

	while ((len = next_frame(nd, f, deadline))) {
		if (pred(f, len, arg))
			return len;
		answer_arp(nd, f, len);
	}
	return 0;
}

/*
 * The loop the cases give the back end, as a NIC gives brisk's main loop:
 * a thread the test runs.  NULL: the back end makes a thread of its own.
 */
static struct iothread *nic_loop;

static struct netdev *user_new(const char *arg, struct netdev_user_cfg **cfg)
{
	*cfg = user_cfg(arg, netdev_user_check);
	return *cfg ? netdev_user_new(*cfg, nic_loop) : NULL;
}

static void user_free(struct netdev *nd, struct netdev_user_cfg *cfg)
{
	netdev_free(nd);
	cfg_free(cfg);
}

/* ---- 1: DHCP ---- */

struct dhcp_wait {
	uint32_t xid;
	unsigned type;
	struct dhcp got;
};

static bool is_dhcp(const uint8_t *f, size_t len, void *arg)
{
	struct dhcp_wait *w = arg;

	return parse_dhcp(f, len, guest_mac, w->xid, &w->got) && w->got.type == w->type;
}

static void check_lease(const struct dhcp *got, const struct dhcp *want)
{
	CHECK_EQ(got->yiaddr, want->yiaddr);
	CHECK_EQ(got->server, want->server);
	CHECK_EQ(got->router, want->router);
	CHECK_EQ(got->dns, want->dns);
	CHECK_EQ(got->mask, want->mask);
	CHECK(!strcmp(got->hostname, want->hostname));
}

/* DISCOVER, OFFER, REQUEST, ACK (RFC 2131 §3.1). */
static bool dhcp_exchange(struct netdev *nd, const struct dhcp *want)
{
	uint8_t f[FRAME_MAX];
	struct dhcp_wait w = { .xid = 0x5a17b00f, .type = DHCP_OFFER };

	REQUIRE(send_frame(nd, f, dhcp_frame(f, guest_mac, DHCP_DISCOVER, w.xid, 0, 0)));
	REQUIRE(wait_for(nd, f, is_dhcp, &w));
	check_lease(&w.got, want);
	REQUIRE(send_frame(nd, f, dhcp_frame(f, guest_mac, DHCP_REQUEST, w.xid, w.got.yiaddr,
					     w.got.server)));
	w.type = DHCP_ACK;
	REQUIRE(wait_for(nd, f, is_dhcp, &w));
	check_lease(&w.got, want);
	return true;
}

static const struct dhcp qemu_lease = {
	.yiaddr = GUEST, .server = HOST, .router = HOST, .dns = DNS,
	.mask = IP(255, 255, 255, 0),
};

static void test_dhcp(const char *arg, const struct dhcp *want)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd = user_new(arg, &cfg);

	CHECK(nd);
	if (nd)
		dhcp_exchange(nd, want);
	user_free(nd, cfg);
}

/* ---- 2: ARP ---- */

static bool is_arp_reply(const uint8_t *f, size_t len, void *arg)
{
	struct arp a;

	return parse_arp(f, len, &a) && a.op == 2 && a.spa == *(uint32_t *)arg;
}

/* Who has ip?  mac, says slirp: to the guest, from mac, in both layers. */
static bool arp_who_has(struct netdev *nd, uint32_t ip, const uint8_t *mac)
{
	uint8_t f[FRAME_MAX];
	size_t len;
	struct arp a = { 0 };

	REQUIRE(send_frame(nd, f, arp_frame(f, 1, bcast, guest_mac, GUEST, zero_mac, ip)));
	REQUIRE((len = wait_for(nd, f, is_arp_reply, &ip)));
	REQUIRE(parse_arp(f, len, &a));
	CHECK(!memcmp(f, guest_mac, 6));
	CHECK(!memcmp(f + 6, mac, 6));
	CHECK(!memcmp(a.sha, mac, 6));
	CHECK(!memcmp(a.tha, guest_mac, 6));
	CHECK_EQ(a.tpa, GUEST);
	return true;
}

static void test_arp(void)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd = user_new("id=arp", &cfg);

	CHECK(nd);
	if (nd) {
		arp_who_has(nd, HOST, host_mac);
		arp_who_has(nd, DNS, dns_mac);
	}
	user_free(nd, cfg);
}

/*
 * On a loop the NIC gives, slirp runs only when that loop turns, and here
 * the test turns it: a frame sent waits (the back end busy with it, so a
 * NIC holds the guest's next ones), one turn answers it and says on tx_fd
 * that the back end is idle, and a round that fed slirp comes back at
 * once for what the frames unblocked.  (slirp's own timeout, a second,
 * may bring a round of its own into the first turn if the test stalls
 * that long; that round takes the come-back, so it is looked for only
 * after a first turn of one round.)
 */
static void test_turned_loop(void)
{
	struct iothread *loop = iothread_new("turned");
	struct netdev_user_cfg *cfg = user_cfg("id=turned", netdev_user_check);
	struct netdev *nd = cfg && loop ? netdev_user_new(cfg, loop) : NULL;
	uint8_t f[FRAME_MAX];
	uint32_t ip = HOST;
	size_t len;
	uint64_t n;
	int r;

	CHECK(nd);
	if (nd) {
		CHECK(send_frame(nd, f, arp_frame(f, 1, bcast, guest_mac, GUEST, zero_mac, HOST)));
		CHECK_EQ(nd->ops->peek(nd), 0);
		CHECK(nd->ops->tx_busy(nd));
		/* send() woke the loop already: no waiting. */
		r = iothread_poll(loop, 0);
		CHECK(r >= 1);
		len = next_frame(nd, f, 0);
		CHECK(len && is_arp_reply(f, len, &ip));
		CHECK(read(nd->tx_fd, &n, sizeof(n)) == sizeof(n));
		CHECK(!nd->ops->tx_busy(nd));
		if (r == 1)
			CHECK(iothread_poll(loop, 0) >= 1);
	}
	netdev_free(nd);
	cfg_free(cfg);
	iothread_free(loop);
}

/*
 * tx_busy: slirp's loop takes what send() queued, and once it has
 * taken it all says so on tx_fd, if it was asked while busy.  Whether it
 * is still busy right after a send is the two threads' race, so either
 * answer may come; a yes must be followed by tx_fd, and then a no.
 */
static void test_tx_busy(void)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd = user_new("id=busy", &cfg);
	uint8_t f[FRAME_MAX];
	unsigned busy = 0;

	CHECK(nd);
	for (unsigned i = 0; nd && i < 64; i++) {
		struct pollfd pfd = { nd->tx_fd, POLLIN, 0 };
		uint64_t n;

		CHECK(send_frame(nd, f, arp_frame(f, 1, bcast, guest_mac, GUEST, zero_mac, DNS)));
		if (!nd->ops->tx_busy(nd))
			continue;
		busy++;
		CHECK_EQ(poll(&pfd, 1, WAIT_MS), 1);
		CHECK(read(nd->tx_fd, &n, sizeof(n)) == sizeof(n));
		CHECK(!nd->ops->tx_busy(nd));
	}
	printf("# busy right after %u of 64 sends\n", busy);
	user_free(nd, cfg);
}

/* ---- 3: hostfwd ---- */

/* A listening, non-blocking socket on 127.0.0.1, on a port the kernel picked. */
static int listener(unsigned *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		CHECK(!"a listening socket on 127.0.0.1");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_to(unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 &&
	    errno != EINPROGRESS) {
		close(fd);
		fd = -1;
	}
	CHECK(fd >= 0);
	return fd;
}

/* Exactly n bytes from fd, waited for; false after WAIT_MS. */
static bool read_all(int fd, char *buf, size_t n)
{
	int64_t deadline = now_ms() + WAIT_MS;
	size_t got = 0;

	while (got < n) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		int64_t left = deadline - now_ms();
		ssize_t r;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return false;
		r = read(fd, buf + got, n - got);
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

struct tcp_wait {
	uint32_t dst;
	unsigned dport, flags;
	bool data;		/* only a segment that carries data */
	struct seg got;
};

static bool is_seg(const uint8_t *f, size_t len, void *arg)
{
	struct tcp_wait *w = arg;

	return parse_tcp(f, len, &w->got) && w->got.dst == w->dst &&
	       w->got.dport == w->dport && (w->data ? w->got.len > 0 :
					    w->got.flags == w->flags);
}

#define GUEST_ISN 0x1000u

/* The guest's side of a forwarded connection: SYN in, SYN-ACK out, data both ways. */
static bool forwarded(struct netdev *nd, int hfd)
{
	static const char up[] = "from the guest\n", down[] = "from the host, hello\n";
	uint8_t f[FRAME_MAX];
	char buf[64];
	struct tcp_wait w = { .dst = GUEST, .dport = 22, .flags = TCP_SYN };
	struct seg s;

	REQUIRE(wait_for(nd, f, is_seg, &w));
	s = (struct seg){ GUEST, w.got.src, 22, w.got.sport, GUEST_ISN, w.got.seq + 1,
			  TCP_SYN | TCP_ACK, NULL, 0 };
	REQUIRE(send_frame(nd, f, tcp_frame(f, &s)));
	s.seq++, s.flags = TCP_ACK | TCP_PSH, s.data = (const uint8_t *)up;
	s.len = sizeof(up) - 1;
	REQUIRE(send_frame(nd, f, tcp_frame(f, &s)));
	REQUIRE(read_all(hfd, buf, sizeof(up) - 1));
	CHECK(!memcmp(buf, up, sizeof(up) - 1));
	REQUIRE(send(hfd, down, sizeof(down) - 1, MSG_NOSIGNAL) == sizeof(down) - 1);
	w.data = true;
	REQUIRE(wait_for(nd, f, is_seg, &w));
	CHECK_EQ(w.got.len, sizeof(down) - 1);
	CHECK(!memcmp(w.got.data, down, sizeof(down) - 1));
	CHECK_EQ(w.got.seq, s.ack);
	CHECK_EQ(w.got.ack, GUEST_ISN + 1 + sizeof(up) - 1);
	return true;
}

static unsigned free_port(void)
{
	unsigned port = 0;
	int fd = listener(&port);

	if (fd >= 0)
		close(fd);
	return port;
}

/* A back end made of arg, whose lease is QEMU's; a connection through its forward at port. */
static void through_fwd(const char *arg, unsigned port)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd = user_new(arg, &cfg);
	int hfd = -1;

	CHECK(nd);
	if (nd && dhcp_exchange(nd, &qemu_lease) && (hfd = connect_to(port)) >= 0)
		forwarded(nd, hfd);
	if (hfd >= 0)
		close(hfd);
	user_free(nd, cfg);
}

static void test_hostfwd(void)
{
	char arg[128];
	unsigned port = free_port();

	snprintf(arg, sizeof(arg), "id=fwd,hostfwd=tcp:127.0.0.1:%u-:22", port);
	through_fwd(arg, port);
}

/*
 * More sockets than the back end's first poll set holds (16): twenty
 * forwards, each a listening socket slirp asks to be watched, and a
 * connection through the last one.  The ports are all held while they
 * are picked, so no two are the same.
 */
#define MANY_FWDS 20

static void test_many_fwds(void)
{
	char arg[64 + MANY_FWDS * 40];
	int lfd[MANY_FWDS];
	unsigned port = 0;
	size_t at = (size_t)snprintf(arg, sizeof(arg), "id=many");

	for (unsigned i = 0; i < MANY_FWDS; i++) {
		lfd[i] = listener(&port);
		CHECK(lfd[i] >= 0);
		at += (size_t)snprintf(arg + at, sizeof(arg) - at, ",hostfwd=tcp:127.0.0.1:%u-:22",
				       port);
	}
	for (unsigned i = 0; i < MANY_FWDS; i++)
		if (lfd[i] >= 0)
			close(lfd[i]);
	CHECK(at < sizeof(arg));
	through_fwd(arg, port);
}

/* ---- 4: restrict= ---- */

#define GUEST_PORT 40000

struct barrier_wait {
	unsigned lport;
	bool syn_ack;		/* a SYN-ACK from 10.0.2.2:lport went by: */
	struct seg seg;		/* that one */
};

static bool is_barrier(const uint8_t *f, size_t len, void *arg)
{
	struct barrier_wait *b = arg;
	uint32_t ip = HOST;
	struct seg s;

	if (parse_tcp(f, len, &s) && s.src == HOST && s.sport == b->lport &&
	    (s.flags & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK)) {
		b->syn_ack = true;
		b->seg = s;
	}
	return is_arp_reply(f, len, &ip);
}

/* A guest SYN to 10.0.2.2:lport, then an ARP round trip that shows slirp
 * has handled the SYN (it takes the guest's frames in order). */
static bool syn_to_host(struct netdev *nd, struct barrier_wait *b)
{
	uint8_t f[FRAME_MAX];
	struct seg s = { GUEST, HOST, GUEST_PORT, b->lport, GUEST_ISN, 0, TCP_SYN, NULL, 0 };

	REQUIRE(send_frame(nd, f, tcp_frame(f, &s)));
	REQUIRE(send_frame(nd, f, arp_frame(f, 1, bcast, guest_mac, GUEST, zero_mac, HOST)));
	REQUIRE(wait_for(nd, f, is_barrier, b));
	return true;
}

/*
 * restrict=on: slirp refuses the guest's SYN to the host itself, with
 * RFC 793's answer to a SYN nobody takes (RST|ACK, its ack the SYN's
 * sequence number + 1), sent while it handles the SYN; restrict=off
 * connects instead and sends no RST.  The guest's ARP request first
 * gives slirp its MAC, so the RST waits on no ARP of slirp's own.  Once
 * slirp has answered the SYN, accept() is the verdict on the host's
 * side: a loopback handshake completes inside connect(), so a connect
 * slirp made for it would be in the backlog.  (No SYN-ACK is looked for:
 * slirp sends one only once its non-blocking connect completes, which
 * nothing here would wait for.)
 */
static bool syn_refused(struct netdev *nd, int lfd, unsigned lport)
{
	uint8_t f[FRAME_MAX];
	struct seg s = { GUEST, HOST, GUEST_PORT, lport, GUEST_ISN, 0, TCP_SYN, NULL, 0 };
	struct tcp_wait w = { GUEST, GUEST_PORT, TCP_RST | TCP_ACK, false, { 0 } };

	REQUIRE(arp_who_has(nd, HOST, host_mac));
	REQUIRE(send_frame(nd, f, tcp_frame(f, &s)));
	REQUIRE(wait_for(nd, f, is_seg, &w));
	CHECK_EQ(w.got.src, HOST);
	CHECK_EQ(w.got.sport, lport);
	CHECK_EQ(w.got.ack, GUEST_ISN + 1);
	CHECK(accept(lfd, NULL, NULL) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
	return true;
}

static void test_restrict_on(void)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd = user_new("id=r1,restrict=on", &cfg);
	unsigned lport = 0;
	int lfd = listener(&lport);

	CHECK(nd);
	if (nd && lfd >= 0)
		syn_refused(nd, lfd, lport);
	if (lfd >= 0)
		close(lfd);
	user_free(nd, cfg);
}

static void test_restrict_off(void)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd = user_new("id=r0,restrict=off", &cfg);
	struct barrier_wait b = { 0 };
	int lfd = listener(&b.lport), afd = -1;
	uint8_t f[FRAME_MAX];
	struct tcp_wait w = { GUEST, GUEST_PORT, TCP_SYN | TCP_ACK, false, { 0 } };
	struct pollfd pfd = { lfd, POLLIN, 0 };

	CHECK(nd);
	if (nd && lfd >= 0 && syn_to_host(nd, &b) &&
	    (b.syn_ack || wait_for(nd, f, is_seg, &w))) {
		struct seg *s = b.syn_ack ? &b.seg : &w.got;

		CHECK_EQ(s->src, HOST);
		CHECK_EQ(s->sport, b.lport);
		CHECK_EQ(s->ack, GUEST_ISN + 1);
		CHECK(poll(&pfd, 1, WAIT_MS) == 1);
		CHECK((afd = accept(lfd, NULL, NULL)) >= 0);
	}
	if (afd >= 0)
		close(afd);
	if (lfd >= 0)
		close(lfd);
	user_free(nd, cfg);
}

/* ---- 5: options ---- */

static const struct {
	const char *arg, *says;
} bad_args[] = {
	{ "net=10.0.2.0/24", "id=" },
	{ "id=0n", "id=0n" },
	{ "id=n0,smb=/tmp", "'smb'" },
	{ "id=n0,restrict=maybe", "restrict=maybe" },
	{ "id=n0,net=10.0.2.0/33", "net=10.0.2.0/33" },
	{ "id=n0,net=10.0.2.0/3", "net=10.0.2.0/3" },
	{ "id=n0,net=10.0.2.0/", "net=10.0.2.0/" },
	{ "id=n0,net=10.0.2.x/24", "'10.0.2.x'" },
	{ "id=n0,net=10.0.2.0/255.0.255.0", "'255.0.255.0'" },
	{ "id=n0,host=10.0.3.2", "host=10.0.3.2" },
	{ "id=n0,host=10.0.2.256", "host=10.0.2.256" },
	{ "id=n0,host=10.0.2.3", "dns= and host=" },
	{ "id=n0,restrict=on,dns=8.8.8.8", "dns=8.8.8.8" },
	{ "id=n0,dhcpstart=10.0.2.2", "dhcpstart=10.0.2.2" },
	{ "id=n0,dhcpstart=192.168.1.15", "dhcpstart=192.168.1.15" },
	{ "id=n0,hostfwd=tcp:x:22-:22", "hostfwd=tcp:x:22-:22: bad host address 'x'" },
	{ "id=n0,hostfwd=icmp::22-:22", "'icmp'" },
	{ "id=n0,hostfwd=tcp::0-:22", "bad host port '0'" },
	{ "id=n0,hostfwd=tcp::65536-:22", "bad host port '65536'" },
	{ "id=n0,hostfwd=tcp::22-:0", "bad guest port '0'" },
	{ "id=n0,hostfwd=tcp::22-:x", "bad guest port 'x'" },
	{ "id=n0,hostfwd=tcp::22-10.0.2.x:22", "'10.0.2.x'" },
	{ "id=n0,hostfwd=tcp::22-192.168.0.5:22", "'192.168.0.5'" },
	{ "id=n0,hostfwd=tcp::22:22", "hostfwd=tcp::22:22" },
	{ "id=n0,hostfwd=22", "hostfwd=22" },
	{ "id=n0,hostfwd=tcp::2222-:22,hostfwd=tcp::-:23", "hostfwd=tcp::-:23" },
	{ "id=n0,hostfwd=", "hostfwd=" },
	{ "id=n0,ipv4=off,ipv6=off", "ipv6=off" },
	{ "id=n0,ipv4=off,net=10.0.2.0/24", "ipv4=off" },
	{ "id=n0,ipv4=off,hostfwd=tcp::22-:22", "hostfwd=" },
	{ "id=n0,ipv6=off,ipv6-net=fec0::/64", "ipv6=off" },
	{ "id=n0,ipv6-net=fec0::/127", "ipv6-net=fec0::/127" },
	{ "id=n0,ipv6-net=fec0::x", "'fec0::x'" },
	{ "id=n0,ipv6-host=fec1::2", "ipv6-host=fec1::2" },
	{ "id=n0,dnssearch=a..b", "dnssearch=a..b" },
	{ "id=n0,tftp=/nonexistent/brisk", "tftp=/nonexistent/brisk" },
};

struct good {
	const char *arg, *net, *host, *dns, *dhcp, *net6, *host6;
};

static const struct good good_args[] = {
	{ "id=n0", "10.0.2.0/24", "10.0.2.2", "10.0.2.3", "10.0.2.15", "fec0::/64", "fec0::2" },
	/* Under a wider mask QEMU's net/slirp.c still puts them at x.x.2.2... */
	{ "id=n0,net=10.0.0.0/255.255.0.0", "10.0.0.0/16", "10.0.2.2", "10.0.2.3",
	  "10.0.2.15", "fec0::/64", "fec0::2" },
	/* ...and a net= without a mask takes its class's (172.16/12 QEMU's own). */
	{ "id=n0,net=172.16.0.0", "172.16.0.0/12", "172.16.2.2", "172.16.2.3",
	  "172.16.2.15", "fec0::/64", "fec0::2" },
	{ "id=n0,net=192.168.76.77/24,dhcpstart=192.168.76.9", "192.168.76.0/24",
	  "192.168.76.2", "192.168.76.3", "192.168.76.9", "fec0::/64", "fec0::2" },
	/* As QEMU, a DNS relay outside the network unless restrict=on. */
	{ "id=n0,dns=8.8.8.8,ipv6-net=fd00:1::/48", "10.0.2.0/24", "10.0.2.2", "8.8.8.8",
	  "10.0.2.15", "fd00:1::/48", "fd00:1::2" },
	{ "id=n0,ipv6=off,restrict=yes,hostfwd=tcp::2222-:22,hostfwd=udp:127.0.0.1:5353-"
	  "10.0.2.20:53,hostfwd=::0x8ae-:23", "10.0.2.0/24", "10.0.2.2", "10.0.2.3",
	  "10.0.2.15", NULL, NULL },
	{ "id=n0,ipv4=off", NULL, NULL, NULL, NULL, "fec0::/64", "fec0::2" },
};

static bool same(const char *a, const char *b)
{
	return a && b ? !strcmp(a, b) : a == b;
}

static void test_good_option(const struct good *g)
{
	struct netdev_user_cfg *c = user_cfg(g->arg, netdev_user_check);

	CHECK(c);
	if (!c)
		return;
	CHECK(same(c->net, g->net));
	CHECK(same(c->host, g->host));
	CHECK(same(c->dns, g->dns));
	CHECK(same(c->dhcpstart, g->dhcp));
	CHECK(same(c->ipv6_net, g->net6));
	CHECK(same(c->ipv6_host, g->host6));
	cfg_free(c);
}

/* -netdev user,help names every key and its QEMU default. */
static void test_help(void)
{
	char buf[8192];
	FILE *f = tmpfile();
	size_t n;

	CHECK(f);
	if (!f)
		return;
	opts_print_help(f, &netdev_user_spec);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	for (const char *k = "id=\0net=\0host=\0dns=\0dhcpstart=\0restrict=\0hostname=\0"
			     "domainname=\0ipv6=\0hostfwd=\0ipv4=\0"; *k; k += strlen(k) + 1)
		CHECK(strstr(buf, k));
	CHECK(strstr(buf, "10.0.2.0/24"));
}

/* A hostfwd= port someone holds: NULL, one line naming the rule and why. */
static void test_busy_port(void)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd;
	char arg[128], rule[64], line[512];
	unsigned port;
	int lfd = listener(&port), lines;

	snprintf(rule, sizeof(rule), "hostfwd=tcp:127.0.0.1:%u-:22", port);
	snprintf(arg, sizeof(arg), "id=busy,%s", rule);
	cfg = user_cfg(arg, netdev_user_check);
	CHECK(cfg && lfd >= 0);
	if (cfg && lfd >= 0) {
		capture_begin();
		nd = netdev_user_new(cfg, nic_loop);
		lines = capture_end(line, sizeof(line));
		CHECK(!nd);
		netdev_free(nd);
		CHECK_EQ(lines, 1);
		CHECK(strstr(line, rule) && strstr(line, strerror(EADDRINUSE)));
	}
	if (lfd >= 0)
		close(lfd);
	cfg_free(cfg);
}

/* ---- 6: the queues ---- */

/* n ARP requests for 10.0.2.2; a refused send (the queue full) is retried. */
static bool arp_flood(struct netdev *nd, unsigned n)
{
	int64_t deadline = now_ms() + WAIT_MS;
	uint8_t f[ETH + ARPL];
	size_t len = arp_frame(f, 1, bcast, guest_mac, GUEST, zero_mac, HOST);

	for (unsigned i = 0; i < n; i++)
		while (!send_frame(nd, f, len)) {
			if (now_ms() > deadline)
				return false;
			sched_yield();
		}
	return true;
}

/* rx_dropped has no event of its own: spin on it, bounded as the rest. */
static bool dropped_reaches(struct netdev *nd, uint64_t want)
{
	int64_t deadline = now_ms() + WAIT_MS;

	while (__atomic_load_n(&nd->rx_dropped, __ATOMIC_RELAXED) < want &&
	       now_ms() < deadline)
		sched_yield();
	return __atomic_load_n(&nd->rx_dropped, __ATOMIC_RELAXED) == want;
}

/*
 * A guest that reads nothing: slirp answers all 1100 requests, the receive
 * queue keeps 1024 frames and drops the rest.  1024 is brisk's documented
 * bound (docs/networking.md: two bounded queues, 1024 frames each way),
 * not QEMU's: its net queue holds 10000 packets (nq_maxlen).
 */
static bool receive_bound(struct netdev *nd)
{
	uint8_t f[FRAME_MAX];
	int64_t deadline = now_ms() + WAIT_MS;
	unsigned replies = 0;
	struct arp a;
	size_t len;

	REQUIRE(arp_flood(nd, 1100));
	REQUIRE(dropped_reaches(nd, 1100 - 1024));
	for (unsigned i = 0; i < 10; i++)
		nd->ops->take(nd, NULL, 0);	/* dropped by the NIC: no room */
	while (nd->ops->peek(nd) && (len = next_frame(nd, f, deadline)))
		replies += parse_arp(f, len, &a) && a.op == 2 && a.spa == HOST;
	CHECK_EQ(replies, 1024 - 10);
	REQUIRE(arp_who_has(nd, DNS, dns_mac));
	CHECK_EQ(nd->rx_dropped, 1100 - 1024);
	CHECK_EQ(nd->ops->peek(nd), 0);
	return true;
}

static void test_receive_bound(void)
{
	struct netdev_user_cfg *cfg;
	/* ipv6=off: no router advertisements in the count. */
	struct netdev *nd = user_new("id=q,ipv6=off", &cfg);

	CHECK(nd);
	if (nd)
		receive_bound(nd);
	user_free(nd, cfg);
}

/* Whether a frame for the guest waits (none taken), waited for. */
static bool queued(struct netdev *nd)
{
	struct pollfd pfd = { nd->rx_fd, POLLIN, 0 };
	int64_t deadline = now_ms() + WAIT_MS;

	while (!nd->ops->peek(nd)) {
		int64_t left = deadline - now_ms();
		uint64_t n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return false;
		if (read(nd->rx_fd, &n, sizeof(n)) < 0)
			CHECK(errno == EAGAIN);
	}
	return true;
}

/* free() with frames for the guest queued and the guest's still going in:
 * the ASan build finds what leaks. */
static void test_free_queued(void)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd = user_new("id=q2", &cfg);
	uint8_t f[ETH + ARPL];
	size_t len = arp_frame(f, 1, bcast, guest_mac, GUEST, zero_mac, HOST);
	unsigned sent = 0;

	CHECK(nd);
	if (nd && arp_flood(nd, 100) && queued(nd)) {
		for (unsigned i = 0; i < 2000; i++)
			sent += send_frame(nd, f, len);
		CHECK(sent > 0);
	}
	user_free(nd, cfg);
}

/* ---- 7: IPv6's router advertisements, and slirp's timer ---- */

/*
 * libslirp 4.7's one timer (src/ip6_icmp.c, ra_timer) sends a Router
 * Advertisement every 200 to 600 s (its NDP_MinRtrAdvInterval to
 * NDP_MaxRtrAdvInterval), the first that long after slirp_new().  A
 * Router Solicitation gets one at once, without the timer.  So case 7
 * first solicits one, to read it, then moves the back end's clock past
 * 600 s (clock_skip_s) and sends nothing: slirp asks to be woken at least
 * once a second (libslirp's slirp_pollfds_fill), the back end's timerfd
 * brings that round, the timer is due in it, and an unsolicited one
 * arrives.  The wait is slirp's second, not the timer's 600 s; 20 s only
 * turns a hang into a failure.
 *
 * The addresses are libslirp's (src/ip6.h): the router is fe80::2, at the
 * MAC in6_compute_ethaddr() makes of it, 52:56:00:00:00:02; the prefix
 * is QEMU's ipv6-net= default, fec0::/64.
 */
enum { IP6H = 40, ICMP6_RS = 133, ICMP6_RA = 134 };
#define NDP_MAX_INTERVAL_S 600

static const uint8_t router_ll[16] = { 0xfe, 0x80, [15] = 2 };
static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
static const uint8_t all_routers[16] = { 0xff, 0x02, [15] = 2 };
static const uint8_t prefix6[16] = { 0xfe, 0xc0 };
static const uint8_t router_mac[6] = { 0x52, 0x56, 0, 0, 0, 2 };

/*
 * RFC 4861 section 4.1's Router Solicitation, with the guest's MAC as its
 * source link-layer option, from the guest's link-local address (RFC
 * 4291 appendix A: fe80::5054:ff:fe12:3456 of 52:54:00:12:34:56) to
 * all-routers (ff02::2, at 33:33:00:00:00:02 by RFC 2464 section 7), hop
 * limit 255 (section 6.1.1).
 */
static size_t rs_frame(uint8_t *f)
{
	static const uint8_t all_routers_mac[6] = { 0x33, 0x33, 0, 0, 0, 2 };
	uint8_t *ip = f + ETH, *m = ip + IP6H;
	const size_t n = 8 + 8;

	put_eth(f, all_routers_mac, guest_mac, 0x86dd);
	memset(ip, 0, IP6H + n);
	ip[0] = 6 << 4;
	put16(ip + 4, (unsigned)n);
	ip[6] = 58;				/* ICMPv6 */
	ip[7] = 255;
	ip[8] = 0xfe, ip[9] = 0x80;
	memcpy(ip + 16, guest_mac, 3);		/* the EUI-64, U/L bit flipped */
	ip[16] ^= 2;
	ip[19] = 0xff, ip[20] = 0xfe;
	memcpy(ip + 21, guest_mac + 3, 3);
	memcpy(ip + 24, all_routers, 16);
	m[0] = ICMP6_RS;
	m[8] = 1;				/* source link-layer address, */
	m[9] = 1;				/* 8 bytes */
	memcpy(m + 10, guest_mac, 6);
	put16(m + 2, csum(sum16(pseudo6(ip + 8, ip + 24, 58, n), m, n)));
	return ETH + IP6H + n;
}

struct ra {
	unsigned prefix_len, prefix_flags;
	uint8_t prefix[16];
	bool has_prefix, has_mac;
};

/* An RA's options (RFC 4861 section 4.6): the prefix, the router's MAC. */
static bool ra_options(const uint8_t *o, size_t n, const uint8_t *eth_src, struct ra *ra)
{
	while (n >= 8) {
		size_t len = o[1] * 8u;

		if (!len || len > n)
			return false;
		if (o[0] == 1 && len == 8)
			ra->has_mac = !memcmp(o + 2, eth_src, 6);
		if (o[0] == 3 && len == 32) {
			ra->has_prefix = true;
			ra->prefix_len = o[2];
			ra->prefix_flags = o[3];
			memcpy(ra->prefix, o + 16, 16);
		}
		o += len;
		n -= len;
	}
	return true;
}

/*
 * A Router Advertisement (RFC 4861 section 4.2) from fe80::2 to all
 * nodes, at their Ethernet addresses, hop limit 255, its ICMPv6 checksum
 * checked (RFC 4443 section 2.3); its options read into arg.
 */
static bool is_ra(const uint8_t *f, size_t len, void *arg)
{
	static const uint8_t all_nodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	const uint8_t *ip = f + ETH, *m = ip + IP6H;
	size_t n;

	if (len < ETH + IP6H + 16 || get16(f + 12) != 0x86dd || ip[0] >> 4 != 6 ||
	    ip[6] != 58 || m[0] != ICMP6_RA)
		return false;
	n = get16(ip + 4);
	REQUIRE(n >= 16 && ETH + IP6H + n <= len);
	CHECK_EQ(csum(sum16(pseudo6(ip + 8, ip + 24, 58, n), m, n)), 0);
	CHECK(!memcmp(f, all_nodes_mac, 6));
	CHECK(!memcmp(f + 6, router_mac, 6));
	CHECK_EQ(ip[7], 255);
	CHECK(!memcmp(ip + 8, router_ll, 16));
	CHECK(!memcmp(ip + 24, all_nodes, 16));
	CHECK_EQ(m[1], 0);
	*(struct ra *)arg = (struct ra){ 0 };
	CHECK(ra_options(m + 16, n - 16, f + 6, arg));
	return true;
}

/* The prefix, on-link and autonomous (L and A), and the router's MAC. */
static void check_ra(const struct ra *ra)
{
	CHECK(ra->has_prefix);
	CHECK_EQ(ra->prefix_len, 64);
	CHECK_EQ(ra->prefix_flags & 0xc0, 0xc0);
	CHECK(!memcmp(ra->prefix, prefix6, 16));
	CHECK(ra->has_mac);
}

static bool router_adverts(struct netdev *nd)
{
	uint8_t f[FRAME_MAX];
	struct ra ra;

	REQUIRE(send_frame(nd, f, rs_frame(f)));
	REQUIRE(wait_for(nd, f, is_ra, &ra));
	check_ra(&ra);
	/* The timer's: due once the clock is past its longest interval. */
	__atomic_fetch_add(&clock_skip_s, NDP_MAX_INTERVAL_S + 1, __ATOMIC_RELAXED);
	REQUIRE(wait_for(nd, f, is_ra, &ra));
	check_ra(&ra);
	return true;
}

static void test_router_adverts(void)
{
	struct netdev_user_cfg *cfg;
	struct netdev *nd = user_new("id=ra", &cfg);	/* ipv6=on, the default */

	CHECK(nd);
	if (nd)
		router_adverts(nd);
	user_free(nd, cfg);
}

int main(void)
{
	static const struct dhcp lease76 = {
		.yiaddr = IP(192, 168, 76, 9), .server = IP(192, 168, 76, 2),
		.router = IP(192, 168, 76, 2), .dns = IP(192, 168, 76, 3),
		.mask = IP(255, 255, 255, 0), .hostname = "guest1",
	};

	int failed_before = failed;
	bool loop_ok;

	/* As brisk's main does: libslirp's send() to a host socket the peer
	 * closed raises SIGPIPE, on whichever thread runs slirp. */
	signal(SIGPIPE, SIG_IGN);

	RUN(test_turned_loop());
	loop_ok = failed == failed_before;
	/* Each frame case with slirp on a thread of its own, then on a NIC's loop. */
	for (int on_loop = 0; on_loop < 2; on_loop++) {
		const char *where = on_loop ? "on the NIC's loop" : "on its own thread";

		/* Else each would wait out WAIT_MS for a loop nobody turns. */
		if (on_loop && !loop_ok) {
			check_skip("the frame cases on the NIC's loop",
				   "slirp did not run on a loop it was given (above)");
			break;
		}

		nic_loop = on_loop ? iothread_new("nic") : NULL;
		if (on_loop && (!nic_loop || iothread_start(nic_loop) < 0)) {
			CHECK(!"a started loop for the NIC");
			iothread_free(nic_loop);
			nic_loop = NULL;
			break;
		}
		RUN_AT(where, test_dhcp("id=n0", &qemu_lease));
		RUN_AT(where, test_dhcp("id=n1,net=192.168.76.0/24,dhcpstart=192.168.76.9,"
					"hostname=guest1", &lease76));
		RUN_AT(where, test_arp());
		RUN_AT(where, test_tx_busy());
		RUN_AT(where, test_hostfwd());
		RUN_AT(where, test_many_fwds());
		RUN_AT(where, test_restrict_on());
		RUN_AT(where, test_restrict_off());
		RUN_AT(where, test_busy_port());
		RUN_AT(where, test_receive_bound());
		RUN_AT(where, test_free_queued());
		RUN_AT(where, test_router_adverts());
		iothread_free(nic_loop);
		nic_loop = NULL;
	}
	for (unsigned i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++)
		opts_refused(&netdev_user_spec, sizeof(struct netdev_user_cfg),
			     &netdev_user_defaults, netdev_user_check, bad_args[i].arg,
			     bad_args[i].says);
	for (unsigned i = 0; i < sizeof(good_args) / sizeof(good_args[0]); i++) {
		test_good_option(&good_args[i]);
		check_case("taken: -netdev user,%s", good_args[i].arg);
	}
	RUN(test_help());
	return check_done();
}

#else

#define NO_SLIRP "brisk: -netdev user: user networking is not in this build (brisk " \
		 "was built without libslirp)\n"

/* Without libslirp: the options still parse for help, and both the check
 * and the back end refuse with exactly one line. */
static void test_no_slirp(void)
{
	char line[512];
	struct netdev_user_cfg *cfg;
	struct netdev *nd;

	capture_begin();
	cfg = user_cfg("id=n0", netdev_user_check);
	CHECK_EQ(capture_end(line, sizeof(line)), 1);
	CHECK(!cfg && !strcmp(line, NO_SLIRP));
	cfg_free(cfg);
	cfg = user_cfg("id=n0", NULL);
	CHECK(cfg);
	capture_begin();
	nd = cfg ? netdev_user_new(cfg, NULL) : NULL;
	CHECK_EQ(capture_end(line, sizeof(line)), cfg ? 1 : 0);
	CHECK(!nd && (!cfg || !strcmp(line, NO_SLIRP)));
	cfg_free(cfg);
}

int main(void)
{
	RUN(test_no_slirp());
	check_skip("DHCP, ARP, hostfwd=, restrict=, options, queues, router advertisements",
		   "brisk was built without libslirp");
	return check_done();
}

#endif
