// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The arm64 Image loader and device tree on malformed input: the Image
 * header checks, the placement of kernel, initrd and tree, and, when they
 * pass, the copy of everything into guest RAM with the tree brisk builds
 * for the fuzzed vCPU count and command line.  RAM lies between two
 * inaccessible guard pages, so a write outside it faults.
 *
 * Input layout:
 *   u8  guest RAM in MiB (mod 63, plus 2: 2 to 64 MiB)
 *   u16 initrd size in 16-byte units (0: no initrd)
 *   u8  vCPUs (mod 255, plus 1)
 *   u16 kernel command line length
 *   ... the Image
 */
#include <libfdt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz-util.h"
#include "hw/arm/virt.h"
#include "util/guest-mem.h"

#define GUARD 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t fdt[ARM_FDT_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct guest_mem mem = { 0 };
	struct arm_boot b = { .initrd_fd = -1 };
	struct cpu_entry entry;
	uint64_t ram_size = (uint64_t)(fuzz_u8(&in) % 63 + 2) << 20;
	uint64_t initrd_size = (uint64_t)fuzz_u16(&in) * 16;
	unsigned ncpus = fuzz_u8(&in) % 255 + 1, cmdline_len = fuzz_u16(&in);
	char *cmdline = malloc(cmdline_len + 1);
	uint8_t *image = malloc(in.n ? in.n : 1), *ram;

	ram = mmap(NULL, ram_size + 2 * GUARD, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!cmdline || !image || ram == MAP_FAILED ||
	    mprotect(ram + GUARD, ram_size, PROT_READ | PROT_WRITE))
		abort();
	memset(cmdline, 'x', cmdline_len);
	cmdline[cmdline_len] = '\0';
	memcpy(image, in.p, in.n);
	guest_mem_add(&mem, ARM_RAM_BASE, ram_size, ram + GUARD);
	if (initrd_size) {
		b.initrd_fd = memfd_create("initrd", MFD_CLOEXEC);
		if (b.initrd_fd < 0 || ftruncate(b.initrd_fd, initrd_size) < 0)
			abort();
		b.initrd_size = initrd_size;
	}

	/* image belongs to b from here on. */
	if (arm_boot_open_image(&b, image, in.n, "fuzz") == 0 &&
	    arm_boot_plan(&b, ARM_RAM_BASE, ram_size) == 0) {
		struct arm_fdt_params p = {
			.ram_size = ram_size, .ncpus = ncpus, .bootargs = cmdline,
			.initrd_start = b.initrd_addr, .initrd_size = b.initrd_size,
		};

		if (arm_fdt_build(&p, fdt, sizeof(fdt)) == 0 &&
		    arm_boot_load(&b, &mem, fdt, fdt_totalsize(fdt), &entry) == 0) {
			/* Kernel and tree inside RAM; the tree where x0 says. */
			if (!guest_mem_ptr(&mem, entry.pc, 64) ||
			    fdt_check_header(guest_mem_ptr(&mem, entry.x0, 64)))
				abort();
		}
	}
	arm_boot_close(&b);
	munmap(ram, ram_size + 2 * GUARD);
	free(cmdline);
	return 0;
}
