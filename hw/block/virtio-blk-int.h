/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_BLOCK_VIRTIO_BLK_INT_H
#define BRISK_HW_BLOCK_VIRTIO_BLK_INT_H

/*
 * Shared between the command-line parser and the device, private to
 * hw/block.  The parser only fills these structs from strings; files are
 * opened and devices built by blk_devices_create().
 */
#include <stdbool.h>
#include <stdint.h>

#include "block/block.h"

#define VBLK_SERIAL_LEN 20		/* GET_ID answer, not NUL-terminated */
#define VBLK_MAX_QUEUES 64
#define VBLK_MAX_QUEUE_SIZE 1024
#define VBLK_DEFAULT_QUEUE_SIZE 256
#define VBLK_DEFAULT_POLL_US 2000
#define VBLK_MAX_POLL_US 1000000
#define VBLK_MAX_COALESCE_US 1000000
#define VBLK_MAX_BLOCK_SIZE (2u << 20)	/* QEMU's bound for both block sizes */
#define VBLK_EXPORT_QUEUES 1

struct vblk;

struct blk_drive_cfg {
	char *id;		/* NULL for an anonymous if=virtio drive */
	char *file;
	bool readonly;
	bool if_virtio;		/* short form: makes its own device */
	enum blk_aio aio;
	enum blk_cache cache;
	bool used;		/* some device names it */
};

struct blk_device_cfg {
	char *drive_id;		/* NULL when made by an if=virtio drive */
	unsigned drive;		/* index into drives, set by finish */
	bool packed;
	bool event_idx;
	bool indirect_desc;
	unsigned num_queues;	/* 0: one per vCPU, resolved at create */
	unsigned queue_size;
	unsigned poll_us;	/* I/O thread polling window, at most */
	unsigned iothreads;	/* I/O threads; queue i runs on i % n */
	unsigned irq_coalesce_us;	/* 0: every batch interrupts at once */
	unsigned irq_interval_us;	/* 0: no minimum gap between interrupts */
	/* blk_size and the physical block offered the guest; 0: from the host */
	unsigned logical_block_size, physical_block_size;
	char serial[VBLK_SERIAL_LEN + 1];
	/*
	 * -export vhost-user-blk: the device is served to another process
	 * over a Unix socket instead of being plugged into a guest's board.
	 */
	char *socket_path;	/* NULL for a -device */
	char *export_id;
	bool writable;
	struct vblk *dev;	/* the live device, once created */
};

struct blk_cmdline {
	struct blk_drive_cfg *drives;
	unsigned nr_drives;
	struct blk_device_cfg *devs;
	unsigned nr_devs;
	bool finished;
};

/* hw/block/virtio-blk.c */
struct machine;
struct vblk *vblk_create(struct machine *m, const struct blk_drive_cfg *drive,
			 const struct blk_device_cfg *cfg);
struct vblk *vblk_export_create(const struct blk_drive_cfg *drive,
				const struct blk_device_cfg *cfg);
void vblk_destroy(struct vblk *s);

#endif
