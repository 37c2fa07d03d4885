// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -netdev tap: the guest's frames on a Linux tap interface, as QEMU's
 * (ifname=, fd=, script=, downscript=, vnet_hdr=).
 *
 * No thread and no queue: the tap's fd is rx_fd itself, the kernel's
 * queue behind it is the bound (the interface's txqueuelen; what it
 * drops is in its own counters), and a frame from the guest is one
 * writev().  With the virtio-net header (IFF_VNET_HDR, on when the
 * kernel has it) frames carry checksum and segmentation offloads both
 * ways, so a guest and the host move 64 KiB TCP segments and leave
 * checksums half done, as they would between two of the host's own
 * interfaces.
 *
 * A frame for the guest is read straight into the guest's buffers
 * (recv, one readv()) when the NIC holds buffers for the longest frame a
 * tap gives; otherwise into one buffer here (peek) and copied into the
 * guest's chains when the NIC takes it, since the NIC then chooses chains
 * by the frame's length, which a tap tells only by reading the frame.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/net.h"
#include "util/compiler.h"
#include "util/log.h"

extern char **environ;

/* ---- the options ---- */

/* QEMU's defaults: the scripts its packages install, which set the interface up. */
#define TAP_SCRIPT "/etc/qemu-ifup"
#define TAP_DOWNSCRIPT "/etc/qemu-ifdown"

/* Three ways, unlike a bool: not given means "where the kernel has it". */
static const char *const onoff[] = { "on", "off", NULL };
static const int onoff_vals[] = { 1, 0 };

#define F(f, t) OPT_AT(struct netdev_tap_cfg, f, t)
static const struct opt_prop tap_props[] = {
	{ "id", OPT_ID, F(head.id, char *), OPT_REQUIRED,
	  .help = "the name -device virtio-net-pci,netdev= uses" },
	{ "ifname", OPT_STR, F(ifname, char *), OPT_PRINTABLE, .max = IFNAMSIZ - 1,
	  .help = "the tap interface, made if it does not exist (default: the kernel's tapN)" },
	{ "fd", OPT_STR, F(fd, char *),
	  .help = "an inherited tap's number (/dev/net/tun after TUNSETIFF), instead of ifname=" },
	{ "script", OPT_STR, F(script, char *), .def = TAP_SCRIPT,
	  .help = "run with the interface's name once it exists; no: none" },
	{ "downscript", OPT_STR, F(downscript, char *), .def = TAP_DOWNSCRIPT,
	  .help = "run with the interface's name when brisk exits; no: none" },
	{ "vnet_hdr", OPT_ENUM, F(vnet_hdr, int), .names = onoff, .vals = onoff_vals,
	  .def = "on where the kernel has it",
	  .help = "frames carry the virtio-net header: checksum and TSO offloads" },
	{ "vhost", OPT_BOOL, F(vhost, bool), .def = "off",
	  .help = "vhost-net (on is refused: brisk serves the queues itself)" },
	{ "queues", OPT_UINT, F(queues, unsigned), .min = 1, .max = 1024, .def = "1",
	  .help = "queue pairs (one)" },
	{ NULL },
};
#undef F

const struct opt_spec netdev_tap_spec = { "-netdev tap", NULL, tap_props };
const struct netdev_tap_cfg netdev_tap_defaults = { .vnet_hdr = -1, .queues = 1 };

/* Every refusal's one line, "-netdev tap,id=ID: ...". */
#define bad(c, ...) netdev_error("tap", (c)->head.id, __VA_ARGS__)

static const char *script_of(const char *s, const char *def)
{
	s = s ? s : def;
	return strcmp(s, "no") ? s : NULL;
}

static int fd_number(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || end == s || v < 0 || v > INT_MAX ? -1 : (int)v;
}

static int check_script(const struct netdev_tap_cfg *c, const char *key, const char *path,
			bool dflt)
{
	struct stat st;

	if (!path)
		return 0;
	errno = 0;
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, X_OK) < 0)
		return bad(c, "%s=%s%s: %s (%s=no runs none)", key, path, dflt ? " (the default)" : "",
			   errno ? strerror(errno) : "not an executable file", key);
	return 0;
}

