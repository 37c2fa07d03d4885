// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user messages on a Unix socket: framing, fd passing and the
 * per-type shape checks shared by back-end and front-end.  The peer is
 * another process that need not be trusted: every size read from the
 * socket is bounded before it is used, and fds that arrive with a message
 * that is then refused are closed, never leaked.
 */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hw/virtio/vhost-user.h"

/* What a payload looks like, per message type and direction. */
enum vu_shape {
	VU_NONE,		/* nothing may be carried */
	VU_EMPTY,		/* no payload */
	VU_U64,
	VU_STATE,
	VU_ADDR,
	VU_MEM,			/* header + nregions regions */
	VU_MEM_REG,
	VU_CONFIG,		/* header + size bytes */
	VU_INFLIGHT,
	VU_LOG,
};

/* Which fds come with it. */
enum vu_fds {
	VU_FD_NONE,
	VU_FD_ONE,
	VU_FD_OPT,		/* zero or one */
	VU_FD_VRING,		/* one unless VHOST_USER_VRING_NOFD */
	VU_FD_REGIONS,		/* one per region */
};

struct vu_type {
	const char *name;
	enum vu_shape req;
	enum vu_fds req_fds;
	enum vu_shape reply;	/* VU_NONE: only a REPLY_ACK, if asked */
	enum vu_fds reply_fds;
};

static const struct vu_type vu_types[VHOST_USER_REQUEST_MAX] = {
	[VHOST_USER_GET_FEATURES] = { "GET_FEATURES", VU_EMPTY, VU_FD_NONE, VU_U64, VU_FD_NONE },
	[VHOST_USER_SET_FEATURES] = { "SET_FEATURES", VU_U64, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_OWNER] = { "SET_OWNER", VU_EMPTY, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_RESET_OWNER] = { "RESET_OWNER", VU_EMPTY, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_MEM_TABLE] = { "SET_MEM_TABLE", VU_MEM, VU_FD_REGIONS, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_LOG_BASE] = { "SET_LOG_BASE", VU_LOG, VU_FD_ONE, VU_U64, VU_FD_NONE },
	[VHOST_USER_SET_LOG_FD] = { "SET_LOG_FD", VU_EMPTY, VU_FD_ONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_VRING_NUM] = { "SET_VRING_NUM", VU_STATE, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_VRING_ADDR] = { "SET_VRING_ADDR", VU_ADDR, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_VRING_BASE] = { "SET_VRING_BASE", VU_STATE, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_GET_VRING_BASE] = { "GET_VRING_BASE", VU_STATE, VU_FD_NONE, VU_STATE, VU_FD_NONE },
	[VHOST_USER_SET_VRING_KICK] = { "SET_VRING_KICK", VU_U64, VU_FD_VRING, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_VRING_CALL] = { "SET_VRING_CALL", VU_U64, VU_FD_VRING, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_VRING_ERR] = { "SET_VRING_ERR", VU_U64, VU_FD_VRING, VU_NONE, VU_FD_NONE },
	[VHOST_USER_GET_PROTOCOL_FEATURES] = { "GET_PROTOCOL_FEATURES", VU_EMPTY, VU_FD_NONE, VU_U64, VU_FD_NONE },
	[VHOST_USER_SET_PROTOCOL_FEATURES] = { "SET_PROTOCOL_FEATURES", VU_U64, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_GET_QUEUE_NUM] = { "GET_QUEUE_NUM", VU_EMPTY, VU_FD_NONE, VU_U64, VU_FD_NONE },
	[VHOST_USER_SET_VRING_ENABLE] = { "SET_VRING_ENABLE", VU_STATE, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SEND_RARP] = { "SEND_RARP", VU_U64, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_NET_SET_MTU] = { "NET_SET_MTU", VU_U64, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_BACKEND_REQ_FD] = { "SET_BACKEND_REQ_FD", VU_EMPTY, VU_FD_ONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_VRING_ENDIAN] = { "SET_VRING_ENDIAN", VU_STATE, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_GET_CONFIG] = { "GET_CONFIG", VU_CONFIG, VU_FD_NONE, VU_CONFIG, VU_FD_NONE },
	[VHOST_USER_SET_CONFIG] = { "SET_CONFIG", VU_CONFIG, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_GET_INFLIGHT_FD] = { "GET_INFLIGHT_FD", VU_INFLIGHT, VU_FD_NONE, VU_INFLIGHT, VU_FD_OPT },
	[VHOST_USER_SET_INFLIGHT_FD] = { "SET_INFLIGHT_FD", VU_INFLIGHT, VU_FD_ONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_RESET_DEVICE] = { "RESET_DEVICE", VU_EMPTY, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_VRING_KICK] = { "VRING_KICK", VU_STATE, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_GET_MAX_MEM_SLOTS] = { "GET_MAX_MEM_SLOTS", VU_EMPTY, VU_FD_NONE, VU_U64, VU_FD_NONE },
	[VHOST_USER_ADD_MEM_REG] = { "ADD_MEM_REG", VU_MEM_REG, VU_FD_ONE, VU_NONE, VU_FD_NONE },
	/* The spec lets a back-end accept (and close) a stray fd here. */
	[VHOST_USER_REM_MEM_REG] = { "REM_MEM_REG", VU_MEM_REG, VU_FD_OPT, VU_NONE, VU_FD_NONE },
	[VHOST_USER_SET_STATUS] = { "SET_STATUS", VU_U64, VU_FD_NONE, VU_NONE, VU_FD_NONE },
	[VHOST_USER_GET_STATUS] = { "GET_STATUS", VU_EMPTY, VU_FD_NONE, VU_U64, VU_FD_NONE },
};

