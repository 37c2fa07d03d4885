// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The command-line face of vhost-user-blk-pci: -chardev socket, the
 * back ends its disks name, and the device table's family of -device
 * vhost-user-blk-pci.  Like the rest of hw/block's command line, it only
 * fills structs from strings (the sockets are checked by
 * vublk_chardevs_check(), the devices made by the family's create).
 */
#include <stdlib.h>
#include <string.h>

#include "hw/block/virtio-blk.h"
#include "hw/char/chardev-socket.h"
#include "hw/device.h"
#include "util/log.h"
#include "virtio-blk-int.h"

#define U(f, t) OPT_AT(struct vublk_cfg, f, t)
static const struct opt_prop vublk_props[] = {
	{ "chardev", OPT_STR, U(chardev_id, char *), OPT_REQUIRED,
	  .help = "the -chardev id= of the back-end's socket" },
	VIRTIO_NUM_QUEUES_PROP(struct vublk_cfg, num_queues, VBLK_MAX_QUEUES,
			       "the vCPU count, at most the back-end's", "request queues"),
	VIRTIO_QUEUE_SIZE_PROP(struct vublk_cfg, queue_size, VBLK_MAX_QUEUE_SIZE,
			       "ring entries per queue"),
	VIRTIO_RING_PROPS(struct vublk_cfg, ring),
	{ NULL },
};
#undef U
static const struct opt_spec vublk_spec = {
	"-device vhost-user-blk-pci", NULL, vublk_props,
};

int blk_cmdline_chardev(struct blk_cmdline *c, const char *arg)
{
	struct blk_chardev_cfg cd = { 0 };

	if (c->finished) {
		error_report("-chardev after the command line was closed");
		return -1;
	}
	if (chardev_socket_parse(arg, &cd.sock))
		return -1;
	for (unsigned i = 0; i < c->nr_chardevs; i++) {
		if (!strcmp(c->chardevs[i].sock.id, cd.sock.id)) {
			error_report("-chardev: duplicate id '%s'", cd.sock.id);
			goto fail;
		}
	}
	struct blk_chardev_cfg *n = grow(c->chardevs, c->nr_chardevs, sizeof(*n));

	if (!n)
		goto fail;
	c->chardevs = n;
	c->chardevs[c->nr_chardevs++] = cd;
	return 0;
fail:
	chardev_socket_free(&cd.sock);
	return -1;
}

int vublk_cmdline_finish(struct blk_cmdline *c)
{
	for (unsigned i = 0; i < c->nr_vublks; i++) {
		struct vublk_cfg *vc = c->vublks[i];
		unsigned j;

		for (j = 0; j < c->nr_chardevs; j++)
			if (!strcmp(c->chardevs[j].sock.id, vc->chardev_id))
				break;
		if (j == c->nr_chardevs) {
			error_report("-device vhost-user-blk-pci: no -chardev with id=%s",
				     vc->chardev_id);
			return -1;
		}
		if (c->chardevs[j].used) {
			error_report("-device vhost-user-blk-pci: chardev %s is already "
				     "used by another device", vc->chardev_id);
			return -1;
		}
		c->chardevs[j].used = true;
		vc->cd = &c->chardevs[j];
	}
	for (unsigned j = 0; j < c->nr_chardevs; j++) {
		if (!c->chardevs[j].used) {
			error_report("-chardev: %s is not used by any device (add -device "
				     "vhost-user-blk-pci,chardev=%s)", c->chardevs[j].sock.id,
				     c->chardevs[j].sock.id);
			return -1;
		}
	}
	return 0;
}

void vublk_cmdline_free(struct blk_cmdline *c)
{
	for (unsigned i = 0; i < c->nr_chardevs; i++)
		chardev_socket_free(&c->chardevs[i].sock);
	free(c->chardevs);
	free(c->vublks);
}

int vublk_chardevs_check(const struct blk_cmdline *c)
{
	for (unsigned i = 0; i < c->nr_chardevs; i++)
		if (chardev_socket_check(&c->chardevs[i].sock))
			return -1;
	return 0;
}

bool blk_cmdline_shares_ram(const struct blk_cmdline *c)
{
	return c->nr_vublks > 0;
}

static const struct vublk_cfg vublk_defaults = {
	.queue_size = VBLK_DEFAULT_QUEUE_SIZE, .ring = VIRTIO_RING_DEFAULTS,
};

static void *vublk_family_create(struct machine *m, const void *cfg, struct virtio_plug *plug)
{
	struct vublk_cfg *vc = (struct vublk_cfg *)cfg;

	/* Kept beside its config, where vublk_set_reply_timeout() finds it. */
	vc->dev = vublk_create(m, vc->cd, vc, plug);
	return vc->dev;
}

static void vublk_family_destroy(void *dev)
{
	vublk_destroy(dev);
}

const struct device_family vhost_user_blk_pci_family = {
	.name = "vhost-user-blk-pci",
	.help = "a disk served by another process: chardev=ID names its -chardev socket",
	.spec = &vublk_spec,
	.kind = DEVICE_PLUGGED,
	.cfg_size = sizeof(struct vublk_cfg),
	.defaults = &vublk_defaults,
	.pci_class = 0x018000,	/* mass storage, other */
	/* Made after virtio-blk-pci's, undone before: a front end lets go of its back end first. */
	.order = -1,
	.create = vublk_family_create,
	.destroy = vublk_family_destroy,
};