static int check_fd(const struct netdev_tap_cfg *c)
{
	struct ifreq ifr = { 0 };
	int fd = fd_number(c->fd);

	if (c->ifname)
		return bad(c, "fd= and ifname= together: the fd's tap has its name");
	if (c->script || c->downscript)
		return bad(c, "script= and downscript= are ifname='s: an inherited tap is set up by "
			   "whoever opened it");
	if (fd < 0)
		return bad(c, "fd=%s: not a file descriptor's number", c->fd);
	if (fcntl(fd, F_GETFD) < 0)
		return bad(c, "fd=%s: %s", c->fd, strerror(errno));
	if (ioctl(fd, TUNGETIFF, &ifr) < 0)
		return bad(c, "fd=%s: not a tap (%s)", c->fd, strerror(errno));
	if ((ifr.ifr_flags & (IFF_TAP | IFF_TUN)) != IFF_TAP || !(ifr.ifr_flags & IFF_NO_PI))
		return bad(c, "fd=%s: %s is not a tap without packet information (IFF_TAP | IFF_NO_PI)",
			   c->fd, ifr.ifr_name);
	if (c->vnet_hdr == 0 && ifr.ifr_flags & IFF_VNET_HDR)
		return bad(c, "fd=%s: vnet_hdr=off, but the tap was opened with IFF_VNET_HDR", c->fd);
	if (c->vnet_hdr == 1 && !(ifr.ifr_flags & IFF_VNET_HDR))
		return bad(c, "fd=%s: vnet_hdr=on, but the tap was opened without IFF_VNET_HDR", c->fd);
	return 0;
}

int netdev_tap_check(void *cfg)
{
	struct netdev_tap_cfg *c = cfg;

	if (c->vhost)
		return bad(c, "vhost=on: brisk has no vhost-net; it serves the queues itself (vhost=off)");
	if (c->queues > 1)
		return bad(c, "queues=%u: brisk's virtio-net has one queue pair", c->queues);
	if (c->fd)
		return check_fd(c);
	if (c->ifname && strchr(c->ifname, '/'))
		return bad(c, "ifname=%s: an interface's name has no '/'", c->ifname);
	if (check_script(c, "script", script_of(c->script, TAP_SCRIPT), !c->script) < 0)
		return -1;
	return check_script(c, "downscript", script_of(c->downscript, TAP_DOWNSCRIPT),
			    !c->downscript);
}

/* ---- the back end ---- */

/* The header, an Ethernet header with a VLAN tag, and the largest IP datagram; one more
 * byte tells a frame that filled the buffer from one cut short. */
#define TAP_BUF (NETDEV_VNET_HDR_LEN + 18 + 65535 + 1)

struct tap {
	struct netdev nd;
	char ifname[IFNAMSIZ];
	char *downscript;	/* NULL: none */
	size_t len;		/* the frame read for the guest, 0: none */
	bool said;		/* a failed offload change was reported */
	uint8_t buf[TAP_BUF];
};

/* Runs path with the interface's name, as QEMU's scripts expect; 0 when it exits 0. */
static int run_script(const char *id, const char *path, const char *ifname)
{
	char *argv[] = { (char *)path, (char *)ifname, NULL };
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid;
	int st, err;

	/* brisk's threads block signals; the script gets the defaults. */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	err = posix_spawn(&pid, path, NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	if (err) {
		error_report("-netdev tap,id=%s: cannot run %s: %s", id, path, strerror(err));
		return -1;
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			error_report("-netdev tap,id=%s: %s: %s", id, path, strerror(errno));
			return -1;
		}
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st))
		error_report("-netdev tap,id=%s: %s %s exited with status %d", id, path, ifname,
			     WEXITSTATUS(st));
	else
		error_report("-netdev tap,id=%s: %s %s was killed by signal %d", id, path, ifname,
			     WTERMSIG(st));
	return -1;
}

/* A frame of len bytes (the header included) is one a tap takes. */
static bool tap_frame_len_ok(const struct tap *t, size_t len)
{
	size_t hl = t->nd.vnet_hdr_len;

	return len >= hl + 14 && len <= hl + 14 + 65535;
}

static bool tap_send(struct netdev *nd, const struct iovec *iov, unsigned n, size_t len)
{
	struct tap *t = container_of(nd, struct tap, nd);
	ssize_t w;

	if (!tap_frame_len_ok(t, len) || n > IOV_MAX)
		return false;
	/*
	 * Never blocks: a tap takes a frame or drops it.  EIO while the
	 * interface is down, EINVAL for a header the kernel refuses: both
	 * the guest's loss alone, counted by the NIC.
	 */
	do
		w = writev(nd->rx_fd, iov, (int)n);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)len;
}

