// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * vhost-user-blk-pci: a virtio-blk disk of the guest served by another
 * process (qemu-storage-daemon, brisk -export, SPDK...) over vhost-user.
 *
 *   -chardev socket,id=c0,path=/run/d0.sock[,reconnect=SECONDS]   (or fd=N;
 *                                                  hw/char/chardev-socket.c)
 *   -device vhost-user-blk-pci,chardev=c0[,num-queues=N][,queue-size=N][,packed=on]
 *
 * (its command line: hw/block/vhost-user-blk-cmdline.c)
 *
 * brisk is the transport only (virtio-pci): the guest's requests go from its
 * rings to the back-end and back without a brisk thread (see
 * hw/virtio/vhost-user-frontend.c).  What the disk is (size, features,
 * limits) is the back-end's config; brisk passes on the features it knows
 * how to carry and sets the queue count.
 */
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <linux/virtio_blk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/block/virtio-blk.h"
#include "hw/char/chardev-socket.h"
#include "hw/machine.h"
#include "hw/virtio/vhost-user-frontend.h"
#include "hw/virtio/virtio-plug.h"
#include "util/log.h"
#include "virtio/virtio.h"
#include "virtio-blk-int.h"

#define F(bit) (1ull << (bit))
#define VUBLK_ID_BLOCK 2
/* VIRTIO 1.1's struct virtio_blk_config, up to write_zeroes_may_unmap. */
#define VUBLK_CONFIG_LEN offsetof(struct virtio_blk_config, max_secure_erase_sectors)

/*
 * The features whose config fields lie within VUBLK_CONFIG_LEN and whose
 * requests need nothing of brisk; MQ and the ring features are added as
 * asked.
 */
#define VUBLK_FEATURES (F(VIRTIO_BLK_F_SIZE_MAX) | F(VIRTIO_BLK_F_SEG_MAX) |	\
			F(VIRTIO_BLK_F_GEOMETRY) | F(VIRTIO_BLK_F_RO) |		\
			F(VIRTIO_BLK_F_BLK_SIZE) | F(VIRTIO_BLK_F_FLUSH) |	\
			F(VIRTIO_BLK_F_TOPOLOGY) | F(VIRTIO_BLK_F_CONFIG_WCE) |	\
			F(VIRTIO_BLK_F_DISCARD) | F(VIRTIO_BLK_F_WRITE_ZEROES) |	\
			F(VIRTIO_F_VERSION_1))

struct vublk {
	struct virtio_device vdev;
	bool vdev_ready;
	struct vhu_frontend *f;
	struct virtio_plug *plug;
	uint16_t nq;
};

static void vublk_read_config(struct virtio_device *vdev, uint32_t off, void *buf,
			      unsigned len)
{
	struct vublk *s = vdev->opaque;
	uint8_t config[VUBLK_CONFIG_LEN];
	uint16_t nq = htole16(s->nq);

	memcpy(config, vhu_frontend_config(s->f), sizeof(config));
	/* The queues are the guest's side: brisk says how many it has. */
	memcpy(config + offsetof(struct virtio_blk_config, num_queues), &nq, sizeof(nq));
	memcpy(buf, config + off, len);
}

/* The cache mode is the only field a driver writes (VIRTIO 1.2, 5.2.5). */
static void vublk_write_config(struct virtio_device *vdev, uint32_t off,
			       const void *buf, unsigned len)
{
	struct vublk *s = vdev->opaque;

	if (off != offsetof(struct virtio_blk_config, wce) || len != 1 ||
	    !(vdev->guest_features & F(VIRTIO_BLK_F_CONFIG_WCE)))
		return;
	vhu_frontend_set_config(s->f, off, buf, len);
}

static int vublk_start(struct virtio_device *vdev)
{
	struct vublk *s = vdev->opaque;

	return vhu_frontend_start(s->f);
}

static void vublk_reset(struct virtio_device *vdev)
{
	struct vublk *s = vdev->opaque;

	vhu_frontend_stop(s->f);
}

