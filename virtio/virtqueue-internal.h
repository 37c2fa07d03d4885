/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_VIRTIO_VIRTQUEUE_INTERNAL_H
#define BRISK_VIRTIO_VIRTQUEUE_INTERNAL_H

/* Shared by virtqueue.c and the two ring kinds; not for devices. */

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/compiler.h"
#include "util/guest-mem.h"
#include "virtio/virtio_ring.h"
#include "virtio/virtqueue.h"

/*
 * The driver runs on other CPUs and writes the rings concurrently, so ring
 * fields are read and written exactly once through these (no tearing, no
 * compiler re-reads).  Ordering is explicit with the fences below.
 */
static inline uint16_t vq_ld16(const void *p)
{
	return le16toh(__atomic_load_n((const uint16_t *)p, __ATOMIC_RELAXED));
}

static inline void vq_st16(void *p, uint16_t v)
{
	__atomic_store_n((uint16_t *)p, htole16(v), __ATOMIC_RELAXED);
}

static inline void vq_st32(void *p, uint32_t v)
{
	__atomic_store_n((uint32_t *)p, htole32(v), __ATOMIC_RELAXED);
}

/* Ring index read before the entries it covers. */
#define vq_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
/* Entries written before the index that publishes them. */
#define vq_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
/* Our index store before reading the driver's suppression fields. */
#define vq_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)

/*
 * After copying a descriptor to a local, keep the compiler from going back
 * to guest memory for a field: the guest may have changed it meanwhile.
 */
#define vq_compiler_barrier() __asm__ __volatile__("" ::: "memory")

static inline int vq_fail(struct virtqueue *vq, const char *why)
{
	vq->broken = true;
	vq->error = why;
	return -1;
}

/* The chain being gathered, on the pop function's stack. */
struct vq_gather {
	uint64_t *addr;
	struct iovec *iov;
	unsigned int out;
	unsigned int in;
};

/* Appends one mapped piece; the caller checked the chain's bound. */
static inline void vq_gather_put(struct vq_gather *g, uint64_t addr, void *hva,
				 size_t len, bool write)
{
	unsigned int n = g->out + g->in;

	g->addr[n] = addr;
	g->iov[n].iov_base = hva;
	g->iov[n].iov_len = len;
	if (write)
		g->in++;
	else
		g->out++;
}

/* A buffer that no one memory region holds: see virtqueue.c. */
int vq_gather_pieces(struct virtqueue *vq, struct vq_gather *g, uint64_t addr,
		     uint32_t len, bool write);

/*
 * One descriptor's buffer.  Zero-length descriptors are skipped: they carry
 * no data, so nothing is mapped, but they still count against the chain
 * length bound and the readable-before-writable rule.
 */
static inline int vq_gather_add(struct virtqueue *vq, struct vq_gather *g,
				uint64_t addr, uint32_t len, uint16_t flags)
{
	bool write = flags & VRING_DESC_F_WRITE;
	unsigned int n = g->out + g->in;
	void *hva;

	if (!write && g->in)
		return vq_fail(vq, "readable descriptor after a writable one");
	if (len == 0)
		return 0;
	if (n >= VIRTQUEUE_MAX_SIZE)
		return vq_fail(vq, "chain has too many buffers");
	hva = guest_mem_ptr(vq->mem, addr, len);
	if (unlikely(!hva))
		return vq_gather_pieces(vq, g, addr, len, write);
	vq_gather_put(g, addr, hva, len, write);
	return 0;
}

/* The element for the gathered entries: from c, or of exactly their size. */
struct vq_elem *vq_elem_build(struct vq_elem_cache *c, const struct vq_gather *g);

int virtqueue_split_enable(struct virtqueue *vq);
int virtqueue_split_set_base(struct virtqueue *vq, uint32_t base);
int virtqueue_split_pop(struct virtqueue *vq, struct vq_elem_cache *c,
			struct vq_elem **elem);
void virtqueue_split_fill(struct virtqueue *vq, const struct vq_elem *elem,
			  uint32_t len, unsigned int idx);
void virtqueue_split_flush(struct virtqueue *vq, unsigned int count);
bool virtqueue_split_should_notify(struct virtqueue *vq);
void virtqueue_split_set_notification(struct virtqueue *vq, bool enable);
bool virtqueue_split_has_work(struct virtqueue *vq);
unsigned int virtqueue_split_slots(struct virtqueue *vq, uint16_t head);

int virtqueue_packed_enable(struct virtqueue *vq);
int virtqueue_packed_set_base(struct virtqueue *vq, uint32_t base);
int virtqueue_packed_pop(struct virtqueue *vq, struct vq_elem_cache *c,
			 struct vq_elem **elem);
void virtqueue_packed_fill(struct virtqueue *vq, const struct vq_elem *elem,
			   uint32_t len, unsigned int idx);
void virtqueue_packed_flush(struct virtqueue *vq, unsigned int count);
bool virtqueue_packed_should_notify(struct virtqueue *vq);
void virtqueue_packed_set_notification(struct virtqueue *vq, bool enable);
bool virtqueue_packed_has_work(struct virtqueue *vq);

#endif
