// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The vhost-user message layer over a socketpair: framing, fd passing,
 * and the shape checks both sides rely on.  Expected sizes come from the
 * wire layouts in QEMU's docs/interop/vhost-user.rst (a 12-byte header;
 * vring state 8 bytes, vring address 40, a memory region 32 after an
 * 8-byte count, config 12 + size, inflight 24), written out here as
 * numbers rather than taken from the structs under test.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/virtio/vhost-user.h"

#include "check.h"

#define TIMEOUT_MS 1000

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void pair(int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair");
		exit(1);
	}
}

/* Raw bytes with fds, as a peer that ignores the rules might send them. */
static void send_raw(int sock, const void *buf, size_t len, const int *fds, unsigned nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 16)];
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)len) {
		perror("sendmsg");
		exit(1);
	}
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;

	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
	       sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

static void test_roundtrip(void)
{
	struct vhost_user_msg out, in;
	struct vhost_user_err e;
	int sv[2], efd[2];

	pair(sv);
	efd[0] = eventfd(0, EFD_CLOEXEC);
	efd[1] = eventfd(0, EFD_CLOEXEC);

	/* No payload, no fd. */
	vhost_user_msg_init(&out, VHOST_USER_GET_FEATURES, 0, 0);
	CHECK(vhost_user_send(sv[0], &out, NULL, 0, TIMEOUT_MS, &e) == 0);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == 1);
	CHECK(in.hdr.request == 1 && in.hdr.flags == 1 && in.hdr.size == 0 && in.nfds == 0);
	CHECK(vhost_user_check_request(&in, &e) == 0);

	/* A two-region memory table: 8 + 2 * 32 bytes, two fds in order. */
	vhost_user_msg_init(&out, VHOST_USER_SET_MEM_TABLE, VHOST_USER_FLAG_NEED_REPLY, 72);
	memset(&out.payload, 0, sizeof(out.payload));
	out.payload.mem.nregions = 2;
	out.payload.mem.region[1].uva = 0x1122334455667788ull;
	CHECK(vhost_user_send(sv[0], &out, efd, 2, TIMEOUT_MS, &e) == 0);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == 1);
	CHECK(in.hdr.request == 5 && in.hdr.size == 72 && in.hdr.flags == (1 | 8));
	CHECK(in.nfds == 2);
	CHECK(in.payload.mem.region[1].uva == 0x1122334455667788ull);
	CHECK(vhost_user_check_request(&in, &e) == 0);
	if (in.nfds == 2) {
		CHECK(same_file(in.fds[0], efd[0]) && same_file(in.fds[1], efd[1]));
		int fd = vhost_user_take_fd(&in, 1);

		CHECK(fd >= 0 && in.fds[1] == -1);
		CHECK(vhost_user_take_fd(&in, 1) == -1);
		CHECK(vhost_user_take_fd(&in, 2) == -1);
		close(fd);
	}
	vhost_user_close_fds(&in);
	CHECK(in.nfds == 0);

	/* The payload byte by byte from the peer: still one message. */
	uint8_t raw[12 + 8] = { 2, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0, 0xaa, 0, 0, 0, 0, 0, 0, 0x55 };

	for (unsigned i = 0; i < sizeof(raw); i++)
		send_raw(sv[0], raw + i, 1, NULL, 0);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == 1);
	CHECK(in.hdr.request == 2 && in.payload.u64 == 0x55000000000000aaull);

	/* Orderly end between messages. */
	close(sv[0]);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == 0);
	close(sv[1]);
	close(efd[0]);
	close(efd[1]);
}

