/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_CLI_H
#define BRISK_HW_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/machine.h"

#define CLI_MIN_RAM (64ull << 20)
#define CLI_MAX_RAM (1ull << 40)
#define CLI_DEFAULT_RAM (512ull << 20)
/* xAPIC ids are 8 bits and 0xff is the broadcast id. */
#define CLI_MAX_CPUS 254
#define CLI_MAX_BLK_ARGS 64

enum cli_action { CLI_RUN, CLI_HELP, CLI_VERSION, CLI_CHECK_KVM, CLI_ACCEL_HELP };

enum cli_blk_kind { CLI_BLK_DRIVE, CLI_BLK_DEVICE, CLI_BLK_EXPORT, CLI_BLK_CHARDEV };

/*
 * A -drive, -device virtio-blk-pci/vhost-user-blk-pci, -chardev or -export
 * argument, in command-line order.
 */
struct cli_blk_arg {
	enum cli_blk_kind kind;
	const char *arg;
};

/*
 * The parsed command line.  Strings point into argv.  Parsing opens no
 * file and touches no global state, so it can be fuzzed.
 */
struct cli_opts {
	enum cli_action action;
	const char *kernel, *initrd, *append, *name;
	const char *dtb;		/* -dtb: boot with this device tree */
	const char *dumpdtb;		/* -machine dumpdtb=: write it, exit */
	char dumpdtb_path[4096];	/* what dumpdtb points at */
	const char *serial;
	uint64_t ram_size;
	unsigned ncpus;
	unsigned timeout_s;		/* 0: none */
	bool kvm_check;			/* refuse a /dev/kvm that cannot run the guest */
	bool snapshot;			/* -snapshot: drives write to private copies */
	bool rtc_localtime;		/* -rtc base=localtime */
	bool nodefaults;		/* -nodefaults: no serial unless -serial */
	bool serial_given;
	enum machine_panic panic;	/* -action panic= */
	bool debug_exit;
	uint16_t debug_exit_iobase, debug_exit_iosize;
	struct cli_blk_arg blk[CLI_MAX_BLK_ARGS];
	unsigned nr_blk;
	/* With -export brisk runs no guest: it serves its disks to others. */
	unsigned nr_exports;
};

/* 0 on success; -1 after one error line. */
int cli_parse(int argc, char **argv, struct cli_opts *o);
/* QEMU size syntax: a bare number is MiB; K, M, G, T suffixes.  -1 if bad. */
int cli_parse_size(const char *s, uint64_t *out);
void cli_print_help(void);

#endif
