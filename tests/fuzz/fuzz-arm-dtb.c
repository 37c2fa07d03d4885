// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * -dtb FILE on malformed input: the input is the file's bytes, in a heap
 * block of exactly that size, so reading past the end of the file is an
 * AddressSanitizer report.  A blob that passes the check must then go
 * through /chosen's update, as brisk does, and come out whole.
 */
#include <libfdt.h>
#include <stdlib.h>
#include <string.h>

#include "hw/arm/virt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[ARM_FDT_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *blob = malloc(size ? size : 1);
	const struct arm_fdt_params p = {
		.bootargs = "console=ttyAMA0", .initrd_start = 0x48000000,
		.initrd_size = 0x1000,
	};

	if (!blob)
		abort();
	memcpy(blob, data, size);
	if (arm_fdt_check_user(blob, size, "fuzz") == 0 &&
	    arm_fdt_patch_user(blob, size, out, sizeof(out), &p) == 0 &&
	    fdt_check_full(out, fdt_totalsize(out)))
		abort();
	free(blob);
	return 0;
}
