// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The transport-agnostic virtio device core: status, feature negotiation,
 * reset and error handling shared by every transport and device.
 *
 * Locking: every function here expects vdev->lock held by the caller.  The
 * transport takes it around each register access (vCPU threads); a device
 * takes it in its I/O thread around popping, pushing and virtio_notify().
 * Device ops are called with it held, so ops->reset and ops->start must
 * not wait for a thread that itself waits for vdev->lock.
 */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/log.h"
#include "virtio/virtio.h"

#define F(bit) (1ull << (bit))

static void virtio_queue_clear(struct virtio_queue *q)
{
	eventfd_t stale;

	virtqueue_reset(&q->vq);
	q->vq.num = q->max_size;
	q->vq.desc_addr = q->vq.driver_addr = q->vq.device_addr = 0;
	q->vector = VIRTIO_NO_VECTOR;
	q->ready = false;
	/* A kick from before the reset must not wake the next incarnation. */
	while (eventfd_read(q->kick_fd, &stale) < 0 && errno == EINTR)
		;
}

int virtio_device_init(struct virtio_device *vdev, uint16_t device_id,
		       uint64_t host_features, uint32_t config_len,
		       unsigned nr_queues, uint16_t queue_max_size,
		       const struct guest_mem *mem,
		       const struct virtio_device_ops *ops, void *opaque)
{
	assert(host_features & F(VIRTIO_F_VERSION_1));
	assert(queue_max_size && queue_max_size <= VIRTQUEUE_MAX_SIZE &&
	       !(queue_max_size & (queue_max_size - 1)));
	assert(nr_queues > 0 && ops);

	*vdev = (struct virtio_device){
		.device_id = device_id,
		.host_features = host_features,
		.config_len = config_len,
		.mem = mem,
		.nr_queues = nr_queues,
		.ops = ops,
		.opaque = opaque,
	};
	pthread_mutex_init(&vdev->lock, NULL);
	vdev->queues = calloc(nr_queues, sizeof(*vdev->queues));
	if (!vdev->queues) {
		pthread_mutex_destroy(&vdev->lock);
		return -1;
	}
	for (unsigned i = 0; i < nr_queues; i++)
		vdev->queues[i].kick_fd = -1;
	for (unsigned i = 0; i < nr_queues; i++) {
		struct virtio_queue *q = &vdev->queues[i];

		q->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (q->kick_fd < 0) {
			error_report("virtio: eventfd: %s", strerror(errno));
			virtio_device_destroy(vdev);
			return -1;
		}
		q->max_size = queue_max_size;
		virtqueue_init(&q->vq, mem);
		virtio_queue_clear(q);
	}
	return 0;
}

void virtio_device_destroy(struct virtio_device *vdev)
{
	if (!vdev->queues)
		return;
	for (unsigned i = 0; i < vdev->nr_queues; i++)
		if (vdev->queues[i].kick_fd >= 0)
			close(vdev->queues[i].kick_fd);
	free(vdev->queues);
	vdev->queues = NULL;
	pthread_mutex_destroy(&vdev->lock);
}

static void virtio_status_changed(struct virtio_device *vdev)
{
	if (vdev->transport && vdev->transport->status_changed)
		vdev->transport->status_changed(vdev);
}

static void virtio_reset_finish(struct virtio_device *vdev)
{
	for (unsigned i = 0; i < vdev->nr_queues; i++)
		virtio_queue_clear(&vdev->queues[i]);
	vdev->guest_features = 0;
	vdev->broken = false;
	vdev->resetting = false;
	vdev->status = 0;
	virtio_status_changed(vdev);
}

/*
 * VIRTIO 1.2, 2.4: once status reads 0 the device must not touch the
 * rings or the buffers.  Requests the backend still holds may write into
 * guest buffers, or land on the disk after writes made by the next
 * incarnation, so the reset is complete only when they have come back.
 */
static void virtio_reset(struct virtio_device *vdev)
{
	vdev->resetting = true;
	vdev->reset_warned = false;
	vdev->reset_ns = clock_now_ns();
	if (vdev->ops->reset)
		vdev->ops->reset(vdev);
	virtio_reset_check(vdev);
}

static unsigned virtio_busy(struct virtio_device *vdev)
{
	return vdev->ops->busy ? vdev->ops->busy(vdev) : 0;
}

/*
 * Out of line: every completion batch asks, and the answer is nearly
 * always no, which should cost a compare, not this path's frame.
 */
static __attribute__((noinline)) void virtio_reset_try(struct virtio_device *vdev)
{
	if (!virtio_busy(vdev))
		virtio_reset_finish(vdev);
}

void virtio_reset_check(struct virtio_device *vdev)
{
	if (unlikely(vdev->resetting))
		virtio_reset_try(vdev);
}

