// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -netdev stream: QEMU 7.2's, the way passt serves a VM.  Frames go over
 * a stream socket, each after its length in 4 bytes, big-endian; the
 * socket is a unix or TCP one brisk listens at (server=on) or connects to
 * (server=off), or one it inherited (addr.type=fd).  One peer at a time.
 * A TCP address is numeric, IPv4 or IPv6: brisk looks no names up, so
 * the address a user gives is the one it uses, known before /dev/kvm.
 *
 * It has a thread of its own, and the user back end's two bounded queues
 * (net/queue.c): the NIC's thread only queues a frame and wakes it, and
 * never waits on the socket, which may be slow or gone.  The thread reads
 * whatever the peer sends into one buffer and cuts whole frames out of
 * it, so a frame that arrives in pieces waits there, and only a length
 * that is a frame's (at most FRAME_MAX) is ever allocated; it writes the
 * queued frames one at a time, carrying on a partial write where it
 * stopped.  A peer that sends a length no frame has (0, or over
 * FRAME_MAX) has broken the stream: there is no finding the next frame,
 * so the connection is closed.  A server then waits for its next peer; a
 * client connects again every reconnect= seconds, or without reconnect=
 * leaves the link down for good (send() refuses, and the NIC counts).
 *
 * The guest's frames go to the connection that was up when send() queued
 * them, or nowhere: as QEMU drops frames while its peer is gone, a frame
 * still queued when the connection ends is dropped and counted
 * (tx_dropped), never kept for the next peer.  The transmit queue is open
 * only while a peer is connected, and closing it frees what it holds
 * under the same lock send() queues under, so a frame queued at the very
 * moment the connection drops is either among those dropped or refused.
 *
 * A server whose accept() fails for want of something (EMFILE, ENFILE,
 * ENOBUFS, ENOMEM: the peer stays in the backlog, so the socket stays
 * readable) says so once and leaves the listening socket alone for a
 * second before it tries again, rather than spinning on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "net/net.h"
#include "net/queue.h"
#include "util/compiler.h"
#include "util/log.h"

/* ---- the options ---- */

static const char *const addr_types[] = { "unix", "inet", "fd", NULL };

#define F(f, t) OPT_AT(struct netdev_stream_cfg, f, t)
static const struct opt_prop stream_props[] = {
	{ "id", OPT_ID, F(head.id, char *), OPT_REQUIRED,
	  .help = "the name -device virtio-net-pci,netdev= uses" },
	{ "server", OPT_BOOL, F(server, bool), .def = "off",
	  .help = "on: listen at the address for one peer at a time; off: connect to it" },
	{ "addr.type", OPT_ENUM, F(addr_type, int), OPT_REQUIRED, .names = addr_types,
	  .help = "unix (addr.path=), inet (addr.host=, addr.port=: TCP), fd (addr.str=)" },
	{ "addr.path", OPT_STR, F(path, char *),
	  .help = "the unix socket's path (107 bytes at most)" },
	{ "addr.abstract", OPT_BOOL, F(abstract, bool), .def = "off",
	  .help = "on: addr.path names a socket in Linux's abstract namespace" },
	{ "addr.tight", OPT_BOOL, F(tight, bool), .def = "on",
	  .help = "an abstract address as long as its name, not sun_path's 108 bytes" },
	{ "addr.str", OPT_STR, F(fd, char *),
	  .help = "an inherited socket's number: connected (server=off) or listening" },
	{ "addr.host", OPT_STR, F(host, char *),
	  .help = "addr.type=inet's address: numeric IPv4 or IPv6, never a name" },
	{ "addr.port", OPT_STR, F(port, char *),
	  .help = "addr.type=inet's TCP port (1 to 65535)" },
	{ "reconnect", OPT_UINT, F(reconnect, unsigned), .max = 3600, .def = "0",
	  .help = "server=off: seconds between connects once the peer is lost (0: none)" },
	{ NULL },
};
#undef F

const struct opt_spec netdev_stream_spec = { "-netdev stream", NULL, stream_props };
const struct netdev_stream_cfg netdev_stream_defaults = { .tight = true };

