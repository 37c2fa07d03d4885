/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_VIRTIO_VIRTQUEUE_H
#define BRISK_VIRTIO_VIRTQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/guest-mem.h"

/* Largest queue brisk offers; sizes the on-stack gather arrays of pop. */
#define VIRTQUEUE_MAX_SIZE 1024

/*
 * One popped chain.  Device-readable buffers come first in the chain and
 * land in out_*, device-writable ones in in_* (the guest's point of view).
 * virtqueue_pop() allocates the element with only the entries it used and
 * the device frees it with free() once pushed or dropped;
 * virtqueue_pop_cached() takes it from a cache, and vq_elem_put() gives it
 * back.
 */
struct vq_elem {
	uint16_t index;		/* head (split) or buffer id (packed) */
	uint16_t ndescs;	/* ring slots the chain used (packed) */
	unsigned int out_num;
	unsigned int in_num;
	bool cached;		/* sized for a vq_elem_cache */
	uint64_t *out_addr;
	uint64_t *in_addr;
	struct iovec *out_sg;
	struct iovec *in_sg;
};

/*
 * Transport-agnostic ring state.  The transport writes the fields above the
 * line while the queue is disabled, then calls virtqueue_enable(); the rest
 * belongs to virtio/.
 */
struct virtqueue {
	uint16_t num;		/* queue size, power of two for split */
	uint64_t desc_addr;	/* descriptor area */
	uint64_t driver_addr;	/* avail ring / driver event suppression */
	uint64_t device_addr;	/* used ring / device event suppression */
	/* ---- */
	const struct guest_mem *mem;
	bool packed;
	bool event_idx;
	bool indirect;
	bool enabled;
	bool broken;		/* a guest error was seen; pop refuses until reset */

	/* split ring */
	uint16_t last_avail_idx;
	uint16_t shadow_avail_idx;
	uint16_t used_idx;

	/* packed ring */
	uint16_t last_avail;	/* next descriptor slot to read */
	bool last_avail_wrap;
	uint16_t used_slot;	/* next descriptor slot to write back */
	bool used_wrap;

	/* notification suppression */
	uint16_t signalled_used;
	bool signalled_used_valid;
	unsigned int inflight;	/* in use: popped, not yet flushed; <= num */
	/* fill() stages here, flush() publishes */
	unsigned int pending;

	/*
	 * Host views of the three ring areas, checked once by
	 * virtqueue_enable() so the hot path does not look them up again.
	 */
	void *desc;
	void *driver;
	void *device;
	struct vq_inflight *ifl;	/* split: a vhost-user inflight region, or NULL */
	bool notification;	/* driver kicks wanted (set_notification) */
	uint16_t pending_flags;	/* packed: first staged descriptor's flags */
	const char *error;	/* why the ring broke, for the device's report */
};

/* Feature bits the ring layer understands (VIRTIO 1.2, 6). */
#define VIRTIO_F_RING_INDIRECT_DESC 28
#define VIRTIO_F_RING_EVENT_IDX 29
#define VIRTIO_F_VERSION_1 32
#define VIRTIO_F_RING_PACKED 34

void virtqueue_init(struct virtqueue *vq, const struct guest_mem *mem);
/*
 * Checks size and ring addresses (inside guest RAM, aligned) against the
 * negotiated features and starts the queue.  -1: the driver set it up wrong.
 */
int virtqueue_enable(struct virtqueue *vq, uint64_t features);
/* Forget everything in flight; back to the state after init. */
void virtqueue_reset(struct virtqueue *vq);

/*
 * Where the ring stands, as vhost and vhost-user carry it across a stop
 * and start.  Split: the next available index to read (the used index
 * lives in the ring itself).  Packed: bits 0-14 the next slot to read,
 * bit 15 its wrap counter, bits 16-30 the next slot to write back, bit
 * 31 its wrap counter.
 */
uint32_t virtqueue_get_base(const struct virtqueue *vq);
/*
 * After virtqueue_enable(): continue from base instead of the ring's
 * start (split takes the used index from the used ring).  -1 when base
 * names a slot beyond the queue size; the ring is then left as enabled.
 */
int virtqueue_set_base(struct virtqueue *vq, uint32_t base);

/*
 * Takes the next available chain.  Returns 1 with *elem set, 0 when the ring
 * is empty, -1 when the guest broke the ring rules: vq->broken is then set
 * (vq->error says why) and the device must enter
 * VIRTIO_CONFIG_S_NEEDS_RESET.  size >= sizeof (struct vq_elem) lets a
 * device embed the element at the start of its own request struct; the
 * first size bytes come back zeroed.  Zero-length descriptors are skipped
 * (they map nothing), so out_num + in_num may be less than the chain length.
 *
 * An element is in use from pop until flush publishes it.  A driver can
 * never have more buffers outstanding than the queue holds, so popping
 * one more while num are in use is a guest error (a driver that offers a
 * head again before it came back), not a reason to allocate more.
 *
 * With notifications enabled (virtqueue_set_notification), 0 also means
 * the driver was asked for a kick for the next buffer, after a full
 * barrier: a caller may sleep until that kick.  With them disabled it
 * only means "nothing now".
 */
