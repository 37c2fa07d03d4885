/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef BRISK_HW_X86_CHECK_GUEST_H
#define BRISK_HW_X86_CHECK_GUEST_H

/*
 * The guest kvm_check() times (check-guest.S): entered in 64-bit mode as
 * Linux is, it counts RSI down to zero, then writes to X86_CHECK_PORT.
 */
#define X86_CHECK_LOOPS 100000
#define X86_CHECK_PORT 0xf4
#define X86_CHECK_ENTRY 0x100000

#ifndef __ASSEMBLER__
struct guest_mem;
struct cpu_entry;

int x86_check_guest_load(struct guest_mem *mem, struct cpu_entry *entry);
#endif

#endif
