// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -netdev user: QEMU's user networking on libslirp, with QEMU's options
 * and defaults (10.0.2.0/24, the host at .2, DNS at .3, DHCP from .15).
 *
 * The Slirp instance belongs to one event loop, and no other thread ever
 * calls into it: libslirp has no locking, and it calls back (send_packet,
 * timers, guest_error) from inside slirp_input() and its poll.  That loop
 * is the NIC's own when the NIC gives one (brisk's main loop, as QEMU runs
 * slirp in its main loop): a frame then goes from the guest's kick to
 * slirp and its answer back to the guest with no thread woken on the way,
 * which on a host where every wake-up is an emulated interrupt is most of
 * a round trip.  Without one the back end makes a loop on a thread of its
 * own.  Either way slirp_input() never runs inside a NIC's handler, where
 * its callbacks would run inside the NIC's locks: frames cross between the
 * two through two bounded queues, each under its own lock, whose eventfds
 * the loop watches, and the back end touches nothing of the NIC's but the
 * rx_fd it writes.  The NIC in turn only queues and wakes: send() never
 * waits on slirp.
 *
 * slirp asks for its sockets afresh before each wait
 * (slirp_pollfds_fill), a poll(2) set; the loop waits in epoll.  So the
 * back end keeps the set slirp last asked for in an epoll instance of its
 * own, changed only where slirp's answer changed, and the loop watches
 * that one fd; slirp's next timeout is a timerfd.
 *
 * The back end copies a frame once each way, into a queue: send() out of
 * the NIC's buffers (slirp_input() then reads the queued copy in place),
 * send_packet out of the buffer slirp lends it.  Those buffers cannot wait
 * for the other side: slirp reuses its own once send_packet returns, and
 * the guest gets its descriptors back once send() does.  On the way to the
 * guest, take() copies the queued frame into the guest's buffers, which
 * only the NIC's thread knows: that is the one copy that writes guest
 * memory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifdef CONFIG_SLIRP
#include <libslirp.h>
#endif

#include "net/net.h"
#include "net/queue.h"
#include "util/compiler.h"
#include "util/iothread.h"
#include "util/log.h"

#define F(f, t) OPT_AT(struct netdev_user_cfg, f, t)
static const struct opt_prop user_props[] = {
	{ "id", OPT_ID, F(head.id, char *), OPT_REQUIRED,
	  .help = "the name -device virtio-net-pci,netdev= uses" },
	{ "ipv4", OPT_BOOL, F(ipv4, bool), .def = "on", .help = "IPv4 on the guest's network" },
	{ "net", OPT_STR, F(net, char *), .def = "10.0.2.0/24",
	  .help = "the guest's network: ADDR/BITS, ADDR/MASK, or ADDR (its class's mask)" },
	{ "host", OPT_STR, F(host, char *), .def = "net's .2",
	  .help = "the host's address there (its 127.0.0.1 to the guest)" },
	{ "dns", OPT_STR, F(dns, char *), .def = "net's .3",
	  .help = "the DNS relay's address (to the host's resolvers)" },
	{ "dhcpstart", OPT_STR, F(dhcpstart, char *), .def = "net's .15",
	  .help = "the first of the 16 addresses DHCP gives out" },
	{ "restrict", OPT_BOOL, F(restrict_, bool), .def = "off",
	  .help = "on: the guest reaches neither the host nor beyond (hostfwd= still works)" },
	{ "hostname", OPT_STR, F(hostname, char *), OPT_PRINTABLE, .max = 255,
	  .def = "none", .help = "the host name DHCP gives the guest" },
	{ "domainname", OPT_STR, F(domainname, char *), OPT_PRINTABLE, .max = 255,
	  .def = "none", .help = "the domain name DHCP gives the guest" },
	{ "dnssearch", OPT_LIST, F(dnssearch, struct opt_list), OPT_PRINTABLE,
	  .def = "none", .help = "a domain of DHCP's search list" },
	{ "ipv6", OPT_BOOL, F(ipv6, bool), .def = "on", .help = "IPv6 on the guest's network" },
	{ "ipv6-net", OPT_STR, F(ipv6_net, char *), .def = "fec0::/64",
	  .help = "the guest's IPv6 prefix: ADDR[/LEN], LEN 0 to 126" },
	{ "ipv6-host", OPT_STR, F(ipv6_host, char *), .def = "ipv6-net's ::2",
	  .help = "the host's IPv6 address there" },
	{ "ipv6-dns", OPT_STR, F(ipv6_dns, char *), .def = "ipv6-net's ::3",
	  .help = "the DNS relay's IPv6 address" },
	{ "hostfwd", OPT_LIST, F(hostfwd, struct opt_list), .def = "none",
	  .help = "[tcp|udp]:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT, a host port "
		  "forwarded to the guest (HOSTADDR: any, GUESTADDR: dhcpstart=)" },
	{ "tftp", OPT_STR, F(tftp, char *), .def = "none",
	  .help = "a directory the TFTP server serves, read-only" },
	{ "bootfile", OPT_STR, F(bootfile, char *), .max = 127, .def = "none",
	  .help = "the boot file name DHCP gives (PXE, with tftp=)" },
	{ "tftp-server-name", OPT_STR, F(tftp_server_name, char *), OPT_PRINTABLE,
	  .max = 255, .def = "none", .help = "the TFTP server name DHCP gives (option 66)" },
	{ NULL },
};
#undef F

const struct opt_spec netdev_user_spec = { "-netdev user", NULL, user_props };
const struct netdev_user_cfg netdev_user_defaults = { .ipv4 = true, .ipv6 = true };

