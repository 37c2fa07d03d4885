// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -drive, -device virtio-blk-pci and -export vhost-user-blk: a pure parser
 * from strings to blk_cmdline.  Nothing here touches files, so it can be fuzzed on its own.
 *
 * Syntax follows QEMU's option strings: KEY=VALUE pairs separated by ',',
 * and ",," inside a value stands for one literal ','.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/block/virtio-blk.h"
#include "hw/device.h"
#include "hw/machine.h"
#include "hw/object.h"
#include "hw/virtio/virtio-plug.h"
#include "util/log.h"
#include "virtio-blk-int.h"

int blk_parse_named(struct blk_cmdline *c, const char *form, const char *name,
		    const char *known, const char *arg, const struct opt_spec *spec,
		    void *cfg)
{
	const char *what = spec->what, *rest;
	size_t len;
	const char *head = opts_head(arg, form, &len, &rest);
	int r;

	/* spec->what is "-device NAME": the option alone, for the messages below. */
	len = strcspn(what, " ");
	if (c->finished) {
		error_report("%.*s after the command line was closed", (int)len, what);
		return -1;
	}
	if (strlen(name) != strcspn(head, ",") || strncmp(head, name, strlen(name))) {
		error_report("%.*s %s: brisk's %.*s knows only %s", (int)len, what, arg,
			     (int)len, what, known ? known : name);
		return -1;
	}
	r = opts_parse(spec, rest, cfg);
	/* hw/cli.c answers "help" before anything is parsed here. */
	if (r == OPTS_HELP)
		error_report("%s: help is not a property (brisk %s,help lists them)", what, what);
	return r ? -1 : 0;
}

struct blk_cmdline *blk_cmdline_new(void)
{
	return calloc(1, sizeof(struct blk_cmdline));
}

void *grow(void *arr, unsigned nr, size_t elem)
{
	void *n = realloc(arr, (nr + 1) * elem);

	if (!n) {
		error_report("out of memory");
		return NULL;
	}
	memset((char *)n + nr * elem, 0, elem);
	return n;
}

static const char *const if_names[] = { "none", "virtio", NULL };
static const int if_vals[] = { 0, 1 };
static const char *const raw_names[] = { "raw", NULL };
static const char *const aio_names[] = { "io_uring", "threads", NULL };
static const int aio_vals[] = { BLK_AIO_IO_URING, BLK_AIO_THREADS };
static const char *const cache_names[] = { "writeback", "none", NULL };
static const int cache_vals[] = { BLK_CACHE_WRITEBACK, BLK_CACHE_NONE };
static const char *const disk_names[] = { "disk", NULL };
static const char *const locking_names[] = { "on", "off", "auto", NULL };
static const int locking_vals[] = { 1, 0, 1 };

#define D(f, t) OPT_AT(struct blk_drive_cfg, f, t)
static const struct opt_prop drive_props[] = {
	{ "file", OPT_STR, D(file, char *), OPT_REQUIRED, .help = "the raw image" },
	{ "if", OPT_ENUM, D(if_virtio, int), .names = if_names, .vals = if_vals,
	  .def = "virtio", .why = "brisk has virtio disks only",
	  .help = "virtio: a disk of its own; none: for -device or -export drive=" },
	{ "id", OPT_ID, D(id, char *), .help = "the name -device/-export drive= uses" },
	{ "format", OPT_ENUM, D(format_given, int), .names = raw_names,
	  .vals = (const int[]){ 1 }, .def = "raw, unless its header is another format's",
	  .why = "brisk reads raw images only", .help = "the image format" },
	{ "file.locking", OPT_ENUM, D(locking, int), .names = locking_names,
	  .vals = locking_vals, .def = "auto",
	  .help = "QEMU's image locks (auto: on); off lets other processes share it" },
	{ "aio", OPT_ENUM, D(aio, int), .names = aio_names, .vals = aio_vals,
	  .def = "io_uring", .help = "how requests reach the file" },
	{ "cache", OPT_ENUM, D(cache, int), .names = cache_names, .vals = cache_vals,
	  .def = "writeback", .help = "none: O_DIRECT, past the host's page cache" },
	{ "readonly", OPT_BOOL, D(readonly, bool), .def = "off",
	  .help = "refuse the guest's writes" },
	{ "media", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE, .names = disk_names, .def = "disk",
	  .why = "brisk has disks only", .help = "the kind of drive" },
	{ "snapshot", OPT_BOOL, D(snapshot, bool), .def = "off",
	  .help = "write to a private copy, dropped at exit" },
	{ NULL },
};
#undef D
const struct opt_spec blk_drive_spec = { "-drive", NULL, drive_props };

