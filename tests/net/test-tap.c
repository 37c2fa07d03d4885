// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -netdev tap (net/tap.c) driven as a NIC drives it, on a real tap in a
 * network namespace the test makes for itself (so nothing it sends can
 * leave the machine), with the host's own stack as the peer: ARP, TCP
 * from the host to a hand-written guest, whose frames come as 64 KiB
 * segments with their checksums left to the guest once it takes the
 * offloads and as plain ones before, and a TCP segment from the guest
 * that the host takes only through the header's offload fields.  The
 * virtio-net header's layout is the kernel's (linux/virtio_net.h, VIRTIO
 * 1.2 5.1.6), never brisk's.  Without a namespace or /dev/net/tun every
 * case is a skip saying why.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "net/net.h"
#include "util/opts.h"

#include "capture.h"
#include "check.h"
#include "net-frames.h"
#include "opts-refused.h"

#define WAIT_MS 20000
#define HDR sizeof(struct virtio_net_hdr_v1)

#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (d))
#define HOST IP(10, 9, 0, 1)
#define GUEST IP(10, 9, 0, 2)
/* RFC 1122 4.2.2.6: a peer that sends no MSS option gets 536-byte segments. */
#define DEFAULT_MSS 536

static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
static uint8_t host_mac[6];
static char dir[] = "/tmp/brisk-tap-XXXXXX";

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct netdev_tap_cfg *tap_cfg(const char *arg)
{
	return opts_parse_new(&netdev_tap_spec, sizeof(struct netdev_tap_cfg),
			      &netdev_tap_defaults, arg, netdev_tap_check);
}

static void cfg_free(struct netdev_tap_cfg *cfg)
{
	if (cfg) {
		opts_free(&netdev_tap_spec, cfg);
		free(cfg);
	}
}

/* The back end arg describes; NULL (after brisk's one line) when refused. */
static struct netdev *tap_new(const char *arg)
{
	struct netdev_tap_cfg *cfg = tap_cfg(arg);
	struct netdev *nd = cfg ? netdev_tap_new(cfg) : NULL;

	cfg_free(cfg);
	return nd;
}

/* ---- the host's side of the interface ---- */

static bool if_exists(const char *name)
{
	return if_nametoindex(name) != 0;
}

/* name up, HOST/24 on it, its MAC into host_mac. */
static bool if_setup(const char *name)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
	bool ok;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(HOST);
	ok = s >= 0 && ioctl(s, SIOCSIFADDR, &ifr) == 0;
	sin->sin_addr.s_addr = htonl(0xffffff00);
	ok = ok && ioctl(s, SIOCSIFNETMASK, &ifr) == 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
	ifr.ifr_flags |= IFF_UP;
	ok = ok && ioctl(s, SIOCSIFFLAGS, &ifr) == 0 && ioctl(s, SIOCGIFHWADDR, &ifr) == 0;
	if (ok)
		memcpy(host_mac, ifr.ifr_hwaddr.sa_data, 6);
	if (s >= 0)
		close(s);
	CHECK(ok);
	return ok;
}

/* ---- the NIC's side ---- */

/* hdr and a frame, in three pieces as a chain may hold them. */
static bool send_hdr(struct netdev *nd, const struct virtio_net_hdr_v1 *h, const uint8_t *f,
		     size_t len)
{
	struct iovec iov[3] = { { (void *)h, HDR }, { (void *)f, len / 2 },
				{ (void *)(f + len / 2), len - len / 2 } };

	return nd->ops->send(nd, iov, 3, HDR + len);
}

static bool send_plain(struct netdev *nd, const uint8_t *f, size_t len)
{
	struct virtio_net_hdr_v1 h = { .gso_type = VIRTIO_NET_HDR_GSO_NONE };

	return send_hdr(nd, &h, f, len);
}

struct rx {
	struct virtio_net_hdr_v1 h;
	uint8_t f[FRAME_MAX + 1];	/* a byte to spare, as recv() wants (net.h) */
	size_t len;			/* of the frame, without the header */
};