#ifndef CONFIG_SLIRP

#define NO_SLIRP "-netdev user: user networking is not in this build (brisk was " \
		 "built without libslirp)"

int netdev_user_check(void *cfg)
{
	(void)cfg;
	error_report(NO_SLIRP);
	return -1;
}

struct netdev *netdev_user_new(const struct netdev_user_cfg *cfg, struct iothread *loop)
{
	(void)cfg;
	(void)loop;
	error_report(NO_SLIRP);
	return NULL;
}

#else

/* ---- the options, as addresses ---- */

/* What the options say; check() and new() both derive it from the config. */
struct user_addrs {
	struct in_addr net, mask, host, dns, dhcp;	/* network order */
	struct in6_addr net6, host6, dns6;
	unsigned len6;
};

/* One rule of hostfwd=. */
struct fwd {
	bool udp;
	struct sockaddr_in host, guest;
};

/* Every refusal's one line, "-netdev user,id=ID: ...". */
#define bad(c, ...) netdev_error("user", (c)->head.id, __VA_ARGS__)

/*
 * inet_aton, as QEMU reads every IPv4 address of -netdev user (so "10.2"
 * is 10.0.0.2), but for the trailing blank and junk glibc lets through.
 */
static bool parse4(const char *s, struct in_addr *a)
{
	return !strpbrk(s, " \t\n\v\f\r") && inet_aton(s, a);
}

/* QEMU's mask for a net= without one: the address's class, as it was. */
static uint32_t class_mask(uint32_t a)
{
	if (!(a & 0x80000000))
		return 0xff000000;
	if ((a & 0xfff00000) == 0xac100000)
		return 0xfff00000;	/* 172.16.0.0/12 */
	if ((a & 0xc0000000) == 0x80000000)
		return 0xffff0000;
	if ((a & 0xffff0000) == 0xc0a80000)
		return 0xffff0000;	/* 192.168.0.0/16 */
	if ((a & 0xffff0000) == 0xc6120000)
		return 0xfffe0000;	/* 198.18.0.0/15 */
	if ((a & 0xe0000000) == 0xe0000000)
		return 0xffffff00;
	return 0xfffffff0;
}

static unsigned mask_len(struct in_addr m)
{
	return (unsigned)__builtin_popcount(m.s_addr);
}

/* "/BITS" (QEMU's 4 to 32) or "/A.B.C.D" (contiguous) into *mask. */
static int parse_mask(const struct netdev_user_cfg *c, const char *s, struct in_addr *mask)
{
	char *end;
	unsigned long bits = strtoul(s, &end, 10);

	if (*s >= '0' && *s <= '9' && !*end) {
		if (bits < 4 || bits > 32) {
			bad(c, "net=%s: the prefix length is 4 to 32", c->net);
			return -1;
		}
		mask->s_addr = htonl((uint32_t)(0xffffffffull << (32 - bits)));
		return 0;
	}
	if (parse4(s, mask)) {
		/* The host part's bits: all ones below the network's, so m + 1 is 2^k. */
		uint32_t m = ~ntohl(mask->s_addr);

		if (!(m & (m + 1)) && mask_len(*mask) >= 4)
			return 0;
	}
	bad(c, "net=%s: bad netmask '%s' (BITS, 4 to 32, or a contiguous A.B.C.D)", c->net, s);
	return -1;
}

static int parse_net(const struct netdev_user_cfg *c, struct user_addrs *a)
{
	char buf[64];
	char *slash;

	if (snprintf(buf, sizeof(buf), "%s", c->net) >= (int)sizeof(buf)) {
		bad(c, "net=%s: not ADDR[/MASK]", c->net);
		return -1;
	}
	if ((slash = strchr(buf, '/')))
		*slash = '\0';
	if (!parse4(buf, &a->net)) {
		bad(c, "net=%s: bad address '%s'", c->net, buf);
		return -1;
	}
	if (!slash)
		a->mask.s_addr = htonl(class_mask(ntohl(a->net.s_addr)));
	else if (parse_mask(c, slash + 1, &a->mask) < 0)
		return -1;
	a->net.s_addr &= a->mask.s_addr;
	return 0;
}

static bool in_net(const struct user_addrs *a, struct in_addr x)
{
	return (x.s_addr & a->mask.s_addr) == a->net.s_addr;
}

/* "10.0.2.0/24" */
static const char *net_str(const struct user_addrs *a, char *buf, size_t size)
{
	char n[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->net, n, sizeof(n));
	snprintf(buf, size, "%s/%u", n, mask_len(a->mask));
	return buf;
}

/* key=val, one more address of the network, into *x when given. */
static int net_addr(const struct netdev_user_cfg *c, const struct user_addrs *a,
		    const char *key, const char *val, struct in_addr *x)
{
	char n[40];

	if (!val)
		return 0;
	if (!parse4(val, x)) {
		bad(c, "%s=%s: not an IPv4 address", key, val);
		return -1;
	}
	/* As QEMU: the DNS relay may sit outside the net unless restrict=on. */
	if (!in_net(a, *x) && (strcmp(key, "dns") || c->restrict_)) {
		bad(c, "%s=%s is not in net=%s", key, val, net_str(a, n, sizeof(n)));
		return -1;
	}
	return 0;
}

