# SPDX-License-Identifier: GPL-2.0-or-later
# stuck_image ARCH FILE: writes a 4 KiB kernel for ARCH (x86_64, arm64)
# whose boot vCPU loops on its first instruction, interrupts masked, so it
# never exits to the VMM and never starts another vCPU: a guest that
# makes no progress at all, whatever the host's speed.  Only the fields
# the boot protocols ask a loader to read are set.

# put FILE OFFSET BYTES: BYTES (printf escapes) written at OFFSET.
stuck_put() {
	printf "$3" | dd of="$1" bs=1 seek=$(($2)) conv=notrunc status=none
}

stuck_image() {
	local f=$2
	rm -f "$f" && truncate -s 4096 "$f" || return 1
	case $1 in
	arm64)
		# Documentation/arch/arm64/booting.rst's header: code0 "b .",
		# text_offset 0, image_size 4 KiB, flags little-endian with 4K
		# pages, the magic "ARM\x64" at 56.
		stuck_put "$f" 0 '\x00\x00\x00\x14' &&
			stuck_put "$f" 16 '\x00\x10' &&
			stuck_put "$f" 24 '\x02' &&
			stuck_put "$f" 56 'ARM\x64' ;;
	x86_64)
		# Documentation/arch/x86/boot.rst's setup header: one setup
		# sector after the boot sector, the boot flag, "HdrS" protocol
		# 2.12, loaded high, a 64-bit entry (xloadflags), a 255-byte
		# command line; the 64-bit entry, 0x200 into the protected-mode
		# part (after the 1 KiB of setup), is "jmp .".
		stuck_put "$f" 0x1f1 '\x01' &&
			stuck_put "$f" 0x1fe '\x55\xaa' &&
			stuck_put "$f" 0x202 'HdrS\x0c\x02' &&
			stuck_put "$f" 0x211 '\x01' &&
			stuck_put "$f" 0x236 '\x01\x00\xff' &&
			stuck_put "$f" $((0x400 + 0x200)) '\xeb\xfe' ;;
	*)
		echo "stuck_image: no image for $1" >&2
		return 1 ;;
	esac
}