/*
 * Completes a checksum the host left to the guest (VIRTIO 1.2 5.1.6.4.1:
 * the sum from csum_start to the end goes at csum_start + csum_offset),
 * as a guest that took GUEST_CSUM does before reading the frame.
 */
static void complete_csum(struct rx *r)
{
	size_t start = r->h.csum_start, at = start + r->h.csum_offset;

	if (!(r->h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM))
		return;
	if (at + 2 > r->len || start >= r->len) {
		CHECK(!"a checksum offset past the frame");
		return;
	}
	put16(r->f + at, csum(sum16(0, r->f + start, r->len - start)));
}

/* next_frame() by recv(), as the NIC reads with buffers for the longest frame. */
static bool use_recv;

/* The next frame for the guest, or false past the deadline. */
static bool next_frame(struct netdev *nd, struct rx *r, int64_t deadline)
{
	for (;;) {
		struct iovec iov[3] = { { &r->h, HDR }, { r->f, 7 }, { r->f + 7, FRAME_MAX + 1 - 7 } };
		size_t len = use_recv ? nd->ops->recv(nd, iov, 3, HDR + FRAME_MAX + 1) : nd->ops->peek(nd);
		struct pollfd pfd = { nd->rx_fd, POLLIN, 0 };
		int64_t left = deadline - now_ms();

		if (len) {
			CHECK(len >= HDR + ETH && len <= HDR + FRAME_MAX);
			if (!use_recv)
				nd->ops->take(nd, len <= HDR + FRAME_MAX ? iov : NULL, 3);
			r->len = len - HDR;
			complete_csum(r);
			return true;
		}
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return false;
	}
}

/* Answers the host's ARP request for the guest, if r is one. */
static void answer_arp(struct netdev *nd, const struct rx *r)
{
	uint8_t f[ETH + ARPL];
	struct arp a;

	if (parse_arp(r->f, r->len, &a) && a.op == 1 && a.tpa == GUEST)
		CHECK(send_plain(nd, f, arp_frame(f, 2, a.sha, guest_mac, GUEST, a.sha, a.spa)));
}

/* A TCP segment for the guest's port, ARP answered and IPv6's chatter passed over. */
static bool wait_tcp(struct netdev *nd, struct rx *r, unsigned port, unsigned flags,
		     struct seg *s)
{
	int64_t deadline = now_ms() + WAIT_MS;

	while (next_frame(nd, r, deadline)) {
		answer_arp(nd, r);
		if (parse_tcp(r->f, r->len, s) && s->dst == GUEST && s->dport == port &&
		    (s->flags & flags) == flags)
			return true;
	}
	CHECK(!"no such TCP segment for the guest in time");
	return false;
}

/* ---- cases ---- */

/* ifname= makes the tap, with the header where the kernel has it; free() removes it. */
static bool test_open(void)
{
	struct netdev *nd = tap_new("id=t0,ifname=bt0,script=no,downscript=no");

	REQUIRE(nd);
	CHECK(if_exists("bt0"));
	CHECK_EQ(nd->vnet_hdr_len, HDR);
	netdev_free(nd);
	/* A tap nobody made persistent goes with its last fd. */
	CHECK(!if_exists("bt0"));
	nd = tap_new("id=t0,ifname=bt0,script=no,downscript=no,vnet_hdr=off");
	REQUIRE(nd);
	CHECK_EQ(nd->vnet_hdr_len, 0);
	netdev_free(nd);
	return true;
}

static bool write_script(const char *path, const char *body)
{
	FILE *f = fopen(path, "w");

	REQUIRE(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	REQUIRE(chmod(path, 0755) == 0);
	return true;
}

/* What path holds ("" when absent), into buf. */
static const char *slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, size - 1, f) : 0;

	buf[n] = 0;
	if (f)
		fclose(f);
	return buf;
}

