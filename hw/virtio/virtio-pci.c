// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * virtio over PCI, modern interface only (VIRTIO 1.2, 4.1).  BAR 4 is a
 * 64-bit prefetchable memory BAR holding the common, ISR, device and
 * notify structures; BAR 1 holds the MSI-X table and PBA.  INTx is not
 * offered: the driver must use MSI-X (Linux's virtio_pci does).
 *
 * Every register access takes vdev->lock (the core's contract), except
 * the notify doorbells, which only signal an eventfd, and the ISR, which
 * is one atomic exchange.
 */
#include <assert.h>
#include <errno.h>
#include <linux/virtio_pci.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "hw/machine.h"
#include "hw/pci/msix.h"
#include "hw/pci/pci.h"
#include "hw/virtio/virtio-pci.h"
#include "hw/virtio/virtio-plug.h"
#include "util/log.h"
#include "virtio/virtio.h"

/* BAR 4 layout: one page per structure. */
#define VP_BAR 4
#define VP_MSIX_BAR 1
#define COMMON_OFF 0x0000
#define ISR_OFF 0x1000
#define DEVICE_OFF 0x2000
#define NOTIFY_OFF 0x3000
#define REGION_LEN 0x1000
#define NOTIFY_MULT 4

/* The ISR's queue bit; <linux/virtio_pci.h> names only the config bit. */
#define ISR_QUEUE 0x1

struct virtio_pci {
	struct pci_device pci;
	struct machine *m;
	struct virtio_device *vdev;
	/* Guarded by vdev->lock. */
	uint32_t dfselect, gfselect;
	uint64_t driver_features;	/* staged until FEATURES_OK */
	uint16_t msix_config;
	uint16_t queue_sel;
	uint64_t notify_base;		/* guest address of the doorbells, 0 unmapped */
	uint64_t *ioeventfd_addr;	/* per queue; 0 when not assigned */
	unsigned pci_cfg_cap;		/* the VIRTIO_PCI_CAP_PCI_CFG window */
	/* Atomic. */
	uint8_t isr;
};

static struct virtio_queue *vp_queue(struct virtio_pci *vp)
{
	struct virtio_device *vdev = vp->vdev;

	return vp->queue_sel < vdev->nr_queues ? &vdev->queues[vp->queue_sel] : NULL;
}

static uint16_t vp_vector(struct virtio_pci *vp, uint16_t v)
{
	return v < msix_nr_vectors(&vp->pci) ? v : VIRTIO_NO_VECTOR;
}

/*
 * Doorbells bypass brisk (ioeventfd) exactly while the driver runs the
 * device, the queue is live and BAR 4 decodes; otherwise kicks exit and
 * arrive at vp_notify_write().
 */
static void vp_sync_ioeventfds(struct virtio_pci *vp)
{
	struct virtio_device *vdev = vp->vdev;
	const struct irq_chip *irq = &vp->m->irq;
	bool running = (vdev->status & VIRTIO_CONFIG_S_DRIVER_OK) && !vdev->broken;

	for (unsigned q = 0; q < vdev->nr_queues; q++) {
		uint64_t want = 0;

		if (running && vp->notify_base && vdev->queues[q].ready)
			want = vp->notify_base + q * NOTIFY_MULT;
		if (vp->ioeventfd_addr[q] == want)
			continue;
		if (vp->ioeventfd_addr[q])
			irq->ops->ioeventfd(irq->opaque, false, vp->ioeventfd_addr[q], 2,
					    vdev->queues[q].kick_fd);
		vp->ioeventfd_addr[q] = 0;
		if (want && irq->ops->ioeventfd &&
		    irq->ops->ioeventfd(irq->opaque, true, want, 2,
					vdev->queues[q].kick_fd) == 0)
			vp->ioeventfd_addr[q] = want;
	}
}

static void vp_mapping_changed(struct pci_device *d)
{
	struct virtio_pci *vp = d->opaque;
	const struct pci_bar *b = &d->bar[VP_BAR];

	pthread_mutex_lock(&vp->vdev->lock);
	vp->notify_base = b->mapped ? b->mapped_addr + NOTIFY_OFF : 0;
	vp_sync_ioeventfds(vp);
	pthread_mutex_unlock(&vp->vdev->lock);
}

static void vp_reset(struct virtio_pci *vp)
{
	vp->dfselect = vp->gfselect = 0;
	vp->driver_features = 0;
	vp->msix_config = VIRTIO_NO_VECTOR;
	vp->queue_sel = 0;
	__atomic_store_n(&vp->isr, 0, __ATOMIC_SEQ_CST);
}

static void vp_write_status(struct virtio_pci *vp, uint8_t status)
{
	struct virtio_device *vdev = vp->vdev;

	if (status == 0) {
		/* Our registers are reset with the device: vp_status_changed(). */
		virtio_set_status(vdev, 0);
	} else {
		if ((status & ~vdev->status & VIRTIO_CONFIG_S_FEATURES_OK) &&
		    !virtio_set_features(vdev, vp->driver_features))
			status &= ~VIRTIO_CONFIG_S_FEATURES_OK;
		virtio_set_status(vdev, status);
	}
	vp_sync_ioeventfds(vp);
}

static void vp_write_queue_size(struct virtio_pci *vp, struct virtio_queue *q,
				uint16_t size)
{
	bool packed = vp->vdev->guest_features & (1ull << VIRTIO_F_RING_PACKED);

	/* The driver may only shrink; split rings need a power of two. */
	if (size == 0 || size > q->max_size || (!packed && (size & (size - 1))))
		return;
	q->vq.num = size;
}

static void vp_write_queue_enable(struct virtio_pci *vp, unsigned q, uint16_t val)
{
	struct virtio_device *vdev = vp->vdev;

	/* Only 1 may be written; disabling needs VIRTIO_F_RING_RESET. */
	if (val != 1 || vdev->queues[q].ready)
		return;
	if (virtio_queue_enable(vdev, q) < 0) {
		virtio_error(vdev, "queue %u set up wrong (size %u, desc %#llx, driver %#llx, device %#llx)",
			     q, vdev->queues[q].vq.num,
			     (unsigned long long)vdev->queues[q].vq.desc_addr,
			     (unsigned long long)vdev->queues[q].vq.driver_addr,
			     (unsigned long long)vdev->queues[q].vq.device_addr);
		return;
	}
	vp_sync_ioeventfds(vp);
}

/* Replace the 32-bit half selected by off (4-byte access) or all 64 bits. */
static void set_half(uint64_t *reg, uint64_t off, uint64_t val, unsigned size)
{
	if (size == 8)
		*reg = val;
	else if (off % 8 == 0)
		*reg = (*reg & ~0xffffffffull) | (uint32_t)val;
	else
		*reg = (*reg & 0xffffffffull) | (uint64_t)(uint32_t)val << 32;
}

static uint64_t get_half(uint64_t reg, uint64_t off, unsigned size)
{
	if (size == 8)
		return reg;
	return (uint32_t)(off % 8 ? reg >> 32 : reg);
}

/* Width each field must be accessed with; 64-bit fields also as two dwords. */
static unsigned common_width(uint64_t off)
{
	if (off <= VIRTIO_PCI_COMMON_GF)
		return off % 4 ? 0 : 4;
	if (off >= VIRTIO_PCI_COMMON_Q_DESCLO && off < VIRTIO_PCI_COMMON_Q_USEDLO + 8)
		return 8;
	switch (off) {
	case VIRTIO_PCI_COMMON_STATUS:
	case VIRTIO_PCI_COMMON_CFGGENERATION:
		return 1;
	case VIRTIO_PCI_COMMON_MSIX: case VIRTIO_PCI_COMMON_NUMQ: case VIRTIO_PCI_COMMON_Q_SELECT:
	case VIRTIO_PCI_COMMON_Q_SIZE: case VIRTIO_PCI_COMMON_Q_MSIX: case VIRTIO_PCI_COMMON_Q_ENABLE:
	case VIRTIO_PCI_COMMON_Q_NOFF:
		return 2;
	}
	return 0;
}

static bool common_access_ok(uint64_t off, unsigned size)
{
	unsigned w = common_width(off);

	if (w == 8)
		return (size == 8 && off % 8 == 0) || (size == 4 && off % 4 == 0);
	return w && size == w;
}

static uint64_t vp_common_read(struct virtio_pci *vp, uint64_t off, unsigned size)
{
	struct virtio_device *vdev = vp->vdev;
	struct virtio_queue *q = vp_queue(vp);

	if (!common_access_ok(off, size))
		return 0;
	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:
		return vp->dfselect;
	case VIRTIO_PCI_COMMON_DF:
		return vp->dfselect < 2 ? (uint32_t)(vdev->host_features >> (32 * vp->dfselect)) : 0;
	case VIRTIO_PCI_COMMON_GFSELECT:
		return vp->gfselect;
	case VIRTIO_PCI_COMMON_GF:
		return vp->gfselect < 2 ? (uint32_t)(vp->driver_features >> (32 * vp->gfselect)) : 0;
	case VIRTIO_PCI_COMMON_MSIX:
		return vp->msix_config;
	case VIRTIO_PCI_COMMON_NUMQ:
		return vdev->nr_queues;
	case VIRTIO_PCI_COMMON_STATUS:
		return virtio_get_status(vdev);
	case VIRTIO_PCI_COMMON_CFGGENERATION:
		return vdev->config_generation;
	case VIRTIO_PCI_COMMON_Q_SELECT:
		return vp->queue_sel;
	}
	if (!q)
		return off == VIRTIO_PCI_COMMON_Q_MSIX ? VIRTIO_NO_VECTOR : 0;
	switch (off) {
	case VIRTIO_PCI_COMMON_Q_SIZE:
		return q->vq.num;
	case VIRTIO_PCI_COMMON_Q_MSIX:
		return q->vector;
	case VIRTIO_PCI_COMMON_Q_ENABLE:
		return q->ready;
	case VIRTIO_PCI_COMMON_Q_NOFF:
		return vp->queue_sel;
	}
	if (off < VIRTIO_PCI_COMMON_Q_AVAILLO)
		return get_half(q->vq.desc_addr, off, size);
	if (off < VIRTIO_PCI_COMMON_Q_USEDLO)
		return get_half(q->vq.driver_addr, off, size);
	return get_half(q->vq.device_addr, off, size);
}

static void vp_common_write(struct virtio_pci *vp, uint64_t off, uint64_t val,
			    unsigned size)
{
	struct virtio_device *vdev = vp->vdev;
	struct virtio_queue *q = vp_queue(vp);

	if (!common_access_ok(off, size))
		return;
	switch (off) {
	case VIRTIO_PCI_COMMON_DFSELECT:
		vp->dfselect = val;
		return;
	case VIRTIO_PCI_COMMON_GFSELECT:
		vp->gfselect = val;
		return;
	case VIRTIO_PCI_COMMON_GF:
		if (vp->gfselect < 2 && !(vdev->status & VIRTIO_CONFIG_S_FEATURES_OK))
			set_half(&vp->driver_features, vp->gfselect * 4, val, 4);
		return;
	case VIRTIO_PCI_COMMON_MSIX:
		vp->msix_config = vp_vector(vp, val);
		return;
	case VIRTIO_PCI_COMMON_STATUS:
		vp_write_status(vp, val);
		return;
	case VIRTIO_PCI_COMMON_Q_SELECT:
		vp->queue_sel = val;
		return;
	}
	if (!q)
		return;
	if (off == VIRTIO_PCI_COMMON_Q_MSIX) {
		q->vector = vp_vector(vp, val);
		return;
	}
	if (off == VIRTIO_PCI_COMMON_Q_ENABLE) {
		vp_write_queue_enable(vp, vp->queue_sel, val);
		return;
	}
	/* A live queue's size and addresses belong to the device now. */
	if (q->ready)
		return;
	if (off == VIRTIO_PCI_COMMON_Q_SIZE)
		vp_write_queue_size(vp, q, val);
	else if (off >= VIRTIO_PCI_COMMON_Q_DESCLO && off < VIRTIO_PCI_COMMON_Q_AVAILLO)
		set_half(&q->vq.desc_addr, off, val, size);
	else if (off >= VIRTIO_PCI_COMMON_Q_AVAILLO && off < VIRTIO_PCI_COMMON_Q_USEDLO)
		set_half(&q->vq.driver_addr, off, val, size);
	else if (off >= VIRTIO_PCI_COMMON_Q_USEDLO)
		set_half(&q->vq.device_addr, off, val, size);
}

static uint64_t vp_device_read(struct virtio_pci *vp, uint64_t off, unsigned size)
{
	struct virtio_device *vdev = vp->vdev;
	uint8_t buf[8] = { 0 };
	uint64_t v = 0;

	if (off + size > vdev->config_len || !vdev->ops->read_config)
		return 0;
	vdev->ops->read_config(vdev, off, buf, size);
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)buf[i] << (8 * i);
	return v;
}

