// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -drive, and the families of -device virtio-blk-pci and -export
 * vhost-user-blk: a pure parser from strings to blk_cmdline and the
 * device set.  Nothing here touches files, so it can be fuzzed on its own.
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

/* Where -drive if=virtio puts its disk: the caller's set, or one of c's own. */
static struct device_set *devices(struct blk_cmdline *c)
{
	if (!c->devices) {
		c->devices = device_set_new();
		c->own_devices = true;
		if (!c->devices)
			error_report("out of memory");
	}
	return c->devices;
}

void blk_cmdline_set_devices(struct blk_cmdline *c, struct device_set *s)
{
	c->devices = s;
}

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

static const struct blk_device_cfg vblk_pci_defaults = {
	.ring = VIRTIO_RING_DEFAULTS,
	.queue_size = VBLK_DEFAULT_QUEUE_SIZE,
	.poll_us = VBLK_DEFAULT_POLL_US, .iothreads = 1,
};

/* The disk an if=virtio drive makes for itself, with default settings. */
static int drive_add_device(struct blk_cmdline *c, unsigned drive)
{
	struct device_set *s = devices(c);
	struct blk_device_cfg *dc = s ? malloc(sizeof(*dc)) : NULL;

	if (!dc) {
		if (s)
			error_report("out of memory");
		return -1;
	}
	*dc = vblk_pci_defaults;
	dc->drive = drive;
	c->drives[drive].used = true;
	return device_set_add_cfg(s, &virtio_blk_pci_family, dc, c->objects);
}

#define V(f, t) OPT_AT(struct blk_device_cfg, f, t)
/* What a disk and an export serve alike: the serial, and the I/O threads that poll. */
#define VBLK_SERVE_PROPS								\
	{ "serial", OPT_STRBUF, V(serial, char[VBLK_SERIAL_LEN + 1]),			\
	  OPT_PRINTABLE | OPT_EMPTY, .max = VBLK_SERIAL_LEN,				\
	  .help = "the disk's serial (GET_ID)" },					\
	{ "poll-us", OPT_UINT, V(poll_us, unsigned), .max = VBLK_MAX_POLL_US,		\
	  .def = "16", .help = "how long an idle I/O thread polls its rings" },	\
	{ "iothreads", OPT_UINT, V(iothreads, unsigned), .min = 1,			\
	  .max = VBLK_MAX_QUEUES, .def = "1", .help = "I/O threads; queue i runs on i % N" }
static const struct opt_prop device_props[] = {
	{ "drive", OPT_STR, V(drive_id, char *), OPT_REQUIRED,
	  .help = "the -drive id= this disk serves" },
	VIRTIO_RING_PROPS(struct blk_device_cfg, ring),
	VIRTIO_NUM_QUEUES_PROP(struct blk_device_cfg, num_queues, VBLK_MAX_QUEUES,
			       "the vCPU count", "request queues"),
	VIRTIO_QUEUE_SIZE_PROP(struct blk_device_cfg, queue_size, VBLK_MAX_QUEUE_SIZE,
			       "ring entries per queue"),
	VBLK_SERVE_PROPS,
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
	VIRTIO_NUM_QUEUES_PROP(struct blk_device_cfg, num_queues, VBLK_MAX_QUEUES,
			       "1", "request queues offered"),
	VIRTIO_QUEUE_SIZE_PROP(struct blk_device_cfg, queue_size, VBLK_MAX_QUEUE_SIZE,
			       "ring entries per queue, at most"),
	{ "writable", OPT_BOOL, V(writable, bool), .def = "off",
	  .help = "take the front ends' writes" },
	VBLK_SERVE_PROPS,
	{ NULL },
};
#undef VBLK_SERVE_PROPS
#undef V
const struct opt_spec blk_export_spec = {
	"-export vhost-user-blk", NULL, export_props,
};

static int vblk_pci_check(void *cfg)
{
	const struct blk_device_cfg *dc = cfg;

	if (dc->physical_block_size && dc->physical_block_size < dc->logical_block_size) {
		error_report("-device virtio-blk-pci: physical_block_size=%u is smaller than "
			     "logical_block_size=%u", dc->physical_block_size,
			     dc->logical_block_size);
		return -1;
	}
	return 0;
}