static const struct vu_type *vu_type(uint32_t request)
{
	if (request >= VHOST_USER_REQUEST_MAX || !vu_types[request].name)
		return NULL;
	return &vu_types[request];
}

int vhost_user_fail(struct vhost_user_err *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

const char *vhost_user_request_name(uint32_t request)
{
	static __thread char buf[24];
	const struct vu_type *t = vu_type(request);

	if (t)
		return t->name;
	snprintf(buf, sizeof(buf), "request %u", request);
	return buf;
}

bool vhost_user_has_reply(uint32_t request)
{
	const struct vu_type *t = vu_type(request);

	return t && t->reply != VU_NONE;
}

void vhost_user_msg_init(struct vhost_user_msg *m, uint32_t request,
			 uint32_t flags, uint32_t size)
{
	m->hdr = (struct vhost_user_hdr){
		.request = request,
		.flags = VHOST_USER_VERSION | flags,
		.size = size,
	};
	m->nfds = 0;
}

int vhost_user_take_fd(struct vhost_user_msg *m, unsigned int i)
{
	int fd;

	if (i >= m->nfds || m->fds[i] < 0)
		return -1;
	fd = m->fds[i];
	m->fds[i] = -1;
	return fd;
}

void vhost_user_close_fds(struct vhost_user_msg *m)
{
	for (unsigned int i = 0; i < m->nfds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->nfds = 0;
}

/* Waits for the socket to become ready for ev; -1 with *e on timeout. */
static int vu_wait(int sock, short ev, int timeout_ms, const char *where,
		   struct vhost_user_err *e)
{
	struct pollfd p = { .fd = sock, .events = ev };
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return vhost_user_fail(e, "poll: %s", strerror(errno));
	if (r == 0)
		return vhost_user_fail(e, "peer stalled for %d ms %s", timeout_ms, where);
	return 0;
}

/* Moves the SCM_RIGHTS fds of one recvmsg into m; false if any is odd. */
static bool vu_collect_fds(struct msghdr *mh, struct vhost_user_msg *m)
{
	bool ok = !(mh->msg_flags & MSG_CTRUNC);

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			ok = false;
			continue;
		}
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (m->nfds < VHOST_USER_MAX_FDS)
				m->fds[m->nfds++] = fd;
			else {
				close(fd);
				ok = false;
			}
		}
	}
	return ok;
}

/*
 * Reads exactly len bytes.  0 when the peer closed before the first byte
 * and may_eof, 1 when done, -1 with *e otherwise.
 */
