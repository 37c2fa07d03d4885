// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The bzImage loader on a malformed kernel: setup-header checks, initrd
 * placement and, when they pass, the copy of everything into guest RAM.
 * RAM is the board's, mapped between two inaccessible pages, so a write
 * outside it faults; a heap block of up to 64 MiB per input would cost
 * ASan more than the loader itself.
 *
 * Input layout:
 *   u8  guest RAM in MiB (mod 63, plus 2: 2 to 64 MiB)
 *   u16 initrd size in 16-byte units (0: no initrd)
 *   u16 kernel command line length
 *   ... the kernel image (at least 4 KiB to get past the first check)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz-util.h"
#include "hw/x86/pc.h"
#include "test-board.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct test_board b;
	struct cpu_entry entry;
	struct pc_layout l;
	struct x86_boot boot;
	char initrd[64], *cmdline;
	uint8_t *image;
	int fd = -1;

	uint64_t ram_size = (uint64_t)(fuzz_u8(&in) % 63 + 2) << 20;
	uint64_t initrd_size = (uint64_t)fuzz_u16(&in) * 16;
	unsigned cmdline_len = fuzz_u16(&in);

	pc_layout(ram_size, &l);
	if (initrd_size) {
		fd = memfd_create("initrd", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, initrd_size) < 0)
			abort();
		snprintf(initrd, sizeof(initrd), "/proc/self/fd/%d", fd);
	}
	cmdline = malloc(cmdline_len + 1);
	image = malloc(in.n ? in.n : 1);
	if (!cmdline || !image)
		abort();
	memset(cmdline, 'x', cmdline_len);
	cmdline[cmdline_len] = '\0';
	memcpy(image, in.p, in.n);
	board_init(&b, 1, 0);
	board_ram_map(&b, l.low_size, false);

	/* image belongs to boot from here on. */
	if (x86_boot_open_image(&boot, &l, image, in.n, "fuzz", fd >= 0 ? initrd : NULL,
				cmdline) == 0 &&
	    x86_boot_load(&boot, &b.m, &l, PC_ACPI_BASE, &entry) == 0) {
		/* The entry must be where the kernel went, inside RAM. */
		if (!guest_mem_ptr(&b.m.mem, entry.rip, 1) ||
		    !guest_mem_ptr(&b.m.mem, entry.rsi, 0x1000))
			abort();
	}
	x86_boot_close(&boot);
	if (fd >= 0)
		close(fd);
	board_destroy(&b);
	free(cmdline);
	return 0;
}
