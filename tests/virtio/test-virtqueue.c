// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Virtqueue unit tests: a guest-side driver in this process against the
 * device side in virtio/, for both ring kinds, honest and hostile.
 */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vq-driver.h"

#include "check.h"

#define F_INDIRECT (1ull << VIRTIO_F_RING_INDIRECT_DESC)
#define F_EVENT_IDX (1ull << VIRTIO_F_RING_EVENT_IDX)
#define F_PACKED (1ull << VIRTIO_F_RING_PACKED)
#define F_BASE ((1ull << VIRTIO_F_VERSION_1) | F_INDIRECT)

#define RAM_SIZE (4ull << 20)

static const char *kind(bool packed)
{
	return packed ? "packed" : "split";
}

static uint64_t feats(bool packed, uint64_t extra)
{
	return F_BASE | extra | (packed ? F_PACKED : 0);
}

/* A virtio-blk-like request: header out, data in, status in. */
static unsigned int blk_segs(struct vq_driver *d, struct drv_seg *s, unsigned int slot)
{
	uint64_t base = d->data + (uint64_t)slot * 0x2000;

	s[0] = (struct drv_seg){ base, 16, false };
	s[1] = (struct drv_seg){ base + 0x1000, 4096, true };
	s[2] = (struct drv_seg){ base + 0x100, 1, true };
	return 3;
}

static bool elem_matches(struct vq_driver *d, const struct vq_elem *e,
			 const struct drv_seg *s, unsigned int n)
{
	unsigned int out = 0, in = 0;

	for (unsigned int i = 0; i < n; i++) {
		const struct iovec *iov;
		uint64_t addr;

		if (s[i].len == 0)
			continue;
		if (s[i].write) {
			if (in >= e->in_num)
				return false;
			iov = &e->in_sg[in];
			addr = e->in_addr[in++];
		} else {
			if (out >= e->out_num)
				return false;
			iov = &e->out_sg[out];
			addr = e->out_addr[out++];
		}
		if (addr != s[i].gpa || iov->iov_len != s[i].len ||
		    iov->iov_base != drv_ptr(d, s[i].gpa))
			return false;
	}
	return out == e->out_num && in == e->in_num;
}

static void test_roundtrip(bool packed, bool indirect)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct drv_seg s[3];
	struct vq_elem *e = NULL;
	uint16_t id;
	uint32_t len;

	drv_init(&d, packed, 16, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == 0);
	CHECK(!virtqueue_has_work(&vq));
	for (unsigned int round = 0; round < 40; round++) {
		unsigned int n = blk_segs(&d, s, round % 8);
		int head = drv_add(&d, s, n, indirect);

		CHECK(head >= 0);
		CHECK(virtqueue_has_work(&vq));
		CHECK(virtqueue_pop(&vq, sizeof(*e) + 40, &e) == 1);
		CHECK(e->index == head);
		CHECK(e->out_num == 1 && e->in_num == 2);
		CHECK(elem_matches(&d, e, s, n));
		CHECK(drv_reap(&d, &id, &len) == 0);
		virtqueue_push(&vq, e, 4097);
		CHECK(drv_reap(&d, &id, &len) == 1);
		CHECK(id == head && len == 4097);
		free(e);
		CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == 0);
	}
	CHECK(!vq.broken && drv_canary_ok(&d));
	check_case("roundtrip %s%s", kind(packed), indirect ? " indirect" : "");
	drv_destroy(&d);
}

/* Random chain lengths around the ring many times, with batches in flight. */
static void test_wrap(bool packed, bool indirect)
{
	struct vq_driver d;
	struct virtqueue vq;
	unsigned int num = 32, done = 0, seed = 1;
	struct vq_elem *e[32];
	struct drv_seg s[8];
	unsigned int ns[32];
	int heads[32];

	drv_init(&d, packed, num, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	while (done < 10 * num) {
		unsigned int batch = 0, popped = 0;
		uint16_t id;
		uint32_t len;

		/* Add chains of 1..8 descriptors until the ring is full. */
		for (;;) {
			unsigned int n = 1 + (seed = seed * 1103515245 + 12345) / 65536 % 8;
			unsigned int nout = n / 2;

			for (unsigned int i = 0; i < n; i++)
				s[i] = (struct drv_seg){ d.data + 0x100 * (batch * 8 + i),
							 (uint32_t)(i + 1), i >= nout };
			heads[batch] = drv_add(&d, s, n, indirect);
			if (heads[batch] < 0)
				break;
			ns[batch++] = n;
			if (batch == num)
				break;
		}
		CHECK(batch > 0);
		while (popped < batch && virtqueue_pop(&vq, sizeof(*e[0]), &e[popped]) == 1) {
			CHECK(e[popped]->index == heads[popped]);
			CHECK(e[popped]->out_num + e[popped]->in_num == ns[popped]);
			popped++;
		}
		CHECK(popped == batch);
		for (unsigned int i = 0; i < popped; i++)
			virtqueue_fill(&vq, e[i], i, i);
		virtqueue_flush(&vq, popped);
		for (unsigned int i = 0; i < popped; i++) {
			CHECK(drv_reap(&d, &id, &len) == 1);
			CHECK(id == heads[i] && len == i);
			free(e[i]);
		}
		CHECK(drv_reap(&d, &id, &len) == 0);
		done += popped;
	}
	CHECK(!vq.broken && vq.inflight == 0 && drv_canary_ok(&d));
	check_case("wrap %s%s (%u chains)", kind(packed), indirect ? " indirect" : "", done);
	drv_destroy(&d);
}

/* Filled elements stay invisible until flush publishes them all. */
/*
 * Stop and start again from the base vhost-user carries: the next chain
 * after the restart is the one the driver added next, and its used entry
 * lands where the driver looks.  The packed layout (avail slot and wrap
 * in the low half, used slot and wrap in the high half) is the one
 * QEMU's docs/interop/vhost-user.rst front-ends send.
 */
static void test_base(bool packed)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct drv_seg s[3];
	struct vq_elem *e = NULL;
	uint32_t base, len;
	uint16_t id;

	drv_init(&d, packed, 8, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	for (unsigned int round = 0; round < 13; round++) {
		int head = drv_add(&d, s, blk_segs(&d, s, round % 8), false);

		CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == 1 && e->index == head);
		virtqueue_push(&vq, e, 1);
		free(e);
		CHECK(drv_reap(&d, &id, &len) == 1 && id == head);
	}
	base = virtqueue_get_base(&vq);
	if (packed)
		CHECK(base == (d.next_avail | (uint32_t)d.avail_wrap << 15 |
			       (uint32_t)d.last_used << 16 | (uint32_t)d.used_wrap << 31));
	else
		CHECK(base == d.avail_idx);

	/* A fresh start knows nothing; the base puts it where the ring is. */
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	CHECK(virtqueue_set_base(&vq, base) == 0);
	CHECK(virtqueue_get_base(&vq) == base);
	CHECK(!virtqueue_has_work(&vq));
	for (unsigned int round = 0; round < 5; round++) {
		int head = drv_add(&d, s, blk_segs(&d, s, round % 8), false);

		CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == 1 && e->index == head);
		CHECK(e && e->out_num == 1 && e->in_num == 2);
		virtqueue_push(&vq, e, 7);
		free(e);
		CHECK(drv_reap(&d, &id, &len) == 1 && id == head && len == 7);
	}
	if (packed) {
		CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
		CHECK(virtqueue_set_base(&vq, 8) == -1);		/* avail slot 8 of 8 */
		CHECK(virtqueue_set_base(&vq, 8u << 16) == -1);	/* used slot */
		CHECK(virtqueue_set_base(&vq, 7u | 7u << 16) == 0);
	} else {
		CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
		CHECK(virtqueue_set_base(&vq, 0x10000) == -1);
	}
	drv_destroy(&d);
}

