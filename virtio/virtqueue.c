// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Ring-kind independent part of the virtqueue: setup, element allocation
 * and dispatch to the split or packed implementation.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "virtqueue-internal.h"

void virtqueue_init(struct virtqueue *vq, const struct guest_mem *mem)
{
	*vq = (struct virtqueue){
		.mem = mem,
		/* Both wrap counters start at 1 (VIRTIO 1.2, 2.8.1). */
		.last_avail_wrap = true,
		.used_wrap = true,
		.notification = true,
	};
}

void virtqueue_reset(struct virtqueue *vq)
{
	virtqueue_init(vq, vq->mem);
}

int virtqueue_enable(struct virtqueue *vq, uint64_t features)
{
	int ret;

	struct virtqueue cfg = *vq;

	assert(vq->mem);
	/* Start from a clean ring state, keeping what the transport wrote. */
	virtqueue_init(vq, cfg.mem);
	vq->num = cfg.num;
	vq->desc_addr = cfg.desc_addr;
	vq->driver_addr = cfg.driver_addr;
	vq->device_addr = cfg.device_addr;
	vq->packed = features & (1ull << VIRTIO_F_RING_PACKED);
	vq->event_idx = features & (1ull << VIRTIO_F_RING_EVENT_IDX);
	vq->indirect = features & (1ull << VIRTIO_F_RING_INDIRECT_DESC);
	if (vq->num == 0 || vq->num > VIRTQUEUE_MAX_SIZE)
		return -1;
	ret = vq->packed ? virtqueue_packed_enable(vq) : virtqueue_split_enable(vq);
	if (ret < 0)
		return -1;
	vq->enabled = true;
	return 0;
}

uint32_t virtqueue_get_base(const struct virtqueue *vq)
{
	if (!vq->packed)
		return vq->last_avail_idx;
	return vq->last_avail | (uint32_t)vq->last_avail_wrap << 15 |
	       (uint32_t)vq->used_slot << 16 | (uint32_t)vq->used_wrap << 31;
}

int virtqueue_set_base(struct virtqueue *vq, uint32_t base)
{
	assert(vq->enabled && vq->inflight == 0 && vq->pending == 0);
	return vq->packed ? virtqueue_packed_set_base(vq, base)
			  : virtqueue_split_set_base(vq, base);
}

/*
 * A buffer across adjacent memory regions (a vhost-user front-end's table
 * may cut RAM anywhere, and a driver does not know where): one iovec per
 * region it touches, each counted against the chain's bound.  Any byte
 * outside every region fails the chain.
 */
int vq_gather_pieces(struct virtqueue *vq, struct vq_gather *g, uint64_t addr,
		     uint32_t len, bool write)
{
	while (len) {
		uint64_t piece;
		void *hva = guest_mem_ptr_part(vq->mem, addr, len, &piece);

		if (!hva)
			return vq_fail(vq, "descriptor buffer outside guest RAM");
		if (g->out + g->in >= VIRTQUEUE_MAX_SIZE)
			return vq_fail(vq, "chain has too many buffers");
		vq_gather_put(g, addr, hva, piece, write);
		addr += piece;
		len -= (uint32_t)piece;
	}
	return 0;
}

/* The arrays follow the caller's struct, aligned for iovec. */
static size_t vq_elem_head(size_t size)
{
	return (size + _Alignof(struct iovec) - 1) & ~(_Alignof(struct iovec) - 1);
}

static size_t vq_elem_bytes(size_t size, unsigned int n)
{
	return vq_elem_head(size) + n * (sizeof(struct iovec) + sizeof(uint64_t));
}

void vq_elem_cache_init(struct vq_elem_cache *c, size_t size, unsigned int max)
{
	assert(size >= sizeof(struct vq_elem));
	*c = (struct vq_elem_cache){ .size = size, .max = max };
}

void vq_elem_cache_destroy(struct vq_elem_cache *c)
{
	while (c->free) {
		void *e = c->free;

		memcpy(&c->free, e, sizeof(void *));
		free(e);
	}
	c->count = 0;
}

void vq_elem_put(struct vq_elem_cache *c, struct vq_elem *e)
{
	if (!e)
		return;
	if (!e->cached || c->count >= c->max) {
		free(e);
		return;
	}
	memcpy(e, &c->free, sizeof(void *));
	c->free = e;
	c->count++;
}

struct vq_elem *vq_elem_build(struct vq_elem_cache *c, const struct vq_gather *g)
{
	unsigned int n = g->out + g->in;
	bool cached = c->max && n <= VQ_ELEM_CACHE_SEGS;
	unsigned int cap = cached ? VQ_ELEM_CACHE_SEGS : n;
	struct vq_elem *e;
	struct iovec *iov;
	uint64_t *addr;