/*
 * Checked when the driver reads the status, which it does while it waits
 * for the reset: no timer, and nothing said of a reset nobody waits for.
 */
uint8_t virtio_get_status(struct virtio_device *vdev)
{
	char id[32];
	unsigned n;

	if (!vdev->resetting || vdev->reset_warned ||
	    clock_now_ns() - vdev->reset_ns < VIRTIO_RESET_WARN_NS || !(n = virtio_busy(vdev)))
		return vdev->status;
	vdev->reset_warned = true;
	snprintf(id, sizeof(id), "virtio device %u", vdev->device_id);
	error_report("%s: reset still waits for %u request%s in the host's backend after %llu s",
		     vdev->name ? vdev->name : id, n, n == 1 ? "" : "s",
		     VIRTIO_RESET_WARN_NS / 1000000000ull);
	return vdev->status;
}

bool virtio_set_features(struct virtio_device *vdev, uint64_t features)
{
	/* Fixed once accepted, until reset (complete). */
	if (vdev->resetting)
		return false;
	if (vdev->status & VIRTIO_CONFIG_S_FEATURES_OK)
		return features == vdev->guest_features;
	if (features & ~vdev->host_features)
		return false;
	/* Legacy drivers are not served. */
	if (!(features & F(VIRTIO_F_VERSION_1)))
		return false;
	vdev->guest_features = features;
	return true;
}

void virtio_set_status(struct virtio_device *vdev, uint8_t status)
{
	uint8_t old = vdev->status;

	/* The driver must wait for 0 before anything else (4.1.4.3.2). */
	if (vdev->resetting)
		return;
	if (status == 0) {
		virtio_reset(vdev);
		return;
	}
	/* NEEDS_RESET belongs to the device; the driver cannot set or clear it. */
	status = (status & ~VIRTIO_CONFIG_S_NEEDS_RESET) |
		 (old & VIRTIO_CONFIG_S_NEEDS_RESET);
	/* Only reset takes bits away. */
	if (old & ~status)
		return;
	/* virtio_set_features() is the only way to an accepted feature set. */
	if ((status & VIRTIO_CONFIG_S_FEATURES_OK) &&
	    !(vdev->guest_features & F(VIRTIO_F_VERSION_1)))
		status &= ~VIRTIO_CONFIG_S_FEATURES_OK;
	if ((status & VIRTIO_CONFIG_S_DRIVER_OK) &&
	    !(status & VIRTIO_CONFIG_S_FEATURES_OK))
		status &= ~VIRTIO_CONFIG_S_DRIVER_OK;
	vdev->status = status;

	if ((status & ~old & VIRTIO_CONFIG_S_DRIVER_OK) && !vdev->broken &&
	    vdev->ops->start && vdev->ops->start(vdev) < 0)
		virtio_error(vdev, "device failed to start");
}

int virtio_queue_enable(struct virtio_device *vdev, unsigned q)
{
	if (q >= vdev->nr_queues ||
	    !(vdev->status & VIRTIO_CONFIG_S_FEATURES_OK))
		return -1;
	struct virtio_queue *vq = &vdev->queues[q];

	/* Ignored while a reset completes, like every other write. */
	if (vq->ready || vdev->resetting)
		return 0;
	if (virtqueue_enable(&vq->vq, vdev->guest_features) < 0)
		return -1;
	vq->ready = true;
	/*
	 * VIRTIO 1.2, 3.1.1 has the driver enable its queues before
	 * DRIVER_OK; one enabled later is served all the same, as a driver
	 * would expect, rather than left to wait forever.
	 */
	if ((vdev->status & VIRTIO_CONFIG_S_DRIVER_OK) && !vdev->broken &&
	    vdev->ops->start && vdev->ops->start(vdev) < 0)
		virtio_error(vdev, "device failed to start queue %u", q);
	return 0;
}

void virtio_queue_disable(struct virtio_device *vdev, unsigned q)
{
	if (q < vdev->nr_queues)
		virtio_queue_clear(&vdev->queues[q]);
}

void virtio_error(struct virtio_device *vdev, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (vdev->broken)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* A guest that breaks, resets and breaks again gets one line, not a flood. */
	error_report_once(&vdev->error_reported, "virtio device %u: %s; needs reset",
			  vdev->device_id, msg);
	vdev->broken = true;
	vdev->status |= VIRTIO_CONFIG_S_NEEDS_RESET;
	virtio_status_changed(vdev);
	if (vdev->transport)
		vdev->transport->notify_config(vdev);
}

bool virtio_notify(struct virtio_device *vdev, unsigned q)
{
	if (vdev->broken || q >= vdev->nr_queues || !vdev->queues[q].ready)
		return false;
	if (!virtqueue_should_notify(&vdev->queues[q].vq) || !vdev->transport)
		return false;
	vdev->transport->notify_queue(vdev, q);
	return true;
}
