/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_NET_NET_H
#define BRISK_NET_NET_H

/*
 * Network back ends (-netdev): where a NIC's Ethernet frames go and come
 * from.  net/ knows frames and sockets, not virtio or PCI; a NIC (hw/)
 * meets its back end only through struct netdev.
 *
 * A back end runs where it must (libslirp on a thread of its own, since
 * a Slirp instance has no locking and calls back into its owner from
 * inside slirp_input(); a stream socket on one too, since its peer may be
 * slow or gone); frames cross between it and the NIC through queues it
 * owns (net/queue.c), so neither side ever runs inside the other's locks.
 *
 * Threads: the NIC calls send/peek/take from one thread of its own (its
 * event loop); the back end may fill its receive queue from any thread
 * and then makes rx_fd readable.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/opts.h"

struct netdev;

struct netdev_ops {
	/*
	 * A frame from the guest (Ethernet header on, no virtio-net header),
	 * len bytes in iov.  The back end has copied or sent it when this
	 * returns; false when it dropped it (its queue was full, or len is
	 * no Ethernet frame's: under 14 or over 14 + 65535), which the NIC
	 * counts.
	 */
	bool (*send)(struct netdev *nd, const struct iovec *iov, unsigned n, size_t len);
	/* The length of the next frame for the guest; 0 when none waits. */
	size_t (*peek)(struct netdev *nd);
	/*
	 * Copies the next frame into iov, which holds at least peek()'s
	 * length, and forgets it; with iov NULL only forgets it (the NIC
	 * dropped it: no room in the guest's buffers).
	 */
	void (*take)(struct netdev *nd, const struct iovec *iov, unsigned n);
	/* Stops the back end's thread, closes its sockets. */
	void (*free)(struct netdev *nd);
};

struct netdev {
	const struct netdev_ops *ops;
	/*
	 * An eventfd, written for every frame queued for the guest.  The
	 * NIC reads it to clear it and then peeks until 0, so a frame queued
	 * meanwhile leaves it readable again.
	 */
	int rx_fd;
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
	const char *type;	/* "user", "stream": which back end (set by the -netdev set) */
};

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

/* The back end cfg describes (a -netdev user config); NULL after one line. */
struct netdev *netdev_user_new(const struct netdev_user_cfg *cfg);

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
 * The back end a -netdev's config describes, of the type it names
 * (net/net.c); NULL after one line.
 */
struct netdev *netdev_new(const struct netdev_cfg *cfg);

static inline void netdev_free(struct netdev *nd)
{
	if (nd)
		nd->ops->free(nd);
}

#endif