/*
 * The element cache: what a device gives back is what its next pop gets
 * (no allocation), chains longer than the cached size get their own
 * element, and at most max elements are kept.
 */
static void test_elem_cache(bool packed)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct vq_elem_cache c;
	struct drv_seg s[3], many[20];
	struct vq_elem *e = NULL, *first, *e2 = NULL;
	uint16_t id;
	uint32_t len;
	size_t size = sizeof(struct vq_elem) + 40;

	drv_init(&d, packed, 32, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	vq_elem_cache_init(&c, size, 2);
	CHECK(drv_add(&d, s, blk_segs(&d, s, 0), false) >= 0);
	CHECK(virtqueue_pop_cached(&vq, &c, &e) == 1 && e->cached);
	CHECK(elem_matches(&d, e, s, 3));
	memset((char *)e + sizeof(*e), 0x5a, 40);
	first = e;
	virtqueue_push(&vq, e, 1);
	vq_elem_put(&c, e);
	CHECK(c.count == 1 && drv_reap(&d, &id, &len) == 1);
	/* The same memory again, the device's part zeroed as the pop promises. */
	CHECK(drv_add(&d, s, blk_segs(&d, s, 1), true) >= 0);
	CHECK(virtqueue_pop_cached(&vq, &c, &e) == 1 && e == first && c.count == 0);
	CHECK(elem_matches(&d, e, s, 3));
	bool zero = true;

	for (size_t i = sizeof(*e); i < size; i++)
		zero &= ((uint8_t *)e)[i] == 0;
	CHECK(zero);
	/* 20 buffers: more than a cached element holds. */
	for (unsigned i = 0; i < 20; i++)
		many[i] = (struct drv_seg){ d.data + 0x10000 + i * 64, 64, i >= 10 };
	CHECK(drv_add(&d, many, 20, true) >= 0);
	CHECK(virtqueue_pop_cached(&vq, &c, &e2) == 1 && !e2->cached);
	CHECK(elem_matches(&d, e2, many, 20));
	vq_elem_put(&c, e2);		/* freed, not kept (ASan sees a leak otherwise) */
	CHECK(c.count == 0);
	/* Never more than max kept. */
	struct vq_elem *x[3];

	vq_elem_put(&c, e);
	for (unsigned i = 0; i < 3; i++) {
		CHECK(drv_add(&d, s, blk_segs(&d, s, i), false) >= 0);
		CHECK(virtqueue_pop_cached(&vq, &c, &x[i]) == 1);
	}
	for (unsigned i = 0; i < 3; i++)
		vq_elem_put(&c, x[i]);
	CHECK(c.count == 2);
	vq_elem_cache_destroy(&c);
	CHECK(c.count == 0 && c.free == NULL);
	drv_destroy(&d);
}

static void test_batch(bool packed)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct vq_elem *e[4];
	struct drv_seg s[3];
	uint16_t id;
	uint32_t len;

	drv_init(&d, packed, 16, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	for (unsigned int i = 0; i < 4; i++) {
		CHECK(drv_add(&d, s, blk_segs(&d, s, i), false) >= 0);
		CHECK(virtqueue_pop(&vq, sizeof(*e[i]), &e[i]) == 1);
	}
	/* Complete out of order, as a block device does. */
	for (unsigned int i = 0; i < 4; i++)
		virtqueue_fill(&vq, e[3 - i], 100 + (3 - i), i);
	CHECK(drv_reap(&d, &id, &len) == 0);
	virtqueue_flush(&vq, 4);
	for (unsigned int i = 0; i < 4; i++) {
		CHECK(drv_reap(&d, &id, &len) == 1);
		CHECK(id == e[3 - i]->index && len == 100 + (3 - i));
	}
	CHECK(drv_reap(&d, &id, &len) == 0);
	for (unsigned int i = 0; i < 4; i++)
		free(e[i]);
	CHECK(!vq.broken && drv_canary_ok(&d));
	check_case("batch %s", kind(packed));
	drv_destroy(&d);
}

static void pop_push(struct vq_driver *d, struct virtqueue *vq)
{
	struct drv_seg s[3];
	struct vq_elem *e = NULL;
	uint16_t id;
	uint32_t len;

	CHECK(drv_add(d, s, blk_segs(d, s, 0), false) >= 0);
	CHECK(virtqueue_pop(vq, sizeof(*e), &e) == 1);
	if (!e)
		return;
	virtqueue_push(vq, e, 1);
	free(e);
	CHECK(drv_reap(d, &id, &len) == 1);
}

static void test_notify_split(void)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t *used_event, *avail_event;

	/* Without EVENT_IDX: the NO_INTERRUPT / NO_NOTIFY flags. */
	drv_init(&d, false, 8, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(false, 0)) == 0);
	avail = drv_ptr(&d, d.driver);
	used = drv_ptr(&d, d.device);
	pop_push(&d, &vq);
	CHECK(virtqueue_should_notify(&vq));
	avail->flags = VRING_AVAIL_F_NO_INTERRUPT;
	pop_push(&d, &vq);
	CHECK(!virtqueue_should_notify(&vq));
	virtqueue_set_notification(&vq, false);
	CHECK(used->flags == VRING_USED_F_NO_NOTIFY);
	virtqueue_set_notification(&vq, true);
	CHECK(used->flags == 0);
	drv_destroy(&d);

	/* With EVENT_IDX: used_event and avail_event. */
	drv_init(&d, false, 8, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(false, F_EVENT_IDX)) == 0);
	avail = drv_ptr(&d, d.driver);
	used = drv_ptr(&d, d.device);
	used_event = &avail->ring[8];
	avail_event = (uint16_t *)&used->ring[8];
	avail->flags = VRING_AVAIL_F_NO_INTERRUPT;	/* ignored with EVENT_IDX */
	*used_event = 0;
	pop_push(&d, &vq);	/* used idx 0 -> 1 passes event 0 */
	CHECK(virtqueue_should_notify(&vq));
	CHECK(*avail_event == 1);
	*used_event = 3;	/* interrupt when entry 3 is used */
	pop_push(&d, &vq);	/* 1 -> 2 */
	CHECK(!virtqueue_should_notify(&vq));
	pop_push(&d, &vq);	/* 2 -> 3 */
	CHECK(!virtqueue_should_notify(&vq));
	pop_push(&d, &vq);	/* 3 -> 4: passes 3 */
	CHECK(virtqueue_should_notify(&vq));
	pop_push(&d, &vq);	/* 4 -> 5: 3 already signalled */
	CHECK(!virtqueue_should_notify(&vq));
	/* Two in one flush, event inside the batch. */
	*used_event = 6;
	pop_push(&d, &vq);
	pop_push(&d, &vq);	/* 5 -> 7 without checking in between */
	CHECK(virtqueue_should_notify(&vq));
	/*
	 * avail_event follows what pop has seen while kicks are wanted;
	 * turning them off points it at an entry the driver has passed (7 - 1),
	 * and pop leaves it there.
	 */
	virtqueue_set_notification(&vq, false);
	CHECK(*avail_event == 6);
	pop_push(&d, &vq);
	CHECK(*avail_event == 6);
	virtqueue_set_notification(&vq, true);
	CHECK(*avail_event == 8);
	CHECK(!vq.broken && drv_canary_ok(&d));
	check_case("notify split");
	drv_destroy(&d);
}

