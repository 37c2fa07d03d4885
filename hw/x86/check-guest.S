/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kvm_check()'s test guest, kept as data: brisk copies it into a test VM.
 * Plain integer instructions only: what is timed is how fast KVM runs
 * ordinary guest code, not whether it can emulate SSE or the like.
 */
#include "hw/x86/check-guest.h"

	.section .rodata
	.globl x86_check_code, x86_check_code_end
	.code64
x86_check_code:
	mov	%rsi, %rcx
1:	dec	%rcx
	jnz	1b
	out	%al, $X86_CHECK_PORT
2:	hlt
	jmp	2b
x86_check_code_end:

	.section .note.GNU-stack, "", @progbits
