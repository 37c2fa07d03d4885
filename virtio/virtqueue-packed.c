// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Packed virtqueue (VIRTIO 1.2, 2.8): one descriptor ring shared by both
 * sides, ownership told by the AVAIL/USED flag bits against each side's
 * wrap counter, plus one event suppression structure per direction.
 *
 * virtqueue_packed_enable() checks that the ring (16-aligned) and both
 * event suppression structures (4-aligned) lie wholly inside guest RAM and
 * caches their host addresses.  Guest RAM stays mapped for the life of the
 * VM, so the hot path uses the cached pointers; slots are always reduced
 * modulo the queue size.  Buffers and indirect tables go through
 * guest_mem_ptr() each time.
 */
#include <assert.h>
#include <string.h>

#include "virtqueue-internal.h"

#define EVENT_OFF_MASK ((1u << VRING_PACKED_EVENT_F_WRAP_CTR) - 1)

static inline struct vring_packed_desc *packed_ring(const struct virtqueue *vq)
{
	return vq->desc;
}

static inline bool packed_desc_is_avail(uint16_t flags, bool wrap)
{
	bool avail = flags & (1u << VRING_PACKED_DESC_F_AVAIL);
	bool used = flags & (1u << VRING_PACKED_DESC_F_USED);

	return avail != used && avail == wrap;
}

/*
 * A (slot, wrap counter) pair as one position in [0, 2 * num): the ring
 * read as twice as long, so distances between positions are plain
 * differences modulo 2 * num.
 */
static inline unsigned int packed_pos(const struct virtqueue *vq,
				      unsigned int slot, bool wrap)
{
	return (slot + (wrap ? 0 : vq->num)) % (2u * vq->num);
}

static inline unsigned int packed_dist(const struct virtqueue *vq,
				       unsigned int from, unsigned int to)
{
	return (to + 2u * vq->num - from) % (2u * vq->num);
}

int virtqueue_packed_enable(struct virtqueue *vq)
{
	if (vq->desc_addr % 16 || vq->driver_addr % 4 || vq->device_addr % 4)
		return -1;
	vq->desc = guest_mem_ptr(vq->mem, vq->desc_addr, 16ull * vq->num);
	vq->driver = guest_mem_ptr(vq->mem, vq->driver_addr, sizeof(struct vring_packed_desc_event));
	vq->device = guest_mem_ptr(vq->mem, vq->device_addr, sizeof(struct vring_packed_desc_event));
	if (!vq->desc || !vq->driver || !vq->device)
		return -1;
	vq->signalled_used = packed_pos(vq, 0, true);
	return 0;
}

int virtqueue_packed_set_base(struct virtqueue *vq, uint32_t base)
{
	uint16_t avail = base & 0x7fff, used = (base >> 16) & 0x7fff;

	if (avail >= vq->num || used >= vq->num)
		return -1;
	vq->last_avail = avail;
	vq->last_avail_wrap = base & (1u << 15);
	vq->used_slot = used;
	vq->used_wrap = base & (1u << 31);
	vq->signalled_used = packed_pos(vq, used, vq->used_wrap);
	vq->signalled_used_valid = false;
	return 0;
}

/* An indirect table: consecutive descriptors, NEXT is meaningless there. */
static int packed_gather_indirect(struct virtqueue *vq, struct vq_gather *g,
				  const struct vring_packed_desc *d)
{
	uint32_t len = le32toh(d->len);
	const struct vring_packed_desc *table;
	struct vring_packed_desc t;

	if (!vq->indirect)
		return vq_fail(vq, "indirect descriptor not negotiated");
	if (le16toh(d->flags) & VRING_DESC_F_NEXT)
		return vq_fail(vq, "indirect descriptor with NEXT set");
	if (len == 0 || len % sizeof(t) || len / sizeof(t) > VIRTQUEUE_MAX_SIZE)
		return vq_fail(vq, "bad indirect table length");
	table = guest_mem_ptr(vq->mem, le64toh(d->addr), len);
	if (!table)
		return vq_fail(vq, "indirect table outside guest RAM");
	for (unsigned int i = 0; i < len / sizeof(t); i++) {
		uint16_t flags;

		memcpy(&t, &table[i], sizeof(t));
		vq_compiler_barrier();
		flags = le16toh(t.flags);
		if (flags & VRING_DESC_F_INDIRECT)
			return vq_fail(vq, "indirect descriptor inside an indirect table");
		if (vq_gather_add(vq, g, le64toh(t.addr), le32toh(t.len), flags) < 0)
			return -1;
	}
	return 0;
}

int virtqueue_packed_pop(struct virtqueue *vq, struct vq_elem_cache *c,
			 struct vq_elem **elem)
{
	/*
	 * Fully written before they are read; zeroing 24 KiB per request
	 * would dominate the cost of pop (tests/bench/virtqueue-pop).
	 */
	uint64_t addr[VIRTQUEUE_MAX_SIZE] BRISK_UNINITIALIZED;
	struct iovec iov[VIRTQUEUE_MAX_SIZE] BRISK_UNINITIALIZED;
	struct vq_gather g = { .addr = addr, .iov = iov };
	struct vring_packed_desc *ring = packed_ring(vq);
	unsigned int slot = vq->last_avail, n = 0;
	bool wrap = vq->last_avail_wrap;
	struct vring_packed_desc d;
	struct vq_elem *e;
	uint16_t flags;

