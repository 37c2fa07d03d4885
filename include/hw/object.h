/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_OBJECT_H
#define BRISK_HW_OBJECT_H

/*
 * What the command line's -object can make: back ends that devices name
 * by id, as QEMU's do (-object rng-random,id=r0,filename=/dev/urandom
 * -device virtio-rng-pci,rng=r0).  One table (hw/object.c) lists every
 * type, -netdev's too; hw/main.c parses each into a set before any device, and
 * a device's property is resolved against that set, before /dev/kvm.
 */
#include <stdio.h>

#include "util/opts.h"

/* Every type's config starts with its id, and its type's name (set by the set). */
struct object_cfg {
	char *id;
	const char *type;
};

/* rng-random and rng-builtin: where virtio-rng's bytes come from. */
struct object_rng_cfg {
	struct object_cfg head;
	char *filename;		/* NULL: the host's getrandom(2) */
};

struct object_type {
	/*
	 * The option that makes it: "-object", or "-netdev" for a network
	 * back end (QEMU keeps them apart; here they share the id space).
	 */
	const char *option;
	const char *name;		/* "rng-random" */
	const char *help;		/* one line for "-object help" */
	const struct opt_spec *spec;	/* its properties, id= first */
	size_t cfg_size;
	const void *defaults;
	/* Checks the parsed config (a file that opens...); -1 after one line. */
	int (*check)(void *cfg);
};

/* The -object type named by the len bytes at name; NULL if none. */
const struct object_type *object_type_find(const char *name, size_t len);
/* The same for -netdev's types. */
const struct object_type *netdev_type_find(const char *name, size_t len);
/* "-object help" or "-netdev help" (option says which). */
void object_print_list(FILE *f, const char *option);

struct object_set;
struct object_set *object_set_new(void);
/* Parses arg (what follows TYPE) into a new member; -1 after one line. */
int object_set_add(struct object_set *s, const struct object_type *t, const char *arg);
/*
 * The config of the -object with this id, which must be of one of types
 * (NULL-terminated names); otherwise NULL after one line that starts
 * with who ("-device virtio-rng-pci: rng=r0").  s may be NULL (no
 * -object given).
 */
const struct object_cfg *object_find(const struct object_set *s, const char *id,
				     const char *const *types, const char *who);
/* The i-th member's config, in command-line order; NULL past the last. */
const struct object_cfg *object_set_get(const struct object_set *s, unsigned i);
void object_set_free(struct object_set *s);

#endif