/* QEMU's script contract: the interface's name as the only argument, up at open, down at free. */
static bool test_scripts(void)
{
	char up[64], down[64], bad[64], log_up[64], log_down[64], arg[256], buf[64], line[512];
	struct netdev *nd;
	int lines;

	snprintf(up, sizeof(up), "%s/up", dir);
	snprintf(down, sizeof(down), "%s/down", dir);
	snprintf(bad, sizeof(bad), "%s/bad", dir);
	snprintf(log_up, sizeof(log_up), "%s/up.log", dir);
	snprintf(log_down, sizeof(log_down), "%s/down.log", dir);
	snprintf(arg, sizeof(arg), "echo \"$#:$1\" >>%s", log_up);
	REQUIRE(write_script(up, arg));
	snprintf(arg, sizeof(arg), "echo \"$#:$1\" >>%s", log_down);
	REQUIRE(write_script(down, arg));
	REQUIRE(write_script(bad, "exit 3"));

	snprintf(arg, sizeof(arg), "id=t0,ifname=bt1,script=%s,downscript=%s", up, down);
	nd = tap_new(arg);
	REQUIRE(nd);
	CHECK(!strcmp(slurp(log_up, buf, sizeof(buf)), "1:bt1\n"));
	CHECK(!strcmp(slurp(log_down, buf, sizeof(buf)), ""));
	netdev_free(nd);
	CHECK(!strcmp(slurp(log_down, buf, sizeof(buf)), "1:bt1\n"));

	/* An up script that fails: one line, no tap, and nothing to undo. */
	unlink(log_down);
	snprintf(arg, sizeof(arg), "id=t0,ifname=bt1,script=%s,downscript=%s", bad, down);
	capture_begin();
	nd = tap_new(arg);
	lines = capture_end(line, sizeof(line));
	CHECK(!nd);
	CHECK_EQ(lines, 1);
	CHECK(strstr(line, "bt1 exited with status 3"));
	CHECK(!if_exists("bt1"));
	CHECK(!strcmp(slurp(log_down, buf, sizeof(buf)), ""));
	netdev_free(nd);
	return true;
}

/* An ARP request from the guest, answered by the host's stack through the tap. */
static bool test_arp(void)
{
	struct netdev *nd = tap_new("id=t0,ifname=bt2,script=no,downscript=no");
	uint8_t f[ETH + ARPL];
	int64_t deadline = now_ms() + WAIT_MS;
	struct rx *r = malloc(sizeof(*r));
	bool answered = false;
	struct arp a;

	REQUIRE(nd && r && if_setup("bt2"));
	CHECK(send_plain(nd, f, arp_frame(f, 1, (const uint8_t[6]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
					     guest_mac, GUEST, (const uint8_t[6]){ 0 }, HOST)));
	while (!answered && next_frame(nd, r, deadline)) {
		if (!parse_arp(r->f, r->len, &a) || a.op != 2)
			continue;
		answered = true;
		CHECK_EQ(r->h.gso_type, VIRTIO_NET_HDR_GSO_NONE);
		CHECK(!memcmp(a.sha, host_mac, 6));
		CHECK_EQ(a.spa, HOST);
		CHECK(!memcmp(a.tha, guest_mac, 6));
		CHECK_EQ(a.tpa, GUEST);
	}
	CHECK(answered);
	free(r);
	netdev_free(nd);
	return true;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + i / 253);
}

/*
 * The host connects to the guest and writes; the first data segment is
 * looked at: with offloads the guest gets one segment of many MSS with
 * its checksum left to it (and the header saying so), without them
 * segments of one MSS, whole.
 */
