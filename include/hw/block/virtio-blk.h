/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_BLOCK_VIRTIO_BLK_H
#define BRISK_HW_BLOCK_VIRTIO_BLK_H

#include <stdbool.h>

struct device_family;
struct machine;
struct object_set;
struct opt_spec;

/*
 * The command-line face of virtio-blk: the disks' back ends (-drive,
 * -chardev), and the device table's families of -device virtio-blk-pci,
 * -device vhost-user-blk-pci and -export vhost-user-blk, which the device
 * set parses and makes like any device.  Each call reports one clear line
 * through error_report() and returns -1 on bad input.  A -drive
 * if=virtio adds its disk to the device set given (blk_cmdline_set_devices).
 * blk_cmdline_finish() ties the set's disks to their back ends and checks
 * what only the whole command line can tell (a -device naming no -drive,
 * a drive no device uses...).
 */
struct blk_cmdline;
struct device_set;

struct blk_cmdline *blk_cmdline_new(void);
/* The set -drive if=virtio adds its disk to, and finish reads; c's own if never set. */
void blk_cmdline_set_devices(struct blk_cmdline *c, struct device_set *s);
int blk_cmdline_drive(struct blk_cmdline *c, const char *arg);
/*
 * For callers of hw/block alone (tests, fuzzers): -device NAME,... and
 * -export TYPE,... into c's own set, as hw/main.c does into its;
 * blk_devices_create() and blk_devices_destroy() make and undo that set.
 */
int blk_cmdline_device(struct blk_cmdline *c, const char *arg);
int blk_cmdline_export(struct blk_cmdline *c, const char *arg);
/* -chardev socket,...: the socket of a -device vhost-user-blk-pci. */
int blk_cmdline_chardev(struct blk_cmdline *c, const char *arg);
/* The -object set that properties such as iothread= name; may stay NULL. */
void blk_cmdline_set_objects(struct blk_cmdline *c, const struct object_set *objects);
/* -snapshot: every drive's writes go to a private copy of its image. */
void blk_cmdline_snapshot(struct blk_cmdline *c);
int blk_cmdline_finish(struct blk_cmdline *c);
/*
 * Whether guest RAM must be shareable (machine.ram_shared): a
 * vhost-user-blk-pci back-end maps it.
 */
bool blk_cmdline_shares_ram(const struct blk_cmdline *c);
/*
 * Opens every drive's file as it will be used, and locks it, so a
 * missing, empty, odd-sized, foreign-format or busy image is reported
 * before the VM exists, and no other process can take the image between
 * this check and the device; also checks what depends on the vCPU count
 * (num-queues' default).  -1 after one error_report() line.
 * blk_devices_create() calls it where nobody has.
 */
int blk_drives_open(struct blk_cmdline *c, unsigned ncpus);
int blk_devices_create(struct blk_cmdline *c, struct machine *m);
/* Stops I/O threads and flushes and closes the drives. */
void blk_devices_destroy(struct blk_cmdline *c);
/* Frees c, and its own set if it made one; a caller's set goes first. */
void blk_cmdline_free(struct blk_cmdline *c);

/* -device virtio-blk-pci and vhost-user-blk-pci, for the device table. */
extern const struct device_family virtio_blk_pci_family;
extern const struct device_family vhost_user_blk_pci_family;
/* -export vhost-user-blk, for the export table. */
extern const struct device_family vhost_user_blk_export_family;
/* What -drive and -export vhost-user-blk take, for "help". */
extern const struct opt_spec blk_drive_spec, blk_export_spec;

#endif
