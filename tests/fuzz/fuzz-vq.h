/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_FUZZ_VQ_H
#define BRISK_TESTS_FUZZ_VQ_H

/*
 * The body of fuzz-split-pop and fuzz-packed-pop: the input is a guest
 * that set up one virtqueue, and we are the device popping and pushing
 * until the ring is empty or broken.
 *
 * Input layout (little-endian):
 *   u8  log2 of the queue size (mod 11: 1 to 1024)
 *   u8  bit 0 INDIRECT_DESC, bit 1 EVENT_IDX, bit 2 complete in batches,
 *       bit 3 toggle notifications around each pop, bit 4 a driver that
 *       offers the same chains again each time the ring runs dry,
 *       without waiting for them to come back (split: the avail index
 *       moves on by the queue size; packed: every slot is marked
 *       available for the lap the device is on)
 *   u16 where guest RAM is cut into two regions (0: one region)
 *   u32 descriptor area, u32 driver area, u32 device area (guest addresses)
 *   u8  batch size
 *   ... guest RAM, at guest address 0, exactly as long as the rest
 */
#include <assert.h>
#include <endian.h>
#include <stdbool.h>
#include <stdint.h>

#include "fuzz-util.h"
#include "virtio/virtio_ring.h"
#include "virtio/virtqueue.h"

#define FUZZ_VQ_HDR 16
#define FUZZ_VQ_MAX_POPS (4 * VIRTQUEUE_MAX_SIZE)
#define FUZZ_VQ_REOFFERS 16

/* The driver offers its chains again (flag bit 4). */
static inline void fuzz_vq_reoffer(struct virtqueue *vq)
{
	if (!vq->packed) {
		uint16_t *idx = (uint16_t *)vq->driver + 1;

		*idx = htole16((uint16_t)(le16toh(*idx) + vq->num));
		return;
	}
	struct vring_packed_desc *ring = vq->desc;
	uint16_t mark = vq->last_avail_wrap ? (1u << VRING_PACKED_DESC_F_AVAIL) : (1u << VRING_PACKED_DESC_F_USED);

	for (unsigned i = 0; i < vq->num; i++)
		ring[i].flags = htole16((uint16_t)((le16toh(ring[i].flags) &
			~((1u << VRING_PACKED_DESC_F_AVAIL) | (1u << VRING_PACKED_DESC_F_USED))) | mark));
}

/* What a device does with a buffer: read what it may read, write the rest. */
static inline uint32_t fuzz_vq_touch(const struct vq_elem *e)
{
	volatile uint8_t sink = 0;
	uint64_t written = 0;

	for (unsigned i = 0; i < e->out_num; i++) {
		const uint8_t *b = e->out_sg[i].iov_base;

		assert(e->out_sg[i].iov_len > 0);
		sink ^= b[0] ^ b[e->out_sg[i].iov_len - 1];
	}
	for (unsigned i = 0; i < e->in_num; i++) {
		uint8_t *b = e->in_sg[i].iov_base;

		assert(e->in_sg[i].iov_len > 0);
		b[0] = 0x5a;
		b[e->in_sg[i].iov_len - 1] = 0xa5;
		written += e->in_sg[i].iov_len;
	}
	(void)sink;
	return written > UINT32_MAX ? UINT32_MAX : (uint32_t)written;
}

static inline int fuzz_vq_run(const uint8_t *data, size_t size, bool packed)
{
	struct fuzz_in in = { data, size };
	struct vq_elem *batch[VIRTQUEUE_MAX_SIZE];
	struct fuzz_ram ram;
	struct virtqueue vq;
	unsigned nbatch = 0, reoffers = 0;

	if (size <= FUZZ_VQ_HDR)
		return 0;
	unsigned num = 1u << (fuzz_u8(&in) % 11);
	uint8_t flags = fuzz_u8(&in);
	uint16_t split = fuzz_u16(&in);
	uint64_t desc = fuzz_u32(&in), driver = fuzz_u32(&in), device = fuzz_u32(&in);
	unsigned batch_max = fuzz_u8(&in) % 16 + 1;
	uint64_t features = 1ull << VIRTIO_F_VERSION_1;

	if (packed)
		features |= 1ull << VIRTIO_F_RING_PACKED;
	if (flags & 1)
		features |= 1ull << VIRTIO_F_RING_INDIRECT_DESC;
	if (flags & 2)
		features |= 1ull << VIRTIO_F_RING_EVENT_IDX;
	if (fuzz_ram_init(&ram, in.p, in.n, in.n, split) < 0)
		return 0;

	virtqueue_init(&vq, &ram.mem);
	vq.num = num;
	vq.desc_addr = desc;
	vq.driver_addr = driver;
	vq.device_addr = device;
	if (virtqueue_enable(&vq, features) < 0)
		goto out;

	for (unsigned i = 0; i < FUZZ_VQ_MAX_POPS; i++) {
		struct vq_elem *e = NULL;
		int ret;

		if (flags & 8)
			virtqueue_set_notification(&vq, false);
		ret = virtqueue_pop(&vq, sizeof(*e), &e);
		if (flags & 8) {
			virtqueue_set_notification(&vq, true);
			(void)virtqueue_has_work(&vq);
		}
		if (ret == 0 && (flags & 16) && reoffers++ < FUZZ_VQ_REOFFERS) {
			fuzz_vq_reoffer(&vq);
			continue;
		}
		if (ret <= 0) {
			/* A broken ring must say why and refuse further pops. */
			assert(ret == 0 || (vq.broken && vq.error));
			assert(ret == 0 || virtqueue_pop(&vq, sizeof(*e), &e) == -1);
			break;
		}
		assert(e->index < num);
		/* Never more in use than the ring holds, however it is offered. */
		assert(vq.inflight <= num);
		uint32_t len = fuzz_vq_touch(e);

		if (!(flags & 4)) {
			virtqueue_push(&vq, e, len);
			(void)virtqueue_should_notify(&vq);
			free(e);
			continue;
		}
		batch[nbatch++] = e;
		if (nbatch < batch_max)
			continue;
		for (unsigned k = 0; k < nbatch; k++)
			virtqueue_fill(&vq, batch[k], len, k);
		virtqueue_flush(&vq, nbatch);
		(void)virtqueue_should_notify(&vq);
		while (nbatch)
			free(batch[--nbatch]);
	}
	if (nbatch && !vq.broken) {
		for (unsigned k = 0; k < nbatch; k++)
			virtqueue_fill(&vq, batch[k], 0, k);
		virtqueue_flush(&vq, nbatch);
	}
	while (nbatch)
		free(batch[--nbatch]);
	virtqueue_reset(&vq);
out:
	fuzz_ram_free(&ram);
	return 0;
}

#endif