/* The host, DNS and DHCP addresses of the net, as QEMU derives and checks them. */
static int resolve4(const struct netdev_user_cfg *c, struct user_addrs *a)
{
	a->net.s_addr = htonl(0x0a000200);
	a->mask.s_addr = htonl(0xffffff00);
	if (c->net && parse_net(c, a) < 0)
		return -1;
	a->host.s_addr = a->net.s_addr | (htonl(0x0202) & ~a->mask.s_addr);
	a->dns.s_addr = a->net.s_addr | (htonl(0x0203) & ~a->mask.s_addr);
	a->dhcp.s_addr = a->net.s_addr | (htonl(0x020f) & ~a->mask.s_addr);
	if (net_addr(c, a, "host", c->host, &a->host) < 0 ||
	    net_addr(c, a, "dns", c->dns, &a->dns) < 0 ||
	    net_addr(c, a, "dhcpstart", c->dhcpstart, &a->dhcp) < 0)
		return -1;
	if (a->dns.s_addr == a->host.s_addr) {
		bad(c, "dns= and host= are one address (%s)", inet_ntoa(a->dns));
		return -1;
	}
	if (a->dhcp.s_addr == a->host.s_addr || a->dhcp.s_addr == a->dns.s_addr) {
		bad(c, "dhcpstart=%s is host='s or dns='s address", inet_ntoa(a->dhcp));
		return -1;
	}
	return 0;
}

/* Keeps the first len bits of x; with set, whether y has the same ones. */
static bool prefix6(struct in6_addr *x, const struct in6_addr *y, unsigned len)
{
	bool same = true;

	for (unsigned i = 0; i < 16; i++) {
		unsigned bits = len > 8 * i ? len - 8 * i : 0;
		uint8_t m = bits >= 8 ? 0xff : (uint8_t)(0xff00 >> bits);

		if (y)
			same &= !((x->s6_addr[i] ^ y->s6_addr[i]) & m);
		else
			x->s6_addr[i] &= m;
	}
	return same;
}

static int parse_net6(const struct netdev_user_cfg *c, struct user_addrs *a)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash, *end;
	unsigned long len = 64;

	if (snprintf(buf, sizeof(buf), "%s", c->ipv6_net) >= (int)sizeof(buf)) {
		bad(c, "ipv6-net=%s: not ADDR[/LEN]", c->ipv6_net);
		return -1;
	}
	if ((slash = strchr(buf, '/'))) {
		*slash = '\0';
		len = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || slash[1] < '0' || slash[1] > '9' || len > 126) {
			bad(c, "ipv6-net=%s: the prefix length is 0 to 126", c->ipv6_net);
			return -1;
		}
	}
	if (inet_pton(AF_INET6, buf, &a->net6) != 1) {
		bad(c, "ipv6-net=%s: bad IPv6 address '%s'", c->ipv6_net, buf);
		return -1;
	}
	a->len6 = (unsigned)len;
	prefix6(&a->net6, NULL, a->len6);
	return 0;
}

/* key=val, an IPv6 address of the prefix (the DNS one may be outside). */
static int net6_addr(const struct netdev_user_cfg *c, struct user_addrs *a,
		     const char *key, const char *val, unsigned low, bool outside_ok,
		     struct in6_addr *x)
{
	char n[INET6_ADDRSTRLEN];

	if (!val) {
		*x = a->net6;
		x->s6_addr[15] |= (uint8_t)low;
		return 0;
	}
	if (inet_pton(AF_INET6, val, x) != 1) {
		bad(c, "%s=%s: not an IPv6 address", key, val);
		return -1;
	}
	if (!prefix6(x, &a->net6, a->len6) && !outside_ok) {
		inet_ntop(AF_INET6, &a->net6, n, sizeof(n));
		bad(c, "%s=%s is not in ipv6-net=%s/%u", key, val, n, a->len6);
		return -1;
	}
	return 0;
}

static int resolve6(const struct netdev_user_cfg *c, struct user_addrs *a)
{
	inet_pton(AF_INET6, "fec0::", &a->net6);
	a->len6 = 64;
	if (c->ipv6_net && parse_net6(c, a) < 0)
		return -1;
	/* As QEMU: the DNS relay may sit outside the prefix unless restrict=on. */
	return net6_addr(c, a, "ipv6-host", c->ipv6_host, 2, false, &a->host6) < 0 ||
	       net6_addr(c, a, "ipv6-dns", c->ipv6_dns, 3, !c->restrict_, &a->dns6) < 0 ?
	       -1 : 0;
}

static int resolve(const struct netdev_user_cfg *c, struct user_addrs *a)
{
	*a = (struct user_addrs){ 0 };
	if (!c->ipv4 && !c->ipv6) {
		bad(c, "ipv4=off and ipv6=off leave the guest no network");
		return -1;
	}
	if (!c->ipv4 && (c->net || c->host || c->dns || c->dhcpstart || c->hostfwd.n)) {
		bad(c, "net=, host=, dns=, dhcpstart= and hostfwd= are IPv4's: ipv4=off "
		    "takes none");
		return -1;
	}
	if (!c->ipv6 && (c->ipv6_net || c->ipv6_host || c->ipv6_dns)) {
		bad(c, "ipv6-net=, ipv6-host= and ipv6-dns= are IPv6's: ipv6=off takes none");
		return -1;
	}
	return resolve4(c, a) < 0 || resolve6(c, a) < 0 ? -1 : 0;
}

/* ---- hostfwd= ---- */

BRISK_PRINTF(3, 4)
static int bad_fwd(const struct netdev_user_cfg *c, const char *rule, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	bad(c, "hostfwd=%s: %s", rule, msg);
	return -1;
}