static int drive_add_device(struct blk_cmdline *c, unsigned drive);

static struct blk_drive_cfg *find_drive(struct blk_cmdline *c, const char *id)
{
	for (unsigned i = 0; i < c->nr_drives; i++)
		if (c->drives[i].id && !strcmp(c->drives[i].id, id))
			return &c->drives[i];
	return NULL;
}

static void drive_cfg_clear(struct blk_drive_cfg *d)
{
	blk_file_close(d->f);
	free(d->id);
	free(d->file);
	memset(d, 0, sizeof(*d));
}

int blk_cmdline_drive(struct blk_cmdline *c, const char *arg)
{
	struct blk_drive_cfg d = {
		.aio = BLK_AIO_IO_URING, .cache = BLK_CACHE_WRITEBACK,
		.if_virtio = 1, .locking = 1,
	};
	int r;

	if (c->finished) {
		error_report("-drive after the command line was closed");
		return -1;
	}
	r = opts_parse(&blk_drive_spec, arg, &d);
	/* hw/cli.c answers "help" before anything is parsed here. */
	if (r == OPTS_HELP)
		error_report("-drive: help is not a property (brisk -drive help lists them)");
	if (r)
		goto fail;
	/* Without if=, the only kind of disk brisk has: virtio. */
	if (!d.if_virtio && !d.id) {
		error_report("-drive %s: if=none needs id= for -device drive=", d.file);
		goto fail;
	}
	if (d.id && find_drive(c, d.id)) {
		error_report("-drive: duplicate id '%s'", d.id);
		goto fail;
	}
	struct blk_drive_cfg *n = grow(c->drives, c->nr_drives, sizeof(*n));

	if (!n)
		goto fail;
	c->drives = n;
	c->drives[c->nr_drives++] = d;
	if (d.if_virtio)
		return drive_add_device(c, c->nr_drives - 1);
	return 0;
fail:
	drive_cfg_clear(&d);
	return -1;
}

static void device_defaults(struct blk_device_cfg *dc)
{
	*dc = (struct blk_device_cfg){
		.ring = VIRTIO_RING_DEFAULTS,
		.queue_size = VBLK_DEFAULT_QUEUE_SIZE,
		.poll_us = VBLK_DEFAULT_POLL_US, .iothreads = 1,
	};
}

static int push_device(struct blk_cmdline *c, struct blk_device_cfg *dc)
{
	struct blk_device_cfg *n = grow(c->devs, c->nr_devs, sizeof(*n));

	if (!n)
		return -1;
	c->devs = n;
	c->devs[c->nr_devs++] = *dc;
	return 0;
}

/* The device an if=virtio drive makes for itself, with default settings. */
static int drive_add_device(struct blk_cmdline *c, unsigned drive)
{
	struct blk_device_cfg dc;

	device_defaults(&dc);
	dc.drive = drive;
	c->drives[drive].used = true;
	if (push_device(c, &dc) < 0) {
		c->nr_drives--;
		drive_cfg_clear(&c->drives[c->nr_drives]);
		return -1;
	}
	return 0;
}