	assert(c->size >= sizeof(*e));
	if (cached && c->free) {
		e = c->free;
		memcpy(&c->free, e, sizeof(void *));
		c->count--;
	} else {
		e = malloc(vq_elem_bytes(c->size, cap));
	}
	if (!e) {
		/* At most 24 KiB beyond the device's struct: the host is done for. */
		error_report("out of memory popping a virtqueue element");
		abort();
	}
	memset(e, 0, c->size);
	e->cached = cached;
	iov = (struct iovec *)((char *)e + vq_elem_head(c->size));
	addr = (uint64_t *)(iov + cap);
	memcpy(iov, g->iov, n * sizeof(*iov));
	memcpy(addr, g->addr, n * sizeof(*addr));
	e->out_num = g->out;
	e->in_num = g->in;
	e->out_sg = iov;
	e->in_sg = iov + g->out;
	e->out_addr = addr;
	e->in_addr = addr + g->out;
	return e;
}

static int virtqueue_pop_ring(struct virtqueue *vq, struct vq_elem_cache *c,
			      struct vq_elem **elem)
{
	return vq->packed ? virtqueue_packed_pop(vq, c, elem)
			  : virtqueue_split_pop(vq, c, elem);
}

/*
 * A driver never has more buffers outstanding than the ring holds: with
 * the whole ring in use, a buffer on offer is a head offered again while
 * still in use.  An empty ring is popped as ever (notification included).
 */
static __attribute__((cold, noinline)) int
virtqueue_pop_full(struct virtqueue *vq, struct vq_elem_cache *c, struct vq_elem **elem)
{
	int ret = virtqueue_pop_ring(vq, c, elem);

	if (ret != 1)
		return ret;
	vq_elem_put(c, *elem);
	*elem = NULL;
	return vq_fail(vq, "more buffers in use than the queue size");
}

int virtqueue_pop_cached(struct virtqueue *vq, struct vq_elem_cache *c,
			 struct vq_elem **elem)
{
	if (unlikely(vq->broken))
		return -1;
	if (unlikely(!vq->enabled))
		return 0;
	/* Checked before, out of line: the pops' own code stays as it was. */
	if (unlikely(vq->inflight >= vq->num))
		return virtqueue_pop_full(vq, c, elem);
	return virtqueue_pop_ring(vq, c, elem);
}

int virtqueue_pop(struct virtqueue *vq, size_t size, struct vq_elem **elem)
{
	/* Keeps nothing: every element is its own malloc(), for free(). */
	struct vq_elem_cache c = { .size = size };

	return virtqueue_pop_cached(vq, &c, elem);
}

void virtqueue_fill(struct virtqueue *vq, const struct vq_elem *elem,
		    uint32_t len, unsigned int idx)
{
	if (unlikely(!vq->enabled || vq->broken))
		return;
	if (vq->packed)
		virtqueue_packed_fill(vq, elem, len, idx);
	else
		virtqueue_split_fill(vq, elem, len, idx);
}

void virtqueue_flush(struct virtqueue *vq, unsigned int count)
{
	if (unlikely(!vq->enabled || vq->broken))
		return;
	assert(count <= vq->inflight);
	if (vq->packed)
		virtqueue_packed_flush(vq, count);
	else
		virtqueue_split_flush(vq, count);
	vq->inflight -= count;
}

void virtqueue_push(struct virtqueue *vq, const struct vq_elem *elem, uint32_t len)
{
	virtqueue_fill(vq, elem, len, 0);
	virtqueue_flush(vq, 1);
}

bool virtqueue_should_notify(struct virtqueue *vq)
{
	if (unlikely(!vq->enabled || vq->broken))
		return false;
	return vq->packed ? virtqueue_packed_should_notify(vq)
			  : virtqueue_split_should_notify(vq);
}

void virtqueue_set_notification(struct virtqueue *vq, bool enable)
{
	vq->notification = enable;
	if (unlikely(!vq->enabled || vq->broken))
		return;
	if (vq->packed)
		virtqueue_packed_set_notification(vq, enable);
	else
		virtqueue_split_set_notification(vq, enable);
}

unsigned int virtqueue_elem_slots(struct virtqueue *vq, const struct vq_elem *e)
{
	return vq->packed ? e->ndescs : virtqueue_split_slots(vq, e->index);
}

bool virtqueue_has_work(struct virtqueue *vq)
{
	if (unlikely(!vq->enabled || vq->broken))
		return false;
	return vq->packed ? virtqueue_packed_has_work(vq)
			  : virtqueue_split_has_work(vq);
}