/* The tap's interface is gone (deleted): nothing more comes, and its fd stays readable. */
static void tap_gone(struct tap *t, int err)
{
	error_report("-netdev tap,id=%s: %s: %s; no more frames for the guest", t->nd.id,
		     t->ifname, strerror(err));
	t->nd.rx_gone = true;
}

/*
 * One frame into iov: its length, or -1 when none waits (EAGAIN) or the
 * interface is gone (said once, and no longer read).
 */
static ssize_t tap_readv(struct tap *t, const struct iovec *iov, unsigned n)
{
	for (;;) {
		ssize_t r = readv(t->nd.rx_fd, iov, (int)n);

		if (r >= 0)
			return r;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			tap_gone(t, errno);
		return -1;
	}
}

static size_t tap_peek(struct netdev *nd)
{
	struct tap *t = container_of(nd, struct tap, nd);
	const struct iovec v = { t->buf, sizeof(t->buf) };

	while (!t->len && !nd->rx_gone) {
		ssize_t r = tap_readv(t, &v, 1);

		if (r < 0)
			break;
		if (tap_frame_len_ok(t, (size_t)r))
			t->len = (size_t)r;
		else
			__atomic_fetch_add(&nd->rx_dropped, 1, __ATOMIC_RELAXED);
	}
	return t->len;
}

static void tap_take(struct netdev *nd, const struct iovec *iov, unsigned n)
{
	struct tap *t = container_of(nd, struct tap, nd);
	size_t off = 0;

	for (unsigned i = 0; iov && i < n && off < t->len; i++) {
		size_t k = iov[i].iov_len < t->len - off ? iov[i].iov_len : t->len - off;

		memcpy(iov[i].iov_base, t->buf + off, k);
		off += k;
	}
	t->len = 0;
}

/*
 * tun copies what fits of a frame into a shorter vector, drops the rest,
 * and says how much it copied: a read that fills the vector may be a cut
 * frame, dropped (net.h: the NIC leaves a byte to spare).
 */