#define V(f, t) OPT_AT(struct blk_device_cfg, f, t)
static const struct opt_prop device_props[] = {
	{ "drive", OPT_STR, V(drive_id, char *), OPT_REQUIRED,
	  .help = "the -drive id= this disk serves" },
	VIRTIO_RING_PROPS(struct blk_device_cfg, ring),
	{ "num-queues", OPT_UINT, V(num_queues, unsigned), .min = 1,
	  .max = VBLK_MAX_QUEUES, .def = "the vCPU count", .help = "request queues" },
	{ "queue-size", OPT_UINT, V(queue_size, unsigned), OPT_POW2, .min = 2,
	  .max = VBLK_MAX_QUEUE_SIZE, .def = "256", .help = "ring entries per queue" },
	{ "serial", OPT_STRBUF, V(serial, char[VBLK_SERIAL_LEN + 1]),
	  OPT_PRINTABLE | OPT_EMPTY, .max = VBLK_SERIAL_LEN,
	  .help = "the disk's serial (GET_ID)" },
	{ "poll-us", OPT_UINT, V(poll_us, unsigned), .max = VBLK_MAX_POLL_US,
	  .def = "2000", .help = "how long an idle I/O thread polls its rings" },
	{ "iothreads", OPT_UINT, V(iothreads, unsigned), .min = 1,
	  .max = VBLK_MAX_QUEUES, .def = "1", .help = "I/O threads; queue i runs on i % N" },
	{ "irq-coalesce-us", OPT_UINT, V(irq_coalesce_us, unsigned),
	  .max = VBLK_MAX_COALESCE_US, .def = "0",
	  .help = "hold a batch's interrupt up to this long" },
	{ "irq-interval-us", OPT_UINT, V(irq_interval_us, unsigned),
	  .max = VBLK_MAX_COALESCE_US, .def = "0",
	  .help = "the least gap between two interrupts" },
	{ "logical_block_size", OPT_UINT, V(logical_block_size, unsigned), OPT_POW2,
	  .min = 512, .max = VBLK_MAX_BLOCK_SIZE, .def = "512, or the host's with cache=none",
	  .help = "the block size offered the guest" },
	{ "physical_block_size", OPT_UINT, V(physical_block_size, unsigned), OPT_POW2,
	  .min = 512, .max = VBLK_MAX_BLOCK_SIZE, .def = "the host's",
	  .help = "the physical block offered the guest" },
	{ "iothread", OPT_ID, V(iothread_id, char *),
	  .help = "an -object iothread (QEMU's); the disk runs on its own I/O threads" },
	{ NULL },
};
static const struct opt_spec device_spec = {
	"-device virtio-blk-pci", NULL, device_props,
};

static const struct opt_prop export_props[] = {
	{ "id", OPT_ID, V(export_id, char *), OPT_REQUIRED, .help = "the export's name" },
	{ "drive", OPT_STR, V(drive_id, char *), OPT_REQUIRED,
	  .help = "the -drive id= to serve" },
	{ "node-name", OPT_STR, V(drive_id, char *), .alias = "drive" },
	{ "addr.path", OPT_STR, V(socket_path, char *), OPT_REQUIRED,
	  .help = "the Unix socket to listen on" },
	{ "addr.type", OPT_ENUM, OPT_NOWHERE, OPT_NOSTORE, .names = (const char *const[]){ "unix", NULL },
	  .def = "unix", .why = "brisk serves Unix sockets only", .help = "the socket's kind" },
	{ "num-queues", OPT_UINT, V(num_queues, unsigned), .min = 1,
	  .max = VBLK_MAX_QUEUES, .def = "1", .help = "request queues offered" },
	{ "queue-size", OPT_UINT, V(queue_size, unsigned), OPT_POW2, .min = 2,
	  .max = VBLK_MAX_QUEUE_SIZE, .def = "256", .help = "ring entries per queue, at most" },
	{ "writable", OPT_BOOL, V(writable, bool), .def = "off",
	  .help = "take the front ends' writes" },
	{ "serial", OPT_STRBUF, V(serial, char[VBLK_SERIAL_LEN + 1]),
	  OPT_PRINTABLE | OPT_EMPTY, .max = VBLK_SERIAL_LEN,
	  .help = "the disk's serial (GET_ID)" },
	{ "poll-us", OPT_UINT, V(poll_us, unsigned), .max = VBLK_MAX_POLL_US,
	  .def = "2000", .help = "how long an idle I/O thread polls its rings" },
	{ "iothreads", OPT_UINT, V(iothreads, unsigned), .min = 1,
	  .max = VBLK_MAX_QUEUES, .def = "1", .help = "I/O threads; queue i runs on i % N" },
	{ NULL },
};
#undef V
const struct opt_spec blk_export_spec = {
	"-export vhost-user-blk", NULL, export_props,
};