static void vp_device_write(struct virtio_pci *vp, uint64_t off, uint64_t val,
			    unsigned size)
{
	struct virtio_device *vdev = vp->vdev;
	uint8_t buf[8];

	if (off + size > vdev->config_len || !vdev->ops->write_config)
		return;
	for (unsigned i = 0; i < size; i++)
		buf[i] = val >> (8 * i);
	vdev->ops->write_config(vdev, off, buf, size);
}

static void vp_notify_write(struct virtio_pci *vp, uint64_t off)
{
	struct virtio_device *vdev = vp->vdev;
	uint64_t q = off / NOTIFY_MULT;

	/* nr_queues is fixed at creation: no lock needed to bound q. */
	if (off % NOTIFY_MULT || q >= vdev->nr_queues)
		return;
	while (eventfd_write(vdev->queues[q].kick_fd, 1) < 0 && errno == EINTR)
		;
}

static uint64_t vp_bar_read(void *opaque, uint64_t off, unsigned size)
{
	struct virtio_pci *vp = opaque;
	uint64_t v = 0;

	if (off >= ISR_OFF && off < ISR_OFF + REGION_LEN)
		return off == ISR_OFF ? __atomic_exchange_n(&vp->isr, 0, __ATOMIC_SEQ_CST) : 0;
	if (off >= NOTIFY_OFF)
		return 0;
	pthread_mutex_lock(&vp->vdev->lock);
	if (off < COMMON_OFF + REGION_LEN)
		v = vp_common_read(vp, off - COMMON_OFF, size);
	else if (off >= DEVICE_OFF && off < DEVICE_OFF + REGION_LEN)
		v = vp_device_read(vp, off - DEVICE_OFF, size);
	pthread_mutex_unlock(&vp->vdev->lock);
	return v;
}

