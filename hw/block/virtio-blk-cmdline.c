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
#include "util/log.h"
#include "virtio-blk-int.h"

struct opt_parser {
	char *buf;		/* private copy, unescaped in place */
	char *p;
	const char *what;	/* "-drive", "-device"... for messages */
};

/*
 * Next KEY[=VALUE] token.  *val is NULL when there is no '='.
 * Returns 1 with a token, 0 at the end, -1 on an empty token.
 */
static int opt_next(struct opt_parser *op, char **key, char **val)
{
	char *p = op->p, *out;

	if (!*p)
		return 0;
	*key = p;
	*val = NULL;
	while (*p && *p != '=' && *p != ',')
		p++;
	if (p == *key) {
		error_report("%s: empty option name", op->what);
		return -1;
	}
	if (*p == ',') {
		*p++ = '\0';
		if (!*p) {
			error_report("%s: trailing ','", op->what);
			return -1;
		}
		op->p = p;
		return 1;
	}
	if (*p == '\0') {
		op->p = p;
		return 1;
	}
	*p++ = '\0';
	*val = out = p;
	for (;;) {
		if (*p == ',' && p[1] == ',') {
			*out++ = ',';
			p += 2;
		} else if (*p == ',' || *p == '\0') {
			bool more = *p == ',';

			*out = '\0';
			p += more;
			if (more && !*p) {
				error_report("%s: trailing ','", op->what);
				return -1;
			}
			break;
		} else {
			*out++ = *p++;
		}
	}
	op->p = p;
	return 1;
}

int parse_bool(const char *what, const char *key, const char *val, bool *out)
{
	if (!strcmp(val, "on") || !strcmp(val, "true") || !strcmp(val, "yes")) {
		*out = true;
		return 0;
	}
	if (!strcmp(val, "off") || !strcmp(val, "false") || !strcmp(val, "no")) {
		*out = false;
		return 0;
	}
	error_report("%s: %s=%s: expected on or off", what, key, val);
	return -1;
}

/* Plain decimal only: no sign, no spaces, no suffix. */
static int parse_uint(const char *what, const char *key, const char *val,
		      unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (!*val)
		goto bad;
	for (const char *p = val; *p; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		if (v > (max - (unsigned)(*p - '0')) / 10) {
			error_report("%s: %s=%s: too large (at most %lu)", what, key, val, max);
			return -1;
		}
		v = v * 10 + (unsigned)(*p - '0');
	}
	*out = v;
	return 0;
bad:
	error_report("%s: %s=%s: expected a decimal number", what, key, val);
	return -1;
}

int parse_unsigned(const char *what, const char *key, const char *val,
		   unsigned long max, unsigned *out)
{
	unsigned long v;

	if (parse_uint(what, key, val, max, &v))
		return -1;
	*out = (unsigned)v;
	return 0;
}

int parse_queue_count(const char *what, const char *key, const char *val,
		      unsigned *out)
{
	if (parse_unsigned(what, key, val, VBLK_MAX_QUEUES, out))
		return -1;
	if (*out == 0) {
		error_report("%s: %s=0: need 1 to %d", what, key, VBLK_MAX_QUEUES);
		return -1;
	}
	return 0;
}

/* A block size, as QEMU takes it: a power of two from 512 to 2 MiB. */
static int parse_block_size(const char *what, const char *key, const char *val,
			    unsigned *out)
{
	if (parse_unsigned(what, key, val, VBLK_MAX_BLOCK_SIZE, out))
		return -1;
	if (*out < 512 || (*out & (*out - 1))) {
		error_report("%s: %s=%s: need a power of two from 512 to %u", what, key, val,
			     VBLK_MAX_BLOCK_SIZE);
		return -1;
	}
	return 0;
}