static void test_notify_packed(void)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct vring_packed_desc_event *drv_ev, *dev_ev;
	unsigned int num = 8;

	drv_init(&d, true, num, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(true, F_EVENT_IDX)) == 0);
	drv_ev = drv_ptr(&d, d.driver);
	dev_ev = drv_ptr(&d, d.device);

	drv_ev->flags = VRING_PACKED_EVENT_FLAG_ENABLE;
	pop_push(&d, &vq);	/* 3 slots: used position 0 -> 3 */
	CHECK(virtqueue_should_notify(&vq));
	drv_ev->flags = VRING_PACKED_EVENT_FLAG_DISABLE;
	pop_push(&d, &vq);	/* 3 -> 6 */
	CHECK(!virtqueue_should_notify(&vq));
	/* Event at slot 1 of the next lap (wrap counter 0). */
	drv_ev->off_wrap = 1;
	drv_ev->flags = VRING_PACKED_EVENT_FLAG_DESC;
	pop_push(&d, &vq);	/* 6 -> 9, i.e. slot 1 wrap 0 */
	CHECK(!virtqueue_should_notify(&vq));
	pop_push(&d, &vq);	/* 9 -> 12: passes slot 1 */
	CHECK(virtqueue_should_notify(&vq));
	pop_push(&d, &vq);	/* 12 -> 15 */
	CHECK(!virtqueue_should_notify(&vq));
	/* Slot 1 again, one lap on (wrap counter back to 1). */
	drv_ev->off_wrap = 1 | (1u << VRING_PACKED_EVENT_F_WRAP_CTR);
	pop_push(&d, &vq);	/* 15 -> 18, i.e. slot 2 wrap 1: passes slot 1 */
	CHECK(virtqueue_should_notify(&vq));
	pop_push(&d, &vq);	/* 18 -> 21 */
	CHECK(!virtqueue_should_notify(&vq));
	/* An event slot beyond the ring is treated as "always". */
	drv_ev->off_wrap = 200;
	pop_push(&d, &vq);
	CHECK(virtqueue_should_notify(&vq));

	virtqueue_set_notification(&vq, false);
	CHECK(dev_ev->flags == VRING_PACKED_EVENT_FLAG_DISABLE);
	virtqueue_set_notification(&vq, true);
	CHECK(dev_ev->flags == VRING_PACKED_EVENT_FLAG_ENABLE);
	drv_destroy(&d);

	/* DESC mode without EVENT_IDX is not allowed: notify. */
	drv_init(&d, true, num, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(true, 0)) == 0);
	drv_ev = drv_ptr(&d, d.driver);
	drv_ev->flags = VRING_PACKED_EVENT_FLAG_DESC;
	drv_ev->off_wrap = 7;
	pop_push(&d, &vq);
	CHECK(virtqueue_should_notify(&vq));
	CHECK(!vq.broken && drv_canary_ok(&d));
	check_case("notify packed");
	drv_destroy(&d);
}

static void test_enable(void)
{
	struct vq_driver d;
	struct virtqueue vq;

	drv_init(&d, false, 16, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(false, 0)) == 0);
	vq.desc_addr += 8;
	CHECK(virtqueue_enable(&vq, feats(false, 0)) < 0);
	vq.desc_addr = d.desc;
	vq.device_addr += 2;
	CHECK(virtqueue_enable(&vq, feats(false, 0)) < 0);
	vq.device_addr = DRV_RAM_GPA + d.ram_size - 16;	/* runs off RAM */
	CHECK(virtqueue_enable(&vq, feats(false, 0)) < 0);
	vq.device_addr = d.device;
	vq.driver_addr = 0;	/* below RAM */
	CHECK(virtqueue_enable(&vq, feats(false, 0)) < 0);
	vq.driver_addr = d.driver;
	vq.num = 12;		/* split needs a power of two */
	CHECK(virtqueue_enable(&vq, feats(false, 0)) < 0);
	CHECK(virtqueue_enable(&vq, feats(true, 0)) == 0);
	vq.num = 0;
	CHECK(virtqueue_enable(&vq, feats(true, 0)) < 0);
	vq.num = VIRTQUEUE_MAX_SIZE * 2;
	CHECK(virtqueue_enable(&vq, feats(false, 0)) < 0);
	vq.num = 16;
	vq.driver_addr = d.driver + 2;	/* packed event structures are 4-aligned */
	CHECK(virtqueue_enable(&vq, feats(true, 0)) < 0);
	CHECK(virtqueue_enable(&vq, feats(false, 0)) == 0);
	CHECK(drv_canary_ok(&d));
	check_case("enable checks");
	drv_destroy(&d);
}

/*
 * The in-use bound (the CVE-2016-5403 class).  An honest driver has at
 * most num buffers outstanding, and pop keeps serving it right up to that;
 * a driver that offers a head again while it is still in use (and never
 * waits for the used ring) must break the ring at the first pop beyond
 * num, not make the device allocate without end.
 */
