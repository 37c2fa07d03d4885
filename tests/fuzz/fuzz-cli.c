// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The command line: the input split on NUL bytes is argv (after "brisk").
 * cli_parse() runs on it and, when it accepts it, every -drive and
 * -chardev goes through hw/block's parser, every -device and -export
 * through the device table's, and blk_cmdline_finish() ties the disks to
 * their back ends, as main() does before opening anything.  Each argument
 * is also tried as a size and as an option list's "help".
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "hw/block/virtio-blk.h"
#include "hw/cli.h"
#include "hw/device.h"
#include "util/opts.h"
#include "virtio-blk-int.h"

#define MAX_ARGS 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *argv[MAX_ARGS + 1];
	struct cli_opts o;
	int argc = 1;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[0] = "brisk";
	for (size_t i = 0; i <= size && argc < MAX_ARGS; ) {
		size_t len = strlen(buf + i);

		/* Each argument is its own block, so ASan sees overreads of it. */
		argv[argc] = malloc(len + 1);
		if (!argv[argc])
			break;
		memcpy(argv[argc++], buf + i, len + 1);
		i += len + 1;
	}
	argv[argc] = NULL;
	free(buf);

	for (int i = 1; i < argc; i++) {
		unsigned long long v;

		(void)opts_parse_size(argv[i], 1 << 20, &v);
		(void)opts_wants_help(argv[i]);
	}
	if (cli_parse(argc, argv, &o) == 0 && o.action == CLI_RUN) {
		struct blk_cmdline *c = blk_cmdline_new();
		int ret = 0;

		/*
		 * A guest needs its kernel (-machine dumpdtb= only writes the
		 * tree); an export runs no guest and refuses both.
		 */
		assert(o.nr_exports ? !o.board.kernel && !o.dumpdtb :
		       o.board.kernel || o.dumpdtb);
		assert(o.nr_drives + o.nr_chardevs + o.nr_exports <= CLI_MAX_BLK_ARGS &&
		       o.nr_devices <= CLI_MAX_DEVICES);
		assert(o.board.ncpus >= 1 && o.board.ncpus <= CLI_MAX_CPUS);
		assert(o.board.ram_size >= CLI_MIN_RAM && o.board.ram_size <= CLI_MAX_RAM &&
		       !(o.board.ram_size & 0xfffff));
		assert(o.panic <= PANIC_NONE && o.board.serial);
		assert(!o.board.debug_exit.present ||
		       (o.board.debug_exit.iobase + o.board.debug_exit.iosize <= 0x10000 &&
			o.board.debug_exit.iosize && o.board.debug_exit.iosize != 3));
		struct device_set *ds = device_set_new();

		/* As hw/main.c: the disks are devices of the set; their back ends c's. */
		if (c && ds)
			blk_cmdline_set_devices(c, ds);
		else
			ret = -1;
		if (c && o.snapshot)
			blk_cmdline_snapshot(c);
		for (unsigned i = 0; ret == 0 && i < o.nr_chardevs; i++)
			ret = blk_cmdline_chardev(c, o.chardevs[i].arg);
		for (unsigned i = 0; ret == 0 && i < o.nr_drives; i++)
			ret = blk_cmdline_drive(c, o.drives[i].arg);
		for (unsigned i = 0; ret == 0 && i < o.nr_devices; i++)
			ret = device_set_add(ds, o.devices[i].family, o.devices[i].props, NULL);
		for (unsigned i = 0; ret == 0 && i < o.nr_exports; i++)
			ret = device_set_add(ds, o.exports[i].family, o.exports[i].props, NULL);
		if (c && ret == 0 && blk_cmdline_finish(c) == 0) {
			/* What blk_devices_create() relies on. */
			for (unsigned i = 0; i < c->nr_devs; i++) {
				const struct blk_device_cfg *d = c->devs[i];

				assert(d->drive < c->nr_drives && d->d == &c->drives[d->drive]);
				assert(c->drives[d->drive].file);
				assert(d->queue_size >= 2 && d->queue_size <= VBLK_MAX_QUEUE_SIZE &&
				       !(d->queue_size & (d->queue_size - 1)));
				assert(d->num_queues <= VBLK_MAX_QUEUES);
				assert(strlen(d->serial) <= VBLK_SERIAL_LEN);
				/* An export has its socket and id; a guest's device neither. */
				assert(!d->socket_path == !d->export_id);
				assert(!d->socket_path || (d->iothreads >= 1 &&
							   d->iothreads <= d->num_queues));
			}
			for (unsigned i = 0; i < c->nr_drives; i++)
				assert(c->drives[i].used);
			for (unsigned i = 0; i < c->nr_vublks; i++) {
				const struct vublk_cfg *v = c->vublks[i];

				assert(v->cd >= c->chardevs && v->cd < c->chardevs + c->nr_chardevs);
				assert(v->queue_size >= 2 && v->queue_size <= VBLK_MAX_QUEUE_SIZE &&
				       !(v->queue_size & (v->queue_size - 1)));
				assert(v->num_queues <= VBLK_MAX_QUEUES);
			}
			for (unsigned i = 0; i < c->nr_chardevs; i++)
				assert(c->chardevs[i].used &&
				       (!c->chardevs[i].sock.path != (c->chardevs[i].sock.fd < 0)));
		}
		device_set_free(ds);
		blk_cmdline_free(c);
	}
	for (int i = 1; i < argc; i++)
		free(argv[i]);
	return 0;
}
