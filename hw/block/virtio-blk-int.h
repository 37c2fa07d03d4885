/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_BLOCK_VIRTIO_BLK_INT_H
#define BRISK_HW_BLOCK_VIRTIO_BLK_INT_H

/*
 * Shared between the command-line parser and the device, private to
 * hw/block.  The parser only fills these structs from strings; files are
 * opened by blk_drives_open(), devices built by their families' create.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block/block.h"
#include "hw/char/chardev-socket.h"
#include "hw/virtio/virtio-props.h"
#include "util/opts.h"

#define VBLK_SERIAL_LEN 20		/* GET_ID answer, not NUL-terminated */
#define VBLK_MAX_QUEUES 64
#define VBLK_MAX_QUEUE_SIZE 1024
#define VBLK_DEFAULT_QUEUE_SIZE 256
/*
 * Polls while idle periods fit in 16 us: a driver's next request at depth
 * 1 fits (about 12 us round trip over vhost-user here), a 4 KiB read from
 * a disk does not (25-40 us), and spinning through it costs more CPU than
 * the wakeup it saves (docs/benchmarks.md).
 */
#define VBLK_DEFAULT_POLL_US 16
#define VBLK_MAX_POLL_US 1000000
#define VBLK_MAX_COALESCE_US 1000000
#define VBLK_MAX_BLOCK_SIZE (2u << 20)	/* QEMU's bound for both block sizes */
#define VBLK_EXPORT_QUEUES 1

struct device_set;
struct vblk;

struct blk_drive_cfg {
	char *id;		/* NULL for an anonymous if=virtio drive */
	char *file;
	bool readonly;
	bool snapshot;		/* writes to a private copy (block/file.c) */
	int if_virtio;		/* if=virtio (1): makes its own device; if=none (0) */
	enum blk_aio aio;
	enum blk_cache cache;
	int format_given;	/* format=raw: served as it is, not probed */
	int locking;		/* file.locking: on (auto) or off */
	bool used;		/* some device names it */
	/* Open from blk_drives_open() until its device takes it. */
	struct blk_file *f;
};

struct blk_device_cfg {
	char *drive_id;		/* NULL when made by an if=virtio drive */
	unsigned drive;		/* index into drives, set by finish */
	struct blk_drive_cfg *d;	/* drives[drive], set by finish */
	struct virtio_ring_opts ring;
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
	char *iothread_id;	/* iothread=: an -object iothread, checked only */
	char *export_id;
	bool writable;
	struct vblk *dev;	/* the live device, once created */
};

/* A -chardev socket: the way to a vhost-user back-end. */
struct blk_chardev_cfg {
	struct chardev_socket_cfg sock;
	bool used;
};

/* -device vhost-user-blk-pci: a guest disk served by another process. */
struct vublk;
struct vublk_cfg {
	char *chardev_id;
	const struct blk_chardev_cfg *cd;	/* its -chardev, set by finish */
	unsigned num_queues;	/* 0: one per vCPU, at most what the back-end serves */
	unsigned queue_size;
	struct virtio_ring_opts ring;
	struct vublk *dev;	/* the live device, once created */
};

/*
 * The disks' back ends, and (from finish on) the disks of the device set
 * that name them: their configs belong to the set.
 */
struct blk_cmdline {
	struct blk_drive_cfg *drives;
	unsigned nr_drives;
	struct blk_chardev_cfg *chardevs;
	unsigned nr_chardevs;
	/* Where -drive if=virtio puts its disk: the caller's, or own. */
	struct device_set *devices;
	bool own_devices;
	struct blk_device_cfg **devs;	/* virtio-blk-pci and exports, in order */
	unsigned nr_devs;
	struct vublk_cfg **vublks;
	unsigned nr_vublks;
	bool snapshot;		/* -snapshot: every drive */
	bool finished;
	const struct object_set *objects;	/* -object, for iothread= */
};

/* hw/block/virtio-blk-cmdline.c */
/* arr with room for one more zeroed element at nr; NULL (reported) if none. */
void *grow(void *arr, unsigned nr, size_t elem);

/* hw/block/vhost-user-blk-cmdline.c */
/* Ties each device to its -chardev; -1 after one line if one is missing. */
int vublk_cmdline_finish(struct blk_cmdline *c);
void vublk_cmdline_free(struct blk_cmdline *c);
/* Each -chardev path is a socket, so a typo fails before the VM is made. */
int vublk_chardevs_check(const struct blk_cmdline *c);

/* hw/block/virtio-blk.c */
struct machine;
struct guest_mem;
struct virtio_plug;
/* blk_drives_open() without the -chardev sockets' check. */
int blk_drives_open_files(struct blk_cmdline *c, unsigned ncpus);
/*
 * The device serving file (drive's, opened by blk_drives_open()), its
 * I/O threads running, reached through plug; it owns file and plug from
 * here on, even when it fails.  mem is the guest memory it serves, NULL
 * for what plug brings (an export's front end); ncpus sizes
 * num-queues=0.  NULL after one error line.
 */
struct vblk *vblk_create(const struct guest_mem *mem, unsigned ncpus, struct blk_file *file,
			 const struct blk_drive_cfg *drive, const struct blk_device_cfg *cfg,
			 struct virtio_plug *plug);
void vblk_destroy(struct vblk *s);
/*
 * For tests: the clock that irq-interval-us and irq-coalesce-us read
 * (CLOCK_MONOTONIC's unless set) of device i, set before its driver
 * starts; and its queue q's interrupt timer, a timerfd armed at an
 * absolute time on that clock.  A test's clock far ahead of the real one
 * holds an interrupt until the test makes the timer go off.
 */
void blk_device_set_clock(struct blk_cmdline *c, unsigned i, uint64_t (*now_ns)(void));
int blk_device_irq_timer_fd(struct blk_cmdline *c, unsigned i, unsigned q);
/* The same for a disk whose requests another process serves. */
struct vublk *vublk_create(struct machine *m, const struct blk_chardev_cfg *chardev,
			   const struct vublk_cfg *cfg, struct virtio_plug *plug);
void vublk_destroy(struct vublk *s);
/* How long the i-th vhost-user disk's front-end waits for a reply. */
void vublk_set_reply_timeout(struct blk_cmdline *c, unsigned i, int ms);

#endif