static void vp_bar_write(void *opaque, uint64_t off, uint64_t val, unsigned size)
{
	struct virtio_pci *vp = opaque;

	if (off >= NOTIFY_OFF) {
		vp_notify_write(vp, off - NOTIFY_OFF);
		return;
	}
	pthread_mutex_lock(&vp->vdev->lock);
	/* Before status reads 0 the driver may write nothing (VIRTIO 1.2, 4.1.4.3.2). */
	if (!vp->vdev->resetting) {
		if (off < COMMON_OFF + REGION_LEN)
			vp_common_write(vp, off - COMMON_OFF, val, size);
		else if (off >= DEVICE_OFF && off < DEVICE_OFF + REGION_LEN)
			vp_device_write(vp, off - DEVICE_OFF, val, size);
	}
	pthread_mutex_unlock(&vp->vdev->lock);
}

static const struct bus_ops vp_bar_ops = {
	.read = vp_bar_read, .write = vp_bar_write,
};

/* Transport ops: called by the core and devices with vdev->lock held. */
static void vp_notify_queue(struct virtio_device *vdev, unsigned q)
{
	struct virtio_pci *vp = vdev->transport_opaque;

	__atomic_or_fetch(&vp->isr, ISR_QUEUE, __ATOMIC_SEQ_CST);
	if (vdev->queues[q].vector != VIRTIO_NO_VECTOR)
		msix_notify(&vp->pci, vdev->queues[q].vector);
}