static void device_cfg_clear(struct blk_device_cfg *dc)
{
	free(dc->drive_id);
	free(dc->export_id);
	free(dc->socket_path);
	free(dc->iothread_id);
}

int blk_cmdline_device(struct blk_cmdline *c, const char *arg)
{
	struct blk_device_cfg dc;
	const char *rest;
	size_t len;
	const char *head = opts_head(arg, "driver", &len, &rest);

	if (len == strlen("vhost-user-blk-pci") && !strncmp(head, "vhost-user-blk-pci", len))
		return vublk_cmdline_device(c, arg);
	device_defaults(&dc);
	if (blk_parse_named(c, "driver", "virtio-blk-pci",
			    "virtio-blk-pci and vhost-user-blk-pci", arg, &device_spec, &dc))
		goto fail;
	if (dc.physical_block_size && dc.physical_block_size < dc.logical_block_size) {
		error_report("-device virtio-blk-pci: physical_block_size=%u is smaller than "
			     "logical_block_size=%u", dc.physical_block_size,
			     dc.logical_block_size);
		goto fail;
	}
	if (push_device(c, &dc) < 0)
		goto fail;
	return 0;
fail:
	device_cfg_clear(&dc);
	return -1;
}

int blk_cmdline_export(struct blk_cmdline *c, const char *arg)
{
	struct blk_device_cfg dc;

	/* The front-end picks among what is offered: offer every ring kind. */
	device_defaults(&dc);
	dc.ring.packed = true;
	dc.num_queues = VBLK_EXPORT_QUEUES;
	if (blk_parse_named(c, "type", "vhost-user-blk", NULL, arg, &blk_export_spec, &dc))
		goto fail;
	if (dc.iothreads > dc.num_queues) {
		error_report("-export vhost-user-blk: iothreads=%u exceeds num-queues=%u",
			     dc.iothreads, dc.num_queues);
		goto fail;
	}
	for (unsigned i = 0; i < c->nr_devs; i++) {
		const struct blk_device_cfg *o = &c->devs[i];

		if (o->export_id && !strcmp(o->export_id, dc.export_id)) {
			error_report("-export: duplicate id '%s'", dc.export_id);
			goto fail;
		}
		if (o->socket_path && !strcmp(o->socket_path, dc.socket_path)) {
			error_report("-export %s: socket %s is already used by export %s",
				     dc.export_id, dc.socket_path, o->export_id);
			goto fail;
		}
	}
	if (push_device(c, &dc) < 0)
		goto fail;
	return 0;
fail:
	device_cfg_clear(&dc);
	return -1;
}

static bool iothread_found(const struct blk_cmdline *c, const char *id)
{
	char who[96];

	snprintf(who, sizeof(who), "-device virtio-blk-pci: iothread=%s", id);
	return object_find(c->objects, id, (const char *const[]){ "iothread", NULL }, who);
}

void blk_cmdline_set_objects(struct blk_cmdline *c, const struct object_set *objects)
{
	c->objects = objects;
}

void blk_cmdline_snapshot(struct blk_cmdline *c)
{
	c->snapshot = true;
}

