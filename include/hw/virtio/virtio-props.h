/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VIRTIO_PROPS_H
#define BRISK_HW_VIRTIO_VIRTIO_PROPS_H

/*
 * The ring properties every virtio device and export of brisk takes,
 * with QEMU's names and defaults, written once: a device's config embeds
 * struct virtio_ring_opts, its property table takes VIRTIO_RING_PROPS,
 * and virtio_ring_features() turns them into the features offered.
 * Those of devices with alike queues (a disk's request queues), whose
 * count and size the command line sets, are here too.
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

/*
 * num-queues=: at most MAX; DEF says what it is without num-queues=
 * (the vCPU count...), as the config's default is set.
 */
#define VIRTIO_NUM_QUEUES_PROP(TYPE, FIELD, MAX, DEF, HELP)				\
	{ "num-queues", OPT_UINT, OPT_AT(TYPE, FIELD, unsigned), .min = 1, .max = (MAX),	\
	  .def = (DEF), .help = (HELP) }

/* queue-size=: entries per ring, a power of two up to MAX; QEMU's 256 by default. */
#define VIRTIO_QUEUE_SIZE_PROP(TYPE, FIELD, MAX, HELP)					\
	{ "queue-size", OPT_UINT, OPT_AT(TYPE, FIELD, unsigned), OPT_POW2, .min = 2,	\
	  .max = (MAX), .def = "256", .help = (HELP) }

/* The ring features the opts ask to offer. */
static inline uint64_t virtio_ring_features(const struct virtio_ring_opts *o)
{
	return (uint64_t)o->packed << VIRTIO_F_RING_PACKED |
	       (uint64_t)o->event_idx << VIRTIO_F_RING_EVENT_IDX |
	       (uint64_t)o->indirect_desc << VIRTIO_F_RING_INDIRECT_DESC;
}

#endif