static bool test_host_to_guest(bool offloads)
{
	struct netdev *nd = tap_new("id=t0,ifname=bt3,script=no,downscript=no");
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(5001),
				  .sin_addr.s_addr = htonl(GUEST) };
	static uint8_t data[40000];
	struct rx *r = malloc(sizeof(*r));
	uint8_t f[ETH + IPH + TCPH];
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct pollfd pfd = { s, POLLOUT, 0 };
	struct seg syn, got;

	REQUIRE(nd && r && s >= 0 && if_setup("bt3"));
	nd->ops->set_offload(nd, offloads ? NETDEV_OFFLOAD_CSUM | NETDEV_OFFLOAD_TSO4 : 0);
	REQUIRE(connect(s, (struct sockaddr *)&to, sizeof(to)) < 0 && errno == EINPROGRESS);
	REQUIRE(wait_tcp(nd, r, 5001, TCP_SYN, &syn));
	struct seg sa = { GUEST, HOST, 5001, syn.sport, 1000, syn.seq + 1, TCP_SYN | TCP_ACK,
			  NULL, 0 };
	REQUIRE(send_plain(nd, f, tcp_frame_eth(f, host_mac, guest_mac, &sa)));
	REQUIRE(poll(&pfd, 1, WAIT_MS) == 1);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = pattern(i);
	REQUIRE(send(s, data, sizeof(data), MSG_NOSIGNAL) > 0);
	do
		REQUIRE(wait_tcp(nd, r, 5001, TCP_ACK, &got));
	while (!got.len);
	CHECK_EQ(got.seq, syn.seq + 1);
	for (size_t i = 0; i < got.len; i++)
		if (got.data[i] != pattern(i)) {
			CHECK(!"the host's bytes, as it wrote them");
			break;
		}
	if (offloads) {
		CHECK_EQ(r->h.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
		CHECK_EQ(r->h.gso_size, DEFAULT_MSS);
		CHECK(got.len > DEFAULT_MSS);
		CHECK(r->h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM);
		CHECK_EQ(r->h.csum_start, ETH + IPH);
		CHECK_EQ(r->h.csum_offset, 16);	/* TCP's checksum field */
	} else {
		CHECK_EQ(r->h.gso_type, VIRTIO_NET_HDR_GSO_NONE);
		CHECK(!(r->h.flags & VIRTIO_NET_HDR_F_NEEDS_CSUM));
		CHECK(got.len <= DEFAULT_MSS);
	}
	close(s);
	free(r);
	netdev_free(nd);
	return true;
}

/*
 * The guest connects to the host and sends one segment of three MSS with
 * its checksum left to the host: the host's socket reads it whole only if
 * the header's GSO and checksum fields reached the kernel.  A header the
 * kernel refuses is a drop, never a crash.
 */
static bool test_guest_to_host(void)
{
	struct netdev *nd = tap_new("id=t0,ifname=bt4,script=no,downscript=no");
	struct sockaddr_in at = { .sin_family = AF_INET, .sin_port = htons(5002),
				  .sin_addr.s_addr = htonl(HOST) };
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), c = -1, one = 1;
	enum { MSS = 1000, LEN = 3 * MSS };
	static uint8_t f[ETH + IPH + TCPH + LEN], data[LEN], back[LEN];
	struct rx *r = malloc(sizeof(*r));
	struct seg sa;
	size_t n, got = 0;

	REQUIRE(nd && r && l >= 0 && if_setup("bt4"));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	REQUIRE(bind(l, (struct sockaddr *)&at, sizeof(at)) == 0 && listen(l, 1) == 0);
	struct seg syn = { GUEST, HOST, 40000, 5002, 5000, 0, TCP_SYN, NULL, 0 };
	REQUIRE(send_plain(nd, f, tcp_frame_eth(f, host_mac, guest_mac, &syn)));
	REQUIRE(wait_tcp(nd, r, 40000, TCP_SYN | TCP_ACK, &sa));
	struct seg ack = { GUEST, HOST, 40000, 5002, 5001, sa.seq + 1, TCP_ACK, NULL, 0 };
	REQUIRE(send_plain(nd, f, tcp_frame_eth(f, host_mac, guest_mac, &ack)));

	for (size_t i = 0; i < LEN; i++)
		data[i] = pattern(i + 11);
	ack.flags = TCP_ACK | TCP_PSH;
	ack.data = data;
	ack.len = LEN;
	n = tcp_frame_eth(f, host_mac, guest_mac, &ack);
	/* The TCP checksum left to the host: the field holds the pseudo-header's sum. */
	put16(f + ETH + IPH + 16, ~csum(pseudo(GUEST, HOST, 6, TCPH + LEN)) & 0xffff);
	struct virtio_net_hdr_v1 h = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .gso_type = VIRTIO_NET_HDR_GSO_TCPV4,
		.hdr_len = ETH + IPH + TCPH, .gso_size = MSS, .csum_start = ETH + IPH,
		.csum_offset = 16,
	};
	struct virtio_net_hdr_v1 bad = h;

	bad.gso_type = 0x55;	/* no GSO type of the kernel's */
	CHECK(!send_hdr(nd, &bad, f, n));
	CHECK(send_hdr(nd, &h, f, n));
	c = accept(l, NULL, NULL);
	REQUIRE(c >= 0);
	struct timeval tv = { WAIT_MS / 1000, 0 };

	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < LEN) {
		ssize_t k = recv(c, back + got, LEN - got, 0);

		if (k <= 0)
			break;
		got += (size_t)k;
	}
	CHECK_EQ(got, LEN);
	CHECK(!memcmp(back, data, LEN));
	close(c);
	close(l);
	free(r);
	netdev_free(nd);
	return true;
}