static size_t tap_recv(struct netdev *nd, const struct iovec *iov, unsigned n, size_t cap)
{
	struct tap *t = container_of(nd, struct tap, nd);

	if (t->len) {
		size_t len = t->len;

		tap_take(nd, iov, n);
		return len;
	}
	while (!nd->rx_gone) {
		ssize_t r = tap_readv(t, iov, n);

		if (r < 0)
			break;
		if ((size_t)r < cap && tap_frame_len_ok(t, (size_t)r))
			return (size_t)r;
		__atomic_fetch_add(&nd->rx_dropped, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

static void tap_set_offload(struct netdev *nd, unsigned offloads)
{
	struct tap *t = container_of(nd, struct tap, nd);
	unsigned f = 0;

	if (offloads & NETDEV_OFFLOAD_CSUM)
		f |= TUN_F_CSUM;
	if (offloads & NETDEV_OFFLOAD_TSO4)
		f |= TUN_F_TSO4;
	if (offloads & NETDEV_OFFLOAD_TSO6)
		f |= TUN_F_TSO6;
	if (offloads & NETDEV_OFFLOAD_ECN)
		f |= TUN_F_TSO_ECN;
	/* Refused, the kernel keeps doing the work itself: slower, never wrong. */
	if (ioctl(nd->rx_fd, TUNSETOFFLOAD, f) < 0 && !t->said) {
		t->said = true;
		error_report("-netdev tap,id=%s: %s: the kernel refused offloads 0x%x: %s",
			     nd->id, t->ifname, f, strerror(errno));
	}
}

static void tap_free(struct netdev *nd)
{
	struct tap *t = container_of(nd, struct tap, nd);

	/* As QEMU's, while the interface still exists (a tap brisk made goes with its fd). */
	if (t->downscript)
		run_script(nd->id, t->downscript, t->ifname);
	close(nd->rx_fd);
	free(t->downscript);
	free((char *)nd->id);
	free(t);
}

static const struct netdev_ops tap_ops = {
	.send = tap_send,
	.peek = tap_peek,
	.take = tap_take,
	.recv = tap_recv,
	.set_offload = tap_set_offload,
	.free = tap_free,
};

/* Opens (or makes) the tap ifname names; -1 after one line. */
static int tap_open(const struct netdev_tap_cfg *c, char *ifname, bool *vnet)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	unsigned features = 0;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return bad(c, "/dev/net/tun: %s", strerror(errno));
	if (ioctl(fd, TUNGETFEATURES, &features) < 0)
		features = 0;
	*vnet = c->vnet_hdr == 1 || (c->vnet_hdr < 0 && features & IFF_VNET_HDR);
	if (*vnet && !(features & IFF_VNET_HDR)) {
		close(fd);
		return bad(c, "vnet_hdr=on: this kernel's tap has no virtio-net header");
	}
	if (*vnet)
		ifr.ifr_flags |= IFF_VNET_HDR;
	/* No name: the kernel picks the next tapN, as QEMU asks it to. */
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", c->ifname ? c->ifname : "tap%d");
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		int err = errno;

		close(fd);
		return bad(c, "%s: %s%s", c->ifname ? c->ifname : "a new tap", strerror(err),
			   err == EPERM ? " (making or opening a tap takes CAP_NET_ADMIN, or a "
			   "tap made for this user: ip tuntap add mode tap user USER)" : "");
	}
	memcpy(ifname, ifr.ifr_name, IFNAMSIZ);
	ifname[IFNAMSIZ - 1] = 0;
	return fd;
}

/* An inherited tap, which check_fd() looked at. */
static int tap_adopt(const struct netdev_tap_cfg *c, char *ifname, bool *vnet)
{
	struct ifreq ifr = { 0 };
	int fd = fd_number(c->fd);

	if (ioctl(fd, TUNGETIFF, &ifr) < 0)
		return bad(c, "fd=%s: %s", c->fd, strerror(errno));
	*vnet = ifr.ifr_flags & IFF_VNET_HDR;
	memcpy(ifname, ifr.ifr_name, IFNAMSIZ);
	ifname[IFNAMSIZ - 1] = 0;
	/* Like every fd brisk holds, no child inherits it from here on. */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return bad(c, "fd=%s: %s", c->fd, strerror(errno));
	return fd;
}

/* The header's size, and no offloads until the guest takes some. */
static int tap_setup(const struct netdev_tap_cfg *c, struct tap *t, bool vnet)
{
	int fd = t->nd.rx_fd, sz = NETDEV_VNET_HDR_LEN;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return bad(c, "%s: %s", t->ifname, strerror(errno));
	t->nd.rx_max_len = 14 + 65535;
	if (!vnet)
		return 0;
	if (ioctl(fd, TUNSETVNETHDRSZ, &sz) < 0 || ioctl(fd, TUNSETOFFLOAD, 0) < 0)
		return bad(c, "%s: the virtio-net header: %s", t->ifname, strerror(errno));
	t->nd.vnet_hdr_len = NETDEV_VNET_HDR_LEN;
	t->nd.rx_max_len = NETDEV_VNET_HDR_LEN + 14 + 65535;
	return 0;
}

struct netdev *netdev_tap_new(const struct netdev_tap_cfg *c)
{
	struct tap *t = calloc(1, sizeof(*t));
	const char *up = c->fd ? NULL : script_of(c->script, TAP_SCRIPT);
	const char *down = c->fd ? NULL : script_of(c->downscript, TAP_DOWNSCRIPT);
	bool vnet = false;

	if (!t || !(t->nd.id = strdup(c->head.id)) || (down && !(t->downscript = strdup(down)))) {
		error_report("-netdev tap,id=%s: out of memory", c->head.id);
		goto fail;
	}
	t->nd.ops = &tap_ops;
	t->nd.rx_fd = c->fd ? tap_adopt(c, t->ifname, &vnet) : tap_open(c, t->ifname, &vnet);
	if (t->nd.rx_fd < 0)
		goto fail;
	if (tap_setup(c, t, vnet) < 0 || (up && run_script(c->head.id, up, t->ifname) < 0)) {
		/* The up script did not finish its work: no down script to undo it. */
		free(t->downscript);
		t->downscript = NULL;
		tap_free(&t->nd);
		return NULL;
	}
	return &t->nd;
fail:
	if (t) {
		free((char *)t->nd.id);
		free(t->downscript);
	}
	free(t);
	return NULL;
}