static void test_broken_streams(void)
{
	uint8_t hdr[12] = { 2, 0, 0, 0, 1, 0, 0, 0, 8, 0, 0, 0 };
	struct vhost_user_msg in;
	struct vhost_user_err e;
	int sv[2], fds[9], before;

	/* Closed in the middle of the header. */
	pair(sv);
	send_raw(sv[0], hdr, 5, NULL, 0);
	close(sv[0]);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == -1);
	close(sv[1]);

	/* Closed before the payload the header announced. */
	pair(sv);
	send_raw(sv[0], hdr, 12, NULL, 0);
	close(sv[0]);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == -1);
	close(sv[1]);

	/* A peer that stops mid-message is given up on, not waited for. */
	pair(sv);
	send_raw(sv[0], hdr, 12, NULL, 0);
	CHECK(vhost_user_recv(sv[1], &in, 50, &e) == -1);
	CHECK(strstr(e.msg, "stalled") != NULL);
	close(sv[0]);
	close(sv[1]);

	/* More payload than any message has (config: 12 + 256 bytes). */
	pair(sv);
	uint8_t big[12] = { 24, 0, 0, 0, 1, 0, 0, 0, 0x0d, 0x01, 0, 0 };	/* 269 */

	send_raw(sv[0], big, sizeof(big), NULL, 0);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == -1);
	close(sv[0]);
	close(sv[1]);

	/* 269 is one too many; 268 is the largest payload there is. */
	pair(sv);
	uint8_t cfg[12 + 268] = { 24, 0, 0, 0, 1, 0, 0, 0, 0x0c, 0x01, 0, 0 };

	cfg[12 + 4] = 0;	/* config size 256: 12 + 256 = 268 */
	cfg[12 + 5] = 1;
	send_raw(sv[0], cfg, sizeof(cfg), NULL, 0);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == 1);
	CHECK(vhost_user_check_request(&in, &e) == 0);
	close(sv[0]);
	close(sv[1]);

	/* Nine fds: refused, and every one that arrived is closed again. */
	for (int i = 0; i < 9; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	pair(sv);
	before = open_fds();
	send_raw(sv[0], hdr, 12, fds, 9);
	send_raw(sv[0], hdr, 8, NULL, 0);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == -1);
	CHECK(open_fds() == before);
	close(sv[0]);
	close(sv[1]);

	/* fds that arrive with a message cut short are closed too. */
	pair(sv);
	before = open_fds();
	send_raw(sv[0], hdr, 12, fds, 3);
	close(sv[0]);
	CHECK(vhost_user_recv(sv[1], &in, TIMEOUT_MS, &e) == -1);
	CHECK(open_fds() == before - 1);	/* sv[0] */
	close(sv[1]);
	for (int i = 0; i < 9; i++)
		close(fds[i]);
}

/* A message as vhost_user_recv leaves it, without a socket. */
static void mk(struct vhost_user_msg *m, uint32_t req, uint32_t flags,
	       uint32_t size, unsigned nfds)
{
	memset(m, 0, sizeof(*m));
	m->hdr = (struct vhost_user_hdr){ req, flags, size };
	m->nfds = nfds;
	for (unsigned i = 0; i < nfds; i++)
		m->fds[i] = -1;
}