/* ---- frames read straight into the NIC's buffers (recv) ---- */

#define ETHERTYPE_TEST 0x88b5	/* IEEE 802's local experimental type: no stack answers it */

/* name's MTU the largest a tap takes (its frames 65535 bytes, Ethernet header on), and up. */
static bool if_up_mtu(const char *name)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = { 0 };
	bool ok;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_mtu = 65535 - ETH;
	ok = s >= 0 && ioctl(s, SIOCSIFMTU, &ifr) == 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
	ifr.ifr_flags |= IFF_UP;
	ok = ok && ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
	if (s >= 0)
		close(s);
	CHECK(ok);
	return ok;
}

static uint8_t test_byte(unsigned seed, size_t i)
{
	return (uint8_t)(seed * 29 + i * 13 + i / 241);
}

/* A frame of len bytes for the guest, sent by the host onto the interface (an AF_PACKET socket). */
static bool host_sends(int ps, unsigned ifindex, size_t len, unsigned seed)
{
	static uint8_t f[FRAME_MAX];
	struct sockaddr_ll at = { .sll_family = AF_PACKET, .sll_ifindex = (int)ifindex,
				  .sll_halen = 6 };

	memcpy(f, guest_mac, 6);
	memcpy(f + 6, (const uint8_t[6]){ 0x02, 0, 0, 0, 0, 1 }, 6);
	put16(f + 12, ETHERTYPE_TEST);
	for (size_t i = ETH; i < len; i++)
		f[i] = test_byte(seed, i);
	memcpy(at.sll_addr, guest_mac, 6);
	return sendto(ps, f, len, 0, (struct sockaddr *)&at, sizeof(at)) == (ssize_t)len;
}

/*
 * The next test frame recv() gives into iov (cap bytes in all, the
 * header's first); other frames (the host's own chatter) passed over.
 * Its length with the header; 0 past the deadline.
 */
static size_t recv_test_frame(struct netdev *nd, const struct iovec *iov, unsigned n, size_t cap,
			      const uint8_t *frame)
{
	int64_t deadline = now_ms() + WAIT_MS;

	for (;;) {
		size_t len = nd->ops->recv(nd, iov, n, cap);
		struct pollfd pfd = { nd->rx_fd, POLLIN, 0 };
		int64_t left = deadline - now_ms();

		if (len >= nd->vnet_hdr_len + ETH &&
		    get16(frame + 12) == ETHERTYPE_TEST)
			return len;
		if (len)
			continue;
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return 0;
	}
}

/*
 * Frames of every length up to the largest the host can send on a tap
 * (65535 bytes; longer ones are TCP segments, test_host_to_guest's) come whole, straight into the vector recv()
 * is given, the header (when the tap has it) in its own piece; a frame
 * peek() already read comes first; and a frame longer than the vector
 * is dropped and counted, never handed over cut short.
 */
