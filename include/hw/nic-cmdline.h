/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_NIC_CMDLINE_H
#define BRISK_HW_NIC_CMDLINE_H

#include "hw/cli.h"

struct object_set;
struct device_set;

/*
 * The model= of a -nic or -net nic argument, checked as the command line
 * is read (opt names the option in the one line said); -1 if refused.
 */
int nic_cmdline_check(const char *opt, const char *arg);

/*
 * -nic and -net as the -netdev and -device virtio-net-pci they stand for,
 * added to objects and devices; -1 after one line.
 */
int nic_cmdline_add(const struct cli_opts *o, struct object_set *objects,
		    struct device_set *devices);

#endif
