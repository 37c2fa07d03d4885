/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_VIRTIO_VIRTIO_PCI_H
#define BRISK_HW_VIRTIO_VIRTIO_PCI_H

#include <stdint.h>

struct machine;
struct virtio_device;

/*
 * The modern (VIRTIO 1.x only) PCI transport.  A device fills a
 * virtio_device with virtio_device_init() and plugs it into m->pci here;
 * from then on the guest drives it through config space and one 64-bit
 * MMIO BAR, and the device's virtio_notify() calls become MSI-X messages.
 *
 * pci_device_id is normally VIRTIO_PCI_DEVICE_ID(vdev->device_id);
 * class_code is the 24-bit base/sub/prog-if code, e.g. 0x018000 for a
 * block device.  One MSI-X vector per queue plus one for config changes.
 * Returns NULL after one error_report() line when the bus is full or out
 * of MMIO window.
 */
#define VIRTIO_PCI_VENDOR_ID 0x1af4
#define VIRTIO_PCI_DEVICE_ID(virtio_id) (0x1040 + (virtio_id))

struct virtio_pci;

struct virtio_pci *virtio_pci_create(struct machine *m, struct virtio_device *vdev,
				     uint16_t pci_device_id, uint32_t class_code);
/* Unplugs and frees; vdev is left to its owner. */
void virtio_pci_free(struct virtio_pci *vp);

#endif
