/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_VQ_DRIVER_H
#define BRISK_TESTS_VQ_DRIVER_H

/*
 * The guest's side of one virtqueue, for tests and benchmarks: lays out a
 * split or packed ring in a buffer registered as guest RAM (between two
 * canary pages), or in a fake board's RAM, adds chains and reaps used
 * buffers as a driver would.
 */

#include <stdbool.h>
#include <stdint.h>

#include "util/guest-mem.h"
#include "virtio/virtio_ring.h"
#include "virtio/virtqueue.h"

#define DRV_RAM_GPA 0x100000ull
/* Per-head indirect tables of this many entries, after the rings. */
#define DRV_MAX_INDIRECT 64

struct drv_seg {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

struct vq_driver {
	struct guest_mem mem;
	uint8_t *map;		/* canary page, RAM, canary page; NULL: RAM is not ours */
	uint8_t *ram;
	uint64_t ram_size;
	uint64_t gpa;		/* where RAM starts */
	int memfd;		/* shared RAM: map is this file, RAM at one page in; or -1 */
	bool packed;
	unsigned int num;
	uint64_t desc, driver, device, indirect;	/* gpa; indirect 0: no tables */
	uint64_t data;		/* gpa of free space for buffers; 0: none */

	/* split */
	uint16_t avail_idx;
	uint16_t last_used_idx;
	/* packed */
	uint16_t next_avail;
	bool avail_wrap;
	uint16_t last_used;
	bool used_wrap;

	uint16_t free[VIRTQUEUE_MAX_SIZE];	/* free descriptors (split) or ids */
	unsigned int nfree;
	unsigned int free_descs;	/* ring slots free (packed) */
	uint16_t chain_len[VIRTQUEUE_MAX_SIZE];	/* per id: slots (packed) or descs (split) */
};

/* num entries; ram_size bytes of RAM.  Aborts on host allocation failure. */
void drv_init(struct vq_driver *d, bool packed, unsigned int num, uint64_t ram_size);
/*
 * The same with RAM another process can map (a vhost-user back-end): a
 * memfd holding the canaries and RAM, RAM at guest address gpa.
 */
void drv_init_shared(struct vq_driver *d, bool packed, unsigned int num,
		     uint64_t ram_size, uint64_t gpa);
/*
 * A ring at ring_gpa in RAM that is not ours (ram, ram_size bytes at guest
 * address ram_gpa), for a test that programs the transport itself: the
 * driver area right after the descriptors, the device area on the next
 * page.  No canaries, no mem and no tables of its own: indirect chains go
 * through drv_add_table(), and drv_destroy() leaves the RAM alone.
 */
void drv_init_at(struct vq_driver *d, bool packed, unsigned int num, void *ram,
		 uint64_t ram_gpa, uint64_t ram_size, uint64_t ring_gpa);
void drv_destroy(struct vq_driver *d);
/* Fills vq's transport fields and enables it; returns virtqueue_enable(). */
int drv_setup_vq(struct vq_driver *d, struct virtqueue *vq, uint64_t features);
/* Host pointer for a gpa inside RAM (the test's own view). */
void *drv_ptr(struct vq_driver *d, uint64_t gpa);
/* True when both canary pages are untouched. */
bool drv_canary_ok(const struct vq_driver *d);

/*
 * Adds a chain; with indirect, one ring descriptor points at a table.
 * Returns the head (split) or buffer id (packed), -1 if the ring is full.
 */
int drv_add(struct vq_driver *d, const struct drv_seg *segs, unsigned int n, bool indirect);
/* The same, indirect, with the table at table, of any length. */
int drv_add_table(struct vq_driver *d, const struct drv_seg *segs, unsigned int n,
		  uint64_t table);
/* Takes one used buffer: 1 with *id and *len, 0 if none. */
int drv_reap(struct vq_driver *d, uint16_t *id, uint32_t *len);

#endif
