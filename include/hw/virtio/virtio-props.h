/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VIRTIO_PROPS_H
#define BRISK_HW_VIRTIO_VIRTIO_PROPS_H

/*
 * The ring properties every virtio device and export of brisk takes,
 * with QEMU's names and defaults, written once: a device's config embeds
 * struct virtio_ring_opts, its property table takes VIRTIO_RING_PROPS,
 * and virtio_ring_features() turns them into the features offered.
 */
#include <stdbool.h>
#include <stdint.h>

#include "util/opts.h"
#include "virtio/virtqueue.h"

struct virtio_ring_opts {
	bool packed;		/* packed=: off by default, as QEMU's */
	bool event_idx;		/* event_idx=: on */
	bool indirect_desc;	/* indirect_desc=: on */
};

#define VIRTIO_RING_DEFAULTS { .packed = false, .event_idx = true, .indirect_desc = true }

#define VIRTIO_RING_PROPS(TYPE, FIELD)							\
	{ "packed", OPT_BOOL, OPT_AT(TYPE, FIELD.packed, bool), .def = "off",		\
	  .help = "offer the packed ring (VIRTIO_F_RING_PACKED)" },			\
	{ "event_idx", OPT_BOOL, OPT_AT(TYPE, FIELD.event_idx, bool), .def = "on",	\
	  .help = "offer VIRTIO_F_EVENT_IDX" },						\
	{ "indirect_desc", OPT_BOOL, OPT_AT(TYPE, FIELD.indirect_desc, bool),		\
	  .def = "on", .help = "offer VIRTIO_F_INDIRECT_DESC" }

/* The ring features the opts ask to offer. */
static inline uint64_t virtio_ring_features(const struct virtio_ring_opts *o)
{
	return (uint64_t)o->packed << VIRTIO_F_RING_PACKED |
	       (uint64_t)o->event_idx << VIRTIO_F_RING_EVENT_IDX |
	       (uint64_t)o->indirect_desc << VIRTIO_F_RING_INDIRECT_DESC;
}

#endif