int blk_cmdline_finish(struct blk_cmdline *c)
{
	if (c->finished)
		return 0;
	for (unsigned i = 0; i < c->nr_drives; i++)
		c->drives[i].snapshot |= c->snapshot;
	for (unsigned i = 0; i < c->nr_devs; i++) {
		struct blk_device_cfg *dc = &c->devs[i];
		const char *w = dc->socket_path ? "-export vhost-user-blk" :
				"-device virtio-blk-pci";
		struct blk_drive_cfg *d;

		if (dc->iothread_id && !iothread_found(c, dc->iothread_id))
			return -1;
		if (!dc->drive_id)
			continue;
		d = find_drive(c, dc->drive_id);
		if (!d) {
			error_report("%s: no -drive with id=%s", w, dc->drive_id);
			return -1;
		}
		if (d->used) {
			error_report("%s: drive %s is already in use (by an if=virtio "
				     "drive, a device or an export)", w, d->id);
			return -1;
		}
		if (dc->socket_path && dc->writable && d->readonly) {
			error_report("%s %s: cannot export read-only drive %s as writable "
				     "(writable=on needs a drive without readonly=on)", w,
				     dc->export_id, d->id);
			return -1;
		}
		/* An export the front ends cannot write opens and locks its image so. */
		if (dc->socket_path && !dc->writable)
			d->readonly = true;
		d->used = true;
		dc->drive = (unsigned)(d - c->drives);
	}
	if (vublk_cmdline_finish(c) < 0)
		return -1;
	for (unsigned i = 0; i < c->nr_drives; i++) {
		if (!c->drives[i].used) {
			error_report("-drive: drive %s is not used by any device "
				     "(add -device virtio-blk-pci,drive=%s or -export "
				     "vhost-user-blk,drive=%s,...)",
				     c->drives[i].id, c->drives[i].id, c->drives[i].id);
			return -1;
		}
	}
	c->finished = true;
	return 0;
}

void blk_cmdline_free(struct blk_cmdline *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->nr_drives; i++)
		drive_cfg_clear(&c->drives[i]);
	for (unsigned i = 0; i < c->nr_devs; i++)
		device_cfg_clear(&c->devs[i]);
	vublk_cmdline_free(c);
	free(c->drives);
	free(c->devs);
	free(c);
}

/*
 * What the command line named, made: the one place that decides which
 * transport carries each disk.
 */
int blk_devices_create(struct blk_cmdline *c, struct machine *m)
{
	if ((!c->finished && blk_cmdline_finish(c) < 0) ||
	    blk_drives_open_files(c, m ? m->ncpus : 1) < 0)
		return -1;
	for (unsigned i = 0; i < c->nr_devs; i++) {
		struct blk_device_cfg *dc = &c->devs[i];
		struct blk_drive_cfg *d = &c->drives[dc->drive];
		struct blk_file *f = d->f;
		struct virtio_plug *plug;

		/* The device owns the file from here, whatever happens. */
		d->f = NULL;
		/* An export serves whatever memory its front end brings. */
		if (dc->socket_path) {
			plug = vu_backend_plug(dc->socket_path);
			dc->dev = plug ? vblk_create(NULL, 1, f, d, dc, plug) : NULL;
		} else {
			plug = virtio_pci_plug(m, virtio_blk_pci_family.pci_class);
			dc->dev = plug ? vblk_create(&m->mem, m->ncpus, f, d, dc, plug) : NULL;
		}
		if (!plug)
			blk_file_close(f);
		if (!dc->dev)
			return -1;
	}
	for (unsigned i = 0; i < c->nr_vublks; i++) {
		struct vublk_cfg *vc = &c->vublks[i];
		struct virtio_plug *plug =
			virtio_pci_plug(m, vhost_user_blk_pci_family.pci_class);

		vc->dev = plug ? vublk_create(m, &c->chardevs[vc->chardev], vc, plug) : NULL;
		if (!vc->dev)
			return -1;
	}
	return 0;
}

void blk_devices_destroy(struct blk_cmdline *c)
{
	if (!c)
		return;
	/* A front-end lets go of its back-end before the back-end goes. */
	for (unsigned i = 0; i < c->nr_vublks; i++) {
		vublk_destroy(c->vublks[i].dev);
		c->vublks[i].dev = NULL;
	}
	for (unsigned i = 0; i < c->nr_devs; i++) {
		vblk_destroy(c->devs[i].dev);
		c->devs[i].dev = NULL;
	}
}

const struct device_family vhost_user_blk_export_family = {
	.name = "vhost-user-blk",
	.help = "a drive served to vhost-user front ends on a Unix socket; no guest",
	.spec = &blk_export_spec,
	.kind = DEVICE_BLOCK,
};

const struct device_family virtio_blk_pci_family = {
	.name = "virtio-blk-pci",
	.help = "a disk served by brisk: drive=ID names its -drive",
	.spec = &device_spec,
	.kind = DEVICE_BLOCK,
	.pci_class = 0x018000,	/* mass storage, other */
};