static void test_inuse_bound(bool packed)
{
	unsigned int num = 4, popped = 0;
	struct vq_elem *e[8] = { NULL };
	struct vq_driver d;
	struct virtqueue vq;
	struct drv_seg s = { 0, 16, false };
	uint16_t id;
	uint32_t len;

	drv_init(&d, packed, num, RAM_SIZE);
	s.gpa = d.data;
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	/* Honest: all num in use, one back, one more in. */
	for (unsigned int i = 0; i < num; i++)
		CHECK(drv_add(&d, &s, 1, false) >= 0);
	while (popped < num && virtqueue_pop(&vq, sizeof(*e[0]), &e[popped]) == 1)
		popped++;
	CHECK(popped == num);
	CHECK(virtqueue_pop(&vq, sizeof(*e[0]), &e[num]) == 0 && !vq.broken);
	virtqueue_push(&vq, e[0], 0);
	free(e[0]);
	CHECK(drv_reap(&d, &id, &len) == 1);
	CHECK(drv_add(&d, &s, 1, false) >= 0);
	CHECK(virtqueue_pop(&vq, sizeof(*e[0]), &e[0]) == 1 && !vq.broken);
	CHECK(vq.inflight == num);

	/* Hostile: the first chain's head offered again while in use. */
	if (packed) {
		struct vring_packed_desc *ring = drv_ptr(&d, d.desc);
		/* The device is on its second lap: wrap counter 0. */
		uint16_t lap2 = (1u << VRING_PACKED_DESC_F_USED);

		ring[1].flags = lap2;
	} else {
		struct vring_avail *a = drv_ptr(&d, d.driver);

		a->ring[d.avail_idx % num] = a->ring[0];
		__atomic_store_n(&a->idx, ++d.avail_idx, __ATOMIC_RELEASE);
	}
	CHECK(virtqueue_has_work(&vq));
	CHECK(virtqueue_pop(&vq, sizeof(*e[0]), &e[num]) == -1);
	CHECK(vq.broken && vq.error && strstr(vq.error, "in use"));
	CHECK(virtqueue_pop(&vq, sizeof(*e[0]), &e[num]) == -1);
	CHECK(drv_canary_ok(&d));
	for (unsigned int i = 0; i < num; i++)
		free(e[i]);
	check_case("in-use bound %s", kind(packed));
	drv_destroy(&d);
}

/* Zero-length descriptors are skipped, not mapped. */
static void test_zero_len(bool packed)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct vq_elem *e = NULL;
	struct drv_seg s[3] = {
		{ 0, 0, false },	/* would be outside RAM if it were mapped */
		{ DRV_RAM_GPA + 0x200000, 16, false },
		{ DRV_RAM_GPA + 0x201000, 0, true },
	};

	drv_init(&d, packed, 8, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	CHECK(drv_add(&d, s, 3, false) >= 0);
	CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == 1);
	CHECK(e && e->out_num == 1 && e->in_num == 0 && elem_matches(&d, e, s, 3));
	free(e);
	CHECK(!vq.broken && drv_canary_ok(&d));
	check_case("zero-length %s", kind(packed));
	drv_destroy(&d);
}

/*
 * A buffer across two adjacent memory regions (a vhost-user front-end's
 * table may cut RAM anywhere) is one buffer to the driver: the device
 * takes it in two pieces, each where its region maps it.  Across a gap
 * between regions it is outside guest RAM.
 */
static void test_adjacent_regions(bool packed)
{
	const uint64_t cut = 0x201800;	/* inside the second buffer */
	struct drv_seg s[3] = {
		{ DRV_RAM_GPA + 0x200000, 16, false },
		{ DRV_RAM_GPA + 0x201000, 4096, true },
		{ DRV_RAM_GPA + 0x203000, 1, true },
	};
	struct guest_mem two = { 0 }, gap = { 0 };
	struct vq_elem *e = NULL;
	struct virtqueue vq;
	struct vq_driver d;

	drv_init(&d, packed, 8, RAM_SIZE);
	CHECK(guest_mem_add(&two, DRV_RAM_GPA, cut, d.ram) == 0);
	CHECK(guest_mem_add(&two, DRV_RAM_GPA + cut, d.ram_size - cut, d.ram + cut) == 0);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	vq.mem = &two;
	CHECK(drv_add(&d, s, 3, false) >= 0);
	CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == 1);
	CHECK(e && e->out_num == 1 && e->in_num == 3);
	if (e && e->in_num == 3) {
		CHECK(e->in_sg[0].iov_base == d.ram + 0x201000 && e->in_sg[0].iov_len == 0x800);
		CHECK(e->in_sg[1].iov_base == d.ram + cut && e->in_sg[1].iov_len == 0x800);
		CHECK(e->in_addr[0] == DRV_RAM_GPA + 0x201000 && e->in_addr[1] == DRV_RAM_GPA + cut);
		CHECK(e->in_sg[2].iov_base == d.ram + 0x203000 && e->in_sg[2].iov_len == 1);
	}
	free(e);
	CHECK(!vq.broken && drv_canary_ok(&d));
	drv_destroy(&d);

	drv_init(&d, packed, 8, RAM_SIZE);
	CHECK(guest_mem_add(&gap, DRV_RAM_GPA, cut, d.ram) == 0);
	CHECK(guest_mem_add(&gap, DRV_RAM_GPA + cut + 4096, d.ram_size - cut - 4096,
			    d.ram + cut + 4096) == 0);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	vq.mem = &gap;
	CHECK(drv_add(&d, s, 3, false) >= 0);
	e = NULL;
	CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == -1 && !e);
	CHECK(vq.broken && vq.error && !strcmp(vq.error, "descriptor buffer outside guest RAM"));
	check_case("adjacent regions %s", kind(packed));
	drv_destroy(&d);
}

/*
 * Hostile rings.  Each case gets a fresh queue, lets corrupt() damage an
 * honestly added chain, and expects pop to fail and stay failed.
 */
struct hostile {
	const char *name;
	bool packed;
	uint64_t features;
	unsigned int num;
	unsigned int nsegs;
	bool indirect;
	void (*corrupt)(struct vq_driver *d);
	const char *why;	/* the rule the device must name */
};

static struct vring_desc *sdesc(struct vq_driver *d, unsigned int i)
{
	return (struct vring_desc *)drv_ptr(d, d->desc) + i;
}

static struct vring_packed_desc *pdesc(struct vq_driver *d, unsigned int i)
{
	return (struct vring_packed_desc *)drv_ptr(d, d->desc) + i;
}

/* The split driver hands out descriptors 0, 1, 2... on a fresh ring. */
static struct vring_desc *shead(struct vq_driver *d)
{
	return sdesc(d, 0);
}

static struct vring_desc *sindirect(struct vq_driver *d)
{
	return drv_ptr(d, shead(d)->addr);
}

static struct vring_packed_desc *pindirect(struct vq_driver *d)
{
	return drv_ptr(d, pdesc(d, 0)->addr);
}

