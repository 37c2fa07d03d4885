// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Split virtqueue (VIRTIO 1.2, 2.7): descriptor table, available ring
 * written by the driver, used ring written by us.
 *
 * virtqueue_split_enable() checks that the three ring areas lie wholly
 * inside guest RAM and are aligned (desc 16, avail 2, used 4), and caches
 * their host addresses.  Guest RAM stays mapped for the life of the VM, so
 * the hot path uses the cached pointers without another lookup; every
 * index read from the rings is still bounded by the queue size before use.
 * Descriptor buffers and indirect tables go through guest_mem_ptr() each
 * time.
 */
#include <assert.h>
#include <string.h>

#include "virtqueue-internal.h"

static inline struct vring_avail *split_avail(const struct virtqueue *vq)
{
	return vq->driver;
}

static inline struct vring_used *split_used(const struct virtqueue *vq)
{
	return vq->device;
}

/* EVENT_IDX fields trail the rings. */
static inline uint16_t *split_used_event(const struct virtqueue *vq)
{
	return &split_avail(vq)->ring[vq->num];
}

static inline uint16_t *split_avail_event(const struct virtqueue *vq)
{
	return (uint16_t *)&split_used(vq)->ring[vq->num];
}

int virtqueue_split_enable(struct virtqueue *vq)
{
	unsigned int num = vq->num;

	/* Free-running 16-bit indices only map onto the ring if num | 65536. */
	if (num & (num - 1))
		return -1;
	if (vq->desc_addr % 16 || vq->driver_addr % 2 || vq->device_addr % 4)
		return -1;
	vq->desc = guest_mem_ptr(vq->mem, vq->desc_addr, vring_split_desc_size(num));
	vq->driver = guest_mem_ptr(vq->mem, vq->driver_addr, vring_split_avail_size(num));
	vq->device = guest_mem_ptr(vq->mem, vq->device_addr, vring_split_used_size(num));
	if (!vq->desc || !vq->driver || !vq->device)
		return -1;
	return 0;
}

int virtqueue_split_set_base(struct virtqueue *vq, uint32_t base)
{
	if (base > UINT16_MAX)
		return -1;
	vq->last_avail_idx = vq->shadow_avail_idx = (uint16_t)base;
	/* The driver's view of what was used is the one that counts. */
	vq->used_idx = vq_ld16(&split_used(vq)->idx);
	vq->signalled_used_valid = false;
	return 0;
}

/*
 * Walks the chain at head.  Each table (the ring's, or one indirect table)
 * bounds the descriptors visited in it by its own size, so a looping next
 * chain ends in an error rather than spinning.
 */
static int split_gather(struct virtqueue *vq, struct vq_gather *g, uint16_t head)
{
	const struct vring_desc *table = vq->desc;
	unsigned int max = vq->num, seen = 0, i = head;
	bool in_indirect = false;
	struct vring_desc d;

	for (;;) {
		uint16_t flags;
		uint32_t len;

		if (++seen > max)
			return vq_fail(vq, "descriptor chain longer than its table");
		memcpy(&d, &table[i], sizeof(d));
		vq_compiler_barrier();
		flags = le16toh(d.flags);
		len = le32toh(d.len);

		if (flags & VRING_DESC_F_INDIRECT) {
			if (!vq->indirect)
				return vq_fail(vq, "indirect descriptor not negotiated");
			if (in_indirect)
				return vq_fail(vq, "indirect descriptor inside an indirect table");
			if (flags & VRING_DESC_F_NEXT)
				return vq_fail(vq, "indirect descriptor with NEXT set");
			if (len == 0 || len % sizeof(d) ||
			    len / sizeof(d) > VIRTQUEUE_MAX_SIZE)
				return vq_fail(vq, "bad indirect table length");
			table = guest_mem_ptr(vq->mem, le64toh(d.addr), len);
			if (!table)
				return vq_fail(vq, "indirect table outside guest RAM");
			max = len / sizeof(d);
			seen = 0;
			i = 0;
			in_indirect = true;
			continue;
		}
		if (vq_gather_add(vq, g, le64toh(d.addr), len, flags) < 0)
			return -1;
		if (!(flags & VRING_DESC_F_NEXT))
			return 0;
		i = le16toh(d.next);
		if (i >= max)
			return vq_fail(vq, "next descriptor index out of range");
	}
}