static void vp_notify_config(struct virtio_device *vdev)
{
	struct virtio_pci *vp = vdev->transport_opaque;

	__atomic_or_fetch(&vp->isr, VIRTIO_PCI_ISR_CONFIG, __ATOMIC_SEQ_CST);
	if (vp->msix_config != VIRTIO_NO_VECTOR)
		msix_notify(&vp->pci, vp->msix_config);
}

/*
 * A reset that completed on an I/O thread, or an error the device found:
 * our registers follow a completed reset, and doorbells stop bypassing
 * brisk for a device that no longer runs.
 */
static void vp_status_changed(struct virtio_device *vdev)
{
	struct virtio_pci *vp = vdev->transport_opaque;

	if (!vdev->status)
		vp_reset(vp);
	vp_sync_ioeventfds(vp);
}

/* The queue's MSI-X vector, straight through KVM_IRQFD. */
static int vp_queue_irqfd(struct virtio_device *vdev, unsigned q)
{
	struct virtio_pci *vp = vdev->transport_opaque;
	uint16_t v = vdev->queues[q].vector;

	return v == VIRTIO_NO_VECTOR ? -1 : msix_vector_fd(&vp->pci, v);
}

static const struct virtio_transport_ops vp_transport_ops = {
	.notify_queue = vp_notify_queue,
	.notify_config = vp_notify_config,
	.status_changed = vp_status_changed,
	.queue_irqfd = vp_queue_irqfd,
};