static void s_addr_outside(struct vq_driver *d) { shead(d)->addr = DRV_RAM_GPA + d->ram_size; }
static void s_addr_below(struct vq_driver *d) { shead(d)->addr = DRV_RAM_GPA - 8; }
static void s_addr_wrap(struct vq_driver *d) { shead(d)->addr = ~0ull - 4; }
static void s_len_past_end(struct vq_driver *d)
{
	shead(d)->addr = DRV_RAM_GPA + d->ram_size - 8;
	shead(d)->len = 9;
}
static void s_next_range(struct vq_driver *d) { shead(d)->next = (uint16_t)d->num; }
static void s_loop(struct vq_driver *d) { sdesc(d, 2)->next = 1; sdesc(d, 2)->flags |= VRING_DESC_F_NEXT; }
static void s_self_loop(struct vq_driver *d) { shead(d)->next = 0; }
static void s_read_after_write(struct vq_driver *d) { sdesc(d, 2)->flags &= (uint16_t)~VRING_DESC_F_WRITE; }
static void s_avail_jump(struct vq_driver *d)
{
	struct vring_avail *a = drv_ptr(d, d->driver);

	a->idx = (uint16_t)(d->num + 1);
}
static void s_head_range(struct vq_driver *d)
{
	struct vring_avail *a = drv_ptr(d, d->driver);

	a->ring[0] = (uint16_t)d->num;
}
static void s_head_huge(struct vq_driver *d)
{
	struct vring_avail *a = drv_ptr(d, d->driver);

	a->ring[0] = 0xffff;
}
static void s_ind_len_odd(struct vq_driver *d) { shead(d)->len = 40; }
static void s_ind_len_zero(struct vq_driver *d) { shead(d)->len = 0; }
static void s_ind_len_huge(struct vq_driver *d) { shead(d)->len = (VIRTQUEUE_MAX_SIZE + 1) * 16; }
static void s_ind_outside(struct vq_driver *d) { shead(d)->addr = DRV_RAM_GPA + d->ram_size - 16; }
static void s_ind_nested(struct vq_driver *d) { sindirect(d)[1].flags |= VRING_DESC_F_INDIRECT; }
static void s_ind_next(struct vq_driver *d) { shead(d)->flags |= VRING_DESC_F_NEXT; }
static void s_ind_loop(struct vq_driver *d) { sindirect(d)[2].flags |= VRING_DESC_F_NEXT;
	sindirect(d)[2].next = 0; }
static void s_ind_next_range(struct vq_driver *d) { sindirect(d)[0].next = 3; }
static void s_ind_buf_outside(struct vq_driver *d) { sindirect(d)[2].addr = 0; }
static void s_nothing(struct vq_driver *d) { (void)d; }
/* A 1024-entry indirect table after a direct descriptor: 1025 buffers. */
static void s_too_many_iov(struct vq_driver *d)
{
	struct vring_desc *t = drv_ptr(d, d->data);

	for (unsigned int i = 0; i < VIRTQUEUE_MAX_SIZE; i++)
		t[i] = (struct vring_desc){ d->data + 0x10000, 8, VRING_DESC_F_WRITE | VRING_DESC_F_NEXT,
					    (uint16_t)(i + 1) };
	t[VIRTQUEUE_MAX_SIZE - 1].flags = VRING_DESC_F_WRITE;
	shead(d)->flags = VRING_DESC_F_NEXT;
	sdesc(d, 1)->addr = d->data;
	sdesc(d, 1)->len = VIRTQUEUE_MAX_SIZE * 16;
	sdesc(d, 1)->flags = VRING_DESC_F_INDIRECT;
}

static void p_id_range(struct vq_driver *d) { pdesc(d, 2)->id = (uint16_t)d->num; }
static void p_addr_outside(struct vq_driver *d) { pdesc(d, 1)->addr = DRV_RAM_GPA + d->ram_size; }
static void p_addr_wrap(struct vq_driver *d) { pdesc(d, 0)->addr = ~0ull - 4; }
static void p_read_after_write(struct vq_driver *d) { pdesc(d, 1)->flags |= VRING_DESC_F_WRITE;
	pdesc(d, 2)->flags &= (uint16_t)~VRING_DESC_F_WRITE; }
/* Every slot says NEXT: the chain never ends inside the ring. */
static void p_endless(struct vq_driver *d)
{
	for (unsigned int i = 0; i < d->num; i++)
		pdesc(d, i)->flags = VRING_DESC_F_NEXT |
			(i == 0 ? (1u << VRING_PACKED_DESC_F_AVAIL) : 0);
	for (unsigned int i = 0; i < d->num; i++)
		pdesc(d, i)->len = 1, pdesc(d, i)->addr = d->data;
}
static void p_ind_nested(struct vq_driver *d) { pindirect(d)[1].flags |= VRING_DESC_F_INDIRECT; }
static void p_ind_next(struct vq_driver *d) { pdesc(d, 0)->flags |= VRING_DESC_F_NEXT; }
static void p_ind_len_odd(struct vq_driver *d) { pdesc(d, 0)->len = 24; }
static void p_ind_len_huge(struct vq_driver *d) { pdesc(d, 0)->len = (VIRTQUEUE_MAX_SIZE + 1) * 16; }
static void p_ind_outside(struct vq_driver *d) { pdesc(d, 0)->addr = DRV_RAM_GPA - 16; }
static void p_ind_id_range(struct vq_driver *d) { pdesc(d, 0)->id = 0xffff; }
static void p_too_many_iov(struct vq_driver *d)
{
	struct vring_packed_desc *t = drv_ptr(d, d->data);

	for (unsigned int i = 0; i < VIRTQUEUE_MAX_SIZE; i++)
		t[i] = (struct vring_packed_desc){ d->data + 0x10000, 8, 0, VRING_DESC_F_WRITE };
	pdesc(d, 1)->addr = d->data;
	pdesc(d, 1)->len = VIRTQUEUE_MAX_SIZE * 16;
	pdesc(d, 1)->flags = (uint16_t)((pdesc(d, 1)->flags & ~VRING_DESC_F_WRITE) | VRING_DESC_F_INDIRECT);
}

