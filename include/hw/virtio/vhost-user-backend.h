/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VHOST_USER_BACKEND_H
#define BRISK_HW_VIRTIO_VHOST_USER_BACKEND_H

/*
 * The vhost-user back-end transport: a virtio device served to another
 * process (QEMU, Cloud Hypervisor, a brisk guest...) that shares its guest
 * memory and ring eventfds over a Unix socket.  It replaces virtio-pci
 * under the same device code: the front-end's messages drive the virtio
 * core (features, queue setup) and the device's per-queue start_queue and
 * stop_queue operations; used buffers are signalled on the front-end's
 * call eventfds.
 *
 * The front-end is trusted no more than a guest: a message that breaks
 * the protocol ends its connection with one line on stderr, after the
 * device has finished (and answered) every request it had taken, and the
 * back-end waits for the next connection.  One front-end at a time.
 */
#include <stdbool.h>

struct guest_mem;
struct virtio_device;
struct vu_backend;

/*
 * Serves vdev on a Unix socket created at path (a stale socket there is
 * replaced; anything else is an error), from a control thread of its
 * own.  mem is what vdev->mem points to, empty: the front-end's regions
 * are mapped there.  vdev must implement the start_queue and stop_queue
 * operations.  NULL after one error_report() line.
 */
struct vu_backend *vu_backend_new(struct virtio_device *vdev, struct guest_mem *mem,
				  const char *path);
/*
 * Ends the connection, if any, as a disconnect does (requests in flight
 * complete first), stops listening and removes the socket.  The device
 * outlives it: free the back-end first.
 */
void vu_backend_free(struct vu_backend *vu);

#endif
