/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VIRTIO_PLUG_H
#define BRISK_HW_VIRTIO_VIRTIO_PLUG_H

#include <stdint.h>

struct guest_mem;
struct machine;
struct virtio_device;

/*
 * The transport a virtio device rides on, chosen by whoever makes the
 * device (hw/devices.c for -device, hw/block's glue for disks and
 * exports) and handed to it.  The device plugs itself in once its
 * virtio_device may be reached and unplugs first when it goes, so it
 * needs to know neither which transports exist nor which one it got.
 */
struct virtio_plug {
	/*
	 * shared: the device's own guest_mem, for a transport that brings
	 * the guest's memory along (a vhost-user front end's) to map it
	 * into; NULL for a device that has none, which such a transport
	 * refuses.  -1 after one error line.
	 */
	int (*plug)(struct virtio_plug *p, struct virtio_device *vdev,
		    struct guest_mem *shared);
	/* Undoes plug, if it ran, and frees p. */
	void (*unplug)(struct virtio_plug *p);
};

static inline int virtio_plug(struct virtio_plug *p, struct virtio_device *vdev,
			      struct guest_mem *shared)
{
	return p->plug(p, vdev, shared);
}

/* NULL is fine: a device unplugs on every path out. */
static inline void virtio_unplug(struct virtio_plug *p)
{
	if (p)
		p->unplug(p);
}

/*
 * virtio-pci on m's bus, with this 24-bit class code (e.g. 0x018000 for
 * a disk); the PCI device ID follows from the virtio device's.
 */
struct virtio_plug *virtio_pci_plug(struct machine *m, uint32_t class_code);
/* A vhost-user back end listening at path (hw/virtio/vhost-user-backend.c). */
struct virtio_plug *vu_backend_plug(const char *path);

#endif