	if (!packed_desc_is_avail(vq_ld16(&ring[slot].flags), wrap))
		return 0;
	/* The head's flags are read before the rest of the chain. */
	vq_rmb();
	for (;;) {
		/* Bounds the walk: a chain never holds more than the ring. */
		if (++n > vq->num)
			return vq_fail(vq, "descriptor chain longer than the ring");
		memcpy(&d, &ring[slot], sizeof(d));
		vq_compiler_barrier();
		flags = le16toh(d.flags);
		if (flags & VRING_DESC_F_INDIRECT) {
			if (packed_gather_indirect(vq, &g, &d) < 0)
				return -1;
		} else if (vq_gather_add(vq, &g, le64toh(d.addr), le32toh(d.len), flags) < 0) {
			return -1;
		}
		if (++slot == vq->num) {
			slot = 0;
			wrap = !wrap;
		}
		if (!(flags & VRING_DESC_F_NEXT))
			break;
	}
	/* The buffer id sits in the chain's last descriptor. */
	if (le16toh(d.id) >= vq->num)
		return vq_fail(vq, "buffer id out of range");
	vq->last_avail = slot;
	vq->last_avail_wrap = wrap;
	vq->inflight++;
	e = vq_elem_build(c, &g);
	e->index = le16toh(d.id);
	e->ndescs = n;
	*elem = e;
	return 1;
}

/*
 * The idx-th element of a batch goes where the previous ones end: each used
 * descriptor skips the ring slots its chain took.  All but the first are
 * complete at once; the driver reads used descriptors in order, so none of
 * them is seen before flush() writes the first one's flags.
 */
void virtqueue_packed_fill(struct virtqueue *vq, const struct vq_elem *elem,
			   uint32_t len, unsigned int idx)
{
	unsigned int slot = vq->used_slot + vq->pending;
	bool wrap = vq->used_wrap ^ ((slot / vq->num) & 1);
	uint16_t flags = wrap ? (1u << VRING_PACKED_DESC_F_AVAIL) | (1u << VRING_PACKED_DESC_F_USED) : 0;
	struct vring_packed_desc *d = &packed_ring(vq)[slot % vq->num];

	assert(idx > 0 || vq->pending == 0);
	vq_st16(&d->id, elem->index);
	vq_st32(&d->len, len);
	if (idx == 0) {
		vq->pending_flags = flags;
	} else {
		vq_wmb();
		vq_st16(&d->flags, flags);
	}
	vq->pending += elem->ndescs;
}

void virtqueue_packed_flush(struct virtqueue *vq, unsigned int count)
{
	unsigned int old = packed_pos(vq, vq->used_slot, vq->used_wrap);
	unsigned int slot;

	if (count == 0)
		return;
	/* Everything staged lands before the first descriptor turns used. */
	vq_wmb();
	vq_st16(&packed_ring(vq)[vq->used_slot].flags, vq->pending_flags);
	slot = vq->used_slot + vq->pending;
	vq->used_wrap ^= (slot / vq->num) & 1;
	vq->used_slot = slot % vq->num;
	/* Positions repeat every 2 * num slots; beyond that, signal anyway. */
	if (packed_dist(vq, vq->signalled_used, old) + vq->pending >= 2u * vq->num)
		vq->signalled_used_valid = false;
	vq->pending = 0;
}

bool virtqueue_packed_should_notify(struct virtqueue *vq)
{
	unsigned int old = vq->signalled_used;
	unsigned int new = packed_pos(vq, vq->used_slot, vq->used_wrap);
	bool valid = vq->signalled_used_valid;
	uint32_t ev;
	uint16_t off_wrap, flags, off;

	/* Our used flags store before the driver's suppression fields. */
	vq_mb();
	/* One load: offset and flags from the same driver update. */
	ev = le32toh(__atomic_load_n((const uint32_t *)vq->driver, __ATOMIC_RELAXED));
	off_wrap = ev & 0xffff;
	flags = ev >> 16;
	vq->signalled_used = new;
	vq->signalled_used_valid = true;
	if (flags == VRING_PACKED_EVENT_FLAG_DISABLE)
		return false;
	/* DESC without EVENT_IDX, or a reserved value: an extra interrupt is harmless. */
	if (flags != VRING_PACKED_EVENT_FLAG_DESC || !vq->event_idx || !valid)
		return true;
	off = off_wrap & EVENT_OFF_MASK;
	if (off >= vq->num)
		return true;
	/* Notify if the event slot is among those used since the last check. */
	return packed_dist(vq, packed_pos(vq, off, off_wrap >> VRING_PACKED_EVENT_F_WRAP_CTR), new) - 1 <
	       packed_dist(vq, old, new);
}

void virtqueue_packed_set_notification(struct virtqueue *vq, bool enable)
{
	struct vring_packed_desc_event *ev = vq->device;

	vq_st16(&ev->flags, enable ? VRING_PACKED_EVENT_FLAG_ENABLE
				   : VRING_PACKED_EVENT_FLAG_DISABLE);
	/* The caller re-checks has_work(); that read must follow this store. */
	if (enable)
		vq_mb();
}

bool virtqueue_packed_has_work(struct virtqueue *vq)
{
	uint16_t flags = vq_ld16(&packed_ring(vq)[vq->last_avail].flags);

	vq_rmb();
	return packed_desc_is_avail(flags, vq->last_avail_wrap);
}