static int vu_read(int sock, void *buf, size_t len, struct vhost_user_msg *m,
		   bool may_eof, int timeout_ms, struct vhost_user_err *e)
{
	char cbuf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
	size_t got = 0;

	while (got < len) {
		struct iovec iov = { (char *)buf + got, len - got };
		struct msghdr mh = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
		};
		ssize_t r = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (vu_wait(sock, POLLIN, timeout_ms, got || !may_eof ?
				    "in the middle of a message" : "before a message", e) < 0)
				return -1;
			continue;
		}
		if (r < 0)
			return vhost_user_fail(e, "recvmsg: %s", strerror(errno));
		if (!vu_collect_fds(&mh, m))
			return vhost_user_fail(e, "more than %d file descriptors, or other "
					       "ancillary data, with a message",
					       VHOST_USER_MAX_FDS);
		if (r == 0) {
			if (got == 0 && may_eof)
				return 0;
			return vhost_user_fail(e, "connection closed in the middle of a message");
		}
		got += (size_t)r;
	}
	return 1;
}

int vhost_user_recv(int sock, struct vhost_user_msg *m, int timeout_ms,
		    struct vhost_user_err *e)
{
	int r;

	m->nfds = 0;
	r = vu_read(sock, &m->hdr, sizeof(m->hdr), m, true, timeout_ms, e);
	if (r <= 0)
		goto out;
	if (m->hdr.size > sizeof(m->payload)) {
		r = vhost_user_fail(e, "%s: payload of %u bytes (at most %zu)",
				    vhost_user_request_name(m->hdr.request),
				    m->hdr.size, sizeof(m->payload));
		goto out;
	}
	/* Never read: whatever was there before is cleared, not leaked. */
	memset(&m->payload, 0, sizeof(m->payload));
	if (m->hdr.size)
		r = vu_read(sock, &m->payload, m->hdr.size, m, false, timeout_ms, e);
out:
	if (r <= 0)
		vhost_user_close_fds(m);
	return r;
}

int vhost_user_send(int sock, const struct vhost_user_msg *m, const int *fds,
		    unsigned int nfds, int timeout_ms, struct vhost_user_err *e)
{
	char cbuf[CMSG_SPACE(sizeof(int) * VHOST_USER_MAX_FDS)];
	size_t len = sizeof(m->hdr) + m->hdr.size, sent = 0;
	struct iovec iov[2];

	if (m->hdr.size > sizeof(m->payload) || nfds > VHOST_USER_MAX_FDS)
		return vhost_user_fail(e, "%s: message too large to send",
				       vhost_user_request_name(m->hdr.request));
	while (sent < len) {
		struct msghdr mh = { .msg_iov = iov };
		size_t hdr_left = sent < sizeof(m->hdr) ? sizeof(m->hdr) - sent : 0;
		ssize_t r;

		if (hdr_left) {
			iov[0] = (struct iovec){ (char *)&m->hdr + sent, hdr_left };
			iov[1] = (struct iovec){ (char *)&m->payload, m->hdr.size };
			mh.msg_iovlen = m->hdr.size ? 2 : 1;
		} else {
			size_t off = sent - sizeof(m->hdr);

			iov[0] = (struct iovec){ (char *)&m->payload + off, m->hdr.size - off };
			mh.msg_iovlen = 1;
		}
		/* The fds go with the first byte and only with it. */
		if (sent == 0 && nfds) {
			struct cmsghdr *c;

			mh.msg_control = cbuf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			memset(cbuf, 0, sizeof(cbuf));
			c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		r = sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (vu_wait(sock, POLLOUT, timeout_ms, "in the middle of a message", e) < 0)
				return -1;
			continue;
		}
		if (r < 0)
			return vhost_user_fail(e, "sendmsg: %s", strerror(errno));
		sent += (size_t)r;
	}
	return 0;
}