/* The text of rule up to sep, cut off there; NULL when sep is not in it. */
static char *field(char **p, char sep)
{
	char *s = *p, *e = strchr(s, sep);

	if (!e)
		return NULL;
	*e = '\0';
	*p = e + 1;
	return s;
}

/* QEMU reads a port with base 0 (0x16, 026 and 22 are one port). */
static bool parse_port(const char *s, unsigned *port)
{
	char *end;
	unsigned long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoul(s, &end, 0);
	*port = (unsigned)v;
	return !errno && !*end && v >= 1 && v <= 65535;
}

static int fwd_ends(const struct netdev_user_cfg *c, const struct user_addrs *a,
		    const char *rule, char *haddr, char *hport, char *gaddr,
		    char *gport, struct fwd *f)
{
	unsigned hp, gp;

	f->host.sin_addr.s_addr = htonl(INADDR_ANY);
	if (*haddr && !parse4(haddr, &f->host.sin_addr))
		return bad_fwd(c, rule, "bad host address '%s'", haddr);
	if (!parse_port(hport, &hp))
		return bad_fwd(c, rule, "bad host port '%s' (1 to 65535)", hport);
	f->guest.sin_addr = a->dhcp;
	if (*gaddr && !parse4(gaddr, &f->guest.sin_addr))
		return bad_fwd(c, rule, "bad guest address '%s'", gaddr);
	if (!in_net(a, f->guest.sin_addr))
		return bad_fwd(c, rule, "guest address '%s' is not on the guest's network",
			       gaddr);
	if (!parse_port(gport, &gp))
		return bad_fwd(c, rule, "bad guest port '%s' (1 to 65535)", gport);
	f->host.sin_family = f->guest.sin_family = AF_INET;
	f->host.sin_port = htons((uint16_t)hp);
	f->guest.sin_port = htons((uint16_t)gp);
	return 0;
}

/* QEMU's [tcp|udp]:[HOSTADDR]:HOSTPORT-[GUESTADDR]:GUESTPORT (tcp if left out). */
static int parse_fwd(const struct netdev_user_cfg *c, const struct user_addrs *a,
		     const char *rule, struct fwd *f)
{
	char buf[256], *p = buf, *proto, *haddr, *hport, *gaddr;

	*f = (struct fwd){ 0 };
	if (snprintf(buf, sizeof(buf), "%s", rule) >= (int)sizeof(buf))
		return bad_fwd(c, rule, "longer than %zu bytes", sizeof(buf) - 1);
	if (!(proto = field(&p, ':')))
		return bad_fwd(c, rule, "not [tcp|udp]:[HOSTADDR]:HOSTPORT-[GUESTADDR]:"
			       "GUESTPORT");
	if (strcmp(proto, "tcp") && strcmp(proto, "udp") && *proto)
		return bad_fwd(c, rule, "bad protocol '%s' (tcp or udp)", proto);
	f->udp = !strcmp(proto, "udp");
	if (!(haddr = field(&p, ':')))
		return bad_fwd(c, rule, "no ':' between host address and port");
	if (!(hport = field(&p, '-')))
		return bad_fwd(c, rule, "no '-' between host and guest");
	if (!(gaddr = field(&p, ':')))
		return bad_fwd(c, rule, "no ':' between guest address and port");
	return fwd_ends(c, a, rule, haddr, hport, gaddr, p, f);
}

/* ---- the check ---- */

/* RFC 1035's labels: 1 to 63 bytes each, 253 in all (and a trailing dot). */
static bool domain_ok(const char *d)
{
	size_t label = 0;

	if (strlen(d) > 254)
		return false;
	for (const char *p = d;; p++) {
		if (*p && *p != '.') {
			if (++label > 63)
				return false;
			continue;
		}
		if (!label)
			return !*p && p != d;
		if (!*p)
			return true;
		label = 0;
	}
}

