/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VIRTIO_NET_H
#define BRISK_HW_VIRTIO_VIRTIO_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/device.h"
#include "hw/virtio/virtio-props.h"

struct machine;
struct netdev;
struct netdev_cfg;
struct virtio_plug;

/*
 * virtio-net-pci (VIRTIO 1.2, 5.1): one queue pair between the guest and
 * a network back end (struct netdev, include/net/net.h), served on
 * m->loop.  Checksum and segmentation offloads only with a back end that
 * carries the virtio-net header (struct netdev's vnet_hdr_len).
 */
#define VNET_MIN_QUEUE_SIZE 256		/* QEMU's rx_queue_size=/tx_queue_size= */
#define VNET_MAX_QUEUE_SIZE 1024
#define VNET_MIN_MTU 68			/* QEMU's host_mtu= range */
#define VNET_MAX_MTU 65535
/* tx=timer's wait, QEMU's x-txtimer= default (ns), and brisk's longest. */
#define VNET_TX_TIMER_NS 150000
#define VNET_TX_TIMER_MAX_NS 3600000000000ull

enum vnet_tx_mode {
	VNET_TX_BH,		/* a kick's frames are sent at once */
	VNET_TX_TIMER,		/* x-txtimer ns after the kick, kicks off meanwhile */
};

struct vnet_cfg {
	char *netdev;			/* netdev=: the -netdev's id; NULL: none */
	/* What netdev= named (resolve): owned by the -netdev set. */
	const struct netdev_cfg *backend;
	char mac_str[18];		/* mac=, as given */
	uint8_t mac[6];			/* mac_str parsed (check), when mac_set */
	bool mac_set;
	unsigned host_mtu;		/* 0: not given, no VIRTIO_NET_F_MTU */
	struct virtio_ring_opts ring;
	unsigned rx_queue_size, tx_queue_size;
	int tx;				/* tx=: enum vnet_tx_mode */
	uint64_t tx_timer_ns;		/* x-txtimer=: tx=timer's wait */
	bool tx_hold;			/* x-txhold=: served at once, frames held while the back end is busy */
};

struct vnet;

/* What a NIC counted, for tests and the curious. */
struct vnet_stats {
	uint64_t rx_frames;		/* given to the guest */
	uint64_t rx_dropped;		/* taken from the back end, never fitting the guest's buffers */
	uint64_t tx_frames;		/* handed to the back end */
	uint64_t tx_dropped;		/* too short or long, no back end, or the back end refused */
};

/*
 * One NIC on m->loop, reached through plug (which it owns from here on,
 * even when it fails), its frames to and from nd (NULL: none, every frame
 * from the guest dropped, as QEMU's NIC without a peer).  nd stays the
 * caller's: free it after vnet_free().  NULL after one error line.
 */
struct vnet *vnet_create(struct machine *m, const struct vnet_cfg *cfg,
			 struct virtio_plug *plug, struct netdev *nd);
/* After the vCPUs have stopped; NULL is fine.  Stops watching nd's rx_fd. */
void vnet_free(struct vnet *n);
void vnet_get_stats(struct vnet *n, struct vnet_stats *s);
/* tx=timer's timerfd, for tests that fire it; -1 without tx=timer. */
int vnet_tx_timer_fd(const struct vnet *n);

extern const struct device_family virtio_net_pci_family;
/* QEMU's alias: the same device, by its short name. */
extern const struct device_family virtio_net_family;

#endif