static bool test_recv(bool vnet)
{
	static const size_t sizes[] = { ETH + 1, 60, 1000, 1514, 4096, 9000, 32768, 65535 };
	struct netdev *nd = tap_new(vnet ? "id=t0,ifname=bt7,script=no,downscript=no" :
				    "id=t0,ifname=bt7,script=no,downscript=no,vnet_hdr=off");
	int ps = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	struct rx *r = malloc(sizeof(*r));
	unsigned ifindex = if_nametoindex("bt7");
	size_t hl = vnet ? HDR : 0, len;

	if (!nd || !r || ps < 0 || !ifindex || !if_up_mtu("bt7")) {
		CHECK(!"a tap up with the largest MTU, and a socket to send on it");
		netdev_free(nd);
		return false;
	}
	CHECK_EQ(nd->vnet_hdr_len, hl);
	CHECK_EQ(nd->rx_max_len, hl + FRAME_MAX);
	struct iovec iov[3] = { { &r->h, hl }, { r->f, 7 }, { r->f + 7, FRAME_MAX + 1 - 7 } };
	struct iovec *v = vnet ? iov : iov + 1;
	unsigned nv = vnet ? 3 : 2;

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		REQUIRE(host_sends(ps, ifindex, sizes[i], i));
		memset(r, 0, sizeof(*r));
		len = recv_test_frame(nd, v, nv, hl + FRAME_MAX + 1, r->f);
		CHECK_EQ(len, hl + sizes[i]);
		CHECK(!vnet || r->h.gso_type == VIRTIO_NET_HDR_GSO_NONE);
		CHECK(!memcmp(r->f, guest_mac, 6));
		for (size_t k = ETH; k < sizes[i]; k++)
			if (r->f[k] != test_byte(i, k)) {
				CHECK(!"the host's frame, byte for byte");
				break;
			}
	}

	/* Peeked, then recv(): the peeked frame first, then the next. */
	REQUIRE(host_sends(ps, ifindex, 700, 20) && host_sends(ps, ifindex, 800, 21));
	int64_t deadline = now_ms() + WAIT_MS;

	while ((len = nd->ops->peek(nd)) != hl + 700 && now_ms() < deadline)
		if (len)
			nd->ops->take(nd, NULL, 0);	/* the host's chatter */
	CHECK_EQ(len, hl + 700);
	CHECK_EQ(recv_test_frame(nd, v, nv, hl + FRAME_MAX + 1, r->f), hl + 700);
	CHECK_EQ(r->f[ETH], test_byte(20, ETH));
	CHECK_EQ(recv_test_frame(nd, v, nv, hl + FRAME_MAX + 1, r->f), hl + 800);
	CHECK_EQ(r->f[ETH], test_byte(21, ETH));

	/*
	 * Longer than the vector, or as long (the read cannot tell the two
	 * apart): dropped and counted; the next, a byte shorter, whole.
	 */
	uint64_t dropped = __atomic_load_n(&nd->rx_dropped, __ATOMIC_RELAXED);
	struct iovec shortv[2] = { { &r->h, hl }, { r->f, 500 } };

	REQUIRE(host_sends(ps, ifindex, 1000, 30) && host_sends(ps, ifindex, 500, 31) &&
		host_sends(ps, ifindex, 499, 32));
	len = recv_test_frame(nd, vnet ? shortv : shortv + 1, vnet ? 2 : 1, hl + 500, r->f);
	CHECK_EQ(len, hl + 499);
	CHECK_EQ(r->f[498], test_byte(32, 498));
	CHECK_EQ(__atomic_load_n(&nd->rx_dropped, __ATOMIC_RELAXED), dropped + 2);
	close(ps);
	free(r);
	netdev_free(nd);
	return true;
}

/* The interface deleted under brisk: said once, rx_gone set, peek answers 0 from then on. */
static bool test_gone(void)
{
	struct netdev *nd = tap_new("id=t0,ifname=bt5,script=no,downscript=no");
	char line[512];
	int lines;

	REQUIRE(nd);
	REQUIRE(system("ip link delete bt5") == 0);
	capture_begin();
	CHECK_EQ(nd->ops->peek(nd), 0);
	CHECK_EQ(nd->ops->peek(nd), 0);
	lines = capture_end(line, sizeof(line));
	CHECK(nd->rx_gone);
	CHECK_EQ(lines, 1);
	CHECK(strstr(line, "bt5"));
	netdev_free(nd);
	return true;
}

