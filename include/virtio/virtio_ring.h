/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_VIRTIO_VIRTIO_RING_H
#define BRISK_VIRTIO_VIRTIO_RING_H

/*
 * Rings as they sit in guest memory (VIRTIO 1.2, 2.7 and 2.8); all fields
 * little-endian.
 */

#include <linux/virtio_ring.h>
#include <stdint.h>

/*
 * The layouts, flags and vring_need_event() are the kernel's
 * <linux/virtio_ring.h>; its packed-ring flags are bit numbers
 * (1u << VRING_PACKED_DESC_F_AVAIL), as the kernel's drivers use them.
 */

/* Sizes of the three split ring areas for a queue of num entries. */
static inline uint64_t vring_split_desc_size(unsigned num)
{
	return 16ull * num;
}

static inline uint64_t vring_split_avail_size(unsigned num)
{
	return 6ull + 2ull * num;
}

static inline uint64_t vring_split_used_size(unsigned num)
{
	return 6ull + 8ull * num;
}

#endif
