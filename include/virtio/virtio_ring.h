/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_VIRTIO_VIRTIO_RING_H
#define BRISK_VIRTIO_VIRTIO_RING_H

/*
 * Ring layouts as they sit in guest memory (VIRTIO 1.2, 2.7 and 2.8).
 * All fields are little-endian.
 */

#include <stdint.h>

/* Descriptor flags, both ring kinds. */
#define VRING_DESC_F_NEXT 1
#define VRING_DESC_F_WRITE 2
#define VRING_DESC_F_INDIRECT 4
/* Packed ring only: availability and use are the two bits vs. wrap counters. */
#define VRING_PACKED_DESC_F_AVAIL (1u << 7)
#define VRING_PACKED_DESC_F_USED (1u << 15)

/* Split ring: avail->flags and used->flags. */
#define VRING_AVAIL_F_NO_INTERRUPT 1
#define VRING_USED_F_NO_NOTIFY 1

/* Packed ring event suppression flags. */
#define VRING_PACKED_EVENT_FLAG_ENABLE 0
#define VRING_PACKED_EVENT_FLAG_DISABLE 1
#define VRING_PACKED_EVENT_FLAG_DESC 2
#define VRING_PACKED_EVENT_WRAP_SHIFT 15

struct vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

/* ring[num] follows, then used_event (EVENT_IDX). */
struct vring_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[];
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};

/* ring[num] follows, then avail_event (EVENT_IDX). */
struct vring_used {
	uint16_t flags;
	uint16_t idx;
	struct vring_used_elem ring[];
};

struct vring_packed_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t id;
	uint16_t flags;
};

struct vring_packed_event {
	uint16_t off_wrap;
	uint16_t flags;
};

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

/*
 * EVENT_IDX test shared by both ring kinds: did moving from old to new
 * (exclusive) pass event?  Free-running 16-bit arithmetic.
 */
static inline int vring_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

#endif
