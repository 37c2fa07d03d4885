/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_TESTS_FUZZ_MACHINE_H
#define BRISK_TESTS_FUZZ_MACHINE_H

/*
 * test-board.h's board for the device fuzzers, its RAM from fuzz-util.h,
 * with a PCI bus and a virtio-blk device made from command-line strings
 * on a memfd disk.  The board refuses ioeventfds, so kicks arrive through
 * the bus, as on a host without KVM_IOEVENTFD.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz-util.h"
#include "hw/block/virtio-blk.h"
#include "test-board.h"

#define FM_DISK_SIZE (64u << 10)

struct fuzz_machine {
	struct test_board b;
	struct fuzz_ram ram;
	struct blk_cmdline *blk;
	int disk_fd;
};

/*
 * Builds the board with RAM from data and one virtio-blk device from the
 * -drive options drive_opts (file= is added) and the -device string
 * device.  Returns -1 if the device could not be made.
 */
static int fm_init(struct fuzz_machine *f, const uint8_t *data, size_t len,
		   size_t ram_size, const char *drive_opts, const char *device)
{
	char arg[256];

	memset(f, 0, sizeof(*f));
	if (fuzz_ram_init(&f->ram, data, len, ram_size, 0) < 0)
		abort();
	board_init(&f->b, 1, 0);
	board_ram_mem(&f->b, &f->ram.mem);
	board_pci(&f->b, BOARD_PCI_BASE, BOARD_PCI_SIZE);
	f->disk_fd = memfd_create("disk", MFD_CLOEXEC);
	if (f->disk_fd < 0 || ftruncate(f->disk_fd, FM_DISK_SIZE) < 0)
		abort();
	f->blk = blk_cmdline_new();
	snprintf(arg, sizeof(arg), "file=/proc/self/fd/%d,%s", f->disk_fd, drive_opts);
	if (!f->blk || blk_cmdline_drive(f->blk, arg) < 0 ||
	    blk_cmdline_device(f->blk, device) < 0 ||
	    blk_cmdline_finish(f->blk) < 0)
		abort();	/* the harness wrote a bad command line */
	return blk_devices_create(f->blk, &f->b.m);
}

/* Aborts, in board_destroy(), if teardown left an MSI route behind. */
static void fm_free(struct fuzz_machine *f)
{
	blk_devices_destroy(f->blk);
	blk_cmdline_free(f->blk);
	board_destroy(&f->b);
	close(f->disk_fd);
	fuzz_ram_free(&f->ram);
}

#endif
