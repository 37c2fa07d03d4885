/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_NET_NET_H
#define BRISK_NET_NET_H

/*
 * Network back ends (-netdev): where a NIC's Ethernet frames go and come
 * from.  net/ knows frames and sockets, not virtio or PCI; a NIC (hw/)
 * meets its back end only through struct netdev.
 *
 * A back end runs where it must (libslirp on one event loop, the NIC's
 * when it gives one, since a Slirp instance has no locking and calls
 * back into its owner from inside slirp_input(); a stream socket on a
 * thread of its own, since its peer may be slow or gone); frames cross
 * between it and the NIC through queues it owns (net/queue.c), so
 * neither side ever runs inside the other's locks.
 *
 * Threads: the NIC calls send/peek/take/recv/tx_busy from one thread of
 * its own (its event loop); the back end may fill its receive queue from
 * any thread and then makes rx_fd readable, and says it is idle on tx_fd
 * from its own.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/compiler.h"
#include "util/opts.h"

struct iothread;
struct netdev;

struct netdev_ops {
	/*
	 * A frame from the guest (Ethernet header on; behind the virtio-net
	 * header when the back end has vnet_hdr_len), len bytes in iov
	 * counting both.  The back end has copied or sent it when this
	 * returns; false when it dropped it (its queue was full, or the
	 * frame is no Ethernet frame's: under 14 or over 14 + 65535 bytes),
	 * which the NIC counts.
	 */
	bool (*send)(struct netdev *nd, const struct iovec *iov, unsigned n, size_t len);
	/*
	 * The length of the next frame for the guest (with its virtio-net
	 * header, when vnet_hdr_len); 0 when none waits, and then rx_fd is
	 * left unreadable until the next frame.
	 */
	size_t (*peek)(struct netdev *nd);
	/*
	 * Copies the next frame into iov, which holds at least peek()'s
	 * length, and forgets it; with iov NULL only forgets it (the NIC
	 * dropped it: no room in the guest's buffers).
	 */
	void (*take)(struct netdev *nd, const struct iovec *iov, unsigned n);
	/*
	 * Optional: the next frame for the guest read straight into iov (n
	 * entries, at most IOV_MAX; cap bytes in all, more than rx_max_len),
	 * no copy in between: its length, the header included, at most
	 * rx_max_len; 0 when none waits, rx_fd then left unreadable as peek
	 * leaves it.  A frame peek() already holds comes first (copied).
	 * Only whole frames come back: one the back end refuses (one that
	 * fills iov among them: a tap's read says no more than it copied,
	 * so only a byte to spare tells a whole frame from a cut one) it
	 * drops and counts in rx_dropped, and what it wrote of it into iov
	 * is no frame.
	 */
	size_t (*recv)(struct netdev *nd, const struct iovec *iov, unsigned n, size_t cap);
	/*
	 * Back ends with vnet_hdr_len only: which offloads the guest takes
	 * (NETDEV_OFFLOAD_*), so that the back end hands it only frames with
	 * those (a TCP segment bigger than the MTU only to a guest that
	 * reassembles none).  Called before the first frame and after each
	 * feature negotiation.
	 */
	void (*set_offload)(struct netdev *nd, unsigned offloads);
	/*
	 * Optional, for back ends that take the frames send() queued later
	 * (on their loop's next turn, or their own thread): whether they
	 * still have some, or work on one.  If so, tx_fd
	 * becomes readable once it has none (the NIC clears it), so the NIC
	 * can hold the guest's next frames until then, as a NIC whose back
	 * end runs inside its round finds them held.
	 */
	bool (*tx_busy)(struct netdev *nd);
	/* Stops the back end (its thread, or its handlers on the NIC's
	 * loop), closes its sockets. */
	void (*free)(struct netdev *nd);
};

#define NETDEV_OFFLOAD_CSUM 1u		/* frames with a checksum left to compute */
#define NETDEV_OFFLOAD_TSO4 2u		/* TCP/IPv4 segments up to 64 KiB */
#define NETDEV_OFFLOAD_TSO6 4u		/* TCP/IPv6 ones */
#define NETDEV_OFFLOAD_ECN 8u		/* such segments with ECN's CWR set */
/* The virtio-net header of VIRTIO 1.x (struct virtio_net_hdr_v1), as the kernel's tap carries it. */
#define NETDEV_VNET_HDR_LEN 12

struct netdev {
	const struct netdev_ops *ops;
	/*
	 * Readable while a frame waits for the guest (and perhaps when none
	 * does): the NIC, woken by it, peeks until 0, which leaves it
	 * unreadable, or stops watching it while the guest has no room.  An
	 * eventfd for back ends with queues (peek clears it once the queue is
	 * found empty), a tap's own fd.
	 */
	int rx_fd;
	int tx_fd;		/* with tx_busy: readable once the back end is idle */
	/*
	 * 0: frames are bare Ethernet frames.  NETDEV_VNET_HDR_LEN: each
	 * frame both ways starts with the virtio-net header, which carries
	 * checksum and segmentation offloads (-netdev tap).
	 */
	unsigned vnet_hdr_len;
	/* With recv: the longest frame it returns, the header included. */
	size_t rx_max_len;
	/*
	 * Set by the back end (on the NIC's thread, in peek) when it will
	 * never have a frame again (a tap whose interface was deleted), and
	 * rx_fd may stay readable: the NIC stops watching it.
	 */
	bool rx_gone;
	const char *id;			/* the -netdev's id, for messages */
	/* Frames for the guest the back end dropped, its queue full.  It
	 * adds from its own thread (__atomic, relaxed): read with
	 * __atomic_load_n. */
	uint64_t rx_dropped;
	/* Frames send() took that the back end dropped later, its peer gone
	 * before they were written (-netdev stream); added and read as
	 * rx_dropped is.  The frames send() refused the NIC counts itself. */
	uint64_t tx_dropped;
};