/*
 * The PCI_CFG capability: a window into BAR 4 through config space, for
 * drivers that cannot map the BAR.  bar/offset/length are guest-written,
 * so each access is checked before it reaches the BAR handlers.
 */
static void vp_pci_cfg_access(struct pci_device *d, unsigned off, unsigned len,
			      bool write)
{
	struct virtio_pci *vp = d->opaque;
	unsigned cap = vp->pci_cfg_cap, data = cap + 16;
	uint8_t *c = d->cfg;

	if (off >= data + 4 || off + len <= data)
		return;
	uint32_t bar_off = pci_get_long(&c[cap + 8]);
	uint32_t n = pci_get_long(&c[cap + 12]);

	if (c[cap + 4] != VP_BAR || (n != 1 && n != 2 && n != 4) ||
	    bar_off % n || bar_off + (uint64_t)n > d->bar[VP_BAR].size) {
		if (!write)
			pci_set_long(&c[data], 0);
		return;
	}
	if (write) {
		vp_bar_write(vp, bar_off, pci_get_long(&c[data]) & (0xffffffffu >> (32 - 8 * n)), n);
	} else {
		pci_set_long(&c[data], vp_bar_read(vp, bar_off, n));
	}
}

static int vp_add_cap(struct pci_device *d, uint8_t type, uint32_t off,
		      uint32_t len, uint8_t extra)
{
	int cap = pci_device_add_cap(d, PCI_CAP_ID_VNDR, 16 + extra);

	if (cap < 0)
		return -1;
	d->cfg[cap + 2] = 16 + extra;	/* cap_len */
	d->cfg[cap + 3] = type;
	d->cfg[cap + 4] = VP_BAR;
	pci_set_long(&d->cfg[cap + 8], off);
	pci_set_long(&d->cfg[cap + 12], len);
	return cap;
}

static int vp_add_caps(struct virtio_pci *vp)
{
	struct pci_device *d = &vp->pci;
	int notify;

	if (vp_add_cap(d, VIRTIO_PCI_CAP_COMMON_CFG, COMMON_OFF, REGION_LEN, 0) < 0 ||
	    vp_add_cap(d, VIRTIO_PCI_CAP_ISR_CFG, ISR_OFF, 4, 0) < 0 ||
	    (vp->vdev->config_len &&
	     vp_add_cap(d, VIRTIO_PCI_CAP_DEVICE_CFG, DEVICE_OFF, vp->vdev->config_len, 0) < 0))
		return -1;
	notify = vp_add_cap(d, VIRTIO_PCI_CAP_NOTIFY_CFG, NOTIFY_OFF,
			    vp->vdev->nr_queues * NOTIFY_MULT, 4);
	if (notify < 0)
		return -1;
	pci_set_long(&d->cfg[notify + 16], NOTIFY_MULT);

	int cfg = vp_add_cap(d, VIRTIO_PCI_CAP_PCI_CFG, 0, 0, 4);

	if (cfg < 0)
		return -1;
	/* bar, offset, length and data are the driver's to write. */
	d->cfg[cfg + 4] = 0;
	d->wmask[cfg + 4] = 0xff;
	memset(&d->wmask[cfg + 8], 0xff, 12);
	vp->pci_cfg_cap = cfg;
	d->config_access = vp_pci_cfg_access;
	return 0;
}