/* QEMU's identifier rule: a letter, then letters, digits, '-', '.', '_'. */
static bool id_valid(const char *id)
{
	if (!((*id >= 'a' && *id <= 'z') || (*id >= 'A' && *id <= 'Z')))
		return false;
	for (const char *p = id + 1; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			  (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_';
		if (!ok)
			return false;
	}
	return true;
}

int parse_id(const char *what, const char *key, const char *val, char **out)
{
	if (!id_valid(val)) {
		error_report("%s: %s=%s: an id starts with a letter and holds "
			     "letters, digits, '-', '.', '_'", what, key, val);
		return -1;
	}
	*out = strdup(val);
	return *out ? 0 : -1;
}

int parse_string(const char *what, const char *key, const char *val, char **out)
{
	if (!*val) {
		error_report("%s: %s= is empty", what, key);
		return -1;
	}
	*out = strdup(val);
	return *out ? 0 : -1;
}

int key_index(const char *what, const char *const *keys, unsigned n,
	      const char *key, const char *val)
{
	char known[256] = "";
	size_t len = 0;

	for (unsigned k = 0; k < n; k++) {
		if (strcmp(key, keys[k]))
			continue;
		if (val)
			return (int)k;
		error_report("%s: %s needs a value (%s=...)", what, key, key);
		return -1;
	}
	for (unsigned k = 0; k < n && len < sizeof(known); k++)
		len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%s",
					k ? ", " : "", keys[k]);
	error_report("%s: unknown option '%s' (known: %s)", what, key, known);
	return -1;
}

int once(const char *what, const char *key, unsigned *seen, unsigned bit)
{
	if (*seen & (1u << bit)) {
		error_report("%s: %s= given twice", what, key);
		return -1;
	}
	*seen |= 1u << bit;
	return 0;
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

static int drive_key(struct blk_drive_cfg *d, const char *key, const char *val,
		     unsigned *seen)
{
	static const char *const keys[] = {
		"file", "if", "id", "format", "aio", "cache", "readonly",
		"media", "snapshot",
	};
	const char *w = "-drive";
	int k = key_index(w, keys, ARRAY_SIZE(keys), key, val);

	if (k < 0 || once(w, key, seen, (unsigned)k))
		return -1;
	switch (k) {
	case 0:
		return parse_string(w, key, val, &d->file);
	case 1:
		if (!strcmp(val, "none"))
			d->if_virtio = false;
		else if (!strcmp(val, "virtio"))
			d->if_virtio = true;
		else {
			error_report("-drive: if=%s: brisk supports if=none and if=virtio", val);
			return -1;
		}
		return 0;
	case 2:
		return parse_id(w, key, val, &d->id);
	case 3:
		if (strcmp(val, "raw")) {
			error_report("-drive: format=%s: brisk supports format=raw only", val);
			return -1;
		}
		return 0;
	case 4:
		if (!strcmp(val, "io_uring"))
			d->aio = BLK_AIO_IO_URING;
		else if (!strcmp(val, "threads"))
			d->aio = BLK_AIO_THREADS;
		else {
			error_report("-drive: aio=%s: expected io_uring or threads", val);
			return -1;
		}
		return 0;
	case 5:
		if (!strcmp(val, "writeback"))
			d->cache = BLK_CACHE_WRITEBACK;
		else if (!strcmp(val, "none"))
			d->cache = BLK_CACHE_NONE;
		else {
			error_report("-drive: cache=%s: expected none or writeback", val);
			return -1;
		}
		return 0;
	case 6:
		return parse_bool(w, key, val, &d->readonly);
	case 7:
		if (strcmp(val, "disk")) {
			error_report("-drive: media=%s: brisk has disks only (media=disk)", val);
			return -1;
		}
		return 0;
	default:
		return parse_bool(w, key, val, &d->snapshot);
	}
}

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
	free(d->id);
	free(d->file);
	memset(d, 0, sizeof(*d));
}

int blk_cmdline_drive(struct blk_cmdline *c, const char *arg)
{
	struct opt_parser op = { .what = "-drive" };
	struct blk_drive_cfg d = {
		.aio = BLK_AIO_IO_URING, .cache = BLK_CACHE_WRITEBACK,
		.if_virtio = true,
	};
	unsigned seen = 0;
	char *key, *val;
	int r;

	if (c->finished) {
		error_report("-drive after the command line was closed");
		return -1;
	}
	op.buf = op.p = strdup(arg);
	if (!op.buf)
		return -1;
	while ((r = opt_next(&op, &key, &val)) > 0)
		if (drive_key(&d, key, val, &seen) < 0)
			goto fail;
	if (r < 0)
		goto fail;
	if (!d.file) {
		error_report("-drive: file= is missing");
		goto fail;
	}
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
	free(op.buf);
	if (d.if_virtio)
		return drive_add_device(c, c->nr_drives - 1);
	return 0;
fail:
	drive_cfg_clear(&d);
	free(op.buf);
	return -1;
}