static const struct hostile hostile_cases[] = {
	{ "split buffer above RAM", false, 0, 8, 3, false, s_addr_outside,
	  "descriptor buffer outside guest RAM" },
	{ "split buffer below RAM", false, 0, 8, 3, false, s_addr_below,
	  "descriptor buffer outside guest RAM" },
	{ "split buffer address wraps", false, 0, 8, 3, false, s_addr_wrap,
	  "descriptor buffer outside guest RAM" },
	{ "split buffer runs past RAM", false, 0, 8, 3, false, s_len_past_end,
	  "descriptor buffer outside guest RAM" },
	{ "split next out of range", false, 0, 8, 3, false, s_next_range,
	  "next descriptor index out of range" },
	{ "split chain loops", false, 0, 8, 3, false, s_loop,
	  "descriptor chain longer than its table" },
	{ "split descriptor points at itself", false, 0, 8, 3, false, s_self_loop,
	  "descriptor chain longer than its table" },
	{ "split readable after writable", false, 0, 8, 3, false, s_read_after_write,
	  "readable descriptor after a writable one" },
	{ "split avail index jumps", false, 0, 8, 3, false, s_avail_jump,
	  "available index ahead by more than the queue size" },
	{ "split head out of range", false, 0, 8, 3, false, s_head_range,
	  "available head index out of range" },
	{ "split head 0xffff", false, 0, 8, 3, false, s_head_huge,
	  "available head index out of range" },
	{ "split indirect not negotiated", false, (uint64_t)-1, 8, 3, true, s_nothing,
	  "indirect descriptor not negotiated" },
	{ "split indirect length not 16n", false, 0, 8, 3, true, s_ind_len_odd,
	  "bad indirect table length" },
	{ "split indirect length 0", false, 0, 8, 3, true, s_ind_len_zero,
	  "bad indirect table length" },
	{ "split indirect too long", false, 0, 8, 3, true, s_ind_len_huge,
	  "bad indirect table length" },
	{ "split indirect table outside RAM", false, 0, 8, 3, true, s_ind_outside,
	  "indirect table outside guest RAM" },
	{ "split nested indirect", false, 0, 8, 3, true, s_ind_nested,
	  "indirect descriptor inside an indirect table" },
	{ "split indirect with NEXT", false, 0, 8, 3, true, s_ind_next,
	  "indirect descriptor with NEXT set" },
	{ "split indirect chain loops", false, 0, 8, 3, true, s_ind_loop,
	  "descriptor chain longer than its table" },
	{ "split indirect next out of range", false, 0, 8, 3, true, s_ind_next_range,
	  "next descriptor index out of range" },
	{ "split indirect buffer outside RAM", false, 0, 8, 3, true, s_ind_buf_outside,
	  "descriptor buffer outside guest RAM" },
	{ "split more buffers than VIRTQUEUE_MAX_SIZE", false, 0, 8, 2, false, s_too_many_iov,
	  "chain has too many buffers" },
	{ "packed buffer id out of range", true, 0, 8, 3, false, p_id_range,
	  "buffer id out of range" },
	{ "packed buffer outside RAM", true, 0, 8, 3, false, p_addr_outside,
	  "descriptor buffer outside guest RAM" },
	{ "packed buffer address wraps", true, 0, 8, 3, false, p_addr_wrap,
	  "descriptor buffer outside guest RAM" },
	{ "packed readable after writable", true, 0, 8, 3, false, p_read_after_write,
	  "readable descriptor after a writable one" },
	{ "packed chain longer than ring", true, 0, 8, 1, false, p_endless,
	  "descriptor chain longer than the ring" },
	{ "packed indirect not negotiated", true, (uint64_t)-1, 8, 3, true, s_nothing,
	  "indirect descriptor not negotiated" },
	{ "packed nested indirect", true, 0, 8, 3, true, p_ind_nested,
	  "indirect descriptor inside an indirect table" },
	{ "packed indirect with NEXT", true, 0, 8, 3, true, p_ind_next,
	  "indirect descriptor with NEXT set" },
	{ "packed indirect length not 16n", true, 0, 8, 3, true, p_ind_len_odd,
	  "bad indirect table length" },
	{ "packed indirect too long", true, 0, 8, 3, true, p_ind_len_huge,
	  "bad indirect table length" },
	{ "packed indirect table outside RAM", true, 0, 8, 3, true, p_ind_outside,
	  "indirect table outside guest RAM" },
	{ "packed indirect buffer id out of range", true, 0, 8, 3, true, p_ind_id_range,
	  "buffer id out of range" },
	{ "packed more buffers than VIRTQUEUE_MAX_SIZE", true, 0, 8, 2, false, p_too_many_iov,
	  "chain has too many buffers" },
};

static void test_hostile(const struct hostile *h)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct vq_elem *e = NULL;
	struct drv_seg s[3];
	/* (uint64_t)-1 marks "indirect not offered". */
	uint64_t f = h->features == (uint64_t)-1 ? F_PACKED * h->packed
						 : feats(h->packed, h->features);
	const char *why;

	drv_init(&d, h->packed, h->num, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, f) == 0);
	blk_segs(&d, s, 0);
	CHECK(drv_add(&d, s, h->nsegs, h->indirect) >= 0);
	h->corrupt(&d);
	CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == -1);
	CHECK(vq.broken && vq.error);
	CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == -1);
	CHECK(!virtqueue_has_work(&vq));
	CHECK(drv_canary_ok(&d));
	why = vq.error;
	CHECK(why && !strcmp(why, h->why));
	/* Reset brings the queue back. */
	virtqueue_reset(&vq);
	CHECK(!vq.broken && !vq.enabled);
	check_case("hostile: %s: %s", h->name, why ? why : "(no reason)");
	drv_destroy(&d);
}

/* Something a descriptor field might plausibly hold, or junk. */
static uint64_t rnd_addr(struct vq_driver *d, unsigned int *seed)
{
	if (rand_r(seed) % 8 == 0)
		return ((uint64_t)rand_r(seed) << 33) ^ (uint64_t)rand_r(seed) * 7919;
	return DRV_RAM_GPA - 64 + (uint64_t)rand_r(seed) % (d->ram_size + 128);
}

static uint32_t rnd_len(unsigned int *seed)
{
	switch (rand_r(seed) % 8) {
	case 0: return (uint32_t)rand_r(seed) * 3u;
	case 1: return 16u * (uint32_t)(rand_r(seed) % 8);
	default: return (uint32_t)rand_r(seed) % 512;
	}
}

static uint16_t rnd_flags(unsigned int *seed)
{
	uint16_t f = 0;

	if (rand_r(seed) % 16 == 0)
		return (uint16_t)rand_r(seed);
	if (rand_r(seed) % 3)
		f |= VRING_DESC_F_NEXT;
	if (rand_r(seed) % 2)
		f |= VRING_DESC_F_WRITE;
	if (rand_r(seed) % 12 == 0)
		f |= VRING_DESC_F_INDIRECT;
	if (rand_r(seed) % 4)
		f |= (1u << VRING_PACKED_DESC_F_AVAIL);
	if (rand_r(seed) % 4 == 0)
		f |= (1u << VRING_PACKED_DESC_F_USED);
	return f;
}

static uint16_t rnd_index(unsigned int num, unsigned int *seed)
{
	return (uint16_t)(rand_r(seed) % 10 ? (unsigned int)rand_r(seed) % num : (unsigned int)rand_r(seed));
}

/*
 * Random rings and tables: every 16-byte slot of the ring and table areas
 * holds a descriptor of random but mostly plausible fields, so that chains
 * get deep before something is wrong.  Nothing may crash (run this under
 * ASan) or touch the canaries.
 */