static int check_tftp(const struct netdev_user_cfg *c)
{
	struct stat st;

	if (stat(c->tftp, &st) < 0) {
		bad(c, "tftp=%s: %s", c->tftp, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		bad(c, "tftp=%s: not a directory", c->tftp);
		return -1;
	}
	return 0;
}

static int set_str(char **field, const char *s)
{
	char *copy = strdup(s);

	if (!copy) {
		error_report("out of memory");
		return -1;
	}
	free(*field);
	*field = copy;
	return 0;
}

/* Every address in the config, given or not, in one spelling. */
static int fill_defaults(struct netdev_user_cfg *c, const struct user_addrs *a)
{
	char buf[INET6_ADDRSTRLEN + 8], h[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];

	if (c->ipv4 && (set_str(&c->net, net_str(a, buf, sizeof(buf))) < 0 ||
			set_str(&c->host, inet_ntoa(a->host)) < 0 ||
			set_str(&c->dns, inet_ntoa(a->dns)) < 0 ||
			set_str(&c->dhcpstart, inet_ntoa(a->dhcp)) < 0))
		return -1;
	if (!c->ipv6)
		return 0;
	inet_ntop(AF_INET6, &a->net6, h, sizeof(h));
	snprintf(buf, sizeof(buf), "%s/%u", h, a->len6);
	inet_ntop(AF_INET6, &a->host6, h, sizeof(h));
	inet_ntop(AF_INET6, &a->dns6, d, sizeof(d));
	return set_str(&c->ipv6_net, buf) < 0 || set_str(&c->ipv6_host, h) < 0 ||
	       set_str(&c->ipv6_dns, d) < 0 ? -1 : 0;
}

int netdev_user_check(void *cfg)
{
	struct netdev_user_cfg *c = cfg;
	struct user_addrs a;
	struct fwd f;

	if (resolve(c, &a) < 0)
		return -1;
	for (unsigned i = 0; i < c->hostfwd.n; i++)
		if (parse_fwd(c, &a, c->hostfwd.v[i], &f) < 0)
			return -1;
	for (unsigned i = 0; i < c->dnssearch.n; i++)
		if (!domain_ok(c->dnssearch.v[i])) {
			bad(c, "dnssearch=%s: not a domain name (labels of 1 to 63 bytes)",
			    c->dnssearch.v[i]);
			return -1;
		}
	if (c->tftp && check_tftp(c) < 0)
		return -1;
	return fill_defaults(c, &a);
}

/* ---- the back end ---- */

struct user_timer {
	struct user_timer *next;
	int64_t expire_ms;	/* on clock_ns()'s scale; -1: not armed */
	bool due;		/* expired when this round of timers began */
	SlirpTimerCb cb;	/* timer_new's; NULL: slirp_handle_timer(id) */
	SlirpTimerId id;
	void *cb_opaque;
};

/* An fd the back end's epoll instance watches, and for what (POLL*). */
struct user_watch {
	int fd;
	short events;
};

struct user {
	struct netdev nd;
	char *id;
	Slirp *slirp;
	struct iothread *loop;	/* where slirp runs */
	bool own_loop;		/* made (and started) by the back end */
	bool watched;		/* ep_fd and timer_fd are on the loop */
	bool fed;		/* frames went into slirp this round */
	bool guest_error_said;
	bool timer_failed;	/* timer_add ran out of memory (said once) */
	bool watch_failed;	/* epoll_ctl refused a socket (said once) */
	int wake_fd;		/* send() to the loop: tx has frames */
	int ep_fd;		/* readable while a socket of the next round's set is ready */
	int timer_fd;		/* slirp's next timeout */
	int64_t timer_at_ms;	/* when timer_fd fires; -1: disarmed */
	struct frame_queue rx, tx;
	struct user_timer *timers;
	struct pollfd *pfd;	/* the next round's: wake_fd, then slirp's sockets */
	unsigned npfd, pfd_cap;
	/* What ep_fd watches, sorted by fd; want is the next set, built each round. */
	struct user_watch *watch, *want;
	unsigned nwatch;
};

static int64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The NIC's thread: a frame from the guest, for slirp's loop. */
static bool user_send(struct netdev *nd, const struct iovec *iov, unsigned n, size_t len)
{
	struct user *u = container_of(nd, struct user, nd);

	return fq_send(&u->tx, u->wake_fd, iov, n, len);
}

static size_t user_peek(struct netdev *nd)
{
	return fq_peek(&container_of(nd, struct user, nd)->rx, nd->rx_fd);
}

static void user_take(struct netdev *nd, const struct iovec *iov, unsigned n)
{
	fq_take(&container_of(nd, struct user, nd)->rx, iov, n);
}

static bool user_tx_busy(struct netdev *nd)
{
	return fq_busy(&container_of(nd, struct user, nd)->tx);
}

static void user_free(struct netdev *nd);

static const struct netdev_ops user_ops = {
	.send = user_send,
	.peek = user_peek,
	.take = user_take,
	.tx_busy = user_tx_busy,
	.free = user_free,
};

/* ---- slirp's callbacks: all on slirp's loop (or before it turns) ---- */

static ssize_t cb_send_packet(const void *buf, size_t len, void *opaque)
{
	struct user *u = opaque;

	/* A drop (counted) is no error to slirp: its TCP resends. */
	fq_deliver(&u->rx, &u->nd, buf, len);
	return (ssize_t)len;
}

static void cb_guest_error(const char *msg, void *opaque)
{
	struct user *u = opaque;

	/* Once: the guest can repeat it at will. */
	error_report_once(&u->guest_error_said, "-netdev user,id=%s: the guest: %s "
			  "(said once)", u->id, msg);
}

static int64_t cb_clock_get_ns(void *opaque)
{
	(void)opaque;
	return clock_ns();
}

/*
 * NULL when out of memory, after one line: slirp only hands the timer
 * back to cb_timer_mod and cb_timer_free, which pass over a NULL one, so
 * that timer never fires.  libslirp 4.7 makes its one timer (IPv6's
 * router advertisements) inside slirp_new(), and user_slirp() then
 * gives up on the back end; one made later is only lost.
 */
static struct user_timer *timer_add(struct user *u, SlirpTimerCb cb, SlirpTimerId id,
				    void *cb_opaque)
{
	struct user_timer *t = malloc(sizeof(*t));

	if (!t) {
		error_report_once(&u->timer_failed, "-netdev user,id=%s: out of memory "
				  "for a libslirp timer (said once)", u->id);
		return NULL;
	}
	*t = (struct user_timer){ u->timers, -1, false, cb, id, cb_opaque };
	u->timers = t;
	return t;
}

static void *cb_timer_new(SlirpTimerCb cb, void *cb_opaque, void *opaque)
{
	return timer_add(opaque, cb, (SlirpTimerId)0, cb_opaque);
}

static void *cb_timer_new_opaque(SlirpTimerId id, void *cb_opaque, void *opaque)
{
	return timer_add(opaque, NULL, id, cb_opaque);
}

static void cb_timer_free(void *timer, void *opaque)
{
	struct user *u = opaque;

	for (struct user_timer **p = &u->timers; *p; p = &(*p)->next) {
		if (*p == timer) {
			*p = ((struct user_timer *)timer)->next;
			free(timer);
			return;
		}
	}
}

static void cb_timer_mod(void *timer, int64_t expire_ms, void *opaque)
{
	struct user_timer *t = timer;

	(void)opaque;
	if (t)		/* NULL: timer_add's, out of memory */
		t->expire_ms = expire_ms < 0 ? 0 : expire_ms;
}

static struct user_watch *watch_find(struct user *u, int fd)
{
	unsigned lo = 0, hi = u->nwatch;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (u->watch[mid].fd == fd)
			return &u->watch[mid];
		if (u->watch[mid].fd < fd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * slirp says so before it closes a socket, and when it opens one: either
 * way ep_fd forgets that number, so that a socket reusing it is added
 * afresh, never taken for the one ep_fd watched.
 */
static void cb_poll_fd(int fd, void *opaque)
{
	struct user *u = opaque;
	struct user_watch *w = watch_find(u, fd);

	if (!w)
		return;
	epoll_ctl(u->ep_fd, EPOLL_CTL_DEL, fd, NULL);
	memmove(w, w + 1, (size_t)(u->watch + u->nwatch - (w + 1)) * sizeof(*w));
	u->nwatch--;
}

/*
 * Called from inside slirp on its loop, when a socket's buffer has room
 * again: the round's own slirp_pollfds_fill, at its end, sees it.
 */
static void cb_notify(void *opaque)
{
	(void)opaque;
}

static const SlirpCb user_cb = {
	.send_packet = cb_send_packet,
	.guest_error = cb_guest_error,
	.clock_get_ns = cb_clock_get_ns,
	.timer_new = cb_timer_new,
	.timer_free = cb_timer_free,
	.timer_mod = cb_timer_mod,
	.register_poll_fd = cb_poll_fd,
	.unregister_poll_fd = cb_poll_fd,
	.notify = cb_notify,
	.timer_new_opaque = cb_timer_new_opaque,
};

/* ---- slirp's loop ---- */

static int cb_add_poll(int fd, int events, void *opaque)
{
	struct user *u = opaque;
	short ev = 0;

	if (u->npfd == u->pfd_cap) {
		unsigned cap = 2 * u->pfd_cap;
		struct pollfd *p = realloc(u->pfd, cap * sizeof(*p));
		struct user_watch *w = p ? realloc(u->watch, cap * sizeof(*w)) : NULL;
		struct user_watch *x = w ? realloc(u->want, cap * sizeof(*x)) : NULL;

		/* The three grow together: watch_sync() swaps watch and want. */
		if (p)
			u->pfd = p;
		if (w)
			u->watch = w;
		/* -1: slirp leaves the socket out of this round. */
		if (!x)
			return -1;
		u->want = x;
		u->pfd_cap = cap;
	}
	ev |= events & SLIRP_POLL_IN ? POLLIN : 0;
	ev |= events & SLIRP_POLL_OUT ? POLLOUT : 0;
	ev |= events & SLIRP_POLL_PRI ? POLLPRI : 0;
	u->pfd[u->npfd] = (struct pollfd){ .fd = fd, .events = ev };
	return (int)u->npfd++;
}

static int cb_get_revents(int idx, void *opaque)
{
	struct user *u = opaque;
	short rev = u->pfd[idx].revents;

	return (rev & POLLIN ? SLIRP_POLL_IN : 0) | (rev & POLLOUT ? SLIRP_POLL_OUT : 0) |
	       (rev & POLLPRI ? SLIRP_POLL_PRI : 0) | (rev & POLLERR ? SLIRP_POLL_ERR : 0) |
	       (rev & POLLHUP ? SLIRP_POLL_HUP : 0);
}

/* How long poll() may wait: slirp's own timeout, or the nearest timer. */
static int poll_timeout(const struct user *u, uint32_t slirp_ms)
{
	int64_t now = clock_ns() / 1000000;
	int64_t ms = slirp_ms == UINT32_MAX ? INT32_MAX : slirp_ms;

	/* What the last frames unblocked (an ARP reply frees the packets
	 * that waited for it) goes out at the end of slirp_pollfds_poll. */
	if (u->fed)
		return 0;
	for (const struct user_timer *t = u->timers; t; t = t->next)
		if (t->expire_ms >= 0 && t->expire_ms - now < ms)
			ms = t->expire_ms - now;
	return ms < 0 ? 0 : (int)ms;
}

/* Timers expired at the start fire; one a callback re-arms waits a round. */
static void run_timers(struct user *u)
{
	int64_t now = clock_ns() / 1000000;
	struct user_timer *t;

	for (t = u->timers; t; t = t->next)
		t->due = t->expire_ms >= 0 && t->expire_ms <= now;
	for (;;) {
		for (t = u->timers; t && !t->due; t = t->next)
			;
		if (!t)
			return;
		t->due = false;
		t->expire_ms = -1;
		if (t->cb)
			t->cb(t->cb_opaque);
		else
			slirp_handle_timer(u->slirp, t->id, t->cb_opaque);
	}
}

/* The guest's frames, in the order they came. */
static void feed(struct user *u)
{
	struct frame *f;

	if (u->pfd[0].revents & POLLIN)
		eventfd_clear(u->wake_fd);
	u->fed = false;
	while ((f = fq_pop(&u->tx))) {
		slirp_input(u->slirp, f->data, (int)f->len);
		free(f);
		u->fed = true;
	}
}

static int watch_cmp(const void *a, const void *b)
{
	const struct user_watch *x = a, *y = b;

	return (x->fd > y->fd) - (x->fd < y->fd);
}

static bool watch_ctl(struct user *u, int op, const struct user_watch *w)
{
	struct epoll_event ev = { .events = (uint32_t)w->events, .data.fd = w->fd };

	if (epoll_ctl(u->ep_fd, op, w->fd, &ev) == 0)
		return true;
	/* Closed behind slirp's back, or a number reused: the other verb does. */
	if (errno == EEXIST || errno == ENOENT)
		return epoll_ctl(u->ep_fd, op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD : EPOLL_CTL_ADD,
				 w->fd, &ev) == 0;
	return false;
}

/*
 * ep_fd made to watch this round's set (u->pfd), changing only what
 * changed: in a steady stream slirp asks for the same sockets each round.
 * A socket epoll refuses (out of memory) is left out and tried again the
 * next round; slirp's timeout still brings that round.
 */
static void watch_sync(struct user *u)
{
	unsigned n = 0, i = 0, j = 0, kept = 0;

	for (unsigned k = 0; k < u->npfd; k++)
		u->want[n++] = (struct user_watch){ u->pfd[k].fd, u->pfd[k].events };
	qsort(u->want, n, sizeof(*u->want), watch_cmp);
	for (unsigned k = 0; k < n; k++) {
		if (kept && u->want[kept - 1].fd == u->want[k].fd)
			u->want[kept - 1].events |= u->want[k].events;
		else
			u->want[kept++] = u->want[k];
	}
	n = kept, kept = 0;
	while (i < u->nwatch || j < n) {
		struct user_watch *w = i < u->nwatch ? &u->watch[i] : NULL;
		struct user_watch *x = j < n ? &u->want[j] : NULL;
		bool ok = true;

		if (w && (!x || w->fd < x->fd)) {
			epoll_ctl(u->ep_fd, EPOLL_CTL_DEL, w->fd, NULL);
			i++;
			continue;
		}
		if (!w || x->fd < w->fd)
			ok = watch_ctl(u, EPOLL_CTL_ADD, x);
		else if (w->events != x->events)
			ok = watch_ctl(u, EPOLL_CTL_MOD, x);
		if (w && w->fd == x->fd)
			i++;
		j++;
		if (ok)
			u->want[kept++] = *x;
		else
			error_report_once(&u->watch_failed, "-netdev user,id=%s: cannot watch "
					  "a socket: %s (said once)", u->id, strerror(errno));
	}
	struct user_watch *t = u->watch;

	u->watch = u->want;
	u->want = t;
	u->nwatch = kept;
}

/* timer_fd armed for ms from now, unless it fires sooner already. */
static void timer_arm(struct user *u, int ms)
{
	int64_t now = clock_ns() / 1000000, at = now + ms;
	struct itimerspec its = { .it_value = { ms / 1000, (long)(ms % 1000) * 1000000 } };

	/* Left armed when nothing is due: a round too many finds nothing. */
	if (ms == INT32_MAX || (u->timer_at_ms >= now && u->timer_at_ms <= at))
		return;
	/* An early fire costs one round that finds nothing; a late one, slirp's timers. */
	if (timerfd_settime(u->timer_fd, 0, &its, NULL) == 0)
		u->timer_at_ms = at;
}

/*
 * Asks slirp what the next wait is for: its sockets into ep_fd, its
 * timeout into timer_fd.  A round that fed frames comes back at once
 * (what they unblocked, an ARP reply's waiting packets, goes out at the
 * end of slirp_pollfds_poll), after the loop's other handlers.
 */
static void user_prepare(struct user *u)
{
	uint32_t timeout = UINT32_MAX;
	int ms;

	u->npfd = 0;
	cb_add_poll(u->wake_fd, SLIRP_POLL_IN, u);
	slirp_pollfds_fill(u->slirp, &timeout, cb_add_poll, u);
	watch_sync(u);
	ms = poll_timeout(u, timeout);
	if (ms == 0)
		eventfd_kick(u->wake_fd);
	else
		timer_arm(u, ms);
}

/* One turn of what was a poll loop: the set user_prepare() built, looked at now. */
static void user_round(void *opaque)
{
	struct user *u = opaque;
	int r = poll(u->pfd, u->npfd, 0);

	slirp_pollfds_poll(u->slirp, r < 0, cb_get_revents, u);
	feed(u);
	run_timers(u);
	user_prepare(u);
}

static void user_timer(void *opaque)
{
	struct user *u = opaque;
	uint64_t n;

	if (read(u->timer_fd, &n, sizeof(n)) == sizeof(n))
		u->timer_at_ms = -1;
	user_round(u);
}

/* ---- making and freeing ---- */

static struct user *user_alloc(const char *id)
{
	struct user *u = calloc(1, sizeof(*u));

	if (!u) {
		error_report("out of memory");
		return NULL;
	}
	errno = 0;
	u->nd.ops = &user_ops;
	u->nd.rx_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	u->nd.tx_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	u->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	u->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	u->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	u->timer_at_ms = -1;
	fq_init(&u->rx);
	fq_init(&u->tx);
	u->tx.idle_fd = u->nd.tx_fd;
	u->pfd_cap = 16;
	u->pfd = malloc(u->pfd_cap * sizeof(*u->pfd));
	u->watch = malloc(u->pfd_cap * sizeof(*u->watch));
	u->want = malloc(u->pfd_cap * sizeof(*u->want));
	u->id = strdup(id);
	u->nd.id = u->id;
	if (u->nd.rx_fd < 0 || u->nd.tx_fd < 0 || u->wake_fd < 0 || u->ep_fd < 0 ||
	    u->timer_fd < 0 || !u->pfd || !u->watch || !u->want || !u->id) {
		error_report("-netdev user,id=%s: %s", id,
			     errno ? strerror(errno) : "out of memory");
		user_free(&u->nd);
		return NULL;
	}
	return u;
}

/* dnssearch= as slirp takes it: NULL-terminated. */
static const char **search_list(const struct opt_list *l)
{
	const char **v = calloc(l->n + 1, sizeof(*v));

	for (unsigned i = 0; v && i < l->n; i++)
		v[i] = l->v[i];
	return v;
}

static int user_slirp(struct user *u, const struct netdev_user_cfg *c,
		      const struct user_addrs *a)
{
	const char **search = c->dnssearch.n ? search_list(&c->dnssearch) : NULL;
	SlirpConfig sc = {
		/* 4: libslirp 4.7's, with timer_new_opaque and disable_dhcp. */
		.version = 4,
		.restricted = c->restrict_,
		.in_enabled = c->ipv4,
		.vnetwork = a->net,
		.vnetmask = a->mask,
		.vhost = a->host,
		.in6_enabled = c->ipv6,
		.vprefix_addr6 = a->net6,
		.vprefix_len = (uint8_t)a->len6,
		.vhost6 = a->host6,
		.vhostname = c->hostname,
		.tftp_server_name = c->tftp_server_name,
		.tftp_path = c->tftp,
		.bootfile = c->bootfile,
		.vdhcp_start = a->dhcp,
		.vnameserver = a->dns,
		.vnameserver6 = a->dns6,
		.vdnssearch = search,
		.vdomainname = c->domainname,
	};

	if (c->dnssearch.n && !search) {
		error_report("out of memory");
		return -1;
	}
	/* slirp copies every string it keeps. */
	u->slirp = slirp_new(&sc, &user_cb, u);
	free(search);
	if (!u->slirp)
		error_report("-netdev user,id=%s: libslirp refused the configuration",
			     c->head.id);
	/* timer_add said it: a back end without its timers is none. */
	return u->slirp && !u->timer_failed ? 0 : -1;
}

static int add_fwds(struct user *u, const struct netdev_user_cfg *c,
		    const struct user_addrs *a)
{
	struct fwd f;

	for (unsigned i = 0; i < c->hostfwd.n; i++) {
		if (parse_fwd(c, a, c->hostfwd.v[i], &f) < 0)
			return -1;
		errno = 0;
		if (slirp_add_hostxfwd(u->slirp, (struct sockaddr *)&f.host, sizeof(f.host),
				       (struct sockaddr *)&f.guest, sizeof(f.guest),
				       f.udp ? SLIRP_HOSTFWD_UDP : 0) < 0)
			return bad_fwd(c, c->hostfwd.v[i], "cannot listen there: %s",
				       errno ? strerror(errno) : "libslirp refused it");
	}
	return 0;
}

/*
 * slirp's first wait set, then onto the loop: from here on only the
 * loop's thread calls into slirp.
 */
static int user_start(struct user *u, struct iothread *loop)
{
	u->own_loop = !loop;
	u->loop = loop ? loop : iothread_new("slirp");
	if (!u->loop) {
		error_report("-netdev user,id=%s: out of memory for its thread", u->id);
		return -1;
	}
	user_prepare(u);
	if (iothread_add_fd(u->loop, u->ep_fd, user_round, u) < 0 ||
	    (u->watched = true, iothread_add_fd(u->loop, u->timer_fd, user_timer, u) < 0)) {
		error_report("-netdev user,id=%s: cannot watch its sockets: %s", u->id,
			     strerror(errno));
		return -1;
	}
	/* Signals stay main's: libslirp's send() can raise SIGPIPE. */
	if (u->own_loop && net_loop_start(u->loop) < 0) {
		error_report("-netdev user,id=%s: cannot start its thread", u->id);
		return -1;
	}
	return 0;
}

struct netdev *netdev_user_new(const struct netdev_user_cfg *cfg, struct iothread *loop)
{
	struct user_addrs a;
	struct user *u;

	if (resolve(cfg, &a) < 0 || !(u = user_alloc(cfg->head.id)))
		return NULL;
	/* Slirp is made and its ports bound here; the loop owns it after. */
	if (user_slirp(u, cfg, &a) < 0 || add_fwds(u, cfg, &a) < 0 ||
	    user_start(u, loop) < 0) {
		user_free(&u->nd);
		return NULL;
	}
	return &u->nd;
}

static void user_free(struct netdev *nd)
{
	struct user *u = container_of(nd, struct user, nd);

	/* Each returns once its handler is not running, and it runs no more. */
	if (u->watched) {
		iothread_del_fd(u->loop, u->ep_fd);
		iothread_del_fd(u->loop, u->timer_fd);
	}
	if (u->own_loop)
		iothread_free(u->loop);
	/* Back on one thread: slirp's cleanup may call timer_free and unregister_poll_fd. */
	if (u->slirp)
		slirp_cleanup(u->slirp);
	while (u->timers)
		cb_timer_free(u->timers, u);
	fq_destroy(&u->rx);
	fq_destroy(&u->tx);
	if (u->nd.rx_fd >= 0)
		close(u->nd.rx_fd);
	if (u->nd.tx_fd >= 0)
		close(u->nd.tx_fd);
	if (u->wake_fd >= 0)
		close(u->wake_fd);
	if (u->ep_fd >= 0)
		close(u->ep_fd);
	if (u->timer_fd >= 0)
		close(u->timer_fd);
	free(u->pfd);
	free(u->watch);
	free(u->want);
	free(u->id);
	free(u);
}

#endif