/* The front-end picks among what is offered: offer every ring kind. */
static const struct blk_device_cfg export_defaults = {
	.ring = { .packed = true, .event_idx = true, .indirect_desc = true },
	.num_queues = VBLK_EXPORT_QUEUES,
	.queue_size = VBLK_DEFAULT_QUEUE_SIZE,
	.iothreads = 1, .poll_us = VBLK_DEFAULT_POLL_US,
};

static int export_check(void *cfg)
{
	const struct blk_device_cfg *dc = cfg;

	if (dc->iothreads > dc->num_queues) {
		error_report("-export vhost-user-blk: iothreads=%u exceeds num-queues=%u",
			     dc->iothreads, dc->num_queues);
		return -1;
	}
	return 0;
}

/* An export's id and socket are its own among the exports. */
static int export_unique(const struct blk_cmdline *c, const struct blk_device_cfg *dc)
{
	for (unsigned i = 0; i < c->nr_devs && c->devs[i] != dc; i++) {
		const struct blk_device_cfg *o = c->devs[i];

		if (o->export_id && !strcmp(o->export_id, dc->export_id)) {
			error_report("-export: duplicate id '%s'", dc->export_id);
			return -1;
		}
		if (o->socket_path && !strcmp(o->socket_path, dc->socket_path)) {
			error_report("-export %s: socket %s is already used by export %s",
				     dc->export_id, dc->socket_path, o->export_id);
			return -1;
		}
	}
	return 0;
}

/*
 * What -device or -export does with arg (NAME,...), for callers of
 * hw/block alone (its tests and fuzzers): NAME among hw/block's families,
 * the rest parsed and kept by the device set, as hw/main.c does.
 */
static int blk_cmdline_add(struct blk_cmdline *c, const char *opt, const char *form,
			   const char *arg, const struct device_family *const *families)
{
	struct device_set *s = devices(c);
	const char *rest;
	size_t len;
	const char *name = opts_head(arg, form, &len, &rest);

	if (c->finished) {
		error_report("%s after the command line was closed", opt);
		return -1;
	}
	for (; *families; families++)
		if (strlen((*families)->name) == len && !strncmp((*families)->name, name, len))
			return s ? device_set_add(s, *families, rest, c->objects) : -1;
	error_report("%s: unknown '%.*s'", opt, (int)len, name);
	return -1;
}

int blk_cmdline_device(struct blk_cmdline *c, const char *arg)
{
	return blk_cmdline_add(c, "-device", "driver", arg, (const struct device_family *[]){
		&virtio_blk_pci_family, &vhost_user_blk_pci_family, NULL });
}

