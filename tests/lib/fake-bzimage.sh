# SPDX-License-Identifier: GPL-2.0-or-later
# A stand-in x86-64 bzImage for the command-line tests: just enough header
# for brisk's checks (boot protocol 2.15, LOADED_HIGH, XLF_KERNEL_64,
# 16 MiB init_size) and, at its 64-bit entry, three instructions that
# write 0x21 to port 0xf4 and halt.  With
# -device isa-debug-exit,iobase=0xf4,iosize=4 brisk then exits
# (0x21 << 1) | 1 = 67 wherever a VM can be made at all: a whole command
# line checked end to end in milliseconds, even on a /dev/kvm that runs
# ordinary kernels ~1000x slow (kvm_pvm, with -accel kvm,check=off).  The
# "halt" kind only halts, for ever: a guest that waits to be ended.

FAKE_BZIMAGE_EXIT=67

fake_bzimage() { # fake_bzimage FILE [halt]
	local f=$1 kind=${2:-exit}
	head -c 65536 /dev/zero >"$f" || return 1
	put() { printf "$2" | dd of="$f" bs=1 seek=$(($1)) conv=notrunc status=none; }
	put 0x1f1 '\x04'			# setup_sects
	put 0x1fe '\x55\xaa'			# boot_flag
	put 0x201 '\x66'			# jump: header ends at 0x268
	put 0x202 'HdrS'
	put 0x206 '\x0f\x02'			# version 2.15
	put 0x211 '\x01'			# loadflags: LOADED_HIGH
	put 0x22c '\xff\xff\xff\x7f'		# initrd_addr_max
	put 0x236 '\x03\x00'			# xloadflags: KERNEL_64 | CAN_BE_LOADED_ABOVE_4G
	put 0x238 '\xff\x07\x00\x00'		# cmdline_size 2047
	put 0x258 '\x00\x00\x00\x01\x00\x00\x00\x00'	# pref_address 16 MiB
	put 0x260 '\x00\x00\x00\x01'		# init_size 16 MiB
	# startup_64, (setup_sects + 1) * 512 + 0x200 into the file:
	# mov al, 0x21; out 0xf4, al; 1: hlt; jmp 1b
	if [ "$kind" = halt ]; then
		put 0xc00 '\xf4\xeb\xfd'
	else
		put 0xc00 '\xb0\x21\xe6\xf4\xf4\xeb\xfd'
	fi
}

# Whether a VM can be made here at all (a /dev/kvm that opens); brisk's
# -accel kvm,check=off then runs the stand-in kernel whatever backs it.
have_kvm_dev() { [ -c /dev/kvm ] && (exec 3<>/dev/kvm) 2>/dev/null; }
