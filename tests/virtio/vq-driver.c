// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vq-driver.h"

#define CANARY 0xa5
#define DESC_OFF 0x0000
#define DRIVER_OFF 0x4000
#define DEVICE_OFF 0x5000
#define INDIRECT_OFF 0x8000

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* A fresh ring: all free, 0 first off the stack, both wrap counters 1. */
static void drv_fresh(struct vq_driver *d)
{
	d->avail_wrap = d->used_wrap = true;
	for (unsigned int i = 0; i < d->num; i++)
		d->free[i] = (uint16_t)(d->num - 1 - i);
	d->nfree = d->num;
	d->free_descs = d->num;
}

static void drv_setup(struct vq_driver *d, bool packed, unsigned int num,
		      uint64_t ram_size, uint64_t gpa, bool shared)
{
	size_t pg = page_size();

	memset(d, 0, sizeof(*d));
	d->packed = packed;
	d->num = num;
	d->gpa = gpa;
	d->memfd = -1;
	d->ram_size = (ram_size + pg - 1) & ~(uint64_t)(pg - 1);
	if (shared) {
		/* As a VMM makes it: a back-end may seal it against shrinking. */
		d->memfd = memfd_create("vq-driver", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (d->memfd < 0 || ftruncate(d->memfd, (off_t)(d->ram_size + 2 * pg)) < 0) {
			perror("memfd");
			abort();
		}
	}
	d->map = mmap(NULL, d->ram_size + 2 * pg, PROT_READ | PROT_WRITE,
		      shared ? MAP_SHARED : MAP_PRIVATE | MAP_ANONYMOUS, d->memfd, 0);
	if (d->map == MAP_FAILED) {
		perror("mmap");
		abort();
	}
	memset(d->map, CANARY, pg);
	memset(d->map + pg + d->ram_size, CANARY, pg);
	d->ram = d->map + pg;
	if (guest_mem_add(&d->mem, gpa, d->ram_size, d->ram) < 0)
		abort();
	d->desc = gpa + DESC_OFF;
	d->driver = gpa + DRIVER_OFF;
	d->device = gpa + DEVICE_OFF;
	d->indirect = gpa + INDIRECT_OFF;
	d->data = d->indirect + (uint64_t)num * DRV_MAX_INDIRECT * 16;
	if (d->data >= gpa + d->ram_size)
		abort();
	drv_fresh(d);
}

void drv_init(struct vq_driver *d, bool packed, unsigned int num, uint64_t ram_size)
{
	drv_setup(d, packed, num, ram_size, DRV_RAM_GPA, false);
}

void drv_init_shared(struct vq_driver *d, bool packed, unsigned int num,
		     uint64_t ram_size, uint64_t gpa)
{
	drv_setup(d, packed, num, ram_size, gpa, true);
}

void drv_init_at(struct vq_driver *d, bool packed, unsigned int num, void *ram,
		 uint64_t ram_gpa, uint64_t ram_size, uint64_t ring_gpa)
{
	uint64_t end;

	memset(d, 0, sizeof(*d));
	d->packed = packed;
	d->num = num;
	d->ram = ram;
	d->gpa = ram_gpa;
	d->ram_size = ram_size;
	d->memfd = -1;
	d->desc = ring_gpa;
	d->driver = d->desc + 16ull * num;
	d->device = (d->driver + 6 + 2ull * num + 4095) & ~4095ull;
	end = d->device + (packed ? 4 : 6 + 8ull * num);
	if (num > VIRTQUEUE_MAX_SIZE || ring_gpa < ram_gpa || end > ram_gpa + ram_size)
		abort();
	/* A driver starts from zeroed rings: nothing available, nothing used. */
	memset(drv_ptr(d, d->desc), 0, end - d->desc);
	drv_fresh(d);
}

void drv_destroy(struct vq_driver *d)
{
	if (!d->map)
		return;
	munmap(d->map, d->ram_size + 2 * page_size());
	if (d->memfd >= 0)
		close(d->memfd);
}

bool drv_canary_ok(const struct vq_driver *d)
{
	size_t pg = page_size();

	for (size_t i = 0; i < pg; i++)
		if (d->map[i] != CANARY || d->map[pg + d->ram_size + i] != CANARY)
			return false;
	return true;
}

void *drv_ptr(struct vq_driver *d, uint64_t gpa)
{
	return d->ram + (gpa - d->gpa);
}

int drv_setup_vq(struct vq_driver *d, struct virtqueue *vq, uint64_t features)
{
	virtqueue_init(vq, &d->mem);
	vq->num = (uint16_t)d->num;
	vq->desc_addr = d->desc;
	vq->driver_addr = d->driver;
	vq->device_addr = d->device;
	return virtqueue_enable(vq, features);
}

static void put_desc(struct vring_desc *t, const struct drv_seg *s, uint16_t flags, uint16_t next)
{
	t->addr = s->gpa;
	t->len = s->len;
	t->flags = flags | (s->write ? VRING_DESC_F_WRITE : 0);
	t->next = next;
}

static int split_add(struct vq_driver *d, const struct drv_seg *segs, unsigned int n,
		     bool indirect, uint64_t tgpa)
{
	struct vring_desc *desc = drv_ptr(d, d->desc);
	struct vring_avail *avail = drv_ptr(d, d->driver);
	unsigned int need = indirect ? 1 : n;
	uint16_t head;

	if (need == 0 || need > d->nfree)
		return -1;
	/* Descriptors come off the top of the free stack, in chain order. */
	head = d->free[d->nfree - 1];
	if (indirect) {
		struct vring_desc *t = drv_ptr(d, tgpa);

		for (unsigned int i = 0; i < n; i++)
			put_desc(&t[i], &segs[i], i + 1 < n ? VRING_DESC_F_NEXT : 0, (uint16_t)(i + 1));
		desc[head] = (struct vring_desc){ tgpa, n * 16, VRING_DESC_F_INDIRECT, 0 };
		d->nfree--;
	} else {
		for (unsigned int i = 0; i < n; i++) {
			uint16_t cur = d->free[--d->nfree];

			put_desc(&desc[cur], &segs[i], i + 1 < n ? VRING_DESC_F_NEXT : 0,
				 i + 1 < n ? d->free[d->nfree - 1] : 0);
		}
	}
	d->chain_len[head] = (uint16_t)need;
	avail->ring[d->avail_idx % d->num] = head;
	d->avail_idx++;
	__atomic_store_n(&avail->idx, d->avail_idx, __ATOMIC_RELEASE);
	return head;
}

static uint16_t packed_avail_bits(bool wrap)
{
	return wrap ? (1u << VRING_PACKED_DESC_F_AVAIL) : (1u << VRING_PACKED_DESC_F_USED);
}

static int packed_add(struct vq_driver *d, const struct drv_seg *segs, unsigned int n,
		      bool indirect, uint64_t tgpa)
{
	struct vring_packed_desc *ring = drv_ptr(d, d->desc);
	unsigned int need = indirect ? 1 : n;
	uint16_t id, head = d->next_avail, head_flags = 0;
	uint16_t slot = d->next_avail;
	bool wrap = d->avail_wrap;

	if (need == 0 || need > d->free_descs || d->nfree == 0)
		return -1;
	id = d->free[--d->nfree];
	if (indirect) {
		struct vring_packed_desc *t = drv_ptr(d, tgpa);

		for (unsigned int i = 0; i < n; i++)
			t[i] = (struct vring_packed_desc){ segs[i].gpa, segs[i].len, 0,
				segs[i].write ? VRING_DESC_F_WRITE : 0 };
		ring[slot].addr = tgpa;
		ring[slot].len = n * 16;
		ring[slot].id = id;
		head_flags = VRING_DESC_F_INDIRECT | packed_avail_bits(wrap);
		slot++;
	} else {
		for (unsigned int i = 0; i < n; i++) {
			uint16_t flags = (segs[i].write ? VRING_DESC_F_WRITE : 0) |
					 (i + 1 < n ? VRING_DESC_F_NEXT : 0) |
					 packed_avail_bits(wrap);

			ring[slot].addr = segs[i].gpa;
			ring[slot].len = segs[i].len;
			ring[slot].id = id;
			if (i == 0)
				head_flags = flags;
			else
				ring[slot].flags = flags;
			if (++slot == d->num) {
				slot = 0;
				wrap = !wrap;
			}
		}
	}
	if (slot == d->num) {
		slot = 0;
		wrap = !wrap;
	}
	d->next_avail = slot;
	d->avail_wrap = wrap;
	d->free_descs -= need;
	d->chain_len[id] = (uint16_t)need;
	/* The head turns available last, after the rest of the chain. */
	__atomic_store_n(&ring[head].flags, head_flags, __ATOMIC_RELEASE);
	return id;
}

static int add(struct vq_driver *d, const struct drv_seg *segs, unsigned int n, bool indirect,
	       uint64_t table)
{
	return d->packed ? packed_add(d, segs, n, indirect, table) :
			   split_add(d, segs, n, indirect, table);
}

int drv_add(struct vq_driver *d, const struct drv_seg *segs, unsigned int n, bool indirect)
{
	uint64_t table = 0;

	if (indirect) {
		if (!d->indirect || n > DRV_MAX_INDIRECT || d->nfree == 0)
			return -1;
		/* The table of the head (split) or id (packed) about to be taken. */
		table = d->indirect + (uint64_t)d->free[d->nfree - 1] * DRV_MAX_INDIRECT * 16;
	}
	return add(d, segs, n, indirect, table);
}

int drv_add_table(struct vq_driver *d, const struct drv_seg *segs, unsigned int n,
		  uint64_t table)
{
	return add(d, segs, n, true, table);
}

static int split_reap(struct vq_driver *d, uint16_t *id, uint32_t *len)
{
	struct vring_used *used = drv_ptr(d, d->device);
	struct vring_desc *desc = drv_ptr(d, d->desc);
	uint16_t head, i;

	if (__atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) == d->last_used_idx)
		return 0;
	head = (uint16_t)used->ring[d->last_used_idx % d->num].id;
	*len = used->ring[d->last_used_idx % d->num].len;
	d->last_used_idx++;
	if (head >= d->num)
		abort();
	i = head;
	for (unsigned int k = 0; k < d->chain_len[head]; k++) {
		d->free[d->nfree++] = i;
		i = desc[i].next;
	}
	*id = head;
	return 1;
}

static int packed_reap(struct vq_driver *d, uint16_t *id, uint32_t *len)
{
	struct vring_packed_desc *ring = drv_ptr(d, d->desc);
	uint16_t flags = __atomic_load_n(&ring[d->last_used].flags, __ATOMIC_ACQUIRE);
	bool avail = flags & (1u << VRING_PACKED_DESC_F_AVAIL), used = flags & (1u << VRING_PACKED_DESC_F_USED);
	unsigned int next;

	if (avail != used || used != d->used_wrap)
		return 0;
	*id = ring[d->last_used].id;
	*len = ring[d->last_used].len;
	if (*id >= d->num)
		abort();
	next = d->last_used + d->chain_len[*id];
	if (next >= d->num) {
		next -= d->num;
		d->used_wrap = !d->used_wrap;
	}
	d->last_used = (uint16_t)next;
	d->free_descs += d->chain_len[*id];
	d->free[d->nfree++] = *id;
	return 1;
}

int drv_reap(struct vq_driver *d, uint16_t *id, uint32_t *len)
{
	return d->packed ? packed_reap(d, id, len) : split_reap(d, id, len);
}