/* A -netdev's config: every type's starts with its id, as -object's. */
struct netdev_cfg {
	char *id;
	const char *type;	/* "user", "stream", "tap": which back end (set by the -netdev set) */
};

/*
 * The one line a back end says when it refuses its config or cannot be
 * made: "-netdev TYPE,id=ID: " and the rest, as every -netdev's line
 * reads.  Returns -1, for the check or open that fails with it.
 */
int netdev_error(const char *type, const char *id, const char *fmt, ...) BRISK_PRINTF(3, 4);

/*
 * -netdev user: QEMU's user networking, on libslirp (net/slirp.c).  The
 * check fills the address strings left out with what they default to, in
 * one spelling ("10.0.2.0/24", "10.0.2.2"), so the config reads whole.
 */
struct netdev_user_cfg {
	struct netdev_cfg head;
	char *net;		/* "10.0.2.0/24" */
	char *host;		/* 10.0.2.2 */
	char *dns;		/* 10.0.2.3 */
	char *dhcpstart;	/* 10.0.2.15 */
	char *hostname;		/* the DHCP answer's host name */
	char *domainname;
	bool restrict_;		/* restrict=on: the guest reaches nothing outside */
	bool ipv6;
	struct opt_list hostfwd;	/* "tcp|udp:[hostaddr]:hostport-[guestaddr]:guestport" */
	/* QEMU's other cheap ones */
	bool ipv4;
	char *ipv6_net;		/* "fec0::/64" */
	char *ipv6_host;	/* fec0::2 */
	char *ipv6_dns;		/* fec0::3 */
	struct opt_list dnssearch;	/* DHCP's domain search list */
	char *tftp;		/* a directory served read-only over TFTP */
	char *bootfile;		/* DHCP's boot file name (PXE) */
	char *tftp_server_name;	/* DHCP's TFTP server name (option 66) */
};
extern const struct opt_spec netdev_user_spec;
extern const struct netdev_user_cfg netdev_user_defaults;
/*
 * Checks what parsing cannot (addresses, hostfwd rules) before /dev/kvm;
 * -1 after one line.  A build without libslirp says so here.
 */
int netdev_user_check(void *cfg);

/*
 * The back end cfg describes (a -netdev user config); NULL after one
 * line.  slirp runs on loop, which must outlive it (the NIC's, whose
 * thread then also turns slirp), or with loop NULL on a thread of its own.
 */
struct netdev *netdev_user_new(const struct netdev_user_cfg *cfg, struct iothread *loop);

/*
 * -netdev stream: QEMU 7.2's, the way passt serves a VM (net/stream.c).
 * Frames go over a stream socket, each after its length (4 bytes,
 * big-endian); one peer at a time.
 */
enum netdev_stream_addr { NETDEV_STREAM_UNIX, NETDEV_STREAM_INET, NETDEV_STREAM_FD };
struct netdev_stream_cfg {
	struct netdev_cfg head;
	bool server;		/* on: listen at the address; off: connect to it */
	int addr_type;		/* addr.type=, an enum netdev_stream_addr */
	char *path;		/* addr.path=: the unix socket */
	bool abstract;		/* addr.abstract=on: path in Linux's abstract namespace */
	bool tight;		/* addr.tight=: an abstract address without padding */
	char *fd;		/* addr.str=: an inherited socket's number (addr.type=fd) */
	char *host, *port;	/* addr.type=inet's, which the check refuses */
	unsigned reconnect;	/* server=off: seconds between tries once lost; 0: none */
};
extern const struct opt_spec netdev_stream_spec;
extern const struct netdev_stream_cfg netdev_stream_defaults;
/*
 * Checks what parsing cannot before /dev/kvm (the address's type, the
 * path's length, an inherited socket's kind); -1 after one line.  Nothing
 * is opened or connected here.
 */
int netdev_stream_check(void *cfg);
/*
 * The back end cfg describes: listening (server=on) or connected
 * (server=off) when it returns; NULL after one line.
 */
struct netdev *netdev_stream_new(const struct netdev_stream_cfg *cfg);

/*
 * -netdev tap: a Linux tap interface (net/tap.c), QEMU's syntax.  The
 * check runs nothing and opens nothing; new() opens (or makes) the tap
 * and runs the script.
 */
struct netdev_tap_cfg {
	struct netdev_cfg head;
	char *ifname;		/* NULL: the kernel names it (tapN) */
	char *fd;		/* an inherited tap's number, instead of ifname= */
	char *script;		/* NULL: QEMU's /etc/qemu-ifup; "no": none */
	char *downscript;	/* NULL: /etc/qemu-ifdown; "no": none */
	int vnet_hdr;		/* 1 on, 0 off, -1 (not given): where the kernel has it */
	bool vhost;		/* on is refused */
	unsigned queues;	/* 1 */
};
extern const struct opt_spec netdev_tap_spec;
extern const struct netdev_tap_cfg netdev_tap_defaults;
int netdev_tap_check(void *cfg);
/* The tap cfg describes, open and its up script run; NULL after one line. */
struct netdev *netdev_tap_new(const struct netdev_tap_cfg *cfg);

/*
 * The back end a -netdev's config describes, of the type it names
 * (net/net.c); NULL after one line.  loop: the NIC's event loop, where a
 * back end without a thread of its own may run (NULL: none given).
 */
struct netdev *netdev_new(const struct netdev_cfg *cfg, struct iothread *loop);

static inline void netdev_free(struct netdev *nd)
{
	if (nd)
		nd->ops->free(nd);
}

#endif