static void refused(const char *arg, const char *says)
{
	opts_refused(&netdev_tap_spec, sizeof(struct netdev_tap_cfg), &netdev_tap_defaults, netdev_tap_check, arg, says);
}

static const struct {
	const char *arg, *says;
} bad_args[] = {
	{ "id=t0,vhost=on", "vhost=on: brisk has no vhost-net" },
	{ "id=t0,queues=2", "queues=2: brisk's virtio-net has one queue pair" },
	{ "id=t0,ifname=a/b,script=no,downscript=no", "ifname=a/b" },
	{ "id=t0,ifname=abcdefghijklmnop", "ifname=abcdefghijklmnop" },
	{ "id=t0,vnet_hdr=auto", "vnet_hdr=auto" },
	{ "id=t0,script=/nonexistent/up,downscript=no", "script=/nonexistent/up: No such file" },
	{ "id=t0,script=no,downscript=/nonexistent/down", "downscript=/nonexistent/down" },
	{ "id=t0,fd=x", "fd=x: not a file descriptor's number" },
	{ "id=t0,fd=999", "fd=999: Bad file descriptor" },
	{ "id=t0,fd=0,ifname=bt0", "fd= and ifname= together" },
	{ "id=t0,fd=0,script=no", "script= and downscript= are ifname='s" },
};

/* fd=: what an inherited fd must be, and an inherited tap adopted with its name. */
static bool test_fd(void)
{
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC), null = open("/dev/null", O_RDONLY);
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	char arg[64], line[512];
	struct netdev_tap_cfg *cfg;
	struct netdev *nd;

	REQUIRE(fd >= 0 && null >= 0);
	snprintf(arg, sizeof(arg), "id=t0,fd=%d", null);
	capture_begin();
	cfg = tap_cfg(arg);
	capture_end(line, sizeof(line));
	CHECK(!cfg && strstr(line, "not a tap"));
	close(null);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "bt6");
	REQUIRE(ioctl(fd, TUNSETIFF, &ifr) == 0);
	snprintf(arg, sizeof(arg), "id=t0,fd=%d,vnet_hdr=off", fd);
	capture_begin();
	cfg = tap_cfg(arg);
	capture_end(line, sizeof(line));
	CHECK(!cfg && strstr(line, "opened with IFF_VNET_HDR"));
	snprintf(arg, sizeof(arg), "id=t0,fd=%d", fd);
	nd = tap_new(arg);
	REQUIRE(nd);
	CHECK_EQ(nd->rx_fd, fd);
	CHECK_EQ(nd->vnet_hdr_len, HDR);
	CHECK(if_exists("bt6"));
	netdev_free(nd);	/* brisk's from adoption: closed, and the tap with it */
	CHECK(!if_exists("bt6"));
	return true;
}

int main(void)
{
	const char *why = NULL;

	if (access("/dev/net/tun", R_OK | W_OK) < 0)
		why = "no /dev/net/tun to open";
	else if (unshare(CLONE_NEWNET) < 0)
		why = "no network namespace of its own (unshare(CLONE_NEWNET) needs CAP_SYS_ADMIN)";
	else if (!mkdtemp(dir))
		why = "no temporary directory";
	if (why) {
		check_skip("-netdev tap on a tap of its own", why);
		return check_done();
	}
	RUN(test_open());
	RUN(test_scripts());
	RUN(test_arp());
	RUN(test_host_to_guest(false));
	RUN(test_host_to_guest(true));
	use_recv = true;
	RUN(test_host_to_guest(false));
	RUN(test_host_to_guest(true));
	use_recv = false;
	RUN(test_guest_to_host());
	RUN(test_recv(true));
	RUN(test_recv(false));
	RUN(test_gone());
	RUN(test_fd());
	for (unsigned i = 0; i < sizeof(bad_args) / sizeof(bad_args[0]); i++)
		refused(bad_args[i].arg, bad_args[i].says);
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return check_done();
}
