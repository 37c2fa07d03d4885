/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_ACCEL_KVM_X86_H
#define BRISK_ACCEL_KVM_X86_H

#include <stdint.h>

/* Where and how the boot vCPU starts: 64-bit mode, flat segments. */
struct cpu_entry {
	uint64_t rip, rsi, cr3;
	uint64_t gdt_base;
	uint16_t gdt_limit;
	uint16_t cs, ds;
};

#endif