static void test_random(bool packed, double seconds)
{
	struct timespec t0, t;
	unsigned long rounds = 0, pops = 0, broken = 0;
	unsigned int seed = packed ? 7 : 3;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		struct vq_driver d;
		struct virtqueue vq;
		unsigned int num = 1u << (rand_r(&seed) % 6 + 1);
		uint8_t *ram;
		size_t span;

		drv_init(&d, packed, num, 1 << 20);
		ram = d.ram;
		span = (size_t)(d.data - DRV_RAM_GPA) + 0x4000;
		for (size_t i = 0; i + 16 <= span; i += 16) {
			struct vring_desc sd = { rnd_addr(&d, &seed), rnd_len(&seed),
						 rnd_flags(&seed), rnd_index(num, &seed) };
			struct vring_packed_desc pd = { sd.addr, sd.len, sd.next, sd.flags };

			if (packed)
				memcpy(ram + i, &pd, 16);
			else
				memcpy(ram + i, &sd, 16);
		}
		if (!packed) {
			struct vring_avail *a = drv_ptr(&d, d.driver);

			a->flags = 0;
			a->idx = (uint16_t)(rand_r(&seed) % 10 ? (unsigned int)rand_r(&seed) % (num + 1)
							       : (unsigned int)rand_r(&seed));
			for (unsigned int i = 0; i <= num; i++)
				a->ring[i] = rnd_index(num, &seed);
		}
		if (drv_setup_vq(&d, &vq, feats(packed, rand_r(&seed) & 1 ? F_EVENT_IDX : 0)) == 0) {
			for (unsigned int k = 0; k < 2 * num; k++) {
				struct vq_elem *e;
				int r = virtqueue_pop(&vq, sizeof(*e), &e);

				if (r != 1) {
					broken += r < 0;
					break;
				}
				pops++;
				for (unsigned int j = 0; j < e->in_num; j++)
					memset(e->in_sg[j].iov_base, 0x5a, e->in_sg[j].iov_len);
				virtqueue_push(&vq, e, (uint32_t)rand_r(&seed));
				virtqueue_should_notify(&vq);
				virtqueue_set_notification(&vq, k & 1);
				free(e);
			}
		}
		CHECK(drv_canary_ok(&d));
		drv_destroy(&d);
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) * 1e-9 < seconds);
	/* A generator that never reaches a valid chain tests nothing. */
	CHECK(pops > rounds / 10 && broken > rounds / 10);
	check_case("random %s (%lu rings, %lu chains popped, %lu broke)",
	       kind(packed), rounds, pops, broken);
}

/*
 * Driver and device on two threads, as a guest vCPU and an I/O thread
 * would be: every request carries its sequence number out and gets it back
 * transformed, so a missing barrier that lets a side see stale ring or
 * buffer contents shows up as a mismatch.
 */
#define THR_SLOTS 64
#define THR_INFLIGHT 24

struct thr_ctx {
	struct vq_driver *d;
	struct virtqueue *vq;
	unsigned long n;
	unsigned long errors;
	double deadline;
	int stop;
};

static double mono_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *thr_device(void *opaque)
{
	struct thr_ctx *c = opaque;
	unsigned long seq = 0;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		struct vq_elem *e;
		uint64_t v;
		int r = virtqueue_pop(c->vq, sizeof(*e), &e);

		if (r == 0) {
			sched_yield();
			continue;
		}
		if (r < 0) {
			c->errors++;
			break;
		}
		memcpy(&v, e->out_sg[0].iov_base, sizeof(v));
		if (e->out_num != 1 || e->out_sg[0].iov_len != 8 || v != seq)
			c->errors++;
		for (unsigned int j = 0; j < e->in_num; j++) {
			v = seq * 3 + j;
			memcpy(e->in_sg[j].iov_base, &v, sizeof(v));
		}
		virtqueue_push(c->vq, e, 8 * e->in_num);
		free(e);
		seq++;
	}
	return NULL;
}

static void test_threads(bool packed)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct thr_ctx c = { .d = &d, .vq = &vq, .n = 100000 };
	unsigned long added = 0, reaped = 0;
	pthread_t dev;

	drv_init(&d, packed, 64, RAM_SIZE);
	CHECK(drv_setup_vq(&d, &vq, feats(packed, 0)) == 0);
	c.deadline = mono_s() + 20;
	CHECK(pthread_create(&dev, NULL, thr_device, &c) == 0);
	while (reaped < c.n && mono_s() < c.deadline) {
		bool progress = false;
		uint16_t id;
		uint32_t len;

		if (added < c.n && added - reaped < THR_INFLIGHT) {
			uint64_t buf = d.data + (added % THR_SLOTS) * 0x100;
			unsigned int nin = 1 + added % 3;
			struct drv_seg s[4] = { { buf, 8, false } };

			for (unsigned int j = 0; j < nin; j++)
				s[1 + j] = (struct drv_seg){ buf + 8 * (j + 1), 8, true };
			memcpy(drv_ptr(&d, buf), &added, 8);
			if (drv_add(&d, s, 1 + nin, added % 5 == 0) >= 0) {
				added++;
				progress = true;
			}
		}
		if (drv_reap(&d, &id, &len) == 1) {
			uint64_t buf = d.data + (reaped % THR_SLOTS) * 0x100;
			unsigned int nin = 1 + reaped % 3;

			if (len != 8 * nin)
				c.errors++;
			for (unsigned int j = 0; j < nin; j++) {
				uint64_t v;

				memcpy(&v, drv_ptr(&d, buf + 8 * (j + 1)), 8);
				if (v != reaped * 3 + j)
					c.errors++;
			}
			reaped++;
			progress = true;
		}
		if (!progress)
			sched_yield();
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	pthread_join(dev, NULL);
	CHECK(reaped == c.n);
	CHECK(c.errors == 0);
	CHECK(!vq.broken && drv_canary_ok(&d));
	check_case("threads %s (%lu requests, %lu errors)", kind(packed), reaped, c.errors);
	drv_destroy(&d);
}

/*
 * A device that sleeps until the next kick once pop returns 0 (with
 * notifications on), and a split EVENT_IDX driver that kicks only when
 * avail_event asks for it, as Linux does, one request at a time: every
 * request is served, none waits for a kick that never comes (a lost
 * wakeup, seen here as a 200 ms timeout).  The interleaving that matters
 * (the driver's add between pop's look at the empty ring and its store
 * of avail_event) is a few instructions wide: test_empty_pop_race()
 * below forces it.  What this one adds is the hardware's part: without
 * the full barrier between that store and pop's last look, x86 lets the
 * look pass the store, and 20000 requests here lose a wakeup in about
 * one run of three.
 */
struct sleeper {
	struct virtqueue *vq;
	int kick_fd;
	unsigned long added;	/* atomic: chains the driver made available */
	unsigned long pushed;
	unsigned long lost;
	unsigned long errors;
	int stop;
};

static void *sleeper_device(void *opaque)
{
	struct sleeper *c = opaque;
	unsigned int seed = 1;

	while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
		struct pollfd p = { .fd = c->kick_fd, .events = POLLIN };
		struct vq_elem *e;
		eventfd_t v;
		int r;

		/* Land our last look at varying points of the driver's add. */
		for (volatile unsigned int k = rand_r(&seed) % 256; k; k--)
			;
		/*
		 * A look first, as a device does that re-enables notifications
		 * and checks once more: it leaves avail_event behind the index,
		 * and then the order of pop's store and last look matters.
		 */
		(void)virtqueue_has_work(c->vq);
		r = virtqueue_pop(c->vq, sizeof(*e), &e);

		if (r < 0) {
			c->errors++;
			break;
		}
		if (r == 1) {
			virtqueue_push(c->vq, e, 0);
			free(e);
			__atomic_store_n(&c->pushed, c->pushed + 1, __ATOMIC_RELEASE);
			continue;
		}
		if (poll(&p, 1, 200) == 0 &&
		    __atomic_load_n(&c->added, __ATOMIC_ACQUIRE) > c->pushed)
			c->lost++;
		(void)eventfd_read(c->kick_fd, &v);
	}
	return NULL;
}