/*
 * The ring's own descriptors the chain at head holds (an indirect table
 * counts one).  Walked again rather than counted by pop, which only one
 * device needs (virtio-net, to know when the driver can post no more),
 * and never trusted for memory: at most num, however the table reads.
 */
unsigned int virtqueue_split_slots(struct virtqueue *vq, uint16_t head)
{
	const struct vring_desc *table = vq->desc;
	unsigned int n = 1, i = head;

	for (; n < vq->num; n++) {
		uint16_t flags = vq_ld16(&table[i].flags);

		if ((flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT)) != VRING_DESC_F_NEXT)
			break;
		i = vq_ld16(&table[i].next);
		if (i >= vq->num)
			break;
	}
	return n;
}

/* Reads the driver's avail index; false (and broken) if it is impossible. */
static bool split_read_avail_idx(struct virtqueue *vq)
{
	uint16_t idx = vq_ld16(&split_avail(vq)->idx);

	if ((uint16_t)(idx - vq->last_avail_idx) > vq->num) {
		vq_fail(vq, "available index ahead by more than the queue size");
		return false;
	}
	vq->shadow_avail_idx = idx;
	/* The ring entries up to idx are read after idx itself. */
	vq_rmb();
	return true;
}

/* A taken head, as the inflight region records it (virtqueue-inflight.c). */
static void split_inflight_take(struct vq_inflight *ifl, uint16_t head)
{
	struct vq_inflight_desc *d = &ifl->region->desc[head];

	d->counter = ifl->counter++;
	vq_compiler_barrier();
	d->inflight = 1;
}

/* The next available head: 1 with *head, 0 when there is none, -1 broken. */
static inline int split_next_avail(struct virtqueue *vq, uint16_t *head)
{
	uint16_t last = vq->last_avail_idx;

	if (last == vq->shadow_avail_idx) {
		if (!split_read_avail_idx(vq))
			return -1;
		if (vq->event_idx && vq->notification) {
			vq_st16(split_avail_event(vq), vq->shadow_avail_idx);
			/*
			 * Empty: the caller may sleep until the next kick.  The
			 * event store must reach the driver before we look at
			 * its index once more, or a buffer added meanwhile
			 * would get neither a kick nor a pop.
			 */
			if (last == vq->shadow_avail_idx) {
				vq_mb();
				if (!split_read_avail_idx(vq))
					return -1;
			}
		}
		if (last == vq->shadow_avail_idx)
			return 0;
	}
	*head = vq_ld16(&split_avail(vq)->ring[last & (vq->num - 1)]);
	if (*head >= vq->num)
		return vq_fail(vq, "available head index out of range");
	return 1;
}

int virtqueue_split_pop(struct virtqueue *vq, struct vq_elem_cache *c,
			struct vq_elem **elem)
{
	/*
	 * Fully written before they are read; zeroing 24 KiB per request
	 * would dominate the cost of pop (tests/bench/virtqueue-pop).
	 */
	uint64_t addr[VIRTQUEUE_MAX_SIZE] BRISK_UNINITIALIZED;
	struct iovec iov[VIRTQUEUE_MAX_SIZE] BRISK_UNINITIALIZED;
	struct vq_gather g = { .addr = addr, .iov = iov };
	/* A head a previous back-end took and never used comes first. */
	bool again = unlikely(vq->ifl) && vq->ifl->resubmitted < vq->ifl->nresubmit;
	uint16_t head;
	struct vq_elem *e;
	int r;