/* -1 with *e unless the payload has exactly the size shape s gives it. */
static int vu_check_shape(const struct vhost_user_msg *m, enum vu_shape s,
			  const char *name, struct vhost_user_err *e)
{
	uint32_t size = m->hdr.size, want = 0, n;

	switch (s) {
	case VU_NONE:
	case VU_EMPTY:
		break;
	case VU_U64:
		want = sizeof(uint64_t);
		break;
	case VU_STATE:
		want = sizeof(struct vhost_user_vring_state);
		break;
	case VU_ADDR:
		want = sizeof(struct vhost_user_vring_addr);
		break;
	case VU_MEM_REG:
		want = sizeof(struct vhost_user_mem_reg);
		break;
	case VU_INFLIGHT:
		want = sizeof(struct vhost_user_inflight);
		break;
	case VU_LOG:
		want = sizeof(struct vhost_user_log);
		break;
	case VU_MEM:
		want = offsetof(struct vhost_user_mem_table, region);
		if (size < want)
			break;
		n = m->payload.mem.nregions;
		if (n == 0 || n > VHOST_USER_MAX_REGIONS)
			return vhost_user_fail(e, "%s: %u memory regions (1 to %d)",
					       name, n, VHOST_USER_MAX_REGIONS);
		want += n * (uint32_t)sizeof(struct vhost_user_region);
		break;
	case VU_CONFIG:
		want = VHOST_USER_CONFIG_HDR_SIZE;
		if (size < want)
			break;
		n = m->payload.config.size;
		if (n > VHOST_USER_MAX_CONFIG)
			return vhost_user_fail(e, "%s: %u config bytes (at most %d)",
					       name, n, VHOST_USER_MAX_CONFIG);
		want += n;
		break;
	}
	if (size != want)
		return vhost_user_fail(e, "%s: payload of %u bytes, expected %u",
				       name, size, want);
	return 0;
}

static int vu_check_fds(const struct vhost_user_msg *m, enum vu_fds f,
			const char *name, struct vhost_user_err *e)
{
	unsigned int lo = 0, hi = 0;

	switch (f) {
	case VU_FD_NONE:
		break;
	case VU_FD_ONE:
		lo = hi = 1;
		break;
	case VU_FD_OPT:
		hi = 1;
		break;
	case VU_FD_VRING:
		lo = hi = (m->payload.u64 & VHOST_USER_VRING_NOFD) ? 0 : 1;
		break;
	case VU_FD_REGIONS:
		lo = hi = m->payload.mem.nregions;
		break;
	}
	if (m->nfds < lo || m->nfds > hi)
		return vhost_user_fail(e, "%s: %u file descriptors, expected %u%s",
				       name, m->nfds, lo, hi > lo ? " or 1" : "");
	return 0;
}