int blk_cmdline_export(struct blk_cmdline *c, const char *arg)
{
	return blk_cmdline_add(c, "-export", "type", arg, (const struct device_family *[]){
		&vhost_user_blk_export_family, NULL });
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

/*
 * The disks of the device set, in its order, into devs and vublks: what
 * finish ties to their back ends.
 */
static int collect(struct blk_cmdline *c)
{
	const struct device_family *f;
	void *cfg;

	for (unsigned i = 0; c->devices && (cfg = device_set_get(c->devices, i, &f)); i++) {
		if (f == &vhost_user_blk_pci_family) {
			struct vublk_cfg **n = grow(c->vublks, c->nr_vublks, sizeof(*n));

			if (!n)
				return -1;
			c->vublks = n;
			c->vublks[c->nr_vublks++] = cfg;
		} else if (f == &virtio_blk_pci_family || f == &vhost_user_blk_export_family) {
			struct blk_device_cfg **n = grow(c->devs, c->nr_devs, sizeof(*n));

			if (!n)
				return -1;
			c->devs = n;
			c->devs[c->nr_devs++] = cfg;
		}
	}
	return 0;
}

int blk_cmdline_finish(struct blk_cmdline *c)
{
	if (c->finished)
		return 0;
	if (collect(c) < 0)
		return -1;
	for (unsigned i = 0; i < c->nr_drives; i++)
		c->drives[i].snapshot |= c->snapshot;
	for (unsigned i = 0; i < c->nr_devs; i++) {
		struct blk_device_cfg *dc = c->devs[i];
		const char *w = dc->socket_path ? "-export vhost-user-blk" :
				"-device virtio-blk-pci";
		struct blk_drive_cfg *d;

		if (dc->socket_path && export_unique(c, dc) < 0)
			return -1;
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
	/* The drives move no more: each disk can hold its own. */
	for (unsigned i = 0; i < c->nr_devs; i++)
		c->devs[i]->d = &c->drives[c->devs[i]->drive];
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
	if (c->own_devices)
		device_set_free(c->devices);
	for (unsigned i = 0; i < c->nr_drives; i++)
		drive_cfg_clear(&c->drives[i]);
	vublk_cmdline_free(c);
	free(c->drives);
	free(c->devs);
	free(c);
}

/* For callers of hw/block alone: its own device set made, as hw/main.c makes its. */
int blk_devices_create(struct blk_cmdline *c, struct machine *m)
{
	if ((!c->finished && blk_cmdline_finish(c) < 0) ||
	    blk_drives_open_files(c, m ? m->ncpus : 1) < 0)
		return -1;
	return c->own_devices ? device_set_create(c->devices, m) : 0;
}

void blk_devices_destroy(struct blk_cmdline *c)
{
	if (!c || !c->own_devices)
		return;
	device_set_free(c->devices);
	c->devices = NULL;
	c->own_devices = false;
	for (unsigned i = 0; i < c->nr_devs; i++)
		c->devs[i] = NULL;
	for (unsigned i = 0; i < c->nr_vublks; i++)
		c->vublks[i] = NULL;
}

/* The device owns the drive's file from here, whatever happens. */
static struct blk_file *take_file(const struct blk_device_cfg *dc)
{
	struct blk_file *f = dc->d->f;

	dc->d->f = NULL;
	return f;
}

/*
 * The live device is kept beside its config, where blk_device_set_clock()
 * and the other hooks for tests find it.
 */
static void *vblk_pci_create(struct machine *m, const void *cfg, struct virtio_plug *plug)
{
	struct blk_device_cfg *dc = (struct blk_device_cfg *)cfg;

	dc->dev = vblk_create(&m->mem, m->ncpus, take_file(dc), dc->d, dc, plug);
	return dc->dev;
}

/* An export serves whatever memory its front end brings. */
static void *export_create(struct machine *m, const void *cfg, struct virtio_plug *plug)
{
	struct blk_device_cfg *dc = (struct blk_device_cfg *)cfg;
	struct blk_file *f = take_file(dc);

	(void)m;
	(void)plug;
	plug = vu_backend_plug(dc->socket_path);
	if (!plug) {
		blk_file_close(f);
		return NULL;
	}
	dc->dev = vblk_create(NULL, 1, f, dc->d, dc, plug);
	return dc->dev;
}

static void vblk_family_destroy(void *dev)
{
	vblk_destroy(dev);
}

const struct device_family vhost_user_blk_export_family = {
	.name = "vhost-user-blk",
	.help = "a drive served to vhost-user front ends on a Unix socket; no guest",
	.spec = &blk_export_spec,
	.kind = DEVICE_PLUGGED,
	.cfg_size = sizeof(struct blk_device_cfg),
	.defaults = &export_defaults,
	.check = export_check,
	.order = -2,	/* with the disks, as they were one list */
	.create = export_create,
	.destroy = vblk_family_destroy,
};

const struct device_family virtio_blk_pci_family = {
	.name = "virtio-blk-pci",
	.help = "a disk served by brisk: drive=ID names its -drive",
	.spec = &device_spec,
	.kind = DEVICE_PLUGGED,
	.cfg_size = sizeof(struct blk_device_cfg),
	.defaults = &vblk_pci_defaults,
	.check = vblk_pci_check,
	.pci_class = 0x018000,	/* mass storage, other */
	.order = -2,
	.create = vblk_pci_create,
	.destroy = vblk_family_destroy,
};
