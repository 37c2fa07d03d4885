/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_DEVICE_H
#define BRISK_HW_DEVICE_H

/*
 * What the command line's -device can name.  Each device file defines one
 * device_family; hw/devices.c lists them all in one table, which the
 * option parser, "-device help" and board creation read.  Nothing
 * registers itself: the table is the only list.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/opts.h"

struct machine;
struct object_set;
struct virtio_plug;

enum device_kind {
	/* Made by hw/main.c, once the board's own devices and PCI bus are. */
	DEVICE_PLUGGED,
	/* Part of the board: parsed into board_cfg at board_offset. */
	DEVICE_BOARD,
};

struct device_family {
	const char *name;		/* "virtio-rng-pci" */
	const char *help;		/* one line for "-device help" */
	const struct opt_spec *spec;	/* its properties */
	enum device_kind kind;
	size_t board_offset;		/* DEVICE_BOARD: its config in board_cfg */
	size_t cfg_size;		/* the config struct spec fills */
	const void *defaults;		/* cfg's value before parsing */
	/* Checks across properties after parsing; -1 after one line. */
	int (*check)(void *cfg);
	/*
	 * Optional: finds the -object its properties name (rng=...) and
	 * keeps what it needs of it in cfg; the set outlives the device.
	 * -1 after one line.
	 */
	int (*resolve)(void *cfg, const struct object_set *objects);
	/*
	 * Optional: the -netdev its resolved cfg takes for itself alone (a
	 * NIC's netdev=: QEMU gives a -netdev one peer); NULL when none.
	 */
	const void *(*claims)(const void *cfg);
	/*
	 * A virtio family's PCI class code: the one thing of its transport
	 * its table says.  Whoever makes it (hw/devices.c, hw/block) builds
	 * the plug from it; the device only plugs into what it is given.
	 */
	uint32_t pci_class;
	/*
	 * Members are made in ascending order, then in the order added: the
	 * disks (below 0) take the first PCI slots, whatever else the guest
	 * has, so that adding a NIC moves no disk.
	 */
	int order;
	/*
	 * DEVICE_PLUGGED: makes one on m's board, plugged into plug (NULL
	 * for a family without pci_class), which it owns from here on even
	 * when it fails; NULL after one line.  m is NULL for an export,
	 * which serves other processes' guests.
	 */
	void *(*create)(struct machine *m, const void *cfg, struct virtio_plug *plug);
	/* Undoes create, after the vCPUs have stopped. */
	void (*destroy)(void *dev);
};

/*
 * hw/devices.c: the table of every family, and the table of what
 * -export can serve (its types, parsed and made like devices).
 */
/* The family named by the len bytes at name; NULL if none. */
const struct device_family *device_find(const char *name, size_t len);
const struct device_family *export_find(const char *name, size_t len);
/* "-device help", "-export help": every family with its line. */
void device_print_list(FILE *f);
void export_print_list(FILE *f);
/* --help: each family's properties, from its table, and its line. */
void device_print_synopses(FILE *f);

/*
 * hw/device-set.c: the -device NAME,... and -export TYPE,... arguments of
 * DEVICE_PLUGGED families, made in order.
 */
struct device_set;
struct device_set *device_set_new(void);
/*
 * Parses arg (what follows NAME) into a new member, its -object
 * references resolved in objects (may be NULL); -1 after one line.
 */
int device_set_add(struct device_set *s, const struct device_family *f,
		   const char *arg, const struct object_set *objects);
/*
 * Adds a member whose config its back end made (the disk of a -drive
 * if=virtio), resolved in objects; s owns cfg from here on, even on
 * failure.  -1 after one line.
 */
int device_set_add_cfg(struct device_set *s, const struct device_family *f, void *cfg,
		       const struct object_set *objects);
/* The i-th member's config (and *f its family) in the order added; NULL past the last. */
void *device_set_get(const struct device_set *s, unsigned i, const struct device_family **f);
/* Whether some member's claims() took cfg (an -object set member's config). */
bool device_set_claimed(const struct device_set *s, const void *cfg);
/*
 * Creates every member on m (NULL: exports only), in their families'
 * order; -1 after one line (device_set_free() undoes it, in reverse).
 */
int device_set_create(struct device_set *s, struct machine *m);
void device_set_free(struct device_set *s);

#endif