static void test_check_request(void)
{
	struct vhost_user_msg m;
	struct vhost_user_err e;

	mk(&m, VHOST_USER_SET_FEATURES, 1, 8, 0);
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_SET_FEATURES, 1, 4, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_FEATURES, 1, 8, 1);
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_FEATURES, 2, 8, 0);		/* version 2 */
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_FEATURES, 1 | 4, 8, 0);		/* a reply */
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_FEATURES, 1 | 8, 8, 0);		/* need_reply */
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_SET_FEATURES, 1 | 0x10, 8, 0);	/* unknown flag */
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, 0, 1, 0, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, 41, 1, 0, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, 0xffffffffu, 1, 0, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);

	/* vring state is 8 bytes, vring address 40. */
	mk(&m, VHOST_USER_SET_VRING_NUM, 1, 8, 0);
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_GET_VRING_BASE, 1, 16, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_VRING_ADDR, 1, 40, 0);
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_SET_VRING_ADDR, 1, 32, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);

	/* Memory table: 8 + 32 per region, one fd each, 1 to 8 regions. */
	for (unsigned n = 0; n <= 9; n++) {
		mk(&m, VHOST_USER_SET_MEM_TABLE, 1, 8 + 32 * n, n > 8 ? 8 : n);
		m.payload.mem.nregions = n;
		CHECK(vhost_user_check_request(&m, &e) == (n >= 1 && n <= 8 ? 0 : -1));
	}
	mk(&m, VHOST_USER_SET_MEM_TABLE, 1, 8 + 32 * 2, 1);	/* one fd short */
	m.payload.mem.nregions = 2;
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_MEM_TABLE, 1, 8 + 32 * 3, 2);	/* count says 2 */
	m.payload.mem.nregions = 2;
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_MEM_TABLE, 1, 4, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);

	/* Vring fds: one unless bit 8 says none. */
	mk(&m, VHOST_USER_SET_VRING_KICK, 1, 8, 1);
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_SET_VRING_CALL, 1, 8, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_VRING_ERR, 1, 8, 0);
	m.payload.u64 = 0x100;
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_SET_VRING_KICK, 1, 8, 1);
	m.payload.u64 = 0x101;
	CHECK(vhost_user_check_request(&m, &e) == -1);

	/* Config: 12 + size, size at most 256. */
	mk(&m, VHOST_USER_GET_CONFIG, 1, 12 + 60, 0);
	m.payload.config.size = 60;
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_GET_CONFIG, 1, 12 + 60, 0);
	m.payload.config.size = 61;
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_CONFIG, 1, 8, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_GET_CONFIG, 1, 12 + 257, 0);
	m.payload.config.size = 257;
	CHECK(vhost_user_check_request(&m, &e) == -1);

	/* Inflight: 24 bytes; SET carries the fd, GET does not. */
	mk(&m, VHOST_USER_GET_INFLIGHT_FD, 1, 24, 0);
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_SET_INFLIGHT_FD, 1, 24, 0);
	CHECK(vhost_user_check_request(&m, &e) == -1);
	mk(&m, VHOST_USER_SET_INFLIGHT_FD, 1, 24, 1);
	CHECK(vhost_user_check_request(&m, &e) == 0);

	/* REM_MEM_REG may bring one stray fd, not two. */
	mk(&m, VHOST_USER_REM_MEM_REG, 1, 40, 1);
	CHECK(vhost_user_check_request(&m, &e) == 0);
	mk(&m, VHOST_USER_REM_MEM_REG, 1, 40, 2);
	CHECK(vhost_user_check_request(&m, &e) == -1);

	CHECK(strcmp(vhost_user_request_name(5), "SET_MEM_TABLE") == 0);
	CHECK(strcmp(vhost_user_request_name(99), "request 99") == 0);
}

static void test_check_reply(void)
{
	struct vhost_user_msg m;
	struct vhost_user_err e;

	mk(&m, VHOST_USER_GET_FEATURES, 1 | 4, 8, 0);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_FEATURES, &e) == 0);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_PROTOCOL_FEATURES, &e) == -1);
	mk(&m, VHOST_USER_GET_FEATURES, 1, 8, 0);		/* no reply flag */
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_FEATURES, &e) == -1);
	mk(&m, VHOST_USER_GET_FEATURES, 1 | 4 | 8, 8, 0);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_FEATURES, &e) == -1);

	/* A REPLY_ACK is a u64, whatever the request. */
	mk(&m, VHOST_USER_SET_MEM_TABLE, 1 | 4, 8, 0);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_SET_MEM_TABLE, &e) == 0);
	mk(&m, VHOST_USER_SET_MEM_TABLE, 1 | 4, 0, 0);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_SET_MEM_TABLE, &e) == -1);

	mk(&m, VHOST_USER_GET_VRING_BASE, 1 | 4, 8, 0);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_VRING_BASE, &e) == 0);
	mk(&m, VHOST_USER_GET_INFLIGHT_FD, 1 | 4, 24, 1);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_INFLIGHT_FD, &e) == 0);
	/* No region (size 0) comes without one: libvhost-user's answer when it has none. */
	mk(&m, VHOST_USER_GET_INFLIGHT_FD, 1 | 4, 24, 0);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_INFLIGHT_FD, &e) == 0);
	mk(&m, VHOST_USER_GET_INFLIGHT_FD, 1 | 4, 24, 2);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_INFLIGHT_FD, &e) == -1);
	/* A failed GET_CONFIG is an empty reply. */
	mk(&m, VHOST_USER_GET_CONFIG, 1 | 4, 0, 0);
	CHECK(vhost_user_check_reply(&m, VHOST_USER_GET_CONFIG, &e) == 0);

	CHECK(vhost_user_has_reply(VHOST_USER_GET_FEATURES));
	CHECK(vhost_user_has_reply(VHOST_USER_GET_VRING_BASE));
	CHECK(!vhost_user_has_reply(VHOST_USER_SET_VRING_NUM));
	CHECK(!vhost_user_has_reply(1000));
}

int main(void)
{
	RUN(test_roundtrip());
	RUN(test_broken_streams());
	RUN(test_check_request());
	RUN(test_check_reply());
	return check_done();
}
