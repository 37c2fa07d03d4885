/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_VIRTIO_VIRTIO_H
#define BRISK_VIRTIO_VIRTIO_H

#include <linux/virtio_config.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/compiler.h"
#include "util/guest-mem.h"
#include "virtio/virtqueue.h"

/*
 * Device status bits (VIRTIO 1.2, 2.1) and feature bits are the kernel's
 * <linux/virtio_config.h>.  No interrupt vector: the value virtio-pci
 * gives it (VIRTIO_MSI_NO_VECTOR), named here for a core that knows no PCI.
 */
#define VIRTIO_NO_VECTOR 0xffff

struct virtio_device;

/* One queue as the transport programs it, plus its doorbell and interrupt. */
struct virtio_queue {
	struct virtqueue vq;
	uint16_t max_size;	/* what the device offers (queue-size=) */
	uint16_t vector;	/* MSI-X vector or VIRTIO_NO_VECTOR */
	bool ready;		/* queue_enable written by the driver */
	int kick_fd;		/* eventfd the guest's notify rings (ioeventfd) */
};

/* What a device (virtio-blk...) implements; called with vdev->lock held. */
struct virtio_device_ops {
	/* Device-specific config space, little-endian as the guest sees it. */
	void (*read_config)(struct virtio_device *vdev, uint32_t off, void *buf, unsigned len);
	void (*write_config)(struct virtio_device *vdev, uint32_t off, const void *buf, unsigned len);
	/*
	 * DRIVER_OK was set, or a queue was enabled after it: serve the
	 * ready queues (so called again for each late one).
	 */
	int (*start)(struct virtio_device *vdev);
	/*
	 * The driver reset the device (or it must stop after an error):
	 * stop serving, drop requests in flight without touching the
	 * rings again.
	 */
	void (*reset)(struct virtio_device *vdev);
	/*
	 * Optional: how many requests taken before a reset are still in
	 * the backend, where they may yet read or write guest memory.  The
	 * reset is only complete (status reads 0) once this is 0; the
	 * device then calls virtio_reset_check().
	 */
	unsigned (*busy)(struct virtio_device *vdev);
	/*
	 * For transports that run queues one at a time (vhost-user), called
	 * WITHOUT vdev->lock.  start_queue: queue q is enabled; serve it,
	 * woken by kick_fd, which the transport keeps open until stop_queue
	 * has returned.  stop_queue: take nothing more from q, and return
	 * once every request taken from it (also before a reset) has left
	 * the backend and, unless the device was reset or broke meanwhile,
	 * been pushed to the used ring with its interrupt sent.  After that
	 * the device does not touch q's ring or buffers until started again,
	 * so the transport may give up guest memory.
	 */
	int (*start_queue)(struct virtio_device *vdev, unsigned q, int kick_fd);
	void (*stop_queue)(struct virtio_device *vdev, unsigned q);
};

/* What a transport (virtio-pci, vhost-user) implements for the core. */
struct virtio_transport_ops {
	/* Interrupt for queue q (used buffers). */
	void (*notify_queue)(struct virtio_device *vdev, unsigned q);
	/* Configuration-change interrupt. */
	void (*notify_config)(struct virtio_device *vdev);
	/*
	 * Optional: status or broken changed other than through the
	 * transport's own register write (a reset completed on an I/O
	 * thread, the device found the driver's error).  The transport
	 * brings what it derives from them up to date.
	 */
	void (*status_changed)(struct virtio_device *vdev);
	/*
	 * An eventfd that interrupts the driver for queue q when written,
	 * as notify_queue does, for another process to write (a vhost-user
	 * back-end); -1 when q has no interrupt.  May be absent.
	 */
	int (*queue_irqfd)(struct virtio_device *vdev, unsigned q);
};

struct virtio_device {
	uint16_t device_id;	/* virtio device type, e.g. 2 for block */
	uint64_t host_features;	/* offered */
	uint64_t guest_features;	/* accepted by the driver */
	uint32_t config_len;
	uint8_t status;
	uint8_t config_generation;
	bool broken;		/* NEEDS_RESET was raised; serve nothing */
	/*
	 * The driver wrote 0 to status while the device was busy: status
	 * keeps its old value (the driver polls for 0) and the transport
	 * ignores register writes until the device is idle.
	 */
	bool resetting;
	bool reset_warned;	/* said once that this reset is slow */
	uint64_t reset_ns;	/* CLOCK_MONOTONIC of the write of 0 */
	const char *name;	/* for messages, e.g. the disk's path; may be NULL */
	bool error_reported;	/* virtio_error() logged once for this device */
	/*
	 * Serialises register accesses (vCPU threads) against request
	 * processing (I/O threads) for this device.
	 */
	pthread_mutex_t lock;
	const struct guest_mem *mem;
	unsigned nr_queues;
	struct virtio_queue *queues;
	const struct virtio_device_ops *ops;
	const struct virtio_transport_ops *transport;
	void *transport_opaque;
	void *opaque;		/* the device's own state */
};

/*
 * Core, transport-agnostic.  init allocates queues with eventfds for kicks;
 * features must include VIRTIO_F_VERSION_1.
 */
int virtio_device_init(struct virtio_device *vdev, uint16_t device_id,
		       uint64_t host_features, uint32_t config_len,
		       unsigned nr_queues, uint16_t queue_max_size,
		       const struct guest_mem *mem,
		       const struct virtio_device_ops *ops, void *opaque);
void virtio_device_destroy(struct virtio_device *vdev);

/*
 * Driver writes to the status register; handles reset (0) and DRIVER_OK.
 * A reset never waits: while ops->busy() the status keeps reading
 * non-zero (VIRTIO 1.2, 4.1.4.3.2: the driver polls for 0), and the
 * device completes it with virtio_reset_check().
 */
void virtio_set_status(struct virtio_device *vdev, uint8_t status);
/*
 * For a device whose busy() may just have turned 0 (its last request from
 * before a reset came back): completes a pending reset.
 */
void virtio_reset_check(struct virtio_device *vdev);
/*
 * The status register as the driver reads it.  A reset still waiting for
 * the backend after VIRTIO_RESET_WARN_NS is said once on stderr (a stuck
 * host disk holds the driver's reset for as long as it is stuck).
 */
#define VIRTIO_RESET_WARN_NS (5 * 1000000000ull)
uint8_t virtio_get_status(struct virtio_device *vdev);
/* FEATURES_OK handshake: false if the driver accepted what we never offered. */
bool virtio_set_features(struct virtio_device *vdev, uint64_t features);
/* Enable queue q with the addresses the transport was given. */
int virtio_queue_enable(struct virtio_device *vdev, unsigned q);

/*
 * The transport took queue q down (vhost-user stopped it): its ring is
 * forgotten, as at reset.  The device must have stopped the queue first.
 */
void virtio_queue_disable(struct virtio_device *vdev, unsigned q);

/*
 * The guest broke the rules: log once, set NEEDS_RESET, send a config
 * interrupt, and serve nothing until the driver resets the device.
 */
void virtio_error(struct virtio_device *vdev, const char *fmt, ...) BRISK_PRINTF(2, 3);
/*
 * Interrupt the driver for queue q if the ring's suppression allows it;
 * true when an interrupt went out.
 */
bool virtio_notify(struct virtio_device *vdev, unsigned q);

#endif