int vhost_user_check_request(const struct vhost_user_msg *m, struct vhost_user_err *e)
{
	const struct vu_type *t = vu_type(m->hdr.request);
	uint32_t flags = m->hdr.flags;

	if (!t)
		return vhost_user_fail(e, "unknown request %u", m->hdr.request);
	if ((flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION)
		return vhost_user_fail(e, "%s: protocol version %u (brisk speaks %u)",
				       t->name, flags & VHOST_USER_VERSION_MASK,
				       VHOST_USER_VERSION);
	if (flags & ~(VHOST_USER_VERSION_MASK | VHOST_USER_FLAG_NEED_REPLY))
		return vhost_user_fail(e, "%s: unexpected flags %#x", t->name, flags);
	if (vu_check_shape(m, t->req, t->name, e) < 0)
		return -1;
	return vu_check_fds(m, t->req_fds, t->name, e);
}

int vhost_user_check_reply(const struct vhost_user_msg *m, uint32_t request,
			   struct vhost_user_err *e)
{
	const struct vu_type *t = vu_type(request);
	uint32_t flags = m->hdr.flags;

	if (!t)
		return vhost_user_fail(e, "reply to unknown request %u", request);
	if (m->hdr.request != request)
		return vhost_user_fail(e, "%s: the reply is for %s", t->name,
				       vhost_user_request_name(m->hdr.request));
	if ((flags & VHOST_USER_VERSION_MASK) != VHOST_USER_VERSION ||
	    !(flags & VHOST_USER_FLAG_REPLY) ||
	    (flags & ~(VHOST_USER_VERSION_MASK | VHOST_USER_FLAG_REPLY)))
		return vhost_user_fail(e, "%s: reply with flags %#x", t->name, flags);
	/* A back-end that fails GET_CONFIG says so with an empty payload. */
	if (t->reply == VU_CONFIG && m->hdr.size == 0 && m->nfds == 0)
		return 0;
	if (vu_check_shape(m, t->reply == VU_NONE ? VU_U64 : t->reply, t->name, e) < 0)
		return -1;
	return vu_check_fds(m, t->reply_fds, t->name, e);
}

/* Whether the peer has closed its end (the socket reads EOF or hung up). */
static bool vu_peer_gone(int sock)
{
	struct pollfd p = { .fd = sock, .events = POLLRDHUP };

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/*
 * Until the socket has something to read or has hung up, or release_fd
 * (-1: none) is readable: no time limit of its own.
 */
static int vu_hold(int sock, int release_fd, struct vhost_user_err *e)
{
	struct pollfd p[2] = {
		{ .fd = sock, .events = POLLIN | POLLRDHUP },
		{ .fd = release_fd, .events = POLLIN },
	};
	int r;

	do
		r = poll(p, 2, -1);
	while (r < 0 && errno == EINTR);
	return r < 0 ? vhost_user_fail(e, "poll: %s", strerror(errno)) : 0;
}

static int vu_call(int sock, uint32_t request, const void *payload, uint32_t size,
		   const int *fds, unsigned int nfds, bool ack,
		   struct vhost_user_msg *reply, int timeout_ms, bool hold, int release_fd,
		   struct vhost_user_err *e, bool *gone)
{
	bool has_reply = vhost_user_has_reply(request);
	struct vhost_user_msg m, r;
	int ret = -1;

	if (gone)
		*gone = false;
	if (size > sizeof(m.payload))
		return vhost_user_fail(e, "%s: payload too large",
				       vhost_user_request_name(request));
	vhost_user_msg_init(&m, request, ack && !has_reply ? VHOST_USER_FLAG_NEED_REPLY : 0,
			    size);
	if (size)
		memcpy(&m.payload, payload, size);
	if (vhost_user_send(sock, &m, fds, nfds, timeout_ms, e) < 0)
		goto out;
	if (!has_reply && !ack)
		return 0;
	if (hold && vu_hold(sock, release_fd, e) < 0)
		goto out;
	switch (vhost_user_recv(sock, &r, timeout_ms, e)) {
	case 0:
		vhost_user_fail(e, "%s: the back-end closed the connection",
				vhost_user_request_name(request));
		goto out;
	case -1: {
		struct vhost_user_err why = *e;

		vhost_user_fail(e, "%s: %s", vhost_user_request_name(request), why.msg);
		goto out;
	}
	}
	if (vhost_user_check_reply(&r, request, e) < 0) {
		vhost_user_close_fds(&r);
		goto out;
	}
	if (!has_reply && r.payload.u64) {
		vhost_user_fail(e, "%s: the back-end refused it (%#llx)",
				vhost_user_request_name(request),
				(unsigned long long)r.payload.u64);
		goto out;
	}
	if (reply)
		*reply = r;
	else
		vhost_user_close_fds(&r);
	return 0;
out:
	if (gone)
		*gone = vu_peer_gone(sock);
	return ret;
}

int vhost_user_call(int sock, uint32_t request, const void *payload, uint32_t size,
		    const int *fds, unsigned int nfds, bool ack,
		    struct vhost_user_msg *reply, int timeout_ms,
		    struct vhost_user_err *e, bool *gone)
{
	return vu_call(sock, request, payload, size, fds, nfds, ack, reply, timeout_ms,
		       false, -1, e, gone);
}

int vhost_user_call_held(int sock, uint32_t request, const void *payload, uint32_t size,
			 bool ack, struct vhost_user_msg *reply, int timeout_ms,
			 int release_fd, struct vhost_user_err *e, bool *gone)
{
	return vu_call(sock, request, payload, size, NULL, 0, ack, reply, timeout_ms,
		       true, release_fd, e, gone);
}
