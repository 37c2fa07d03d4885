/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kvm_check()'s arm64 test guest, kept as data: brisk copies it into a
 * test VM.  Plain integer instructions only: what is timed is how fast
 * KVM runs ordinary guest code.  Entered as Linux is, it counts x0 down to
 * zero, then stores to ARM_CHECK_DONE, outside its RAM: an MMIO exit.
 */
#include "hw/arm/virt.h"

	.section .rodata
	.globl arm_check_code, arm_check_code_end
	.balign 4
arm_check_code:
1:	subs	x0, x0, #1
	b.ne	1b
	ldr	x1, 3f
	str	w0, [x1]
2:	wfi
	b	2b
	.balign 8
3:	.quad	ARM_CHECK_DONE
arm_check_code_end:

	.section .note.GNU-stack, "", %progbits
