/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_BLOCK_VIRTIO_BLK_H
#define BRISK_HW_BLOCK_VIRTIO_BLK_H

#include <stdbool.h>

struct device_family;
struct machine;
struct object_set;
struct opt_spec;

/*
 * The command-line face of virtio-blk.  The CLI hands every -drive
 * argument, every "-device virtio-blk-pci,..." and every
 * "-export vhost-user-blk,..." argument (and "-device vhost-user-blk-pci"
 * with its "-chardev") here as it meets them;
 * each call reports one clear line through error_report() and returns -1
 * on bad input.  blk_cmdline_finish() checks what only the whole command
 * line can tell (a -device naming no -drive, a drive no device uses...).
 * blk_devices_create() plugs the devices into m->pci
 * (once the board has made the PCI bus) and starts serving the exports
 * on their sockets; m may be NULL when there are only exports.
 */
struct blk_cmdline;

struct blk_cmdline *blk_cmdline_new(void);
int blk_cmdline_drive(struct blk_cmdline *c, const char *arg);
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
void blk_cmdline_free(struct blk_cmdline *c);

/* -device virtio-blk-pci and vhost-user-blk-pci, for the device table. */
extern const struct device_family virtio_blk_pci_family;
extern const struct device_family vhost_user_blk_pci_family;
/* -export vhost-user-blk, for the export table. */
extern const struct device_family vhost_user_blk_export_family;
/* What -drive and -export vhost-user-blk take, for "help". */
extern const struct opt_spec blk_drive_spec, blk_export_spec;

#endif