/* Every refusal's one line, "-netdev stream,id=ID: ...". */
#define bad(c, ...) netdev_error("stream", (c)->head.id, __VA_ARGS__)

/* What every type of address shares. */
static int check_common(const struct netdev_stream_cfg *c)
{
	if (c->addr_type != NETDEV_STREAM_INET && (c->host || c->port))
		return bad(c, "addr.host= and addr.port= are addr.type=inet's");
	if (c->reconnect && c->server)
		return bad(c, "reconnect= is server=off's: a server waits for its next peer");
	return 0;
}

static int check_unix(const struct netdev_stream_cfg *c)
{
	struct sockaddr_un sun;
	struct stat st;

	if (c->fd)
		return bad(c, "addr.str= is addr.type=fd's (addr.type=unix takes addr.path=)");
	if (!c->path)
		return bad(c, "addr.type=unix needs addr.path=");
	/* A path ends with its NUL; an abstract name starts with one. */
	if (strlen(c->path) >= sizeof(sun.sun_path))
		return bad(c, "addr.path=%s: longer than %zu bytes (a unix socket's "
			   "sun_path)", c->path, sizeof(sun.sun_path) - 1);
	/* bind() replaces a stale socket only; anything else stays. */
	if (c->server && !c->abstract && !lstat(c->path, &st) && !S_ISSOCK(st.st_mode))
		return bad(c, "addr.path=%s: exists and is not a socket", c->path);
	return 0;
}

/* addr.str=N: brisk has no monitor, so N is a number, never an fd's name. */
static int fd_number(const char *s)
{
	char *end;
	long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || v > INT_MAX ? -1 : (int)v;
}

static int check_fd(const struct netdev_stream_cfg *c)
{
	int fd, type = 0, listening = 0;
	socklen_t len = sizeof(int);

	if (c->path || c->abstract)
		return bad(c, "addr.path= and addr.abstract= are addr.type=unix's");
	if (!c->fd)
		return bad(c, "addr.type=fd needs addr.str= (an inherited socket's number)");
	if (c->reconnect)
		return bad(c, "reconnect= needs addr.type=unix or inet: an inherited "
			   "socket cannot be connected again");
	if ((fd = fd_number(c->fd)) < 0)
		return bad(c, "addr.str=%s: not a file descriptor's number", c->fd);
	if (fcntl(fd, F_GETFD) < 0)
		return bad(c, "addr.str=%s: %s", c->fd, strerror(errno));
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM)
		return bad(c, "addr.str=%s: not a stream socket", c->fd);
	len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0)
		return bad(c, "addr.str=%s: %s", c->fd, strerror(errno));
	if (c->server != !!listening)
		return bad(c, "addr.str=%s: %s", c->fd, listening ?
			   "a listening socket, for server=on" :
			   "not listening: server=on takes a listening socket");
	return 0;
}

/* addr.port=: a number, as AI_NUMERICSERV takes it, but never 0 (the kernel's pick). */
static bool port_ok(const char *s)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	return !errno && !*end && v >= 1 && v <= 65535;
}

/* addr.host= and addr.port= as a socket address; getaddrinfo()'s error. */
static int inet_addr(const struct netdev_stream_cfg *c, struct sockaddr_storage *ss,
		     socklen_t *len)
{
	const struct addrinfo hints = {
		.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
	};
	struct addrinfo *ai;
	int err = getaddrinfo(c->host, c->port, &hints, &ai);

	if (err)
		return err;
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static int check_inet(const struct netdev_stream_cfg *c)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int err;

	if (c->path || c->abstract)
		return bad(c, "addr.path= and addr.abstract= are addr.type=unix's");
	if (c->fd)
		return bad(c, "addr.str= is addr.type=fd's (addr.type=inet takes addr.host= "
			   "and addr.port=)");
	if (!c->host || !c->port)
		return bad(c, "addr.type=inet needs addr.host= and addr.port=");
	if (!port_ok(c->port))
		return bad(c, "addr.port=%s: not a port number (1 to 65535)", c->port);
	err = inet_addr(c, &ss, &len);
	if (err == EAI_NONAME)
		return bad(c, "addr.host=%s: not a numeric IPv4 or IPv6 address (brisk looks "
			   "no names up)", c->host);
	if (err)
		return bad(c, "addr.host=%s: %s", c->host, gai_strerror(err));
	return 0;
}

