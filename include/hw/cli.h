/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_CLI_H
#define BRISK_HW_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/board.h"
#include "hw/machine.h"

#define CLI_MIN_RAM (64ull << 20)
#define CLI_MAX_RAM (1ull << 40)
#define CLI_DEFAULT_RAM (512ull << 20)
/* xAPIC ids are 8 bits and 0xff is the broadcast id. */
#define CLI_MAX_CPUS 254
#define CLI_MAX_BLK_ARGS 64
#define CLI_MAX_DEVICES 64
#define CLI_MAX_OBJECTS 64
#define CLI_MAX_NICS 8

enum cli_action {
	CLI_RUN, CLI_HELP, CLI_VERSION, CLI_CHECK_KVM, CLI_ACCEL_HELP,
	CLI_DEVICE_LIST,	/* -device help */
	CLI_EXPORT_LIST,	/* -export help */
	CLI_OBJECT_LIST,	/* -object help */
	CLI_NETDEV_LIST,	/* -netdev help */
	CLI_OPT_HELP,		/* -device NAME,help, -drive help...: print help */
	CLI_VALUES_HELP,	/* -cpu help, -display help...: the values taken */
};

/* A -drive or -chardev: a disk's back end, which hw/block parses. */
struct cli_arg {
	const char *arg;
	unsigned at;		/* its place in argv */
};

/*
 * The parsed command line.  Strings point into argv.  Parsing opens no
 * file and touches no global state, so it can be fuzzed.
 */
/* A -device of the table's DEVICE_PLUGGED kind, or an -export, made by hw/main.c. */
struct cli_device {
	const struct device_family *family;
	const char *props;		/* what follows its name */
	unsigned at;			/* its place in argv */
};

/* An -object, made by hw/main.c before any device. */
struct cli_object {
	const struct object_type *type;
	const char *props;		/* what follows its type */
};

/* -nic, -net nic, -net user: a NIC and its back end in one option. */
enum cli_nic_kind {
	CLI_NIC,		/* -nic TYPE,...: both */
	CLI_NET_NIC,		/* -net nic,...: the NIC of the -net back end */
	CLI_NET_BACKEND,	/* -net TYPE,...: the back end of the -net nic */
};

struct cli_nic {
	enum cli_nic_kind kind;
	const char *arg;	/* CLI_NET_NIC: what follows "nic," */
};

struct cli_opts {
	enum cli_action action;
	const struct opt_spec *help;	/* CLI_OPT_HELP: whose */
	unsigned fixed;			/* CLI_VALUES_HELP: which option's */
	struct board_cfg board;
	const char *name;
	const char *dumpdtb;		/* -machine dumpdtb=: write it, exit */
	char dumpdtb_path[4096];	/* what dumpdtb points at */
	char machine_accel[64];		/* -machine accel= */
	unsigned timeout_s;		/* 0: none */
	bool kvm_check;			/* refuse a /dev/kvm that cannot run the guest */
	bool snapshot;			/* -snapshot: drives write to private copies */
	bool nodefaults;		/* -nodefaults: no serial unless -serial */
	bool serial_given;
	enum machine_panic panic;	/* -action panic= */
	struct cli_device devices[CLI_MAX_DEVICES];
	unsigned nr_devices;
	struct cli_object objects[CLI_MAX_OBJECTS];
	unsigned nr_objects;
	struct cli_nic nics[CLI_MAX_NICS];
	unsigned nr_nics;
	/* -drive, -chardev and -export: at most CLI_MAX_BLK_ARGS together. */
	struct cli_arg drives[CLI_MAX_BLK_ARGS];
	unsigned nr_drives;
	struct cli_arg chardevs[CLI_MAX_BLK_ARGS];
	unsigned nr_chardevs;
	/* With -export brisk runs no guest: it serves its disks to others. */
	struct cli_device exports[CLI_MAX_BLK_ARGS];
	unsigned nr_exports;
	unsigned at;			/* the option being parsed */
};

/* 0 on success; -1 after one error line. */
int cli_parse(int argc, char **argv, struct cli_opts *o);
void cli_print_help(void);
/* CLI_VALUES_HELP: what the option takes, on stdout. */
void cli_print_values(const struct cli_opts *o);

#endif
