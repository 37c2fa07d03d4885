/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_BLOCK_VIRTIO_BLK_DEV_H
#define BRISK_HW_BLOCK_VIRTIO_BLK_DEV_H

/*
 * The virtio-blk device's own state, private to hw/block: virtio-blk.c
 * serves requests (the hot path), virtio-blk-dev.c is the device as the
 * transport sees it (config space, features, reset, queues started and
 * stopped) and its construction.
 */
#include <linux/virtio_blk.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "block/block.h"
#include "util/guest-mem.h"
#include "virtio/virtio-server.h"
#include "virtio/virtio.h"
#include "virtio-blk-int.h"

/* Not a VIRTIO_BLK_S_* status: the request goes on to the block backend. */
#define VBLK_S_SUBMIT 0xff

#define SECTOR_SHIFT 9
#define SECTOR_SIZE (1u << SECTOR_SHIFT)
#define VBLK_HDR_LEN 16
#define VBLK_SEG_LEN 16

/*
 * One range per DISCARD/WRITE_ZEROES request maps onto one blk_req; Linux
 * splits larger ones itself.  2 GiB per range keeps a single fallocate()
 * from stalling a queue for long.
 */
#define VBLK_MAX_ZERO_SEG 1
#define VBLK_MAX_ZERO_SECTORS (1u << 22)
#define VBLK_DISCARD_ALIGN 8	/* sectors: a typical host file system block */
/*
 * size_max and seg_max, which the device offers: a driver that accepts
 * them sends at most seg_max data segments of at most size_max bytes.
 * Whatever it accepted, a READ/WRITE moves less than 4 GiB (its used
 * length is 32 bits) in at most IOV_MAX segments.
 */
#define VBLK_SIZE_MAX (1u << 20)
#define VBLK_MAX_RW_LEN (UINT32_MAX - 1)

/* Config space layout: where <linux/virtio_blk.h> puts each field. */
#define CFG(field) offsetof(struct virtio_blk_config, field)
#define CFG_CAPACITY CFG(capacity)
#define CFG_SIZE_MAX CFG(size_max)
#define CFG_SEG_MAX CFG(seg_max)
#define CFG_BLK_SIZE CFG(blk_size)
#define CFG_PHYS_BLOCK_EXP CFG(physical_block_exp)
#define CFG_ALIGN_OFFSET CFG(alignment_offset)
#define CFG_MIN_IO_SIZE CFG(min_io_size)
#define CFG_OPT_IO_SIZE CFG(opt_io_size)
#define CFG_NUM_QUEUES CFG(num_queues)
#define CFG_MAX_DISCARD_SECTORS CFG(max_discard_sectors)
#define CFG_MAX_DISCARD_SEG CFG(max_discard_seg)
#define CFG_DISCARD_ALIGN CFG(discard_sector_alignment)
#define CFG_MAX_WZ_SECTORS CFG(max_write_zeroes_sectors)
#define CFG_MAX_WZ_SEG CFG(max_write_zeroes_seg)
#define CFG_WZ_MAY_UNMAP CFG(write_zeroes_may_unmap)
/* Up to write_zeroes_may_unmap and its padding: VIRTIO 1.1's fields. */
#define VBLK_CONFIG_LEN CFG(max_secure_erase_sectors)
_Static_assert(VBLK_CONFIG_LEN == 60, "VIRTIO 1.1 config space: 60 bytes");

struct vblk_queue;

/* A popped request; pop allocates it with the server's part first. */
struct vblk_req {
	struct vs_req req;
	struct blk_req br;
	struct vblk_queue *q;
	uint8_t *status_ptr;	/* last byte of the last writable buffer */
	uint64_t expect;	/* bytes a READ/WRITE must move */
	uint8_t status;
};

struct vblk_queue {
	struct virtio_server sv;	/* popping, publishing, polling */
	struct vblk *s;
	unsigned idx;
	struct iothread *t;
	struct blk_queue *bq;
	int irq_timer_fd;	/* ends a held interrupt's wait */
	uint64_t coalesce_ns;
	uint64_t interval_ns;

	int kick_fd;		/* a vhost-user front-end's, or -1 */

	/* under s->vdev.lock */
	bool irq_held;		/* used entries published, interrupt not sent */
	uint64_t last_irq_ns;	/* CLOCK_MONOTONIC of the last interrupt sent */
};

struct vblk {
	struct virtio_device vdev;
	bool vdev_ready;
	struct virtio_plug *plug;	/* its transport, whichever it is */
	uint64_t (*now_ns)(void);	/* CLOCK_MONOTONIC's, or a test's */
	struct guest_mem shared_mem;	/* what a transport that brings memory maps in */
	struct blk_file *file;
	bool readonly;
	bool writethrough;	/* under vdev.lock: the driver took no FLUSH */
	uint64_t capacity;	/* sectors */
	unsigned seg_max;
	/* Under vdev.lock: seg_max and size_max where the driver took them. */
	unsigned seg_limit;
	uint32_t size_limit;
	uint64_t ops_taken;	/* under vdev.lock: 1 << VIRTIO_BLK_T_* the driver took */
	unsigned nq;
	struct vblk_queue *q;
	unsigned nt;
	struct iothread **t;	/* queue i is served by t[i % nt] */
	uint8_t serial[VBLK_SERIAL_LEN];
	uint8_t config[VBLK_CONFIG_LEN];
};

/* virtio-blk.c: the queue's server, and the I/O thread's handlers. */
void vblk_server_init(struct vblk_queue *q, unsigned idx, unsigned queue_size);
void vblk_serve(void *opaque);		/* opaque: the queue's server */
void vblk_irq_timer_handler(void *opaque);
void vblk_batch_done(void *opaque);
/* Sends the queue's interrupt now; under vdev.lock. */
void vblk_irq_send_locked(struct vblk_queue *q);

#endif