static void test_sleep_after_empty(void)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct sleeper c = { .vq = &vq };
	struct drv_seg s = { 0, 16, false };
	double end = mono_s() + 10;
	unsigned long n = 20000;
	uint16_t *avail_event;
	pthread_t dev;

	drv_init(&d, false, 16, RAM_SIZE);
	s.gpa = d.data;
	CHECK(drv_setup_vq(&d, &vq, feats(false, F_EVENT_IDX)) == 0);
	avail_event = (uint16_t *)&((struct vring_used *)drv_ptr(&d, d.device))->ring[16];
	c.kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK(c.kick_fd >= 0);
	CHECK(pthread_create(&dev, NULL, sleeper_device, &c) == 0);
	while (c.added < n && mono_s() < end) {
		uint16_t old = d.avail_idx, id;
		uint32_t len;

		CHECK(drv_add(&d, &s, 1, false) >= 0);
		__atomic_store_n(&c.added, c.added + 1, __ATOMIC_RELEASE);
		/* Our index store before reading the device's event (virtio_mb). */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (vring_need_event(__atomic_load_n(avail_event, __ATOMIC_RELAXED),
				     d.avail_idx, old))
			(void)eventfd_write(c.kick_fd, 1);
		while (drv_reap(&d, &id, &len) == 0 && mono_s() < end)
			;
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
	(void)eventfd_write(c.kick_fd, 1);
	pthread_join(dev, NULL);
	close(c.kick_fd);
	CHECK(c.added == n && c.pushed == n);
	CHECK(c.lost == 0 && c.errors == 0);
	CHECK(!vq.broken && drv_canary_ok(&d));
	check_case("sleep after empty pop (%lu requests, %lu lost wakeups)", c.added, c.lost);
	drv_destroy(&d);
}

/*
 * The lost wakeup the empty split pop must prevent, forced: with
 * avail_event behind the index, the driver adds a buffer and reads
 * avail_event exactly between pop's look at the empty ring and its store
 * of avail_event.  The store is held there by write-protecting the used
 * ring's page with userfaultfd; this thread, the fault's handler, plays
 * the driver and then lets the store go.  The driver saw the old event
 * (no kick for it), so pop must look at the ring again after its store,
 * with a full barrier between, and return the buffer.
 */
struct race {
	struct virtqueue *vq;
	int r;
};

static void *race_pop(void *opaque)
{
	struct race *c = opaque;
	struct vq_elem *e = NULL;

	c->r = virtqueue_pop(c->vq, sizeof(*e), &e);
	if (c->r == 1)
		free(e);
	return NULL;
}

static int uffd_wp_open(void *page, size_t len, const char **why)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg = {
		.range = { (uintptr_t)page, len }, .mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)page, len }, .mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	/* Only this process's own stores fault: no privilege needed. */
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (fd < 0) {
		*why = "userfaultfd refused";
		return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api) < 0 || ioctl(fd, UFFDIO_REGISTER, &reg) < 0 ||
	    ioctl(fd, UFFDIO_WRITEPROTECT, &wp) < 0) {
		*why = "userfaultfd cannot write-protect anonymous memory here";
		close(fd);
		return -1;
	}
	return fd;
}

static void test_empty_pop_race(void)
{
	struct vq_driver d;
	struct virtqueue vq;
	struct race c = { .vq = &vq };
	struct drv_seg s = { 0, 16, false };
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint16_t *avail_event, id, old;
	struct pollfd p = { .events = POLLIN };
	struct uffd_msg msg;
	const char *why = NULL;
	bool kick = false;
	struct vq_elem *e;
	pthread_t dev;
	uint32_t len;

	drv_init(&d, false, 16, RAM_SIZE);
	s.gpa = d.data;
	CHECK(drv_setup_vq(&d, &vq, feats(false, F_EVENT_IDX)) == 0);
	avail_event = (uint16_t *)&((struct vring_used *)drv_ptr(&d, d.device))->ring[16];
	/*
	 * One request, seen first by has_work() (as a device does that
	 * re-enables notifications and looks once more): that refreshes the
	 * index without a store to avail_event, which trails it from then on
	 * (0 against 1), and the pop that takes the request has no reason to
	 * look at the index again.
	 */
	CHECK(drv_add(&d, &s, 1, false) >= 0);
	CHECK(virtqueue_has_work(&vq));
	CHECK(virtqueue_pop(&vq, sizeof(*e), &e) == 1);
	virtqueue_push(&vq, e, 0);
	free(e);
	CHECK(drv_reap(&d, &id, &len) == 1 && *avail_event == 0);
	p.fd = uffd_wp_open(drv_ptr(&d, d.device & ~(uint64_t)(pg - 1)), pg, &why);
	if (p.fd < 0) {
		check_skip_case("%s", why);
		drv_destroy(&d);
		return;
	}
	CHECK(pthread_create(&dev, NULL, race_pop, &c) == 0);
	/* The pop found the ring empty and now stores avail_event: held. */
	CHECK(poll(&p, 1, 5000) == 1 && read(p.fd, &msg, sizeof(msg)) == sizeof(msg) &&
	      msg.event == UFFD_EVENT_PAGEFAULT && (msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP));
	old = d.avail_idx;
	CHECK(drv_add(&d, &s, 1, false) >= 0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	kick = vring_need_event(__atomic_load_n(avail_event, __ATOMIC_RELAXED), d.avail_idx, old);
	struct uffdio_writeprotect go = {
		.range = { (uintptr_t)drv_ptr(&d, d.device & ~(uint64_t)(pg - 1)), pg },
	};

	CHECK(ioctl(p.fd, UFFDIO_WRITEPROTECT, &go) == 0);
	pthread_join(dev, NULL);
	close(p.fd);
	CHECK(!kick);		/* the interleaving this test is about */
	/* A pop that returned 0 here would leave the buffer with no kick coming. */
	CHECK(c.r == 1);
	CHECK(*avail_event == 1 && !vq.broken && drv_canary_ok(&d));
	printf("# empty pop race: the buffer added under the avail_event store %s\n",
	       c.r == 1 ? "was popped" : "was lost");
	drv_destroy(&d);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int p = 0; p < 2; p++) {
		test_roundtrip(p, false);
		test_roundtrip(p, true);
		test_wrap(p, false);
		test_wrap(p, true);
		test_batch(p);
		test_base(p);
		test_elem_cache(p);
		test_zero_len(p);
		test_adjacent_regions(p);
		test_inuse_bound(p);
	}
	test_notify_split();
	test_notify_packed();
	test_enable();
	for (size_t i = 0; i < sizeof(hostile_cases) / sizeof(hostile_cases[0]); i++)
		test_hostile(&hostile_cases[i]);
	test_threads(false);
	test_threads(true);
	test_sleep_after_empty();
	RUN(test_empty_pop_race());
	test_random(false, 1.0);
	test_random(true, 1.0);
	return check_done();
}
