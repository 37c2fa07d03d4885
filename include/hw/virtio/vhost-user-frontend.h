/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VHOST_USER_FRONTEND_H
#define BRISK_HW_VIRTIO_VHOST_USER_FRONTEND_H

/*
 * The vhost-user front-end: a device of the guest whose rings another
 * process serves (the back-end, e.g. qemu-storage-daemon or brisk
 * -export).  The guest sees an ordinary virtio device on its transport;
 * brisk hands the back-end the guest's RAM (memfds), each ring's
 * addresses, its kick eventfd (which KVM signals on the guest's doorbell
 * write) and its call eventfd (the transport's interrupt, which KVM
 * delivers), so requests never pass through a brisk thread.
 *
 * The device that owns the virtio_device calls the functions below from
 * its virtio ops, with vdev->lock held.  A thread of the front-end's own
 * watches the connection; it takes vdev->lock too.
 *
 * The back-end is trusted no more than a guest: a reply that breaks the
 * protocol puts the device in NEEDS_RESET with one line on stderr.  A
 * back-end that goes away does the same, unless reconnect_s is set: then
 * the front-end connects again every reconnect_s seconds and, if the
 * driver runs the device, restarts its rings where the guest left them.
 */
#include <stdbool.h>
#include <stdint.h>

struct virtio_device;
struct vhu_frontend;

struct vhu_frontend_cfg {
	const char *name;	/* for messages, e.g. "vhost-user-blk c0" */
	const char *path;	/* the back-end's Unix socket; NULL with fd */
	int fd;			/* >= 0: a connected socket to use first (taken over) */
	unsigned reconnect_s;	/* 0: a lost back-end is an error of the device */
	uint32_t config_len;	/* device config bytes to read (GET_CONFIG) */
	int vm_stop_fd;		/* the machine's stop_fd (hw/machine.h); -1: none */
};

/*
 * Connects (to cfg->fd, else cfg->path) and asks the back-end what it
 * offers: NULL after one error_report() line if it cannot be reached or
 * answers wrong.
 */
struct vhu_frontend *vhu_frontend_new(const struct vhu_frontend_cfg *cfg);
/*
 * How long a reply may take (default 30 s; GET_VRING_BASE's none until
 * the VM stops), for tests that must see a back-end outlast it.
 */
void vhu_frontend_set_timeout(struct vhu_frontend *f, int ms);
/* The back-end's virtio feature bits, without the protocol-features bit. */
uint64_t vhu_frontend_features(const struct vhu_frontend *f);
/* The most queues the back-end serves. */
unsigned vhu_frontend_max_queues(const struct vhu_frontend *f);
/* The device config the back-end reported (config_len bytes). */
const uint8_t *vhu_frontend_config(const struct vhu_frontend *f);

/*
 * Binds the front-end to the device built from what it offers and starts
 * watching the connection.  Every region of vdev->mem must have an fd.
 * -1 after one error_report() line.
 */
int vhu_frontend_attach(struct vhu_frontend *f, struct virtio_device *vdev);

/*
 * The driver set DRIVER_OK: hand the enabled rings to the back-end.  -1
 * when the back-end failed (already reported, NEEDS_RESET set).
 */
int vhu_frontend_start(struct vhu_frontend *f);
/*
 * The driver reset the device: stop the back-end's rings, each once its
 * requests in flight are done, so the guest may reuse their memory.
 */
void vhu_frontend_stop(struct vhu_frontend *f);
/* The driver wrote len config bytes at off: pass them on (SET_CONFIG). */
void vhu_frontend_set_config(struct vhu_frontend *f, uint32_t off, const void *buf,
			     unsigned len);

/* Without vdev->lock: stops the rings and the watching thread, disconnects. */
void vhu_frontend_free(struct vhu_frontend *f);

#endif