static const struct virtio_device_ops vublk_ops = {
	.read_config = vublk_read_config,
	.write_config = vublk_write_config,
	.start = vublk_start,
	.reset = vublk_reset,
};

/* What the guest is offered: the back-end's, as far as brisk carries them. */
static uint64_t vublk_features(const struct vublk *s, const struct vublk_cfg *cfg)
{
	uint64_t want = VUBLK_FEATURES | virtio_ring_features(&cfg->ring);

	if (s->nq > 1)
		want |= F(VIRTIO_BLK_F_MQ);
	return vhu_frontend_features(s->f) & want;
}

static int vublk_queues(struct vublk *s, struct machine *m, const struct vublk_cfg *cfg,
			const char *name)
{
	unsigned max = vhu_frontend_max_queues(s->f);
	unsigned nq = cfg->num_queues ? cfg->num_queues : m->ncpus;

	if (cfg->num_queues && nq > max) {
		error_report("%s: num-queues=%u, but the back-end serves at most %u",
			     name, nq, max);
		return -1;
	}
	if (nq > max)
		nq = max;
	if (nq > VBLK_MAX_QUEUES)
		nq = VBLK_MAX_QUEUES;
	s->nq = (uint16_t)(nq ? nq : 1);
	if (s->nq > 1 && !(vhu_frontend_features(s->f) & F(VIRTIO_BLK_F_MQ))) {
		if (cfg->num_queues) {
			error_report("%s: num-queues=%u, but the back-end has no "
				     "multi-queue support", name, nq);
			return -1;
		}
		s->nq = 1;
	}
	return 0;
}

struct vublk *vublk_create(struct machine *m, const struct blk_chardev_cfg *chardev,
			   const struct vublk_cfg *cfg, struct virtio_plug *plug)
{
	struct vublk *s = calloc(1, sizeof(*s));
	char name[64];
	uint64_t features;

	assert(plug);
	if (!s) {
		virtio_unplug(plug);
		return NULL;
	}
	s->plug = plug;
	snprintf(name, sizeof(name), "vhost-user-blk %s", chardev->sock.id);
	s->f = vhu_frontend_new(&(struct vhu_frontend_cfg){
		.name = name, .path = chardev->sock.path, .fd = chardev->sock.fd,
		.reconnect_s = chardev->sock.reconnect_s, .config_len = VUBLK_CONFIG_LEN,
		.vm_stop_fd = m->stop_fd,
	});
	if (!s->f || vublk_queues(s, m, cfg, name) < 0)
		goto fail;
	features = vublk_features(s, cfg);
	if (!(features & F(VIRTIO_F_VERSION_1))) {
		error_report("%s: the back-end at %s does not offer VIRTIO 1.0", name,
			     chardev->sock.path);
		goto fail;
	}
	if (virtio_device_init(&s->vdev, VUBLK_ID_BLOCK, features, VUBLK_CONFIG_LEN,
			       s->nq, (uint16_t)cfg->queue_size, &m->mem, &vublk_ops, s) < 0) {
		error_report("%s: cannot create the device", name);
		goto fail;
	}
	s->vdev_ready = true;
	if (virtio_plug(s->plug, &s->vdev, NULL) < 0 ||
	    vhu_frontend_attach(s->f, &s->vdev) < 0)
		goto fail;
	return s;
fail:
	vublk_destroy(s);
	return NULL;
}

void vublk_destroy(struct vublk *s)
{
	if (!s)
		return;
	/* The guest can no longer reach it; then the back-end lets go. */
	virtio_unplug(s->plug);
	vhu_frontend_free(s->f);
	if (s->vdev_ready)
		virtio_device_destroy(&s->vdev);
	free(s);
}

void vublk_set_reply_timeout(struct blk_cmdline *c, unsigned i, int ms)
{
	assert(i < c->nr_vublks && c->vublks[i] && c->vublks[i]->dev);
	vhu_frontend_set_timeout(c->vublks[i]->dev->f, ms);
}