	if (again)
		head = vq->ifl->resubmit[vq->ifl->resubmitted];
	else if ((r = split_next_avail(vq, &head)) <= 0)
		return r;
	if (split_gather(vq, &g, head) < 0)
		return -1;
	if (again)
		vq->ifl->resubmitted++;
	else
		vq->last_avail_idx++;
	vq->inflight++;
	if (unlikely(vq->ifl))
		split_inflight_take(vq->ifl, head);
	e = vq_elem_build(c, &g);
	e->index = head;
	e->ndescs = 1;
	*elem = e;
	return 1;
}

void virtqueue_split_fill(struct virtqueue *vq, const struct vq_elem *elem,
			  uint32_t len, unsigned int idx)
{
	uint16_t slot = (uint16_t)(vq->used_idx + idx) & (vq->num - 1);
	struct vring_used_elem *u = &split_used(vq)->ring[slot];

	vq_st32(&u->id, elem->index);
	vq_st32(&u->len, len);
	if (unlikely(vq->ifl)) {
		struct vq_inflight_region *r = vq->ifl->region;

		assert(idx < vq->num);
		vq->ifl->batch[idx] = elem->index;
		r->desc[elem->index].next = r->last_batch_head;
		r->last_batch_head = elem->index;
	}
}

void virtqueue_split_flush(struct virtqueue *vq, unsigned int count)
{
	uint16_t old = vq->used_idx, new = old + count;

	/* All used elements land before the one index store that shows them. */
	vq_wmb();
	vq_st16(&split_used(vq)->idx, new);
	vq->used_idx = new;
	if (unlikely(vq->ifl)) {
		struct vq_inflight_region *r = vq->ifl->region;

		/* A crash from here on leaves a batch the region can settle. */
		vq_compiler_barrier();
		for (unsigned int i = 0; i < count; i++)
			r->desc[vq->ifl->batch[i]].inflight = 0;
		vq_compiler_barrier();
		r->used_idx = new;
	}
	/* 16-bit distance to the last signalled index would be ambiguous. */
	if ((uint16_t)(new - vq->signalled_used) < (uint16_t)(new - old))
		vq->signalled_used_valid = false;
}

bool virtqueue_split_should_notify(struct virtqueue *vq)
{
	uint16_t old = vq->signalled_used, new = vq->used_idx;
	bool valid = vq->signalled_used_valid;

	/* Our used index store before the driver's suppression fields. */
	vq_mb();
	if (!vq->event_idx)
		return !(vq_ld16(&split_avail(vq)->flags) & VRING_AVAIL_F_NO_INTERRUPT);
	vq->signalled_used = new;
	vq->signalled_used_valid = true;
	return !valid || vring_need_event(vq_ld16(split_used_event(vq)), new, old);
}

void virtqueue_split_set_notification(struct virtqueue *vq, bool enable)
{
	if (vq->event_idx) {
		/*
		 * On: kick when the driver publishes the entry after all we know
		 * of.  Off: point the event at an entry the driver has already
		 * passed, or the request made when kicks were last enabled
		 * would still stand and cost one kick.
		 */
		vq_st16(split_avail_event(vq),
			enable ? vq->shadow_avail_idx : (uint16_t)(vq->shadow_avail_idx - 1));
	} else {
		vq_st16(&split_used(vq)->flags, enable ? 0 : VRING_USED_F_NO_NOTIFY);
	}
	/* The caller re-checks has_work(); that read must follow this store. */
	if (enable)
		vq_mb();
}

bool virtqueue_split_has_work(struct virtqueue *vq)
{
	if (vq->shadow_avail_idx != vq->last_avail_idx || virtqueue_inflight_pending(vq))
		return true;
	/* An impossible index is work too: pop reports it. */
	if (!split_read_avail_idx(vq))
		return true;
	return vq->shadow_avail_idx != vq->last_avail_idx;
}
