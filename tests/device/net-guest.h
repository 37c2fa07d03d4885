/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_NET_GUEST_H
#define BRISK_TESTS_NET_GUEST_H

/*
 * virtio-net-pci on blk-guest.h's machine, for the NIC's test and its
 * benchmark: the board with m->loop (which hw/main.c would make), the NIC
 * on a back end the caller owns, and the guest's side found through
 * config cycles and brought up with one receive and one transmit ring.
 * No thread runs the loop: the caller turns it with nic_turn(), without
 * waiting, after each kick or frame.  Include after check.h.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hw/virtio/virtio-net.h"
#include "hw/virtio/virtio-plug.h"
#include "net/net.h"
#include "util/iothread.h"

#include "blk-guest.h"

#define NET_PCI_ID 0x1041	/* VIRTIO 1.2, 4.1.2: 0x1040 + 1, the network device */
#define NET_CLASS 0x020000	/* PCI: network controller, Ethernet (QEMU's) */
#define RXQ 0
#define TXQ 1

struct net {
	struct tmachine *t;
	struct vnet *n;
	struct netdev *nd;	/* the caller's */
	struct vdev d;
	struct gq q[2];
};

/* The board and the NIC on nd; false when either is missing (free it all the same). */
static inline bool nic_new(struct net *g, const struct vnet_cfg *cfg, struct netdev *nd)
{
	memset(g, 0, sizeof(*g));
	g->nd = nd;
	g->t = machine_board(1, false);
	g->t->b.m.loop = iothread_new("main");
	g->n = g->t->b.m.loop ? vnet_create(&g->t->b.m, cfg,
					    virtio_pci_plug(&g->t->b.m, NET_CLASS), nd) : NULL;
	return g->n && vdev_find_id(g->t, NET_PCI_ID, 0, &g->d);
}

/* The back end stays the caller's. */
static inline void nic_free(struct net *g)
{
	vnet_free(g->n);
	iothread_free(g->t->b.m.loop);
	machine_free(g->t);
}

/* Runs whatever the device's fds have ready, as the main loop would. */
static inline void nic_turn(struct net *g)
{
	while (iothread_poll(g->t->b.m.loop, 0) > 0)
		;
}

/* Driver init to DRIVER_OK with rings of num; whether the device took it. */
static inline bool nic_start(struct net *g, unsigned num, uint64_t want)
{
	vdev_init(&g->d, g->q, 2, num, want);
	nic_turn(g);
	return (vstatus(&g->d) & DS_DRIVER_OK) && !(vstatus(&g->d) & DS_NEEDS_RESET);
}

#endif
