# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by with-kvm, mkinitrd and the KVM tests: which architecture a
# brisk binary is for, and where that architecture's guest kernel, modules
# and static busybox are.  For the host's own architecture they are the
# installed ones; for arm64 on an x86-64 host, the unpacked packages of
# scripts/arm64-debs.sh.

# elf_arch FILE: x86_64 or arm64 (from the ELF header's e_machine).
elf_arch() {
	local m
	m=$(od -An -tx1 -j18 -N2 "$1" 2>/dev/null | tr -d ' \n')
	case $m in
	3e00) echo x86_64 ;;
	b700) echo arm64 ;;
	*) return 1 ;;
	esac
}

host_arch() {
	case $(uname -m) in
	aarch64|arm64) echo arm64 ;;
	*) uname -m ;;
	esac
}

# arch_root ARCH: the root to find /boot, /lib/modules and busybox under
# (empty for this system's own).
arch_root() {
	local top
	[ "$1" = "$(host_arch)" ] && return 0
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
	printf '%s/root\n' "$("$top/scripts/$1-debs.sh")"
}

# arch_console ARCH: the guest's serial console device.
arch_console() {
	case $1 in arm64) echo ttyAMA0 ;; *) echo ttyS0 ;; esac
}

# arch_kernel_pkg ARCH: what to install for that architecture's kernel.
arch_kernel_pkg() {
	case $1 in arm64) echo "linux-image-arm64 (scripts/arm64-debs.sh fetches it)" ;; *) echo linux-image-amd64 ;; esac
}