struct virtio_pci *virtio_pci_create(struct machine *m, struct virtio_device *vdev,
				     uint16_t pci_device_id, uint32_t class_code)
{
	if (vdev->config_len > REGION_LEN ||
	    vdev->nr_queues > REGION_LEN / NOTIFY_MULT ||
	    vdev->nr_queues + 1 > 2048) {
		error_report("virtio-pci: device %u has too many queues or too much config",
			     vdev->device_id);
		return NULL;
	}
	struct virtio_pci *vp = calloc(1, sizeof(*vp));

	if (!vp)
		return NULL;
	vp->ioeventfd_addr = calloc(vdev->nr_queues, sizeof(*vp->ioeventfd_addr));
	if (!vp->ioeventfd_addr) {
		free(vp);
		return NULL;
	}
	vp->m = m;
	vp->vdev = vdev;
	vp_reset(vp);

	struct pci_device *d = &vp->pci;

	pci_device_init(d, VIRTIO_PCI_VENDOR_ID, pci_device_id, class_code, 1,
			VIRTIO_PCI_VENDOR_ID, pci_device_id);
	d->opaque = vp;
	d->mapping_changed = vp_mapping_changed;
	if (pci_device_add_bar(d, VP_BAR, NOTIFY_OFF + REGION_LEN,
			       PCI_BAR_MEM64 | PCI_BAR_PREFETCH, &vp_bar_ops, vp) < 0 ||
	    vp_add_caps(vp) < 0 ||
	    msix_init(d, VP_MSIX_BAR, vdev->nr_queues + 1, &m->irq) < 0) {
		error_report("virtio-pci: cannot set up device %u", vdev->device_id);
		goto fail;
	}
	vdev->transport = &vp_transport_ops;
	vdev->transport_opaque = vp;
	if (pci_register_device(m->pci, d) < 0)
		goto fail;
	return vp;
fail:
	vdev->transport = NULL;
	vdev->transport_opaque = NULL;
	msix_free(d);
	free(vp->ioeventfd_addr);
	free(vp);
	return NULL;
}

void virtio_pci_free(struct virtio_pci *vp)
{
	if (!vp)
		return;
	/* Unmapping drops the ioeventfds through vp_mapping_changed(). */
	pci_unregister_device(&vp->pci);
	pthread_mutex_lock(&vp->vdev->lock);
	vp->vdev->transport = NULL;
	vp->vdev->transport_opaque = NULL;
	pthread_mutex_unlock(&vp->vdev->lock);
	msix_free(&vp->pci);
	free(vp->ioeventfd_addr);
	free(vp);
}

struct vp_plug {
	struct virtio_plug p;
	struct machine *m;
	uint32_t class_code;
	struct virtio_pci *vp;
};

static int vp_plug(struct virtio_plug *p, struct virtio_device *vdev,
		   struct guest_mem *shared)
{
	struct vp_plug *pp = (struct vp_plug *)p;

	(void)shared;
	assert(!pp->vp);
	pp->vp = virtio_pci_create(pp->m, vdev, VIRTIO_PCI_DEVICE_ID(vdev->device_id),
				   pp->class_code);
	return pp->vp ? 0 : -1;
}

static void vp_unplug(struct virtio_plug *p)
{
	struct vp_plug *pp = (struct vp_plug *)p;

	virtio_pci_free(pp->vp);
	free(pp);
}

struct virtio_plug *virtio_pci_plug(struct machine *m, uint32_t class_code)
{
	struct vp_plug *pp = calloc(1, sizeof(*pp));

	if (!pp) {
		error_report("virtio-pci: out of memory");
		return NULL;
	}
	*pp = (struct vp_plug){ { vp_plug, vp_unplug }, m, class_code, NULL };
	return &pp->p;
}