static int check(const struct netdev_stream_cfg *c)
{
	if (check_common(c) < 0)
		return -1;
	if (c->addr_type == NETDEV_STREAM_INET)
		return check_inet(c);
	return c->addr_type == NETDEV_STREAM_FD ? check_fd(c) : check_unix(c);
}

int netdev_stream_check(void *cfg)
{
	return check(cfg);
}

/* ---- the back end ---- */

/* The peer's bytes: room for a whole frame after the last one's tail. */
#define IN_BUF (128u << 10)
/* A server's pause after accept() failed but for a peer already gone. */
#define ACCEPT_BACKOFF_MS 1000
_Static_assert(IN_BUF > 4 + FRAME_MAX, "a frame's tail leaves room to read");

struct stream {
	struct netdev nd;
	char *id;
	pthread_t thread;
	bool started;
	bool stop;		/* free() to the thread */
	int wake_fd;		/* send() and free() to the thread */
	int listen_fd;		/* server=on: the peers' way in; -1 otherwise */
	int sock;		/* the peer's connection; -1: none */
	int pending;		/* a TCP connect() under way; -1: none */
	bool client;		/* server=off: a lost peer leaves the link down */
	/* addr.type=unix and inet: where to connect again, or what is bound */
	union {
		struct sockaddr sa;
		struct sockaddr_un sun;
		struct sockaddr_storage ss;
	} addr;
	socklen_t addr_len;
	char where[160];	/* the address as the options gave it, for messages */
	unsigned reconnect_ms;	/* 0: never */
	/* a client's next connect; a server's next accept() while backing off */
	int64_t next_try_ms;
	bool backing_off;	/* server: accept() failed, listen_fd not polled */
	bool said_accept;
	/* server=on: the socket file bound, removed at free() if still ours */
	bool bound;
	dev_t dev;
	ino_t ino;
	/* tx is open while a peer is connected: send() refuses otherwise */
	struct frame_queue rx, tx;
	uint8_t *in;		/* the peer's bytes short of a whole frame */
	size_t in_len;
	struct frame *out;	/* the frame being written, after its length */
	uint8_t out_hdr[4];
	size_t out_off;		/* of 4 + out->len bytes */
	bool said_length;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The NIC's thread: no peer, tx closed, so the NIC counts the drop. */
static bool stream_send(struct netdev *nd, const struct iovec *iov, unsigned n, size_t len)
{
	struct stream *s = container_of(nd, struct stream, nd);

	return fq_send(&s->tx, s->wake_fd, iov, n, len);
}

static size_t stream_peek(struct netdev *nd)
{
	return fq_peek(&container_of(nd, struct stream, nd)->rx, nd->rx_fd);
}

static void stream_take(struct netdev *nd, const struct iovec *iov, unsigned n)
{
	fq_take(&container_of(nd, struct stream, nd)->rx, iov, n);
}

static bool stream_tx_busy(struct netdev *nd)
{
	return fq_busy(&container_of(nd, struct stream, nd)->tx);
}

static void stream_free(struct netdev *nd);

static const struct netdev_ops stream_ops = {
	.send = stream_send,
	.peek = stream_peek,
	.take = stream_take,
	.tx_busy = stream_tx_busy,
	.free = stream_free,
};

/* ---- the connection: all on the stream thread (or before it starts) ---- */

static void peer_set(struct stream *s, int fd)
{
	int on = 1;

	/* Each write is a whole frame or its tail: nothing gains by waiting
	 * for more.  A unix socket has no Nagle to turn off: refused, and
	 * that is all. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	s->sock = fd;
	s->in_len = 0;
	fq_open(&s->tx);
}

/*
 * Closes the connection.  The frames the guest sent that are still
 * queued had nowhere to go: dropped, and counted, and send() refuses
 * from the same moment (fq_close).  A server goes back to
 * its listening socket; a client says so, once per loss, since its link
 * may now stay down.
 */
static void peer_lost(struct stream *s, const char *why)
{
	uint64_t dropped;

	dropped = fq_close(&s->tx) + (s->out ? 1 : 0);
	__atomic_fetch_add(&s->nd.tx_dropped, dropped, __ATOMIC_RELAXED);
	free(s->out);
	s->out = NULL;
	s->in_len = 0;
	/* Said before the peer can see the close, so what follows it is known. */
	if (s->client && s->reconnect_ms)
		error_report("-netdev stream,id=%s: %s; connecting again every %u s "
			     "(reconnect=)", s->id, why, s->reconnect_ms / 1000);
	else if (s->client)
		error_report("-netdev stream,id=%s: %s; the link stays down (no "
			     "reconnect=)", s->id, why);
	s->next_try_ms = now_ms() + s->reconnect_ms;
	close(s->sock);
	s->sock = -1;
}

/* Ends a broken stream; a server says so once, as any peer can break it. */
static void peer_broke(struct stream *s, uint32_t len)
{
	char why[96];

	snprintf(why, sizeof(why), "the peer sent a frame length of %u (1 to %u)", len,
		 FRAME_MAX);
	if (!s->client)
		error_report_once(&s->said_length, "-netdev stream,id=%s: %s: connection "
				  "closed (said once)", s->id, why);
	peer_lost(s, why);
}

/*
 * Whole frames out of the peer's bytes, for the guest; the tail of one
 * not yet whole moves to the front.  A frame too short to be Ethernet's
 * is no frame the NIC can give the guest: dropped and counted, the
 * stream still whole.  Returns false, the peer's length in *bad, when a
 * length breaks the stream.
 */
static bool cut_frames(struct stream *s, uint32_t *bad)
{
	size_t pos = 0;

	while (s->in_len - pos >= 4) {
		uint32_t len = get_be32(s->in + pos);

		if (!len || len > FRAME_MAX) {
			*bad = len;
			return false;
		}
		if (s->in_len - pos - 4 < len)
			break;
		if (len < 14)
			__atomic_fetch_add(&s->nd.rx_dropped, 1, __ATOMIC_RELAXED);
		else
			fq_deliver(&s->rx, &s->nd, s->in + pos + 4, len);
		pos += 4 + len;
	}
	memmove(s->in, s->in + pos, s->in_len - pos);
	s->in_len -= pos;
	return true;
}

static void receive(struct stream *s)
{
	ssize_t n = read(s->sock, s->in + s->in_len, IN_BUF - s->in_len);
	char why[96];
	uint32_t len;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		snprintf(why, sizeof(why), "%s%s", n ? "reading: " : "the peer closed the "
			 "connection", n ? strerror(errno) : "");
		peer_lost(s, why);
		return;
	}
	s->in_len += (size_t)n;
	if (!cut_frames(s, &len))
		peer_broke(s, len);
}

/* The next queued frame into out, its length before it; false: none. */
static bool next_out(struct stream *s)
{
	s->out = fq_pop(&s->tx);
	if (!s->out)
		return false;
	put_be32(s->out_hdr, (uint32_t)s->out->len);
	s->out_off = 0;
	return true;
}

/* Writes what the socket takes: the frame begun first, whole. */
static void flush(struct stream *s)
{
	while (s->out || next_out(s)) {
		size_t off = s->out_off, h = off < 4 ? 4 - off : 0, d = off < 4 ? 0 : off - 4;
		struct iovec iov[2] = { { s->out_hdr + 4 - h, h },
					{ s->out->data + d, s->out->len - d } };
		struct msghdr m = { .msg_iov = h ? iov : iov + 1, .msg_iovlen = h ? 2 : 1 };
		ssize_t n = sendmsg(s->sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		char why[96];

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0) {
			snprintf(why, sizeof(why), "writing: %s", strerror(errno));
			peer_lost(s, why);
			return;
		}
		s->out_off += (size_t)n;
		if (s->out_off == 4 + s->out->len) {
			free(s->out);
			s->out = NULL;
		}
	}
}

/*
 * A socket for the peer's connection, connected or not (errno).  Non-
 * blocking: a unix peer whose backlog is full answers EAGAIN at once; a
 * TCP one may take a while, so that socket comes back with *pending set
 * (EINPROGRESS), its result poll()'s to tell.
 */
static int connect_peer(const struct stream *s, bool *pending)
{
	int fd = socket(s->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int err;

	*pending = false;
	if (fd >= 0 && connect(fd, &s->addr.sa, s->addr_len) < 0) {
		err = errno;
		if (err == EINPROGRESS) {
			*pending = true;
			return fd;
		}
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* A TCP connect() that was under way has ended: the peer's, or closed (errno). */
static int connect_done(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (!err)
		return fd;
	close(fd);
	errno = err;
	return -1;
}

/* The one try a client makes each reconnect= seconds. */
static void reconnect(struct stream *s)
{
	bool pending;
	int fd = connect_peer(s, &pending);

	if (fd >= 0 && pending)
		s->pending = fd;
	else if (fd >= 0)
		peer_set(s, fd);
	else
		s->next_try_ms = now_ms() + s->reconnect_ms;
}

static void reconnected(struct stream *s)
{
	int fd = connect_done(s->pending);

	s->pending = -1;
	if (fd >= 0)
		peer_set(s, fd);
	else
		s->next_try_ms = now_ms() + s->reconnect_ms;
}

/*
 * What accept() says of one peer, already gone (accept(2): an inherited
 * TCP socket passes the connection's own network errors on): the next
 * is poll()'s to tell of.
 */
static bool peer_gone(int err)
{
	switch (err) {
	case EAGAIN: case EINTR: case ECONNABORTED: case EPROTO: case ENETDOWN:
	case ENOPROTOOPT: case EHOSTDOWN: case ENONET: case EHOSTUNREACH:
	case EOPNOTSUPP: case ENETUNREACH:
		return true;
	}
	return false;
}

/* revents: the listening socket's, this round. */
static void accept_peer(struct stream *s, short revents)
{
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	int err = errno;

	if (fd >= 0) {
		peer_set(s, fd);
		return;
	}
	if (revents & POLLIN && peer_gone(err))
		return;
	/* The rest (EMFILE...) leave the socket readable, the peer waiting in
	 * the backlog: polled now, it would spin.  Said once, as it may last. */
	error_report_once(&s->said_accept, "-netdev stream,id=%s: cannot accept a peer: "
			  "%s; trying again every %u s (said once)", s->id, strerror(err),
			  ACCEPT_BACKOFF_MS / 1000);
	s->backing_off = true;
	s->next_try_ms = now_ms() + ACCEPT_BACKOFF_MS;
}

/* How long poll() may wait: until a client's next try, or a server's. */
static int poll_timeout(const struct stream *s)
{
	int64_t left;

	if (s->sock >= 0 || s->pending >= 0 || (s->client ? !s->reconnect_ms : !s->backing_off))
		return -1;
	left = s->next_try_ms - now_ms();
	return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* The connection if there is one, else the way to the next one (poll()
 * passes over an fd of -1: a client's, or a server's backing off). */
static struct pollfd peer_pollfd(const struct stream *s)
{
	if (s->sock >= 0)
		return (struct pollfd){ s->sock, (short)(POLLIN | (s->out ? POLLOUT : 0)), 0 };
	if (s->pending >= 0)
		return (struct pollfd){ s->pending, POLLOUT, 0 };
	return (struct pollfd){ s->backing_off ? -1 : s->listen_fd, POLLIN, 0 };
}

static void stream_round(struct stream *s)
{
	struct pollfd pfd[2] = { { s->wake_fd, POLLIN, 0 }, peer_pollfd(s) };
	int timeout = poll_timeout(s);

	if (poll(pfd, 2, timeout) < 0)
		return;
	if (pfd[0].revents & POLLIN)
		eventfd_clear(s->wake_fd);
	if (s->sock >= 0 && pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
		receive(s);
	else if (s->sock < 0 && s->pending >= 0 && pfd[1].revents)
		reconnected(s);
	else if (s->sock < 0 && s->listen_fd >= 0 && pfd[1].revents)
		accept_peer(s, pfd[1].revents);
	else if (s->sock < 0 && timeout >= 0 && now_ms() >= s->next_try_ms && s->client)
		reconnect(s);
	else if (s->sock < 0 && timeout >= 0 && now_ms() >= s->next_try_ms)
		s->backing_off = false;		/* polled again from the next round */
	if (s->sock >= 0)
		flush(s);
}

static void *stream_thread(void *arg)
{
	struct stream *s = arg;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		stream_round(s);
	return NULL;
}

/* ---- making and freeing ---- */

static struct stream *stream_alloc(const struct netdev_stream_cfg *c)
{
	struct stream *s = calloc(1, sizeof(*s));

	if (!s) {
		error_report("out of memory");
		return NULL;
	}
	errno = 0;
	s->nd.ops = &stream_ops;
	s->sock = s->listen_fd = s->pending = -1;
	s->nd.rx_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->nd.tx_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	fq_init(&s->rx);
	fq_init(&s->tx);
	s->tx.idle_fd = s->nd.tx_fd;
	fq_close(&s->tx);	/* until a peer is connected */
	s->in = malloc(IN_BUF);
	s->id = strdup(c->head.id);
	s->nd.id = s->id;
	if (s->nd.rx_fd < 0 || s->nd.tx_fd < 0 || s->wake_fd < 0 || !s->in || !s->id) {
		bad(c, "%s", errno ? strerror(errno) : "out of memory");
		stream_free(&s->nd);
		return NULL;
	}
	return s;
}

/* addr.path= as a sockaddr; an abstract one tight unless addr.tight=off. */
static void unix_addr(struct stream *s, const struct netdev_stream_cfg *c)
{
	size_t len = strlen(c->path);

	s->addr.sun.sun_family = AF_UNIX;
	memcpy(s->addr.sun.sun_path + c->abstract, c->path, len);
	s->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + c->abstract + len +
				  !c->abstract);
	if (c->abstract && !c->tight)
		s->addr_len = sizeof(s->addr.sun);
	snprintf(s->where, sizeof(s->where), "addr.path=%s", c->path);
}

/*
 * A socket file left by a server before: replaced, as QEMU does, unless a
 * server still listens there (two would each get half the peers).
 */
static int unlink_stale(const struct stream *s, const struct netdev_stream_cfg *c)
{
	bool pending;
	int fd;

	if (c->abstract)
		return 0;
	if ((fd = connect_peer(s, &pending)) >= 0) {
		close(fd);
		return bad(c, "addr.path=%s: another server listens there", c->path);
	}
	if (unlink(c->path) < 0 && errno != ENOENT)
		return bad(c, "addr.path=%s: %s", c->path, strerror(errno));
	return 0;
}

/* The listening socket, at the address unix_addr() or inet_addr() gave. */
static int listen_at(struct stream *s, const struct netdev_stream_cfg *c)
{
	int on = 1;

	s->listen_fd = socket(s->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* A port whose last connections linger in TIME_WAIT is free to a
	 * server started again at once, as QEMU's is. */
	if (s->listen_fd < 0 || (s->addr.sa.sa_family != AF_UNIX &&
	     setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0) ||
	    bind(s->listen_fd, &s->addr.sa, s->addr_len) < 0 || listen(s->listen_fd, 4) < 0)
		return bad(c, "%s: cannot listen there: %s", s->where, strerror(errno));
	return 0;
}

static int listen_unix(struct stream *s, const struct netdev_stream_cfg *c)
{
	struct stat st;

	if (unlink_stale(s, c) < 0 || listen_at(s, c) < 0)
		return -1;
	if (!c->abstract && !stat(c->path, &st)) {
		s->bound = true;
		s->dev = st.st_dev;
		s->ino = st.st_ino;
	}
	return 0;
}

/*
 * A TCP connect() under way is waited for here, as a unix one is
 * answered at once: brisk starts with its peer, or says why not.  The
 * kernel bounds the wait (tcp_syn_retries: about two minutes).
 */
static int connect_wait(int fd)
{
	struct pollfd pfd = { fd, POLLOUT, 0 };

	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	return connect_done(fd);
}

static int connect_first(struct stream *s, const struct netdev_stream_cfg *c)
{
	bool pending;
	int fd = connect_peer(s, &pending);

	if (fd >= 0 && pending)
		fd = connect_wait(fd);
	if (fd >= 0) {
		peer_set(s, fd);
		return 0;
	}
	if (!c->reconnect)
		return bad(c, "%s: cannot connect: %s (reconnect= would keep "
			   "trying)", s->where, strerror(errno));
	bad(c, "%s: cannot connect: %s; trying again every %u s (reconnect=)",
	    s->where, strerror(errno), c->reconnect);
	s->next_try_ms = now_ms() + s->reconnect_ms;
	return 0;
}

/* addr.type=fd: the socket is brisk's from now on, and closed at free(). */
static int adopt_fd(struct stream *s, const struct netdev_stream_cfg *c)
{
	int fd = fd_number(c->fd);
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return bad(c, "addr.str=%s: %s", c->fd, strerror(errno));
	if (c->server)
		s->listen_fd = fd;
	else
		peer_set(s, fd);
	return 0;
}

/* addr.host= and addr.port= as a sockaddr: numeric, as the check found them. */
static int inet_sockaddr(struct stream *s, const struct netdev_stream_cfg *c)
{
	int err = inet_addr(c, &s->addr.ss, &s->addr_len);

	snprintf(s->where, sizeof(s->where), "addr.host=%s,addr.port=%s", c->host, c->port);
	if (err)
		return bad(c, "%s: %s", s->where, gai_strerror(err));
	return 0;
}

static int stream_open(struct stream *s, const struct netdev_stream_cfg *c)
{
	s->client = !c->server;
	if (c->addr_type == NETDEV_STREAM_FD)
		return adopt_fd(s, c);
	if (c->addr_type == NETDEV_STREAM_INET && inet_sockaddr(s, c) < 0)
		return -1;
	if (c->addr_type == NETDEV_STREAM_UNIX)
		unix_addr(s, c);
	if (c->server)
		return c->addr_type == NETDEV_STREAM_UNIX ? listen_unix(s, c) : listen_at(s, c);
	s->reconnect_ms = c->reconnect * 1000;
	return connect_first(s, c);
}

struct netdev *netdev_stream_new(const struct netdev_stream_cfg *cfg)
{
	struct stream *s;
	int err;

	if (check(cfg) < 0 || !(s = stream_alloc(cfg)))
		return NULL;
	if (stream_open(s, cfg) < 0) {
		stream_free(&s->nd);
		return NULL;
	}
	err = net_thread_start(&s->thread, stream_thread, s, "stream");
	if (err) {
		bad(cfg, "cannot start its thread: %s", strerror(err));
		stream_free(&s->nd);
		return NULL;
	}
	s->started = true;
	return &s->nd;
}

/* The socket file, if it is still the one bind() made. */
static void unlink_ours(const struct stream *s)
{
	struct stat st;

	if (s->bound && !lstat(s->addr.sun.sun_path, &st) && st.st_dev == s->dev &&
	    st.st_ino == s->ino)
		unlink(s->addr.sun.sun_path);
}

static void stream_free(struct netdev *nd)
{
	struct stream *s = container_of(nd, struct stream, nd);

	if (s->started) {
		__atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
		eventfd_kick(s->wake_fd);
		pthread_join(s->thread, NULL);
	}
	unlink_ours(s);
	if (s->sock >= 0)
		close(s->sock);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->pending >= 0)
		close(s->pending);
	fq_destroy(&s->rx);
	fq_destroy(&s->tx);
	if (s->nd.rx_fd >= 0)
		close(s->nd.rx_fd);
	if (s->nd.tx_fd >= 0)
		close(s->nd.tx_fd);
	if (s->wake_fd >= 0)
		close(s->wake_fd);
	free(s->out);
	free(s->in);
	free(s->id);
	free(s);
}