static void device_defaults(struct blk_device_cfg *dc)
{
	*dc = (struct blk_device_cfg){
		.event_idx = true, .indirect_desc = true,
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

/* A ring size: a power of two from 2 to VBLK_MAX_QUEUE_SIZE. */
int parse_queue_size(const char *what, const char *key, const char *val,
		     unsigned *out)
{
	unsigned long v;

	if (parse_uint(what, key, val, VBLK_MAX_QUEUE_SIZE, &v))
		return -1;
	if (v < 2 || (v & (v - 1))) {
		error_report("%s: %s=%s: need a power of two from 2 to %d",
			     what, key, val, VBLK_MAX_QUEUE_SIZE);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* GET_ID's answer: printable ASCII, at most VBLK_SERIAL_LEN bytes. */
static int parse_serial(const char *what, const char *val, struct blk_device_cfg *dc)
{
	if (strlen(val) > VBLK_SERIAL_LEN) {
		error_report("%s: serial=%s: longer than %d bytes", what, val,
			     VBLK_SERIAL_LEN);
		return -1;
	}
	for (const char *p = val; *p; p++) {
		if (*p < 0x20 || *p > 0x7e) {
			error_report("%s: serial= holds a non-printable byte", what);
			return -1;
		}
	}
	strcpy(dc->serial, val);
	return 0;
}

static int device_key(void *cfg, const char *key, const char *val, unsigned *seen)
{
	struct blk_device_cfg *dc = cfg;
	static const char *const keys[] = {
		"drive", "packed", "num-queues", "queue-size", "serial",
		"event_idx", "indirect_desc", "poll-us", "iothreads", "irq-coalesce-us",
		"irq-interval-us", "logical_block_size", "physical_block_size",
	};
	const char *w = "-device virtio-blk-pci";
	int k = key_index(w, keys, ARRAY_SIZE(keys), key, val);

	if (k < 0 || once(w, key, seen, (unsigned)k))
		return -1;
	switch (k) {
	case 0:
		return parse_string(w, key, val, &dc->drive_id);
	case 1:
		return parse_bool(w, key, val, &dc->packed);
	case 2:
		return parse_queue_count(w, key, val, &dc->num_queues);
	case 3:
		return parse_queue_size(w, key, val, &dc->queue_size);
	case 4:
		return parse_serial(w, val, dc);
	case 5:
		return parse_bool(w, key, val, &dc->event_idx);
	case 6:
		return parse_bool(w, key, val, &dc->indirect_desc);
	case 7:
		return parse_unsigned(w, key, val, VBLK_MAX_POLL_US, &dc->poll_us);
	case 8:
		return parse_queue_count(w, key, val, &dc->iothreads);
	case 9:
		return parse_unsigned(w, key, val, VBLK_MAX_COALESCE_US, &dc->irq_coalesce_us);
	case 10:
		return parse_unsigned(w, key, val, VBLK_MAX_COALESCE_US, &dc->irq_interval_us);
	case 11:
		return parse_block_size(w, key, val, &dc->logical_block_size);
	default:
		return parse_block_size(w, key, val, &dc->physical_block_size);
	}
}

int parse_named(struct blk_cmdline *c, const char *what, const char *form,
		const char *name, const char *known, const char *arg, blk_key_fn fn,
		void *cfg)
{
	struct opt_parser op = { .what = what };
	unsigned seen = 0;
	char *key, *val;
	int r;

	if (c->finished) {
		error_report("%s after the command line was closed", what);
		return -1;
	}
	op.buf = op.p = strdup(arg);
	if (!op.buf)
		return -1;
	r = opt_next(&op, &key, &val);
	if (r == 0 || (r > 0 && (strcmp(val ? val : key, name) ||
				 (val && strcmp(key, form))))) {
		error_report("%s %s: brisk's %s knows only %s", what, arg, what,
			     known ? known : name);
		r = -1;
	}
	while (r > 0 && (r = opt_next(&op, &key, &val)) > 0)
		if (fn(cfg, key, val, &seen) < 0)
			r = -1;
	free(op.buf);
	return r < 0 ? -1 : 0;
}

/* Whether arg's first token is name, or form=name. */
static bool names(const char *arg, const char *form, const char *name)
{
	size_t n = strlen(form);

	if (!strncmp(arg, form, n) && arg[n] == '=')
		arg += n + 1;
	n = strlen(name);
	return !strncmp(arg, name, n) && (arg[n] == ',' || !arg[n]);
}

int blk_cmdline_device(struct blk_cmdline *c, const char *arg)
{
	struct blk_device_cfg dc;

	if (names(arg, "driver", "vhost-user-blk-pci"))
		return vublk_cmdline_device(c, arg);
	device_defaults(&dc);
	if (parse_named(c, "-device", "driver", "virtio-blk-pci",
			"virtio-blk-pci and vhost-user-blk-pci", arg, device_key, &dc) < 0)
		goto fail;
	if (!dc.drive_id) {
		error_report("-device virtio-blk-pci: drive= is missing");
		goto fail;
	}
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
	free(dc.drive_id);
	return -1;
}

static int export_key(void *cfg, const char *key, const char *val, unsigned *seen)
{
	struct blk_device_cfg *dc = cfg;
	static const char *const keys[] = {
		"id", "drive", "node-name", "addr.path", "addr.type", "num-queues",
		"queue-size", "writable", "serial", "poll-us", "iothreads",
	};
	const char *w = "-export vhost-user-blk";
	int k = key_index(w, keys, ARRAY_SIZE(keys), key, val);

	if (k < 0)
		return -1;
	if (!*val && k != 8) {
		error_report("%s: %s needs a value (%s=...)", w, key, key);
		return -1;
	}
	/* node-name= is qemu-storage-daemon's spelling of drive=. */
	if (once(w, key, seen, k == 2 ? 1 : (unsigned)k))
		return -1;
	switch (k) {
	case 0:
		return parse_id(w, key, val, &dc->export_id);
	case 1:
	case 2:
		return parse_string(w, key, val, &dc->drive_id);
	case 3:
		return parse_string(w, key, val, &dc->socket_path);
	case 4:
		if (strcmp(val, "unix")) {
			error_report("%s: addr.type=%s: brisk serves Unix sockets only", w, val);
			return -1;
		}
		return 0;
	case 5:
		return parse_queue_count(w, key, val, &dc->num_queues);
	case 6:
		return parse_queue_size(w, key, val, &dc->queue_size);
	case 7:
		return parse_bool(w, key, val, &dc->writable);
	case 8:
		return parse_serial(w, val, dc);
	case 9:
		return parse_unsigned(w, key, val, VBLK_MAX_POLL_US, &dc->poll_us);
	default:
		return parse_queue_count(w, key, val, &dc->iothreads);
	}
}

int blk_cmdline_export(struct blk_cmdline *c, const char *arg)
{
	struct blk_device_cfg dc;

	/* The front-end picks among what is offered: offer every ring kind. */
	device_defaults(&dc);
	dc.packed = true;
	dc.num_queues = VBLK_EXPORT_QUEUES;
	if (parse_named(c, "-export", "type", "vhost-user-blk", NULL, arg,
			export_key, &dc) < 0)
		goto fail;
	if (!dc.export_id || !dc.drive_id || !dc.socket_path) {
		error_report("-export vhost-user-blk: %s= is missing",
			     !dc.export_id ? "id" : !dc.drive_id ? "drive" : "addr.path");
		goto fail;
	}
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
	free(dc.drive_id);
	free(dc.export_id);
	free(dc.socket_path);
	return -1;
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
	for (unsigned i = 0; i < c->nr_devs; i++) {
		free(c->devs[i].drive_id);
		free(c->devs[i].export_id);
		free(c->devs[i].socket_path);
	}
	vublk_cmdline_free(c);
	free(c->drives);
	free(c->devs);
	free(c);
}