int virtqueue_pop(struct virtqueue *vq, size_t size, struct vq_elem **elem);

/*
 * Elements kept for reuse, one cache per queue: a device that pops and
 * releases under one lock (or on one thread) then pays no malloc() and
 * free() per request.  Chains of up to VQ_ELEM_CACHE_SEGS buffers get an
 * element sized for that many, which goes back to the cache when
 * released (up to max kept); longer chains get one of their own size.
 */
#define VQ_ELEM_CACHE_SEGS 16
struct vq_elem_cache {
	size_t size;		/* the device's struct, the element first */
	unsigned int max;	/* elements kept at most; 0 keeps none */
	unsigned int count;
	void *free;		/* kept elements, linked through their first bytes */
};

void vq_elem_cache_init(struct vq_elem_cache *c, size_t size, unsigned int max);
/* Frees the kept elements; those still out are the device's to release. */
void vq_elem_cache_destroy(struct vq_elem_cache *c);
/* virtqueue_pop() with its element from c; give it back with vq_elem_put(). */
int virtqueue_pop_cached(struct virtqueue *vq, struct vq_elem_cache *c,
			 struct vq_elem **elem);
void vq_elem_put(struct vq_elem_cache *c, struct vq_elem *e);

/* Stage elem as used with len bytes written, idx-th of a batch. */
void virtqueue_fill(struct virtqueue *vq, const struct vq_elem *elem,
		    uint32_t len, unsigned int idx);
/* Publish count staged elements to the driver in one go. */
void virtqueue_flush(struct virtqueue *vq, unsigned int count);
/* fill + flush of one element. */
void virtqueue_push(struct virtqueue *vq, const struct vq_elem *elem, uint32_t len);

/*
 * vhost-user's inflight I/O tracking (VHOST_USER_PROTOCOL_F_INFLIGHT_SHMFD;
 * QEMU's docs/interop/vhost-user.rst, "Inflight I/O tracking"): a region
 * the front-end keeps records which heads a back-end has taken and not
 * yet used, so that a back-end restarted after a crash serves each of
 * them exactly once more and no request twice.  Split rings only.  The
 * layout is the protocol's, in host byte order.
 */
struct vq_inflight_desc {
	uint8_t inflight;	/* the head is taken and not yet used */
	uint8_t padding[5];
	uint16_t next;		/* the last batch of used heads, as a list */
	uint64_t counter;	/* the order heads were taken in */
};

struct vq_inflight_region {
	uint64_t features;
	uint16_t version;	/* 1; 0: a region no back-end has used */
	uint16_t desc_num;	/* the ring's size */
	uint16_t last_batch_head;
	uint16_t used_idx;	/* the used index once the last batch settled */
	struct vq_inflight_desc desc[];
};

/* The back-end's own state for one tracked ring. */
struct vq_inflight {
	struct vq_inflight_region *region;	/* shared: written, never trusted */
	uint64_t counter;
	bool taken_up;		/* from a previous back-end, not fresh */
	uint16_t nresubmit, resubmitted;
	uint16_t resubmit[VIRTQUEUE_MAX_SIZE];	/* heads to pop first, in order */
	uint16_t batch[VIRTQUEUE_MAX_SIZE];	/* heads filled since the last flush */
};

/* Bytes one ring of num entries needs of a region. */
size_t virtqueue_inflight_size(unsigned int num);
/*
 * After virtqueue_enable() and virtqueue_set_base(): tracks the ring's
 * requests in region (size bytes, which may hold anything).  A zeroed
 * region starts afresh, where the base said.  One a previous back-end
 * used is taken up (ifl->taken_up): its last batch is settled against
 * the used ring, the heads it had taken and not used are popped again
 * first, in the order it took them, and the available ring continues
 * after everything it took, whatever the base said.  NULL, or why the
 * region does not fit the ring: the ring is then not tracked, though the
 * region may have been written.  A packed ring is not tracked: NULL.
 */
const char *virtqueue_inflight_attach(struct virtqueue *vq, struct vq_inflight *ifl,
				      void *region, size_t size);
/* True while heads taken up from a region wait to be popped again. */
bool virtqueue_inflight_pending(const struct virtqueue *vq);

/* Whether the driver wants an interrupt for what was flushed (EVENT_IDX aware). */
bool virtqueue_should_notify(struct virtqueue *vq);
/*
 * Ask the driver for (or to stop sending) kicks, e.g. around a poll loop.
 * A device that sleeps until the next kick must, after pop returned 0,
 * enable notifications and then check has_work() once more: enabling
 * orders its store before that read, which closes the race with a driver
 * that added a buffer meanwhile without kicking.
 */
void virtqueue_set_notification(struct virtqueue *vq, bool enable);
/* True if the driver has made buffers available that pop has not taken. */
bool virtqueue_has_work(struct virtqueue *vq);
/*
 * The ring slots a popped chain holds until it is used: what the driver
 * cannot post again meanwhile.  For the device's bookkeeping only; a
 * hostile driver may make it read wrong, never out of bounds.
 */
unsigned int virtqueue_elem_slots(struct virtqueue *vq, const struct vq_elem *e);

#endif
